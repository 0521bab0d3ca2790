/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/outer.h - a thread's outer frames at its freeze: the functions holding the
 * return addresses its stack had when it answered the stop (ringbuf/stack.h), named,
 * outermost first. They stand for the calls still running whose entries the ring lost when
 * it wrapped (the command's own function, the event loop above it): recovered, not
 * recorded, so they carry no times, and a word left over on the stack can add a frame
 * that has returned.
 */
#ifndef JITT_AGENT_OUTER_H
#define JITT_AGENT_OUTER_H

#include "agent/analysis/symbols.h"

#include <stddef.h>
#include <stdint.h>

#define AGENT_OUTER_MAX	 64  /* frames kept, the outermost ones */
#define AGENT_OUTER_NAME 128 /* bytes of a frame's name */

struct agent_outer {
	size_t n;
	char name[AGENT_OUTER_MAX][AGENT_OUTER_NAME];
	/* Each frame's function as the analysis keys it (agent_func_key): its start where the
	 * symbols name it, else the call's own address ({build-id, offset} either way, for a
	 * server to name). */
	uint64_t key[AGENT_OUTER_MAX];
};

/* The thread's outer frames; n is 0 when the trace has none for it (a copy, an older
 * file). jitt's own functions (the trace point's rare path that scanned) are left out. */
void agent_outer_frames(struct agent_symbols *s, const struct rb_file_thread *th,
			struct agent_outer *out);

/*
 * The function the time outside every traced call ran in, by the stack: the innermost outer
 * frame outside the calls the ring has open at the freeze (open: their keys, innermost
 * first). Time at the tree's root comes after the calls the ring began inside returned,
 * in the frame that made them, which cannot have returned itself (its exit would be in the
 * ring); so it is still on the stack, just outside the ring's open calls. 0 when the stack
 * does not hold them all, or holds nothing outside them. A word left by a returned call
 * can name a frame that has returned (outer.h's caveat).
 */
uint64_t agent_outer_root(const struct agent_outer *o, const uint64_t *open, size_t nopen);

#endif
