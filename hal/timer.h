/* SPDX-License-Identifier: MIT */
/*
 * hal/timer.h - the trace clock.
 *
 * Hubble (section 5.1) timestamps trace points with the ARM generic timer: a counter that
 * ticks at a constant rate whatever the core's frequency, readable from user space in one
 * instruction. jitt reads CNTVCT_EL0 on aarch64, CNTVCT through MRRC on armv7 (Hubble's
 * 32-bit trace point, section 5.1.3), the TSC on x86_64, and clock_gettime elsewhere.
 *
 * The counter is not always readable from user space (a kernel may leave EL0 access off;
 * qemu-user does not emulate it on armv7), so hal_timer_init() probes it once and falls back
 * to clock_gettime(CLOCK_MONOTONIC), recording why. Until hal_timer_init() has run, the
 * clock is used: reading the counter before the probe could kill the process with SIGILL.
 *
 * The counter's rate is known only after a calibration interval (CONFIG_HAL_TIMER_
 * CALIBRATION_MS): hal_timer_init() never waits for it, so a traced app's start-up does not
 * (hal_timer_calibrate() below; docs/hal.md has the measurement).
 */
#ifndef JITT_HAL_TIMER_H
#define JITT_HAL_TIMER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

enum hal_timer_source {
	HAL_TIMER_SRC_CLOCK,  /* clock_gettime(CLOCK_MONOTONIC), in nanoseconds */
	HAL_TIMER_SRC_CNTVCT, /* ARM generic timer, virtual count */
	HAL_TIMER_SRC_TSC,    /* x86 time-stamp counter */
};

struct hal_timer_info {
	enum hal_timer_source source;
	uint64_t freq_hz;     /* ticks per second of hal_timer_now() */
	uint64_t reported_hz; /* what the hardware claims (CNTFRQ); 0 where it claims nothing */
	uint64_t measured_hz; /* measured against CLOCK_MONOTONIC_RAW; 0 when not measured */
	char reason[192];     /* why this source, for `jitt hal` */
};

/*
 * Probe once (thread-safe, idempotent; about 25 us, and no sleep): choose the source and
 * start the calibration of a counter's rate. Returns 0, or -ENOTSUP when
 * CONFIG_HAL_TIMER_COUNTER forbids the fallback and the counter is unusable.
 */
int hal_timer_init(void);
/*
 * The calibration: the counter's rate measured against CLOCK_MONOTONIC_RAW between a
 * reading hal_timer_init() took and one taken CONFIG_HAL_TIMER_CALIBRATION_MS later (on
 * ARM, CNTFRQ is then believed when within 1% of it). hal_timer_calibrate() finishes it,
 * sleeping for what is left of the interval (thread-safe; returns hal_timer_init()'s
 * result); hal_timer_calibration_left_ns() says how long that is (0: it would not sleep,
 * or it is done), for a thread that would rather wait in its own poll(); calibrated is
 * true once done, and always for the clock, which needs none.
 */
int hal_timer_calibrate(void);
uint64_t hal_timer_calibration_left_ns(void);
bool hal_timer_calibrated(void);
/* The outcome of hal_timer_init() and of the calibration (both done first, if needed). */
const struct hal_timer_info *hal_timer_info(void);
const char *hal_timer_source_name(enum hal_timer_source source);

/*
 * The timer's real resolution, in ticks: the smallest non-zero step between two consecutive
 * reads of hal_timer_now() over HAL_TIMER_RESOLUTION_READS reads (0: it never moved). The
 * rate says how long a tick is, not how many ticks the counter moves at once: a VM's TSC
 * was seen to move 21 ticks (10 ns) at a time at 0.48 ns per tick. A step includes a read's
 * own time, so this is an upper bound: events closer than it may get the same time.
 * Measured afresh on each call (a few microseconds); the trace point never calls it.
 */
#define HAL_TIMER_RESOLUTION_READS 4096
uint64_t hal_timer_resolution_ticks(void);

/* floor(ticks * 1e9 / freq_hz), exact, saturating at UINT64_MAX when that does not fit. */
uint64_t hal_ticks_to_ns(uint64_t ticks, uint64_t freq_hz);
/* floor(a * b / c) without intermediate overflow; UINT64_MAX when the result does not fit. */
uint64_t hal_muldiv_u64(uint64_t a, uint64_t b, uint64_t c);

/* ---- the hot path: everything below is inline and allocation/syscall free ---- */

/* Written by hal_timer_init() (the source) and the calibration (the rate); the flag is read
 * on every trace point. Relaxed atomics compile to plain loads and stores on ARM and x86
 * and keep the publication free of undefined behaviour. */
extern _Atomic uint64_t hal_timer_freq_hz;
extern _Atomic bool hal_timer_use_clock;

/* Ticks per second of hal_timer_now(): finishes the calibration first if it is still
 * running (then it may sleep up to CONFIG_HAL_TIMER_CALIBRATION_MS), so a trace written
 * early carries the calibrated rate. Never on the trace point's path. */
uint64_t hal_timer_freq(void);

#if defined(__aarch64__) || defined(__arm__) || defined(__x86_64__)
#define HAL_HAVE_COUNTER 1
#else
#define HAL_HAVE_COUNTER 0
#endif

#if defined(CONFIG_HAL_TIMER_ISB)
#define HAL_COUNTER_ISB() __asm__ __volatile__("isb" ::: "memory")
#else
#define HAL_COUNTER_ISB() ((void)0)
#endif

/* The raw counter. Only call it once hal_timer_init() chose the counter. */
static inline __attribute__((always_inline, no_instrument_function)) uint64_t hal_counter_read(void)
{
#if defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	HAL_COUNTER_ISB();
	return v;
#elif defined(__arm__)
	uint32_t lo, hi;
	__asm__ __volatile__("mrrc p15, 1, %0, %1, c14" : "=r"(lo), "=r"(hi));
	HAL_COUNTER_ISB();
	return (uint64_t)hi << 32 | lo;
#elif defined(__x86_64__)
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
#else
	return 0;
#endif
}

static inline __attribute__((always_inline, no_instrument_function)) uint64_t hal_clock_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The trace clock: ticks of hal_timer_freq() per second. */
static inline __attribute__((always_inline, no_instrument_function)) uint64_t hal_timer_now(void)
{
#if defined(CONFIG_HAL_TIMER_CLOCK) || !HAL_HAVE_COUNTER
	return hal_clock_now();
#elif defined(CONFIG_HAL_TIMER_COUNTER)
	return hal_counter_read();
#else
	if (__builtin_expect(atomic_load_explicit(&hal_timer_use_clock, memory_order_relaxed), 0))
		return hal_clock_now();
	return hal_counter_read();
#endif
}

/*
 * The trace clock, read only once every earlier instruction of this thread has completed
 * (ISB on ARM, LFENCE on x86). A plain counter read may execute early, out of order; this
 * one cannot, so a value read after loading another thread's timestamp is never smaller
 * than it. For cross-thread events (a wake-up and the wait it ends), not for every trace
 * point.
 */
static inline __attribute__((always_inline, no_instrument_function)) uint64_t
hal_timer_now_ordered(void)
{
#if defined(__aarch64__) || defined(__arm__)
	__asm__ __volatile__("isb" ::: "memory");
#elif defined(__x86_64__)
	__asm__ __volatile__("lfence" ::: "memory");
#endif
	return hal_timer_now();
}

#endif
