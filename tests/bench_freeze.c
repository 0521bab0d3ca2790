/* SPDX-License-Identifier: MIT */
/*
 * bench-freeze: how long an anomaly takes from the detector's request to a trace file
 * safe on disk (freeze every traced thread, write, fsync file and folder, restart), and
 * what the runtime costs in memory besides its rings. Usage: bench-freeze DIR (on the disk
 * being measured: a tmpfs makes fsync free).
 *
 *   real, CONFIG_RB_RING_SHIFT ring  the runtime's own persist path (jitt_anomaly, the
 *                                    control thread): two busy traced threads with full,
 *                                    wrapped rings; the control thread's measured time
 *   written, 4 and 32 MiB            rb_trace_write (with its fsyncs) of full rings of
 *                                    those sizes: the part that grows with the ring
 * The freeze's targets, set with the public API: 4 MiB at most 50 ms, 32 MiB at most
 * 200 ms, including fsync.
 */
#include "agent/jitt.h"
#include "agent/runtime/runtime.h"
#include "ringbuf/record.h"
#include "ringbuf/ring.h"
#include "ringbuf/tracefile.h"
#include "tests/traced.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUNS 7

static _Atomic int stop_workers;

/* A busy thread ("ui") and one mostly blocked ("worker"), both traced: the worker's ring
 * is copied (ringbuf/ring.h), the busy one's frozen in place. One core stays free, as the
 * LITTLE cores of a phone are for the control thread. */
static void *busy(void *arg)
{
	jitt_thread_name(arg);
	jitt_trace_thread(true);
	int blocked = !strcmp(arg, "worker");
	while (!atomic_load_explicit(&stop_workers, memory_order_relaxed)) {
		for (int i = 0; i < 1000; i++)
			traced_top(i);
		if (blocked)
			usleep(1000);
	}
	jitt_trace_thread(false);
	rb_thread_unregister();
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* Remove the *.jtr files of a folder (the bench's own output). */
static void clean(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[1024];
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".jtr")) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
}

/* Write a full ring of 2^shift bytes RUNS times: the median in ms. */
static double write_full_ring(const char *dir, unsigned shift)
{
	uint64_t n = ((uint64_t)1 << shift) / 8;
	uint64_t *slots = malloc(n * 8);
	if (!slots)
		return -1;
	for (uint64_t i = 0; i < n; i++) /* entries and exits 100 ticks apart */
		slots[i] = (i * 100) << 32 | (i & 1 ? RB_EXIT : 0x401000u);
	struct rb_frozen f = { .slots = slots, .nslots = n, .end = n / 2, .valid = n, .laps = 3 };
	f.tid = getpid();
	snprintf(f.name, sizeof(f.name), "synthetic");
	double t[RUNS];
	char path[512];
	for (int r = 0; r < RUNS; r++) {
		double t0 = seconds();
		if (rb_trace_write(dir, "bench", &f, 1, path, sizeof(path)))
			return -1;
		t[r] = (seconds() - t0) * 1e3;
		unlink(path);
	}
	free(slots);
	qsort(t, RUNS, sizeof(t[0]), cmp_double);
	return t[RUNS / 2];
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: bench-freeze DIR\n");
		return 2;
	}
	char conf[512], spool[512];
	snprintf(spool, sizeof(spool), "%s/spool", argv[1]);
	mkdir(argv[1], 0700);
	mkdir(spool, 0700);
	clean(spool);
	snprintf(conf, sizeof(conf), "%s/bench.conf", argv[1]);
	FILE *f = fopen(conf, "w");
	if (!f) {
		perror(conf);
		return 1;
	}
	fprintf(f, "data_dir = %s\nrun_dir = %s/run\ncooldown_ms = 0\nmax_traces = 100\n"
		   "max_trace_mb = 100000\nlog_level = warn\n",
		argv[1], argv[1]);
	fclose(f);

	long before = rss_kb();
	if (jitt_init(conf)) {
		fprintf(stderr, "bench-freeze: jitt_init failed\n");
		return 1;
	}
	usleep(100000); /* the control thread is up and asleep */
	long after = rss_kb();

	pthread_t w[2];
	pthread_create(&w[0], NULL, busy, "ui");
	pthread_create(&w[1], NULL, busy, "worker");
	usleep(300000); /* the busy ring wraps: full */
	double real[RUNS], freeze[RUNS];
	for (int r = 0; r < RUNS; r++) {
		uint64_t done = atomic_load(&agent_rt.status.persisted);
		if (jitt_anomaly("bench")) {
			fprintf(stderr, "bench-freeze: jitt_anomaly failed\n");
			return 1;
		}
		while (atomic_load(&agent_rt.status.persisted) == done)
			usleep(1000);
		real[r] = (double)atomic_load(&agent_rt.status.last_persist_us) / 1e3;
		freeze[r] = (double)atomic_load(&agent_rt.status.last_freeze_us) / 1e3;
		usleep(100000);
	}
	atomic_store(&stop_workers, 1);
	pthread_join(w[0], NULL);
	pthread_join(w[1], NULL);
	jitt_shutdown();
	clean(spool);
	qsort(real, RUNS, sizeof(real[0]), cmp_double);
	qsort(freeze, RUNS, sizeof(freeze[0]), cmp_double);

	double w4 = write_full_ring(spool, 22), w32 = write_full_ring(spool, 25);
	printf("bench-freeze (medians of %d, fsync included, folder %s)\n", RUNS, argv[1]);
	printf("  real, %u KiB rings, anomaly to frozen:       %8.2f ms  (min %.2f, max %.2f)\n",
	       (unsigned)(RB_RING_BYTES >> 10), freeze[RUNS / 2], freeze[0], freeze[RUNS - 1]);
	printf("  real, %u KiB rings, anomaly to file on disk: %8.2f ms  (min %.2f, max %.2f)\n",
	       (unsigned)(RB_RING_BYTES >> 10), real[RUNS / 2], real[0], real[RUNS - 1]);
	printf("  write a full  4 MiB ring:                    %8.2f ms  (target 50 ms: %s)\n", w4,
	       w4 <= 50 ? "met" : "NOT met");
	printf("  write a full 32 MiB ring:                    %8.2f ms  (target 200 ms: %s)\n",
	       w32, w32 <= 200 ? "met" : "NOT met");
	printf("  runtime memory besides the rings: %ld KiB (RSS %ld KiB before jitt_init, %ld "
	       "after)\n",
	       after - before, before, after);
	return 0;
}
