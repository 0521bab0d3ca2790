/* SPDX-License-Identifier: MIT */
/*
 * bench-trace: the cost of one trace point, Hubble's Listing 1 method (section 8.1, Table 2)
 * on each CPU class the HAL finds. Per variant and work value: ns per call of the depth-10
 * recursion, then ns per trace point over the uninstrumented build (2 trace points per call)
 * and the overhead in %. All variants run interleaved, REPS repetitions; in each, a variant
 * runs TRIES times and keeps its fastest, in the thread's CPU time (CLOCK_THREAD_CPUTIME_ID:
 * time the machine gave to other work does not count); the table quotes the medians of
 * those, and ratios of medians. Every run checks that its variant recorded what it should
 * (2 records per call, or none), so no row measures a trace point that did nothing. The
 * "alt" rows are the designs trace.h was chosen against (tests/bench_listing1_plain.c).
 */
#include "hal/cpu.h"
#include "hal/timer.h"
#include "ringbuf/ring.h"
#include "tests/bench_listing1.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 5
#define TRIES 3
#define DEPTH 10

static volatile long sink;
static int record_errors;

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

enum {
	PLAIN, OFF, ON, BARE, LIMIT, MASK_ON, MASK_OFF, TWO_ON, TWO_OFF, SAMPLED_ON, SAMPLED_OFF,
	STORE, NVARIANTS
};
static const char *const names[] = {
	"uninstrumented", "tracing off",  "tracing on",   "empty hook (bare call)",
	"physical limit", "funtrace mask on", "funtrace mask off", "alt two checks on",
	"alt two checks off", "sampled time on", "sampled time off", "sampled limit",
};
/* The sampled-time rows (x86_64: ringbuf/trace_x86_64.h, rb_point_sampled). */
static bool skipped(int v)
{
	return !bench_have_sampled && (v == SAMPLED_ON || v == SAMPLED_OFF || v == STORE);
}
static uint64_t alt_ring[RB_RING_SLOTS];

/* Checks that a run of `calls` calls recorded what its variant should: 2 records per call
 * for the tracing variants (jitt's counted by its ring; the references' indexes modulo
 * their rings' sizes), none for the others. */
static void check_records(int variant, long calls, uint64_t jitt_before, uint64_t jitt_after,
			  const struct bench_positions *b, const struct bench_positions *a)
{
	uint64_t want = (uint64_t)calls * DEPTH * 2, got = 0, modulo = 0;
	switch (variant) {
	case ON:
	case SAMPLED_ON:
		got = jitt_after - jitt_before;
		break;
	case STORE:
		got = a->store - b->store, modulo = 1 << 16;
		break;
	case LIMIT:
		got = a->limit - b->limit, modulo = 1 << 16;
		if (a->limit_newest == 0)
			got = ~want; /* the store did not happen */
		break;
	case MASK_ON:
		got = a->mask - b->mask, modulo = RB_RING_SLOTS;
		break;
	case TWO_ON:
		got = a->two - b->two, modulo = RB_RING_SLOTS;
		break;
	default:
		want = 0;
		got = (jitt_after - jitt_before) + (a->mask != b->mask) + (a->two != b->two);
	}
	if (modulo)
		got %= modulo, want %= modulo;
	if (got != want) {
		fprintf(stderr, "bench-trace: %s recorded %llu, not %llu\n", names[variant],
			(unsigned long long)got, (unsigned long long)want);
		record_errors++;
	}
}

/* ns of the thread's CPU time per call of the depth-10 recursion. */
static double run(int variant, int work, long calls)
{
	long (*fn)(int, int, long) = variant == PLAIN	? listing1_plain
				     : variant == BARE	? listing1_bare_call
				     : variant == LIMIT ? listing1_limit
				     : variant == STORE ? listing1_store
				     : variant == SAMPLED_ON || variant == SAMPLED_OFF ? listing1_sampled
				     : variant == MASK_ON || variant == MASK_OFF ? listing1_alt_mask
				     : variant == TWO_ON || variant == TWO_OFF	 ? listing1_alt_two
										 : listing1_traced;
	bench_alternatives_setup(alt_ring, RB_RING_SLOTS, variant == MASK_ON || variant == TWO_ON);
	if (variant == ON || variant == SAMPLED_ON)
		rb_trace_self(true);
	struct bench_positions before, after;
	bench_alternatives_positions(&before);
	uint64_t records = rb_self_records();
	uint64_t t0 = cpu_ns();
	long sum = 1;
	for (long i = 0; i < calls; i++)
		sum += fn(DEPTH, work, sum);
	uint64_t t = cpu_ns() - t0;
	bench_alternatives_positions(&after);
	check_records(variant, calls, records, rb_self_records(), &before, &after);
	if (variant == ON || variant == SAMPLED_ON)
		rb_trace_self(false);
	sink = sum;
	return (double)t / (double)calls / DEPTH;
}

