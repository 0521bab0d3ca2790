/* SPDX-License-Identifier: MIT */
/* Listing 1 built with -finstrument-functions (tests/Kbuild): jitt's trace points. */
#include "tests/bench_listing1.h"

LISTING1(listing1_traced, (void)0, (void)0)
