/* SPDX-License-Identifier: MIT */
/*
 * The decoder against an independent model: random event sequences with known whole
 * timestamps (deep nesting, wide ids, every record kind, timestamps crossing 2^32 many
 * times, gaps longer than 2^32 ticks before an anchor) are encoded into rings of several
 * sizes starting at every slot offset, then decoded; what comes out must be exactly the
 * newest events that fit, with exactly their timestamps (a counted call: its entry, and its
 * exit its mean later but not past the next record).
 */
#include "harness.h"
#include "ringbuf/decode.h"
#include "ringbuf/record.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct model_event {
	uint64_t ts, id;
	uint32_t low; /* the tag's low half: 0 exit, 1 wide, 2..15 special, else the id */
	uint32_t arg; /* a special's argument; a counted call's mean */
};

static uint32_t rng = 2463534242u;
static uint32_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
	return rng;
}

/*
 * n events. Ordinary steps stay below 2^28 ticks (crossing 2^32 boundaries of the counter
 * often); now and then two special records follow each other across a long silence of
 * whole 2^32 periods plus more than any ordinary step, as a wait-begin and its wait-end
 * do around a blocked thread: the case the decoder repairs exactly (decode.h).
 */
static void generate(struct model_event *ev, int n, uint64_t start)
{
	uint64_t ts = start;
	int depth = 0;
	for (int i = 0; i < n; i++) {
		struct model_event *e = &ev[i];
		memset(e, 0, sizeof(*e));
		uint32_t r = next() % 100;
		bool special = r < 8;
		uint64_t step = r % 7 == 0 ? next() >> 4 : next() % 5000;
		bool silence = i > 0 && ev[i - 1].low >= RB_SYNC && ev[i - 1].low < RB_FIRST_ID &&
			       ev[i - 1].low != RB_CALLED && next() % 4 == 0;
		if (silence) {
			special = true;
			step = ((uint64_t)(1 + next() % 5) << 32) + (1u << 29) + next() % (3u << 29);
		}
		ts += step;
		e->ts = ts;
		if (special) {
			/* sync, mark, waits, wake and the reserved; not setjmp, longjmp
			 * and the context switches, which add exits (test_nonlocal) */
			do
				e->low = 2 + next() % 14;
			while ((e->low >= RB_SETJMP && e->low <= RB_CTX_SET) || e->low == RB_CALLED);
			e->arg = next();
		} else if (r < 12) { /* a counted call: no depth */
			e->low = RB_CALLED;
			e->id = RB_FIRST_ID + next() % 0xfffffff0u;
			e->arg = next() % 8000;
		} else if (depth > 0 && next() % 2) {
			e->low = RB_EXIT;
			depth--;
		} else if (next() % 10 == 0) {
			e->low = RB_WIDE;
			e->id = (uint64_t)next() << 32 | next() | 1ull << 63;
			depth++;
		} else {
			e->low = RB_FIRST_ID + next() % 0xfffffff0u;
			e->id = e->low;
			depth++;
		}
	}
}

static int slots_of(const struct model_event *e)
{
	return e->low == RB_EXIT || e->low >= RB_FIRST_ID ? 1 : 2;
}

/* Encode into a ring of nslots, the first record at slot `first`. */
static void encode(const struct model_event *ev, int n, uint64_t *ring, uint64_t nslots,
		   uint64_t first, uint64_t *end, uint64_t *total)
{
	uint64_t at = first, count = 0;
	for (int i = 0; i < n; i++) {
		const struct model_event *e = &ev[i];
		if (slots_of(e) == 2) {
			uint64_t payload = e->low == RB_WIDE	? e->id
					   : e->low == RB_CALLED ? (uint64_t)e->arg << 32 | e->id
								 : rb_special_payload(e->ts, e->arg);
			ring[at++ % nslots] = payload;
			count++;
		}
		ring[at++ % nslots] = rb_tag(e->ts, e->low);
		count++;
	}
	*end = at % nslots;
	*total = count;
}

