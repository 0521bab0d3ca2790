/* SPDX-License-Identifier: MIT */
/*
 * The room agent/analysis/ turns a trace file into models and reports: the calling-context
 * tree (cct), this summary and its text and JSON (summary_out), `jitt diff` (diff, json),
 * the exports (export, perfetto) and function names (symbols). jittd and the `jitt` command
 * both use it, so it may include hal/, ringbuf/ and the shared pieces of agent/ (marks.h),
 * never cli/, daemon/ or runtime/: it must not know who asked.
 *
 * agent/analysis/summary.h - what a trace says about its slow moment: the model behind
 * `jitt summarize` (text and JSON, agent/analysis/summary_out.c) and jittd.
 *
 * The anomaly window runs from the start of the slow frame (its frame mark) to the anomaly
 * mark (agent/marks.h); with no frame marks, CONFIG_AGENT_WINDOW_MS before the anomaly
 * mark, or before the end of the trace when there is none. In it, the report has:
 *  - the top self-time functions, in the window and over the whole trace (the writers
 *    merge a function's copies by name: summary_out.c);
 *  - the K longest call chains (Hubble section 7): the longest top-level calls in the
 *    window, each followed into its longest child until a frame's own time dominates;
 *  - hot calling contexts ranked differentially (IntroPerf section 3.4.2, Alg. 3): the
 *    window's root-to-leaf paths, each costed as the sum over its frames of self time in
 *    the window minus the baseline's, where the baseline is the thread's normal frames
 *    (Argus's "similar node": the same loop's iterations that were within budget),
 *    averaged per frame, or, with no frame marks, the trace before the window scaled to
 *    the window's length. Code that is always expensive sinks; what changed rises. With
 *    no baseline (no other complete frame; nothing before the window) nothing is ranked:
 *    every path would compare against nothing;
 *  - what the frame was blocked on, when it mostly was (the header's blocked time: both
 *    are the tree's, cct_lane_offcpu): the longest wait, the thread that woke it and what
 *    that thread did meanwhile, following wake-ups (AppInsight section 5's critical path,
 *    Argus section 3.1's wait and wake-up edges);
 *  - frame statistics: count, median, p99, over budget, and whether this frame is an
 *    outlier above mean + 3 sigma of the others (AppInsight section 6.4).
 *
 * Everything is in timer ticks; conversions happen on output.
 */
#ifndef JITT_AGENT_SUMMARY_H
#define JITT_AGENT_SUMMARY_H

#include "agent/analysis/cct.h"
#include "agent/analysis/outer.h"
#include "hal/cpu.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SUMMARY_MAX_K	 100
#define SUMMARY_MAX_HOPS 16
/*
 * The most frames a chain or a context's path keeps: the SUMMARY_KEEP_OUTER outermost and
 * the rest innermost, with the middle elided and counted (`elided`). A crafted trace can
 * nest a million calls; kept whole, one chain made the summary grow with the square of the
 * depth (text indents each link) and broke the 4 KiB promise of the JSON. 64 holds every
 * real stack we have seen whole (the sim app's are 8 to 13 deep; Android UI stacks are
 * mostly under 60), and 64 links of JSON (about 25 bytes each) leave half of the 4 KiB for
 * the rest. The inner frames are the ones that say where the time went, so they get most.
 */
#define SUMMARY_MAX_DEPTH  64
#define SUMMARY_KEEP_OUTER 16

/* Functions a summary says the fit guessed the time of, at most */
#define SUMMARY_GUESSED_MAX 16

struct summary_func {
	uint64_t key; /* agent_func_key; CCT_UNKNOWN for calls the ring starts inside */
	uint64_t calls, self, blocked;
	bool truncated; /* a call's entry was overwritten: the ring starts inside it */
	uint64_t preempted;
	bool running; /* a call was still running when the rings were frozen */
	uint64_t callees; /* calls it made to traced functions */
	/* Calls its counted calls' records stood for beyond themselves (cct_stat.more): calls
	 * and callees count records, each a trace point in the self time; the text and the
	 * JSON give calls + more, the calls that ran. */
	uint64_t more;
};

