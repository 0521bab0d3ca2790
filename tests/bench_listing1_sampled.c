/* SPDX-License-Identifier: MIT */
/* Listing 1 with the sampled-time trace point (ringbuf/trace_x86_64.h, rb_point_sampled),
 * written where libjitt-sampled.a's hooks put it: at the entry with the function's address,
 * at the exit with RB_EXIT. Where the board has no sampled trace point (not x86_64), the
 * plain function, and bench-trace leaves the row out. */
#include "ringbuf/trace.h"
#include "tests/bench_listing1.h"

#if defined(RB_ARCH_POINT_SAMPLED)
const int bench_have_sampled = 1;
LISTING1(listing1_sampled, rb_point_sampled((uintptr_t)listing1_sampled),
	 rb_point_sampled(RB_EXIT))
#else
const int bench_have_sampled = 0;
LISTING1(listing1_sampled, (void)0, (void)0)
#endif
