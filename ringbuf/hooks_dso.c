/* SPDX-License-Identifier: MIT */
/*
 * The trace hooks of an instrumented shared library (libjitt-dso.a, linked into the .so):
 * GCC's -finstrument-functions calls these in the library's functions, and they hand the
 * function's address to the program's libjitt, which records a wide entry (its absolute
 * address; ring.c, rb_dso_enter). Hidden, so the library's calls bind here and not to the
 * program's own hooks (hooks.c), which record the low half of an executable's addresses,
 * nor to glibc's empty ones.
 *
 * The program's functions are weak references: a library loaded by a program that does not
 * link libjitt runs untraced instead of failing to load. A call costs a call through the
 * PLT and the rare path's two slots: shared libraries are traced correctly, the
 * executable's code is where the trace point is cheapest (docs/oem.md).
 */
#include "ringbuf/ring.h"

extern void __cyg_profile_func_enter(void *fn, void *call_site);
extern void __cyg_profile_func_exit(void *fn, void *call_site);

#pragma weak rb_dso_enter
#pragma weak rb_dso_exit

#define DSO_HOOK __attribute__((no_instrument_function, visibility("hidden")))

DSO_HOOK void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	if (rb_dso_enter)
		rb_dso_enter(fn);
}

DSO_HOOK void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)fn, (void)call_site;
	if (rb_dso_exit)
		rb_dso_exit();
}
