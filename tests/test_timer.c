/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "harness.h"
#include "hal/cpu.h"
#include "hal/timer.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

TEST(timer_init_chooses_a_sane_source)
{
	CHECK_EQ_INT(hal_timer_init(), 0);
	const struct hal_timer_info *t = hal_timer_info();
	printf("    source %s, %llu Hz: %s\n", hal_timer_source_name(t->source),
	       (unsigned long long)t->freq_hz, t->reason);
	CHECK(t->freq_hz >= 1000000 && t->freq_hz <= 10000000000ull);
	CHECK_EQ_U64(hal_timer_freq(), t->freq_hz);
	CHECK(t->reason[0] != '\0');
	if (t->source == HAL_TIMER_SRC_CLOCK)
		CHECK_EQ_U64(t->freq_hz, 1000000000u);
	else
		CHECK(t->measured_hz != 0);
#if defined(__x86_64__)
	CHECK(t->source == HAL_TIMER_SRC_TSC || strstr(t->reason, "fallback"));
#elif defined(__aarch64__)
	/* CNTVCT_EL0 is readable under qemu-user and on every arm64 Linux we know of. */
	CHECK(t->source == HAL_TIMER_SRC_CNTVCT);
#elif defined(__arm__)
	/* qemu-user raises SIGILL here: the probe must have caught it, not died of it. */
	CHECK(t->source == HAL_TIMER_SRC_CNTVCT || strstr(t->reason, "SIGILL"));
#endif
	/* Where the source is known in advance (a qemu board whose kernel allows counter
	 * reads), the boot script says so. */
	const char *expect = getenv("JITT_EXPECT_TIMER");
	if (expect && *expect)
		CHECK_STR(hal_timer_source_name(t->source), expect);
}

/*
 * No wait before main(): a traced app's constructor probes the timer, and the probe used to
 * sleep CONFIG_HAL_TIMER_CALIBRATION_MS to measure a counter's rate (20.7 ms of a traced
 * hello world's 20.8). The probe now leaves the calibration running: it is finished by
 * whoever needs the rate (hal_timer_freq, hal_timer_info, hal_timer_calibrate), the
 * runtime's control thread in an app. State, not timing: right after the probe a counter
 * is not calibrated yet; the clock needs no calibration.
 */
TEST(timer_init_leaves_the_calibration_for_later)
{
	CHECK_EQ_INT(hal_timer_init(), 0);
	if (atomic_load(&hal_timer_use_clock)) {
		printf("    the clock: nothing to calibrate\n");
		CHECK(hal_timer_calibrated());
		CHECK_EQ_U64(hal_timer_calibration_left_ns(), 0);
		CHECK_EQ_U64(hal_timer_freq(), 1000000000u);
		return;
	}
	CHECK(!hal_timer_calibrated());
	CHECK(hal_timer_calibration_left_ns() <= CONFIG_HAL_TIMER_CALIBRATION_MS * 1000000ull);
	uint64_t hz = hal_timer_freq(); /* waits for what is left of the interval */
	CHECK(hal_timer_calibrated());
	CHECK_EQ_U64(hal_timer_calibration_left_ns(), 0);
	CHECK_EQ_U64(hz, hal_timer_info()->freq_hz);
	CHECK(hal_timer_info()->measured_hz != 0);
	CHECK(hz >= 1000000 && hz <= 10000000000ull);
}

/* A timer coarser than its rate: a VM's TSC moved 21 ticks (10 ns) at a time while the rate said 0.48 ns per
 * tick. The resolution is a step the timer really took: at least a tick, and far finer than
 * a millisecond on any source the HAL accepts. */
TEST(timer_resolution_is_a_step_the_timer_takes)
{
	CHECK_EQ_INT(hal_timer_init(), 0);
	uint64_t step = hal_timer_resolution_ticks(), hz = hal_timer_freq();
	printf("    resolution %llu ticks, %.2f ns (a tick is %.2f ns)\n", (unsigned long long)step,
	       (double)step * 1e9 / (double)hz, 1e9 / (double)hz);
	CHECK(step >= 1);
	CHECK(step < hz / 1000);
}

TEST(timer_is_monotonic_in_one_thread)
{
	hal_timer_init();
	uint64_t prev = hal_timer_now();
	int backwards = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t now = hal_timer_now();
		backwards += now < prev;
		prev = now;
	}
	CHECK_EQ_INT(backwards, 0);
}

/* Two threads on different CPUs pass a timestamp back and forth: each reads the clock only
 * after it has seen the other's value, so its value must not be smaller. This is the
 * property the wake-up edges of a later issue rely on. */
struct pingpong {
	_Atomic uint64_t stamp;
	_Atomic int turn;
	int rounds;
	int backwards;
	int cpu[2];
};

