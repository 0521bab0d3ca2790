/* SPDX-License-Identifier: MIT */
/*
 * hal/sched.h: a thread's context switches from perf's records, read on this very thread
 * (a sleep is a switch out sleeping; a second thread spinning on the same CPU preempts it),
 * the parser fed crafted and random bytes, and the schedstat fallback on fake files.
 * Where the kernel refuses perf (qemu-user, a kernel without it, paranoid 3) the first
 * test says so and checks the fallback on the real /proc instead.
 */
#define _GNU_SOURCE
#include "harness.h"
#include "hal/fs.h"
#include "hal/sched.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BUF (64 * 1024)

static pid_t self_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static atomic_int spin_stop;

static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		;
	return NULL;
}

/* Pin the calling thread (0) or t to cpu. */
static int pin(pthread_t t, int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(t, sizeof(set), &set);
}

/* How many events of each kind a copy of the ring holds; checks their order. */
static void count_kinds(struct hal_perf_ring *r, uint8_t *buf, struct hal_sched_event *ev,
			size_t *kinds, size_t *n)
{
	long got = hal_sched_copy(r, buf, BUF);
	uint64_t skipped, lost;
	memset(kinds, 0, 4 * sizeof(*kinds));
	*n = 0;
	if (!CHECK(got >= 0))
		return;
	*n = hal_sched_parse(buf, (size_t)got, ev, BUF / 32, &skipped, &lost);
	CHECK_EQ_U64(skipped, 0); /* only switch records in a per-thread dummy event's ring */
	for (size_t i = 0; i < *n; i++) {
		if (i && ev[i].time_ns < ev[i - 1].time_ns)
			test_fail(__FILE__, __LINE__, "event %zu goes back in time", i);
		if (CHECK(ev[i].kind >= HAL_SCHED_IN && ev[i].kind <= HAL_SCHED_OUT_SLEEPING))
			kinds[ev[i].kind]++;
	}
}

TEST(sched_records_a_sleep_and_a_preemption_of_this_thread)
{
	struct hal_perf_ring r;
	int e = hal_sched_open(&r, self_tid(), 8);
	if (e) {
		/* The kernel accounts a thread's time when it leaves the CPU: a thread that has
		 * not left it since it started may read 0 (CI once did, under qemu-user). So
		 * it sleeps a moment and reads again, until the time shows (10 s at most). */
		uint64_t on_cpu = 0, wait, slices = 0;
		int s = hal_sched_stat(self_tid(), &on_cpu, &wait, &slices);
		for (int i = 0; !s && (!on_cpu || !slices) && i < 10000; i++) {
			struct timespec ms = { 0, 1000000 };
			nanosleep(&ms, NULL);
			s = hal_sched_stat(self_tid(), &on_cpu, &wait, &slices);
		}
		printf("    perf refused here (%s): the fallback, schedstat: %s\n", strerror(-e),
		       s ? strerror(-s) : "read");
		CHECK(e == -EACCES || e == -EPERM || e == -ENOSYS || e == -ENOENT ||
		      e == -EOPNOTSUPP || e == -EINVAL);
		CHECK(s == 0 || s == -ENOENT);
		if (s == 0)
			CHECK(on_cpu > 0 && slices > 0);
		return;
	}
	uint8_t *buf = malloc(BUF);
	struct hal_sched_event *ev = malloc(BUF / 32 * sizeof(*ev));
	size_t kinds[4], n;
	if (!CHECK(buf && ev))
		goto out;
	/* A sleep: out sleeping, then in. */
	uint64_t before = now_ns();
	nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	count_kinds(&r, buf, ev, kinds, &n);
	CHECK(!r.lapped); /* 8 pages, a few switches: every one is there */
	CHECK(kinds[HAL_SCHED_OUT_SLEEPING] >= 1 && kinds[HAL_SCHED_IN] >= 1);
	CHECK(n > 0 && ev[n - 1].time_ns >= before && ev[n - 1].time_ns <= now_ns());

	/* Preempted: this thread and a spinner on one CPU; spin until the kernel has
	 * switched this thread out while runnable (bounded only to catch a kernel that never
	 * says so: 30 s). */
	int cpu = sched_getcpu();
	pthread_t t;
	atomic_store(&spin_stop, 0);
	CHECK_EQ_INT(pin(pthread_self(), cpu < 0 ? 0 : cpu), 0);
	if (!CHECK(pthread_create(&t, NULL, spinner, NULL) == 0))
		goto out;
	pin(t, cpu < 0 ? 0 : cpu);
	uint64_t limit = now_ns() + 30000000000ull;
	kinds[HAL_SCHED_OUT_PREEMPTED] = 0;
	while (!kinds[HAL_SCHED_OUT_PREEMPTED] && now_ns() < limit) {
		for (uint64_t end = now_ns() + 20000000; now_ns() < end;)
			;
		count_kinds(&r, buf, ev, kinds, &n);
	}
	atomic_store(&spin_stop, 1);
	pthread_join(t, NULL);
	CHECK(kinds[HAL_SCHED_OUT_PREEMPTED] >= 1);
	for (size_t i = 0; i < n; i++)
		if (ev[i].kind == HAL_SCHED_OUT_PREEMPTED && cpu >= 0)
			CHECK_EQ_INT(ev[i].cpu, cpu);
	printf("    %zu switches kept: %zu in, %zu out preempted, %zu out sleeping\n", n,
	       kinds[HAL_SCHED_IN], kinds[HAL_SCHED_OUT_PREEMPTED], kinds[HAL_SCHED_OUT_SLEEPING]);
out:
	free(buf);
	free(ev);
	hal_perf_ring_close(&r);
	CHECK_EQ_INT(r.fd, -1);
}

