/* SPDX-License-Identifier: MIT */
/*
 * Hubble's Listing 1 (section 8.1) in C: a self-recursive function of depth 10 doing `work`
 * iterations of a multiply and a divide. Each bench_listing1_*.c instantiates it once, built
 * differently (tests/Kbuild), so the variants are measured side by side in one program.
 * ENTER and EXIT are what the variant adds at the function's entry and exit.
 */
#include <stdint.h>

#define LISTING1(name, ENTER, EXIT)                                     \
	__attribute__((noinline)) long name(int depth, int work, long sum) \
	{                                                               \
		ENTER;                                                  \
		for (int i = 0; i < work; i++) {                        \
			sum *= i - 1;                                   \
			sum /= i + 2;                                   \
		}                                                       \
		if (depth > 1)                                          \
			sum = name(depth - 1, work, sum);               \
		__asm__ __volatile__("" : "+r"(sum));                   \
		EXIT;                                                   \
		return sum;                                             \
	}

long listing1_plain(int depth, int work, long sum);
long listing1_traced(int depth, int work, long sum);
long listing1_bare_call(int depth, int work, long sum);
long listing1_limit(int depth, int work, long sum);
long listing1_store(int depth, int work, long sum);
long listing1_sampled(int depth, int work, long sum);
extern const int bench_have_sampled;
long listing1_alt_mask(int depth, int work, long sum);
long listing1_alt_two(int depth, int work, long sum);
void bench_alternatives_setup(uint64_t *ring, uint64_t nslots, int on);
/* Where the references' indexes are (limit: modulo 2^16, mask and two: modulo nslots), and
 * the newest record of the physical limit's ring: for checking that each recorded. */
struct bench_positions {
	uint64_t limit, limit_newest, mask, two, store;
};
void bench_alternatives_positions(struct bench_positions *out);
