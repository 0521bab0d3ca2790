/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/exclude.h - which functions to build without trace points: the model
 * behind `jitt exclude` (docs/exclude.md has the whole argument and the measurements).
 *
 * Cost model. Every call of an instrumented function runs two trace points, each costing
 * C ns on the device, so the traces' T ns of running time (each thread's span less its
 * blocked time, its time preempted where the trace has its switch records, and its
 * silences, below) hold about 2C x N of trace points for their N
 * calls, and the program without them would have taken W = T - 2C x N. The overhead is
 * 2C x N / W; excluding a function f saves 2C x calls(f) of it. What the saving costs is
 * f's own (self) time without its trace points (plain, below), which the summary then
 * shows as its caller's: the cheapest functions to lose are those with the least plain
 * self time per call, so candidates are taken in that order, and picking stops once the
 * overhead left is at most the budget (in % of W). Once it is, the loop-free functions
 * (known from the plain build's code, exclude_add_code) whose trace points still cost more
 * than the budget's share of their calls' time (2C >= budget x plain inclusive time per
 * call: short) go too. Their time per call is bounded by their length, so they are short
 * on any workload, and a list trained where the budget is met at once (memcached's mixed
 * gets and sets, 1.08x) must still leave them out for another where they are most of the
 * trace points (its multigets, 2.5x); their trace points tell nothing at the summary's
 * scale.
 *
 * C comes from --cost, from a measured ratio (below), from the traces' headers (what the
 * traced program's runtime measured at its start: its hooks back to back, agent/runtime
 * control.c) when every trace has it, or else from the records. A call's cycle, from one record to the next,
 * has two halves: a call of nothing traced lasts, from its entry's timer read to its
 * exit's, the end of one trace point, the function's work and the start of the next
 * (LEAF); from an exit's read to the next entry's read run the end of that trace point,
 * the return, the caller's code, the call and the start of the next trace point (STEP).
 * Two trace points and the instrumented frame fit in LEAF + STEP, so half the least mean
 * of each (over a function's 1000 calls or more, each half measured separately) bounds the
 * trace points' own cost from above. It cannot be finer than the timer (on the x86_64 VM
 * here both halves were one step of its TSC, 10.3 ns, while speedtest1's runs imply 13 to
 * 14 ns a trace point), nor does it see what else instrumentation costs (larger code, lost
 * optimisations: part of the "off" build's 1.02x to 1.11x); docs/exclude.md. Halves over
 * EXCLUDE_EST_MAX_NS are left out of the means: a preemption or a page fault inside one of
 * many 30 ns calls would otherwise swamp them (one 20 ms preemption had turned a 30 ns
 * function into 224 ns a call).
 *
 * A silence, over EXCLUDE_SILENCE_NS between two records of a thread, is left out of the
 * running time and of every self time: where every function is a trace point, records
 * come every few tens of ns, and such a gap is the thread waiting for a core (looking into
 * frames made slow by other processes found 21-82% of an interpreter's traces in such gaps
 * on this loaded 2-core machine) or in a system call jitt does not wrap, rarely a long
 * stretch of uninstrumented work. Counted, they made speedtest1's overhead look like 1.06x
 * where it was 2x. Until traces record the thread's switches, leaving them out errs towards
 * excluding more.
 *
 * Self time without the trace points (what a profile of the plain build, `perf`, ranks
 * by). Each trace point's C is split at its timer read: the part before the read (A) and
 * the part after it (B, A + B = C). A call of f from g runs, in order: g's code, A of f's
 * entry | read | B of f's entry, f's code, A of f's exit | read | B of f's exit, g's code.
 * Between f's two reads lie B + A = C: one C per call in f's own self time; the A before
 * the entry's read and the B after the exit's read are g's self time: one C per call in
 * the caller's. Whatever A and B are, then, a function's traced self time holds C x (its
 * calls + the calls it makes to traced functions), and its plain self time is
 *     plain(f) = self(f) - C x (calls(f) + callees(f))           (at least 0)
 * In the cycle halves above, LEAF = B + work + A and STEP = B + return + caller + call +
 * A: the same two halves, seen from the records. Inclusive time likewise holds C for each
 * of its own calls and 2C for each call below them: plain_incl(f) = incl(f) - C x
 * calls(f) - 2C x (calls below f); for a recursive function, over its outermost frames
 * only (a frame inside another of the same function is already in that one's time).
 * Ranked by traced self time, an interpreter's helpers of a few ns and many calls look
 * heavier than what perf puts first (on duktape's fib the traced top 10 held helpers of
 * 0.5 ns a call of their own and 17 ns of trace points); by plain self time the order is
 * perf's, as far as C is right and the plain build inlines the same (docs/exclude.md).
 * The calls a ring began inside, and the thread's root, are no function: their time is
 * outside_ns (an interpreter's bytecode loop, entered before the ring's start).
 *
 * What is never picked: the `keep` functions of most plain self time (the summary's top
 * list: excluding them would change what the summary says first) whose own time is at
 * least their trace points' 2C x calls (one whose trace points cost more than what it
 * tells, an interpreter's helper called several times a step, is weighed like any other
 * candidate: on duktape's fib, keeping perf's top 5 helpers left traced at 2.05x), the
 * functions whose plain self time is at least `protect_pct` of W whatever `keep` is (what
 * perf would put on top, which no summary could name again once excluded), the functions
 * with a loop (EXCLUDE_LOOP) whose plain inclusive time is at least `protect_pct` of W (a
 * step of the chains to most of the time, and one whose own share the traces may not
 * tell: with sampled time, docs/untimed.md, the estimates had put SQLite's
 * sqlite3VdbeExec at 2% of W where perf puts it first, at 12%, and a list trained there
 * excluded it; its inclusive time, bounded by its entries' and exits' windows, was 44%;
 * a loop-free function's own time per call is bounded by its length), the functions
 * of the outer frames at a freeze, whose entries the ring lost, likewise: their time is
 * outside_ns, no function's, and they are not seen called), functions whose calls last
 * `min_incl_ns` or more on average (plain inclusive time of their outermost calls: at the
 * summary's scale of slow moments, ms, a call that long is a step of a chain, and its two
 * trace points cost 2C / min_incl_ns of it at most, 2% for C = 10 ns and 1 us), functions
 * seen fewer than `min_calls` times (too few to judge, too few to save), and names GCC's
 * list cannot hold.
 *
 * Where the trace points are most of T (an interpreter: 93% on duktape's fib), W is a small
 * difference of large numbers: a 1% error in C moves W by (2C x N / W)%, 13% there, and
 * every plain time with it. C, estimated, is bounded by the timer's step (above); given a
 * measured traced / plain ratio R of the same workload, `ratio` fits C to it instead:
 * C = (T - T / R) / 2N.
 *
 * The prediction, with the list: traced, 1 + 2C x (calls left) / W; off (instrumented, the
 * thread not traced), 1 + 2D x (calls left) / W with D a trace point's cost when off (its
 * check, the frame and the inlining the hooks cost): `off_ns`, or by default
 * EXCLUDE_OFF_SHARE of C (docs/exclude.md: 3% to 6% in make bench-real's off and traced
 * measurements of speedtest1 and duktape).
 *
 * GCC matches each entry as a substring of the function's source name, so an entry also
 * excludes every function whose name contains it ("foo" excludes "foobar"): an entry is
 * not picked when it matches a kept function; the others it matches are excluded with it,
 * their calls counted in the saving, their self time in what moves, and each is reported
 * (a function the traces never saw among them cost nothing in the traces, and was not
 * seen to matter: it is excluded, and said so). A name is the symbol up to its first '.'
 * (GCC's clones "foo.isra.0", "foo.lto_priv.0" are the one source function "foo"), and is
 * listable when it is a C identifier and not a C++ mangled name (GCC matches the
 * demangled form).
 */
#ifndef JITT_AGENT_EXCLUDE_H
#define JITT_AGENT_EXCLUDE_H

#include "agent/analysis/symbols.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EXCLUDE_EST_MIN_CALLS 1000    /* short leaf calls a function needs to estimate C */
#define EXCLUDE_EST_MAX_NS    1000    /* longer leaf calls are not used for the estimate */
#define EXCLUDE_SILENCE_NS    1000000 /* a longer gap between two records is not running */
#define EXCLUDE_NAME_MAX      200     /* longer names are not listed */
#define EXCLUDE_OFF_SHARE     0.05    /* D / C when D is not given (above) */
#define EXCLUDE_NONE	      UINT32_MAX

/* Per function (flags). */
#define EXCLUDE_LISTABLE 1u  /* a C identifier GCC's list can hold */
#define EXCLUDE_TRACED	 2u  /* called in the traces */
#define EXCLUDE_KEPT	 4u  /* among the `keep` of most self time */
#define EXCLUDE_EXCLUDED 8u  /* the selection excludes it (listed, or matched by an entry) */
#define EXCLUDE_LISTED	 16u /* an entry of the list */
#define EXCLUDE_PROTECTED 32u /* plain self time at least protect_pct of W: also KEPT */
#define EXCLUDE_OUTER	  128u /* among a thread's outer frames at its freeze */
#define EXCLUDE_COSTLY	  256u /* of the `keep` top, but its trace points cost more than its
				* own time: not kept for that */
#define EXCLUDE_LOOP	  512u /* holds a loop (agent/analysis/loops.h): exclude_opts.loops */

struct exclude_func {
	char *name;	    /* the source name; for unnamed functions, how they are shown */
	uint64_t calls;	    /* in all traces and threads */
	double self_ns;	    /* own time, blocked time left out */
	uint64_t callees;   /* calls it made to traced functions */
	double incl_ns;	    /* running time of its outermost calls, all below included... */
	uint64_t outer;	    /* ...how many they were... */
	uint64_t below;	    /* ...and the calls made below them */
	double plain_ns;    /* self time without trace points (above): set by the selection */
	double plain_incl_ns; /* inclusive time of its outermost calls, likewise */
	double after_ns;    /* predicted traced self time once the selection is excluded */
	double half_ns[2];  /* the halves of its calls' cycles (LEAF, STEP, above) that were
			     * short... */
	uint64_t halves[2]; /* ...their time and count, for the estimate of C */
	unsigned flags;	    /* EXCLUDE_* */
	uint32_t by;	    /* excluded by this entry (an index), or EXCLUDE_NONE */
	uint32_t clash;	    /* not picked: a kept function whose name contains this one's
			     * (an index), or EXCLUDE_NONE */
};

/* One calling-context node of one thread, for predicting where excluded time goes. */
struct exclude_node {
	uint32_t parent; /* index in exclude_set.node; EXCLUDE_NONE for a thread's root */
	uint32_t fn;	 /* index in exclude_set.f; EXCLUDE_NONE for the root */
	uint64_t calls;
	double self_ns;
};

struct exclude_set {
	struct exclude_func *f;
	size_t n, cap;
	struct exclude_node *node;
	size_t nnodes, capnodes;
	double traced_ns;  /* running time: the threads' spans less their blocked time and
			    * their silences */
	double silent_ns;  /* the silences left out... */
	uint64_t silences; /* ...and how many */
	uint64_t calls;	   /* every call, named or not */
	double outside_ns; /* self time outside every call seen whole: the threads' roots, and
			    * the calls their rings began inside... */
	uint64_t outside_callees; /* ...and the calls made from there */
	char outer_shown[128]; /* an outer frame not seen called (the last thread's innermost) */
	/* Where the time outside every call ran, as the stack names it: the frame just outside
	 * the calls open at the freeze (agent_outer_root), the last thread's that has one. */
	char outer_root[128];
	unsigned traces, threads;
	/* A trace point's cost as the traced program measured it (rb_trace.point_ps): the
	 * sum over the traces that carry it, and how many. */
	double point_ns;
	unsigned point_traces;
	/* Loops (agent/analysis/loops.h), from the code of the files exclude_add_code read:
	 * how many, and the functions found to hold a loop. */
	unsigned loop_files;
	size_t loop_funcs;
	/* private */
	uint32_t *hash; /* name -> index in f, open addressing */
	size_t hcap;
};

void exclude_init(struct exclude_set *s);
/*
 * The functions of the program's uninstrumented build (path: the product's binary, or a
 * library of it, unstripped) that hold a loop, read from its code with objdump (loops.h):
 * EXCLUDE_LOOP by name. The plain build, because the instrumented one has a branch back
 * in every function: its trace points' out-of-line blocks jump back into the body. 0,
 * -EINVAL when path is no ELF file, what agent_loops returns, or -ENOMEM.
 */
int exclude_add_code(struct exclude_set *s, const char *path, const char *objdump);
/*
 * Add one trace: every thread's calls, and the names of every function of its modules
 * whose symbols are here (syms, of this trace), which the substring check needs. 0,
 * -EINVAL when a ring cannot be decoded, or -ENOMEM.
 */
int exclude_add_trace(struct exclude_set *s, const struct rb_trace *t, struct agent_symbols *syms);
void exclude_free(struct exclude_set *s);

struct exclude_opts {
	double cost_ns;	    /* C, ns per trace point; 0: estimate it from the traces... */
	double ratio;	    /* ...or, when over 1, the C that makes T / W this measured ratio */
	double budget_pct;  /* the overhead wanted, in % of the uninstrumented time */
	unsigned keep;	    /* the functions of most plain self time never excluded */
	double protect_pct; /* nor those of at least this % of W; 0: none */
	double min_incl_ns; /* candidates' plain inclusive time per call is under this; 0:
			     * any */
	uint64_t min_calls; /* candidates need at least this many calls */
	double off_ns;	    /* D, ns per trace point when off; 0: EXCLUDE_OFF_SHARE of C */
	/* Functions that hold a loop (EXCLUDE_LOOP): candidates after every loop-free one
	 * (LAST, 0, the default), or never (KEEP). */
	enum { EXCLUDE_LOOPS_LAST, EXCLUDE_LOOPS_KEEP } loops;
};

/* Per call, a function's plain self and inclusive time (outermost calls), 0 if none. */
double exclude_self_per_call(const struct exclude_func *f);
double exclude_incl_per_call(const struct exclude_func *f);

struct exclude_result {
	double cost_ns;	       /* C used */
	bool measured;	       /* C is the traces' own measurement (exclude_set.point_ns) */
	uint32_t cost_from[2]; /* the functions C was estimated from (LEAF, STEP); EXCLUDE_NONE:
				* given, or fitted to the ratio */
	double half_ns[2];     /* their mean half cycles */
	double work_ns;	       /* W: the traces' time without trace points */
	double before, after;  /* overhead, trace points / W */
	double off_ns;	       /* D used */
	double off_before, off_after; /* overhead when off, 2D x calls / W */
	double kept_ns;	       /* the kept functions' trace points, 2C x their calls */
	double outside_ns;     /* the set's outside_ns without the trace points */
	uint64_t calls_saved;
	double moved_ns; /* plain self time of the excluded functions, now their callers' */
	uint32_t *list;	 /* entries of the list, in the order picked */
	size_t nlist;
	size_t excluded;   /* functions excluded: listed and matched */
	size_t skip_kept;  /* candidates skipped: their name is part of a kept function's */
	size_t protected;  /* functions protected by protect_pct (kept or not by `keep`)... */
	size_t protected_loops; /* ...and loops protected by their inclusive time */
	size_t looped;	   /* functions with a loop (EXCLUDE_LOOP) excluded (LOOPS_LAST), or
			    * traced ones kept for it (LOOPS_KEEP) */
	size_t shorts;	   /* entries listed once the budget was reached: short (above) */
	size_t costly;	   /* of the `keep` top, not kept: trace points over their own time */
	size_t skip_long;  /* not candidates: their calls last min_incl_ns or more */
	size_t unseen;	   /* functions excluded by substring that the traces never saw */
	size_t unlistable; /* traced functions GCC's list cannot name */
	uint64_t unlistable_calls;
	bool reached; /* after <= budget */
};

/*
 * Pick the list (above). 0; -ERANGE when the traces hold no calls to estimate C from
 * (cost_from[0] is then EXCLUDE_NONE), or when 2C x N is not below T (C, given or
 * estimated, is too large for these traces; cost_ns and cost_from say which); -ENOMEM.
 * Per function, flags, `by` and after_ns describe the selection.
 */
int exclude_select(struct exclude_set *s, const struct exclude_opts *o, struct exclude_result *r);
void exclude_result_free(struct exclude_result *r);

/*
 * The list as GCC options, one -finstrument-functions-exclude-function-list= per line of
 * at most EXCLUDE_PER_LINE names (GCC adds up repeated options): a file for `gcc @FILE`,
 * each line also usable as one argument. Nothing at all when the list is empty. 0, -EIO
 * or -ENOMEM.
 */
#define EXCLUDE_PER_LINE 32
int exclude_write_flags(FILE *out, const struct exclude_set *s, const struct exclude_result *r);
/* The same for any names (`jitt inlined`). 0 or -EIO. */
int exclude_write_names(FILE *out, const char *const *names, size_t n);
/* A name GCC's list can hold (a C identifier: exclude.c says why). */
bool exclude_listable(const char *name);

#endif
