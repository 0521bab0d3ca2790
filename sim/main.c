/* SPDX-License-Identifier: MIT */
/*
 * jank-sim: a multi-threaded app with a 60 Hz UI loop and jank of known culprits, for
 * tests, demos and benchmarks (sim/README.md). This file is the program around the app:
 * options, calibration, threads, statistics. It is not instrumented; the app's code is
 * (sim/Kbuild), except in jank-sim-plain, which has no trace points and no libjitt.
 */
#include "agent/jitt.h"
#include "sim/sim.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Frame times kept for --stats: the last ones of a longer run. */
#define STATS_CAP 65536

struct sim_opts sim_opt = {
	.scenario = SIM_NONE,
	.warmup = 60,
	.jank_frames = CONFIG_AGENT_JANK_FRAMES,
	.fps = 60,
	.work_us = 3000,
	.seed = 1,
	.trace = true,
	.ui_name = "ui",
	.worker_name = "worker-1",
	.io_name = "io-1",
};
volatile sig_atomic_t sim_stop;

static const char *const scenario_names[] = {
	[SIM_NONE] = "none",
	[SIM_COMPUTE] = "compute",
	[SIM_BLOCKED] = "blocked",
	[SIM_MANY_SHORT] = "many-short",
	[SIM_HANG] = "hang",
	[SIM_PREEMPTED] = "preempted",
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: jank-sim [--scenario=none|compute|blocked|many-short|hang|preempted]\n"
		"                [--frames N] [--warmup N] [--seed N] [--no-trace] [--stats]\n"
		"                [--jank-frames N] [--fps N] [--work-us N] [--calib N]\n"
		"                [--calibrate] [--thread-names UI,WORKER,IO]\n"
		"  --frames N       frames in all, warm-up included (default warm-up + 120;\n"
		"                   0: until SIGINT or SIGTERM)\n"
		"  --warmup N       normal frames before the jank (60)\n"
		"  --seed N         varies frame loads and fetches, repeatably (1)\n"
		"  --no-trace       do not turn tracing on (the runtime still runs)\n"
		"  --stats          print frame work median, p99, max and process CPU time\n"
		"  --jank-frames N  consecutive slow frames of a jank (%d)\n"
		"  --fps N          frame rate (60)\n"
		"  --work-us N      the tree's work per frame in microseconds (3000)\n"
		"  --calib N        loop iterations per microsecond, instead of measuring it\n"
		"  --calibrate      print the measured calibration and exit\n"
		"  --thread-names A,B,C  the threads' names (ui,worker-1,io-1)\n",
		CONFIG_AGENT_JANK_FRAMES);
}

