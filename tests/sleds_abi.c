/* SPDX-License-Identifier: MIT */
/*
 * tests/sleds_abi.c - what a thunk must carry through unchanged (tests/sleds-check.sh):
 * the calls of the x86_64 ABI that use every argument register, vector registers, the
 * stack and the flags a variadic call passes, results in rax:rdx and xmm0:xmm1 and through
 * memory, recursion, calls through pointers, longjmp out of traced calls, and threads, a
 * traced one next to untraced ones. It prints one line of results, which must be the same
 * built plain, with sleds untraced and with sleds traced.
 */
#include "agent/jitt.h"
#include "ringbuf/sleds.h"
#include "tests/wait_trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

struct big {
	long v[6];
};
struct pair {
	double a, b;
};

/* Ten integer arguments: six in registers, four on the stack. */
NOINLINE long many(long a, long b, long c, long d, long e, long f, long g, long h, long i,
		   long j)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
}

/* Vector registers both ways, mixed with integers. */
NOINLINE double mix(double x, float y, int k, double z)
{
	return x * y + k - z / 3.0;
}

/* A struct returned in two vector registers. */
NOINLINE struct pair halves(double x)
{
	struct pair p = { x / 2, x / 4 };
	return p;
}

/* A struct passed on the stack and one returned through memory. */
NOINLINE struct big scaled(struct big in, long by)
{
	for (int i = 0; i < 6; i++)
		in.v[i] *= by;
	return in;
}

/* A 128-bit result in rax:rdx. */
NOINLINE unsigned __int128 wide(uint64_t a, uint64_t b)
{
	return (unsigned __int128)a * b;
}

/* Variadic: %al says how many vector registers carry arguments. */
NOINLINE double sum_va(int n, ...)
{
	va_list ap;
	va_start(ap, n);
	double s = 0;
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}

NOINLINE long depth_sum(long n)
{
	if (n == 0)
		return 0;
	long r = n + depth_sum(n - 1);
	__asm__ __volatile__("" ::: "memory"); /* not a tail call */
	return r;
}

static __thread jmp_buf env; /* each thread jumps within its own calls */
NOINLINE static void thrower(int depth)
{
	if (depth == 0)
		longjmp(env, 1);
	thrower(depth - 1);
	__asm__ __volatile__("" ::: "memory");
}
NOINLINE static int protected_call(int depth)
{
	if (setjmp(env) == 0) {
		thrower(depth);
		return 0;
	}
	return 1;
}

static long (*volatile through_pointer)(long) = depth_sum;

/* A long call whose entry the ring loses ("long": run with a small ring): the freeze is
 * asked for inside it, and its thread answers at its next trace point, on its own stack,
 * where the thunks hold the callers' return addresses on the shadow stack (stack.c). */
NOINLINE static long leaf(long x)
{
	return x * 3 + 1;
}
NOINLINE static long long_inner(void)
{
	long s = 0;
	for (long i = 0; i < 2000000; i++)
		s += leaf(i);
	int a = jitt_anomaly("long");
	/* Trace points until the trace is saved (60 s at most: a hang, not a measure). */
	for (long i = 0; !a && i < 600000000 && !(i % 100000 == 0 && trace_saved()); i++)
		s += leaf(i);
	return s + a;
}
NOINLINE static long long_outer(void)
{
	long r = long_inner();
	__asm__ __volatile__("" ::: "memory"); /* not a tail call */
	return r;
}

/* The same under a tail call ("tail"): tail_middle jumps to long_inner, whose shadow frame
 * then has tail_middle's slot and its thunk's address as the return; the caller's return
 * is in tail_middle's frame, further down (ringbuf/sleds_x86_64.c, rb_sleds_return_of). */
NOINLINE static long tail_middle(void)
{
	return long_inner();
}
NOINLINE static long tail_outer(void)
{
	long r = tail_middle();
	__asm__ __volatile__("" ::: "memory"); /* not a tail call */
	return r;
}

NOINLINE static double work(int rounds)
{
	double acc = 0;
	struct big b = { { 1, 2, 3, 4, 5, 6 } };
	for (int r = 0; r < rounds; r++) {
		acc += (double)many(r, 1, 2, 3, 4, 5, 6, 7, 8, 9);
		acc += mix(1.5 + r, 2.25f, r, 9.0);
		struct pair p = halves(r);
		acc += p.a - p.b;
		struct big s = scaled(b, r % 7);
		acc += (double)(s.v[0] + s.v[5]);
		unsigned __int128 w = wide(0xffffffffffffull + (uint64_t)r, 0x10001);
		acc += (double)(uint64_t)(w >> 64) + (double)(uint64_t)w / 1e12;
		acc += sum_va(4, 1.0, 2.0, 0.5 * r, 4.0);
		acc += (double)through_pointer(r % 50);
	}
	return acc;
}

