/* SPDX-License-Identifier: MIT */
/* The calling-context tree on synthetic events with exactly known times. */
#include "harness.h"
#include "agent/analysis/cct.h"

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
	CHECK_EQ_U64(b->s[0].truncated, 1);
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
