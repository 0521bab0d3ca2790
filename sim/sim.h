/* SPDX-License-Identifier: MIT */
/*
 * sim/sim.h - jank-sim, the workload app of tests, demos and benchmarks (sim/README.md):
 * a 60 Hz UI loop over a generated call tree (sim/gen-tree.awk), worker threads, and jank
 * scenarios with known culprits.
 *
 * Work is counted in loop iterations, never in elapsed time: the same run does the same
 * work traced or not, so the benchmark's frame times and CPU times compare. A calibration
 * at start (or --calib) turns microseconds asked for into iterations.
 */
#ifndef JITT_SIM_SIM_H
#define JITT_SIM_SIM_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* Helpers inlined into the traced functions: their work is their caller's self time, and
 * they add no trace points of their own. */
#define SIM_INLINE static inline __attribute__((always_inline, no_instrument_function))
/* Code that runs before tracing starts, after it stops, or stands in for another process. */
#define SIM_UNTRACED __attribute__((no_instrument_function))
/*
 * The app's functions: noipa keeps every one a real call under its own name (no inlining,
 * no .constprop or .isra clone, no identical-code folding), in the instrumented and the
 * plain build alike, so the trace names the culprits exactly and the benchmark compares
 * the same calls.
 */
#ifdef __clang__
/* clang has no noipa (it warns and ignores it, then inlines the tree's small functions):
 * noinline keeps every call, and the functions are external, so no clone replaces them.
 * Only bench-peers' XRay build compiles the sim with clang. */
#define SIM_FN __attribute__((noinline))
#else
#define SIM_FN __attribute__((noipa))
#endif

enum sim_scenario {
	SIM_NONE,
	SIM_COMPUTE,
	SIM_BLOCKED,
	SIM_MANY_SHORT,
	SIM_HANG,
	SIM_PREEMPTED,
};

/* Where in the tree a scenario's culprit runs (sim/gen-tree.awk places the checks). */
enum sim_site { SIM_SITE_OFF, SIM_SITE_DEEP, SIM_SITE_IMAGE, SIM_SITE_RASTER };

struct sim_opts {
	enum sim_scenario scenario;
	unsigned frames;      /* in all, warm-up included; 0: until SIGINT or SIGTERM */
	unsigned warmup;      /* normal frames before the injection */
	unsigned jank_frames; /* consecutive slow frames of a jank */
	unsigned fps;
	unsigned work_us; /* the tree's work per frame */
	uint32_t seed;
	uint64_t ipu; /* loop iterations per microsecond */
	bool trace, stats;
	/* The threads' names (--thread-names): tests plant identifiers in them. */
	char ui_name[16], worker_name[16], io_name[16];
};

extern struct sim_opts sim_opt;
extern volatile sig_atomic_t sim_stop; /* set by SIGINT and SIGTERM */

/* The generated tree (sim/gen-tree.awk): its roots and its size per frame. */
extern const unsigned sim_tree_functions;
extern const unsigned long sim_tree_calls, sim_tree_weight;
uint32_t input_dispatch(uint32_t x);
uint32_t anim_tick(uint32_t x);
uint32_t layout_traversal(uint32_t x);
uint32_t draw_traversal(uint32_t x);

/*
 * The work: xorshift steps, a chain of dependent ALU operations that no compiler folds,
 * about one nanosecond each on a desktop core; x carries the result to the caller, so
 * nothing is dead code.
 */
SIM_INLINE uint32_t sim_mix(uint32_t x, uint64_t n)
{
	x |= 1;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
	}
	return x;
}

/* Iterations per unit of the tree's weights this frame (UI thread only). */
extern uint64_t sim_iters_per_weight;

SIM_INLINE uint32_t sim_work(uint32_t x, unsigned weight)
{
	return sim_mix(x, weight * sim_iters_per_weight);
}

/* Work for about `us` microseconds of this machine's time, as calibrated. */
SIM_INLINE uint32_t sim_spin_us(uint32_t x, uint64_t us)
{
	return sim_mix(x, us * sim_opt.ipu);
}

/* Iterations per microsecond, measured on an untraced loop. */
uint64_t sim_calibrate(void);

/* The site armed for this frame, or SIM_SITE_OFF (UI thread only). */
extern int sim_armed_site;
uint32_t sim_inject(int site, uint32_t x);

/* A site's check, in its function of the tree: one compare when nothing is injected. */
SIM_INLINE uint32_t sim_inject_point(int site, uint32_t x)
{
	if (__builtin_expect(sim_armed_site == site, 0))
		x = sim_inject(site, x);
	return x;
}

/* What each scenario injects (sim/culprit.c). */
struct sim_injection {
	const char *name, *culprit, *thread;
	int site;
	unsigned frames; /* consecutive frames it spans */
	unsigned ms;     /* its cost in each of those frames */
};
const struct sim_injection *sim_injection(enum sim_scenario s);

/* The UI loop (sim/ui.c), on the calling thread; frame work times go to work_ns. */
void sim_ui_run(uint64_t *work_ns, unsigned cap, unsigned *measured);

/* Worker threads (sim/workers.c): worker-1 (compute), io-1 (pipe I/O, sleeps) and an
 * untraced peer that answers io-1 as another process would. */
int sim_workers_start(void);
void sim_workers_stop(void);
/* Background work the UI posts each frame (dropped when the queue is full). */
void sim_post_frame_work(unsigned frame);
/*
 * The blocked scenario: worker-1 runs sim_culprit_slow_task for ms; the caller waits.
 * culprit.c calls into workers.c (the wait) and workers.c back into culprit.c (the slow
 * task), on purpose: that round trip is the scenario (the UI blocked on a worker that runs
 * the culprit), and keeping every culprit in culprit.c lets a reader find all four in one
 * place. Either file moving the other's function in would hide one culprit among workers.
 */
uint32_t sim_wait_for_worker(unsigned ms, uint32_t x);
uint32_t sim_culprit_slow_task(unsigned ms, uint32_t x);

/*
 * The preempted scenario (sim/hog.c): no culprit function, other processes on the UI
 * thread's CPU. sim_hogs_start pins the calling (UI) thread to its CPU (*cpu) and starts
 * sim_hog_count() spinning processes pinned there (SCHED_FIFO where allowed, with a gap the
 * thread runs in), returning once they all spin; 0 or a
 * negative errno (the hogs stopped again). sim_hogs_stop kills and reaps them and gives the
 * thread back its affinity; it may be called again, and does nothing then.
 * sim_hog_main is such a process's main (`jank-sim --hog ...`, checked first in main()).
 */
int sim_hogs_start(int *cpu);
void sim_hogs_stop(void);
unsigned sim_hog_count(void);
bool sim_hogs_fifo(void); /* the hogs run SCHED_FIFO, not at nice 0 */
int sim_hog_main(int argc, char **argv);

#endif