static int parse_uint(const char *s, const char *what, unsigned long long max,
		      unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v > max) {
		fprintf(stderr, "jank-sim: %s: not a number up to %llu: '%s'\n", what, max, s);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* 0, or 2 (usage error) after a message; 1 for --help (exit 0). */
static int parse_args(int argc, char **argv, bool *calibrate, bool *frames_set)
{
	static const struct option longopts[] = {
		{ "scenario", required_argument, NULL, 's' },
		{ "frames", required_argument, NULL, 'f' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 'S' },
		{ "no-trace", no_argument, NULL, 'n' },
		{ "stats", no_argument, NULL, 't' },
		{ "jank-frames", required_argument, NULL, 'j' },
		{ "fps", required_argument, NULL, 'r' },
		{ "work-us", required_argument, NULL, 'u' },
		{ "calib", required_argument, NULL, 'c' },
		{ "calibrate", no_argument, NULL, 'C' },
		{ "thread-names", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long v = 0;
	int c;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': {
			int found = -1;
			for (int i = 0; i < (int)(sizeof(scenario_names) / sizeof(*scenario_names));
			     i++)
				if (!strcmp(optarg, scenario_names[i]))
					found = i;
			if (found < 0) {
				fprintf(stderr, "jank-sim: unknown scenario '%s'\n", optarg);
				return 2;
			}
			sim_opt.scenario = (enum sim_scenario)found;
			break;
		}
		case 'f':
			if (parse_uint(optarg, "--frames", 1u << 30, &v))
				return 2;
			sim_opt.frames = (unsigned)v, *frames_set = true;
			break;
		case 'w':
			if (parse_uint(optarg, "--warmup", 1u << 30, &v))
				return 2;
			sim_opt.warmup = (unsigned)v;
			break;
		case 'S':
			if (parse_uint(optarg, "--seed", UINT32_MAX, &v))
				return 2;
			sim_opt.seed = (uint32_t)v;
			break;
		case 'n':
			sim_opt.trace = false;
			break;
		case 't':
			sim_opt.stats = true;
			break;
		case 'j':
			if (parse_uint(optarg, "--jank-frames", 1000, &v) || !v)
				return 2;
			sim_opt.jank_frames = (unsigned)v;
			break;
		case 'r':
			if (parse_uint(optarg, "--fps", 1000, &v) || !v)
				return 2;
			sim_opt.fps = (unsigned)v;
			break;
		case 'u':
			if (parse_uint(optarg, "--work-us", 10000000, &v))
				return 2;
			sim_opt.work_us = (unsigned)v;
			break;
		case 'c':
			if (parse_uint(optarg, "--calib", 1000000, &v) || !v)
				return 2;
			sim_opt.ipu = v;
			break;
		case 'C':
			*calibrate = true;
			break;
		case 'N':
			/* UI,WORKER,IO: each at most 15 bytes, what the runtime keeps. */
			if (sscanf(optarg, "%15[^,],%15[^,],%15s", sim_opt.ui_name, sim_opt.worker_name,
				   sim_opt.io_name) != 3) {
				fprintf(stderr, "jank-sim: --thread-names wants UI,WORKER,IO\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "jank-sim: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return 0;
}

static SIM_UNTRACED uint64_t mono_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The fastest of seven runs long enough (5 ms and more) to dwarf the clock's cost: a
 * slower one was preempted or ran before the CPU's frequency went up (of three, all three
 * were preempted now and then on a busy two-core host: a calibration 4x too low). */
static volatile uint32_t calib_sink;

SIM_UNTRACED uint64_t sim_calibrate(void)
{
	uint64_t n = 1 << 14, best = UINT64_MAX;
	uint32_t x = 1;
	for (;;) {
		uint64_t t0 = mono_ns(CLOCK_MONOTONIC);
		x = sim_mix(x, n);
		if (mono_ns(CLOCK_MONOTONIC) - t0 >= 5000000 || n >= (1ull << 40))
			break;
		n *= 2;
	}
	for (int i = 0; i < 7; i++) {
		uint64_t t0 = mono_ns(CLOCK_MONOTONIC);
		x = sim_mix(x, n);
		uint64_t t = mono_ns(CLOCK_MONOTONIC) - t0;
		best = t < best ? t : best;
	}
	calib_sink = x;
	uint64_t ipu = n * 1000 / (best ? best : 1);
	return ipu ? ipu : 1;
}

static SIM_UNTRACED void on_signal(int sig)
{
	(void)sig;
	sim_stop = 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void print_stats(uint64_t *work_ns, unsigned measured, uint64_t cpu_ns)
{
	unsigned n = measured < STATS_CAP ? measured : STATS_CAP;
	double med = 0, p99 = 0, max = 0;
	if (n) {
		qsort(work_ns, n, sizeof(*work_ns), cmp_u64);
		med = work_ns[n / 2] / 1e3;
		p99 = work_ns[(unsigned)((n - 1) * 99ull / 100)] / 1e3;
		max = work_ns[n - 1] / 1e3;
	}
	printf("stats frames=%u work_median_us=%.1f work_p99_us=%.1f work_max_us=%.1f "
	       "cpu_ms=%.1f calib=%llu trace=%s jitt=%s\n",
	       n, med, p99, max, cpu_ns / 1e6, (unsigned long long)sim_opt.ipu,
	       sim_opt.trace ? "on" : "off", jitt_version());
}

int main(int argc, char **argv)
{
	/* A hog of the preempted scenario (sim/hog.c): another process, not the app. */
	if (argc > 1 && !strcmp(argv[1], "--hog"))
		return sim_hog_main(argc, argv);
	bool calibrate = false, frames_set = false;
	int r = parse_args(argc, argv, &calibrate, &frames_set);
	if (r)
		return r == 1 ? 0 : r;
	if (!sim_opt.ipu || calibrate)
		sim_opt.ipu = sim_calibrate();
	if (calibrate) {
		printf("calib=%llu\n", (unsigned long long)sim_opt.ipu);
		return 0;
	}
	const struct sim_injection *in = sim_injection(sim_opt.scenario);
	if (!frames_set)
		sim_opt.frames = sim_opt.warmup + 120;
	if (in && sim_opt.frames && sim_opt.frames < sim_opt.warmup + in->frames) {
		fprintf(stderr, "jank-sim: --frames %u leaves no room for %u frames of %s after "
				"%u of warm-up\n",
			sim_opt.frames, in->frames, in->name, sim_opt.warmup);
		return 2;
	}

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	uint64_t *work_ns = calloc(STATS_CAP, sizeof(*work_ns));
	if (!work_ns) {
		fprintf(stderr, "jank-sim: out of memory\n");
		return 1;
	}

	/* The runtime usually started before main() (CONFIG_AGENT_AUTO_INIT). Without it the
	 * app still runs: tests of the sim alone need no runtime. */
	int err = jitt_init(NULL);
	if (err && err != -EALREADY)
		fprintf(stderr, "jank-sim: jitt_init: %s\n", strerror(-err));
	err = jitt_thread_name(sim_opt.ui_name);
	if (!err && sim_opt.trace)
		err = jitt_trace_thread(true);
	if (err)
		fprintf(stderr, "jank-sim: ui: not traced: %s\n", strerror(-err));
	err = sim_workers_start();
	if (err) {
		fprintf(stderr, "jank-sim: starting the worker threads: %s\n", strerror(-err));
		return 1;
	}

	/* The preempted scenario's hogs never outlive the app: exit() stops them too. */
	atexit(sim_hogs_stop);
	unsigned measured = 0;
	sim_ui_run(work_ns, STATS_CAP, &measured);
	/* After SIGINT or SIGTERM during the jank, the hogs still run. */
	sim_hogs_stop();

	jitt_trace_thread(false);
	sim_workers_stop();
	uint64_t cpu_ns = mono_ns(CLOCK_PROCESS_CPUTIME_ID);
	jitt_shutdown();
	if (sim_opt.stats)
		print_stats(work_ns, measured, cpu_ns);
	free(work_ns);
	return 0;
}