/* What the decoder gives for model event i of n: one event, or a counted call's two. */
static size_t expected(const struct model_event *ev, int n, int i, struct rb_event out[2])
{
	const struct model_event *e = &ev[i];
	memset(out, 0, 2 * sizeof(*out));
	out[0].ts = e->ts;
	if (e->low == RB_EXIT) {
		out[0].kind = RB_EV_EXIT;
	} else if (e->low == RB_WIDE || e->low >= RB_FIRST_ID) {
		out[0].kind = RB_EV_ENTRY;
		out[0].id = e->id;
		out[0].wide = e->low == RB_WIDE;
	} else if (e->low == RB_CALLED) {
		uint64_t until = i + 1 < n ? ev[i + 1].ts : e->ts; /* the ring's end: the last */
		out[0] = (struct rb_event){ .ts = e->ts, .id = e->id, .arg = e->arg,
					    .kind = RB_EV_ENTRY, .raw = RB_CALLED };
		out[1] = (struct rb_event){ .ts = e->ts + e->arg < until ? e->ts + e->arg : until,
					    .kind = RB_EV_EXIT, .raw = RB_CALLED };
		return 2;
	} else {
		out[0].arg = e->arg;
		out[0].raw = (uint8_t)e->low;
		out[0].kind = UINT8_MAX; /* whichever its raw kind says */
	}
	return 1;
}

static int compare(const struct model_event *ev, int n, uint64_t valid, const struct rb_event *got,
		   size_t ngot)
{
	/* The newest events whose slots all fit in `valid`. */
	uint64_t used = 0;
	int first = n;
	while (first > 0 && used + (uint64_t)slots_of(&ev[first - 1]) <= valid) {
		used += (uint64_t)slots_of(&ev[first - 1]);
		first--;
	}
	size_t want = 0;
	struct rb_event x[2];
	for (int i = first; i < n; i++)
		want += expected(ev, n, i, x);
	if (want != ngot)
		return test_fail(__FILE__, __LINE__, "%zu events decoded, %zu expected", ngot, want);
	for (size_t i = 0, k = 0; k < ngot; i++) {
		size_t m = expected(ev, n, first + (int)i, x);
		for (size_t j = 0; j < m; j++, k++) {
			const struct rb_event *g = &got[k], *e = &x[j];
			bool ok = g->ts == e->ts && g->raw == e->raw;
			if (e->kind == RB_EV_ENTRY)
				ok = ok && g->kind == e->kind && g->id == e->id && g->wide == e->wide;
			else if (e->kind == RB_EV_EXIT)
				ok = ok && g->kind == e->kind;
			else
				ok = ok && g->arg == e->arg;
			if (!ok)
				return test_fail(__FILE__, __LINE__,
						 "event %zu: kind %d ts %llx id %llx raw %x, expected "
						 "kind %d ts %llx id %llx raw %x",
						 k, g->kind, (unsigned long long)g->ts,
						 (unsigned long long)g->id, g->raw, e->kind,
						 (unsigned long long)e->ts, (unsigned long long)e->id,
						 e->raw);
		}
	}
	return 1;
}

static uint64_t gaps_repaired, records_cut;

