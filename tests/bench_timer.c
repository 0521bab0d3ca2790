/* SPDX-License-Identifier: MIT */
/*
 * bench-timer: what one read of the trace clock costs, against the raw counter read (the
 * physical limit of a trace point's timestamp) and clock_gettime (what a portable tracer
 * pays). Each figure is the median of several runs, measured side by side in one process.
 */
#include "hal/timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READS 2000000
#define RUNS  11

static volatile uint64_t sink;

static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The loops are unrolled by 4 so the loop itself stays small next to the reads. */
#define LOOP(expr)                                   \
	do {                                         \
		uint64_t acc = 0;                    \
		for (int i = 0; i < READS; i += 4) { \
			acc += (expr);               \
			acc += (expr);               \
			acc += (expr);               \
			acc += (expr);               \
		}                                    \
		sink = acc;                          \
	} while (0)

/* One timed loop per way of reading the clock. */
#define TIMED_LOOP(name, expr)           \
	static uint64_t name(void)       \
	{                                \
		uint64_t t0 = wall_ns(); \
		LOOP(expr);              \
		return wall_ns() - t0;   \
	}

TIMED_LOOP(counter_loop, hal_counter_read())
TIMED_LOOP(timer_loop, hal_timer_now())
TIMED_LOOP(ordered_loop, hal_timer_now_ordered())
TIMED_LOOP(clock_loop, hal_clock_now())

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	hal_timer_init();
	const struct hal_timer_info *info = hal_timer_info();
	const bool counter = info->source != HAL_TIMER_SRC_CLOCK;
	static const char *const names[] = { "raw counter read", "hal_timer_now()",
					     "hal_timer_now_ordered()", "clock_gettime()" };
	uint64_t (*const loops[])(void) = { counter_loop, timer_loop, ordered_loop, clock_loop };
	uint64_t runs[4][RUNS];

	/* Interleaved, so a noisy neighbour hurts every variant alike. */
	for (int r = 0; r < RUNS; r++)
		for (int v = 0; v < 4; v++)
			runs[v][r] = (v == 0 && !counter) ? 0 : loops[v]();

	printf("timer source: %s, %llu Hz\n", hal_timer_source_name(info->source),
	       (unsigned long long)info->freq_hz);
	double limit = 0;
	for (int v = 0; v < 4; v++) {
		if (v == 0 && !counter) {
			printf("  %-26s n/a (no usable counter)\n", names[v]);
			continue;
		}
		qsort(runs[v], RUNS, sizeof(runs[v][0]), cmp_u64);
		double ns = (double)runs[v][RUNS / 2] / READS;
		if (v == 0 || (limit == 0 && v == 1))
			limit = ns;
		printf("  %-26s %6.2f ns per read (median of %d x %d), %.2fx the raw read\n",
		       names[v], ns, RUNS, READS, ns / limit);
	}
	return 0;
}
