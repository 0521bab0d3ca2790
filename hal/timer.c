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

/*
 * The calibration, off the start-up path. Measuring a counter's rate takes an interval
 * (CONFIG_HAL_TIMER_CALIBRATION_MS), and a traced app used to sleep through it in its
 * constructor, before main(): a traced hello world took 20.7 ms against 0.14 ms plain
 * (0.28 ms now: docs/runtime.md, "Start-up"). Now hal_timer_init() takes the first
 * (counter, CLOCK_MONOTONIC_RAW) pair and returns, and the second is taken once the
 * interval has passed, by whoever needs the rate first: the
 * runtime's control thread (its poll timeout waits for it), a trace being written
 * (hal_timer_freq() waits for what is left of the interval), `jitt hal`. Until then the
 * counter runs and its ticks are recorded: the rate is only needed to turn them into time.
 */
static _Atomic bool calibrated = true; /* false from the probe's choice of a counter on */
static uint64_t cal_ticks, cal_ns;     /* the first pair */
static pthread_mutex_t cal_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* The counter's rate between two pairs; 0 when it did not advance or went backwards. */
static uint64_t rate_hz(uint64_t t0, uint64_t n0, uint64_t t1, uint64_t n1)
{
	if (t1 <= t0 || n1 <= n0)
		return 0;
	return hal_muldiv_u64(t1 - t0, 1000000000u, n1 - n0);
}

/*
 * Whether the counter advances at a plausible rate, judged in QUICK_CHECK_NS of spinning
 * at start-up (the calibration's interval comes later): the first pair goes to cal_ticks
 * and cal_ns, and the rough rate is returned (0: it did not advance). With brackets of
 * about 50 ns natively and about a microsecond under qemu-user, 20 us gives the rate
 * within 10%: enough to tell a counter from a stuck register or an emulator's garbage,
 * which is all the choice of source needs, for 20 us of the app's start-up.
 */
#define QUICK_CHECK_NS 20000u
static uint64_t quick_hz(void)
{
	uint64_t t1 = 0, n1 = 0;
	sample_pair(&cal_ticks, &cal_ns);
	while (raw_now_ns() - cal_ns < QUICK_CHECK_NS)
		;
	sample_pair(&t1, &n1);
	return rate_hz(cal_ticks, cal_ns, t1, n1);
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

/* Fills `info` with the counter's source and a provisional rate, or returns a reason it is
 * unusable. The rate is settled by finish_calibration(). */
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
	/* Twice the sane range: the quick rate is rough (quick_hz); the calibration then
	 * holds the rate to the range itself. */
	uint64_t quick = quick_hz();
	if (quick < MIN_SANE_HZ / 2 || quick > MAX_SANE_HZ * 2) {
		snprintf(why, sizeof(why),
			 "the counter does not advance steadily (about %llu Hz)",
			 (unsigned long long)quick);
		return why;
	}
	info.reported_hz = reported;
#if defined(__x86_64__)
	info.source = HAL_TIMER_SRC_TSC;
	info.freq_hz = quick;
#else
	info.source = HAL_TIMER_SRC_CNTVCT;
	bool sane = reported >= MIN_SANE_HZ && reported <= MAX_SANE_HZ;
	info.freq_hz = sane ? reported : quick;
#endif
	snprintf(info.reason, sizeof(info.reason), "counter readable from user space; its rate "
		 "is being calibrated");
	atomic_store_explicit(&calibrated, false, memory_order_release);
	return NULL;
}

/* The second pair, the rate, the reason: the calibration's end. Under cal_lock, once
 * CONFIG_HAL_TIMER_CALIBRATION_MS have passed since the first pair. */
static void finish_calibration(void)
{
	uint64_t t1 = 0, n1 = 0;
	sample_pair(&t1, &n1);
	uint64_t measured = rate_hz(cal_ticks, cal_ns, t1, n1);
	/* The counter is already in use (its ticks are in the rings): a rate outside the sane
	 * range is held to it, and said, rather than the source changed under the rings. The
	 * quick check at the probe makes this an emulator's oddity, never a real board's. */
	uint64_t rate = measured < MIN_SANE_HZ ? MIN_SANE_HZ
			: measured > MAX_SANE_HZ ? MAX_SANE_HZ
						 : measured;
	info.measured_hz = measured;
#if defined(__x86_64__)
	info.freq_hz = rate;
	snprintf(info.reason, sizeof(info.reason),
		 "invariant TSC; rate calibrated once against CLOCK_MONOTONIC_RAW over %llu ms%s",
		 (unsigned long long)((n1 - cal_ns) / 1000000u),
		 rate != measured ? ", held to 1 MHz..10 GHz" : "");
#else
	/* Firmware sets CNTFRQ and sometimes gets it wrong; believe it only within 1%. */
	uint64_t reported = info.reported_hz;
	uint64_t diff = reported > rate ? reported - rate : rate - reported;
	if (reported >= MIN_SANE_HZ && reported <= MAX_SANE_HZ && diff * 100 <= rate) {
		info.freq_hz = reported;
		snprintf(info.reason, sizeof(info.reason),
			 "generic timer readable from user space; CNTFRQ agrees with "
			 "CLOCK_MONOTONIC_RAW within 1%%");
	} else {
		info.freq_hz = rate;
		snprintf(info.reason, sizeof(info.reason),
			 "generic timer readable from user space; CNTFRQ says %llu Hz but it "
			 "ticks at %llu Hz: using the measured rate",
			 (unsigned long long)reported, (unsigned long long)measured);
	}
#endif
	/* The published rate is that of the source hal_timer_now() follows: a test that
	 * flipped it to the clock keeps the clock's. */
	if (!atomic_load_explicit(&hal_timer_use_clock, memory_order_relaxed))
		atomic_store_explicit(&hal_timer_freq_hz, info.freq_hz, memory_order_relaxed);
	atomic_store_explicit(&calibrated, true, memory_order_release);
}

static uint64_t calibration_left_ns(void)
{
	uint64_t interval = (uint64_t)CONFIG_HAL_TIMER_CALIBRATION_MS * 1000000u;
	uint64_t elapsed = raw_now_ns() - cal_ns;
	return elapsed >= interval ? 0 : interval - elapsed;
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

/* Never called: the clock needs no calibration (calibrated stays true). */
static void finish_calibration(void)
{
}

static uint64_t calibration_left_ns(void)
{
	return 0;
}

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

bool hal_timer_calibrated(void)
{
	hal_timer_init();
	return atomic_load_explicit(&calibrated, memory_order_acquire);
}

uint64_t hal_timer_calibration_left_ns(void)
{
	return hal_timer_calibrated() ? 0 : calibration_left_ns();
}

int hal_timer_calibrate(void)
{
	int err = hal_timer_init();
	if (hal_timer_calibrated())
		return err;
	pthread_mutex_lock(&cal_lock);
	if (!atomic_load_explicit(&calibrated, memory_order_acquire)) {
		uint64_t left;
		while ((left = calibration_left_ns()) > 0) {
			struct timespec nap = { (time_t)(left / 1000000000u),
						(long)(left % 1000000000u) };
			nanosleep(&nap, NULL); /* woken early (a signal): the loop sleeps on */
		}
		finish_calibration();
	}
	pthread_mutex_unlock(&cal_lock);
	return err;
}

uint64_t hal_timer_freq(void)
{
	if (!atomic_load_explicit(&calibrated, memory_order_acquire))
		hal_timer_calibrate();
	return atomic_load_explicit(&hal_timer_freq_hz, memory_order_relaxed);
}

const struct hal_timer_info *hal_timer_info(void)
{
	hal_timer_calibrate();
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
