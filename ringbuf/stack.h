/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/stack.h - the outer frames of a frozen thread, found on its own stack.
 *
 * A ring that wrapped inside a long call has lost the entries of the calls still running:
 * the command's own function and everything above it. When the traced thread answers the
 * stop (ring.c, settle), it scans its stack, from where it stands to the stack's top, for
 * the return addresses of its open calls: words that point into the main program's code
 * right after a call instruction. The trace file keeps them (docs/trace-format.md) and the
 * summary names the functions holding them, marked as recovered. A word left over from a
 * call that has returned passes the test too; the analysis drops those by the program's
 * own calls, each frame's call landing in the next (agent/analysis/outer.h).
 */
#ifndef JITT_RINGBUF_STACK_H
#define JITT_RINGBUF_STACK_H

#include <stddef.h>
#include <stdint.h>

#define RB_STACK_MAX 128 /* return addresses kept per thread */

/* Where the calling thread's stack ends (its highest address). 0 or a negative errno. */
int rb_stack_top(uintptr_t *top);

/*
 * Return addresses between sp and top (at most 1 MiB of stack) that fall in [text_lo,
 * text_hi) right after a call instruction, innermost first, at most max of them. Reads
 * only the calling thread's own stack and the program's own code.
 */
size_t rb_stack_scan(uintptr_t sp, uintptr_t top, uintptr_t text_lo, uintptr_t text_hi,
		     uintptr_t *out, size_t max);

#endif
