/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/export.c - Chrome trace-event JSON and folded stacks from a trace file, and what
 * every export shares: names made once per key, the trace's first event, and the walk of
 * a thread's events into properly nested slices (export.h).
 */
#include "agent/analysis/export.h"
#include "agent/analysis/cct.h"
#include "agent/escape.h"
#include "agent/marks.h"
#include "hal/timer.h"
#include "ringbuf/decode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Events per batch from the decoder: large enough that the call costs nothing, small
 * enough to stay in the cache. */
#define BATCH	      1024
#define NAME_MAX_TEXT 512

/* ---- strings ---- */

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0. Reads no byte past a NUL. */
static size_t utf8_seq(const unsigned char *s)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		lo = c == 0xe0 ? 0xa0 : lo;
		hi = c == 0xed ? 0x9f : hi;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		lo = c == 0xf0 ? 0x90 : lo;
		hi = c == 0xf4 ? 0x8f : hi;
	} else {
		return 0;
	}
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return n;
}

void agent_utf8_clean(const char *s, char *out, size_t size)
{
	static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	while (*p) {
		size_t n = utf8_seq(p);
		const void *src = n ? (const void *)p : replacement;
		size_t w = n ? n : 3;
		if (o + w >= size)
			break;
		memcpy(out + o, src, w);
		o += w;
		p += n ? n : 1;
	}
	out[o] = '\0';
}

/* s as the inside of a JSON string, malloc'd: agent_json_fput's escaping (plain ASCII, no
 * control byte raw, C1 and bidi characters too), without its quotes. */
static char *json_escape(const char *s)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		return NULL;
	agent_json_fput(f, s, strlen(s));
	if (fclose(f) != 0 || size < 2) {
		free(buf);
		return NULL;
	}
	memmove(buf, buf + 1, size - 2);
	buf[size - 2] = '\0';
	return buf;
}

/* ---- names ---- */

void agent_mark_name(uint32_t arg, char *out, size_t size)
{
	if (arg == AGENT_MARK_FRAME_BEGIN)
		snprintf(out, size, "frame begin");
	else if (arg == AGENT_MARK_FRAME_END)
		snprintf(out, size, "frame end");
	else if (agent_mark_is_anomaly(arg) && strcmp(agent_detector_name(arg), "unknown") != 0)
		snprintf(out, size, "anomaly: %s", agent_detector_name(arg));
	else if (agent_mark_is_anomaly(arg)) /* a detector newer than this reader: its number */
		snprintf(out, size, "anomaly: detector %u", arg & 0xffu);
	else
		snprintf(out, size, "mark 0x%x", arg);
}

/* A time off the CPU, as the summary calls it: preempted (waiting to run again, the CPU it
 * lost said), or sleeping in a call no wrapper saw (blocked, where on is not known). */
static void off_cpu_name(unsigned why, uint32_t cpu, char *out, size_t size)
{
	if (why == RB_OFF_PREEMPTED && cpu == AGENT_OFF_ANY_CPU)
		snprintf(out, size, "preempted");
	else if (why == RB_OFF_PREEMPTED)
		snprintf(out, size, "preempted (CPU %u)", cpu);
	else if (why == RB_OFF_SLEEPING)
		snprintf(out, size, "off CPU: sleeping");
	else /* a reason newer than this reader */
		snprintf(out, size, "off CPU: reason %u", why);
}

static void name_of(struct agent_names *n, uint64_t key, char *out, size_t size)
{
	uint32_t arg = (uint32_t)key;
	char what[32];
	switch (key >> 48) {
	case AGENT_NAME_WAIT(0) >> 48: /* named as the summary names it */
		agent_wait_key_name(arg, what, sizeof(what));
		snprintf(out, size, "blocked on %s", what);
		break;
	case AGENT_NAME_WAKE(0) >> 48:
		agent_wait_key_name(arg, what, sizeof(what));
		snprintf(out, size, "wake-up of %s", what);
		break;
	case AGENT_NAME_FROZEN >> 48:
		snprintf(out, size, "ring frozen: the open calls were still running");
		break;
	case AGENT_NAME_WOKEN(0) >> 48:
		agent_wait_key_name(arg, what, sizeof(what));
		snprintf(out, size, "woken up: %s", what);
		break;
	case AGENT_NAME_MARK(0) >> 48:
		agent_mark_name(arg, out, size);
		break;
	case AGENT_NAME_RECORD(0, 0) >> 48:
		snprintf(out, size, "record kind 0x%x, argument 0x%x",
			 (unsigned)(key >> 32) & 0xffu, arg);
		break;
	case AGENT_NAME_OFF_CPU(0, 0) >> 48:
		off_cpu_name((unsigned)(key >> 32) & 0xffu, arg, out, size);
		break;
	default:
		agent_key_name(n->syms, key, out, size);
		break;
	}
}

