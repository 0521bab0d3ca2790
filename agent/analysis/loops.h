/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/loops.h - which functions of a binary hold a loop, read from its machine
 * code (objdump -d, the build machine's or the one OBJDUMP names: GNU objdump reads every
 * architecture jitt builds for when it is the target's, ${CROSS_COMPILE}objdump).
 *
 * What it is for (`jitt exclude`, docs/exclude.md): a loop-free function's time per call is
 * bounded by its length, so a short one measured short on one workload stays short on
 * another; a function with a loop takes as long as its input makes it (a hash chain walked,
 * a property looked up along a prototype chain), and a list trained on one workload must
 * not drop it because it was cheap there.
 *
 * A loop is a cycle in the function's control-flow graph: each instruction goes on to the
 * next, to its branch's target in the function, or both, or leaves (a return, a tail
 * call). A branch back alone is no loop: GCC places shared exit blocks and cold paths
 * before the code that jumps to them (on SQLite's speedtest1, 1,135 functions have a
 * branch back and 674 a cycle). A function's cold part ("foo.cold") is one graph with it.
 * Where the code cannot say, the answer is "a loop", the safe side (the function stays
 * traced): an indirect jump (a switch's table), a branch into the middle of an instruction.
 */
#ifndef JITT_AGENT_LOOPS_H
#define JITT_AGENT_LOOPS_H

#include <stdbool.h>
#include <stddef.h>

/* Called once per function that holds a loop, by its name without a cold part's suffix
 * ("foo" for "foo" and "foo.cold"; "foo.part.0" stays); non-zero stops the reading and is
 * returned. */
typedef int (*agent_loop_fn)(void *ctx, const char *name);

/*
 * Disassemble the ELF file open on fd (a file the caller checked: it is read through that
 * descriptor, /proc/self/fd/N, so nothing can swap it in between) with objdump, the program
 * of that name found in PATH, and call fn for each function with a loop. 0; -ENOENT when
 * objdump could not be run, -EIO when it failed (an architecture it does not know),
 * -ENOMEM, or what fn returned.
 */
int agent_loops(int fd, const char *objdump, agent_loop_fn fn, void *ctx);

/* What an instruction does to the flow of control. */
enum agent_flow {
	AGENT_FLOW_NEXT,   /* on to the next instruction (a call; a branch out of the
			    * function, when not taken) */
	AGENT_FLOW_BRANCH, /* to its target in the function, or on to the next */
	AGENT_FLOW_JUMP,   /* to its target in the function only */
	AGENT_FLOW_END,	   /* out of the function: a return, a tail call */
	AGENT_FLOW_ANY,	   /* an indirect jump: anywhere, as far as the code says */
};

struct agent_insn {
	unsigned long long at, to; /* its address; the target of a BRANCH or JUMP */
	enum agent_flow flow;
	unsigned part; /* which symbol of the function it is in (falls through only there) */
};

enum agent_line_kind { AGENT_LINE_OTHER, AGENT_LINE_FUNC, AGENT_LINE_INSN };

/*
 * One line of `objdump -d --no-show-raw-insn` output, in the function whose symbol is func
 * ("" before the first). FUNC: "ADDR <name>:" begins a function, its name into name (up
 * to size bytes). INSN: an instruction of func, into *insn (part 0). OTHER: anything else.
 */
enum agent_line_kind agent_code_line(const char *line, const char *func, char *name, size_t size,
				     struct agent_insn *insn);

/*
 * Whether the instructions of one function, sorted by address, hold a cycle (or an
 * indirect jump, or a target that is no instruction of theirs: above). seen is n bytes of
 * scratch.
 */
bool agent_code_loops(const struct agent_insn *insn, size_t n, unsigned char *seen,
		      size_t *stack);

/* The length of name without a cold part's suffix (".cold", ".cold.N"). */
size_t agent_code_base(const char *name);

#endif
