/* SPDX-License-Identifier: MIT */
/* An instrumented shared library, for tests/dyn_main.c: its functions live far from the
 * main program, so their trace points are wide entries (record.h). */
__attribute__((noinline)) int dyn_lib_leaf(int x)
{
	__asm__ __volatile__("");
	return x * 3;
}

__attribute__((noinline)) int dyn_lib_entry(int x)
{
	return dyn_lib_leaf(x) + 1;
}