static size_t name_hash(uint64_t key)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32);
}

void agent_names_init(struct agent_names *n, struct agent_symbols *s)
{
	memset(n, 0, sizeof(*n));
	n->syms = s;
}

static int names_grow(struct agent_names *n)
{
	size_t cap = n->cap ? 2 * n->cap : 256;
	struct agent_name *slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < n->cap; i++) {
		if (!n->slot[i].text)
			continue;
		size_t j = name_hash(n->slot[i].key) & (cap - 1);
		while (slot[j].text)
			j = (j + 1) & (cap - 1);
		slot[j] = n->slot[i];
	}
	free(n->slot);
	n->slot = slot;
	n->cap = cap;
	return 0;
}

struct agent_name *agent_names_get(struct agent_names *n, uint64_t key)
{
	if (2 * (n->n + 1) > n->cap && names_grow(n) != 0)
		return NULL;
	size_t i = name_hash(key) & (n->cap - 1);
	for (; n->slot[i].text; i = (i + 1) & (n->cap - 1))
		if (n->slot[i].key == key)
			return &n->slot[i];
	char raw[NAME_MAX_TEXT], clean[NAME_MAX_TEXT];
	name_of(n, key, raw, sizeof(raw));
	agent_utf8_clean(raw, clean, sizeof(clean));
	char *text = strdup(clean);
	if (!text)
		return NULL;
	n->slot[i] = (struct agent_name){ .key = key, .text = text, .iid = ++n->n };
	return &n->slot[i];
}

const char *agent_name_json(struct agent_name *nm)
{
	if (!nm->json)
		nm->json = json_escape(nm->text);
	return nm->json;
}

void agent_names_free(struct agent_names *n)
{
	for (size_t i = 0; i < n->cap; i++) {
		free(n->slot[i].text);
		free(n->slot[i].json);
	}
	free(n->slot);
	memset(n, 0, sizeof(*n));
}

void agent_process_label(const struct rb_trace *t, char *out, size_t size)
{
	char raw[NAME_MAX_TEXT];
	const char *prog = t->nmodules ? t->modules[0].path : NULL;
	const char *base = prog ? strrchr(prog, '/') : NULL;
	if (prog && *prog)
		snprintf(raw, sizeof(raw), "%s: %s", base ? base + 1 : prog, t->reason);
	else
		snprintf(raw, sizeof(raw), "pid %u: %s", t->pid, t->reason);
	agent_utf8_clean(raw, out, size);
}

/* ---- the timeline of one thread ---- */

int agent_trace_start(const struct rb_trace *t, uint64_t *t0)
{
	bool any = false;
	*t0 = 0;
	/* Each ring's oldest time is known once its reverse pass is done; the decoder is
	 * dropped straight away, so only one thread's bit per slot is ever held. */
	for (uint32_t i = 0; i < t->nthreads; i++) {
		struct rb_decoder d;
		int err = rb_decoder_init(&d, &t->threads[i].view, t->ref_ticks, NULL, NULL);
		if (err)
			return err;
		if (d.stats.records && (!any || d.start_ts < *t0)) {
			*t0 = d.start_ts;
			any = true;
		}
		rb_decoder_free(&d);
	}
	return 0;
}

static uint64_t ns_since(uint64_t ts, uint64_t t0, uint64_t hz)
{
	return hal_ticks_to_ns(ts > t0 ? ts - t0 : 0, hz);
}

enum { OPEN_CALL, OPEN_WAIT, OPEN_OFF_CPU };

struct open_slice {
	uint64_t name;
	uint64_t since; /* a wait: the ticks it began at */
	uint8_t what;
};

struct walk {
	const struct rb_trace *t;
	const struct agent_timeline_ops *ops;
	void *ctx;
	struct open_slice *open; /* outermost first */
	size_t depth, cap, calls;
	uint64_t t0;		      /* the trace's first event, ticks */
	uint64_t last_ns, last_ticks; /* the thread's previous event */
};

