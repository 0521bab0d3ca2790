/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/perfetto.c - Perfetto's protobuf trace from a trace file, and the small protobuf
 * encoder it is written with (perfetto.h).
 */
#include "agent/analysis/perfetto.h"
#include "agent/analysis/export.h"
#include "ringbuf/decode.h"

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

	PKT_CLOCK_SNAPSHOT = 6, /* TracePacket */
	PKT_TIMESTAMP = 8,
	PKT_SEQUENCE_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12,
	PKT_SEQUENCE_FLAGS = 13,
	PKT_DEFAULTS = 59,
	PKT_TRACK_DESCRIPTOR = 60,
	PKT_TIMESTAMP_CLOCK_ID = 58,
	PKT_FIRST_ON_SEQUENCE = 87,

	CS_CLOCKS = 1, /* ClockSnapshot */
	CLK_ID = 1,    /* ClockSnapshot.Clock */
	CLK_TIMESTAMP = 2,
	CLK_INCREMENTAL = 3,
	CLOCK_BOOTTIME = 6,	    /* BuiltinClocks: the trace clock a viewer assumes */
	CLOCK_THREAD_DELTAS = 64, /* ours: sequence-scoped (64..127), incremental, in ns */

	SEQ_INCREMENTAL_STATE_CLEARED = 1, /* TracePacket.SequenceFlags */
	SEQ_NEEDS_INCREMENTAL_STATE = 2,

	DEFAULTS_TRACK_EVENT = 11, /* TracePacketDefaults.track_event_defaults */
	DEFAULTS_CLOCK_ID = 58,	   /* TracePacketDefaults.timestamp_clock_id */
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

	TE_DEBUG_ANNOTATIONS = 4, /* TrackEvent */
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_FLOW_IDS = 47,
	TE_TERMINATING_FLOW_IDS = 48,
	DA_UINT_VALUE = 3, /* DebugAnnotation */
	DA_STRING_VALUE = 6,
	DA_NAME = 10,
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

