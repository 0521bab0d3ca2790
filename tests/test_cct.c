/* SPDX-License-Identifier: MIT */
/* The calling-context tree on synthetic events with exactly known times. */
#include "harness.h"
#include "agent/analysis/cct.h"
#include "ringbuf/record.h"

#include <stdlib.h>
#include <string.h>

#define E(t, f)                                           \
	{                                                 \
		.ts = (t), .id = (f), .kind = RB_EV_ENTRY \
	}
#define X(t)                                  \
	{                                     \
		.ts = (t), .kind = RB_EV_EXIT \
	}
#define W(t, k)                        \
	{                              \
		.ts = (t), .kind = (k) \
	}

static const struct cct_node *find(const struct cct *c, uint32_t parent, uint64_t func)
{
	for (uint32_t i = c->node[parent].first_child; i != CCT_NONE; i = c->node[i].next_sibling)
		if (c->node[i].func == func)
			return &c->node[i];
	return NULL;
}

TEST(cct_self_inclusive_blocked_to_the_tick)
{
	/* main [0,100): a [10,30) calls b [15,25); blocked [40,60); c [70,90). */
	struct rb_event ev[] = {
		E(0, 0x100),
		E(10, 0xa0),
		E(15, 0xb0),
		X(25),
		X(30),
		W(40, RB_EV_WAIT_BEGIN),
		W(60, RB_EV_WAIT_END),
		E(70, 0xc0),
		X(90),
		X(100),
	};
	struct cct c;
	CHECK_EQ_INT(cct_build(&c, ev, sizeof(ev) / sizeof(ev[0]), NULL, NULL), 0);
	const struct cct_node *m = find(&c, 0, 0x100);
	if (!CHECK(m != NULL))
		return;
	uint32_t mi = (uint32_t)(m - c.node);
	const struct cct_node *a = find(&c, mi, 0xa0), *cc = find(&c, mi, 0xc0);
	if (!CHECK(a && cc))
		return;
	const struct cct_node *b = find(&c, (uint32_t)(a - c.node), 0xb0);
	if (!CHECK(b != NULL))
		return;
	CHECK_EQ_U64(m->s[0].incl, 100);
	CHECK_EQ_U64(m->s[0].blocked, 20);
	CHECK_EQ_U64(m->s[0].self, 100 - 20 - 20 - 20);
	CHECK_EQ_U64(a->s[0].incl, 20);
	CHECK_EQ_U64(a->s[0].self, 10);
	CHECK_EQ_U64(b->s[0].self, 10);
	CHECK_EQ_U64(cc->s[0].self, 20);
	CHECK_EQ_U64(m->s[0].truncated + a->s[0].truncated + b->s[0].truncated, 0);

	struct cct_func *f;
	size_t n;
	CHECK_EQ_INT(cct_functions(&c, CCT_WHOLE, &f, &n), 0);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_U64(f[0].func, 0x100); /* 40 */
	CHECK_EQ_U64(f[1].func, 0xc0);	/* 20 */
	CHECK_EQ_U64(f[0].self, 40);
	free(f);
	cct_free(&c);
}

TEST(cct_waits_with_a_lost_record_end_where_the_exports_end_them)
{
	/* The ring starts inside a wait of the unknown call u: its wait-end at 50 has no
	 * begin, so the wait's known part is since the previous event (a's exit at 40), not
	 * since u's start (10): the thread ran a in between. Then main waits twice with the
	 * first wait's end lost: the first ends where the second begins. */
	struct rb_event ev[] = {
		X(10), /* u, entered before the ring, is open from here (c's exit comes later) */
		E(20, 0xa0),
		X(40),
		W(50, RB_EV_WAIT_END),
		X(60), /* u returns */
		E(70, 0x100),
		W(75, RB_EV_WAIT_BEGIN),
		W(80, RB_EV_WAIT_BEGIN),
		W(95, RB_EV_WAIT_END),
		X(100),
	};
	struct cct c;
	CHECK_EQ_INT(cct_build(&c, ev, sizeof(ev) / sizeof(ev[0]), NULL, NULL), 0);
	const struct cct_node *u = find(&c, 0, CCT_UNKNOWN), *m = find(&c, 0, 0x100);
	if (!CHECK(u && m))
		return;
	CHECK_EQ_U64(u->s[0].incl, 50);	   /* 10 to 60 */
	CHECK_EQ_U64(u->s[0].blocked, 10); /* 40 to 50; it was 40 (10 to 50), over a's time */
	CHECK_EQ_U64(u->s[0].self, 50 - 20 - 10);
	CHECK_EQ_U64(m->s[0].blocked, 20); /* 75 to 80 and 80 to 95; it was 15 */
	CHECK_EQ_U64(m->s[0].self, 30 - 20);
	cct_free(&c);
}

