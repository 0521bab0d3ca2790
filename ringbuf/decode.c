/* SPDX-License-Identifier: MIT */
#include "decode.h"
#include "record.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *rb_ev_kind_name(enum rb_ev_kind kind)
{
	static const char *const names[] = { "entry",	   "exit",     "sync", "mark",
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

/* The slot at forward index p: 0 is the oldest valid slot, valid - 1 the newest. */
static uint64_t slot_at(const struct rb_decoder *d, uint64_t p)
{
	uint64_t i = d->base + p;
	return d->view.slots[i >= d->view.nslots ? i - d->view.nslots : i];
}

static bool is_payload(const struct rb_decoder *d, uint64_t p)
{
	return d->payload[p >> 3] >> (p & 7) & 1;
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

int rb_decoder_init(struct rb_decoder *d, const struct rb_ring_view *v, uint64_t ref_ticks,
		    rb_special_fn special, void *ctx)
{
	memset(d, 0, sizeof(*d));
	if (!v->slots || v->nslots == 0 || v->end >= v->nslots || v->valid > v->nslots ||
	    v->stored > v->nslots ||
	    (v->valid > v->end ? v->stored < v->nslots : v->stored < v->end))
		return -EINVAL;
	d->view = *v;
	d->base = v->end + v->nslots - v->valid;
	if (d->base >= v->nslots)
		d->base -= v->nslots;
	d->payload = calloc(v->valid / 8 + 1, 1);
	if (!d->payload)
		return -ENOMEM;

	/*
	 * Newest to oldest (Hubble 5.1.1): find which slots are payloads, hand the special
	 * records to the caller, and keep what the forward walk needs: the oldest record's
	 * time, from the oldest anchor minus the steps down to it (Hubble Fig. 3; with no
	 * anchor, from the reference), and how many calls the ring starts inside: the most
	 * exits over entries of any prefix, which is the total minus the smallest suffix sum.
	 */
	uint64_t newer = ref_ticks, anchor = ref_ticks, back = 0, ahead = 0, seg = 0;
	bool seen_anchor = false;
	int64_t suffix = 0, min_suffix = 0;
	for (uint64_t k = 0; k < v->valid; k++) {
		uint64_t p = v->valid - 1 - k;
		uint32_t low = rb_tag_low(slot_at(d, p));
		if (low > RB_EXIT && low < RB_FIRST_ID) {
			if (p == 0) {
				d->stats.cut++; /* its payload was overwritten by the wrap */
				d->first = 1;
				break;
			}
			p--, k++;
			d->payload[p >> 3] |= (uint8_t)(1u << (p & 7));
		}
		struct rb_event e;
		uint64_t start = p;
		parse_at(d, &p, &e);
		/* The step from this record to the next newer one (for the newest, to the ref). */
		uint64_t to_newer = (uint32_t)((uint32_t)newer - (uint32_t)e.ts);
		if (d->stats.records++ == 0)
			d->end_ts = ref_ticks - to_newer; /* replaced by the newest anchor's walk */
		else if (!seen_anchor)
			ahead += to_newer;
		suffix += e.kind == RB_EV_EXIT ? 1 : e.kind == RB_EV_ENTRY ? -1 : 0;
		if (suffix < min_suffix)
			min_suffix = suffix;
		if (is_anchor(&e)) {
			d->stats.anchors++;
			if (!seen_anchor) /* the newest record, walked forward from the newest
					     anchor */
				d->end_ts = e.ts + ahead;
			/* The walk from this anchor does not land on the newer one: the forward
			 * pass must plan that segment (plan_segment). Rare: a silence of 2^32
			 * ticks or more, or a torn record. */
			else if (e.ts + seg + to_newer != anchor && add_plan(d, start) != 0)
				goto nomem;
			seg = 0;
			seen_anchor = true;
			anchor = e.ts;
			back = 0;
			if (special)
				special(ctx, &e);
		} else {
			back += to_newer;
			seg += to_newer;
		}
		newer = e.ts;
	}
	d->open_at_start = (uint64_t)(suffix - min_suffix);
	d->start_ts = anchor - back;
	d->pos = d->first;
	d->fix_at = UINT64_MAX;
	d->first_pass = true;
	d->plan_left = d->nplan;
	return 0;
nomem:
	rb_decoder_free(d);
	return -ENOMEM;
}

void rb_decoder_rewind(struct rb_decoder *d)
{
	d->pos = d->first;
	d->plan_left = d->nplan;
	d->started = false;
	d->fix_at = UINT64_MAX;
	d->first_pass = false; /* gaps and conflicts are counted once */
}

void rb_decoder_free(struct rb_decoder *d)
{
	free(d->payload);
	free(d->plan);
	d->payload = NULL;
	d->plan = NULL;
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

size_t rb_decoder_read(struct rb_decoder *d, struct rb_event *buf, size_t max)
{
	size_t n = 0;
	while (n < max && d->pos < d->view.valid) {
		uint64_t here = d->pos;
		struct rb_event *e = &buf[n++];
		parse_at(d, &d->pos, e);
		if (is_anchor(e)) {
			d->cur = e->ts;
			d->started = true;
			d->fix_at = UINT64_MAX;
			if (d->plan_left && d->plan[d->plan_left - 1] == here) {
				d->plan_left--;
				plan_segment(d);
			}
			continue;
		}
		if (!d->started)
			d->cur = d->start_ts; /* the oldest record */
		else
			d->cur = step(d->cur, e->ts) + (here == d->fix_at ? d->fix_add : 0);
		d->started = true;
		e->ts = d->cur;
	}
	return n;
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
	struct rb_event *ev = malloc((d.stats.records ? d.stats.records : 1) * sizeof(*ev));
	if (!ev) {
		rb_decoder_free(&d);
		return -ENOMEM;
	}
	*count = rb_decoder_read(&d, ev, d.stats.records);
	*events = ev;
	if (stats)
		*stats = d.stats;
	rb_decoder_free(&d);
	return 0;
}
