/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/cct.h - the calling-context tree of one thread's decoded events (IntroPerf
 * section 3.2, Alg. 1): a node per distinct call path, whose index is the path id. Per node:
 * calls, inclusive time, self time (IntroPerf's top-down normalisation, Alg. 3: inclusive
 * minus the children's), time blocked (asleep: see below), time preempted (off its CPU
 * while runnable: another task had the CPU), neither of which is the function's own work,
 * and the longest single instance. Self time is running time only: inclusive minus
 * children, blocked and preempted.
 *
 * Blocked time depends on what the trace knows. With the kernel's switch records for the
 * thread (cct_opts.switches: RB_EV_OFF_CPU events), it is the time the thread was off its
 * CPU asleep, inside a wrapped blocking call or not: a non-blocking read() that returns at
 * once is a few microseconds of running in the kernel, not blocked. Without them, the
 * whole time between a wait-begin and its wait-end is taken as blocked (the wrapper's
 * records are all there is to go by).
 *
 * Every figure is kept in up to three lanes: the whole trace, and two spans of time given
 * by the caller (the summary uses the anomaly window and the baseline of normal frames).
 * A call is counted in a lane for the part of it that falls inside the lane's span, so a
 * frame that began before the window counts only its time inside.
 *
 * A wrapped ring starts inside calls whose entries were overwritten: they become frames of
 * an unknown function opened at the first event, and a ring frozen inside calls closes them
 * at the last one. Either way only the known part is counted, and the node says how many of
 * its instances were cut at the start (`truncated`) and were still running at the freeze
 * (`running`).
 *
 * The root (node 0) is a frame too: time off the CPU and waits outside every known call
 * (between top-level calls, or after the calls the ring begins inside returned) are its
 * own. cct_lane_offcpu sums a lane over every node, the root included: the one place a
 * thread's blocked and preempted time in a span comes from.
 *
 * Events are fed one at a time (cct_add), straight from the streaming decoder.
 */
#ifndef JITT_AGENT_CCT_H
#define JITT_AGENT_CCT_H

#include "ringbuf/decode.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CCT_ROOT    UINT64_MAX	     /* the root's function key */
#define CCT_UNKNOWN (UINT64_MAX - 1) /* a function whose entry is not in the ring */
#define CCT_NONE    UINT32_MAX

enum cct_lane { CCT_WHOLE, CCT_WINDOW, CCT_BASE, CCT_LANES };

/* Sorted, disjoint intervals [start, end) of timer ticks: what a lane counts. */
struct cct_span {
	size_t n;
	uint64_t *start, *end;
	uint64_t *before; /* total length of the intervals before each one */
};

/* 0 or -ENOMEM. Intervals must be sorted and disjoint; empty ones are dropped. */
int cct_span_set(struct cct_span *s, const uint64_t *start, const uint64_t *end, size_t n);
void cct_span_free(struct cct_span *s);
uint64_t cct_span_total(const struct cct_span *s);

struct cct_stat {
	uint32_t calls;
	/* Instances whose entry the ring overwrote, and instances still running at the freeze.
	 * Each is 0 or 1: a node is one call path, and both kinds are frames of one stack (the
	 * first event's, the last event's), so 16 bits keep the node small. */
	uint16_t truncated, running;
	/* The calls its counted calls' records stood for beyond themselves (record.h,
	 * RB_CALLED): calls counts records, one trace point each, which the trace points' cost
	 * goes by; calls + more is how many calls ran. Their time is in incl and self. */
	uint32_t more;
	uint64_t incl, self, blocked, preempted; /* timer ticks */
	/* Time the node's self time still owes its counted callees (record.h, RB_CALLED): a
	 * counted call's record stands for more calls than the one placed, which ran inside
	 * this node's time; taken out of its later self time as it comes. */
	uint64_t owed;
};

struct cct_node {
	uint64_t func; /* the function's key (cct_opts.key) */
	uint32_t parent, first_child, next_sibling, depth;
	uint64_t longest; /* the longest single instance, whole trace */
	struct cct_stat s[CCT_LANES];
};

/*
 * One link of a longest call chain (Hubble section 7), in the window lane: the instance's
 * node (its path), its time inside the window, and the next link: its longest child, as
 * long as that child outlasts the instance's own time (self, blocked or preempted); where
 * the own time dominates, the chain ends: that frame is where the time went.
 */
struct cct_link {
	uint32_t node;
	uint64_t start, incl, self, blocked, preempted;
	bool truncated; /* its entry overwritten: the ring starts inside it */
	bool running;	/* still running when the ring was frozen */
	struct cct_link *next;
};

/* A function's key for an entry event; NULL uses the event's id. */
typedef uint64_t (*cct_key_fn)(void *ctx, const struct rb_event *e);

/* One wait as the tree counts it: from its wait-begin (or, with that record lost, the
 * thread's previous event) to its wait-end, the next wait-begin (its wait-end lost) or the
 * return of the call that waited, whichever comes first. */
