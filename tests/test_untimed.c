/* SPDX-License-Identifier: MIT */
/*
 * Sampled time (ringbuf/untimed.h): a timeline whose every time is known is written twice,
 * fully timed (the truth) and with about 15 of 16 one-slot records untimed, as the x86_64
 * hot path writes them (the gap to the next timed record 1..32 records, pseudo-random);
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
	uint32_t left; /* one-slot records until the next timed one */
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
	bool timed = !one_slot || --t->left == 0;
	if (one_slot && timed)
		t->left = 1 + next() % 32;
	t->r[t->n++] = (struct rec){ t->now, id, low, timed };
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

enum { MAIN = 0x401000, F = 0x401040, G = 0x401080, H = 0x4010c0, L = 0x401100, P = 0x401140,
       Q = 0x401180, R = 0x4011c0, S = 0x401200 };
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
	t->left = 1 + next() % 32;
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
			ring[at++ % nslots] = r->low == RB_WIDE ? r->id : rb_special_payload(r->ts, 0);
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

/* Decodes the sampled ring, from the decoder (rounds: RB_UNTIMED_ROUNDS) or from a copy the
 * test fills with `rounds` rounds (0: the equal split). */
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
			test_fail(__FILE__, __LINE__, "event %zu: kind %d id %llx ts %llu, truth %d %llx %llu",
				  i, got[i].kind, (unsigned long long)got[i].id,
				  (unsigned long long)got[i].ts, truth[i].kind,
				  (unsigned long long)truth[i].id, (unsigned long long)truth[i].ts);
	}
	return first;
}

static const struct {
	uint64_t id;
	const char *name;
} dominant[] = { { F, "f" }, { G, "g" }, { L, "long" }, { R, "r" }, { Q, "q" },
		 { MAIN, "main" }, { P, "p" }, { H, "h" } };

TEST(untimed_fit_recovers_self_times_and_equal_split_does_not)
{
	struct tl t;
	timeline(&t, 10);
	size_t slots = 0, untimed = 0;
	for (size_t i = 0; i < t.n; i++) {
		slots += (size_t)nslots_of(&t.r[i]);
		untimed += !t.r[i].timed;
	}
	uint64_t nslots = 1;
	while (nslots < slots)
		nslots *= 2;
	uint64_t *truth_ring = calloc(nslots, 8), *ring = calloc(nslots, 8);
	struct rb_ring_view tv, sv;
	encode(&t, false, truth_ring, nslots, &tv);
	encode(&t, true, ring, nslots, &sv);
	uint64_t ref = t.now + 1000;
	struct rb_event *truth, *got, *eq;
	size_t nt, ng, ne;
	struct rb_decode_stats tst, st, est;
	CHECK_EQ_INT(rb_decode(&tv, ref, &truth, &nt, &tst), 0);
	CHECK_EQ_INT(decode_sampled(&sv, ref, -1, &got, &ng, &st), 0);
	CHECK_EQ_INT(decode_sampled(&sv, ref, RB_UNTIMED_EQUAL, &eq, &ne, &est), 0);
	CHECK_EQ_U64(tst.untimed, 0);
	CHECK_EQ_U64(st.untimed, untimed);
	CHECK(st.windows > 0);
	printf("    %zu records, %zu untimed (%.0f%%) in %llu windows\n", t.n, untimed,
	       100.0 * (double)untimed / (double)t.n, (unsigned long long)st.windows);
	check_events(&t, truth, nt, got, ng);
	check_events(&t, truth, nt, eq, ne);

	struct self ts, gs, es;
	self_times(truth, nt, &ts);
	self_times(got, ng, &gs);
	self_times(eq, ne, &es);
	printf("    %-6s %14s %14s %7s %14s %7s\n", "self", "truth", "fitted", "err", "equal split",
	       "err");
	for (size_t i = 0; i < sizeof(dominant) / sizeof(dominant[0]); i++) {
		uint64_t id = dominant[i].id, tr = self_of(&ts, id);
		printf("    %-6s %14llu %14llu %6.1f%% %14llu %6.1f%%\n", dominant[i].name,
		       (unsigned long long)tr, (unsigned long long)self_of(&gs, id),
		       100 * rel_err(self_of(&gs, id), tr), (unsigned long long)self_of(&es, id),
		       100 * rel_err(self_of(&es, id), tr));
	}
	/* The fit: within 10% for every function of at least 1% of the time, 3% for the big
	 * ones (f, the long call, r). */
	uint64_t total = 0;
	for (int i = 0; i < ts.n; i++)
		total += ts.self[i];
	for (size_t i = 0; i < sizeof(dominant) / sizeof(dominant[0]); i++) {
		uint64_t id = dominant[i].id, tr = self_of(&ts, id);
		double err = rel_err(self_of(&gs, id), tr);
		if (tr * 100 >= total && !CHECK(err <= 0.10))
			printf("    %s: %.1f%% off\n", dominant[i].name, 100 * err);
		if ((id == F || id == L || id == R) && !CHECK(err <= 0.03))
			printf("    %s: %.1f%% off\n", dominant[i].name, 100 * err);
	}
	/* The equal split gives g about as much per gap as f: several times its truth. */
	CHECK(rel_err(self_of(&es, G), self_of(&ts, G)) > 1.0);
	CHECK(rel_err(self_of(&es, F), self_of(&ts, F)) > 0.3);

	/* The long call: each end's estimate lies in its window, so its inclusive time is off
	 * by at most the two windows' lengths. */
	size_t first = t.n - nt, at[2] = { 0, 0 }, k = 0;
	for (size_t i = 0; i < nt && k < 2; i++)
		if (truth[i].kind == RB_EV_ENTRY && truth[i].id == L)
			at[k++] = i, at[k++] = i + 1; /* L calls nothing: its exit follows */
	uint64_t bound = 0;
	for (int e = 0; e < 2; e++) {
		size_t a = at[e], b = at[e];
		while (a > 0 && !t.r[first + a].timed)
			a--;
		while (b + 1 < nt && !t.r[first + b].timed)
			b++;
		bound += truth[b].ts - truth[a].ts;
	}
	uint64_t li = incl_of(&gs, L), lt = incl_of(&ts, L);
	printf("    the long call: %llu ticks, estimated %llu, bound %llu\n",
	       (unsigned long long)lt, (unsigned long long)li, (unsigned long long)bound);
	CHECK((li > lt ? li - lt : lt - li) <= bound);
	free(truth);
	free(got);
	free(eq);
	free(truth_ring);
	free(ring);
	free(t.r);
}