static int walk_begin(struct walk *w, uint8_t what, uint64_t ns, uint64_t name, unsigned flags)
{
	if (w->depth == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		struct open_slice *o = realloc(w->open, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		w->open = o;
		w->cap = cap;
	}
	w->open[w->depth++] = (struct open_slice){ .name = name, .what = what };
	w->calls += what == OPEN_CALL;
	return w->ops->begin(w->ctx, ns, name, flags);
}

static int walk_end(struct walk *w, uint64_t ns, unsigned flags)
{
	const struct open_slice *o = &w->open[--w->depth];
	w->calls -= o->what == OPEN_CALL;
	return w->ops->end(w->ctx, ns, o->name, flags);
}

static bool waiting(const struct walk *w)
{
	return w->depth && w->open[w->depth - 1].what == OPEN_WAIT;
}

/* A wait begun at `since` ticks (its begin record, or the thread's previous event when the
 * ring lost the begin: nothing after that event can overlap it, as cct.c counts it). */
static int wait_begin(struct walk *w, uint64_t ns, uint64_t since, uint32_t key, unsigned flags)
{
	int err = walk_begin(w, OPEN_WAIT, ns, AGENT_NAME_WAIT(key), flags);
	if (!err)
		w->open[w->depth - 1].since = since;
	return err;
}

/* The open wait ended by its wait-end record e, at ns. */
static int wait_end(struct walk *w, const struct rb_event *e, uint64_t ns)
{
	uint64_t since = w->open[w->depth - 1].since;
	int err = walk_end(w, ns, 0);
	if (!err && w->ops->woken)
		err = w->ops->woken(w->ctx, ns, e->arg, since, e->ts);
	return err;
}

static int walk_event(struct walk *w, const struct rb_event *e, uint64_t ns)
{
	int err = 0;
	switch (e->kind) {
	case RB_EV_ENTRY:
		return walk_begin(w, OPEN_CALL, ns, agent_func_key(w->t, e), 0);
	case RB_EV_EXIT:
		if (!w->calls) /* cannot happen: the decoder counted the calls opened before */
			return 0;
		/* A wait still open when its call returns (a lost wait-end): it ends here too,
		 * as the calling-context tree counts it, so the slices stay nested. */
		while (!err && waiting(w))
			err = walk_end(w, ns, 0);
		return err ? err : walk_end(w, ns, 0);
	case RB_EV_WAIT_BEGIN:
		if (waiting(w))
			err = walk_end(w, ns, 0);
		return err ? err : wait_begin(w, ns, e->ts, e->arg, 0);
	case RB_EV_WAIT_END:
		if (!waiting(w))
			err = wait_begin(w, w->last_ns, w->last_ticks, e->arg, AGENT_SLICE_CUT);
		return err ? err : wait_end(w, e, ns);
	case RB_EV_MARK:
		return w->ops->instant(w->ctx, ns, AGENT_NAME_MARK(e->arg));
	case RB_EV_WAKE:
		if (w->ops->wake)
			return w->ops->wake(w->ctx, ns, e);
		return w->ops->instant(w->ctx, ns, AGENT_NAME_WAKE(e->arg));
	case RB_EV_RESERVED:
	case RB_EV_SETJMP:  /* the frames a longjmp left come as exits after it */
	case RB_EV_LONGJMP:
	case RB_EV_CTX_MADE: /* likewise a switch's exits and entries */
	case RB_EV_CTX_SWAP:
	case RB_EV_CTX_SET:
		return w->ops->instant(w->ctx, ns, AGENT_NAME_RECORD(e->raw, e->arg));
	case RB_EV_OFF_CPU:
		/* Inside a wait the wait already covers it; else a slice of its own in the
		 * innermost open call (the decoder puts no record between its ends), so that
		 * the call's self time is its running time, as the summary counts it. */
		if (waiting(w))
			return 0;
		err = walk_begin(w, OPEN_OFF_CPU, ns_since(e->id, w->t0, w->t->timer_hz),
				 AGENT_NAME_OFF_CPU(e->raw, e->arg), 0);
		return err ? err : walk_end(w, ns, 0);
	default: /* sync records, and schedstat samples, only anchor the time */
		return 0;
	}
}

int agent_timeline(const struct rb_trace *t, const struct rb_file_thread *th, uint64_t t0,
		   const struct agent_timeline_ops *ops, void *ctx)
{
	struct rb_decoder d;
	int err = rb_decoder_init(&d, &th->view, t->ref_ticks, NULL, NULL);
	if (err)
		return err;
	struct walk w = { .t = t, .ops = ops, .ctx = ctx, .t0 = t0 };
	struct rb_event *buf = malloc(BATCH * sizeof(*buf));
	bool first = true;
	size_t n;
	if (!buf)
		err = -ENOMEM;
	while (!err && (n = rb_decoder_read(&d, buf, BATCH)) > 0) {
		for (size_t i = 0; i < n && !err; i++) {
			uint64_t ns = ns_since(buf[i].ts, t0, t->timer_hz);
			if (first) {
				/* The calls the wrapped ring starts inside: open since its first
				 * event, named for what they are. */
				w.last_ns = ns;
				w.last_ticks = buf[i].ts;
				for (uint64_t k = 0; k < d.open_at_start && !err; k++)
					err = walk_begin(&w, OPEN_CALL, ns, CCT_UNKNOWN,
							 AGENT_SLICE_CUT);
				first = false;
			}
			if (!err)
				err = walk_event(&w, &buf[i], ns);
			w.last_ns = ns;
			w.last_ticks = buf[i].ts;
		}
	}
	/* Calls and waits still open when the ring was frozen run until the freeze (the
	 * decoder's end_ts: never before the last event), as in the summary (cct_finish). */
	uint64_t end_ns = ns_since(d.end_ts, t0, t->timer_hz);
	if (end_ns < w.last_ns)
		end_ns = w.last_ns;
	while (!err && w.depth)
		err = walk_end(&w, end_ns, AGENT_SLICE_CUT);
	free(buf);
	free(w.open);
	rb_decoder_free(&d);
	return err;
}

/* ---- Chrome trace-event JSON ---- */

/*
 * The Trace Event Format's JSON object form: {"traceEvents": [...]}, one event a line,
 * "M" metadata for the process and thread names, thread-scoped "i" instants, and per slice
 * either a complete "X" event, when nothing happens inside it (a leaf call, a wait), or a
 * B/E pair around what does, both ends named. The export streams, and an X event must be
 * written whole: a begin is held back until the next event says which it is, and a
 * complete slice until the next says how to write it (slice_done). Timestamps are
 * microseconds; three decimals keep the nanoseconds.
 */
struct chrome {
	FILE *out;
	struct agent_names *names;
	bool held; /* a begin not written yet: X or B is up to the next event */
	uint64_t held_ns, held_name;
	bool done; /* a complete slice, [done_ns, done_end], not written yet */
	uint64_t done_ns, done_end, done_name;
	bool frozen; /* the freeze ended calls: a "ring frozen" instant at frozen_ns */
	uint64_t frozen_ns;
	size_t head_len;
	char head[64]; /* ",\n{"pid":P,"tid":T," */
	/* One event's line, written at once: printf and a stdio call per piece made the
	 * export of a full 32 MiB ring three times slower. A name's JSON is at most 6 bytes
	 * per byte of its NAME_MAX_TEXT text, so every line fits. */
	char line[6 * NAME_MAX_TEXT + 256];
};

static char *put(char *p, const char *s)
{
	size_t n = strlen(s);
	memcpy(p, s, n);
	return p + n;
}

/* ns as microseconds with three decimals: exact, and no floating point. */
static char *put_us(char *p, uint64_t ns)
{
	char b[32], *q = b + sizeof(b);
	uint64_t us = ns / 1000;
	unsigned frac = (unsigned)(ns % 1000);
	for (int k = 0; k < 3; k++, frac /= 10)
		*--q = (char)('0' + frac % 10);
	*--q = '.';
	do
		*--q = (char)('0' + us % 10);
	while (us /= 10);
	memcpy(p, q, (size_t)(b + sizeof(b) - q));
	return p + (b + sizeof(b) - q);
}

static const char *category(uint64_t name)
{
	switch (name >> 48) {
	case AGENT_NAME_WAIT(0) >> 48:
		return "blocked";
	case AGENT_NAME_WAKE(0) >> 48:
		return "wake";
	case AGENT_NAME_MARK(0) >> 48:
	case AGENT_NAME_FROZEN >> 48:
		return "mark";
	case AGENT_NAME_RECORD(0, 0) >> 48:
		return "record";
	case AGENT_NAME_OFF_CPU(0, 0) >> 48:
		return "off-cpu";
	default:
		return NULL;
	}
}

/* The line's start: the thread, the phase and the time. */
static char *chrome_start(struct chrome *c, const char *ph, uint64_t ns)
{
	char *p = c->line;
	memcpy(p, c->head, c->head_len);
	p = put(p + c->head_len, "\"ph\":\"");
	p = put(p, ph);
	p = put(p, "\",\"ts\":");
	return put_us(p, ns);
}

/* An event's line: the thread, phase, time, name and category, then `tail` ("}" or
 * more members and the "}"). */
static int chrome_item(struct chrome *c, const char *ph, uint64_t ns, uint64_t name,
		       const char *tail)
{
	struct agent_name *nm = agent_names_get(c->names, name);
	const char *json = nm ? agent_name_json(nm) : NULL;
	const char *cat = category(name);
	if (!json)
		return -ENOMEM;
	char *p = chrome_start(c, ph, ns);
	p = put(p, ",\"name\":\"");
	p = put(p, json);
	if (cat) {
		p = put(p, "\",\"cat\":\"");
		p = put(p, cat);
	}
	p = put(p, "\"");
	p = put(p, tail);
	fwrite(c->line, 1, (size_t)(p - c->line), c->out);
	return 0;
}

/*
 * The complete slice held back, now that the next event is known: an X event, unless it
 * has no length or that event (an end, or a sibling's begin) is at the same time. speedscope turns each X into a
 * begin and an end and puts those after every B and E of the same time (stable sorts of
 * the B and E events, the X's appended), so a leaf ending at its caller's time would be
 * ended after its caller and every end there dropped, as a hang's culprit was at the
 * freeze; and a leaf of no length would begin after a sibling that begins at its time
 * (common with a 19.2 MHz ARM timer). A B/E pair keeps the file's order.
 */
static int slice_done(struct chrome *c, const uint64_t *next_at)
{
	if (!c->done)
		return 0;
	c->done = false;
	if (c->done_end == c->done_ns || (next_at && *next_at == c->done_end)) {
		int err = chrome_item(c, "B", c->done_ns, c->done_name, "}");
		return err ? err : chrome_item(c, "E", c->done_end, c->done_name, "}");
	}
	char tail[64], *p = put(tail, ",\"dur\":");
	p = put(put_us(p, c->done_end - c->done_ns), "}");
	*p = '\0';
	return chrome_item(c, "X", c->done_ns, c->done_name, tail);
}

/* What is held back, written as the next event needs: the complete slice first, then the
 * held begin as a "B" (something happens inside its slice). */
static int chrome_flush(struct chrome *c)
{
	int err = slice_done(c, NULL);
	if (err || !c->held)
		return err;
	c->held = false;
	return chrome_item(c, "B", c->held_ns, c->held_name, "}");
}

static int chrome_begin(void *ctx, uint64_t ns, uint64_t name, unsigned flags)
{
	struct chrome *c = ctx;
	(void)flags; /* a cut start is in the slice's name */
	/* A sibling that begins where the held slice ended: speedscope computes an X's end as
	 * ts + dur in floating point, which can land a hair after this begin. A pair, then. */
	int err = slice_done(c, &ns);
	if (!err)
		err = chrome_flush(c);
	c->held = true;
	c->held_ns = ns;
	c->held_name = name;
	return err;
}

static int chrome_instant(void *ctx, uint64_t ns, uint64_t name)
{
	int err = chrome_flush(ctx);
	return err ? err : chrome_item(ctx, "i\",\"s\":\"t", ns, name, "}");
}

/*
 * The end carries its slice's name, and nothing else: the format allows an E without a name,
 * but speedscope matches each E to its B by name and arguments, and drops every E that
 * differs. So slices the freeze ends say nothing themselves: the thread ends with a "ring
 * frozen" instant at the freeze (chrome_thread_end).
 */
static int chrome_end(void *ctx, uint64_t ns, uint64_t name, unsigned flags)
{
	struct chrome *c = ctx;
	int err = slice_done(c, &ns);
	if (err)
		return err;
	if (flags & AGENT_SLICE_CUT) {
		c->frozen = true;
		c->frozen_ns = ns;
	}
	if (!c->held)
		return chrome_item(c, "E", ns, name, "}");
	/* held: nothing happened inside, a complete slice */
	c->held = false;
	c->done = true;
	c->done_ns = c->held_ns;
	c->done_end = ns;
	c->done_name = name;
	return 0;
}

static int chrome_thread_end(struct chrome *c)
{
	int err = chrome_flush(c);
	if (!err && c->frozen)
		err = chrome_item(c, "i\",\"s\":\"t", c->frozen_ns, AGENT_NAME_FROZEN, "}");
	return err;
}

static const struct agent_timeline_ops chrome_ops = {
	.begin = chrome_begin, .end = chrome_end, .instant = chrome_instant
};

/* One metadata event: what (process_name, thread_name), its argument, already JSON. */
static void chrome_meta(FILE *out, uint32_t pid, uint32_t tid, const char *what, const char *arg,
			const char *value)
{
	fprintf(out, ",\n{\"pid\":%u,\"tid\":%u,\"ph\":\"M\",\"name\":\"%s\",\"args\":{\"%s\":%s}}",
		pid, tid, what, arg, value);
}

/* A string of bytes as a quoted JSON string, malloc'd. */
static char *json_quote(const char *s)
{
	char clean[NAME_MAX_TEXT];
	agent_utf8_clean(s, clean, sizeof(clean));
	char *e = json_escape(clean), *q = e ? malloc(strlen(e) + 3) : NULL;
	if (q)
		sprintf(q, "\"%s\"", e);
	free(e);
	return q;
}

int agent_export_chrome(FILE *out, const struct rb_trace *t, struct agent_symbols *s)
{
	uint64_t t0;
	int err = agent_trace_start(t, &t0);
	if (err)
		return err;
	struct agent_names names;
	agent_names_init(&names, s);
	char label[NAME_MAX_TEXT];
	agent_process_label(t, label, sizeof(label));
	char *plabel = json_quote(label), *reason = json_quote(t->reason);
	if (!plabel || !reason) {
		err = -ENOMEM;
		goto out;
	}
	fprintf(out,
		"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"reason\":%s,\"pid\":\"%u\","
		"\"timer_hz\":\"%llu\"},\"traceEvents\":[\n",
		reason, t->pid, (unsigned long long)t->timer_hz);
	fprintf(out,
		"{\"pid\":%u,\"tid\":%u,\"ph\":\"M\",\"name\":\"process_name\","
		"\"args\":{\"name\":%s}}",
		t->pid, t->pid, plabel);
	/* Every thread is named first, so one with an empty ring still shows. */
	for (uint32_t i = 0; i < t->nthreads && !err; i++) {
		const struct rb_file_thread *th = &t->threads[i];
		char sort[16], *name = json_quote(th->name[0] ? th->name : "(unnamed)");
		if (!name) {
			err = -ENOMEM;
			break;
		}
		snprintf(sort, sizeof(sort), "%u", i);
		chrome_meta(out, t->pid, th->tid, "thread_name", "name", name);
		chrome_meta(out, t->pid, th->tid, "thread_sort_index", "sort_index", sort);
		free(name);
	}
	struct chrome *c = malloc(sizeof(*c));
	for (uint32_t i = 0; i < t->nthreads && !err; i++) {
		if (!c) {
			err = -ENOMEM;
			break;
		}
		c->out = out;
		c->names = &names;
		c->head_len =
			(size_t)snprintf(c->head, sizeof(c->head), ",\n{\"pid\":%u,\"tid\":%u,",
					 t->pid, t->threads[i].tid);
		c->held = c->done = c->frozen = false;
		err = agent_timeline(t, &t->threads[i], t0, &chrome_ops, c);
		if (!err)
			err = chrome_thread_end(c);
	}
	free(c);
	if (!err)
		fputs("\n]}\n", out);
out:
	free(plabel);
	free(reason);
	agent_names_free(&names);
	if (!err && (fflush(out) != 0 || ferror(out)))
		err = -EIO;
	return err;
}

/* ---- folded stacks ---- */

/*
 * Brendan Gregg's folded format: "frame;frame;...;frame count" a line, the count after the
 * last space. A frame may hold spaces (C++ signatures do), but a ';' would split it and a
 * line break would end the line: frames are escaped as a terminal's text (agent_escape:
 * controls, bidi and invalid bytes as \xNN, '\' doubled) and a ';' as \x3b, so a name
 * from a trace can neither add a frame nor a line.
 *
 * A line holds at most max_stack frames, as perf's --max-stack (127 by default): a deeper
 * context keeps its innermost frames, where the self time is, and the outer ones give way
 * to one frame "(outer frames cut)", of a fixed text so that the stacks of one deep
 * recursion still merge in a flame graph (the caller gets the count). Without the cap a trace
 * 10,000 calls deep made a 1 GB file (each line repeats its whole path); with it the
 * output is at most max_stack frames per context, linear in the trace.
 */
#define FOLD_CUT_FRAME "(outer frames cut)"

/* A frame's text in the folded format (above), malloc'd. */
static char *fold_frame(const char *s)
{
	/* Every byte becomes at most 4 characters (\xNN, or \x3b for a ';'). */
	size_t size = 4 * strlen(s) + 4;
	char *e = malloc(size), *out = e ? malloc(size) : NULL, *o = out;
	if (!out) {
		free(e);
		return NULL;
	}
	agent_escape(e, size, s);
	for (const char *p = e; *p; p++)
		if (*p == ';')
			o = memcpy(o, "\\x3b", 4), o += 4;
		else
			*o++ = *p;
	*o = '\0';
	free(e);
	return out;
}

struct fold_path {
	char *buf;
	size_t len, cap;
};

/* Append a frame (after a ';' unless it is the first) to the path. 0 or -ENOMEM. */
static int fold_append(struct fold_path *p, const char *s)
{
	size_t n = strlen(s) + 2;
	if (p->len + n > p->cap) {
		size_t cap = p->cap ? p->cap : 256;
		while (p->len + n > cap)
			cap *= 2;
		char *b = realloc(p->buf, cap);
		if (!b)
			return -ENOMEM;
		p->buf = b;
		p->cap = cap;
	}
	if (p->len)
		p->buf[p->len++] = ';';
	memcpy(p->buf + p->len, s, n - 2);
	p->len += n - 2;
	p->buf[p->len] = '\0';
	return 0;
}

/*
 * The folded export's events for the calling-context tree: a blocked wait becomes a call of
 * its own, "[blocked on fd 5]", so that the flame graph shows where the thread waited, in
 * the frame that waited, and the caller's count stays its self time (the tree subtracts
 * the pseudo-call as a child, as the summary subtracts the blocked time). The wait's ends
 * are those of the timeline (walk_event): a lost begin, since the previous event; a lost
 * end, at the next wait's begin or the call's return; an open wait, at the freeze. A time
 * off the CPU outside a wait is a pseudo-call too, "[preempted]" or "[off CPU: sleeping]"
 * (without the CPU, so that one context has one frame per reason): the caller's count is
 * then its running time only, the summary's self time.
 */
struct fold_feed {
	const struct rb_trace *t;
	struct cct *c;
	uint64_t last_ts;
	uint64_t synthetic; /* the key of the pseudo-call being added, 0 for a real event */
	bool waiting;
};

static uint64_t key_of(void *ctx, const struct rb_event *e)
{
	const struct fold_feed *f = ctx;
	return f->synthetic ? f->synthetic : agent_func_key(f->t, e);
}

/* A pseudo-call's entry or exit; name: its key (an exit's is not looked at). */
static int feed_pseudo(struct fold_feed *f, uint8_t kind, uint64_t ts, uint64_t name)
{
	struct rb_event e = { .ts = ts, .kind = kind };
	f->synthetic = name;
	int err = cct_add(f->c, &e);
	f->synthetic = 0;
	return err;
}

static int feed_wait(struct fold_feed *f, uint8_t kind, uint64_t ts, uint32_t key)
{
	f->waiting = kind == RB_EV_ENTRY;
	return feed_pseudo(f, kind, ts, AGENT_NAME_WAIT(key));
}

static int feed_event(struct fold_feed *f, const struct rb_event *e)
{
	int err = 0;
	switch (e->kind) {
	case RB_EV_EXIT:
	case RB_EV_WAIT_BEGIN:
		if (f->waiting)
			err = feed_wait(f, RB_EV_EXIT, e->ts, 0);
		if (!err && e->kind == RB_EV_WAIT_BEGIN)
			err = feed_wait(f, RB_EV_ENTRY, e->ts, e->arg);
		break;
	case RB_EV_WAIT_END:
		if (!f->waiting)
			err = feed_wait(f, RB_EV_ENTRY, f->last_ts, e->arg);
		if (!err)
			err = feed_wait(f, RB_EV_EXIT, e->ts, 0);
		break;
	case RB_EV_OFF_CPU: /* as the timeline's slice (walk_event), one frame per reason */
		if (f->waiting)
			break;
		err = feed_pseudo(f, RB_EV_ENTRY, e->id,
				  AGENT_NAME_OFF_CPU(e->raw, AGENT_OFF_ANY_CPU));
		if (!err)
			err = feed_pseudo(f, RB_EV_EXIT, e->ts, 0);
		break;
	default:
		break;
	}
	f->last_ts = e->ts;
	/* The pseudo-calls stand for their events: the tree must not count those again. */
	if (err || e->kind == RB_EV_WAIT_BEGIN || e->kind == RB_EV_WAIT_END ||
	    e->kind == RB_EV_OFF_CPU)
		return err;
	return cct_add(f->c, e);
}

/* Each key's frame text, made once (fold_frame), by the key's name slot. */
struct fold_names {
	struct agent_names *names;
	char **text; /* per name iid */
	size_t cap;
};

static const char *fold_name(struct fold_names *f, uint64_t key)
{
	struct agent_name *nm = agent_names_get(f->names, key);
	if (!nm)
		return NULL;
	if (nm->iid >= f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 256;
		while (cap <= nm->iid)
			cap *= 2;
		char **t = realloc(f->text, cap * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + f->cap, 0, (cap - f->cap) * sizeof(*t));
		f->text = t;
		f->cap = cap;
	}
	if (!f->text[nm->iid] &&
	    (key >> 48 == AGENT_NAME_WAIT(0) >> 48 || AGENT_NAME_IS_OFF_CPU(key))) {
		/* A wait, or a time off the CPU, is no function: "[blocked on fd 5]",
		 * "[preempted]", bracketed as perf marks its own frames that are not code. */
		size_t n = strlen(nm->text) + 3;
		char *w = malloc(n);
		if (!w)
			return NULL;
		snprintf(w, n, "[%s]", nm->text);
		f->text[nm->iid] = fold_frame(w);
		free(w);
	} else if (!f->text[nm->iid]) {
		f->text[nm->iid] = fold_frame(nm->text);
	}
	return f->text[nm->iid];
}

/* One thread's tree, depth first. The counts are each node's self time in ns, rounded so
 * that every prefix of the lines sums to the floor of its ticks in ns: the whole sums to
 * the tree's self time exactly, and no line is off by a nanosecond or more. */
static int fold_tree(FILE *out, const struct cct *c, const char *label, uint64_t hz,
		     struct fold_names *names, unsigned max_stack, uint64_t *cut)
{
	struct fold_path p = { 0 }, deep = { 0 };
	size_t *at = NULL, at_cap = 0; /* at[d]: the path's length down to depth d */
	const char **frame = NULL;     /* frame[d]: the text of the frame at depth d */
	uint64_t cum = 0, done_ns = 0;
	int err = fold_append(&p, label);
	for (uint32_t i = 0; !err && i != CCT_NONE;) {
		const struct cct_node *nd = &c->node[i];
		if (nd->depth >= at_cap) {
			size_t cap = at_cap ? 2 * at_cap : 64;
			size_t *a = realloc(at, cap * sizeof(*a));
			const char **fr = a ? realloc(frame, cap * sizeof(*fr)) : NULL;
			if (a)
				at = a;
			if (fr)
				frame = fr;
			if (!a || !fr) {
				err = -ENOMEM;
				break;
			}
			at_cap = cap;
		}
		const char *line = p.buf;
		if (i) {
			frame[nd->depth] = fold_name(names, nd->func);
			if (!frame[nd->depth]) {
				err = -ENOMEM;
				break;
			}
			if (nd->depth <= max_stack) {
				p.len = at[nd->depth - 1];
				err = fold_append(&p, frame[nd->depth]);
				line = p.buf;
			} else if (nd->s[CCT_WHOLE].self) {
				/* Only a line that is written is made: the label, the cut, and
				 * the innermost max_stack frames. */
				deep.len = 0;
				err = fold_append(&deep, label);
				if (!err)
					err = fold_append(&deep, FOLD_CUT_FRAME);
				for (uint32_t d = nd->depth - max_stack + 1; !err && d <= nd->depth;
				     d++)
					err = fold_append(&deep, frame[d]);
				line = deep.buf;
			}
			if (err)
				break;
		}
		if (nd->depth <= max_stack)
			at[nd->depth] = p.len;
		cum += nd->s[CCT_WHOLE].self;
		uint64_t ns = hal_ticks_to_ns(cum, hz);
		if (ns > done_ns) {
			fprintf(out, "%s %llu\n", line, (unsigned long long)(ns - done_ns));
			*cut += nd->depth > max_stack;
		}
		done_ns = ns;
		/* Next: the first child, else the next sibling of the nearest ancestor that has
		 * one (the root has none). */
		if (nd->first_child != CCT_NONE) {
			i = nd->first_child;
			continue;
		}
		while (i && c->node[i].next_sibling == CCT_NONE)
			i = c->node[i].parent;
		i = i ? c->node[i].next_sibling : CCT_NONE;
	}
	free(p.buf);
	free(deep.buf);
	free(at);
	free(frame);
	return err;
}

int agent_export_folded(FILE *out, const struct rb_trace *t, struct agent_symbols *s)
{
	uint64_t cut = 0;
	return agent_export_folded_max(out, t, s, AGENT_FOLDED_MAX_STACK, &cut);
}

int agent_export_folded_max(FILE *out, const struct rb_trace *t, struct agent_symbols *s,
			    unsigned max_stack, uint64_t *cut)
{
	struct agent_names names;
	struct fold_names fn = { .names = &names };
	struct rb_event *buf = malloc(BATCH * sizeof(*buf));
	int err = buf ? 0 : -ENOMEM;
	*cut = 0;
	if (max_stack < 1)
		max_stack = 1;
	agent_names_init(&names, s);
	for (uint32_t i = 0; i < t->nthreads && !err; i++) {
		const struct rb_file_thread *th = &t->threads[i];
		struct rb_decoder d;
		struct cct c;
		struct fold_feed feed = { .t = t, .c = &c };
		struct cct_opts o = { .key = key_of, .ctx = &feed };
		err = rb_decoder_init(&d, &th->view, t->ref_ticks, NULL, NULL);
		if (err)
			break;
		err = cct_init(&c, &o, d.open_at_start);
		if (err) {
			rb_decoder_free(&d);
			break;
		}
		size_t n;
		while (!err && (n = rb_decoder_read(&d, buf, BATCH)) > 0)
			for (size_t k = 0; k < n && !err; k++)
				err = feed_event(&feed, &buf[k]);
		/* What still runs, or waits, at the freeze ends there, as in the summary. */
		if (!err)
			err = cct_finish(&c, d.end_ts);
		rb_decoder_free(&d);
		char raw[64], clean[64], *label;
		snprintf(raw, sizeof(raw), "%s-%u", th->name[0] ? th->name : "thread", th->tid);
		agent_utf8_clean(raw, clean, sizeof(clean)); /* as the names of functions */
		label = fold_frame(clean);
		if (!err && !label)
			err = -ENOMEM;
		if (!err && c.events)
			err = fold_tree(out, &c, label, t->timer_hz, &fn, max_stack, cut);
		free(label);
		cct_free(&c);
	}
	free(buf);
	for (size_t i = 0; i < fn.cap; i++)
		free(fn.text[i]);
	free(fn.text);
	agent_names_free(&names);
	if (!err && (fflush(out) != 0 || ferror(out)))
		err = -EIO;
	return err;
}
