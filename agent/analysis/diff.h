/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/diff.h - comparing the calling contexts of two runs (A before or normal, B after or
 * slow): which contexts got slower or faster, which are new in B and which are gone.
 *
 * Each run becomes a `struct diff_side`: a tree whose nodes are calling contexts, a path
 * from the root whose first element is the thread's name (threads of the same name merge,
 * so they compare across runs and different threads never mix) and whose further elements
 * are function names. A function is known by its name, not by {build-id, offset}, so the
 * same function matches across two builds of an app; an unsymbolised one by
 * "<build-id>+0xoffset" (agent_key_name), which matches only within the same binary. A
 * context's cost is its self time in nanoseconds (IntroPerf section 3.4.1): over the whole
 * trace for a trace file, the summary's self_ns for a summary.
 *
 * diff_match pairs the contexts of A and B (DiffProf section 3.4): equal paths first (the
 * Path Condition, eq. 1), then, among what is left, paths within `alpha` frame insertions,
 * deletions and replacements (the Relaxed Path Condition, eq. 4), closest first, one to
 * one. diff_rank orders the result by impact, |B - A| (IntroPerf Alg. 3, DiffRankPaths,
 * per context), so what changed most comes first and an unchanged context scores zero.
 */
#ifndef JITT_AGENT_DIFF_H
#define JITT_AGENT_DIFF_H

#include "hal/cpu.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIFF_NONE	      UINT32_MAX
#define DIFF_ALPHA_MAX	      16		 /* Kconfig's range for AGENT_DIFF_ALPHA */
#define DIFF_SUMMARY_MAX_SIZE (64u << 20)	 /* a summary is a few KiB */
#define DIFF_UNNAMED_THREAD   "(unnamed)" /* a thread without a name, as summaries say */
#define DIFF_ELIDED_FRAMES    "(calls elided)" /* the elided middle of a summary's deep path */
/*
 * Relaxed matching compares a context with at most this many unmatched contexts of the
 * other run per round (those sharing one of its last labels at a nearby depth). Without a
 * cap, thousands of contexts sharing a leaf made every pair a candidate: quadratic in time
 * and memory (4,000 a side took 44 s and 500 MB). Under the cap nothing changes; above
 * it a context sees a slice of those in reach (a different slice per context), so its
 * closest partner may be missed: it is then matched farther, in a later round, or not at
 * all (new / gone). Real trees rarely have 64 unmatched contexts of one thread with the
 * same function at the same depth.
 */
#define DIFF_CANDIDATES_MAX 64
/*
 * Contexts deeper than this are matched exactly only. Relaxed matching reads each
 * candidate's whole path (and the edit distance walks it): on two traces of one call
 * path 100,000 and 30,000 deep, nothing equal below the top, that was the depth times the
 * contexts, 15.6 s. 128 frames is as deep as perf keeps a stack (--max-stack 127, and the
 * thread), and a summary's paths are at most 66 (summary.h).
 */
#define DIFF_RELAXED_MAX_DEPTH 128

/* Names interned once for both runs, so paths compare as arrays of integers (labels). */
struct diff_names {
	char *buf;
	size_t len, cap;
	uint32_t *off; /* label -> offset in buf */
	uint32_t n, ncap;
	uint32_t *hash; /* open addressing: label + 1, 0 empty */
	uint32_t hcap;
};

/* 0 or -ENOMEM. */
int diff_names_init(struct diff_names *nm);
void diff_names_free(struct diff_names *nm);
/* The label of name s (NUL-terminated), added when new. 0 or -ENOMEM. */
int diff_intern(struct diff_names *nm, const char *s, uint32_t *label);
const char *diff_name(const struct diff_names *nm, uint32_t label);

struct diff_node {
	uint32_t label; /* depth 1: the thread's name; deeper: the function's */
	uint32_t parent, first_child, next_sibling; /* DIFF_NONE when none */
	uint32_t depth;	  /* 0 for the root above the threads; a context's path has depth labels */
	uint64_t cost_ns; /* self time */
};

enum diff_kind { DIFF_EMPTY, DIFF_TRACE, DIFF_SUMMARY };

