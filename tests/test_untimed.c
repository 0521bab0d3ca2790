/* SPDX-License-Identifier: MIT */
/*
 * Sampled time (ringbuf/untimed.h): a timeline whose every time is known is written twice,
 * fully timed (the truth) and with about 31 of 32 one-slot records untimed, as the x86_64
 * hot path writes them (the gap to the next timed record 1..64 records, pseudo-random);
 * both are decoded. The events must be the same, the timed ones at their exact times, every
 * estimate between its timed neighbours, and each dominant function's self time close to
 * the truth: the fitted split, not an equal one (which the f/g case shows wrong).
 */
#include "harness.h"
#include "ringbuf/decode.h"
#include "ringbuf/record.h"
#include "ringbuf/untimed.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rng = 0x2545f491u;
static uint32_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
	return rng;
}

/* The timeline: records with whole times, as the model of test_decode.c. */
struct rec {
	uint64_t ts, id;
	uint32_t low; /* 0 exit, 1 wide, 2..15 special, else the id */
	bool timed;   /* in the sampled ring */
};

struct tl {
	struct rec *r;
	size_t n, cap;
	uint64_t now;
	uint32_t left;	     /* one-slot records until the next timed one */
	uint32_t timed_cost; /* what a timed one-slot record takes, half before its time */
	bool defer;	     /* the next record is not timed: the one after it is instead */
};

static void add(struct tl *t, uint32_t low, uint64_t id)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		t->r = realloc(t->r, t->cap * sizeof(*t->r));
		if (!t->r)
			abort();
	}
	/* A true time whose low half is 0 would read as untimed in the truth too. */
	if ((uint32_t)t->now == 0)
		t->now++;
	bool one_slot = low == RB_EXIT || low >= RB_FIRST_ID;
	if (one_slot && t->defer && t->left == 1)
		t->left = 2;
	bool timed = !one_slot || --t->left == 0;
	if (one_slot && timed) {
		t->left = 1 + next() % RB_SAMPLED_GAP_MAX;
		t->now += t->timed_cost / 2;
	}
	t->r[t->n++] = (struct rec){ t->now, id, low, timed };
	if (one_slot && timed)
		t->now += t->timed_cost - t->timed_cost / 2;
}

static void enter(struct tl *t, uint64_t id)
{
	add(t, id > UINT32_MAX ? RB_WIDE : (uint32_t)id, id);
}

static void leave(struct tl *t)
{
	add(t, RB_EXIT, 0);
}

/* A duration of about `base` ticks, within 20%: real calls vary. */
static void spend(struct tl *t, uint64_t base)
{
	t->now += base - base / 5 + next() % (2 * base / 5 + 1);
}

enum {
	MAIN = 0x401000,
	F = 0x401040,
	G = 0x401080,
	H = 0x4010c0,
	L = 0x401100,
	P = 0x401140,
	Q = 0x401180,
	R = 0x4011c0,
	S = 0x401200
};
#define WIDE 0x7f0012345600ull /* a function of a shared library: a wide entry, timed */

/*
 * f() { g(); 10 us of work } repeated (1 tick = 1 ns); short calls around one of 5 ms;
 * and a loop of 8 records per turn, a period that divides 16. A frame mark now and then.
 * Starts just below a 2^32 boundary, so the low halves wrap.
 */
static void timeline(struct tl *t, int scale)
{
	memset(t, 0, sizeof(*t));
	t->now = 0x2fff00000ull;
	t->left = 1 + next() % RB_SAMPLED_GAP_MAX;
	add(t, RB_SYNC, 0);
	enter(t, MAIN);
	spend(t, 100);
	for (int i = 0; i < 150 * scale; i++) {
		if (i % 50 == 0)
			add(t, RB_MARK, 0);
		enter(t, F);
		spend(t, 50);
		enter(t, G);
		spend(t, 500);
		leave(t);
		spend(t, 10000);
		leave(t);
		spend(t, 200);
	}
	for (int i = 0; i < 60 * scale; i++) {
		enter(t, H);
		spend(t, 100);
		leave(t);
		spend(t, 100);
		if (i == 30 * scale) {
			enter(t, L);
			spend(t, 5000000);
			leave(t);
			spend(t, 100);
		}
	}
	for (int i = 0; i < 100 * scale; i++) {
		if (i % 40 == 0) {
			enter(t, WIDE);
			spend(t, 700);
			leave(t);
		}
		enter(t, P);
		spend(t, 80);
		enter(t, Q);
		spend(t, 300);
		leave(t);
		spend(t, 40);
		enter(t, R);
		spend(t, 3000);
		leave(t);
		spend(t, 40);
		enter(t, S);
		spend(t, 60);
		leave(t);
		spend(t, 100);
		leave(t);
		spend(t, 150);
	}
	add(t, RB_MARK, 1);
}

