/* SPDX-License-Identifier: MIT */
/* Listing 1 for the peers' builds (tests/bench-peers.sh): compiled twice, as
 * listing1_plain with no instrumentation and as listing1_traced with the tracer's flags. */
#include "tests/bench_listing1.h"

#ifndef LISTING1_NAME
#error "build with -DLISTING1_NAME=listing1_plain or listing1_traced"
#endif

long LISTING1_NAME(int depth, int work, long sum);
LISTING1(LISTING1_NAME, (void)0, (void)0)
