/* SPDX-License-Identifier: MIT */
/*
 * Non-local exits in the decoder (ringbuf/decode.h): the frames a longjmp leaves get their
 * exits right after it, down to the depth of the latest setjmp of the same jump buffer, or
 * to the shallowest depth seen when that setjmp is older than the ring.
 */
#include "harness.h"
#include "ringbuf/decode.h"
#include "ringbuf/record.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ring {
	uint64_t slot[64];
	unsigned n;
	uint64_t ts;
};

static void enter(struct ring *r, uint32_t id)
{
	r->ts += 10;
	r->slot[r->n++] = rb_tag(r->ts, id);
}

static void leave(struct ring *r)
{
	r->ts += 10;
	r->slot[r->n++] = rb_tag(r->ts, RB_EXIT);
}

static void special(struct ring *r, uint32_t kind, uint32_t arg)
{
	r->ts += 10;
	r->slot[r->n++] = rb_special_payload(r->ts, arg);
	r->slot[r->n++] = rb_tag(r->ts, kind);
}

/* Decodes the ring; checks that every exit closes a frame and returns the depth left
 * open at the end (the ring's start counts as depth 0, open_at_start below it). */
static int decode(struct ring *r, struct rb_event **ev, size_t *n, struct rb_decode_stats *st,
		  uint64_t *open_at_start)
{
	struct rb_ring_view v = { r->slot, r->n, r->n, 0, r->n, 8, 0, NULL, 0, NULL, 0 };
	struct rb_decoder d;
	CHECK_EQ_INT(rb_decoder_init(&d, &v, r->ts + 10, NULL, NULL), 0);
	*open_at_start = d.open_at_start;
	rb_decoder_free(&d);
	CHECK_EQ_INT(rb_decode(&v, r->ts + 10, ev, n, st), 0);
	int depth = (int)*open_at_start;
	for (size_t i = 0; i < *n; i++) {
		if ((*ev)[i].kind == RB_EV_ENTRY)
			depth++;
		else if ((*ev)[i].kind == RB_EV_EXIT && --depth < 0)
			test_fail(__FILE__, __LINE__, "exit %zu closes no frame", i);
	}
	return depth;
}

TEST(nonlocal_longjmp_closes_the_frames_it_left)
{
	/* a > b > setjmp(buf) > c > d > e > longjmp(buf): c, d and e never return */
	struct ring r = { .ts = 1000 };
	special(&r, RB_SYNC, 0);
	enter(&r, 0x100);
	enter(&r, 0x200);
	special(&r, RB_SETJMP, 0xbeef);
	enter(&r, 0x300);
	enter(&r, 0x400);
	enter(&r, 0x500);
	special(&r, RB_LONGJMP, 0xbeef);
	uint64_t jump_ts = r.ts;
	leave(&r); /* b returns */
	leave(&r); /* a returns */
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	uint64_t open;
	CHECK_EQ_INT(decode(&r, &ev, &n, &st, &open), 0);
	CHECK_EQ_U64(open, 0);
	CHECK_EQ_U64(st.unwound, 3);
	/* sync, 5 entries, setjmp, longjmp, its 3 exits, 2 exits */
	CHECK_EQ_INT(n, 13);
	CHECK_EQ_INT(ev[7].kind, RB_EV_LONGJMP);
	CHECK_EQ_U64(ev[7].id, 3);
	for (int i = 8; i < 11; i++) {
		CHECK_EQ_INT(ev[i].kind, RB_EV_EXIT);
		CHECK_EQ_INT(ev[i].raw, RB_LONGJMP);
		CHECK_EQ_U64(ev[i].ts, jump_ts);
	}
	free(ev);
}