struct summary_frame {
	uint64_t key, incl, self, blocked;
	bool truncated; /* its entry overwritten: the ring starts inside it */
	bool running;	/* still running when the rings were frozen */
	uint32_t calls; /* 0: one call; more: the chain's last link stands for that many
			 * calls of one function (many short calls that add up) */
	uint64_t preempted;
};

/* A chain or path of more than SUMMARY_MAX_DEPTH frames keeps f[0..at) (the outermost),
 * then `elided` frames are left out, then f[at..n) (the innermost). elided == 0: whole. */
struct summary_chain {
	size_t n;
	struct summary_frame *f; /* outermost first */
	size_t at, elided;
};

/* Where a top function ran most: the calling context (a path from the root) holding the
 * most of its self time in the window, outermost first; a deep one keeps its innermost
 * SUMMARY_PATH_MAX frames. The window's first SUMMARY_NPATHS functions have one each. */
#define SUMMARY_NPATHS 10 /* the default k: a path to each function of the top */
#define SUMMARY_PATH_MAX 24
struct summary_path {
	uint64_t key, self; /* the function, and its self time in this context */
	size_t n;
	bool elided; /* outer frames left out */
	uint64_t path[SUMMARY_PATH_MAX];
};

/* A hot calling context: a root-to-leaf path in the window, with its differential cost. */
struct summary_context {
	int64_t cost; /* sum over the path of (window self - baseline self) */
	size_t n;
	uint64_t *key;	/* the path's functions, outermost first */
	uint64_t *self; /* each frame's self time in the window... */
	uint64_t *base; /* ...and in the baseline, per frame (or scaled to the window) */
	size_t at, elided; /* as a chain's: frames [at, at + elided) of the path not kept */
};

/* One hop of "blocked on": a thread that spent most of an interval waiting. */
struct summary_hop {
	int thread;	   /* index into the trace's threads */
	uint64_t from, to; /* the interval looked at */
	uint64_t blocked;  /* ticks of it spent waiting */
	uint32_t object;   /* the longest wait's object key */
	uint64_t waiter;   /* the function that waited */
	uint64_t wait_begin, wait_end;
	bool still_waiting; /* no wait-end before the interval ended */
	int waker;	    /* the thread whose wake-up ended the wait; -1 none found */
	uint64_t wake_ts;
	/* What the waker did from the wait's start to the wake-up: every function it ran,
	 * by self time, as top_window. */
	size_t ntop;
	struct summary_func *top;
	struct summary_chain chain;
};

struct summary_frames {
	size_t count; /* completed frames of the window's thread */
	uint64_t median, p99, mean, sigma, budget;
	size_t over_budget;
	bool have_this;	     /* the window is a frame */
	uint64_t this_frame; /* its length (up to the anomaly when still running) */
	uint64_t open_skipped; /* the frame open at an unmarked freeze, which had only begun:
				* how long it had run (the window is the frame before); 0 */
	bool outlier;	     /* above mean + 3 sigma of the other frames */
};

enum summary_window_kind { SUMMARY_WINDOW_FRAME, SUMMARY_WINDOW_SPAN };

/*
 * Where the window's thread ran, to tell time preempted by other processes from time
 * working. perf: the kernel's context switches split the window exactly and per function
 * (cct.h), and say on which CPUs it ran. schedstat: only the thread's totals sampled at
 * frame boundaries; the preempted time is the run-queue wait between the window's first and
 * last samples, and functions' self time still holds it (the text says so). none:
 * preemption cannot be told from work.
 */
enum summary_sched_source { SUMMARY_SCHED_NONE, SUMMARY_SCHED_PERF, SUMMARY_SCHED_SCHEDSTAT };

struct summary_sched {
	enum summary_sched_source source;
	uint64_t on_class[HAL_CPU_NCLASSES]; /* perf: running time in the window per class */
	uint64_t on_unknown;		     /* ...on CPUs of no known class */
	unsigned nclasses;		     /* distinct classes of the trace's CPUs */
	uint32_t migrations;		     /* switches in onto another CPU, in the window */
	uint32_t main_cpu;		     /* the CPU it ran on longest in the window */
	uint64_t main_cpu_ticks;
	uint64_t lost; /* switch records lost (the kernel's or the writer's) */
};

