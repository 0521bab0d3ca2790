/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/export.h - a trace file for the viewers people already use (what each of
 * them really loads, checked by opening the exports in them: docs/exports.md): Chrome
 * trace-event JSON (ui.perfetto.dev, speedscope), folded stacks weighted by self time
 * (flamegraph.pl, speedscope), and Perfetto's own protobuf (agent/analysis/perfetto.h,
 * ui.perfetto.dev).
 *
 * Every export streams: one thread at a time, events straight from the streaming decoder,
 * so memory is the decoder's bit per slot, the stack of open calls and (folded only) the
 * calling-context tree, never the events of a 32 MiB ring.
 *
 * Chrome and Perfetto share one walk of a thread's events (agent_timeline) that turns them
 * into properly nested slices: calls the wrapped ring starts inside begin at its first
 * event, calls and waits still open when the rings were frozen end at the freeze (the
 * decoder's end_ts, where `jitt summarize` ends them too: a hang is the culprit running
 * until the freeze, not a slice of no length), a blocked wait is a slice of its own
 * inside the call that waited, and so is a time the thread was off its CPU outside a wait
 * (preempted, or sleeping in a call no wrapper sees). Both files count time from the
 * trace's first event.
 */
#ifndef JITT_AGENT_EXPORT_H
#define JITT_AGENT_EXPORT_H

#include "agent/analysis/symbols.h"
#include "ringbuf/decode.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Each returns 0, -EINVAL (a ring that does not decode), -ENOMEM or -EIO (writing out). */
int agent_export_chrome(FILE *out, const struct rb_trace *t, struct agent_symbols *s);
int agent_export_folded(FILE *out, const struct rb_trace *t, struct agent_symbols *s);
/* Folded stacks of at most max_stack frames each (the thread's label aside), as perf's
 * --max-stack: a deeper context keeps its innermost max_stack frames after one
 * "(outer frames cut)" frame; *cut counts the lines cut so. agent_export_folded is this with
 * AGENT_FOLDED_MAX_STACK. */
#define AGENT_FOLDED_MAX_STACK 127 /* perf's default */
int agent_export_folded_max(FILE *out, const struct rb_trace *t, struct agent_symbols *s,
			    unsigned max_stack, uint64_t *cut);

/* ---- shared by the exports ---- */

/*
 * Names of timeline items are keys: a function's key (agent_func_key), CCT_UNKNOWN for a call
 * entered before the ring's oldest record, or one of these, whose top 16 bits are above
 * every module index a function key can carry.
 */
#define AGENT_NAME_WAIT(key)	    (0xfff1ull << 48 | (uint32_t)(key)) /* "blocked on fd 5" */
#define AGENT_NAME_WAKE(key)	    (0xfff2ull << 48 | (uint32_t)(key)) /* "wake-up of fd 5" */
#define AGENT_NAME_MARK(arg)	    (0xfff3ull << 48 | (uint32_t)(arg)) /* marks.h */
#define AGENT_NAME_WOKEN(key)	    (0xfff5ull << 48 | (uint32_t)(key)) /* "woken up: fd 5" */
#define AGENT_NAME_FROZEN	    (0xfff6ull << 48) /* the end of a thread's calls at the freeze */
#define AGENT_NAME_RECORD(raw, arg) (0xfff4ull << 48 | (uint64_t)(raw) << 32 | (uint32_t)(arg))
/* A time off the CPU (RB_EV_OFF_CPU; why: enum rb_off_why) that left `cpu`: "preempted
 * (CPU 2)", "off CPU: sleeping". With AGENT_OFF_ANY_CPU the CPU is left out ("preempted"):
 * the folded frames, one per reason wherever the thread ran. */
#define AGENT_NAME_OFF_CPU(why, cpu) \
	(0xfff7ull << 48 | (uint64_t)(uint8_t)(why) << 32 | (uint32_t)(cpu))
#define AGENT_OFF_ANY_CPU	    UINT32_MAX
#define AGENT_NAME_IS_OFF_CPU(name) ((name) >> 48 == 0xfff7u)

struct agent_name {
	uint64_t key;
	char *text;   /* valid UTF-8; NULL marks a free slot */
	char *json;   /* text escaped for a JSON string, made on first use */
	uint64_t iid; /* 1, 2, ... in order of first use (Perfetto's interning ids) */
	uint32_t seq; /* the Perfetto sequence it was last interned on */
};

/* Names made once per key: the symbol lookup and the escaping are not repeated per call. */
struct agent_names {
	struct agent_symbols *syms;
	struct agent_name *slot; /* open addressing */
	size_t cap, n;
};

void agent_names_init(struct agent_names *n, struct agent_symbols *s);
/* The name of a key, made when new; valid until the next call. NULL when out of memory. */
struct agent_name *agent_names_get(struct agent_names *n, uint64_t key);
/* Its JSON-escaped text (no quotes), NULL when out of memory. */
const char *agent_name_json(struct agent_name *nm);
void agent_names_free(struct agent_names *n);

/* What a mark record's argument means (marks.h): "frame begin", "anomaly: hang", ... */
void agent_mark_name(uint32_t arg, char *out, size_t size);

/*
 * Copy s as valid UTF-8 (each byte that is not part of a well-formed sequence becomes
 * U+FFFD), truncated at a whole character to fit size (> 0). Thread names and symbols
 * are bytes; JSON and protobuf strings must be UTF-8.
 */
void agent_utf8_clean(const char *s, char *out, size_t size);

/* The first event of the whole trace (the oldest record of any thread), in timer ticks;
 * 0 when no thread has a record. 0, -EINVAL or -ENOMEM. */
int agent_trace_start(const struct rb_trace *t, uint64_t *t0);

/* A thread's events as a timeline: nested slices and instants, in order, times in ns
 * since the trace's first event. Each callback returns 0 or a negative errno, which
 * stops the walk and is returned. */
enum {
	AGENT_SLICE_CUT = 1, /* begun before the ring's oldest record, or ended by the freeze */
};

struct agent_timeline_ops {
	int (*begin)(void *ctx, uint64_t ns, uint64_t name, unsigned flags);
	/* name: the slice's, as at its begin (viewers that match an end to its begin by name
	 * need it on both) */
	int (*end)(void *ctx, uint64_t ns, uint64_t name, unsigned flags);
	int (*instant)(void *ctx, uint64_t ns, uint64_t name);
	/* Optional, for the wake-up edges. wake: a wake-up record (instead of instant);
	 * woken: a wait of `key` that lasted the ticks [from, to] has just been ended by its
	 * wait-end record (not by the freeze, nor by its call's return). */
	int (*wake)(void *ctx, uint64_t ns, const struct rb_event *e);
	int (*woken)(void *ctx, uint64_t ns, uint32_t key, uint64_t from, uint64_t to);
};

int agent_timeline(const struct rb_trace *t, const struct rb_file_thread *th, uint64_t t0,
		   const struct agent_timeline_ops *ops, void *ctx);

/* What the process is called in a viewer: "<program>: <reason>", valid UTF-8. */
void agent_process_label(const struct rb_trace *t, char *out, size_t size);

#endif