struct cct_wait {
	uint64_t begin, end;
	uint32_t key;  /* the wait-begin's object (the wait-end's when the begin was lost) */
	uint32_t node; /* the frame that waited (0: outside every known call) */
	bool open;     /* still waiting when the ring was frozen */
};
typedef void (*cct_wait_fn)(void *ctx, const struct cct_wait *w);

struct cct_opts {
	cct_key_fn key;
	void *ctx;
	const struct cct_span *span[CCT_LANES]; /* [CCT_WHOLE] is ignored; NULL: nothing */
	unsigned chains; /* keep the K longest chains of top-level calls in the window lane */
	/* The events hold the kernel's switch records for this thread (RB_EV_OFF_CPU): blocked
	 * is the time off the CPU asleep, in a wait or not (above). */
	bool switches;
	/* Where some were lost, the first of them (ticks): the kernel's ring keeps the last
	 * switches only, and a wait that began before it counts whole, as without them
	 * (jank-sim's hang held more of its ring than 1,024 switch records reach: its earlier
	 * waits, 350 ms, were counted as time run). 0: they hold the whole trace. */
	uint64_t switches_from;
	cct_wait_fn on_wait; /* each wait when it ends, with wait_ctx; NULL: none */
	void *wait_ctx;
};

struct frame;
struct cct_slot {
	uint64_t func;
	uint32_t parent, node;
};

/* Per node, the callee guessed next (cct.c, callee). */
struct cct_next {
	uint64_t func;	   /* the node's function (a copy: checking a guess leaves the node be) */
	uint32_t guess[2]; /* [0]: what the node's frames called first; [1]: what the parent
			    * called after this node */
};

/* The lanes' positions over the piece of time [lo, hi): (t & mask) + add (cct.c). */
struct cct_clock {
	uint64_t lo, hi;
	uint64_t mask[CCT_LANES], add[CCT_LANES];
};

struct cct {
	struct cct_node *node; /* node[0] is the root */
	uint32_t n, cap;
	uint64_t t0, t1; /* first and last event */
	uint64_t events;
	struct cct_link **chain; /* the longest chains, longest first */
	unsigned nchains;
	/* private */
	struct cct_opts o;
	struct cct_slot *hash; /* (parent, func) -> node, open addressing */
	uint32_t hcap;
	struct cct_next *next; /* per node */
	struct cct_clock clock;
	unsigned lanes; /* bit per lane that counts: the whole trace, and those with a span */
	bool unsorted;	/* a span's intervals overlap or are out of order (a corrupt trace) */
	struct frame *stack;
	size_t sp, stack_cap;
	uint64_t open_at_start;
	uint32_t last_exit; /* cct_last_exit */
	size_t cursor[CCT_LANES]; /* per lane: the interval time has reached */
	bool failed;
};

/* Start a tree; open_at_start is how many calls the ring begins inside (the decoder's
 * count). 0 or -ENOMEM. */
int cct_init(struct cct *c, const struct cct_opts *o, uint64_t open_at_start);
/* The next event (oldest first). 0 or -ENOMEM (the tree is then unusable). */
int cct_add(struct cct *c, const struct rb_event *e);
/* The next n events, as cct_add each: the fast way for a batch from the decoder. */
int cct_add_n(struct cct *c, const struct rb_event *ev, size_t n);
/* Close the calls still open at `end` (the decoder's end_ts: a copied ring's calls ran
 * until its freeze), or at the last event when that is later. 0 or -ENOMEM. */
int cct_finish(struct cct *c, uint64_t end);
void cct_free(struct cct *c);
/* The node of the innermost call open now (0, the root, when none). */
uint32_t cct_top(const struct cct *c);
/* The node of the call whose exit is the last record so far, when the last was an exit (0
 * when an entry was, or a wait's, a mark's or a jump's record, which the runtime writes for
 * the running frame; or none). A ring stopped at an exit's trace point ends there, with
 * that call still on the thread's stack. */
uint32_t cct_last_exit(const struct cct *c);
/* The functions of the calls open now, innermost first, the last exit's first when there
 * is one (cct_last_exit), into funcs[max]: how many, or SIZE_MAX when there are more than
 * max (before cct_finish, which closes them; what agent_outer_root matches). */
size_t cct_open_calls(const struct cct *c, uint64_t *funcs, size_t max);
/* A lane's blocked and preempted ticks over the whole tree, the root included (after
 * cct_finish). */
void cct_lane_offcpu(const struct cct *c, enum cct_lane lane, uint64_t *blocked,
		     uint64_t *preempted);

/* The whole tree of n events at once, whole-trace lane only. 0 or -ENOMEM. */
int cct_build(struct cct *c, const struct rb_event *ev, size_t n, cct_key_fn key, void *ctx);

/* Per function, over all its calling contexts, in one lane. */
struct cct_func {
	uint64_t func, calls, self, blocked, preempted, truncated, running;
	uint64_t more;	  /* calls beyond the records (cct_stat.more) */
	uint64_t callees; /* calls it made to traced functions, in the lane, as records */
};

/* Functions of a lane by self time, largest first, into a malloc'd array (only those
 * called in the lane); the count in *n. 0 or -ENOMEM. */
int cct_functions(const struct cct *c, enum cct_lane lane, struct cct_func **out, size_t *n);

#endif
