/* SPDX-License-Identifier: MIT */
/*
 * GCC's -finstrument-functions calls these at every entry and exit of an instrumented
 * function. With -flto they are inlined into every caller (no call is left: see
 * tests/count-trace-insns.sh); without LTO they are plain calls. musl provides neither.
 */
#include "ringbuf/trace.h"

/* Hidden: these are the executable's own hooks, and write the low half of the address
 * (trace.h, rb_enter), exact only for the executable's functions. A shared library that
 * must bind them (the program exported them with -rdynamic, say) would record ids the
 * decoder cannot place; it links hooks_dso.c instead (docs/oem.md).
 *
 * always_inline: the hook's body (~12 instructions) is past GCC's size limit for
 * inlining across units, measured with gcc 12 -O2 -flto: without it every hook stayed a
 * call. `inline` with the extern declarations below still emits the external definitions
 * that a build without LTO calls. */
#define HOOK                                                                               \
	inline __attribute__((no_instrument_function, always_inline, visibility("hidden")))

extern void __cyg_profile_func_enter(void *fn, void *call_site);
extern void __cyg_profile_func_exit(void *fn, void *call_site);

/* clang's trace point is one asm statement where the architecture has one (RB_ARCH_POINT,
 * trace_x86_64.h says why); GCC's and the rest are rb_put1 (trace.h). The hooks of
 * libjitt-sampled.a (RB_TIME_SAMPLED) time about one record in 32 (rb_point_sampled). */
#if defined(RB_TIME_SAMPLED)
#if !defined(RB_ARCH_POINT_SAMPLED)
#error "sampled time (RB_TIME_SAMPLED) has a trace point on x86_64 only"
#endif
#define RB_HOOK_ENTER(fn) rb_point_sampled((uintptr_t)(fn))
#define RB_HOOK_EXIT() rb_point_sampled(RB_EXIT)
#elif defined(__clang__) && defined(RB_ARCH_POINT)
#define RB_HOOK_ENTER(fn) rb_point((uintptr_t)(fn))
#define RB_HOOK_EXIT() rb_point(RB_EXIT)
#else
#define RB_HOOK_ENTER(fn) rb_enter(fn)
#define RB_HOOK_EXIT() rb_exit()
#endif

HOOK void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	RB_HOOK_ENTER(fn);
}

HOOK void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)fn, (void)call_site;
	RB_HOOK_EXIT();
}