struct job {
	int traced, rounds;
	double result;
	int jumps;
};

static void *thread_main(void *arg)
{
	struct job *j = arg;
	if (j->traced)
		(void)jitt_trace_thread(true);
	j->result = work(j->rounds);
	for (int i = 0; i < 200; i++)
		j->jumps += protected_call(i % 30);
	return NULL;
}

/* What leaf's sled holds: "patched" (a jump to its thunk), or, taken out of the trace, "a
 * NOP" (one of 5 bytes) or "a jump over it" (ringbuf/sleds.h). */
static const char *leaf_sled(void)
{
	const unsigned char *sled = (const unsigned char *)(uintptr_t)leaf;
	return !memcmp(sled, "\x0f\x1f\x44\x00\x00", 5) ? "a NOP"
	       : !memcmp(sled, "\xeb\x03", 2)		  ? "a jump over it"
							  : "patched";
}

/* "learn STOPFILE": until STOPFILE exists (the check script makes it once the runtime said
 * it learnt which functions to leave out), and then until leaf is out of the trace (a
 * window that put it back closes as these calls fill the ring; 60 s at most), a long call,
 * a short one, which holds a few % of the time at most, and a short one that holds much of
 * it; then the work of the default run. */
static volatile long learn_sink; /* the calls' results are used: they are not optimised away */
NOINLINE static long slow(long x)
{
	for (int k = 0; k < 20000; k++)
		learn_sink = x + k;
	return x;
}
NOINLINE static long hot(long x);
/* "nested": short and a profile's top as hot is, and it calls hot. Defined before it, so
 * that its sled comes first in the list learning goes through. */
NOINLINE static long nested_outer(long x)
{
	for (int k = 0; k < 15; k++)
		learn_sink = x - k;
	return hot(x) + 1;
}
/* "seldom": short and a profile's top as hot is; one call in 200 calls seldom_leaf, which
 * a window of a 256 KiB ring then sees some 20 times: too few to judge. */
NOINLINE static long seldom_leaf(long x)
{
	learn_sink = x * 5; /* unlike any other function's body: GCC folds identical ones */
	return x + 3;
}
NOINLINE static long seldom_caller(long x)
{
	for (int k = 0; k < 30; k++)
		learn_sink = x + k;
	return x == 7 ? seldom_leaf(x) : x;
}
/* Short too, but called so often that it holds a good part of the time: a profile's top,
 * which learning keeps traced. */
NOINLINE static long hot(long x)
{
	for (int k = 0; k < 30; k++)
		learn_sink = x + k;
	return x;
}
static int learn_until(const char *stop)
{
	long s = 0;
	time_t give_up = 0;
	for (long i = 0;; i++) {
		s += leaf(i) + slow(i);
		for (int j = 0; j < 200; j++)
			s += hot(j);
		learn_sink = s;
		if (i % 1000)
			continue;
		if (!give_up && access(stop, F_OK) == 0)
			give_up = time(NULL) + 60;
		if (give_up && (strcmp(leaf_sled(), "patched") || time(NULL) > give_up))
			break;
	}
	fprintf(stderr, "leaf's sled: %s\n", leaf_sled());
	return s != 0;
}

/* "phases STOPFILE": leaf and slow until STOPFILE exists (the check script makes it once
 * the runtime decided from its third window: the next is 2 s away), then a new phase, whose
 * short function no window saw is called 10 times for each shorter slow call, until
 * STOPFILE is gone again (the script removes it once the runtime judged that function: its
 * look at the newest records found it and opened a window for it, agent/runtime/sleds.c,
 * agent_sleds_look; 60 s at most). */
NOINLINE static long fresh(long x)
{
	learn_sink = x;
	return x + 1;
}
NOINLINE static long slowish(long x)
{
	for (int k = 0; k < 5000; k++)
		learn_sink = x + k;
	return x;
}
static void phases_until(const char *stop)
{
	long s = 0;
	while (access(stop, F_OK) != 0)
		for (int k = 0; k < 100; k++)
			s += leaf(k) + slow(k);
	time_t give_up = time(NULL) + 60;
	while (access(stop, F_OK) == 0 && time(NULL) < give_up)
		for (int k = 0; k < 100; k++) {
			s += slowish(k);
			for (int j = 0; j < 10; j++)
				s += fresh(j);
		}
	learn_sink = s;
}

/* "newtop STOPFILE": four long functions of about a quarter of the time each, and seldom a
 * short one (rare), until STOPFILE exists (the check script makes it once the runtime
 * decided from its third window, which left rare out); then rare, 2,000 calls for each of
 * a long one's, most of the time, until STOPFILE is gone again (the script removes it once
 * the runtime put rare back; 60 s at most). */