static void round_trip(int n, uint64_t nslots, uint64_t first, uint64_t start_ts)
{
	struct model_event *ev = malloc((size_t)n * sizeof(*ev));
	uint64_t *ring = calloc(nslots, 8);
	generate(ev, n, start_ts);
	uint64_t end, total;
	encode(ev, n, ring, nslots, first, &end, &total);
	uint64_t valid = total < nslots ? total : nslots;
	struct rb_ring_view v = { ring, nslots, nslots, end, valid, 8, 0, NULL, 0, NULL, 0 };
	struct rb_event *got;
	size_t ngot;
	struct rb_decode_stats st;
	uint64_t ref = ev[n - 1].ts + next() % 1000;
	if (rb_decode(&v, ref, &got, &ngot, &st) == 0) {
		gaps_repaired += st.gaps;
		records_cut += st.cut;
		if (!compare(ev, n, valid, got, ngot))
			printf("    (n %d, ring %llu, first slot %llu)\n", n,
			       (unsigned long long)nslots, (unsigned long long)first);
		/* The streaming decoder's own view of the ends, before any forward walk. */
		struct rb_decoder d;
		if (CHECK(rb_decoder_init(&d, &v, ref, NULL, NULL) == 0) && ngot) {
			CHECK_EQ_U64(d.start_ts, got[0].ts);
			CHECK_EQ_U64(d.end_ts, got[ngot - 1].ts);
			rb_decoder_free(&d);
		}
		free(got);
	} else {
		test_fail(__FILE__, __LINE__, "decode failed");
	}
	free(ring);
	free(ev);
}

TEST(decode_model_round_trip_at_every_slot_offset)
{
	/* Small rings: every start offset, rings that wrap many times and rings that don't. */
	for (uint64_t nslots = 2; nslots <= 64; nslots *= 2)
		for (uint64_t first = 0; first < nslots; first++)
			for (int n = 1; n < 200; n += 37)
				round_trip(n, nslots, first, (uint64_t)next() << 20);
	CHECK(records_cut > 0);
}

TEST(decode_model_round_trip_long_traces)
{
	for (int k = 0; k < 20; k++)
		round_trip(20000 + (int)(next() % 20000), 1u << (10 + k % 6), next() % 1024,
			   (uint64_t)next() << 31);
	printf("    %llu whole 2^32 periods restored, %llu records cut by the wrap\n",
	       (unsigned long long)gaps_repaired, (unsigned long long)records_cut);
	CHECK(gaps_repaired > 0);
}

TEST(decode_without_anchors_uses_the_reference)
{
	/* Hubble's Fig. 3 case: no special record, timestamps recovered from the reference. */
	uint64_t ring[4], ts = 0x00000005fffffff0ull;
	ring[0] = rb_tag(ts, 0x1000);
	ring[1] = rb_tag(ts + 0x20, 0x2000); /* crosses 2^32 */
	ring[2] = rb_tag(ts + 0x30, RB_EXIT);
	ring[3] = rb_tag(ts + 0x40, RB_EXIT);
	struct rb_ring_view v = { ring, 4, 4, 0, 4, 8, 0, NULL, 0, NULL, 0 };
	struct rb_event *ev;
	size_t n;
	CHECK_EQ_INT(rb_decode(&v, ts + 0x50, &ev, &n, NULL), 0);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_U64(ev[0].ts, ts);
	CHECK_EQ_U64(ev[1].ts, ts + 0x20);
	CHECK_EQ_U64(ev[3].ts, ts + 0x40);
	free(ev);
}

TEST(decode_empty_ring_and_a_cut_wide_entry)
{
	uint64_t ring[4] = { 0 };
	struct rb_ring_view v = { ring, 4, 0, 0, 0, 8, 0, NULL, 0, NULL, 0 };
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	CHECK_EQ_INT(rb_decode(&v, 100, &ev, &n, &st), 0);
	CHECK_EQ_INT(n, 0);
	free(ev);
	/* The oldest valid slot is the tag of a wide entry whose id slot was overwritten. */
	ring[0] = rb_tag(10, RB_WIDE);
	ring[1] = rb_tag(11, RB_EXIT);
	struct rb_ring_view w = { ring, 4, 4, 2, 2, 8, 0, NULL, 0, NULL, 0 };
	CHECK_EQ_INT(rb_decode(&w, 100, &ev, &n, &st), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_U64(st.cut, 1);
	CHECK_EQ_INT(ev[0].kind, RB_EV_EXIT);
	free(ev);
	struct rb_ring_view bad = { ring, 4, 4, 4, 2, 8, 0, NULL, 0, NULL, 0 }; /* end outside the ring */
	CHECK(rb_decode(&bad, 100, &ev, &n, &st) != 0);
}
