/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/perfetto.c - Perfetto's protobuf trace from a trace file, and the small protobuf
 * encoder it is written with (perfetto.h).
 */
#include "agent/analysis/perfetto.h"
#include "agent/analysis/export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Field numbers, from Perfetto's protos/perfetto/trace/ (checked against trace.proto,
 * trace_packet.proto, trace_packet_defaults.proto, interned_data/interned_data.proto and
 * track_event/{track_event,track_descriptor,process_descriptor,thread_descriptor}.proto).
 */
enum {
	TRACE_PACKET = 1, /* Trace.packet */

	PKT_TIMESTAMP = 8, /* TracePacket */
	PKT_SEQUENCE_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12,
	PKT_SEQUENCE_FLAGS = 13,
	PKT_DEFAULTS = 59,
	PKT_TRACK_DESCRIPTOR = 60,
	PKT_FIRST_ON_SEQUENCE = 87,

	SEQ_INCREMENTAL_STATE_CLEARED = 1, /* TracePacket.SequenceFlags */
	SEQ_NEEDS_INCREMENTAL_STATE = 2,

	DEFAULTS_TRACK_EVENT = 11, /* TracePacketDefaults.track_event_defaults */
	TED_TRACK_UUID = 11,	   /* TrackEventDefaults.track_uuid */

	TD_UUID = 1, /* TrackDescriptor */
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT_UUID = 5,

	PD_PID = 1, /* ProcessDescriptor */
	PD_CMDLINE = 2,
	PD_PROCESS_NAME = 6,

	THD_PID = 1, /* ThreadDescriptor */
	THD_TID = 2,
	THD_THREAD_NAME = 5,

	TE_TYPE = 9, /* TrackEvent */
	TE_NAME_IID = 10,
	TE_SLICE_BEGIN = 1, /* TrackEvent.Type */
	TE_SLICE_END = 2,
	TE_INSTANT = 3,

	ID_EVENT_NAMES = 2, /* InternedData */
	EN_IID = 1,	    /* EventName */
	EN_NAME = 2,
};

/* ---- the encoder ---- */

static bool reserve(struct agent_pb *b, size_t n)
{
	if (b->failed)
		return false;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (b->len + n > cap)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->failed = true;
			return false;
		}
		b->p = p;
		b->cap = cap;
	}
	return true;
}

static size_t varint_size(uint64_t v)
{
	size_t n = 1;
	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}

static void put_varint(uint8_t *p, uint64_t v)
{
	for (; v >= 0x80; v >>= 7)
		*p++ = (uint8_t)(v | 0x80);
	*p = (uint8_t)v;
}

static void raw_varint(struct agent_pb *b, uint64_t v)
{
	if (!reserve(b, 10))
		return;
	put_varint(b->p + b->len, v);
	b->len += varint_size(v);
}

static void tag(struct agent_pb *b, uint32_t field, unsigned wire)
{
	raw_varint(b, (uint64_t)field << 3 | wire);
}

void agent_pb_reset(struct agent_pb *b)
{
	b->len = 0;
}

