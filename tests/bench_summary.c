/* SPDX-License-Identifier: MIT */
/*
 * bench-summary: decode and summarise a full 32 MiB ring (about 4 M records) with the real
 * `jitt` command, against the physical limit of reading the same file sequentially; peak
 * memory above the mapped file; the JSON summary's size; exports to Chrome JSON and
 * Perfetto. Usage: bench-summary JITT [SHIFT [sampled]]   (SHIFT: ring size as a power of
 * two, 25; sampled: most records untimed, their times estimated: ringbuf/untimed.h)
 *
 * The trace has realistic shapes: a UI thread running 60 Hz-like frames through a call
 * graph of 300 distinct functions (depth up to 10, fan-out varying), locks and waits, and
 * one slow frame with a culprit deep in the tree before the anomaly mark.
 */
#include "agent/marks.h"
#include "ringbuf/record.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS 5

static uint64_t *ring;
static uint64_t nslots, pos;
static uint32_t rng = 0x9e3779b9u;

static uint32_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
	return rng;
}

/* Sampled time (ringbuf/untimed.h), with a third argument "sampled": one-slot records are
 * written untimed but about one in 32 (the gap to the next timed one 1..64), as the x86_64
 * hot path does; the decoder estimates their times. */
static int sampled;
static uint32_t timed_in = 1;

static void put(uint64_t v)
{
	uint32_t low = (uint32_t)v;
	if (sampled && (low == RB_EXIT || low >= RB_FIRST_ID) && --timed_in)
		v = low;
	else if (sampled && (low == RB_EXIT || low >= RB_FIRST_ID))
		timed_in = 1 + (uint32_t)(v >> 32) % RB_SAMPLED_GAP_MAX;
	ring[pos++ & (nslots - 1)] = v;
}

/* A special record's payload slot: never untimed, and no record of the count. */
static void put_payload(uint64_t v)
{
	ring[pos++ & (nslots - 1)] = v;
}

static uint64_t now_ts = 1000;

/* Function ids: 300 functions in a plausible text segment. */
static uint32_t fid(unsigned f)
{
	return 0x401000u + 0x40u * f;
}

/*
 * One call of function f at depth d. The program's call graph is fixed, as a real one is:
 * function f calls a few functions of the next layer (30 functions a layer, 10 layers);
 * near the top a frame fans out widely, then each function has two callees, then one, of
 * which a call runs some. That gives tens of thousands of calling contexts (printed).
 */
static void call(unsigned f, int d)
{
	put(rb_tag(now_ts, fid(f)));
	now_ts += 5 + next() % 40;
	if (d < 10) {
		unsigned fan = d < 3 ? 4 : d < 6 ? 2 : 1, kids = next() % (fan + 1);
		for (unsigned k = 0; k < kids; k++)
			call((unsigned)d * 30 + (f * 7 + k * 11) % 30, d + 1);
	}
	if (next() % 50 == 0) { /* a lock, now and then */
		put_payload(rb_special_payload(now_ts, 0x1000 + f));
		put(rb_tag(now_ts, RB_WAIT_BEGIN));
		now_ts += 200 + next() % 2000;
		put_payload(rb_special_payload(now_ts, 0x1000 + f));
		put(rb_tag(now_ts, RB_WAIT_END));
	}
	now_ts += 3 + next() % 20;
	put(rb_tag(now_ts, RB_EXIT));
}

static void generate(uint64_t slots)
{
	nslots = slots;
	ring = malloc(nslots * sizeof(*ring));
	if (!ring) {
		perror("bench-summary");
		exit(1);
	}
	put_payload(rb_special_payload(now_ts, 0));
	put(rb_tag(now_ts, RB_SYNC));
	put(rb_tag(now_ts, fid(0))); /* main */
	/* Frames until the ring has wrapped once over, then the slow one and the mark. */
	while (pos < nslots + nslots / 2) {
		put_payload(rb_special_payload(now_ts, AGENT_MARK_FRAME_BEGIN));
		put(rb_tag(now_ts, RB_MARK));
		call(next() % 30, 1);
		now_ts += 1000;
	}
	put_payload(rb_special_payload(now_ts, AGENT_MARK_FRAME_BEGIN));
	put(rb_tag(now_ts, RB_MARK));
	put(rb_tag(now_ts, fid(1)));
	put(rb_tag(now_ts + 10, fid(42)));
	put(rb_tag(now_ts + 20, fid(299))); /* the culprit */
	now_ts += 50000000;
	put(rb_tag(now_ts, RB_EXIT));
	put(rb_tag(now_ts + 10, RB_EXIT));
	put(rb_tag(now_ts + 20, RB_EXIT));
	now_ts += 30;
	put_payload(rb_special_payload(now_ts, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK));
	put(rb_tag(now_ts, RB_MARK));
}