TEST(sched_ring_keeps_the_newest_switches_when_it_wraps)
{
	struct hal_perf_ring r;
	if (hal_sched_open(&r, self_tid(), 1) != 0)
		return; /* refused here: said by the test above */
	uint8_t *buf = malloc(BUF);
	struct hal_sched_event *ev = malloc(BUF / 32 * sizeof(*ev));
	size_t kinds[4], n = 0;
	/* One page holds about 128 switch records: 400 sleeps wrap it three times. */
	for (int i = 0; i < 400; i++)
		sched_yield(), nanosleep(&(struct timespec){ 0, 1000 }, NULL);
	uint64_t last = now_ns();
	if (CHECK(buf && ev)) {
		count_kinds(&r, buf, ev, kinds, &n);
		long page = sysconf(_SC_PAGESIZE);
		CHECK(n > 0 && n <= (size_t)page / 32);
		CHECK(n >= (size_t)page / 32 / 2); /* most of the ring: whole records */
		CHECK(n > 0 && ev[n - 1].time_ns <= last);
		CHECK(r.lapped); /* its oldest overwritten: the summary's switches_from */
	}
	free(buf);
	free(ev);
	hal_perf_ring_close(&r);
}

/* A switch record as the kernel writes one: header, then pid, tid, time, cpu, reserved. */
static size_t put_switch(uint8_t *p, uint16_t misc, uint64_t time, uint32_t cpu)
{
	uint32_t type = 14, ids[2] = { 7, 7 }, tail[2] = { cpu, 0 };
	uint16_t size = 32;
	memcpy(p, &type, 4);
	memcpy(p + 4, &misc, 2);
	memcpy(p + 6, &size, 2);
	memcpy(p + 8, ids, 8);
	memcpy(p + 16, &time, 8);
	memcpy(p + 24, tail, 8);
	return 32;
}

