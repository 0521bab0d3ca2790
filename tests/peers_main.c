/* SPDX-License-Identifier: MIT */
/*
 * One repetition of bench-peers for one tracer's build (tests/bench-peers.sh runs many,
 * interleaved with the other tracers'):
 *
 *   peers-X WORK CALLS TRIES   listing1_plain and listing1_traced, CALLS calls each of the
 *                              depth-10 recursion with WORK iterations a level, TRIES
 *                              times alternately after one untimed run of the traced
 *                              copy; prints the fastest of each, in ns of the
 *                              thread's CPU time per call of one level, and the records
 *                              the tracer counted (-1: counted from its files afterwards)
 *   peers-X --sim WORK FRAMES TRIES
 *                              the same with the sim app's UI frame (tests/peers_sim.c):
 *                              FRAMES frames a run, WORK loop iterations a unit of the
 *                              tree's weights; ns per frame
 *   peers-X --once CALLS       Listing 1's instrumented copy only, CALLS calls (work 0): a trace of
 *                              a known size for the post-processing tools
 *   peers-X --persist DIR      jitt only: a full ring of Listing 1 into a trace file
 *
 * CLOCK_THREAD_CPUTIME_ID: time the machine gave to other work does not count, so a
 * loaded machine slows the figures less than wall time would; the fastest of TRIES drops
 * the runs that were disturbed anyway. Work done by a tracer's other threads or processes
 * (uftrace's recorder writing the data files) is not in it: see docs/peers.md.
 */
#include "tests/peers.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEPTH 10

static volatile long sink;

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Listing 1 as a workload: a step is one call of the recursion, DEPTH calls of one level. */
static long listing1_step_plain(int work, long sum)
{
	return listing1_plain(DEPTH, work, sum);
}

static long listing1_step_traced(int work, long sum)
{
	return listing1_traced(DEPTH, work, sum);
}

static const struct peers_workload listing1 = {
	"listing1", listing1_step_plain, listing1_step_traced, DEPTH, 2,
};

/* ns of the thread's CPU time per unit (a call of one level, a frame). */
static double run(const struct peers_workload *w, bool traced, int work, long steps)
{
	long (*fn)(int, long) = traced ? w->traced : w->plain;
	long sum = 1;
	uint64_t t0 = cpu_ns();
	for (long i = 0; i < steps; i++)
		sum += fn(work, sum);
	uint64_t t = cpu_ns() - t0;
	sink = sum;
	return (double)t / (double)steps / (double)w->units;
}

/* The reference for the peers' timestamps: uftrace and (on a CPU without rdtscp) XRay
 * read the time with clock_gettime, through the vDSO; jitt reads the counter itself
 * (hal/timer.c). ns of thread CPU time per call, the fastest of `tries` runs. */
static double clock_cost(int tries)
{
	double best = 0;
	for (int k = 0; k < tries; k++) {
		struct timespec ts;
		long n = 100000;
		uint64_t t0 = cpu_ns();
		for (long i = 0; i < n; i++)
			clock_gettime(CLOCK_MONOTONIC, &ts);
		double x = (double)(cpu_ns() - t0) / (double)n;
		if (k == 0 || x < best)
			best = x;
	}
	return best;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: peers-%s [--sim] WORK CALLS TRIES | --once CALLS | --persist DIR\n",
		peers_tracer);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--persist") == 0) {
		char path[4096];
		int err = peers_persist(argv[2], path, sizeof(path));
		if (err) {
			fprintf(stderr, "peers-%s: --persist: %s\n", peers_tracer, strerror(-err));
			return 1;
		}
		printf("%s\n", path);
		return 0;
	}
	struct peers_workload w = listing1;
	if (argc == 5 && strcmp(argv[1], "--sim") == 0) {
		peers_sim(&w);
		argc--, argv++;
	}
	int once = argc == 3 && strcmp(argv[1], "--once") == 0;
	if (!once && argc != 4)
		return usage();
	int work = once ? 0 : atoi(argv[1]);
	long calls = atol(argv[2]);
	int tries = once ? 1 : atoi(argv[3]);
	if (work < 0 || calls <= 0 || tries <= 0)
		return usage();

	int err = peers_begin();
	if (err) {
		fprintf(stderr, "peers-%s: cannot start recording: %s\n", peers_tracer,
			strerror(-err));
		return 1;
	}
	/* One untimed run first: the tracer's buffers are then touched (their pages faulted
	 * in), as a flight recorder's are after its first lap; with CALLS large enough, its
	 * ring wraps in every timed run (bench-peers.sh). */
	int warm = once ? 0 : 1;
	if (warm)
		run(&w, true, work, calls);
	double plain = 0, traced = 0;
	for (int k = 0; k < tries; k++) {
		if (!once) {
			double x = run(&w, false, work, calls);
			if (k == 0 || x < plain)
				plain = x;
		}
		double y = run(&w, true, work, calls);
		if (k == 0 || y < traced)
			traced = y;
	}
	int64_t records = peers_records();
	err = peers_end();
	if (err) {
		fprintf(stderr, "peers-%s: cannot finish recording: %s\n", peers_tracer,
			strerror(-err));
		return 1;
	}
	/* What tests/bench-peers.sh reads: one line, the records it should find, and the trace
	 * points a unit (its ns per trace point: (traced - plain) / points). */
	printf("%s plain %.3f traced %.3f records %lld expected %lld clock %.1f points %ld\n",
	       peers_tracer, plain, traced, (long long)records,
	       (long long)calls * (tries + warm) * w.units * w.points,
	       once ? 0.0 : clock_cost(tries), w.points);
	return 0;
}
