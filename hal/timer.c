/* SPDX-License-Identifier: MIT */
#include "timer.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* Until the probe has run, the clock: safe everywhere, and consistent with its frequency. */
_Atomic uint64_t hal_timer_freq_hz = 1000000000u;
_Atomic bool hal_timer_use_clock = true;

static struct hal_timer_info info;
static int init_result;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* Frequencies outside this range are firmware bugs or emulator artefacts, not clocks. Also
 * keeps hal_ticks_to_ns() exact: it needs freq * 1e9 < 2^64. */
#define MIN_SANE_HZ 1000000u	   /* 1 MHz */
#define MAX_SANE_HZ 10000000000ull /* 10 GHz */

const char *hal_timer_source_name(enum hal_timer_source source)
{
	switch (source) {
	case HAL_TIMER_SRC_CNTVCT:
		return "cntvct";
	case HAL_TIMER_SRC_TSC:
		return "tsc";
	case HAL_TIMER_SRC_CLOCK:
		return "clock_gettime";
	}
	return "?";
}

uint64_t hal_muldiv_u64(uint64_t a, uint64_t b, uint64_t c)
{
	if (c == 0)
		return UINT64_MAX;
#if defined(__SIZEOF_INT128__)
	unsigned __int128 r = (unsigned __int128)a * b / c;
	return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
#else
	/* a = q*c + r, so a*b/c = q*b + r*b/c exactly. r*b cannot overflow while (c-1)*b
	 * fits in 64 bits, which holds for every c and b this HAL passes (c a frequency of
	 * at most 10 GHz or an interval of at most a second in ns, b at most 1e9). */
	uint64_t q = a / c, r = a % c;
	if (r != 0 && b > UINT64_MAX / r)
		return UINT64_MAX; /* outside the documented range: refuse to guess */
	if (q != 0 && b > UINT64_MAX / q)
		return UINT64_MAX;
	uint64_t hi = q * b, lo = r * b / c;
	return hi > UINT64_MAX - lo ? UINT64_MAX : hi + lo;
#endif
}

uint64_t hal_ticks_to_ns(uint64_t ticks, uint64_t freq_hz)
{
	if (freq_hz == 1000000000u)
		return ticks;
	return hal_muldiv_u64(ticks, 1000000000u, freq_hz);
}

#if HAL_HAVE_COUNTER && !defined(CONFIG_HAL_TIMER_CLOCK)

