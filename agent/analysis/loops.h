/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/loops.h - which functions of a binary hold a loop, read from its machine
 * code: a branch back to an earlier address of the same function (objdump -d, the build
 * machine's or the one OBJDUMP names: GNU objdump reads every architecture jitt builds for
 * when it is the target's, ${CROSS_COMPILE}objdump).
 *
 * What it is for (`jitt exclude`, docs/exclude.md): a loop-free function's time per call is
 * bounded by its length, so a short one measured short on one workload stays short on
 * another; a function with a loop takes as long as its input makes it (a hash chain walked,
 * a property looked up along a prototype chain), and a list trained on one workload must
 * not drop it because it was cheap there. A backward branch that is no loop (a shared exit
 * block placed before the branch) only keeps a function traced: the safe side.
 */
#ifndef JITT_AGENT_LOOPS_H
#define JITT_AGENT_LOOPS_H

#include <stddef.h>

/* Called once per function (its symbol's name: "foo", "foo.part.0") that holds a loop;
 * non-zero stops the reading and is returned. */
typedef int (*agent_loop_fn)(void *ctx, const char *name);

/*
 * Disassemble the ELF file open on fd (a file the caller checked: it is read through that
 * descriptor, /proc/self/fd/N, so nothing can swap it in between) with objdump, the program
 * of that name found in PATH, and call fn for each function with a loop. 0; -ENOENT when
 * objdump could not be run, -EIO when it failed (an architecture it does not know), or what
 * fn returned.
 */
int agent_loops(int fd, const char *objdump, agent_loop_fn fn, void *ctx);

/*
 * One line of `objdump -d --no-show-raw-insn` output, for agent_loops (and its tests):
 * *func holds the current function's name (up to size bytes, set by a "ADDR <name>:"
 * header). Returns 1 when the line is a branch back into the current function (not a call:
 * recursion is no loop), else 0.
 */
int agent_loop_line(const char *line, char *func, size_t size);

#endif
