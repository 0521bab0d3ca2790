/* SPDX-License-Identifier: MIT */
/*
 * Functions compiled with -finstrument-functions (tests/Kbuild), for the ring tests: a
 * call tree whose shape the tests know exactly.
 */
#include "tests/traced.h"

__attribute__((noinline)) int traced_leaf(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x + 1;
}

__attribute__((noinline)) int traced_mid(int x)
{
	return traced_leaf(x) + traced_leaf(x + 1);
}

__attribute__((noinline)) int traced_top(int x)
{
	return traced_mid(x) * 2;
}

__attribute__((noinline)) int traced_recurse(int depth)
{
	return depth <= 0 ? 0 : 1 + traced_recurse(depth - 1);
}

/* An empty function: everything the instrumented build adds to it is the two trace points
 * (tests/count-trace-insns.sh compares it with untraced_empty). The NOP marks where the
 * entry trace point ends and the exit one begins. */
__attribute__((noinline)) void traced_empty(void)
{
	__asm__ __volatile__("nop");
}
