/* SPDX-License-Identifier: MIT */
/*
 * bench-sleds: what one call costs through a sled (ringbuf/sleds.h), built twice by
 * tests/bench-sleds.sh: with jitt-sleds.pc's flags (every function starts with a sled) and
 * plain. Each run times N calls of a leaf that does almost nothing, in the thread's CPU
 * time, and prints the fastest of REPS repetitions as ns a call: the caller's loop, the
 * call and the leaf, plus whatever the sled costs in the way the runtime left it (NOPs,
 * a thunk for an untraced thread, a traced thunk).
 *
 *   bench-sleds [calls] [limit | limit-counted | counted]
 *
 * "limit" runs the plain build's loop with what a traced call must write at least, inline
 * around the call: an entry and an exit record, untimed but about one in 32 timed
 * (RB_SAMPLED_GAP_MAX), into a ring of the same size: the same-run physical limit of a
 * traced call with sampled time, which the thunk's return interception and shadow stack
 * are measured against. "limit-counted": a counted call's (record.h, RB_CALLED), its two
 * slots before the call, untimed. "counted" (the sleds build, traced): the leaf's calls counted
 * through its counted thunk (rb_sleds_count), as learning leaves a short leaf.
 */
#include "hal/timer.h"
#include "ringbuf/record.h"
#include "ringbuf/trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 7

__attribute__((noinline)) int bench_leaf(int x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

__attribute__((noinline)) long bench_loop(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += bench_leaf((int)i);
	return s;
}

/* The limit: the records a traced call writes, stored inline (volatile: kept without a
 * reader), the timer read where the position is due. */
static volatile uint64_t ring[1 << 16] __attribute__((aligned(64)));
static uint32_t pos, due;

static inline __attribute__((always_inline)) void put(uint32_t low)
{
	uint32_t p = pos;
	if (p == due) {
		uint64_t t = hal_counter_read();
		ring[p] = t << 32 | low;
		due = (p + 1 + (uint32_t)(t >> 6) % RB_SAMPLED_GAP_MAX) & ((1 << 16) - 1);
	} else {
		ring[p] = low;
	}
	pos = (p + 1) & ((1 << 16) - 1);
}

/* A counted call's record: two slots, untimed, but where no traced call has taken the due
 * timed record for RB_COUNTED_LATE slots (the counted thunk: here, every call is counted) */
static int32_t counted_left; /* slots to the next timed one */
static inline __attribute__((always_inline)) void put_called(uint32_t id)
{
	uint32_t p = pos;
	uint64_t tag = RB_CALLED;
	if ((counted_left -= 2) <= 0) {
		uint64_t t = hal_counter_read();
		tag |= t << 32;
		counted_left = (int32_t)(1 + (t >> 6) % RB_SAMPLED_GAP_MAX) + RB_COUNTED_LATE;
	}
	ring[p] = (uint64_t)1 << 32 | id;
	ring[p + 1] = tag;
	pos = (p + 2) & ((1 << 16) - 2);
}

__attribute__((noinline)) long bench_loop_limit_counted(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		put_called((uint32_t)(uintptr_t)bench_leaf);
		s += bench_leaf((int)i);
	}
	return s;
}

/* The sleds build's runtime (weak: the plain build has none). */
extern const uintptr_t *rb_sleds_list(size_t *n) __attribute__((weak));
extern long rb_sleds_count(const size_t *idx, const uint32_t *mean, size_t n)
	__attribute__((weak));

/* bench_leaf's calls counted; false where they cannot be. */
static bool count_leaf(void)
{
	size_t n = 0;
	const uintptr_t *sleds = rb_sleds_list ? rb_sleds_list(&n) : NULL;
	for (size_t i = 0; i < n; i++)
		if (sleds[i] == (uintptr_t)bench_leaf)
			return rb_sleds_count && rb_sleds_count(&i, &(uint32_t){ 1 }, 1) == 1;
	return false;
}

__attribute__((noinline)) long bench_loop_limit(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		put((uint32_t)(uintptr_t)bench_leaf);
		s += bench_leaf((int)i);
		put(RB_EXIT);
	}
	return s;
}

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	const char *how = argc > 2 ? argv[2] : "";
	int limit = !strcmp(how, "limit"), limit_counted = !strcmp(how, "limit-counted");
	if (n <= 0 || (*how && !limit && !limit_counted && strcmp(how, "counted"))) {
		fprintf(stderr, "usage: bench-sleds [calls] [limit | limit-counted | counted]\n");
		return 2;
	}
	if (!strcmp(how, "counted") && !count_leaf()) {
		fprintf(stderr, "bench-sleds: the leaf's calls cannot be counted\n");
		return 1;
	}
	double best = 1e9;
	long sum = 0;
	for (int r = 0; r < REPS; r++) {
		double a = cpu_now();
		sum += limit	       ? bench_loop_limit(n)
		       : limit_counted ? bench_loop_limit_counted(n)
				       : bench_loop(n);
		double b = cpu_now() - a;
		if (b < best)
			best = b;
	}
#ifdef BENCH_SLEDS_RUNTIME /* the sleds build, with the runtime's rb_tls */
	/* Counted calls alone still take a timed record now and then (RB_COUNTED_LATE): one
	 * more pass, its ring's records read back, unless the ring wrapped meanwhile (else a
	 * trace of them has no time to go by) */
	if (!strcmp(how, "counted")) {
		long calls = n < 100000 ? n : 100000, timed = 0;
		uintptr_t from = atomic_load(&rb_tls.pos);
		(void)bench_loop(calls);
		uintptr_t to = atomic_load(&rb_tls.pos);
		for (const uint64_t *q = (const uint64_t *)from; to > from && q < (uint64_t *)to;
		     q++)
			timed += (*q & 0xf) == RB_CALLED && (*q >> 32) != 0;
		if (to > from &&
		    timed * 2 * (RB_SAMPLED_GAP_MAX + RB_COUNTED_LATE) < (long)(to - from) / 8) {
			fprintf(stderr, "bench-sleds: %ld timed among %lu slots of counted calls\n",
				timed, (unsigned long)((to - from) / 8));
			return 1;
		}
	}
#endif
	/* The sum, so that no build can drop the calls; the same in every variant. */
	printf("%.2f ns a call (sum %ld)\n", best * 1e9 / (double)n, sum);
	return 0;
}