TEST(cct_wrapped_start_and_frozen_end_are_flagged)
{
	/* The ring starts inside two calls (two exits with no entry) and ends inside one. */
	struct rb_event ev[] = { X(5), E(6, 0xa0), X(8), X(20), E(30, 0xb0), E(32, 0xc0) };
	struct cct c;
	CHECK_EQ_INT(cct_build(&c, ev, sizeof(ev) / sizeof(ev[0]), NULL, NULL), 0);
	const struct cct_node *u1 = find(&c, 0, CCT_UNKNOWN);
	if (!CHECK(u1 != NULL))
		return;
	const struct cct_node *u2 = find(&c, (uint32_t)(u1 - c.node), CCT_UNKNOWN);
	if (!CHECK(u2 != NULL))
		return;
	CHECK_EQ_U64(u2->s[0].incl, 0);	 /* known part: from the first event, its own exit */
	CHECK_EQ_U64(u1->s[0].incl, 15); /* 5 to 20, containing u2 (0) and a (2): self 13 */
	CHECK_EQ_U64(u1->s[0].self, 13);
	CHECK_EQ_U64(u1->s[0].truncated, 1);
	const struct cct_node *b = find(&c, 0, 0xb0);
	if (!CHECK(b != NULL))
		return;
	CHECK_EQ_U64(b->s[0].incl, 2); /* open at the end: 30 to the last event, 32 */
	/* Still running at the freeze is not cut by the ring: its entry is there. */
	CHECK_EQ_U64(b->s[0].truncated, 0);
	CHECK_EQ_U64(b->s[0].running, 1);
	CHECK_EQ_U64(u1->s[0].running, 0);
	cct_free(&c);
}

#define OFF(from, to, why)                                                    \
	{                                                                     \
		.ts = (to), .id = (from), .kind = RB_EV_OFF_CPU, .raw = (why) \
	}

/* The tree's ways of seeing a wait, and the root's own time off the CPU. */
static void build_waits(struct cct *c, bool switches)
{
	/* a [0,100): waits [10,90), asleep off its CPU [40,60) and preempted [70,75) inside
	 * it; then, outside every call, preempted [120,150) and asleep [160,170). */
	struct rb_event ev[] = {
		E(0, 0xa0),
		W(10, RB_EV_WAIT_BEGIN),
		OFF(40, 60, RB_OFF_SLEEPING),
		OFF(70, 75, RB_OFF_PREEMPTED),
		W(90, RB_EV_WAIT_END),
		X(100),
		OFF(120, 150, RB_OFF_PREEMPTED),
		OFF(160, 170, RB_OFF_SLEEPING),
		E(200, 0xb0),
		X(210),
	};
	struct cct_opts o = { .switches = switches };
	CHECK_EQ_INT(cct_init(c, &o, 0), 0);
	CHECK_EQ_INT(cct_add_n(c, ev, sizeof(ev) / sizeof(ev[0])), 0);
	CHECK_EQ_INT(cct_finish(c, 0), 0);
}

TEST(cct_with_switch_records_a_wait_is_blocked_only_while_asleep)
{
	struct cct c;
	build_waits(&c, true);
	const struct cct_node *a = find(&c, 0, 0xa0);
	if (CHECK(a != NULL)) {
		CHECK_EQ_U64(a->s[0].blocked, 20);
		CHECK_EQ_U64(a->s[0].preempted, 5);
		CHECK_EQ_U64(a->s[0].self, 100 - 20 - 5); /* the rest of the wait it ran */
	}
	uint64_t blocked, preempted;
	cct_lane_offcpu(&c, CCT_WHOLE, &blocked, &preempted);
	CHECK_EQ_U64(blocked, 20 + 10); /* the root's own counts too */
	CHECK_EQ_U64(preempted, 5 + 30);
	cct_free(&c);

	/* Without them the wait is blocked whole, and what it holds is not counted twice. */
	build_waits(&c, false);
	a = find(&c, 0, 0xa0);
	if (CHECK(a != NULL)) {
		CHECK_EQ_U64(a->s[0].blocked, 80);
		CHECK_EQ_U64(a->s[0].preempted, 0);
		CHECK_EQ_U64(a->s[0].self, 20);
	}
	cct_lane_offcpu(&c, CCT_WHOLE, &blocked, &preempted);
	CHECK_EQ_U64(blocked, 80 + 10);
	CHECK_EQ_U64(preempted, 30);
	cct_free(&c);
}

