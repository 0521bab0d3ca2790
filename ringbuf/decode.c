/* SPDX-License-Identifier: MIT */
#include "decode.h"
#include "record.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define TS32(x) ((uint32_t)(x))

const char *rb_ev_kind_name(enum rb_ev_kind kind)
{
	static const char *const names[] = { "entry",    "exit",       "sync", "mark",
					     "wait-begin", "wait-end", "wake", "reserved" };
	return kind <= RB_EV_RESERVED ? names[kind] : "?";
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
	default:
		return RB_EV_RESERVED;
	}
}

static bool is_anchor(const struct rb_event *e)
{
	return e->kind >= RB_EV_SYNC;
}

/* The k-th newest slot. */
static uint64_t slot(const struct rb_ring_view *v, uint64_t k)
{
	return v->slots[(v->end + v->nslots - 1 - k) % v->nslots];
}

/* Pass 1: parse newest to oldest; events get their ts32 in .ts (anchors the whole ts). */
static size_t parse_reverse(const struct rb_ring_view *v, struct rb_event *ev,
			    struct rb_decode_stats *st)
{
	size_t n = 0;
	for (uint64_t k = 0; k < v->valid; k++) {
		uint64_t tag = slot(v, k);
		uint32_t low = rb_tag_low(tag), ts32 = rb_tag_ts32(tag);
		struct rb_event *e = &ev[n];
		memset(e, 0, sizeof(*e));
		e->ts = ts32;
		if (low == RB_EXIT) {
			e->kind = RB_EV_EXIT;
		} else if (low >= RB_FIRST_ID) {
			e->kind = RB_EV_ENTRY;
			e->id = low;
			e->wide = v->word_size == 4;
		} else {
			if (k + 1 >= v->valid) {
				st->cut++; /* its payload was overwritten by the wrap */
				break;
			}
			uint64_t payload = slot(v, ++k);
			if (low == RB_WIDE) {
				e->kind = RB_EV_ENTRY;
				e->id = payload;
				e->wide = 1;
			} else {
				e->kind = (uint8_t)special_kind(low);
				e->raw = (uint8_t)low;
				e->arg = (uint32_t)payload;
				e->ts = (payload & 0xffffffff00000000ull) | ts32;
				st->anchors++;
			}
		}
		n++;
	}
	return n;
}

/* Walk forward from ev[from] (whole) to ev[to] (exclusive), each step < 2^32. */
static void walk_forward(struct rb_event *ev, size_t from, size_t to)
{
	uint64_t cur = ev[from].ts;
	for (size_t i = from + 1; i < to; i++) {
		cur += (uint32_t)(TS32(ev[i].ts) - TS32(cur));
		ev[i].ts = cur;
	}
}

/* Walk backward from ev[from] (whole) down to ev[0]: Hubble Fig. 3. */
static void walk_backward(struct rb_event *ev, size_t from, uint64_t cur)
{
	for (size_t i = from; i-- > 0;) {
		cur -= (uint32_t)(TS32(cur) - TS32(ev[i].ts));
		ev[i].ts = cur;
	}
}

/* Between anchors a and b (both whole): walk forward, then give whole 2^32 periods the
 * newer anchor says are missing to the longest step. */
static void fill_between(struct rb_event *ev, size_t a, size_t b, struct rb_decode_stats *st)
{
	uint64_t want = ev[b].ts;
	walk_forward(ev, a, b);
	uint64_t prev = ev[b - 1].ts;
	uint64_t got = prev + (uint32_t)(TS32(want) - TS32(prev));
	if (got == want || want < got)
		return; /* consistent (or time went backwards: leave the anchor alone) */
	uint64_t missing = want - got;
	if (missing & 0xffffffffu) {
		st->conflicts++;
		return;
	}
	/* the longest step in (a, b] */
	size_t at = b;
	uint64_t longest = got - prev;
	for (size_t i = a + 1; i < b; i++) {
		uint64_t step = ev[i].ts - ev[i - 1].ts;
		if (step > longest) {
			longest = step;
			at = i;
		}
	}
	for (size_t i = at; i < b; i++)
		ev[i].ts += missing;
	st->gaps += missing >> 32;
}

int rb_decode(const struct rb_ring_view *v, uint64_t ref_ticks, struct rb_event **events,
	      size_t *count, struct rb_decode_stats *stats)
{
	struct rb_decode_stats st = { 0 };
	*events = NULL;
	*count = 0;
	if (!v->slots || v->nslots == 0 || v->end >= v->nslots || v->valid > v->nslots ||
	    v->stored > v->nslots || (v->valid > v->end ? v->stored < v->nslots : v->stored < v->end))
		return -EINVAL;
	struct rb_event *ev = malloc((v->valid ? v->valid : 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	size_t n = parse_reverse(v, ev, &st);
	for (size_t i = 0; i < n / 2; i++) {
		struct rb_event t = ev[i];
		ev[i] = ev[n - 1 - i];
		ev[n - 1 - i] = t;
	}

	size_t first = n, last = n;
	for (size_t i = 0; i < n; i++) {
		if (!is_anchor(&ev[i]))
			continue;
		if (first == n)
			first = i;
		else
			fill_between(ev, last, i, &st);
		last = i;
	}
	if (first == n) {
		/* No anchor survived: Hubble's scheme, backwards from the reference. */
		walk_backward(ev, n, ref_ticks);
	} else {
		walk_backward(ev, first, ev[first].ts);
		walk_forward(ev, last, n);
	}
	st.records = n;
	*events = ev;
	*count = n;
	if (stats)
		*stats = st;
	return 0;
}