static uint64_t raw_now_ns(void)
{
	struct timespec ts;
	/* RAW is not slewed by NTP (up to 500 ppm): the hardware's own rate is what we want. */
	if (clock_gettime(CLOCK_MONOTONIC_RAW, &ts) != 0)
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One (counter, ns) pair taken as close together as we can: the tightest of a few
 * counter-clock-counter brackets, with the counter at the bracket's middle. */
static void sample_pair(uint64_t *ticks, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 7; i++) {
		uint64_t t0 = hal_counter_read();
		uint64_t n = raw_now_ns();
		uint64_t t1 = hal_counter_read();
		if (t1 >= t0 && t1 - t0 < best) {
			best = t1 - t0;
			*ticks = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
}

/* The counter's rate against CLOCK_MONOTONIC_RAW over CONFIG_HAL_TIMER_CALIBRATION_MS.
 * 0 when the counter did not advance or went backwards. */
static uint64_t measure_hz(void)
{
	uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0;
	sample_pair(&t0, &n0);
	struct timespec nap = {
		.tv_sec = CONFIG_HAL_TIMER_CALIBRATION_MS / 1000,
		.tv_nsec = (CONFIG_HAL_TIMER_CALIBRATION_MS % 1000) * 1000000L,
	};
	while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
		;
	sample_pair(&t1, &n1);
	if (t1 <= t0 || n1 <= n0)
		return 0;
	return hal_muldiv_u64(t1 - t0, 1000000000u, n1 - n0);
}

static sigjmp_buf probe_jump;

static void probe_fault(int sig)
{
	siglongjmp(probe_jump, sig);
}

#if defined(__aarch64__)
static uint64_t read_reported_hz(void)
{
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(v));
	return v;
}
#elif defined(__arm__)
static uint64_t read_reported_hz(void)
{
	uint32_t v;
	__asm__ __volatile__("mrc p15, 0, %0, c14, c0, 0" : "=r"(v));
	return v;
}
#else
static uint64_t read_reported_hz(void)
{
	return 0; /* the TSC's rate is architecturally unknown to user space */
}
#endif

/* Read the counter and its frequency register once with SIGILL and SIGSEGV caught: a
 * kernel that keeps EL0 access off (CNTKCTL), qemu-user on armv7, or a process under
 * prctl(PR_SET_TSC, PR_TSC_SIGSEGV) fault here instead of on the first trace point.
 * Returns 0 or the signal number. Runs once at start-up; the previous handlers are
 * restored, so an application's own handlers are left as they were. */
static int probe_counter(uint64_t *reported_hz)
{
	struct sigaction catch = { .sa_handler = probe_fault }, old_ill, old_segv;
	sigemptyset(&catch.sa_mask);
	sigaction(SIGILL, &catch, &old_ill);
	sigaction(SIGSEGV, &catch, &old_segv);

	volatile int fault = sigsetjmp(probe_jump, 1);
	if (fault == 0) {
		(void)hal_counter_read();
		*reported_hz = read_reported_hz();
	}

	sigaction(SIGILL, &old_ill, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return fault;
}

#if defined(__x86_64__)
/* CPUID 0x80000007 EDX bit 8: the TSC ticks at a constant rate in every P-, C- and
 * T-state (Intel SDM vol. 3, 17.17.1; AMD APM "TscInvariant"). Without it the TSC is not
 * a clock. */
static bool tsc_invariant(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return d & (1u << 8);
}
#endif

static void use_clock(const char *why)
{
	info.source = HAL_TIMER_SRC_CLOCK;
	info.freq_hz = 1000000000u;
	snprintf(info.reason, sizeof(info.reason), "%s", why);
}

/* Fills `info` with the counter's source and rate, or returns a reason it is unusable. */
static const char *choose_counter(void)
{
	static char why[160];
	uint64_t reported = 0;

	int sig = probe_counter(&reported);
	if (sig) {
		snprintf(why, sizeof(why), "reading the counter raised %s (%s)",
			 sig == SIGILL ? "SIGILL" : "SIGSEGV",
			 sig == SIGILL ? "the kernel or emulator denies user-space access"
				       : "user-space counter reads are disabled");
		return why;
	}
#if defined(__x86_64__)
	if (!tsc_invariant())
		return "the TSC is not invariant (CPUID 0x80000007 EDX[8] clear): its rate follows "
		       "the core's";
#endif
	uint64_t measured = measure_hz();
	if (measured < MIN_SANE_HZ || measured > MAX_SANE_HZ) {
		snprintf(why, sizeof(why),
			 "the counter does not advance steadily (measured %llu Hz)",
			 (unsigned long long)measured);
		return why;
	}

	info.measured_hz = measured;
	info.reported_hz = reported;
#if defined(__x86_64__)
	info.source = HAL_TIMER_SRC_TSC;
	info.freq_hz = measured;
	snprintf(info.reason, sizeof(info.reason),
		 "invariant TSC; rate calibrated once against CLOCK_MONOTONIC_RAW over %d ms",
		 CONFIG_HAL_TIMER_CALIBRATION_MS);
#else
	info.source = HAL_TIMER_SRC_CNTVCT;
	/* Firmware sets CNTFRQ and sometimes gets it wrong; believe it only within 1%. */
	uint64_t diff = reported > measured ? reported - measured : measured - reported;
	if (reported >= MIN_SANE_HZ && reported <= MAX_SANE_HZ && diff * 100 <= measured) {
		info.freq_hz = reported;
		snprintf(info.reason, sizeof(info.reason),
			 "generic timer readable from user space; CNTFRQ agrees with "
			 "CLOCK_MONOTONIC_RAW within 1%%");
	} else {
		info.freq_hz = measured;
		snprintf(info.reason, sizeof(info.reason),
			 "generic timer readable from user space; CNTFRQ says %llu Hz but it "
			 "ticks at %llu Hz: using the measured rate",
			 (unsigned long long)reported, (unsigned long long)measured);
	}
#endif
	return NULL;
}

static void init(void)
{
#if defined(CONFIG_HAL_TIMER_AUTO) || defined(CONFIG_HAL_TIMER_COUNTER)
	const char *why_not = choose_counter();
	if (why_not) {
		char reason[sizeof(info.reason)];
#if defined(CONFIG_HAL_TIMER_COUNTER)
		/* No fallback allowed: hal_timer_now() reads the counter unconditionally, so
		 * the caller must not start tracing. */
		init_result = -ENOTSUP;
		snprintf(reason, sizeof(reason), "CONFIG_HAL_TIMER_COUNTER, but %s", why_not);
#else
		snprintf(reason, sizeof(reason), "fallback: %s", why_not);
#endif
		use_clock(reason);
	}
#else
	use_clock("CONFIG_HAL_TIMER_CLOCK selects clock_gettime");
#endif
	atomic_store_explicit(&hal_timer_freq_hz, info.freq_hz, memory_order_relaxed);
	atomic_store_explicit(&hal_timer_use_clock, info.source == HAL_TIMER_SRC_CLOCK,
			      memory_order_relaxed);
}

#else /* no counter on this architecture, or the clock was chosen in Kconfig */

static void init(void)
{
	info.source = HAL_TIMER_SRC_CLOCK;
	info.freq_hz = 1000000000u;
	snprintf(info.reason, sizeof(info.reason), "%s",
		 HAL_HAVE_COUNTER ? "CONFIG_HAL_TIMER_CLOCK selects clock_gettime"
				  : "no user-space counter on this architecture");
}

#endif

int hal_timer_init(void)
{
	pthread_once(&init_once, init);
	return init_result;
}

const struct hal_timer_info *hal_timer_info(void)
{
	hal_timer_init();
	return &info;
}

uint64_t hal_timer_resolution_ticks(void)
{
	hal_timer_init();
	uint64_t best = 0, prev = hal_timer_now();
	for (int i = 0; i < HAL_TIMER_RESOLUTION_READS; i++) {
		uint64_t now = hal_timer_now();
		/* A preemption between two reads only makes a step longer, never shorter. */
		if (now > prev && (!best || now - prev < best))
			best = now - prev;
		prev = now;
	}
	return best;
}