static double seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The physical limit: read the file once, sequentially, touching every byte. */
static double read_file(const char *path)
{
	static char buf[1 << 20];
	double t0 = seconds();
	int fd = open(path, O_RDONLY);
	uint64_t sum = 0;
	ssize_t n;
	while (fd >= 0 && (n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i += 64)
			sum += (unsigned char)buf[i];
	if (fd >= 0)
		close(fd);
	double t = seconds() - t0;
	if (sum == 1) /* keeps the loop */
		printf(" ");
	return t;
}

/* Run the command with stdout to `out`; its wall time, peak RSS (KiB) and status. */
static double run(char *const argv[], const char *out, long *maxrss_kb, int *status)
{
	double t0 = seconds();
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	struct rusage ru;
	if (pid < 0 || wait4(pid, status, 0, &ru) < 0) {
		*status = -1;
		return 0;
	}
	*maxrss_kb = ru.ru_maxrss;
	return seconds() - t0;
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Median time of RUNS runs of a command; the largest peak RSS. */
static double median_run(char *const argv[], const char *out, long *maxrss, int *ok)
{
	double t[RUNS];
	*maxrss = 0;
	*ok = 1;
	for (int i = 0; i < RUNS; i++) {
		long rss = 0;
		int status;
		t[i] = run(argv, out, &rss, &status);
		*ok &= status == 0;
		if (rss > *maxrss)
			*maxrss = rss;
	}
	qsort(t, RUNS, sizeof(t[0]), cmp_double);
	return t[RUNS / 2];
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench-summary JITT [SHIFT [sampled]]\n");
		return 2;
	}
	int shift = argc > 2 ? atoi(argv[2]) : 25;
	sampled = argc > 3 && !strcmp(argv[3], "sampled");
	if (shift < 16 || shift > 28) {
		fprintf(stderr, "bench-summary: SHIFT is 16 to 28\n");
		return 2;
	}
	char dir[] = "/tmp/jitt-bench-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("bench-summary: mkdtemp");
		return 1;
	}
	generate((uint64_t)1 << (shift - 3));
	struct rb_frozen f = { .slots = ring,
			       .nslots = nslots,
			       .end = pos & (nslots - 1),
			       .valid = nslots,
			       .laps = (uint32_t)(pos / nslots),
			       .tid = 1 };
	strcpy(f.name, "ui");
	char path[512];
	int err = rb_trace_write(dir, "bench: jank", &f, 1, path, sizeof(path));
	struct rb_decoder d;
	struct rb_ring_view v = rb_frozen_view(&f);
	double recs = 0;
	if (rb_decoder_init(&d, &v, now_ts, NULL, NULL) == 0) {
		recs = (double)d.stats.records;
		rb_decoder_free(&d);
	}
	free(ring);
	if (err) {
		fprintf(stderr, "bench-summary: writing the trace: %s\n", strerror(-err));
		return 1;
	}
	long size = file_size(path);
	printf("decode + summarise a %d MiB ring (%.0f records%s), one core, median of %d runs:\n",
	       1 << (shift - 20), recs, sampled ? ", sampled time" : "", RUNS);

	double limit[RUNS];
	for (int i = 0; i < RUNS; i++)
		limit[i] = read_file(path);
	qsort(limit, RUNS, sizeof(limit[0]), cmp_double);

	char out[600];
	snprintf(out, sizeof(out), "%s/summary.json", dir);
	char *sum_argv[] = { argv[1], "summarize", "--json", path, NULL };
	long rss;
	int ok;
	double t = median_run(sum_argv, out, &rss, &ok);
	printf("  sequential read of the file (the limit) %8.1f ms  (%ld bytes)\n",
	       limit[RUNS / 2] * 1e3, size);
	printf("  jitt summarize --json                   %8.1f ms  %.1fx the limit, %.1f M "
	       "records/s%s\n",
	       t * 1e3, t / limit[RUNS / 2], recs / t / 1e6, ok ? "" : "  (FAILED)");
	printf("  peak RSS %ld KiB: %ld KiB above the mapped file  (target: 100 ms, 16 MiB)\n", rss,
	       rss - size / 1024);
	printf("  JSON summary: %ld bytes (K = 10; target 4096)\n", file_size(out));
	FILE *js = fopen(out, "r");
	char head[4096] = "";
	size_t got = js ? fread(head, 1, sizeof(head) - 1, js) : 0;
	head[got] = '\0';
	if (js)
		fclose(js);
	const char *ctx = strstr(head, "\"contexts\":");
	if (ctx)
		printf("  calling contexts in the tree: %lld\n", atoll(ctx + 11));

	static const char *formats[] = { "chrome", "perfetto", "folded" };
	for (int i = 0; i < 3; i++) {
		char fmt[32];
		snprintf(fmt, sizeof(fmt), "--format=%s", formats[i]);
		snprintf(out, sizeof(out), "%s/export.%s", dir, formats[i]);
		char *exp_argv[] = { argv[1], "export", fmt, path, NULL };
		t = median_run(exp_argv, out, &rss, &ok);
		printf("  jitt export %-18s  %8.1f ms  %ld bytes, peak RSS %ld KiB%s\n", fmt,
		       t * 1e3, file_size(out), rss, ok ? "" : "  (FAILED)");
	}
	char cmd[600];
	if (getenv("JITT_BENCH_KEEP"))
		return printf("  kept %s\n", path) < 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