/* Where the scheduling times of a summary's window came from (summary version 3's
 * window.sched.source; versions 1 and 2 have none). */
enum diff_sched_source { DIFF_SCHED_NONE, DIFF_SCHED_PERF, DIFF_SCHED_SCHEDSTAT };

/*
 * A summary's anomaly window, split by what its thread was doing (summary version 3):
 * running its code, preempted (runnable, off its CPU) or blocked (waiting); the three add
 * up to ns. Read from versions 1 and 2 as ns - blocked_ns running, nothing preempted and no
 * scheduling source: without one, preempted time is inside running time, indistinguishable.
 */
struct diff_window {
	bool known; /* false: a trace, or a summary without a window's "ns" */
	uint64_t ns, running_ns, preempted_ns, blocked_ns;
	uint8_t source;	     /* enum diff_sched_source */
	bool has_migrations; /* perf only */
	uint64_t migrations;
	bool has_cpu; /* perf only, and only when the trace's CPUs had 2+ classes */
	uint64_t cpu_ns[HAL_CPU_NCLASSES]; /* running time per CPU class (enum hal_cpu_class) */
};

/* A function of a summary's window top list (top_window): its times in the window. */
struct diff_func {
	uint32_t label;
	uint64_t self_ns, preempted_ns, blocked_ns, calls;
};

/* Where the window's time went: the innermost link of a summary's first (longest) chain. */
struct diff_link {
	bool known;
	uint32_t label;
	uint64_t incl_ns, self_ns, blocked_ns, preempted_ns;
	uint64_t calls; /* of a "many short calls" link; 0 for another */
};

struct diff_side {
	struct diff_names *names; /* shared by the two sides compared */
	struct diff_node *node;	  /* node[0] is the root; a parent comes before its children */
	uint32_t n, cap;
	uint32_t threads;  /* threads read (same-named ones share one subtree) */
	uint32_t maxdepth; /* of any node */
	enum diff_kind kind;
	/* A summary's window, its top list's functions (one entry per name) and its longest
	 * chain's innermost link; the first summary's when several are added. Nothing from a
	 * trace: its scheduling times are the summary's to work out (jitt summarize). */
	struct diff_window window;
	struct diff_func *func;
	uint32_t nfunc;
	struct diff_link where;
	/* private */
	uint32_t *hash; /* (parent, label) -> node + 1, open addressing */
	uint32_t hcap;
};

/* An empty side (just the root). 0 or -ENOMEM. */
int diff_side_init(struct diff_side *s, struct diff_names *names);
void diff_side_free(struct diff_side *s);
/* The child of `parent` with this label (made when missing; *made says so, when given).
 * 0 or -ENOMEM. */
int diff_side_child(struct diff_side *s, uint32_t parent, uint32_t label, uint32_t *child,
		    bool *made);
/* The node of a path of labels from the root (thread first), or DIFF_NONE. */
uint32_t diff_side_find(const struct diff_side *s, const uint32_t *path, uint32_t n);

/*
 * Add every thread of a trace: each ring decoded by the streaming decoder into a calling-
 * context tree (agent/analysis/cct.h), named with agent_key_name, merged by name. 0, -ENOMEM, or
 * -EINVAL with a message in err (a ring that cannot be decoded).
 */
int diff_side_add_trace(struct diff_side *s, const struct rb_trace *t, char *err, size_t errsize);
/*
 * Add a summary written by `jitt summarize --json` (schema jitt.summary, version 1, 2 or 3): the
 * thread's name ("thread": a string, or an object with "name"), and its contexts, root-to-leaf
 * paths of function indices with self_ns per element. Each prefix of a path is a context costing
 * self_ns at that position; a prefix that several paths share counts once. Besides: the window
 * (struct diff_window), top_window's functions and the first chain's innermost link, every
 * chain checked (version 3's top entries and links carry preempted_ns at index 5, and a
 * "many short calls" link its calls at 6; before, calls at 5). 0, -ENOMEM, or -EINVAL with a
 * message in err.
 */
int diff_side_add_summary(struct diff_side *s, const char *text, size_t len, char *err,
			  size_t errsize);
