/* SPDX-License-Identifier: MIT */
/* The main program's instrumented function in tests/dyn_main.c's test. */
int dyn_lib_entry(int x);
int dyn_main_work(int x);

__attribute__((noinline)) int dyn_main_work(int x)
{
	return dyn_lib_entry(x) + 2;
}