static int nslots_of(const struct rec *r)
{
	return r->low == RB_EXIT || r->low >= RB_FIRST_ID ? 1 : 2;
}

/* The timeline into a ring of nslots from slot 0 (wrapping), timed or as sampled. */
static void encode(const struct tl *t, bool sampled, uint64_t *ring, uint64_t nslots,
		   struct rb_ring_view *v)
{
	uint64_t at = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct rec *r = &t->r[i];
		if (nslots_of(r) == 2)
			ring[at++ % nslots] =
				r->low == RB_WIDE ? r->id : rb_special_payload(r->ts, 0);
		ring[at++ % nslots] = rb_tag(sampled && !r->timed ? 0 : r->ts, r->low);
	}
	*v = (struct rb_ring_view){ .slots = ring,
				    .nslots = nslots,
				    .stored = at < nslots ? at : nslots,
				    .end = at % nslots,
				    .valid = at < nslots ? at : nslots,
				    .word_size = 8 };
}

/* Self time per function: inclusive minus the children's inclusive, over its calls. */
struct self {
	uint64_t id[16], self[16], incl[16];
	int n;
};

static int slot_of(struct self *s, uint64_t id)
{
	for (int i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return i;
	if (s->n == 16)
		return 15;
	s->id[s->n] = id;
	return s->n++;
}

static void self_times(const struct rb_event *ev, size_t n, struct self *s)
{
	struct {
		int f;
		uint64_t t0, kids;
	} st[64];
	int depth = 0;
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == RB_EV_ENTRY && depth < 64) {
			st[depth].f = slot_of(s, ev[i].id);
			st[depth].t0 = ev[i].ts;
			st[depth++].kids = 0;
		} else if (ev[i].kind == RB_EV_EXIT && depth > 0) {
			depth--;
			uint64_t incl = ev[i].ts - st[depth].t0;
			s->self[st[depth].f] += incl - st[depth].kids;
			s->incl[st[depth].f] += incl;
			if (depth)
				st[depth - 1].kids += incl;
		}
	}
}

