/* SPDX-License-Identifier: MIT */
#include "decode.h"
#include "coroutines.h"
#include "record.h"
#include "untimed.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *rb_ev_kind_name(enum rb_ev_kind kind)
{
	static const char *const names[] = { "entry",	   "exit",     "sync",	 "mark",
					     "wait-begin", "wait-end", "wake",	 "reserved",
					     "schedstat",  "off-cpu",  "setjmp", "longjmp",
					     "ctx-made",   "ctx-swap", "ctx-set" };
	return kind <= RB_EV_CTX_SET ? names[kind] : "?";
}

static enum rb_ev_kind special_kind(uint32_t low)
{
	switch (low) {
	case RB_SYNC:
		return RB_EV_SYNC;
	case RB_MARK:
		return RB_EV_MARK;
	case RB_WAIT_BEGIN:
		return RB_EV_WAIT_BEGIN;
	case RB_WAIT_END:
		return RB_EV_WAIT_END;
	case RB_WAKE:
		return RB_EV_WAKE;
	case RB_SCHED_RUN:
	case RB_SCHED_WAIT:
		return RB_EV_SCHEDSTAT;
	case RB_SETJMP:
		return RB_EV_SETJMP;
	case RB_LONGJMP:
		return RB_EV_LONGJMP;
	case RB_CTX_MADE:
		return RB_EV_CTX_MADE;
	case RB_CTX_SWAP:
		return RB_EV_CTX_SWAP;
	case RB_CTX_SET:
		return RB_EV_CTX_SET;
	default:
		return RB_EV_RESERVED;
	}
}

/* Ring events read ahead while off-CPU intervals are merged in (rb_decoder_read). */
#define HELD_EVENTS 256

/* The slot at forward index p: 0 is the oldest valid slot, valid - 1 the newest. */
static uint64_t slot_at(const struct rb_decoder *d, uint64_t p)
{
	uint64_t i = d->base + p;
	return d->view.slots[i >= d->view.nslots ? i - d->view.nslots : i];
}

static bool is_payload(const struct rb_decoder *d, uint64_t p)
{
	return d->payload[p >> 6] >> (p & 63) & 1;
}

/* The physical slot before i, in a ring of n slots. */
static uint64_t before(uint64_t i, uint64_t n)
{
	return (i ? i : n) - 1;
}

/* A special record (2..0xF but a counted call): an anchor, whose time is whole. */
static bool anchor_low(uint32_t low)
{
	return low - RB_SYNC < RB_FIRST_ID - RB_SYNC && low != RB_CALLED;
}

/* The record whose first slot is at forward index *p; *p moves past it. Its timestamp is
 * the truncated ts32 unless the record is a special one (an anchor: whole). */
static void parse_at(const struct rb_decoder *d, uint64_t *p, struct rb_event *e)
{
	uint64_t payload = 0;
	if (is_payload(d, *p))
		payload = slot_at(d, (*p)++);
	uint64_t tag = slot_at(d, (*p)++);
	uint32_t low = rb_tag_low(tag);
	memset(e, 0, sizeof(*e));
	e->ts = rb_tag_ts32(tag);
	if (low == RB_EXIT) {
		e->kind = RB_EV_EXIT;
	} else if (low >= RB_FIRST_ID) {
		e->kind = RB_EV_ENTRY;
		e->id = low;
		e->wide = d->view.word_size == 4;
	} else if (low == RB_WIDE) {
		e->kind = RB_EV_ENTRY;
		e->id = payload;
		e->wide = 1;
	} else if (low == RB_CALLED) { /* its entry; called_exit gives the exit */
		e->kind = RB_EV_ENTRY;
		e->id = (uint32_t)payload;
		e->arg = (uint32_t)(payload >> 32);
		e->raw = RB_CALLED;
	} else {
		e->kind = (uint8_t)special_kind(low);
		e->raw = (uint8_t)low;
		e->arg = (uint32_t)payload;
		e->ts = (payload & 0xffffffff00000000ull) | e->ts;
	}
}

