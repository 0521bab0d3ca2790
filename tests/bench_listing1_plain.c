/* SPDX-License-Identifier: MIT */
/* Listing 1 uninstrumented, and with the same-run references: the bare call of an empty
 * hook, and the physical limit (one timer read and one 8-byte store into a thread-local
 * array, inlined). */
#include "hal/timer.h"
#include "tests/bench_listing1.h"

#include <stdint.h>
#include <stdlib.h>

LISTING1(listing1_plain, (void)0, (void)0)

__attribute__((noinline)) void bench_empty_hook(void *fn)
{
	__asm__ __volatile__("" ::"r"(fn));
}

LISTING1(listing1_bare_call, bench_empty_hook((void *)listing1_bare_call), bench_empty_hook(0))

/* The least a trace point can do: the counter, one store, an index that wraps. The ring is
 * read by bench_alternatives_positions(): without a reader GCC dropped the stores as dead
 * (this row then measured a timer read and an index update only). A global array (the
 * benchmark has one thread): 512 KiB of TLS would break the boards' -mtls-size=12. */
static uint64_t limit_ring[1 << 16] __attribute__((aligned(64)));
static __thread uint32_t limit_idx;
#define LIMIT_POINT(low)                                                      \
	do {                                                                  \
		uint32_t i_ = limit_idx;                                      \
		limit_ring[i_] = hal_counter_read() << 32 | (uintptr_t)(low); \
		limit_idx = (i_ + 1) & ((1 << 16) - 1);                       \
	} while (0)

LISTING1(listing1_limit, LIMIT_POINT(listing1_limit), LIMIT_POINT(0))

/* The least sampled time can do: the same, the timer read for one record in 32 (the others
 * untimed). Volatile, which keeps the stores without a reader (a volatile store is the same
 * one MOV). */
static volatile uint64_t store_ring[1 << 16] __attribute__((aligned(64)));
static __thread uint32_t store_idx;
#define STORE_POINT(low)                                  \
	do {                                              \
		uint32_t i_ = store_idx;                  \
		store_ring[i_] = (i_ & 31) ? (uint32_t)(uintptr_t)(low) \
					   : hal_counter_read() << 32 | (uint32_t)(uintptr_t)(low); \
		store_idx = (i_ + 1) & ((1 << 16) - 1);   \
	} while (0)

LISTING1(listing1_store, STORE_POINT(listing1_store), STORE_POINT(0))

/*
 * Alternatives to jitt's trace point, for the comparison in bench-trace (the numbers that
 * chose trace.h's design). Each has the same duties: off check (or none), timer, store,
 * wrap, stop check.
 */

/* A: funtrace's design (its trace_data::trace, read in 2026): the ring is aligned to twice
 * its size, so the position can be kept unmasked and masked at the next point: the mask
 * (~size while on) clears the bit a step past the end sets, which is the wrap; a mask of 0
 * makes the position NULL, which is "off" (a pause that another thread may set at any
 * time: the stop). One AND, one branch, then the timer and the store. (funtrace's records
 * are 16 bytes, the address and the whole counter; here they are jitt's 8.) */
struct alt_mask {
	uint64_t *pos;
	uintptr_t mask;
	uint64_t *base;
};
__thread struct alt_mask alt_mask;
#define MASK_POINT(low)                                                                   \
	do {                                                                              \
		struct alt_mask *m_ = &alt_mask;                                          \
		uint64_t *e_ = (uint64_t *)((uintptr_t)m_->pos & m_->mask);               \
		if (e_) {                                                                 \
			*e_ = hal_counter_read() << 32 | (uintptr_t)(low);                \
			m_->pos = e_ + 1;                                                 \
		}                                                                         \
	} while (0)
LISTING1(listing1_alt_mask, MASK_POINT(listing1_alt_mask), MASK_POINT(0))

/* B: a NULL pointer when off, a separate end compare for the wrap and a separate stop
 * flag: what jitt's single compare against `limit` replaces. */
struct alt_two {
	uint64_t *pos, *base, *end;
	uint64_t stop;
};
__thread struct alt_two alt_two;
#define TWO_POINT(low)                                                                    \
	do {                                                                              \
		struct alt_two *t_ = &alt_two;                                            \
		uint64_t *p_ = t_->pos;                                                   \
		if (p_) {                                                                 \
			*p_++ = hal_counter_read() << 32 | (uintptr_t)(low);              \
			if (__builtin_expect(p_ == t_->end, 0))                           \
				p_ = t_->base;                                            \
			t_->pos = p_;                                                     \
			if (__builtin_expect(t_->stop, 0))                                \
				t_->pos = 0;                                              \
		}                                                                         \
	} while (0)
LISTING1(listing1_alt_two, TWO_POINT(listing1_alt_two), TWO_POINT(0))

void bench_alternatives_setup(uint64_t *ring, uint64_t nslots, int on);
void bench_alternatives_setup(uint64_t *ring, uint64_t nslots, int on)
{
	/* funtrace's ring: aligned to twice its size (posix_memalign, as funtrace does). */
	static uint64_t *mask_ring;
	size_t bytes = nslots * sizeof(uint64_t);
	if (!mask_ring && posix_memalign((void **)&mask_ring, 2 * bytes, bytes))
		abort();
	alt_mask = (struct alt_mask){ mask_ring, on ? ~(uintptr_t)bytes : 0, mask_ring };
	alt_two = (struct alt_two){ on ? ring : 0, ring, ring + nslots, 0 };
}

void bench_alternatives_positions(struct bench_positions *out)
{
	out->limit = limit_idx;
	out->limit_newest = limit_ring[(limit_idx - 1) & ((1 << 16) - 1)];
	out->store = store_idx;
	out->mask = (uint64_t)(alt_mask.pos - alt_mask.base); /* may be one past: the wrap */
	out->two = alt_two.pos ? (uint64_t)(alt_two.pos - alt_two.base) : 0;
}
