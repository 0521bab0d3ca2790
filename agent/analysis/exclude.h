/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/exclude.h - which functions to build without trace points: the model
 * behind `jitt exclude` (docs/exclude.md has the whole argument and the measurements).
 *
 * Cost model. Every call of an instrumented function runs two trace points, each costing
 * C ns on the device, so the traces' T ns of running time (each thread's span less its
 * blocked time and its silences, below) hold about 2C x N of trace points for their N
 * calls, and the program without them would have taken W = T - 2C x N. The overhead is
 * 2C x N / W; excluding a function f saves 2C x calls(f) of it. What the saving costs is
 * f's own (self) time, which the summary then shows as its caller's: the cheapest
 * functions to lose are those with the least self time per call, so candidates are taken
 * in that order, and picking stops once the overhead left is at most the budget (in % of
 * W).
 *
 * C comes from --cost, or from the traces. A call's cycle, from one record to the next,
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
 * What is never picked: the `keep` functions of most self time (the summary's top list:
 * excluding them would change what the summary says first), functions seen fewer than
 * `min_calls` times (too few to judge, too few to save), and names GCC's list cannot hold.
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
#define EXCLUDE_NONE	      UINT32_MAX

/* Per function (flags). */
#define EXCLUDE_LISTABLE 1u  /* a C identifier GCC's list can hold */
#define EXCLUDE_TRACED	 2u  /* called in the traces */
#define EXCLUDE_KEPT	 4u  /* among the `keep` of most self time */
#define EXCLUDE_EXCLUDED 8u  /* the selection excludes it (listed, or matched by an entry) */
#define EXCLUDE_LISTED	 16u /* an entry of the list */

struct exclude_func {
	char *name;	    /* the source name; for unnamed functions, how they are shown */
	uint64_t calls;	    /* in all traces and threads */
	double self_ns;	    /* own time, blocked time left out */
	double after_ns;    /* predicted self time once the selection is excluded */
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
	unsigned traces, threads;
	/* private */
	uint32_t *hash; /* name -> index in f, open addressing */
	size_t hcap;
};

void exclude_init(struct exclude_set *s);
/*
 * Add one trace: every thread's calls, and the names of every function of its modules
 * whose symbols are here (syms, of this trace), which the substring check needs. 0,
 * -EINVAL when a ring cannot be decoded, or -ENOMEM.
 */
int exclude_add_trace(struct exclude_set *s, const struct rb_trace *t, struct agent_symbols *syms);
void exclude_free(struct exclude_set *s);

struct exclude_opts {
	double cost_ns;	    /* C, ns per trace point; 0: estimate it from the traces */
	double budget_pct;  /* the overhead wanted, in % of the uninstrumented time */
	unsigned keep;	    /* the functions of most self time never excluded */
	uint64_t min_calls; /* candidates need at least this many calls */
};

struct exclude_result {
	double cost_ns;	       /* C used */
	uint32_t cost_from[2]; /* the functions C was estimated from (LEAF, STEP); EXCLUDE_NONE:
				* given */
	double half_ns[2];     /* their mean half cycles */
	double work_ns;	       /* W: the traces' time without trace points */
	double before, after;  /* overhead, trace points / W */
	uint64_t calls_saved;
	double moved_ns; /* self time of the excluded functions, now their callers' */
	uint32_t *list;	 /* entries of the list, in the order picked */
	size_t nlist;
	size_t excluded;   /* functions excluded: listed and matched */
	size_t skip_kept;  /* candidates skipped: their name is part of a kept function's */
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