/* Add the file at path: a trace file (it starts with "JITTRACE") or a summary (its first
 * non-blank byte is '{'). 0 or a negative errno, with a message in err. */
int diff_side_load(struct diff_side *s, const char *path, char *err, size_t errsize);

enum diff_status { DIFF_EXACT, DIFF_RELAXED, DIFF_NEW, DIFF_GONE };

struct diff_entry {
	uint32_t a, b; /* the context's node in A and in B; DIFF_NONE on the side without it */
	uint64_t a_ns, b_ns; /* self time; 0 on the side without it */
	int64_t delta_ns;    /* b_ns - a_ns */
	uint8_t status;	     /* enum diff_status */
	uint8_t distance;    /* the path edit distance of a relaxed match; 0 otherwise */
};

struct diff_result {
	struct diff_entry *e;
	size_t n;
	size_t exact, relaxed, added, gone;
	size_t compared; /* pairs of paths whose edit distance was computed */
	size_t frames;	 /* frames of paths relaxed matching read: its work */
};

/*
 * Pair the contexts of a and b (which share one struct diff_names): exact paths, then,
 * when alpha > 0, the relaxed path condition with distance at most alpha (clamped to
 * DIFF_ALPHA_MAX). Every context of either side is in the result once: matched, new (only
 * in B) or gone (only in A). Entries come in no particular order (diff_rank). 0, -EINVAL
 * (sides with different names) or -ENOMEM.
 */
int diff_match(const struct diff_side *a, const struct diff_side *b, unsigned alpha,
	       struct diff_result *r);
/* Largest impact first; ties broken so the order never depends on the platform. */
void diff_rank(struct diff_result *r);
void diff_result_free(struct diff_result *r);
/* |delta_ns| */
uint64_t diff_impact(const struct diff_entry *e);
const char *diff_status_name(enum diff_status st);

/* ---- what the thread was doing: the window's split and the functions' ---- */

enum diff_state { DIFF_RUNNING, DIFF_PREEMPTED, DIFF_BLOCKED };

/* The state the window spent most of its time in (running on a tie). */
enum diff_state diff_window_state(const struct diff_window *w);
/* part / whole in tenths of a percent, rounded; 0 when whole is 0. */
unsigned diff_permille(uint64_t part, uint64_t whole);
const char *diff_sched_source_name(enum diff_sched_source src);
const char *diff_state_name(enum diff_state st);

/* How two windows compare, before anyone reads their numbers side by side. */
struct diff_sched_cmp {
	bool known;	      /* both sides had a window */
	bool same_source;     /* both had the same scheduling source */
	bool a_none, b_none;  /* that side had no scheduling source (preempted inside running) */
	bool verdict;	      /* both had a source: their states may be compared */
	uint8_t a_state, b_state; /* enum diff_state, when known */
};

void diff_sched_compare(const struct diff_window *a, const struct diff_window *b,
			struct diff_sched_cmp *out);

/* One function of A's or B's window top list, compared. */
struct diff_func_change {
	uint32_t label;
	bool in_a, in_b;      /* listed in that side's top_window */
	struct diff_func a, b; /* zero on the side without it */
	int64_t self_delta, preempted_delta;
};

/*
 * The functions of both top lists by name, largest change of self plus preempted time first
 * (ties by label: the order names were first met, never the platform's). *out is malloc'd
 * (free it); 0 or -ENOMEM.
 */
int diff_funcs(const struct diff_side *a, const struct diff_side *b,
	       struct diff_func_change **out, size_t *n);

/* The labels of node v's path, root first (thread first), into out[0..max); returns the
 * path's length (v's depth), which may exceed max. */
uint32_t diff_path(const struct diff_side *s, uint32_t v, uint32_t *out, uint32_t max);
/* The edit distance of two label strings (unit cost insert, delete and replace), when at
 * most bound (clamped to DIFF_ALPHA_MAX); bound + 1 otherwise. */
unsigned diff_path_distance(const uint32_t *x, size_t n, const uint32_t *y, size_t m,
			    unsigned bound);

#endif