static void count_wait(void *ctx, const struct cct_wait *w)
{
	struct cct_wait *seen = ctx;
	size_t i = 0;
	while (seen[i].end)
		i++;
	if (i < 7)
		seen[i] = *w;
}

TEST(cct_tells_each_wait_as_it_counts_it)
{
	/* a waits [10,20); its next wait's end is lost: it ends at the next begin (30), and
	 * that one at a's return (50); outside every call a wait whose begin is lost ends at
	 * 70 (since the previous event, 50); the last one is open at the freeze. */
	struct rb_event ev[] = {
		E(0, 0xa0),
		{ .ts = 10, .kind = RB_EV_WAIT_BEGIN, .arg = 1 },
		{ .ts = 20, .kind = RB_EV_WAIT_END, .arg = 1 },
		{ .ts = 25, .kind = RB_EV_WAIT_BEGIN, .arg = 2 },
		{ .ts = 30, .kind = RB_EV_WAIT_BEGIN, .arg = 3 },
		X(50),
		{ .ts = 70, .kind = RB_EV_WAIT_END, .arg = 4 },
		{ .ts = 80, .kind = RB_EV_WAIT_BEGIN, .arg = 5 },
	};
	struct cct_wait seen[8];
	memset(seen, 0, sizeof(seen));
	struct cct_opts o = { .on_wait = count_wait, .wait_ctx = seen };
	struct cct c;
	CHECK_EQ_INT(cct_init(&c, &o, 0), 0);
	CHECK_EQ_INT(cct_add_n(&c, ev, sizeof(ev) / sizeof(ev[0])), 0);
	CHECK_EQ_INT(cct_finish(&c, 100), 0);
	static const struct {
		uint64_t begin, end;
		uint32_t key;
		bool root, open;
	} want[] = { { 10, 20, 1, false, false },
		     { 25, 30, 2, false, false },
		     { 30, 50, 3, false, false },
		     { 50, 70, 4, true, false },
		     { 80, 100, 5, true, true } };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_EQ_U64(seen[i].begin, want[i].begin);
		CHECK_EQ_U64(seen[i].end, want[i].end);
		CHECK_EQ_U64(seen[i].key, want[i].key);
		CHECK_EQ_INT(seen[i].node == 0, want[i].root);
		CHECK_EQ_INT(seen[i].open, want[i].open);
	}
	CHECK_EQ_U64(seen[5].end, 0);
	cct_free(&c);
}

TEST(cct_recursion_10000_deep_and_empty)
{
	enum { D = 10000 };
	struct rb_event *ev = malloc(2 * D * sizeof(*ev));
	for (int i = 0; i < D; i++) {
		ev[i] = (struct rb_event)E((uint64_t)i, 0x42);
		ev[2 * D - 1 - i] = (struct rb_event)X((uint64_t)(3 * D - i));
	}
	struct cct c;
	CHECK_EQ_INT(cct_build(&c, ev, 2 * D, NULL, NULL), 0);
	CHECK_EQ_INT(c.n, D + 1); /* one node per depth: the path differs */
	struct cct_func *f;
	size_t n;
	CHECK_EQ_INT(cct_functions(&c, CCT_WHOLE, &f, &n), 0);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_U64(f[0].calls, D);
	CHECK_EQ_U64(f[0].self, 3 * D); /* every tick is some instance's own: 0 to 3D */
	free(f);
	cct_free(&c);
	free(ev);
	CHECK_EQ_INT(cct_build(&c, NULL, 0, NULL, NULL), 0);
	CHECK_EQ_INT(c.n, 1);
	cct_free(&c);
}

/* The call a ring stopped at the exit of is still on the stack (cct_last_exit); not when
 * the runtime wrote a record for the running frame after that exit (a wrapped wait's). */
TEST(cct_last_exit_is_the_stop_only_when_nothing_follows_it)
{
	struct rb_event ev[] = {
		E(0, 0x100), E(10, 0xa0), X(20), W(30, RB_EV_WAIT_BEGIN), W(40, RB_EV_WAIT_END),
	};
	struct cct_opts o = { 0 };
	for (size_t n = 3; n <= 5; n += 2) {
		struct cct c;
		CHECK_EQ_INT(cct_init(&c, &o, 0), 0);
		CHECK_EQ_INT(cct_add_n(&c, ev, n), 0);
		uint64_t open[4];
		size_t nopen = cct_open_calls(&c, open, 4);
		if (n == 3) { /* stopped at a's exit: a, then main */
			CHECK_EQ_U64(nopen, 2);
			CHECK_EQ_U64(open[0], 0xa0);
		} else { /* the wait's records after it: main alone */
			CHECK_EQ_U64(nopen, 1);
			CHECK_EQ_U64(open[0], 0x100);
		}
		cct_free(&c);
	}
}