struct summary {
	const struct rb_trace *trace;
	unsigned k;
	int thread;	      /* the anomaly's thread: index into trace->threads */
	bool anomaly_marked;  /* an anomaly mark was found (else: the end of the trace) */
	uint32_t anomaly_arg; /* the mark's argument (agent/marks.h) */
	uint64_t anomaly_ts;
	enum summary_window_kind window_kind;
	uint64_t w0, w1;	 /* the window [w0, w1) */
	/* The ring wrapped and its oldest record is the window's start: the moment began
	 * before what the ring holds (its outer frames: agent/analysis/outer.h). */
	bool ring_cut;
	/* The calls open at the freeze as the tree knows them, innermost first (their keys),
	 * for naming the time outside every traced call from the stack (outer.h); nopen is
	 * SIZE_MAX when there were more than SUMMARY_MAX_DEPTH. */
	uint64_t open_end[SUMMARY_MAX_DEPTH];
	size_t nopen;
	struct agent_root_calls root_calls; /* which frame made them (outer.h) */
	struct summary_path paths[SUMMARY_NPATHS];
	size_t npaths;
	/* Of the window, the thread's time blocked (cct.h: asleep off its CPU with the switch
	 * records, else inside waits), and runnable but off its CPU: preempted. From the
	 * tree, root included (cct_lane_offcpu); with schedstat, preempted is its sample's. */
	uint64_t window_blocked;
	uint64_t window_preempted;
	struct summary_sched sched;
	uint64_t base_frames;	 /* frames in the baseline (0: the time before the window) */
	uint64_t base_len;	 /* the baseline's length: 0, none (then no contexts) */
	uint64_t span;		 /* the thread's first to last event */
	uint64_t records;	 /* decoded, all threads */
	uint64_t untimed;	 /* of them, written without a time: estimated (untimed.h) */
	uint64_t untimed_windows; /* the windows between timed records they were estimated in */
	unsigned untimed_measured; /* functions whose measured calls the fit took (the most of
				    * a thread's: decode.h, rb_decode_stats.measured) */
	/* Functions whose time is the fit's guess (untimed.h, few), all threads' */
	uint64_t guessed[SUMMARY_GUESSED_MAX];
	size_t nguessed;
	uint64_t called;	 /* counted calls' records (record.h, RB_CALLED): lengths estimated */
	uint64_t called_calls;	 /* and the calls they stand for */
	uint64_t ncontexts_tree; /* calling contexts in the window thread's tree */
	struct summary_frames frames;
	size_t ntop_window, ntop_trace, nchains, ncontexts, nhops;
	/* The trace points' share of the thread's running time over the trace, at the cost
	 * the trace's header gives (0: none given), and whether the text's ranked lists take
	 * them out of self time (summary.c, points_out: only where that share leaves the rest
	 * well known). */
	double points_share;
	bool points_out;
	double point_ps; /* a record's cost, ps: the header's, weighed (rb_trace_point_ps) */
	/* Every function the thread ran in the window, and over the whole trace, by self time,
	 * largest first; the writers merge copies by name and show the first k. */
	struct summary_func *top_window, *top_trace;
	struct summary_chain *chains;
	struct summary_context *contexts;
	struct summary_hop hops[SUMMARY_MAX_HOPS];
};

/* Summarise a parsed trace with K entries per list (1..SUMMARY_MAX_K). 0, -EINVAL when
 * a ring cannot be decoded, or -ENOMEM. */
int summary_build(struct summary *s, const struct rb_trace *t, unsigned k);
/* Self time without the trace points (points_out): the trace's cost for each call and
 * each call made taken out of each of n functions' self time. */
void summary_take_out_points(const struct summary *s, struct summary_func *f, size_t n);
void summary_free(struct summary *s);

/* The detector that fired ("hang", "jank", "explicit", "external", "unknown"): the anomaly
 * mark's, else the one the trace's reason begins with ("external", "hang: ..."), since the
 * external and hang detectors cannot write a mark (docs/runtime.md); NULL when neither
 * names one. */
const char *summary_detector(const struct summary *s);

#endif