void agent_pb_free(struct agent_pb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void agent_pb_varint(struct agent_pb *b, uint32_t field, uint64_t v)
{
	tag(b, field, AGENT_PB_VARINT);
	raw_varint(b, v);
}

void agent_pb_bytes(struct agent_pb *b, uint32_t field, const void *data, size_t n)
{
	tag(b, field, AGENT_PB_LEN);
	raw_varint(b, n);
	if (!reserve(b, n))
		return;
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

void agent_pb_string(struct agent_pb *b, uint32_t field, const char *s)
{
	agent_pb_bytes(b, field, s, strlen(s));
}

size_t agent_pb_open(struct agent_pb *b, uint32_t field)
{
	tag(b, field, AGENT_PB_LEN);
	if (!reserve(b, 1))
		return 0;
	b->p[b->len++] = 0;
	return b->len; /* where the body starts; its length goes in the byte before */
}

void agent_pb_close(struct agent_pb *b, size_t at)
{
	if (b->failed)
		return;
	size_t body = b->len - at, n = varint_size(body);
	if (n > 1) {
		if (!reserve(b, n - 1))
			return;
		memmove(b->p + at + n - 1, b->p + at, body);
		b->len += n - 1;
	}
	put_varint(b->p + at - 1, body);
}

int agent_pb_write_packet(FILE *out, const struct agent_pb *b)
{
	uint8_t head[11];
	if (b->failed)
		return -ENOMEM;
	head[0] = TRACE_PACKET << 3 | AGENT_PB_LEN;
	put_varint(head + 1, b->len);
	if (fwrite(head, 1, 1 + varint_size(b->len), out) != 1 + varint_size(b->len) ||
	    fwrite(b->p, 1, b->len, out) != b->len)
		return -EIO;
	return 0;
}

/* ---- the trace ---- */

/* Track uuids only need to be unique in the file: "jitt" in the top half keeps them apart
 * from the small numbers other producers pick, should traces ever be merged. */
#define PROCESS_UUID(pid)   (0x6a697474ull << 32 | (uint32_t)(pid))
#define THREAD_UUID(i, tid) (0x6a69ull << 48 | (uint64_t)((i) + 1) << 32 | (uint32_t)(tid))
#define PROCESS_SEQUENCE    1
#define THREAD_SEQUENCE(i)  ((uint32_t)(i) + 2)

struct pf {
	FILE *out;
	struct agent_names *names;
	struct agent_pb b;
	uint32_t seq;
};

/* One TrackEvent on the thread's default track; its name interned on this sequence the
 * first time it is used there. */
static int pf_event(struct pf *p, uint64_t ns, unsigned type, uint64_t name)
{
	struct agent_pb *b = &p->b;
	uint64_t iid = 0;
	agent_pb_reset(b);
	agent_pb_varint(b, PKT_TIMESTAMP, ns);
	agent_pb_varint(b, PKT_SEQUENCE_ID, p->seq);
	agent_pb_varint(b, PKT_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	if (type != TE_SLICE_END) {
		struct agent_name *nm = agent_names_get(p->names, name);
		if (!nm)
			return -ENOMEM;
		iid = nm->iid;
		if (nm->seq != p->seq) {
			size_t data = agent_pb_open(b, PKT_INTERNED_DATA);
			size_t en = agent_pb_open(b, ID_EVENT_NAMES);
			agent_pb_varint(b, EN_IID, iid);
			agent_pb_string(b, EN_NAME, nm->text);
			agent_pb_close(b, en);
			agent_pb_close(b, data);
			nm->seq = p->seq;
		}
	}
	size_t te = agent_pb_open(b, PKT_TRACK_EVENT);
	agent_pb_varint(b, TE_TYPE, type);
	if (iid)
		agent_pb_varint(b, TE_NAME_IID, iid);
	agent_pb_close(b, te);
	return agent_pb_write_packet(p->out, b);
}

static int pf_begin(void *ctx, uint64_t ns, uint64_t name, unsigned flags)
{
	(void)flags; /* a cut start is in the slice's name */
	return pf_event(ctx, ns, TE_SLICE_BEGIN, name);
}

static int pf_end(void *ctx, uint64_t ns, unsigned flags)
{
	(void)flags;
	return pf_event(ctx, ns, TE_SLICE_END, 0);
}

static int pf_instant(void *ctx, uint64_t ns, uint64_t name)
{
	return pf_event(ctx, ns, TE_INSTANT, name);
}

static const struct agent_timeline_ops pf_ops = { pf_begin, pf_end, pf_instant };

/* The process's track, on a sequence of its own. */
static int pf_process(struct pf *p, const struct rb_trace *t)
{
	struct agent_pb *b = &p->b;
	char label[512], path[512];
	agent_process_label(t, label, sizeof(label));
	agent_pb_reset(b);
	agent_pb_varint(b, PKT_TIMESTAMP, 0);
	agent_pb_varint(b, PKT_SEQUENCE_ID, PROCESS_SEQUENCE);
	agent_pb_varint(b, PKT_FIRST_ON_SEQUENCE, 1);
	size_t td = agent_pb_open(b, PKT_TRACK_DESCRIPTOR);
	agent_pb_varint(b, TD_UUID, PROCESS_UUID(t->pid));
	size_t pd = agent_pb_open(b, TD_PROCESS);
	agent_pb_varint(b, PD_PID, (uint64_t)(int64_t)(int32_t)t->pid);
	if (t->nmodules) {
		agent_utf8_clean(t->modules[0].path, path, sizeof(path));
		agent_pb_string(b, PD_CMDLINE, path);
	}
	agent_pb_string(b, PD_PROCESS_NAME, label);
	agent_pb_close(b, pd);
	agent_pb_close(b, td);
	return agent_pb_write_packet(p->out, b);
}

/* A thread's first packet: it clears the sequence's incremental state (the interned
 * names), makes the thread's track the default of every event after, and describes it. */
static int pf_thread(struct pf *p, const struct rb_trace *t, uint32_t i)
{
	const struct rb_file_thread *th = &t->threads[i];
	struct agent_pb *b = &p->b;
	char name[4 * sizeof(th->name)];
	agent_utf8_clean(th->name[0] ? th->name : "(unnamed)", name, sizeof(name));
	p->seq = THREAD_SEQUENCE(i);
	agent_pb_reset(b);
	agent_pb_varint(b, PKT_TIMESTAMP, 0);
	agent_pb_varint(b, PKT_SEQUENCE_ID, p->seq);
	agent_pb_varint(b, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	agent_pb_varint(b, PKT_FIRST_ON_SEQUENCE, 1);
	size_t defaults = agent_pb_open(b, PKT_DEFAULTS);
	size_t ted = agent_pb_open(b, DEFAULTS_TRACK_EVENT);
	agent_pb_varint(b, TED_TRACK_UUID, THREAD_UUID(i, th->tid));
	agent_pb_close(b, ted);
	agent_pb_close(b, defaults);
	size_t td = agent_pb_open(b, PKT_TRACK_DESCRIPTOR);
	agent_pb_varint(b, TD_UUID, THREAD_UUID(i, th->tid));
	agent_pb_varint(b, TD_PARENT_UUID, PROCESS_UUID(t->pid));
	size_t thd = agent_pb_open(b, TD_THREAD);
	agent_pb_varint(b, THD_PID, (uint64_t)(int64_t)(int32_t)t->pid);
	agent_pb_varint(b, THD_TID, (uint64_t)(int64_t)(int32_t)th->tid);
	agent_pb_string(b, THD_THREAD_NAME, name);
	agent_pb_close(b, thd);
	agent_pb_close(b, td);
	return agent_pb_write_packet(p->out, b);
}

int agent_export_perfetto(FILE *out, const struct rb_trace *t, struct agent_symbols *s)
{
	uint64_t t0;
	int err = agent_trace_start(t, &t0);
	if (err)
		return err;
	struct agent_names names;
	struct pf p = { .out = out, .names = &names };
	agent_names_init(&names, s);
	err = pf_process(&p, t);
	for (uint32_t i = 0; i < t->nthreads && !err; i++) {
		err = pf_thread(&p, t, i);
		if (!err)
			err = agent_timeline(t, &t->threads[i], t0, &pf_ops, &p);
	}
	agent_pb_free(&p.b);
	agent_names_free(&names);
	if (!err && (fflush(out) != 0 || ferror(out)))
		err = -EIO;
	return err;
}