/* c built from ev[0..n), and its main > p > h nodes (0x100 > 0x200 > 0x300) into m, p and
 * h: false, failed, where one is missing. */
static bool build_mph(struct cct *c, const struct rb_event *ev, size_t n,
		      const struct cct_node **m, const struct cct_node **p,
		      const struct cct_node **h)
{
	if (!CHECK(cct_build(c, ev, n, NULL, NULL) == 0))
		return false;
	*m = find(c, 0, 0x100);
	*p = *m ? find(c, (uint32_t)(*m - c->node), 0x200) : NULL;
	*h = *p ? find(c, (uint32_t)(*p - c->node), 0x300) : NULL;
	return CHECK(*h != NULL);
}

/*
 * A counted call's record stands for more calls than the one placed (record.h, RB_CALLED):
 * the counted function gets them all and their time, and the frame they ran in gives that
 * time up, from its later instances where one is too short. main [0,1000) calls p twice:
 * p [100,200) holds h's record for 4 calls of 10 ticks, p [300,700) none.
 */
TEST(cct_counted_record_stands_for_its_calls)
{
	uint32_t word = rb_called_word(10, 4);
	struct rb_event ev[] = {
		E(0, 0x100),
		E(100, 0x200),
		{ .ts = 150, .id = 0x300, .arg = word, .kind = RB_EV_ENTRY, .raw = RB_CALLED },
		{ .ts = 160, .arg = word, .kind = RB_EV_EXIT, .raw = RB_CALLED },
		X(200),
		E(300, 0x200),
		X(700),
		X(1000),
	};
	struct cct c;
	const struct cct_node *m, *p, *h;
	if (!build_mph(&c, ev, sizeof(ev) / sizeof(ev[0]), &m, &p, &h))
		return;
	/* h: one record (the trace points' cost goes by it), 4 calls, 40 ticks */
	CHECK_EQ_U64(h->s[0].calls, 1);
	CHECK_EQ_U64(h->s[0].more, 3);
	CHECK_EQ_U64(h->s[0].self, 40);
	CHECK_EQ_U64(h->s[0].incl, 40);
	/* p: 100 + 400 ticks, less h's placed 10 and the 30 of its other calls */
	CHECK_EQ_U64(p->s[0].calls, 2);
	CHECK_EQ_U64(p->s[0].self, 500 - 10 - 30);
	CHECK_EQ_U64(p->s[0].owed, 0);
	/* main's own time is untouched */
	CHECK_EQ_U64(m->s[0].self, 1000 - 500);
	/* The owed time taken from a later instance: p [100,120) holds h's record for 8
	 * calls of 10, more than its own 20 ticks; the next p pays the rest. */
	word = rb_called_word(10, 8);
	struct rb_event ev2[] = {
		E(0, 0x100),
		E(100, 0x200),
		{ .ts = 105, .id = 0x300, .arg = word, .kind = RB_EV_ENTRY, .raw = RB_CALLED },
		{ .ts = 115, .arg = word, .kind = RB_EV_EXIT, .raw = RB_CALLED },
		X(120),
		E(300, 0x200),
		X(700),
		X(1000),
	};
	cct_free(&c);
	if (!build_mph(&c, ev2, sizeof(ev2) / sizeof(ev2[0]), &m, &p, &h))
		return;
	CHECK_EQ_U64(h->s[0].self, 80);
	CHECK_EQ_U64(p->s[0].self, 20 + 400 - 10 - 70);
	CHECK_EQ_U64(p->s[0].owed, 0);
	/* A mean too long for the moment: p [100,120) and no later p to pay. h is given back
	 * only what p had (its placed 10, and 10 of its 70 more): the selfs add up to the
	 * time, nothing counted twice. */
	struct rb_event ev3[] = {
		E(0, 0x100),
		E(100, 0x200),
		{ .ts = 105, .id = 0x300, .arg = word, .kind = RB_EV_ENTRY, .raw = RB_CALLED },
		{ .ts = 115, .arg = word, .kind = RB_EV_EXIT, .raw = RB_CALLED },
		X(120),
		X(1000),
	};
	cct_free(&c);
	if (!build_mph(&c, ev3, sizeof(ev3) / sizeof(ev3[0]), &m, &p, &h))
		return;
	CHECK_EQ_U64(p->s[0].self, 0);
	CHECK_EQ_U64(p->s[0].owed, 0);
	CHECK_EQ_U64(h->s[0].self, 20);
	CHECK_EQ_U64(m->s[0].self + p->s[0].self + h->s[0].self, 1000);
	cct_free(&c);
}