TEST(nonlocal_longjmp_to_a_setjmp_older_than_the_ring)
{
	/* The ring starts inside x (its exit comes first); the setjmp was before the ring:
	 * every frame entered since goes, and x's caller is still open below. */
	struct ring r = { .ts = 1000 };
	special(&r, RB_SYNC, 0);
	leave(&r); /* x returns: the ring began inside it */
	enter(&r, 0x100);
	enter(&r, 0x200);
	special(&r, RB_LONGJMP, 0x1234);
	leave(&r); /* the setjmp's own caller returns */
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	uint64_t open;
	CHECK_EQ_INT(decode(&r, &ev, &n, &st, &open), 0);
	CHECK_EQ_U64(st.unwound, 2);
	CHECK_EQ_U64(open, 2);
	free(ev);
}

TEST(nonlocal_thread_exit_closes_every_frame)
{
	struct ring r = { .ts = 1000 };
	special(&r, RB_SYNC, 0);
	enter(&r, 0x100);
	special(&r, RB_SETJMP, 0x77);
	enter(&r, 0x200);
	enter(&r, 0x300);
	special(&r, RB_LONGJMP, 0); /* pthread_exit */
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	uint64_t open;
	CHECK_EQ_INT(decode(&r, &ev, &n, &st, &open), 0);
	CHECK_EQ_U64(st.unwound, 3);
	free(ev);
}

TEST(nonlocal_latest_setjmp_of_a_buffer_wins)
{
	/* A buffer set again deeper (an interpreter's loop reuses it): the jump returns there. */
	struct ring r = { .ts = 1000 };
	special(&r, RB_SYNC, 0);
	enter(&r, 0x100);
	special(&r, RB_SETJMP, 0x55);
	enter(&r, 0x200);
	special(&r, RB_SETJMP, 0x55);
	enter(&r, 0x300);
	enter(&r, 0x400);
	special(&r, RB_LONGJMP, 0x55);
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	uint64_t open;
	CHECK_EQ_INT(decode(&r, &ev, &n, &st, &open), 2);
	CHECK_EQ_U64(st.unwound, 2);
	free(ev);
}

TEST(nonlocal_longjmp_with_nothing_to_leave_adds_nothing)
{
	/* A longjmp straight back into the function that called setjmp, and a crafted one
	 * whose setjmp is deeper than where the thread is. */
	struct ring r = { .ts = 1000 };
	special(&r, RB_SYNC, 0);
	enter(&r, 0x100);
	special(&r, RB_SETJMP, 0x9);
	special(&r, RB_LONGJMP, 0x9);
	enter(&r, 0x200);
	special(&r, RB_SETJMP, 0xa);
	leave(&r);
	special(&r, RB_LONGJMP, 0xa);
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	uint64_t open;
	CHECK_EQ_INT(decode(&r, &ev, &n, &st, &open), 1);
	CHECK_EQ_U64(st.unwound, 0);
	free(ev);
}

/* The decoded entries and exits as text: "E100" for an entry of 0x100, "X" for an exit,
 * "x" for an exit a coroutine switch gave, "e300" for an entry it gave (a resumed frame). */
static void events_text(const struct rb_event *ev, size_t n, char *out, size_t size)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < n && o + 16 < size; i++) {
		bool sw = ev[i].raw == RB_CTX_SET;
		if (ev[i].kind == RB_EV_ENTRY)
			o += (size_t)snprintf(out + o, size - o, "%s%llx", sw ? " e" : " E",
					      (unsigned long long)ev[i].id);
		else if (ev[i].kind == RB_EV_EXIT)
			o += (size_t)snprintf(out + o, size - o, "%s", sw ? " x" : " X");
	}
}

