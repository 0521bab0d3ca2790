/* SPDX-License-Identifier: MIT */
/*
 * bench-sched: what recording a thread's context switches costs (hal/sched.h: time other
 * processes took).
 *
 *   per switch    two threads pinned to one CPU hand a byte back and forth through pipes
 *                 (each hand-over is a switch out sleeping and one in), without and with a
 *                 perf switch ring on each; interleaved repetitions, each timed in the two
 *                 threads' CPU time (CLOCK_THREAD_CPUTIME_ID, kernel time included), the
 *                 fastest kept; the rings must hold switch records, or the figure is void
 *   per frame     one schedstat read (the fallback samples it at frame boundaries)
 *   at a freeze   copying a full 8-page ring out of the kernel's
 */
#define _GNU_SOURCE
#include "hal/sched.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20000 /* hand-overs each way per repetition */
#define REPS   11

static uint64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

struct side {
	int in, out;
	int cpu, starter;
	int with_ring;
	struct hal_perf_ring ring;
	int ring_err;
	uint64_t cpu_used;
	pid_t tid;
};

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* One side of the ping-pong: the starter writes first, the other reads first. */
static void *play(void *arg)
{
	struct side *s = arg;
	char c = 0;
	pin(s->cpu);
	s->tid = (pid_t)syscall(SYS_gettid);
	s->ring_err = s->with_ring ? hal_sched_open(&s->ring, s->tid, 8) : 0;
	uint64_t t0 = cpu_ns();
	for (int i = 0; i < ROUNDS; i++) {
		if ((i || !s->starter) && read(s->in, &c, 1) != 1)
			break;
		if (write(s->out, &c, 1) != 1)
			break;
	}
	s->cpu_used = cpu_ns() - t0;
	return NULL;
}

/* One repetition: CPU ns per hand-over (both threads' time over both directions), and the
 * switch records the rings hold afterwards (0 without rings). */
static double run(int with_ring, int cpu, uint64_t *records)
{
	int ab[2], ba[2];
	if (pipe(ab) || pipe(ba))
		exit(1);
	struct side a = { .in = ba[0], .out = ab[1], .cpu = cpu, .starter = 1, .with_ring = with_ring };
	struct side b = { .in = ab[0], .out = ba[1], .cpu = cpu, .with_ring = with_ring };
	pthread_t ta, tb;
	pthread_create(&tb, NULL, play, &b);
	pthread_create(&ta, NULL, play, &a);
	pthread_join(ta, NULL);
	char c;
	(void)!read(ba[0], &c, 1); /* b's last answer */
	pthread_join(tb, NULL);
	*records = 0;
	if (with_ring) {
		static uint8_t buf[8 * 65536];
		static struct hal_sched_event ev[sizeof(buf) / 32];
		struct side *sides[2] = { &a, &b };
		for (int k = 0; k < 2; k++) {
			if (sides[k]->ring_err) {
				fprintf(stderr, "bench-sched: perf refused: %s\n",
					strerror(-sides[k]->ring_err));
				*records = 0;
				break;
			}
			uint64_t skipped, lost;
			long n = hal_sched_copy(&sides[k]->ring, buf, sizeof(buf));
			*records += n > 0 ? hal_sched_parse(buf, (size_t)n, ev, sizeof(buf) / 32,
							    &skipped, &lost)
					  : 0;
			hal_perf_ring_close(&sides[k]->ring);
		}
	}
	close(ab[0]), close(ab[1]), close(ba[0]), close(ba[1]);
	return (double)(a.cpu_used + b.cpu_used) / (2.0 * ROUNDS);
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int main(void)
{
	int cpu = sched_getcpu() < 0 ? 0 : sched_getcpu();
	double off[REPS], on[REPS];
	uint64_t records = 0, r;
	for (int i = 0; i < REPS; i++) { /* interleaved */
		off[i] = run(0, cpu, &r);
		on[i] = run(1, cpu, &r);
		records = i ? (r < records ? r : records) : r;
	}
	qsort(off, REPS, sizeof(double), cmp);
	qsort(on, REPS, sizeof(double), cmp);
	printf("bench-sched: %d hand-overs each way, %d repetitions interleaved, thread CPU time\n",
	       ROUNDS, REPS);
	printf("  per hand-over (a switch out and one in), fastest / median:\n");
	printf("    no ring       %8.0f / %8.0f ns\n", off[0], off[REPS / 2]);
	if (records) {
		printf("    perf ring     %8.0f / %8.0f ns   ratio %.3f (fastest), %.3f (median); "
		       "+%.0f ns per switch pair\n",
		       on[0], on[REPS / 2], on[0] / off[0], on[REPS / 2] / off[REPS / 2],
		       on[0] - off[0]);
		printf("    (the rings held at least %llu switch records after each run)\n",
		       (unsigned long long)records);
	} else {
		printf("    perf ring     refused here, or recorded nothing: no figure\n");
	}
	/* The fallback's cost: one schedstat read. */
	pid_t tid = (pid_t)syscall(SYS_gettid);
	uint64_t a, b, c, best = UINT64_MAX;
	for (int rep = 0; rep < REPS; rep++) {
		uint64_t t0 = cpu_ns();
		int ok = 0;
		for (int i = 0; i < 1000; i++)
			ok += hal_sched_stat(tid, &a, &b, &c) == 0;
		uint64_t t = (cpu_ns() - t0) / 1000;
		if (ok == 1000 && t < best)
			best = t;
	}
	if (best != UINT64_MAX)
		printf("  per frame, schedstat fallback: one read %llu ns (fastest of %d x 1000)\n",
		       (unsigned long long)best, REPS);
	else
		printf("  per frame, schedstat fallback: unreadable here, no figure\n");
	/* The freeze's part: copying a full ring. */
	struct hal_perf_ring ring;
	if (hal_sched_open(&ring, tid, 8) == 0) {
		for (int i = 0; i < 2000; i++)
			sched_yield(), usleep(1);
		static uint8_t buf[8 * 65536];
		uint64_t t_best = UINT64_MAX;
		long n = 0;
		for (int rep = 0; rep < REPS; rep++) {
			uint64_t t0 = cpu_ns();
			n = hal_sched_copy(&ring, buf, sizeof(buf));
			uint64_t t = cpu_ns() - t0;
			t_best = t < t_best ? t : t_best;
		}
		printf("  at a freeze: copying the 8-page ring (%ld bytes) %llu ns\n", n,
		       (unsigned long long)t_best);
		hal_perf_ring_close(&ring);
	}
	return 0;
}
