/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/outer.h - a thread's outer frames at its freeze: the functions holding the
 * return addresses its stack had when it answered the stop (ringbuf/stack.h), named,
 * outermost first. They stand for the calls still running whose entries the ring lost when
 * it wrapped (the command's own function, the event loop above it): recovered, not
 * recorded, so they carry no times.
 *
 * A word left on the stack by a call that has returned passes the scan's test too (it
 * points right after a call instruction), and on an interpreter's deep stack such words
 * were half of what the scan found. Where the program's file is here, each word's call
 * instruction is read from it: a direct call names the function it calls, and the next
 * frame inward must be in that function; a word that is not, while a later one is, was
 * left by a returned call and is dropped (agent_outer_chain).
 */
#ifndef JITT_AGENT_OUTER_H
#define JITT_AGENT_OUTER_H

#include "agent/analysis/cct.h"
#include "agent/analysis/symbols.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_OUTER_MAX	 64  /* frames kept, the outermost ones */
#define AGENT_OUTER_NAME 128 /* bytes of a frame's name */

struct agent_outer {
	size_t n;
	/* The innermost frame is running, its trace point did not answer the stop: the
	 * answer came from the runtime on its behalf (a wrapped wait's record, a mark, a
	 * counted call at the ring's end), or the thread was blocked and its ring copied. */
	bool waiting;
	/* The ring's newest record is an entry: the function it entered may have no frame on
	 * the stack yet, as a sled's thunk answers before the function's body runs. */
	bool entered;
	char name[AGENT_OUTER_MAX][AGENT_OUTER_NAME];
	/* Each frame's function as the analysis keys it (agent_func_key): its start where the
	 * symbols name it, else the call's own address ({build-id, offset} either way, for a
	 * server to name). */
	uint64_t key[AGENT_OUTER_MAX];
	/* The function each frame's call called, keyed the same (0: not known): another
	 * frame's, or one that jumped on to another (a tail call) and has no frame. */
	uint64_t callee[AGENT_OUTER_MAX];
};

enum { AGENT_CALL_UNREAD, AGENT_CALL_DIRECT, AGENT_CALL_INDIRECT };
#define AGENT_OUTER_TAILS 8 /* tail calls kept per callee: a function has a few */

/* A return address found on the stack, as the chain check sees it (functions by start). */
struct agent_outer_word {
	uint64_t func;	     /* the function holding the call; 0: no symbol (jitt's trace point
			      * blocks, which the linker puts apart from every function, a PLT) */
	uint64_t home;	     /* for a function's ".cold" part, the function's start; else func */
	uint64_t callee;     /* the function a direct call calls; 0: not known (another call, a
			      * call into a PLT, or the code is not here to read) */
	uint8_t call;	     /* AGENT_CALL_*: the call instruction before the word */
	bool runtime;	     /* func is jitt's own (the rare path that scanned, the wrappers) */
	bool callee_runtime; /* so is callee */
	/* The functions callee jumps to (its tail calls), which then run in its frame's
	 * place: a frame of one of them may follow this word. */
	uint8_t ntails;
	uint64_t tails[AGENT_OUTER_TAILS];
};

/*
 * The frames among the words, outermost first: frame[i] is the function word i stands for,
 * 0 when it is none; the count of frames is returned. Each word's function should be the
 * callee of the word outside it (or a function the callee jumps to): the best-scoring
 * chain of links from the outermost word to the one that called the runtime is kept
 * (outer.c, link_score). A word of no known function matches any callee and
 * stands for it (a trace point's block calls the runtime on behalf of the function it
 * belongs to). jitt's own frames are not frames, and the first one the program's innermost
 * frame calls ends the chain: what follows is the runtime's own stack.
 */
size_t agent_outer_chain(const struct agent_outer_word *w, size_t n, uint64_t *frame);

/* The thread's outer frames; n is 0 when the trace has none for it (a copy, an older
 * file). jitt's own functions (the trace point's rare path that scanned) are left out. */
void agent_outer_frames(struct agent_symbols *s, const struct rb_file_thread *th,
			struct agent_outer *out);

/*
 * The function the time outside every traced call ran in, by the stack: the innermost outer
 * frame outside the calls the ring has open at the freeze (open: their keys, innermost
 * first). Time at the tree's root comes after the calls the ring began inside returned,
 * in the frame that made them, which cannot have returned itself (its exit would be in the
 * ring); so it is still on the stack, just outside the ring's open calls. The innermost
 * frame, whose trace point answered the stop, is skipped when its call is not open (it
 * answered at its exit); not when the runtime answered for it (waiting): a wrapped wait's
 * caller is running. Nor when the ring ends with an entry (entered) whose function is not
 * the innermost frame (or the one outside a stale word there): a sled's thunk answered
 * before that function had a frame, so its caller is the innermost frame, running, and
 * the entered call is not matched further out (where a recursion may hold the function).
 * An open call that jumped to the next one in (a tail call) has no frame: it is matched
 * by the frame that called it. 0 when the stack does not hold the open calls, or holds
 * nothing outside them.
 */
uint64_t agent_outer_root(const struct agent_outer *o, const uint64_t *open, size_t nopen);

/* The functions the tree's root called (its children, the most called first kept). */
#define AGENT_ROOT_CALLS 64
struct agent_root_calls {
	size_t n;
	uint64_t key[AGENT_ROOT_CALLS];
	uint64_t calls[AGENT_ROOT_CALLS];
};
void agent_root_calls(const struct cct *c, struct agent_root_calls *rc);

/*
 * agent_outer_root, weighed by the calls the root made: an untraced function just outside
 * the open calls (a helper the interpreter's loop called to reach the open one) was
 * entered a moment ago, while the window's other calls at the root came from a frame
 * further out (the loop itself). Of the frames from agent_outer_root's outward (16 at
 * most), the innermost whose code reaches three quarters of the root's calls in the trace
 * (by direct calls and jumps, in two steps: through the untraced helpers between), else
 * the one that reaches the most; agent_outer_root's when none reaches any, or the code is
 * not here.
 */
uint64_t agent_outer_root_of(struct agent_symbols *s, const struct agent_outer *o,
			     const uint64_t *open, size_t nopen, const struct agent_root_calls *rc);

#endif
