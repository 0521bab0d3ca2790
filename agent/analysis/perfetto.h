/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/perfetto.h - a trace file as Perfetto's native protobuf trace (a Trace of
 * TracePackets with TrackDescriptors and TrackEvents), which the Perfetto maintainers
 * recommend over JSON for large traces: smaller, and names are interned once.
 *
 * Written by our own small protobuf encoder rather than a protobuf library: the few
 * messages we write need only varints and length-delimited fields, and the export must
 * run on the device with nothing beyond libc.
 */
#ifndef JITT_AGENT_PERFETTO_H
#define JITT_AGENT_PERFETTO_H

#include "agent/analysis/symbols.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * One sequence per thread (trusted_packet_sequence_id). Its first packet clears the
 * incremental state, gives the thread's track as the default of every event after, and
 * defines a sequence-scoped incremental clock as the default clock, as Perfetto's own
 * producers do: every later packet carries the ns since the one before (one or two bytes),
 * not an absolute time. Slices begin and end per call and per blocked wait, marks are
 * instants, as agent_timeline walks them (export.h); a slice still open at the freeze ends
 * there with a "cut" annotation. A wake-up is an instant that starts a flow, and the wait
 * it ended gets a "woken up" instant that terminates it: the summary's blocked-on edge, an
 * arrow in the UI. Times in ns since the trace's first event. Returns 0, -EINVAL, -ENOMEM
 * or -EIO.
 */
int agent_export_perfetto(FILE *out, const struct rb_trace *t, struct agent_symbols *s);

/*
 * The encoder: one message at a time into a growable buffer. A nested message is opened
 * (its tag written, one byte kept for its length) and closed once its size is known; a
 * length over 127 moves the body up by the extra bytes, which for our small packets is a
 * few bytes' copy. Out of memory is remembered and reported by agent_pb_write_packet.
 */
struct agent_pb {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

enum { AGENT_PB_VARINT = 0, AGENT_PB_FIXED64 = 1, AGENT_PB_LEN = 2 };

void agent_pb_reset(struct agent_pb *b);
void agent_pb_free(struct agent_pb *b);
void agent_pb_varint(struct agent_pb *b, uint32_t field, uint64_t v);
void agent_pb_fixed64(struct agent_pb *b, uint32_t field, uint64_t v);
void agent_pb_bytes(struct agent_pb *b, uint32_t field, const void *data, size_t n);
void agent_pb_string(struct agent_pb *b, uint32_t field, const char *s);
/* Open a nested message; close it with what open returned. */
size_t agent_pb_open(struct agent_pb *b, uint32_t field);
void agent_pb_close(struct agent_pb *b, size_t at);
/* The buffer as one `packet` (field 1) of the Trace message: 0, -ENOMEM or -EIO. */
int agent_pb_write_packet(FILE *out, const struct agent_pb *b);

#endif