TEST(nonlocal_coroutine_frames_kept_apart)
{
	/* sched > resume > swapcontext(main, co): the fresh co runs body > deep > deep and
	 * yields (swapcontext(co, main)); resume returns, is called again and resumes co,
	 * whose deep, deep, body return, and body's return goes to uc_link: main again. */
	struct ring r = { .ts = 1000 };
	special(&r, RB_SYNC, 0);
	enter(&r, 0x100);
	special(&r, RB_CTX_MADE, 0x60);
	enter(&r, 0x200);
	special(&r, RB_CTX_SWAP, 0x50);
	special(&r, RB_CTX_SET, 0x60);
	enter(&r, 0x300);
	enter(&r, 0x400);
	enter(&r, 0x400);
	special(&r, RB_CTX_SWAP, 0x60); /* yield */
	special(&r, RB_CTX_SET, 0x50);
	leave(&r); /* resume returns to sched */
	enter(&r, 0x200);
	special(&r, RB_CTX_SWAP, 0x50);
	special(&r, RB_CTX_SET, 0x60);
	leave(&r);
	leave(&r);
	leave(&r); /* body returns: uc_link is main */
	leave(&r); /* resume */
	leave(&r); /* sched */
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	uint64_t open;
	CHECK_EQ_INT(decode(&r, &ev, &n, &st, &open), 0);
	CHECK_EQ_U64(open, 0);
	char text[256];
	events_text(ev, n, text, sizeof(text));
	CHECK_STR(text, " E100 E200 E300 E400 E400 x x x X E200 e300 e400 e400 X X X X X");
	CHECK_EQ_U64(st.suspended, 3);
	CHECK_EQ_U64(st.resumed, 3);
	CHECK_EQ_U64(st.unmatched, 0);
	free(ev);
}

TEST(nonlocal_coroutine_older_than_the_ring_closes_none_of_its_resumer)
{
	/* The ring starts inside main's resume; co's last switch is older than the ring: its
	 * two returns close calls the ring never saw entered, not resume and sched. Then
	 * symmetric coroutines: co switches straight to co2 (fresh), which yields to main. */
	struct ring r = { .ts = 1000 };
	special(&r, RB_SYNC, 0);
	enter(&r, 0x100);
	enter(&r, 0x200);
	special(&r, RB_CTX_SWAP, 0x50);
	special(&r, RB_CTX_SET, 0x60);
	leave(&r);
	leave(&r);
	enter(&r, 0x300);
	special(&r, RB_CTX_MADE, 0x70);
	special(&r, RB_CTX_SWAP, 0x60);
	special(&r, RB_CTX_SET, 0x70);
	enter(&r, 0x500);
	special(&r, RB_CTX_SWAP, 0x70);
	special(&r, RB_CTX_SET, 0x50);
	leave(&r); /* resume */
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	uint64_t open;
	CHECK_EQ_INT(decode(&r, &ev, &n, &st, &open), 1); /* sched runs on */
	CHECK_EQ_U64(open, 0);
	char text[256];
	events_text(ev, n, text, sizeof(text));
	CHECK_STR(text, " E100 E200 E300 E500 x x X");
	CHECK_EQ_U64(st.unmatched, 2);
	CHECK_EQ_U64(st.suspended, 2);
	free(ev);
}

TEST(nonlocal_setcontext_abandons_the_running_context)
{
	/* co (fresh) runs body > deep, then setcontext(main's saved point): its frames end
	 * there and are not resumed again. A second resume of co starts with nothing. */
	struct ring r = { .ts = 1000 };
	special(&r, RB_SYNC, 0);
	enter(&r, 0x100);
	special(&r, RB_CTX_MADE, 0x60);
	special(&r, RB_CTX_SWAP, 0x50);
	special(&r, RB_CTX_SET, 0x60);
	enter(&r, 0x300);
	enter(&r, 0x400);
	special(&r, RB_CTX_SET, 0x50);
	special(&r, RB_CTX_SWAP, 0x50);
	special(&r, RB_CTX_SET, 0x60);
	special(&r, RB_CTX_SWAP, 0x60);
	special(&r, RB_CTX_SET, 0x50);
	leave(&r);
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	uint64_t open;
	CHECK_EQ_INT(decode(&r, &ev, &n, &st, &open), 0);
	char text[256];
	events_text(ev, n, text, sizeof(text));
	CHECK_STR(text, " E100 E300 E400 x x X");
	CHECK_EQ_U64(st.resumed, 0);
	free(ev);
}