NOINLINE static long rare(long x)
{
	for (int k = 0; k < 20; k++)
		learn_sink = x + k;
	return x;
}
#define QUARTER(name, step) /* steps apart: GCC would fold four of one code into one */   \
	NOINLINE static long name(long x)                                                     \
	{                                                                                     \
		for (int k = 0; k < 5000; k++)                                                \
			learn_sink = x + k * step;                                            \
		return x;                                                                     \
	}
QUARTER(quarter_a, 1)
QUARTER(quarter_b, 2)
QUARTER(quarter_c, 3)
QUARTER(quarter_d, 5)
static void newtop_until(const char *stop)
{
	long s = 0;
	for (long i = 0; access(stop, F_OK) != 0; i++) {
		s += quarter_a(i) + quarter_b(i) + quarter_c(i) + quarter_d(i);
		if (i % 8 == 0) /* enough calls in a window to judge it by (LEARN_MIN_CALLS) */
			s += rare(i);
	}
	time_t give_up = time(NULL) + 60;
	while (access(stop, F_OK) == 0 && time(NULL) < give_up) {
		s += quarter_a(0);
		for (int j = 0; j < 2000; j++)
			s += rare(j);
	}
	learn_sink = s;
}

/* "copies STOPFILE": as count, with the C library's memcpy in hot's place (ringbuf/
 * sleds_libc.c): 200 copies of 4 KiB or so for each slow call, a profile's top that only a
 * sled of the library's function can name. */
static char copy_from[8192], copy_to[8192];
static volatile size_t copy_bytes = 4096; /* unknown to GCC: a call, not its own rep movsq */
static long copies(int j)
{
	memcpy(copy_to + (j & 7), copy_from + (j & 15), copy_bytes + (size_t)(j & 7));
	return copy_to[j & 7];
}

/* "count STOPFILE": as learn, until STOPFILE exists (the check script makes it once the
 * runtime said it counts hot's calls, ringbuf/sleds.h rb_sleds_count), then three traces of
 * the same loop, whose rings hold hot's counted calls (one at least: a learning window,
 * which traces every call, may be open at a trigger). */
static void count_until(const char *stop, bool copy)
{
	long s = 0;
	int traces = 0;
	for (long i = 1; traces < 3; i++) {
		s += leaf(i) + slow(i);
		for (int j = 0; j < 200; j++)
			s += copy ? copies(j) : hot(j);
		learn_sink = s;
		if (i % 1000 || access(stop, F_OK))
			continue;
		int had = traces_saved(), a = jitt_anomaly("counted");
		if (!a)
			wait_for_traces(had + 1);
		fprintf(stderr, "count: anomaly %d\n", a);
		traces++;
	}
}

/* "nested STOPFILE" and "seldom STOPFILE": as learn, with caller (nested_outer, which
 * calls hot in hot's place, or seldom_caller) called 200 times a turn, until STOPFILE
 * exists (the check script makes it once the runtime said it counts caller). */
static void calls_until(const char *stop, long (*caller)(long), const char *mode)
{
	long s = 0;
	for (long i = 0; i % 1000 || access(stop, F_OK); i++) {
		s += slow(i);
		for (int j = 0; j < 200; j++)
			s += caller(j);
		learn_sink = s;
	}
	printf("%s %ld\n", mode, s != 0);
}

/* "toggle N": leaf's sled taken out of the trace and put back N times each way, by this
 * thread, while another runs through it as fast as it can (untraced: through the thunk's
 * compare when patched, through the NOP when not). A thread between the sled's NOPs when
 * the jump is stored back would go on inside the jump (the runtime's learning does this
 * while the program runs: ringbuf/sleds_x86_64.c, sled_nop5); it must never crash.
 * Weak: the plain build has no sleds. */
extern const uintptr_t *rb_sleds_list(size_t *n) __attribute__((weak));
extern long rb_sleds_trace(const size_t *idx, size_t n, bool traced) __attribute__((weak));
static atomic_int toggle_stop;
static long (*volatile leaf_ptr)(long) = leaf;
static void *toggle_runner(void *arg)
{
	long s = 0;
	while (!atomic_load_explicit(&toggle_stop, memory_order_relaxed))
		for (int i = 0; i < 1000; i++)
			s += leaf_ptr(i);
	*(long *)arg = s;
	return NULL;
}
static int toggle(long n)
{
	size_t count = 0, idx = 0;
	const uintptr_t *sleds = rb_sleds_list ? rb_sleds_list(&count) : NULL;
	while (idx < count && sleds[idx] != (uintptr_t)leaf)
		idx++;
	if (idx == count || !rb_sleds_trace) {
		fprintf(stderr, "toggle: leaf has no sled\n");
		return 1;
	}
	pthread_t t;
	long sum = 0, done = 0;
	pthread_create(&t, NULL, toggle_runner, &sum);
	for (long i = 0; i < n; i++)
		done += rb_sleds_trace(&idx, 1, false) == 1 && rb_sleds_trace(&idx, 1, true) == 1;
	atomic_store(&toggle_stop, 1);
	pthread_join(t, NULL);
	printf("toggled %ld of %ld, leaf at %lu mod 8\n", done, n, (unsigned long)((uintptr_t)leaf & 7));
	return done != n;
}

