/* SPDX-License-Identifier: MIT */
/* Listing 1 uninstrumented, and with the same-run references: the bare call of an empty
 * hook, and the physical limit (one timer read and one 8-byte store into a thread-local
 * array, inlined). */
#include "hal/timer.h"
#include "tests/bench_listing1.h"

#include <stdint.h>

LISTING1(listing1_plain, (void)0, (void)0)

__attribute__((noinline)) void bench_empty_hook(void *fn)
{
	__asm__ __volatile__("" ::"r"(fn));
}

LISTING1(listing1_bare_call, bench_empty_hook((void *)listing1_bare_call), bench_empty_hook(0))

/* The least a trace point can do: the counter, one store, an index that wraps. */
static __thread uint64_t limit_ring[1 << 16] __attribute__((aligned(64)));
static __thread uint32_t limit_idx;
#define LIMIT_POINT(low)                                                      \
	do {                                                                  \
		uint32_t i_ = limit_idx;                                      \
		limit_ring[i_] = hal_counter_read() << 32 | (uintptr_t)(low); \
		limit_idx = (i_ + 1) & ((1 << 16) - 1);                       \
	} while (0)

LISTING1(listing1_limit, LIMIT_POINT(listing1_limit), LIMIT_POINT(0))