TEST(sched_parse_crafted_and_random_bytes)
{
	uint8_t b[256] = { 0 };
	struct hal_sched_event ev[8];
	uint64_t skipped, lost;
	/* Newest first: in at 300, out preempted at 200 on cpu 3, out sleeping at 100. */
	size_t at = put_switch(b, 0, 300, 3);
	at += put_switch(b + at, 0x2000 | 0x4000, 200, 3);
	/* a lost record: header, id, count 5, sample id */
	uint32_t type = 2;
	uint16_t misc = 0, size = 8 + 16 + 24;
	uint64_t five = 5;
	memcpy(b + at, &type, 4), memcpy(b + at + 4, &misc, 2), memcpy(b + at + 6, &size, 2);
	memcpy(b + at + 16, &five, 8);
	at += size;
	at += put_switch(b + at, 0x2000, 100, 1);
	size_t n = hal_sched_parse(b, at, ev, 8, &skipped, &lost);
	CHECK_EQ_U64(n, 3);
	CHECK_EQ_U64(lost, 5);
	CHECK_EQ_U64(skipped, 0);
	CHECK(ev[0].time_ns == 100 && ev[0].kind == HAL_SCHED_OUT_SLEEPING && ev[0].cpu == 1);
	CHECK(ev[1].time_ns == 200 && ev[1].kind == HAL_SCHED_OUT_PREEMPTED);
	CHECK(ev[2].time_ns == 300 && ev[2].kind == HAL_SCHED_IN);
	/* max bounds the output; a size past the end, or 0, ends the walk */
	CHECK_EQ_U64(hal_sched_parse(b, at, ev, 1, &skipped, &lost), 1);
	CHECK_EQ_U64(hal_sched_parse(b, at - 1, ev, 8, &skipped, &lost), 2);
	CHECK_EQ_U64(skipped, 1);
	memset(b + 6, 0, 2);
	CHECK_EQ_U64(hal_sched_parse(b, at, ev, 8, &skipped, &lost), 0);
	/* random bytes: never more events than fit, never a crash */
	srand(7);
	static uint8_t r[4096];
	struct hal_sched_event many[128];
	for (int round = 0; round < 20000; round++) {
		size_t len = (size_t)rand() % sizeof(r);
		for (size_t i = 0; i < len; i++)
			r[i] = (uint8_t)rand();
		if (round & 1) /* plausible sizes, so that walks go on */
			for (size_t i = 6; i + 1 < len; i += 32)
				r[i] = 32, r[i + 1] = 0;
		size_t got = hal_sched_parse(r, len, many, 128, &skipped, &lost);
		if (got > 128 || got > len / 32)
			test_fail(__FILE__, __LINE__, "%zu events from %zu bytes", got, len);
	}
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (CHECK(f != NULL)) {
		fputs(text, f);
		fclose(f);
	}
}

TEST(sched_stat_reads_three_numbers_and_refuses_the_rest)
{
	char dir[512], file[600];
	snprintf(dir, sizeof(dir), "%s/proc/self/task/42", test_tmpdir());
	char mk[600];
	snprintf(mk, sizeof(mk), "mkdir -p '%s'", dir);
	CHECK_EQ_INT(system(mk), 0);
	snprintf(file, sizeof(file), "%s/schedstat", dir);
	CHECK_EQ_INT(hal_root_set(test_tmpdir()), 0);
	uint64_t a = 0, b = 0, c = 0;
	write_file(file, "123456789 2000 17\n");
	CHECK_EQ_INT(hal_sched_stat(42, &a, &b, &c), 0);
	CHECK(a == 123456789 && b == 2000 && c == 17);
	static const char *const bad[] = { "", "1 2", "1 2 3 4", "-1 2 3", "1  2 3", "x 2 3",
					   "99999999999999999999 1 1", "1 2 3x", " 1 2 3" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(file, bad[i]);
		if (hal_sched_stat(42, &a, &b, &c) != -EINVAL)
			test_fail(__FILE__, __LINE__, "\"%s\" was not refused", bad[i]);
	}
	CHECK_EQ_INT(hal_sched_stat(43, &a, &b, &c), -ENOENT);
	hal_root_set(NULL);
}