void agent_pb_fixed64(struct agent_pb *b, uint32_t field, uint64_t v)
{
	tag(b, field, AGENT_PB_FIXED64);
	if (!reserve(b, 8))
		return;
	for (int i = 0; i < 8; i++)
		b->p[b->len++] = (uint8_t)(v >> 8 * i);
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

struct pf_wake {
	uint64_t ts;
	uint32_t key, thread;
};

/* Wake-ups indexed for the flows: 16 bytes each, so the index stops at 16 MiB (a ring of
 * nothing but wake-ups); those past it get no arrow. */
#define PF_MAX_WAKES (1u << 20)
/* Wake-ups of one object looked at per wait, newest first (a thread that wakes its own
 * object a million times must not make the export quadratic). */
#define PF_WAKER_STEPS 64

struct pf {
	FILE *out;
	struct agent_names *names;
	struct agent_pb b;
	uint32_t seq, thread;
	uint64_t last_ns; /* the previous packet's time on this sequence: the clock's base */
	struct pf_wake *wakes; /* by key, then time, then thread (latest first among equals) */
	uint8_t *used;	       /* per wake-up: a flow ended by a wait already */
	size_t nwakes, capwakes;
	bool wakes_full;
};

/* A wake-up's flow id, the same from its instant and from the wait it ended: unique per
 * (thread, time) (multiplying by an odd number is a bijection), never 0. */
static uint64_t flow_id(uint32_t thread, uint64_t ts)
{
	uint64_t id = (ts ^ (uint64_t)thread << 56) * 0x9E3779B97F4A7C15ull;
	return id ? id : 1;
}

static int wake_order(const void *a, const void *b)
{
	const struct pf_wake *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	/* Among equal times the lowest thread sorts last, so it is found first: the
	 * summary's find_waker keeps the first thread of the latest time. */
	return x->thread == y->thread ? 0 : x->thread > y->thread ? -1 : 1;
}

struct pf_collect {
	struct pf *p;
	uint32_t thread;
};

static void collect_wake(void *ctx, const struct rb_event *e)
{
	struct pf_collect *c = ctx;
	struct pf *p = c->p;
	if (e->kind != RB_EV_WAKE || p->wakes_full)
		return;
	if (p->nwakes == p->capwakes) {
		size_t cap = p->capwakes ? 2 * p->capwakes : 256;
		struct pf_wake *w = cap <= PF_MAX_WAKES ? realloc(p->wakes, cap * sizeof(*w)) : NULL;
		if (!w) { /* full, or out of memory: the flows stop here, the export goes on */
			p->wakes_full = true;
			return;
		}
		p->wakes = w;
		p->capwakes = cap;
	}
	p->wakes[p->nwakes++] = (struct pf_wake){ e->ts, e->arg, c->thread };
}

/* The trace's first event (agent_trace_start) and, in the same pass of each thread's
 * decoder, its wake-ups, which the decoder hands over as it meets them. */
static int pf_prepare(struct pf *p, const struct rb_trace *t, uint64_t *t0)
{
	bool any = false;
	*t0 = 0;
	for (uint32_t i = 0; i < t->nthreads; i++) {
		struct rb_decoder d;
		struct pf_collect c = { p, i };
		int err = rb_decoder_init(&d, &t->threads[i].view, t->ref_ticks, collect_wake, &c);
		if (err)
			return err;
		if (d.stats.records && (!any || d.start_ts < *t0)) {
			*t0 = d.start_ts;
			any = true;
		}
		rb_decoder_free(&d);
	}
	if (p->nwakes) {
		qsort(p->wakes, p->nwakes, sizeof(*p->wakes), wake_order);
		p->used = calloc(p->nwakes, 1);
		if (!p->used)
			return -ENOMEM;
	}
	return 0;
}

/* The wake-up that ended a wait of `key` on this thread over the ticks [from, to]: as the
 * summary's find_waker, the latest one in that span on another thread. Its index, or -1. */
static long pf_waker(const struct pf *p, uint32_t key, uint64_t from, uint64_t to)
{
	size_t lo = 0, hi = p->nwakes; /* the first entry after (key, to) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pf_wake *w = &p->wakes[mid];
		if (w->key < key || (w->key == key && w->ts <= to))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (unsigned k = 0; lo > 0 && k < PF_WAKER_STEPS; k++) {
		const struct pf_wake *w = &p->wakes[--lo];
		if (w->key != key || w->ts < from)
			break;
		if (w->thread != p->thread)
			return (long)lo;
	}
	return -1;
}

/* One packet's head: the time as a delta on the sequence's incremental clock. */
static void pf_head(struct pf *p, uint64_t ns, uint32_t flags)
{
	struct agent_pb *b = &p->b;
	agent_pb_reset(b);
	agent_pb_varint(b, PKT_TIMESTAMP, ns - p->last_ns);
	p->last_ns = ns;
	agent_pb_varint(b, PKT_SEQUENCE_ID, p->seq);
	agent_pb_varint(b, PKT_SEQUENCE_FLAGS, flags);
}

enum { PF_CUT = 1, PF_CPU = 2 }; /* what else an event carries */

/* One TrackEvent on the thread's default track; its name interned on this sequence the
 * first time it is used there. flow/end_flow: a flow it starts or ends, 0 for none. */
static int pf_event(struct pf *p, uint64_t ns, unsigned type, uint64_t name, unsigned extra,
		    uint64_t flow, uint64_t end_flow)
{
	struct agent_pb *b = &p->b;
	/* An end needs no name: it closes the track's innermost slice. */
	struct agent_name *nm = type == TE_SLICE_END ? NULL : agent_names_get(p->names, name);
	if (type != TE_SLICE_END && !nm)
		return -ENOMEM;
	pf_head(p, ns, SEQ_NEEDS_INCREMENTAL_STATE);
	if (nm && nm->seq != p->seq) {
		size_t data = agent_pb_open(b, PKT_INTERNED_DATA);
		size_t en = agent_pb_open(b, ID_EVENT_NAMES);
		agent_pb_varint(b, EN_IID, nm->iid);
		agent_pb_string(b, EN_NAME, nm->text);
		agent_pb_close(b, en);
		agent_pb_close(b, data);
		nm->seq = p->seq;
	}
	size_t te = agent_pb_open(b, PKT_TRACK_EVENT);
	if (extra & PF_CUT) {
		size_t da = agent_pb_open(b, TE_DEBUG_ANNOTATIONS);
		agent_pb_string(b, DA_NAME, "cut");
		agent_pb_string(b, DA_STRING_VALUE, "still running when the ring was frozen");
		agent_pb_close(b, da);
	}
	if (extra & PF_CPU) { /* a time off the CPU: the CPU it left, from its name */
		size_t da = agent_pb_open(b, TE_DEBUG_ANNOTATIONS);
		agent_pb_string(b, DA_NAME, "cpu");
		agent_pb_varint(b, DA_UINT_VALUE, (uint32_t)name);
		agent_pb_close(b, da);
	}
	agent_pb_varint(b, TE_TYPE, type);
	if (nm)
		agent_pb_varint(b, TE_NAME_IID, nm->iid);
	if (flow)
		agent_pb_fixed64(b, TE_FLOW_IDS, flow);
	if (end_flow)
		agent_pb_fixed64(b, TE_TERMINATING_FLOW_IDS, end_flow);
	agent_pb_close(b, te);
	return agent_pb_write_packet(p->out, b);
}

static int pf_begin(void *ctx, uint64_t ns, uint64_t name, unsigned flags)
{
	(void)flags; /* a cut start is in the slice's name */
	return pf_event(ctx, ns, TE_SLICE_BEGIN, name, AGENT_NAME_IS_OFF_CPU(name) ? PF_CPU : 0, 0,
			0);
}

static int pf_end(void *ctx, uint64_t ns, uint64_t name, unsigned flags)
{
	return pf_event(ctx, ns, TE_SLICE_END, name, flags & AGENT_SLICE_CUT ? PF_CUT : 0, 0, 0);
}

static int pf_instant(void *ctx, uint64_t ns, uint64_t name)
{
	return pf_event(ctx, ns, TE_INSTANT, name, 0, 0, 0);
}

static int pf_wake(void *ctx, uint64_t ns, const struct rb_event *e)
{
	struct pf *p = ctx;
	return pf_event(p, ns, TE_INSTANT, AGENT_NAME_WAKE(e->arg), 0, flow_id(p->thread, e->ts),
			0);
}

static int pf_woken(void *ctx, uint64_t ns, uint32_t key, uint64_t from, uint64_t to)
{
	struct pf *p = ctx;
	long w = pf_waker(p, key, from, to);
	if (w < 0 || p->used[w])
		return 0;
	p->used[w] = 1; /* a flow ends once */
	return pf_event(p, ns, TE_INSTANT, AGENT_NAME_WOKEN(key), 0, 0,
			flow_id(p->wakes[w].thread, p->wakes[w].ts));
}

static const struct agent_timeline_ops pf_ops = {
	.begin = pf_begin,
	.end = pf_end,
	.instant = pf_instant,
	.wake = pf_wake,
	.woken = pf_woken,
};

/* The process's track, on a sequence of its own (absolute time: it has one packet). */
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

/*
 * A thread's first two packets. The first clears the sequence's incremental state (the
 * interned names, the clock's base), makes the thread's track and our incremental clock
 * the defaults of every packet after, and defines that clock by a snapshot: at 0 it reads
 * what the trace clock reads, both in ns. Its own time is given on the trace clock. The
 * second describes the track (a packet holds one snapshot or one descriptor, not both).
 */
static int pf_thread(struct pf *p, const struct rb_trace *t, uint32_t i)
{
	const struct rb_file_thread *th = &t->threads[i];
	struct agent_pb *b = &p->b;
	char name[4 * sizeof(th->name)];
	agent_utf8_clean(th->name[0] ? th->name : "(unnamed)", name, sizeof(name));
	p->seq = THREAD_SEQUENCE(i);
	p->thread = i;
	agent_pb_reset(b);
	agent_pb_varint(b, PKT_TIMESTAMP, 0);
	agent_pb_varint(b, PKT_TIMESTAMP_CLOCK_ID, CLOCK_BOOTTIME);
	agent_pb_varint(b, PKT_SEQUENCE_ID, p->seq);
	agent_pb_varint(b, PKT_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	agent_pb_varint(b, PKT_FIRST_ON_SEQUENCE, 1);
	size_t cs = agent_pb_open(b, PKT_CLOCK_SNAPSHOT);
	uint32_t clocks[2] = { CLOCK_BOOTTIME, CLOCK_THREAD_DELTAS };
	for (int k = 0; k < 2; k++) {
		size_t c = agent_pb_open(b, CS_CLOCKS);
		agent_pb_varint(b, CLK_ID, clocks[k]);
		agent_pb_varint(b, CLK_TIMESTAMP, 0);
		if (clocks[k] == CLOCK_THREAD_DELTAS)
			agent_pb_varint(b, CLK_INCREMENTAL, 1);
		agent_pb_close(b, c);
	}
	agent_pb_close(b, cs);
	size_t defaults = agent_pb_open(b, PKT_DEFAULTS);
	agent_pb_varint(b, DEFAULTS_CLOCK_ID, CLOCK_THREAD_DELTAS);
	size_t ted = agent_pb_open(b, DEFAULTS_TRACK_EVENT);
	agent_pb_varint(b, TED_TRACK_UUID, THREAD_UUID(i, th->tid));
	agent_pb_close(b, ted);
	agent_pb_close(b, defaults);
	int err = agent_pb_write_packet(p->out, b);
	if (err)
		return err;
	p->last_ns = 0;
	pf_head(p, 0, SEQ_NEEDS_INCREMENTAL_STATE);
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
	struct agent_names names;
	struct pf p = { .out = out, .names = &names };
	agent_names_init(&names, s);
	int err = pf_prepare(&p, t, &t0);
	if (!err)
		err = pf_process(&p, t);
	for (uint32_t i = 0; i < t->nthreads && !err; i++) {
		err = pf_thread(&p, t, i);
		if (!err)
			err = agent_timeline(t, &t->threads[i], t0, &pf_ops, &p);
	}
	agent_pb_free(&p.b);
	agent_names_free(&names);
	free(p.wakes);
	free(p.used);
	if (!err && (fflush(out) != 0 || ferror(out)))
		err = -EIO;
	return err;
}
