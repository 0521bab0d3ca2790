/* SPDX-License-Identifier: MIT */
/*
 * hal/sample.h: a thread's sampled addresses, taken by another thread of the process (as
 * the control thread takes them) while the sampled one spins in a known function; the
 * parser fed crafted and random bytes. Where the kernel refuses perf (qemu-user, paranoid
 * 3) the first test says so and checks the refusal is one the runtime expects.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "hal/sample.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static atomic_int spin_stop;
static _Atomic pid_t spin_tid;

/* Where the spinner's time goes: a loop of a few instructions, not inlined. */
__attribute__((noinline, no_instrument_function)) static void spin_here(void)
{
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		;
}

__attribute__((no_instrument_function)) static void *spinner(void *arg)
{
	(void)arg;
	atomic_store(&spin_tid, (pid_t)syscall(SYS_gettid));
	spin_here();
	return NULL;
}

TEST(sample_finds_the_function_another_thread_spins_in)
{
	pthread_t t;
	atomic_store(&spin_stop, 0);
	atomic_store(&spin_tid, 0);
	if (!CHECK(pthread_create(&t, NULL, spinner, NULL) == 0))
		return;
	while (!atomic_load(&spin_tid))
		sched_yield();
	struct hal_perf_ring r;
	int e = hal_sample_open(&r, atomic_load(&spin_tid), 8, 100000); /* every 100 us */
	if (e) {
		printf("    perf refused here (%s): the runtime does without samples\n",
		       strerror(-e));
		CHECK(e == -EACCES || e == -EPERM || e == -ENOSYS || e == -ENOENT ||
		      e == -EOPNOTSUPP || e == -EINVAL);
		atomic_store(&spin_stop, 1);
		pthread_join(t, NULL);
		return;
	}
	/* Until 200 samples came (30 s bound: only a hang), drained into a small buffer so
	 * that a drain leaves records for the next. */
	static uint8_t buf[256];
	static uint64_t ips[4096];
	size_t n = 0, near = 0;
	uint64_t skipped, lost = 0, limit = now_ns() + 30000000000ull;
	while (n < 200 && now_ns() < limit) {
		long got = hal_sample_drain(&r, buf, sizeof(buf));
		if (!CHECK(got >= 0) || !CHECK(got <= (long)sizeof(buf)))
			break;
		if (!got) {
			nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
			continue;
		}
		n += hal_sample_parse(buf, (size_t)got, ips + n, 4096 - n, &skipped, &lost);
		CHECK_EQ_U64(skipped, 0);
	}
	CHECK_EQ_INT(hal_sample_period(&r, 1000000), 0);
	/* The task clock's count: at least the 200 samples' 20 ms, at most the thread's own
	 * CPU time (read after it, both from the kernel's accounting of the same thread) */
	uint64_t counted = 0, cpu = 0;
	clockid_t clock;
	struct timespec ts;
	CHECK_EQ_INT(hal_sample_cpu_ns(&r, &counted), 0);
	if (CHECK(pthread_getcpuclockid(t, &clock) == 0) && CHECK(clock_gettime(clock, &ts) == 0))
		cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	printf("    task clock %llu us, the thread's CPU time %llu us\n",
	       (unsigned long long)counted / 1000, (unsigned long long)cpu / 1000);
	CHECK(counted >= 200 * 100000ull);
	CHECK(counted <= cpu);
	atomic_store(&spin_stop, 1);
	pthread_join(t, NULL);
	uintptr_t fn = (uintptr_t)spin_here;
	for (size_t i = 0; i < n; i++)
		near += ips[i] >= fn && ips[i] < fn + 64;
	printf("    %zu samples, %zu in spin_here, %llu lost\n", n, near, (unsigned long long)lost);
	CHECK(n >= 200);
	CHECK(near * 10 >= n * 9); /* the thread did nothing else (a sample or two elsewhere) */
	hal_perf_ring_close(&r);
	CHECK_EQ_INT(r.fd, -1);
	CHECK_EQ_INT(hal_sample_period(&r, 1000), -EINVAL);
	CHECK(hal_sample_drain(&r, buf, sizeof(buf)) < 0);
	CHECK_EQ_INT(hal_sample_cpu_ns(&r, &counted), -EBADF);
}

/* A sample record as the kernel writes one for sample_type IP: header, then the address. */
static size_t put_sample(uint8_t *p, uint64_t ip)
{
	uint32_t type = 9;
	uint16_t misc = 2, size = 16; /* PERF_RECORD_MISC_USER */
	memcpy(p, &type, 4);
	memcpy(p + 4, &misc, 2);
	memcpy(p + 6, &size, 2);
	memcpy(p + 8, &ip, 8);
	return 16;
}

TEST(sample_parse_crafted_and_random_bytes)
{
	uint8_t b[256] = { 0 };
	uint64_t ips[8], skipped, lost = 0;
	size_t at = put_sample(b, 0x1000);
	/* a lost record: header, id, count 5 */
	uint32_t type = 2;
	uint16_t misc = 0, size = 8 + 16;
	uint64_t five = 5;
	memcpy(b + at, &type, 4), memcpy(b + at + 4, &misc, 2), memcpy(b + at + 6, &size, 2);
	memcpy(b + at + 16, &five, 8);
	at += size;
	/* an unknown record, skipped */
	type = 3, size = 8;
	memcpy(b + at, &type, 4), memcpy(b + at + 6, &size, 2);
	at += size;
	at += put_sample(b + at, 0x2000);
	size_t n = hal_sample_parse(b, at, ips, 8, &skipped, &lost);
	CHECK_EQ_U64(n, 2);
	CHECK(ips[0] == 0x1000 && ips[1] == 0x2000);
	CHECK_EQ_U64(lost, 5);
	CHECK_EQ_U64(skipped, 1);
	/* max bounds the output; a size past the end, or 0, ends the walk */
	CHECK_EQ_U64(hal_sample_parse(b, at, ips, 1, &skipped, &lost), 1);
	CHECK_EQ_U64(hal_sample_parse(b, at - 1, ips, 8, &skipped, &lost), 1);
	memset(b + 6, 0, 2);
	CHECK_EQ_U64(hal_sample_parse(b, at, ips, 8, &skipped, &lost), 0);
	/* random bytes: never more addresses than fit, never a crash */
	srand(11);
	static uint8_t r[4096];
	uint64_t many[128];
	for (int round = 0; round < 20000; round++) {
		size_t len = (size_t)rand() % sizeof(r);
		for (size_t i = 0; i < len; i++)
			r[i] = (uint8_t)rand();
		if (round & 1) /* plausible sizes and types, so that walks go on */
			for (size_t i = 0; i + 8 <= len; i += 16)
				r[i] = 9, r[i + 6] = 16, r[i + 7] = 0;
		size_t got = hal_sample_parse(r, len, many, 128, &skipped, &lost);
		if (got > 128 || got > len / 16)
			test_fail(__FILE__, __LINE__, "%zu samples from %zu bytes", got, len);
	}
}