static void pin_to_cpu(int cpu)
{
	if (cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void play(struct pingpong *p, int me)
{
	pin_to_cpu(p->cpu[me]);
	for (int r = 0; r < p->rounds; r++) {
		while (atomic_load_explicit(&p->turn, memory_order_acquire) != me)
			sched_yield();
		uint64_t seen = atomic_load_explicit(&p->stamp, memory_order_relaxed);
		uint64_t now = hal_timer_now_ordered();
		if (now < seen)
			p->backwards++;
		atomic_store_explicit(&p->stamp, now, memory_order_relaxed);
		atomic_store_explicit(&p->turn, !me, memory_order_release);
	}
}

static void *player1(void *arg)
{
	play(arg, 1);
	return NULL;
}

TEST(timer_is_monotonic_across_threads_and_cpus)
{
	hal_timer_init();
	cpu_set_t allowed;
	int cpus[CPU_SETSIZE], n = 0;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[n++] = c;
	/* Every pair of allowed CPUs (capped), or one unpinned pair on a single-CPU machine. */
	int pairs = 0;
	for (int a = 0; a < (n > 1 ? n : 1) && pairs < 4; a++) {
		for (int b = a + 1; b < (n > 1 ? n : 2) && pairs < 4; b++, pairs++) {
			struct pingpong p = { .rounds = 500,
					      .cpu = { n > 1 ? cpus[a] : -1,
						       n > 1 ? cpus[b] : -1 } };
			pthread_t t;
			CHECK_EQ_INT(pthread_create(&t, NULL, player1, &p), 0);
			play(&p, 0);
			pthread_join(t, NULL);
			CHECK_EQ_INT(p.backwards, 0);
		}
	}
	CHECK(pairs > 0);
}

static uint64_t raw_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The timer's ticks over an interval, converted with its frequency, agree with
 * CLOCK_MONOTONIC. Not a timing assertion: both clocks measure the same interval. */
TEST(timer_frequency_agrees_with_clock_monotonic)
{
	hal_timer_init();
	uint64_t freq = hal_timer_freq();
	double best = 1e9;
	for (int attempt = 0; attempt < 5 && best > 0.01; attempt++) {
		uint64_t t0 = hal_timer_now(), n0 = raw_ns();
		struct timespec nap = { 0, 50 * 1000000 };
		nanosleep(&nap, NULL);
		uint64_t t1 = hal_timer_now(), n1 = raw_ns();
		double ticks_ns = (double)hal_ticks_to_ns(t1 - t0, freq);
		double err = ticks_ns / (double)(n1 - n0) - 1.0;
		if (err < 0)
			err = -err;
		if (err < best)
			best = err;
	}
	printf("    relative disagreement %.6f\n", best);
	CHECK(best < 0.01);
}

TEST(ticks_to_ns_is_exact_near_2_pow_63)
{
	const struct {
		uint64_t ticks, freq, ns;
	} v[] = {
		/* floor(ticks * 1e9 / freq), computed with arbitrary-precision integers */
		{ 0x7fffffffffffffffull, 3000000000ull, 3074457345618258602ull },
		{ 0x8000000000000000ull, 2000000000ull, 4611686018427387904ull },
		{ 0x8000000000003039ull, 2500000000ull, 3689348814741915261ull },
		{ 0x7fffffffffffffffull, 1000000001ull, 9223372027631403779ull },
		{ 0xffffffffffffffffull, 10000000000ull, 1844674407370955161ull },
		{ 0xffffffffffffffffull, 4294967297ull, 4294967295000000000ull },
		{ 0x38d7ea4c68007ull, 19200000ull, 52083333333333697ull },
		{ 0x75bcd15ull, 62500000ull, 1975308624ull },
		{ 0x44b82fa09ull, 999999999ull, 18446744091ull },
		/* the largest tick count whose ns fit in 64 bits at 62.5 MHz, and one more */
		{ 1152921504606846975ull, 62500000ull, 18446744073709551600ull },
		{ 1152921504606846976ull, 62500000ull, UINT64_MAX },
		{ 0x7fffffffffffffffull, 19200000ull, UINT64_MAX },
		{ UINT64_MAX, 1000000000ull, UINT64_MAX },
		{ 0, 19200000ull, 0 },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		CHECK_EQ_U64(hal_ticks_to_ns(v[i].ticks, v[i].freq), v[i].ns);
}

TEST(muldiv_refuses_division_by_zero)
{
	CHECK_EQ_U64(hal_muldiv_u64(5, 7, 0), UINT64_MAX);
	CHECK_EQ_U64(hal_muldiv_u64(UINT64_MAX, UINT64_MAX, UINT64_MAX), UINT64_MAX);
	CHECK_EQ_U64(hal_muldiv_u64(1ull << 40, 1000000000u, 1ull << 40), 1000000000u);
}