static void bench_class(const char *label)
{
	static const int works[] = { 0, 1, 10, 100, 1000 };
	printf("\n%s\n%-24s %6s %12s %14s %10s\n", label, "variant", "work", "ns/call",
	       "ns/tracepoint", "overhead");
	for (size_t w = 0; w < sizeof(works) / sizeof(works[0]); w++) {
		int work = works[w];
		long calls = work >= 100 ? 5000 : 100000;
		double t[NVARIANTS][REPS];
		for (int r = 0; r < REPS; r++) {
			for (int v = 0; v < NVARIANTS; v++) {
				if (skipped(v))
					continue;
				double best = 0;
				for (int k = 0; k < TRIES; k++) {
					double x = run(v, work, calls);
					if (k == 0 || x < best)
						best = x;
				}
				t[v][r] = best;
			}
		}
		double med[NVARIANTS];
		for (int v = 0; v < NVARIANTS; v++) {
			if (skipped(v))
				continue;
			qsort(t[v], REPS, sizeof(double), cmp);
			med[v] = t[v][REPS / 2];
		}
		for (int v = 0; v < NVARIANTS; v++) {
			if (skipped(v))
				continue;
			double per_point = (med[v] - med[PLAIN]) / 2;
			printf("%-24s %6d %12.3f %14.3f %9.1f%%\n", names[v], work, med[v],
			       v == PLAIN ? 0.0 : per_point, 100.0 * (med[v] - med[PLAIN]) / med[PLAIN]);
		}
		printf("%-24s %6d %12s %13.2fx\n", "on / uninstrumented", work, "",
		       med[ON] / med[PLAIN]);
		/* The ratio means something only while the trace points dominate. */
		if (work <= 10)
			printf("%-24s %6d %12s %13.2fx\n", "on / physical limit", work, "",
			       (med[ON] - med[PLAIN]) / (med[LIMIT] - med[PLAIN]));
		/* Sampled time against both limits: a timed record's, and one timed record in 32's. */
		if (work <= 10 && bench_have_sampled) {
			printf("%-24s %6d %12s %13.2fx\n", "sampled / physical limit", work, "",
			       (med[SAMPLED_ON] - med[PLAIN]) / (med[LIMIT] - med[PLAIN]));
			printf("%-24s %6d %12s %13.2fx\n", "sampled / sampled limit", work, "",
			       (med[SAMPLED_ON] - med[PLAIN]) / (med[STORE] - med[PLAIN]));
		}
	}
}

/* `bench-trace --only VARIANT CALLS`: run one variant, for counting its instructions under
 * valgrind --tool=callgrind (tests/callgrind-trace.sh). */
static int run_only(const char *variant, long calls)
{
	for (int v = 0; v < NVARIANTS; v++) {
		if (strcmp(names[v], variant) == 0) {
			run(v, 0, calls);
			return 0;
		}
	}
	fprintf(stderr, "bench-trace: no variant '%s'\n", variant);
	return 2;
}

int main(int argc, char **argv)
{
	hal_timer_init();
	const struct hal_timer_info *ti = hal_timer_info();
	printf("trace point cost, Hubble Listing 1 (depth %d), timer %s at %llu Hz, ring %llu KiB\n",
	       DEPTH, hal_timer_source_name(ti->source), (unsigned long long)ti->freq_hz,
	       (unsigned long long)(RB_RING_BYTES >> 10));
	if (rb_thread_register("bench") != 0) {
		fprintf(stderr, "bench-trace: cannot register a ring\n");
		return 1;
	}
	if (argc == 4 && strcmp(argv[1], "--only") == 0)
		return run_only(argv[2], atol(argv[3])) || record_errors;
	struct hal_topology topo;
	if (hal_topology_load(&topo) != 0 || topo.nclasses == 1) {
		bench_class(topo.nclasses == 1 ? "all CPUs (one class)" : "unpinned");
		return record_errors ? 1 : 0;
	}
	for (int c = HAL_CPU_BIG; c >= HAL_CPU_LITTLE; c--) {
		char label[64];
		snprintf(label, sizeof(label), "pinned to %s cores", hal_cpu_class_name(c));
		if (hal_pin_to_class(&topo, 0, c) == 0)
			bench_class(label);
	}
	return record_errors ? 1 : 0;
}
