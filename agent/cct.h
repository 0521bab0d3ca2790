/* SPDX-License-Identifier: MIT */
/*
 * agent/cct.h - the calling-context tree of one thread's decoded events (IntroPerf
 * section 3.2, Alg. 1): a node per distinct call path, whose index is the path id. Per node:
 * calls, inclusive time, self time, time blocked (between a wait-begin and its wait-end,
 * which is not the function's own work), and the longest single instance.
 *
 * A wrapped ring starts inside calls whose entries were overwritten: they become frames of
 * an unknown function opened at the first event, and a ring frozen inside calls closes them
 * at the last one. Either way only the known part is counted, and the node says how many of
 * its instances were cut (`truncated`).
 */
#ifndef JITT_AGENT_CCT_H
#define JITT_AGENT_CCT_H

#include "ringbuf/decode.h"

#include <stddef.h>
#include <stdint.h>

#define CCT_ROOT UINT64_MAX          /* the root's function key */
#define CCT_UNKNOWN (UINT64_MAX - 1) /* a function whose entry is not in the ring */
#define CCT_NONE UINT32_MAX

struct cct_node {
	uint64_t func; /* the caller's function key (cct_build's key callback) */
	uint32_t parent, first_child, next_sibling, depth;
	uint64_t calls, incl, self, blocked, longest; /* timer ticks */
	uint64_t truncated; /* instances cut by the ring's start or end */
};

struct cct {
	struct cct_node *node; /* node[0] is the root */
	uint32_t n, cap;
	uint32_t *hash; /* (parent, func) -> node, open addressing */
	uint32_t hcap;
	uint64_t t0, t1; /* first and last event */
};

/* A function's key for an entry event; NULL uses the event's id. */
typedef uint64_t (*cct_key_fn)(void *ctx, const struct rb_event *e);

/* Build the tree of n events (oldest first). 0 or -ENOMEM. */
int cct_build(struct cct *c, const struct rb_event *ev, size_t n, cct_key_fn key, void *ctx);
void cct_free(struct cct *c);

/* Per function, over all its calling contexts. */
struct cct_func {
	uint64_t func, calls, self, blocked, truncated;
};

/* Functions by self time, largest first, into a malloc'd array; the count in *n. */
int cct_functions(const struct cct *c, struct cct_func **out, size_t *n);

#endif