/* "window": a learning window (ringbuf/sleds.h) that no control thread reads (learning is
 * off: this thread opens it), ended by this thread at its last record: leaf, which the
 * window traced, goes back out there, and this thread's copy of its window holds leaf's
 * calls, every record timed. */
#pragma weak rb_sleds_window_open
#pragma weak rb_sleds_window_ended
#pragma weak rb_sleds_window_close
extern uint64_t rb_self_records(void) __attribute__((weak));
#define WINDOW_RECORDS 4000
static int window(void)
{
	size_t count = 0, idx = 0;
	const uintptr_t *sleds = rb_sleds_list ? rb_sleds_list(&count) : NULL;
	while (idx < count && sleds[idx] != (uintptr_t)leaf)
		idx++;
	if (idx == count || !rb_sleds_window_open || !rb_self_records) {
		fprintf(stderr, "window: leaf has no sled\n");
		return 1;
	}
	static uint64_t keep[WINDOW_RECORDS + 96];
	struct rb_sleds_window w = { .records = WINDOW_RECORDS, .out = &idx, .nout = 1,
				     .keep = keep, .keep_slots = WINDOW_RECORDS + 96 };
	rb_sleds_window_open(&w);
	pid_t tid = 0;
	size_t kept = 0;
	long calls = 0, s = 0;
	while (!rb_sleds_window_ended(&tid, &kept) && calls < 1000000)
		s += leaf_ptr(calls++);
	uint64_t before = rb_self_records();
	for (int i = 0; i < 1000; i++)
		s += leaf_ptr(i);
	uint64_t after = rb_self_records();
	rb_sleds_window_close();
	long timed = 0;
	for (size_t k = 0; k < kept; k++)
		timed += (uint32_t)keep[k] == (uint32_t)(uintptr_t)leaf && keep[k] >> 32;
	printf("window: ended after %ld calls, by %s, %zu slots kept, %ld timed entries of "
	       "leaf; then %llu records for 1000 calls (%ld)\n", calls,
	       tid == (pid_t)syscall(SYS_gettid) ? "this thread" : "another", kept, timed,
	       (unsigned long long)(after - before), s > 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "toggle"))
		return toggle(atol(argv[2]));
	int traced = jitt_trace_thread(true);
	if (argc > 1 && !strcmp(argv[1], "window"))
		return window();
	if (argc > 1 && !strcmp(argv[1], "long")) {
		printf("long %ld\n", long_outer() > 0);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "tail")) {
		printf("tail %ld\n", tail_outer() > 0);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "learn"))
		(void)learn_until(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "count"))
		count_until(argv[2], false);
	if (argc > 2 && !strcmp(argv[1], "copies"))
		count_until(argv[2], true);
	if (argc > 2 && !strcmp(argv[1], "phases"))
		phases_until(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "newtop"))
		newtop_until(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "nested")) {
		calls_until(argv[2], nested_outer, "nested");
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "seldom")) {
		calls_until(argv[2], seldom_caller, "seldom");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "restart")) { /* the runtime again, the sleds as they are */
		jitt_shutdown();
		traced = jitt_init(NULL) ? -1 : jitt_trace_thread(true);
	}
	struct job jobs[3] = { { 1, 3000, 0, 0 }, { 0, 3000, 0, 0 }, { 0, 2000, 0, 0 } };
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, thread_main, &jobs[i]);
	double mine = work(5000);
	int jumps = 0;
	for (int i = 0; i < 1000; i++)
		jumps += protected_call(i % 40);
	long deep = depth_sum(20000);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	int a = traced ? -1 : jitt_anomaly("sleds");
	if (!a)
		wait_for_trace();
	printf("work %.6f %.6f %.6f %.6f jumps %d %d %d %d deep %ld\n", mine, jobs[0].result,
	       jobs[1].result, jobs[2].result, jumps, jobs[0].jumps, jobs[1].jumps, jobs[2].jumps,
	       deep);
	fprintf(stderr, "traced %d anomaly %d\n", traced, a);
	return 0;
}