static bool is_anchor(const struct rb_event *e)
{
	return e->kind >= RB_EV_SYNC;
}

/* One step of Hubble's walk: the next time whose low half is ts32, at most 2^32 - 1 on. */
static uint64_t step(uint64_t cur, uint64_t ts32)
{
	return cur + (uint32_t)((uint32_t)ts32 - (uint32_t)cur);
}

/* Anchors whose segment needs planning, found newest first. */
static int add_plan(struct rb_decoder *d, uint64_t pos)
{
	if (d->nplan == d->capplan) {
		size_t cap = d->capplan ? 2 * d->capplan : 16;
		uint64_t *p = realloc(d->plan, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		d->plan = p;
		d->capplan = cap;
	}
	d->plan[d->nplan++] = pos;
	return 0;
}

static int unwound_open_at_start(struct rb_decoder *d);

bool rb_ring_view_ok(const struct rb_ring_view *v)
{
	return v->slots && v->nslots && v->end < v->nslots && v->valid <= v->nslots &&
	       v->stored <= v->nslots &&
	       (v->valid > v->end ? v->stored >= v->nslots : v->stored >= v->end);
}

/*
 * Newest to oldest (Hubble 5.1.1): find which slots are payloads, hand the special records
 * to the caller, and keep what the forward walk needs: the oldest record's time, from the
 * oldest anchor minus the steps down to it (Hubble Fig. 3; with no anchor, from the
 * reference), and how many calls the ring starts inside: the most exits over entries of
 * any prefix, which is the total minus the smallest suffix sum. *untimed: the one-slot
 * records whose upper half is 0 (untimed.h). 0 or -ENOMEM.
 *
 * `seg` sums the steps (each shorter than 2^32) from each record to the next newer one
 * since the last anchor: it walks back from that anchor to the oldest record, and checks
 * the walk between two anchors. The newest anchor walks forward to the newest record by its
 * own step and those of the records after it, all but the newest record's (tn0, which goes
 * to the reference).
 *
 * The loop keeps its state in locals and reads the slots straight (one-slot records, 96% of
 * bench-summary's ring, take the first branch): 347 M instructions for its 4.0 M records
 * with a parse and its bookkeeping per record, 115 M so (callgrind); 123 M with the count of
 * untimed records.
 */
static int parse_back(struct rb_decoder *d, uint64_t ref_ticks, rb_special_fn special, void *ctx,
		      uint64_t *untimed)
{
	const struct rb_ring_view *v = &d->view;
	const uint64_t *slots = v->slots;
	const uint64_t nslots = v->nslots;
	uint64_t anchor = ref_ticks, seg = 0, records = 0, tn0 = 0, zero = 0;
	uint32_t newer = (uint32_t)ref_ticks;
	int64_t suffix = 0, min_suffix = 0;
	bool seen_anchor = false;
	d->stats.cut = d->stats.anchors = d->stats.called = d->stats.called_calls = 0;
	d->nplan = 0;
	d->nonlocal = 0;
	d->coroutines = false;
	d->first = 0;
	d->end_ts = 0;
	if (v->valid) /* the newest record's step, to the reference */
		tn0 = (uint32_t)(newer - rb_tag_ts32(slots[before(v->end, nslots)]));
	uint64_t p = v->valid, i = v->end; /* i: the physical index of forward index p */
	while (p > 0) {
		p--, i = before(i, nslots);
		uint64_t tag = slots[i];
		uint32_t low = rb_tag_low(tag), ts32 = rb_tag_ts32(tag);
		uint32_t to_newer = newer - ts32; /* to the next newer record (the newest: the ref) */
		if (!rb_two_slots(low)) {
			records++;
			zero += ts32 == 0;
			newer = ts32;
			seg += to_newer;
			suffix += low == RB_EXIT ? 1 : -1;
			min_suffix = suffix < min_suffix ? suffix : min_suffix;
			continue;
		}
		if (p == 0) {
			d->stats.cut++; /* its payload was overwritten by the wrap */
			d->first = 1;
			break;
		}
		p--, i = before(i, nslots);
		uint64_t payload = slots[i];
		d->payload[p >> 6] |= 1ull << (p & 63);
		records++;
		newer = ts32;
		if (low == RB_WIDE) {
			seg += to_newer;
			suffix--;
			min_suffix = suffix < min_suffix ? suffix : min_suffix;
			continue;
		}
		if (low == RB_CALLED) { /* an entry and its exit: the depth as it was */
			seg += to_newer;
			zero += ts32 == 0;
			d->stats.called++;
			d->stats.called_calls += rb_called_calls((uint32_t)(payload >> 32));
			continue;
		}
		uint64_t ts = (payload & 0xffffffff00000000ull) | ts32;
		d->stats.anchors++;
		d->nonlocal += low == RB_LONGJMP;
		d->coroutines |= low == RB_CTX_SET;
		if (!seen_anchor) /* the newest record, walked forward from the newest anchor */
			d->end_ts = ts + (seg + to_newer - tn0);
		/* The walk from this anchor does not land on the newer one: the forward pass must
		 * plan that segment (plan_segment). Rare: a silence of 2^32 ticks or more, or a
		 * torn record. */
		else if (ts + seg + to_newer != anchor && add_plan(d, p) != 0)
			return -ENOMEM;
		seg = 0;
		seen_anchor = true;
		anchor = ts;
		if (special) {
			struct rb_event e = { .ts = ts,
					      .arg = (uint32_t)payload,
					      .kind = (uint8_t)special_kind(low),
					      .raw = (uint8_t)low };
			special(ctx, &e);
		}
	}
	d->stats.records = records;
	if (records && !seen_anchor)
		d->end_ts = ref_ticks - tn0;
	if (records && v->frozen_ticks > d->end_ts)
		d->end_ts = v->frozen_ticks;
	d->open_at_start = (uint64_t)(suffix - min_suffix);
	d->start_ts = anchor - seg;
	*untimed = zero;
	return 0;
}

int rb_decoder_init(struct rb_decoder *d, const struct rb_ring_view *v, uint64_t ref_ticks,
		    rb_special_fn special, void *ctx)
{
	memset(d, 0, sizeof(*d));
	if (!rb_ring_view_ok(v))
		return -EINVAL;
	d->view = *v;
	d->base = v->end + v->nslots - v->valid;
	if (d->base >= v->nslots)
		d->base -= v->nslots;
	d->payload = calloc(v->valid / 64 + 1, sizeof(*d->payload));
	if (v->noff)
		d->held = malloc(HELD_EVENTS * sizeof(*d->held));
	uint64_t untimed;
	if (!d->payload || (v->noff && !d->held) ||
	    parse_back(d, ref_ticks, special, ctx, &untimed) != 0)
		goto nomem;
	/*
	 * Sampled time: a ring with untimed records is decoded from a copy holding their
	 * estimated times (untimed.h), parsed again (the special records were handed out
	 * already: their times are their own). Counting them in the parse costs a fully timed
	 * ring nothing measurable; a separate pre-check (rb_untimed_any, one more read of
	 * 32 MiB) cost bench-summary 4 ms of its 84.
	 */
	if (untimed) {
		struct rb_untimed_stats us;
		int err = rb_untimed_fill(v, ref_ticks, RB_UNTIMED_PATH, &d->filled, &us);
		if (err) {
			rb_decoder_free(d);
			return err;
		}
		d->stats.untimed = us.untimed;
		d->stats.windows = us.windows;
		memcpy(d->stats.few, us.few, sizeof(us.few));
		d->stats.nfew = us.nfew;
		d->stats.measured = us.measured;
		/* wide as its entries are (a 32-bit ring's are) */
		for (unsigned k = 0; k < us.nfew; k++)
			d->stats.few_wide[k] = us.few_wide[k] || v->word_size == 4;
		d->view.slots = d->filled ? d->filled : v->slots;
		if (d->filled && parse_back(d, ref_ticks, NULL, NULL, &untimed) != 0)
			goto nomem;
	}
	d->pos = d->first;
	d->fix_at = UINT64_MAX;
	d->first_pass = true;
	d->plan_left = d->nplan;
	if (d->coroutines && !(d->co = rb_co_new()))
		goto nomem;
	d->nonlocal += d->coroutines;
	if (d->nonlocal && unwound_open_at_start(d) != 0)
		goto nomem;
	return 0;
nomem:
	rb_decoder_free(d);
	return -ENOMEM;
}

void rb_decoder_rewind(struct rb_decoder *d)
{
	d->stage_n = d->stage_i = 0;
	d->depth = d->min_depth = 0;
	d->njb = d->jb_next = 0;
	d->unwind_left = 0;
	if (d->co)
		rb_co_reset(d->co);
	d->pos = d->first;
	d->plan_left = d->nplan;
	d->started = false;
	d->fix_at = UINT64_MAX;
	d->first_pass = false; /* gaps and conflicts are counted once */
	d->held_n = d->held_i = d->off_i = 0;
	d->last_ts = d->off_end = 0;
	d->any = d->tail_done = false;
}

void rb_decoder_free(struct rb_decoder *d)
{
	free(d->filled);
	d->filled = NULL;
	free(d->payload);
	free(d->plan);
	free(d->held);
	free(d->stage);
	rb_co_free(d->co);
	d->co = NULL;
	d->payload = NULL;
	d->plan = NULL;
	d->held = NULL;
	d->stage = NULL;
}

/*
 * From the anchor just emitted (whole, in d->cur) to the next one: walk forward, and when
 * the next anchor shows that whole 2^32 periods went missing (a silence with no trace
 * point), plan to give them to the longest step of the segment (decode.h): the record at
 * forward index d->fix_at gets d->fix_add. Ties go to the step into the anchor, then to the
 * oldest step.
 */
static void plan_segment(struct rb_decoder *d)
{
	uint64_t p = d->pos, cur = d->cur, longest = 0, at = UINT64_MAX;
	struct rb_event e;
	d->fix_at = UINT64_MAX;
	while (p < d->view.valid) {
		uint64_t here = p;
		parse_at(d, &p, &e);
		uint64_t next = step(cur, e.ts);
		if (is_anchor(&e)) {
			if (next == e.ts || e.ts < next)
				return; /* consistent, or time went backwards: leave it alone */
			uint64_t missing = e.ts - next;
			if (missing & 0xffffffffu) {
				d->stats.conflicts += d->first_pass;
				return;
			}
			d->stats.gaps += d->first_pass ? missing >> 32 : 0;
			if (at == UINT64_MAX || next - cur >= longest)
				return; /* the step into the anchor itself: nothing to move */
			d->fix_at = at;
			d->fix_add = missing;
			return;
		}
		if (at == UINT64_MAX || next - cur > longest)
			at = here, longest = next - cur;
		cur = next;
	}
}

/*
 * The time of the exit of a counted call entered at entry_ts, whose record ends before
 * forward index p: its mean later, but never past the next record (nor the ring's end),
 * so that the calls stay in order. Peeked, not walked: a gap repair (plan_segment) on the
 * next step is not seen, and the exit is then cut early, which only shortens an estimate.
 */
static uint64_t called_exit_ts(const struct rb_decoder *d, uint64_t p, uint64_t entry_ts,
			       uint32_t mean)
{
	uint64_t until = d->end_ts;
	if (p < d->view.valid) {
		struct rb_event next;
		parse_at(d, &p, &next);
		until = is_anchor(&next) ? next.ts : step(entry_ts, next.ts);
	}
	uint64_t ts = entry_ts + mean < entry_ts ? UINT64_MAX : entry_ts + mean; /* a file's */
	return ts <= until ? ts : until > entry_ts ? until : entry_ts;
}

/* The record at d->pos, in general: the oldest record (walked from start_ts) and anchors. */
static void read_one(struct rb_decoder *d, struct rb_event *e)
{
	uint64_t here = d->pos;
	parse_at(d, &d->pos, e);
	if (is_anchor(e)) {
		d->cur = e->ts;
		d->started = true;
		d->fix_at = UINT64_MAX;
		if (d->plan_left && d->plan[d->plan_left - 1] == here) {
			d->plan_left--;
			plan_segment(d);
		}
		return;
	}
	if (!d->started)
		d->cur = d->start_ts; /* the oldest record */
	else
		d->cur = step(d->cur, e->ts) + (here == d->fix_at ? d->fix_add : 0);
	d->started = true;
	e->ts = d->cur;
}

/*
 * Entries and exits between two anchors take the inner loop, with the walk's state in
 * locals (stores into buf could otherwise alias the decoder's fields, forcing reloads on
 * every record) and the ring read through a physical index that wraps once; anchors and
 * the oldest record go through read_one.
 */
static size_t read_ring(struct rb_decoder *d, struct rb_event *buf, size_t max)
{
	const uint64_t *slots = d->view.slots, *bits = d->payload;
	const uint64_t nslots = d->view.nslots, valid = d->view.valid;
	const uint8_t narrow_wide = d->view.word_size == 4;
	size_t n = 0;
	while (n < max && d->pos < valid) {
		if (!d->started) {
			uint64_t here = d->pos;
			struct rb_event *e = &buf[n];
			read_one(d, e);
			if (e->raw != RB_CALLED || e->kind != RB_EV_ENTRY) {
				n++;
				continue;
			}
			if (n + 2 > max) { /* no room for its exit: next time */
				d->pos = here;
				d->started = false;
				break;
			}
			buf[n + 1] = (struct rb_event){ .ts = called_exit_ts(d, d->pos, e->ts,
									     rb_called_mean(e->arg)),
							.arg = e->arg,
							.kind = RB_EV_EXIT,
							.raw = RB_CALLED };
			n += 2;
			continue;
		}
		uint64_t p = d->pos, cur = d->cur, fix_at = d->fix_at, fix_add = d->fix_add;
		uint64_t i = d->base + p;
		if (i >= nslots)
			i -= nslots;
		bool at_anchor = false;
		while (n < max && p < valid) {
			uint64_t here = p, payload = 0, j = i;
			if (bits[p >> 6] >> (p & 63) & 1) {
				payload = slots[j];
				p++;
				j = j + 1 == nslots ? 0 : j + 1;
			}
			uint64_t tag = slots[j];
			uint32_t low = rb_tag_low(tag);
			if (anchor_low(low) || (low == RB_CALLED && n + 2 > max)) {
				at_anchor = low != RB_CALLED;
				p = here;
				break;
			}
			p++;
			i = j + 1 == nslots ? 0 : j + 1;
			cur = step(cur, rb_tag_ts32(tag)) + (here == fix_at ? fix_add : 0);
			if (low == RB_CALLED) { /* an entry, and an exit its mean later */
				uint32_t word = (uint32_t)(payload >> 32);
				buf[n++] = (struct rb_event){ .ts = cur,
							      .id = (uint32_t)payload,
							      .arg = word,
							      .kind = RB_EV_ENTRY,
							      .raw = RB_CALLED };
				buf[n++] = (struct rb_event){ .ts = called_exit_ts(d, p, cur,
										   rb_called_mean(word)),
							      .arg = word,
							      .kind = RB_EV_EXIT,
							      .raw = RB_CALLED };
				continue;
			}
			/* Entries and exits alternate with no pattern a predictor could learn: one
			 * record for both, with no branch (an exit's low half is 0, its id): 22 ms
			 * for the bench's 4.0 M records with a branch, 11.5 ms without. */
			struct rb_event *e = &buf[n++];
			if (low == RB_WIDE)
				*e = (struct rb_event){
					.ts = cur, .id = payload, .kind = RB_EV_ENTRY, .wide = 1
				};
			else
				*e = (struct rb_event){ .ts = cur,
							.id = low,
							.kind = low == RB_EXIT ? RB_EV_EXIT
									       : RB_EV_ENTRY,
							.wide = low == RB_EXIT ? 0 : narrow_wide };
		}
		d->pos = p;
		d->cur = cur;
		if (!at_anchor)
			break; /* buf is full, or the ring read */
		if (n < max)
			read_one(d, &buf[n++]); /* an anchor */
	}
	return n;
}

/* The off-CPU interval at d->off_i as an event, cut at `until` (the next record, or the
 * ring's end); false when nothing of it is left to give. */
static bool off_event(struct rb_decoder *d, uint64_t until, struct rb_event *e)
{
	const struct rb_offcpu *o = &d->view.off[d->off_i++];
	/* Before the first record, overlapping the one before (a crafted file), or with the
	 * two clocks' disagreement larger than the interval: nothing to say. */
	if (!d->any || o->start < d->last_ts || o->start < d->off_end)
		return false;
	uint64_t end = o->end < until ? o->end : until;
	if (end <= o->start)
		return false;
	d->off_end = end;
	*e = (struct rb_event){ .ts = end, .id = o->start, .arg = o->cpu, .kind = RB_EV_OFF_CPU,
				.raw = o->why };
	return true;
}

/*
 * The ring's events with the off-CPU intervals between them (rb_ring_view.off): the ring's
 * are read ahead in batches, and before each one go the intervals that began before it.
 */
static size_t read_merged(struct rb_decoder *d, struct rb_event *buf, size_t max)
{
	if (!d->view.noff)
		return read_ring(d, buf, max);
	size_t n = 0;
	while (n < max) {
		if (d->held_i == d->held_n) {
			d->held_i = 0;
			d->held_n = d->tail_done ? 0 : read_ring(d, d->held, HELD_EVENTS);
		}
		if (d->held_i == d->held_n) { /* the ring's end: those before end_ts */
			d->tail_done = true;
			while (n < max && d->off_i < d->view.noff &&
			       d->view.off[d->off_i].start < d->end_ts)
				n += off_event(d, d->end_ts, &buf[n]);
			if (n < max)
				d->off_i = d->view.noff;
			break;
		}
		const struct rb_event *e = &d->held[d->held_i];
		if (d->off_i < d->view.noff && d->view.off[d->off_i].start < e->ts) {
			n += off_event(d, e->ts, &buf[n]);
			continue;
		}
		buf[n++] = *e;
		d->held_i++;
		d->last_ts = e->ts;
		d->any = true;
	}
	return n;
}

/* ---- non-local exits (decode.h) ---- */

/* Where the running coroutine started (coroutines.h), 0 without any. */
static int64_t co_base(const struct rb_decoder *d)
{
	return d->co ? rb_co_base(d->co) : 0;
}

static void jmpbuf_set(struct rb_decoder *d, uint32_t key, int64_t depth)
{
	for (unsigned i = 0; i < d->njb; i++)
		if (d->jb[i].key == key) {
			d->jb[i].depth = depth;
			return;
		}
	/* A new buffer takes a free entry, or the oldest one's. */
	unsigned i = d->njb < RB_DECODE_JMPBUFS ? d->njb++ : d->jb_next++ % RB_DECODE_JMPBUFS;
	d->jb[i] = (struct rb_jmpbuf){ .key = key, .depth = depth };
}

/* The depth a longjmp of this buffer returns to. */
static int64_t jmpbuf_target(const struct rb_decoder *d, uint32_t key)
{
	if (key)
		for (unsigned i = 0; i < d->njb; i++)
			if (d->jb[i].key == key)
				return d->jb[i].depth + co_base(d);
	return d->min_depth; /* its setjmp is older than the ring, or pthread_exit */
}

/* Follow the call depth through one event; a longjmp owes the exits of the frames it
 * left (counted in its id), a coroutine switch those of the context it leaves and the
 * entries of the one it resumes. False: the event is left out (coroutines.h). */
static bool follow_depth(struct rb_decoder *d, struct rb_event *e)
{
	struct rb_decode_stats *st = d->first_pass ? &d->stats : NULL;
	switch (e->kind) {
	case RB_EV_ENTRY:
		d->depth++;
		if (d->co && rb_co_entry(d->co, e))
			d->failed = true;
		break;
	case RB_EV_EXIT:
		if (d->co && !rb_co_exit(d->co, d->depth, st))
			return false;
		if (--d->depth < d->min_depth)
			d->min_depth = d->depth;
		break;
	case RB_EV_SETJMP:
		jmpbuf_set(d, e->arg, d->depth - co_base(d));
		break;
	case RB_EV_LONGJMP: {
		int64_t target = jmpbuf_target(d, e->arg);
		e->id = d->depth > target ? (uint64_t)(d->depth - target) : 0;
		d->unwind_left = e->id;
		d->unwind_ts = e->ts;
		break;
	}
	case RB_EV_CTX_MADE:
	case RB_EV_CTX_SWAP:
	case RB_EV_CTX_SET:
		if (d->co && rb_co_record(d->co, e, &d->depth, st))
			d->failed = true;
		break;
	default:
		break;
	}
	return true;
}

static size_t read_unwound(struct rb_decoder *d, struct rb_event *buf, size_t max)
{
	size_t n = 0;
	while (n < max) {
		if (d->co && rb_co_owed(d->co, &buf[n])) {
			n++;
			continue;
		}
		if (d->unwind_left) {
			buf[n++] = (struct rb_event){ .ts = d->unwind_ts,
						      .kind = RB_EV_EXIT,
						      .raw = RB_LONGJMP };
			d->unwind_left--;
			if (d->co)
				rb_co_pop(d->co);
			if (--d->depth < d->min_depth)
				d->min_depth = d->depth;
			continue;
		}
		if (d->stage_i == d->stage_n) {
			d->stage_i = 0;
			d->stage_n = read_merged(d, d->stage, HELD_EVENTS);
			if (!d->stage_n)
				break;
		}
		struct rb_event *e = &buf[n];
		*e = d->stage[d->stage_i++];
		n += follow_depth(d, e);
	}
	return n;
}

/* With longjmps or coroutines, the calls the ring starts inside are what the forward walk,
 * frames closed by longjmps and switches included, finds below its start: one pass more,
 * for such rings only. */
static int unwound_open_at_start(struct rb_decoder *d)
{
	d->stage = malloc(HELD_EVENTS * sizeof(*d->stage));
	struct rb_event *buf = malloc(HELD_EVENTS * sizeof(*buf));
	if (!d->stage || !buf) {
		free(buf);
		return -ENOMEM;
	}
	size_t n;
	while ((n = read_unwound(d, buf, HELD_EVENTS)) > 0)
		for (size_t i = 0; i < n; i++)
			d->stats.unwound += buf[i].kind == RB_EV_EXIT && buf[i].raw == RB_LONGJMP;
	free(buf);
	if (d->failed)
		return -ENOMEM;
	d->open_at_start = (uint64_t)-d->min_depth;
	rb_decoder_rewind(d);
	return 0;
}

size_t rb_decoder_read(struct rb_decoder *d, struct rb_event *buf, size_t max)
{
	return d->nonlocal ? read_unwound(d, buf, max) : read_merged(d, buf, max);
}

int rb_decode(const struct rb_ring_view *v, uint64_t ref_ticks, struct rb_event **events,
	      size_t *count, struct rb_decode_stats *stats)
{
	struct rb_decoder d;
	*events = NULL;
	*count = 0;
	int err = rb_decoder_init(&d, v, ref_ticks, NULL, NULL);
	if (err)
		return err;
	size_t cap = d.stats.records + d.stats.called + v->noff + d.stats.unwound +
		     d.stats.suspended + d.stats.resumed;
	struct rb_event *ev = malloc((cap ? cap : 1) * sizeof(*ev));
	if (!ev) {
		rb_decoder_free(&d);
		return -ENOMEM;
	}
	*count = rb_decoder_read(&d, ev, cap);
	*events = ev;
	if (stats)
		*stats = d.stats;
	rb_decoder_free(&d);
	return 0;
}