static uint64_t self_of(const struct self *s, uint64_t id)
{
	for (int i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return s->self[i];
	return 0;
}

static uint64_t incl_of(const struct self *s, uint64_t id)
{
	for (int i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return s->incl[i];
	return 0;
}

static double rel_err(uint64_t got, uint64_t truth)
{
	return truth ? fabs((double)got - (double)truth) / (double)truth : (double)(got != 0);
}

/* Decodes the sampled ring, by the decoder (model < 0: it fills the copy itself) or from a
 * copy the test fills with the given model. */
static int decode_sampled(const struct rb_ring_view *v, uint64_t ref, int model,
			  struct rb_event **ev, size_t *n, struct rb_decode_stats *st)
{
	if (model < 0)
		return rb_decode(v, ref, ev, n, st);
	uint64_t *copy;
	struct rb_untimed_stats us;
	int err = rb_untimed_fill(v, ref, (enum rb_untimed_model)model, &copy, &us);
	if (err || !copy)
		return err ? err : -EINVAL;
	struct rb_ring_view w = *v;
	w.slots = copy;
	err = rb_decode(&w, ref, ev, n, st);
	free(copy);
	return err;
}

/*
 * The same events as the truth, the timed ones at their times, the others between their
 * timed neighbours and never decreasing; returns the truth's index of the oldest event.
 */
static size_t check_events(const struct tl *t, const struct rb_event *truth, size_t nt,
			   const struct rb_event *got, size_t ng)
{
	CHECK_EQ_U64(ng, nt);
	size_t first = t->n - nt, bad = 0; /* the ring holds the newest records */
	for (size_t i = 0; i < nt && i < ng; i++) {
		const struct rec *r = &t->r[first + i];
		bool same = got[i].kind == truth[i].kind && got[i].id == truth[i].id &&
			    got[i].raw == truth[i].raw && got[i].wide == truth[i].wide;
		if (r->timed)
			same = same && got[i].ts == truth[i].ts;
		if (i && got[i].ts < got[i - 1].ts)
			same = false;
		if (!r->timed) { /* between its timed neighbours (or the ring's ends) */
			size_t a = i, b = i;
			while (a > 0 && !t->r[first + a].timed)
				a--;
			while (b + 1 < nt && !t->r[first + b].timed)
				b++;
			if (t->r[first + a].timed && got[i].ts < truth[a].ts)
				same = false;
			if (t->r[first + b].timed && got[i].ts > truth[b].ts)
				same = false;
		}
		if (!same && bad++ < 5)
			test_fail(__FILE__, __LINE__,
				  "event %zu: kind %d id %llx ts %llu, truth %d %llx %llu", i,
				  got[i].kind, (unsigned long long)got[i].id,
				  (unsigned long long)got[i].ts, truth[i].kind,
				  (unsigned long long)truth[i].id, (unsigned long long)truth[i].ts);
	}
	return first;
}

static const struct {
	uint64_t id;
	const char *name;
} dominant[] = { { F, "f" }, { G, "g" }, { L, "long" }, { R, "r" },
		 { Q, "q" }, { P, "p" }, { S, "s" },	{ H, "h" } };
#define NDOMINANT (sizeof(dominant) / sizeof(dominant[0]))

/* A timeline's truth and its sampled ring decoded three ways: by the decoder (the path
 * fit), with the owners' fit, and with the equal split. */
struct run {
	struct tl t;
	struct rb_event *ev[4]; /* truth, decoder, owner, equal */
	size_t n[4];
	struct rb_decode_stats st;
	struct self self[4];
	size_t untimed;
};

static void run_free(struct run *r)
{
	for (int i = 0; i < 4; i++)
		free(r->ev[i]);
	free(r->t.r);
}

static void run(struct run *r, void (*make)(struct tl *, int), uint32_t seed, int scale,
		uint64_t nslots_max)
{
	memset(r, 0, sizeof(*r));
	rng = seed;
	make(&r->t, scale);
	size_t slots = 0;
	for (size_t i = 0; i < r->t.n; i++)
		slots += (size_t)nslots_of(&r->t.r[i]);
	uint64_t nslots = 1;
	while (nslots < slots && nslots < nslots_max)
		nslots *= 2;
	uint64_t *truth_ring = calloc(nslots, 8), *ring = calloc(nslots, 8);
	struct rb_ring_view tv, sv;
	encode(&r->t, false, truth_ring, nslots, &tv);
	encode(&r->t, true, ring, nslots, &sv);
	uint64_t ref = r->t.now + 1000;
	struct rb_decode_stats tst;
	CHECK_EQ_INT(rb_decode(&tv, ref, &r->ev[0], &r->n[0], &tst), 0);
	CHECK_EQ_U64(tst.untimed, 0);
	CHECK_EQ_INT(rb_decode(&sv, ref, &r->ev[1], &r->n[1], &r->st), 0);
	CHECK_EQ_INT(decode_sampled(&sv, ref, RB_UNTIMED_OWNER, &r->ev[2], &r->n[2], NULL), 0);
	CHECK_EQ_INT(decode_sampled(&sv, ref, RB_UNTIMED_EQUAL, &r->ev[3], &r->n[3], NULL), 0);
	size_t first = r->t.n - r->n[0];
	for (size_t i = first; i < r->t.n; i++)
		r->untimed += !r->t.r[i].timed;
	for (int i = 0; i < 4; i++) {
		if (i)
			check_events(&r->t, r->ev[0], r->n[0], r->ev[i], r->n[i]);
		self_times(r->ev[i], r->n[i], &r->self[i]);
	}
	free(truth_ring);
	free(ring);
}

static uint64_t total_self(const struct self *s)
{
	uint64_t total = 0;
	for (int i = 0; i < s->n; i++)
		total += s->self[i];
	return total;
}

/* The long call: each end's estimate lies in its window, so its inclusive time is off by at
 * most the two windows' lengths. */
static void check_long_call(const struct run *r)
{
	const struct rb_event *truth = r->ev[0];
	size_t nt = r->n[0], first = r->t.n - nt;
	uint64_t bound = 0;
	for (size_t i = 0; i + 1 < nt; i++) {
		if (truth[i].kind != RB_EV_ENTRY || truth[i].id != L)
			continue;
		for (size_t e = i; e <= i + 1; e++) { /* L calls nothing: its exit follows */
			size_t a = e, b = e;
			while (a > 0 && !r->t.r[first + a].timed)
				a--;
			while (b + 1 < nt && !r->t.r[first + b].timed)
				b++;
			bound += truth[b].ts - truth[a].ts;
		}
	}
	uint64_t li = incl_of(&r->self[1], L), lt = incl_of(&r->self[0], L);
	printf("    the long call: %llu ticks, estimated %llu, bound %llu\n",
	       (unsigned long long)lt, (unsigned long long)li, (unsigned long long)bound);
	CHECK(lt > 0 && (li > lt ? li - lt : lt - li) <= bound);
}

/*
 * Self time of the functions of the timeline: the fit within 10% of the truth, or within
 * 0.5% of the thread's time for those of little time (g, h: what is left of a window's
 * jitter once it is split); f, the long call and r within 4% (3% before the windows' fixed
 * part was fitted: this timeline has none, and the one unknown more moved r by 1.6% on one
 * seed). The equal split is far off on the f/g loop (it gives g several times its time),
 * and the owners' fit (one mean for f's gap before it calls g and its 10 us after) is
 * further off on g than the fit: 17% to 189% against 9% to 13% with the hot path's gaps
 * of 1..64 records (more than 50% with 1..32).
 */
TEST(untimed_fit_recovers_self_times_and_equal_split_does_not)
{
	static const uint32_t seeds[] = { 0x2545f491u, 0x9e3779b9u, 0x1234567u };
	for (size_t k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		struct run r;
		run(&r, timeline, seeds[k], 10, UINT64_MAX);
		CHECK_EQ_U64(r.st.untimed, r.untimed);
		CHECK(r.st.windows > 0);
		printf("    seed %x: %zu records, %zu untimed (%.0f%%) in %llu windows\n", seeds[k],
		       r.n[0], r.untimed, 100.0 * (double)r.untimed / (double)r.n[0],
		       (unsigned long long)r.st.windows);
		printf("    %-5s %11s %11s %6s %11s %6s %11s %6s\n", "self", "truth", "fit", "err",
		       "owners", "err", "equal", "err");
		uint64_t total = total_self(&r.self[0]);
		for (size_t i = 0; i < NDOMINANT; i++) {
			uint64_t id = dominant[i].id, tr = self_of(&r.self[0], id), v[4];
			for (int m = 1; m < 4; m++)
				v[m] = self_of(&r.self[m], id);
			printf("    %-5s %11llu %11llu %5.1f%% %11llu %5.1f%% %11llu %5.1f%%\n",
			       dominant[i].name, (unsigned long long)tr, (unsigned long long)v[1],
			       100 * rel_err(v[1], tr), (unsigned long long)v[2],
			       100 * rel_err(v[2], tr), (unsigned long long)v[3],
			       100 * rel_err(v[3], tr));
			double off = fabs((double)v[1] - (double)tr);
			if (!CHECK(off <= 0.10 * (double)tr || off <= 0.005 * (double)total))
				printf("    %s off by %.0f\n", dominant[i].name, off);
			if ((id == F || id == L || id == R) && !CHECK(off <= 0.04 * (double)tr))
				printf("    %s off by %.0f\n", dominant[i].name, off);
		}
		uint64_t g = self_of(&r.self[0], G), f = self_of(&r.self[0], F);
		CHECK(rel_err(self_of(&r.self[3], G), g) > 1.0);
		CHECK(rel_err(self_of(&r.self[3], F), f) > 0.2);
		CHECK(rel_err(self_of(&r.self[2], G), g) > rel_err(self_of(&r.self[1], G), g));
		check_long_call(&r);
		/* The long call's few gaps are the fit's guess (untimed.c, FEW_NOTE); f's and
		 * g's, seen in every window, are not */
		bool named_l = false, named_fg = false;
		for (unsigned i = 0; i < r.st.nfew; i++) {
			named_l |= r.st.few[i] == L && !r.st.few_wide[i];
			named_fg |= r.st.few[i] == F || r.st.few[i] == G;
		}
		CHECK(named_l && !named_fg);
		run_free(&r);
	}
}

/* A ring smaller than the timeline: it wrapped (end < valid), its oldest records are
 * untimed ones before any timed record, stepped back from the first by the fitted means. */
TEST(untimed_ring_that_wrapped_decodes_the_same_events)
{
	struct run r;
	run(&r, timeline, 0x5eed1234u, 4, 4096);
	CHECK_EQ_U64(r.n[0], r.n[1]);
	CHECK(r.n[0] < r.t.n && r.st.untimed > 0);
	size_t first = r.t.n - r.n[0], head = 0;
	while (head < r.n[0] && !r.t.r[first + head].timed)
		head++;
	printf("    %zu of %zu records in the ring, %zu untimed before the first timed one\n",
	       r.n[0], r.t.n, head);
	/* Those before the first timed record: not after it, and not absurdly far before (each
	 * step is a fitted mean of its type, at most the longest window). */
	for (size_t i = 0; i < head; i++)
		CHECK(r.ev[1][i].ts <= r.ev[1][head].ts &&
		      r.ev[1][head].ts - r.ev[1][i].ts < 100000000);
	run_free(&r);
}

static int decode_n(const uint64_t *ring, uint64_t nslots, uint64_t end, uint64_t valid,
		    uint64_t ref, struct rb_event **ev, size_t *n, struct rb_decode_stats *st)
{
	struct rb_ring_view v = { ring, nslots, nslots, end, valid, 8, 0, NULL, 0, NULL, 0 };
	return rb_decode(&v, ref, ev, n, st);
}

TEST(untimed_rings_without_a_timed_record_keep_one_time)
{
	uint64_t ring[8];
	for (int i = 0; i < 8; i++)
		ring[i] = rb_tag(0, i % 2 ? RB_EXIT : 0x1000u + (uint32_t)i);
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	CHECK_EQ_INT(decode_n(ring, 8, 0, 8, 0x500000123ull, &ev, &n, &st), 0);
	CHECK_EQ_INT(n, 8);
	CHECK_EQ_U64(st.untimed, 8);
	CHECK_EQ_U64(st.windows, 0);
	for (size_t i = 1; i < n; i++)
		CHECK_EQ_U64(ev[i].ts, ev[0].ts);
	free(ev);
	uint64_t *copy = (uint64_t *)1;
	struct rb_untimed_stats us;
	struct rb_ring_view v = { ring, 8, 8, 0, 8, 8, 0, NULL, 0, NULL, 0 };
	CHECK_EQ_INT(rb_untimed_fill(&v, 0, RB_UNTIMED_PATH, &copy, &us), 0);
	CHECK(copy == NULL);
	CHECK_EQ_U64(us.unknown, 8);
	/* One record, untimed; one record, timed; none. */
	CHECK_EQ_INT(decode_n(ring, 8, 1, 1, 77, &ev, &n, &st), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_U64(st.untimed, 1);
	free(ev);
	ring[0] = rb_tag(50, 0x1000);
	CHECK_EQ_INT(decode_n(ring, 8, 1, 1, 77, &ev, &n, &st), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_U64(st.untimed, 0);
	CHECK_EQ_U64(ev[0].ts, 50);
	free(ev);
	CHECK_EQ_INT(decode_n(ring, 8, 1, 0, 77, &ev, &n, &st), 0);
	CHECK_EQ_INT(n, 0);
	free(ev);
	CHECK(!rb_untimed_any(&(struct rb_ring_view){ ring, 8, 8, 1, 0, 8, 0, NULL, 0, NULL, 0 }));
}

TEST(untimed_records_before_the_first_timed_one_step_back_from_it)
{
	/* f entered, g entered and left three times, all untimed; then f's exit timed at
	 * 10000, then g timed at 10100, an untimed exit, and a timed exit at 10400. */
	uint64_t ring[12];
	int n0 = 0;
	ring[n0++] = rb_tag(0, 0x1000);
	for (int i = 0; i < 3; i++) {
		ring[n0++] = rb_tag(0, 0x2000);
		ring[n0++] = rb_tag(0, RB_EXIT);
	}
	ring[n0++] = rb_tag(10000, RB_EXIT);
	ring[n0++] = rb_tag(10100, 0x2000);
	ring[n0++] = rb_tag(0, RB_EXIT);
	ring[n0++] = rb_tag(10400, RB_EXIT);
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	CHECK_EQ_INT(decode_n(ring, 12, (uint64_t)n0, (uint64_t)n0, 20000, &ev, &n, &st), 0);
	CHECK_EQ_INT(n, (size_t)n0);
	CHECK_EQ_U64(st.untimed, 8);
	CHECK_EQ_U64(st.windows, 1);
	for (size_t i = 1; i < n; i++)
		CHECK(ev[i].ts >= ev[i - 1].ts);
	CHECK_EQ_U64(ev[7].ts, 10000);
	CHECK_EQ_U64(ev[8].ts, 10100);
	CHECK_EQ_U64(ev[10].ts, 10400);
	CHECK(ev[9].ts >= 10100 && ev[9].ts <= 10400);
	CHECK(ev[0].ts < 10000); /* stepped back: the window's means are 300 and 0 */
	free(ev);
}

/*
 * Counted calls (record.h, RB_CALLED), untimed, between two timed records: their measured
 * means are known time, so each is given its mean whole, and only the rest of the window
 * is split among the gaps. f is entered at 1000; ten counted calls of g (mean 150) and
 * ten of h (mean 50) alternate in it, each after an untimed entry and exit of k; f leaves
 * at 5000. Of the window's 4000 ticks, 2000 are the counted calls'.
 */
TEST(untimed_counted_calls_get_their_mean_and_the_fit_the_rest)
{
	uint64_t ring[128];
	int n0 = 0;
	ring[n0++] = rb_tag(1000, 0x1000);
	for (int i = 0; i < 20; i++) {
		ring[n0++] = rb_tag(0, 0x4000);
		ring[n0++] = rb_tag(0, RB_EXIT);
		ring[n0++] = (uint64_t)(i % 2 ? 50 : 150) << 32 | (i % 2 ? 0x3000 : 0x2000);
		ring[n0++] = rb_tag(0, RB_CALLED);
	}
	ring[n0++] = rb_tag(5000, RB_EXIT);
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	CHECK_EQ_INT(decode_n(ring, 128, (uint64_t)n0, (uint64_t)n0, 6000, &ev, &n, &st), 0);
	CHECK_EQ_U64(st.called, 20);
	CHECK_EQ_U64(st.untimed, 60);
	CHECK_EQ_INT(n, 2 + 20 * 4);
	uint64_t in_g = 0, in_h = 0;
	for (size_t i = 1; i < n; i++) {
		CHECK(ev[i].ts >= ev[i - 1].ts);
		if (ev[i].kind == RB_EV_EXIT && ev[i].raw == RB_CALLED) {
			CHECK(ev[i - 1].kind == RB_EV_ENTRY && ev[i - 1].raw == RB_CALLED);
			uint64_t len = ev[i].ts - ev[i - 1].ts;
			*(ev[i - 1].id == 0x2000 ? &in_g : &in_h) += len;
		}
	}
	CHECK_EQ_U64(in_g, 10 * 150);
	CHECK_EQ_U64(in_h, 10 * 50);
	CHECK_EQ_U64(ev[n - 1].ts, 5000);
	free(ev);
}

/* Garbage: random slots, half of them with a zero upper half, in rings of every small size
 * at random ends and lengths, and timed rings (nothing to do, no copy). */
TEST(untimed_garbage_rings_decode_or_fail_cleanly)
{
	uint64_t ring[64];
	size_t decoded = 0, untimed = 0;
	for (int k = 0; k < 5000; k++) {
		uint64_t nslots = 1 + next() % 64;
		for (uint64_t i = 0; i < nslots; i++) {
			uint64_t v = (uint64_t)next() << 32 | next();
			uint32_t r = next() % 8;
			if (r < 4)
				v &= 0xffffffffull; /* untimed, or a payload of that shape */
			if (r == 4)
				v = v >> 32 << 32 | next() % 0x20; /* exits, wide and specials */
			ring[i] = v;
		}
		uint64_t end = next() % nslots, valid = next() % (nslots + 1);
		struct rb_event *ev;
		size_t n;
		struct rb_decode_stats st;
		int err = decode_n(ring, nslots, end, valid, (uint64_t)next() << 16, &ev, &n, &st);
		CHECK(err == 0);
		if (err)
			continue;
		decoded++;
		untimed += st.untimed;
		CHECK(n <= st.records + st.called + st.unwound + st.suspended + st.resumed);
		free(ev);
		uint64_t *copy;
		struct rb_untimed_stats us;
		struct rb_ring_view v = { ring, nslots, nslots, end, valid, 8, 0, NULL, 0, NULL, 0 };
		CHECK_EQ_INT(rb_untimed_fill(&v, 0, (enum rb_untimed_model)(k % 3), &copy, &us), 0);
		CHECK(us.untimed <= valid && (copy == NULL || us.untimed > 0));
		free(copy);
	}
	printf("    %zu garbage rings decoded, %zu untimed records among them\n", decoded, untimed);
	CHECK(untimed > 0);
	/* An inconsistent view is refused. */
	struct rb_ring_view bad = { ring, 4, 4, 4, 2, 8, 0, NULL, 0, NULL, 0 };
	uint64_t *copy;
	struct rb_untimed_stats us;
	CHECK_EQ_INT(rb_untimed_fill(&bad, 0, RB_UNTIMED_PATH, &copy, &us), -EINVAL);
	/* A fully timed ring: nothing to do. */
	for (int i = 0; i < 8; i++)
		ring[i] = rb_tag(100 + (uint64_t)i, i % 2 ? RB_EXIT : 0x1000u);
	struct rb_ring_view timed = { ring, 8, 8, 0, 8, 8, 0, NULL, 0, NULL, 0 };
	CHECK(!rb_untimed_any(&timed));
	CHECK_EQ_INT(rb_untimed_fill(&timed, 0, RB_UNTIMED_PATH, &copy, &us), 0);
	CHECK(copy == NULL && us.untimed == 0);
}

/*
 * An interpreter's loop as a learnt trace holds it (docs/trace-points.md, "A window's fixed
 * part"): the loop, outside every traced call, calls one short helper S (4 ns) between 30 ns
 * of its own work, and a timed record costs 40 ns (the timer read and the call around it),
 * where an untimed one costs nothing more. Every window then holds about 40 ns besides its
 * gaps, and the windows of one gap, S's or the loop's, are mostly that: fitted as gaps, they
 * gave S several times its time. The fit takes the fixed part as an unknown of its own.
 */
/* A loop's timeline begins: a sync record and main entered, a timed record costing 40. */
static void loop_begin(struct tl *t)
{
	memset(t, 0, sizeof(*t));
	t->now = 0x100000ull;
	t->timed_cost = 40;
	t->left = 1 + next() % RB_SAMPLED_GAP_MAX;
	add(t, RB_SYNC, 0);
	enter(t, MAIN);
}

static void helper_loop(struct tl *t, int scale)
{
	loop_begin(t);
	for (int i = 0; i < 4000 * scale; i++) {
		enter(t, S);
		spend(t, 4);
		leave(t);
		spend(t, 30);
	}
	leave(t);
}

TEST(untimed_fit_takes_out_what_each_window_holds_besides_its_gaps)
{
	static const uint32_t seeds[] = { 0x2545f491u, 0x9e3779b9u, 0x1234567u };
	for (size_t k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		struct run r;
		run(&r, helper_loop, seeds[k], 10, UINT64_MAX);
		uint64_t total = total_self(&r.self[0]), s = self_of(&r.self[0], S);
		uint64_t fit = self_of(&r.self[1], S);
		printf("    seed %x: S's self %llu of %llu ticks (%.1f%%), fitted %llu (%.1f%%)\n",
		       seeds[k], (unsigned long long)s, (unsigned long long)total,
		       100.0 * (double)s / (double)total, (unsigned long long)fit,
		       100.0 * (double)fit / (double)total);
		/* Its share within a few points of the truth (12%), not 30% or more. */
		CHECK(fabs((double)fit - (double)s) <= 0.03 * (double)total);
		run_free(&r);
	}
}

/*
 * An interpreter's loop, as the fit cannot see it: main's code, a call of f (50 ticks)
 * whose exit is never a window's end, main's code again, a call of g. f's gap and main's
 * after it then always lie in one window together, and only their sum (250) is known: the
 * fit splits it as it started (on duktape's fib, `duk__handle_return` took 1.46 us a call
 * and the bytecode loop nothing). With f's call as sleds' windows measured it (the view's
 * measured section), f gets its 50 and main the rest.
 */
static void interp_loop(struct tl *t, int scale)
{
	loop_begin(t);
	for (int i = 0; i < 3000 * scale; i++) {
		spend(t, 300);
		enter(t, F);
		spend(t, 50);
		t->defer = true;
		leave(t);
		t->defer = false;
		spend(t, 200);
		enter(t, G);
		spend(t, 100);
		leave(t);
	}
	leave(t);
}

TEST(untimed_measured_calls_split_what_the_windows_cannot)
{
	static const uint32_t seeds[] = { 0x2545f491u, 0x9e3779b9u, 0x1234567u };
	for (size_t k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		rng = seeds[k];
		struct tl t;
		interp_loop(&t, 4);
		size_t slots = 0;
		for (size_t i = 0; i < t.n; i++)
			slots += (size_t)nslots_of(&t.r[i]);
		uint64_t *truth_ring = calloc(slots, 8), *ring = calloc(slots, 8);
		struct rb_ring_view tv, sv;
		encode(&t, false, truth_ring, slots, &tv);
		encode(&t, true, ring, slots, &sv);
		struct rb_event *ev[3] = { NULL, NULL, NULL };
		size_t n[3] = { 0, 0, 0 };
		struct rb_decode_stats st[3];
		CHECK_EQ_INT(rb_decode(&tv, t.now + 1000, &ev[0], &n[0], &st[0]), 0);
		CHECK_EQ_INT(rb_decode(&sv, t.now + 1000, &ev[1], &n[1], &st[1]), 0);
		/* f measured, and an id no record has (left alone) */
		const struct rb_measured m[2] = { { F, 50 }, { 0x7777770, 5 } };
		sv.measured = m;
		sv.nmeasured = 2;
		CHECK_EQ_INT(rb_decode(&sv, t.now + 1000, &ev[2], &n[2], &st[2]), 0);
		CHECK_EQ_INT(st[1].measured, 0);
		CHECK_EQ_INT(st[2].measured, 1);
		struct self self[3];
		for (int i = 0; i < 3; i++) {
			if (i)
				check_events(&t, ev[0], n[0], ev[i], n[i]);
			self_times(ev[i], n[i], &self[i]);
		}
		uint64_t f0 = self_of(&self[0], F), m0 = self_of(&self[0], MAIN);
		printf("    seed %x: f's self %llu ticks, fitted %llu, with its measured call %llu; "
		       "main's %llu, %llu, %llu\n",
		       seeds[k], (unsigned long long)f0, (unsigned long long)self_of(&self[1], F),
		       (unsigned long long)self_of(&self[2], F), (unsigned long long)m0,
		       (unsigned long long)self_of(&self[1], MAIN),
		       (unsigned long long)self_of(&self[2], MAIN));
		CHECK(rel_err(self_of(&self[2], F), f0) < 0.10);
		CHECK(rel_err(self_of(&self[2], MAIN), m0) < 0.02);
		CHECK(rel_err(self_of(&self[2], G), self_of(&self[0], G)) < 0.10);
		for (int i = 0; i < 3; i++)
			free(ev[i]);
		free(truth_ring);
		free(ring);
		free(t.r);
	}
}
