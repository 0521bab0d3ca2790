/* SPDX-License-Identifier: MIT */
/*
 * GCC's -finstrument-functions calls these at every entry and exit of an instrumented
 * function. With -flto they are inlined into every caller (no call is left: see
 * tests/count-trace-insns.sh); without LTO they are plain calls. musl provides neither.
 */
#include "ringbuf/trace.h"

#define HOOK __attribute__((no_instrument_function, used))

HOOK void __cyg_profile_func_enter(void *fn, void *call_site);
HOOK void __cyg_profile_func_exit(void *fn, void *call_site);

HOOK void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	rb_enter(fn);
}

HOOK void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)fn, (void)call_site;
	rb_exit();
}
