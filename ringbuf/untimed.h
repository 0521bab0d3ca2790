/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/untimed.h - estimated times for records written without one (docs/untimed.md).
 *
 * Sampled time: on x86_64 the timer read is most of a trace point's cost, so the hot path
 * may write most one-slot records with no timestamp, as [0 << 32 | low], and give a real
 * one to about one record in 32 (the gap to the next timed record, 1..64 records, is taken
 * from the counter's own bits). Wide entries and special records always carry their time.
 * The rule: a one-slot record (low half 0, or 0x10 and above) whose upper half is 0 is
 * UNTIMED. There is no flag: a timed record whose ts32 happens to be 0 (once in 2^32
 * ticks) is taken for untimed and estimated between its timed neighbours, an error no
 * larger than its window, which is harmless.
 *
 * Between two consecutive timed records a and b the time is known exactly,
 * delta = (uint32)(ts32_b - ts32_a) (a "window"); how it splits among the steps ("gaps")
 * between the records in it is not. Each gap belongs to the innermost frame open after its
 * first record (a call stack followed forward: an entry pushes its function, an exit pops;
 * frames older than the ring and an empty stack are one owner, "outer"). Each gap has a
 * type, and each type a mean length fitted to every window at once (untimed.c): each
 * window's delta is then split among its gaps in proportion to their types' means. An equal
 * split instead is biased: in f() { g(); work } repeated, g would get as much time per gap
 * as f. An untimed record's estimate lies between its window's two timed records, so its
 * error is at most the window's length; one before the first or after the last timed record
 * is stepped from it by the fitted means (after the last, never past ref_ticks).
 *
 * The call stack is approximate where the ring holds longjmps (followed to their setjmp's
 * depth when the ring holds it) or coroutine switches (not followed): only which function
 * a gap is charged to in the fit is affected, never the bounds above.
 */
#ifndef JITT_RINGBUF_UNTIMED_H
#define JITT_RINGBUF_UNTIMED_H

#include "decode.h"

#include <stdbool.h>
#include <stdint.h>

/*
 * How a window's delta is split among its gaps. The decoder uses RB_UNTIMED_PATH; the
 * others are baselines for tests (tests/test_untimed.c measures all three).
 *   EQUAL: every gap the same share (biased: the f/g example).
 *   OWNER: one fitted mean per owner function (iterative proportional allocation, the
 *          first design), which averages f's 50 ns before g and its 10 us after.
 *   PATH:  one fitted mean per owner and the two records that bound the gap (the code path
 *          between two trace points): f's gap before it calls g and its gap after g
 *          returns are fitted apart; OWNER left g 150-340% off on the tests' loops.
 */
enum rb_untimed_model { RB_UNTIMED_EQUAL, RB_UNTIMED_OWNER, RB_UNTIMED_PATH };

struct rb_untimed_stats {
	uint64_t untimed; /* one-slot records with no time */
	uint64_t timed;	  /* records with a time: the windows' ends */
	uint64_t windows; /* windows holding untimed records: their times estimated */
	uint64_t outside; /* untimed records before the first or after the last timed one */
	uint64_t unknown; /* untimed records of a ring with no timed record: left at 0 */
	uint64_t types;	  /* functions (and "outer") whose mean gap was fitted */
	unsigned rounds;  /* rounds of the fit */
	/* The functions whose time is an estimate from a few gaps, in windows shared with
	 * others, far longer than a gap's mean (untimed.c, FEW_NOTE): their ids as their
	 * entries give them (few_wide: an absolute address, a wide entry's), most time first. */
	uint64_t few[RB_UNTIMED_FEW_MAX];
	uint8_t few_wide[RB_UNTIMED_FEW_MAX];
	unsigned nfew;
	/* Functions whose measured calls (rb_ring_view.measured) the fit took as evidence */
	unsigned measured;
};

/* Whether any slot of the view's valid range has a zero upper half: the cheap test (one
 * read of the slots) that lets a fully timed ring skip everything else. Payload slots can
 * match too, so true means "look closer". */
bool rb_untimed_any(const struct rb_ring_view *v);

/*
 * When the view holds untimed records, *filled gets a malloc'd copy of its `stored` slots
 * (indexed as v->slots) in which each untimed record's upper half is its estimated ts32;
 * else NULL (nothing to do, or no timed record to estimate from: stats say so). Records
 * are parsed backwards from the end position as rb_decoder_init does. Returns 0, -EINVAL
 * (an inconsistent view) or -ENOMEM.
 */
int rb_untimed_fill(const struct rb_ring_view *v, uint64_t ref_ticks, enum rb_untimed_model model,
		    uint64_t **filled, struct rb_untimed_stats *stats);

#endif
