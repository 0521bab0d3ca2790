/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "harness.h"
#include "hal/cpu.h"
#include "hal/fs.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Loads a fake tree from sim/fakes. */
static int load(const char *fake, struct hal_topology *t)
{
	char root[512];
	snprintf(root, sizeof(root), "%s/%s", test_fakes(), fake);
	hal_root_set(root);
	int err = hal_topology_load(t);
	hal_root_set(NULL);
	return err;
}

/* A class's usable CPUs as a list string ("0-3"), or the error number as text. */
static const char *class_list(const struct hal_topology *t, enum hal_cpu_class cls)
{
	static char buf[128];
	unsigned ids[CONFIG_HAL_MAX_CPUS];
	int n = hal_topology_class_cpus(t, cls, ids, CONFIG_HAL_MAX_CPUS);
	if (n == -ENODEV)
		return "ENODEV";
	if (n == -EACCES)
		return "EACCES";
	if (n < 0)
		return "error";
	hal_cpulist_format(ids, (unsigned)n, buf, sizeof(buf));
	return buf;
}

TEST(cpu_phone_4_4_from_capacity)
{
	struct hal_topology t;
	CHECK_EQ_INT(load("phone-4-4", &t), 0);
	CHECK_EQ_INT(t.ncpus, 8);
	CHECK_EQ_INT(t.nclasses, 2);
	CHECK_EQ_INT(t.source, HAL_CPU_SRC_CAPACITY);
	CHECK_STR(class_list(&t, HAL_CPU_LITTLE), "0-3");
	CHECK_STR(class_list(&t, HAL_CPU_BIG), "4-7");
	CHECK_STR(class_list(&t, HAL_CPU_MIDDLE), "ENODEV");
	CHECK_EQ_U64(t.cpu[5].rank, 1024);
}

TEST(cpu_tri_cluster_has_a_middle_class)
{
	struct hal_topology t;
	CHECK_EQ_INT(load("phone-1-3-4", &t), 0);
	CHECK_EQ_INT(t.nclasses, 3);
	CHECK_STR(class_list(&t, HAL_CPU_LITTLE), "0-3");
	CHECK_STR(class_list(&t, HAL_CPU_MIDDLE), "4-6");
	CHECK_STR(class_list(&t, HAL_CPU_BIG), "7");
}

TEST(cpu_homogeneous_pi_is_one_class_for_every_name)
{
	struct hal_topology t;
	CHECK_EQ_INT(load("rpi4", &t), 0);
	CHECK_EQ_INT(t.nclasses, 1);
	CHECK_STR(class_list(&t, HAL_CPU_LITTLE), "0-3");
	CHECK_STR(class_list(&t, HAL_CPU_BIG), "0-3");
	CHECK_STR(class_list(&t, HAL_CPU_MIDDLE), "ENODEV");
}

TEST(cpu_offline_cpus_are_not_usable)
{
	struct hal_topology t;
	CHECK_EQ_INT(load("phone-offline", &t), 0);
	CHECK_EQ_INT(t.ncpus, 8);
	CHECK(!t.cpu[6].online && !t.cpu[7].online && t.cpu[5].online);
	CHECK_STR(class_list(&t, HAL_CPU_BIG), "4-5");
	CHECK_STR(class_list(&t, HAL_CPU_LITTLE), "0-3");
}

TEST(cpu_cpuset_without_big_cores_is_a_clear_error)
{
	struct hal_topology t;
	CHECK_EQ_INT(load("phone-cpuset", &t), 0);
	CHECK_EQ_INT(t.nclasses, 2);
	CHECK_STR(class_list(&t, HAL_CPU_LITTLE), "0-3");
	CHECK_STR(class_list(&t, HAL_CPU_BIG), "EACCES");
	CHECK_EQ_INT(hal_pin_to_class(&t, 0, HAL_CPU_BIG), -EACCES);
}

TEST(cpu_falls_back_to_cpufreq)
{
	struct hal_topology t;
	CHECK_EQ_INT(load("phone-cpufreq", &t), 0);
	CHECK_EQ_INT(t.source, HAL_CPU_SRC_CPUFREQ);
	CHECK(strstr(t.reason, "cpu_capacity of cpu0 missing") != NULL);
	CHECK_STR(class_list(&t, HAL_CPU_LITTLE), "0-3");
	CHECK_STR(class_list(&t, HAL_CPU_BIG), "4-7");
}

TEST(cpu_falls_back_to_midr)
{
	struct hal_topology t;
	CHECK_EQ_INT(load("phone-midr", &t), 0);
	CHECK_EQ_INT(t.source, HAL_CPU_SRC_MIDR);
	CHECK_STR(class_list(&t, HAL_CPU_LITTLE), "0-3");
	CHECK_STR(class_list(&t, HAL_CPU_BIG), "4-7");
}

TEST(cpu_missing_files_give_one_class)
{
	struct hal_topology t;
	CHECK_EQ_INT(load("missing", &t), 0);
	CHECK_EQ_INT(t.ncpus, 4);
	CHECK_EQ_INT(t.source, HAL_CPU_SRC_NONE);
	CHECK_EQ_INT(t.nclasses, 1);
	CHECK_STR(class_list(&t, HAL_CPU_LITTLE), "0-3");
	CHECK(strstr(t.reason, "no proc/cpuinfo") != NULL);
}

TEST(cpu_no_tree_at_all_is_an_error)
{
	struct hal_topology t;
	CHECK_EQ_INT(load("does-not-exist", &t), -ENOENT);
}

TEST(cpulist_parses_kernel_lists)
{
	uint64_t bits[2];
	bool trunc;
	CHECK_EQ_INT(hal_cpulist_parse("0-3,6,8-9", bits, 128, &trunc), 0);
	CHECK_EQ_U64(bits[0], 0x34f);
	CHECK(!trunc);
	CHECK_EQ_INT(hal_cpulist_parse("", bits, 128, NULL), 0);
	CHECK_EQ_U64(bits[0], 0);
	CHECK_EQ_INT(hal_cpulist_parse("0-200", bits, 128, &trunc), 0);
	CHECK(trunc);
	CHECK_EQ_U64(bits[1], UINT64_MAX);
	const char *bad[] = { "3-1", "-1",  "1-",	   "1,,2",	   "1,",
			      "a",   "1 2", "99999999999", "0-4294967296", "1\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (hal_cpulist_parse(bad[i], bits, 128, NULL) != -EINVAL)
			test_fail(__FILE__, __LINE__, "\"%s\" accepted", bad[i]);
	unsigned ids[] = { 0, 1, 2, 3, 6, 8, 9 };
	char out[32];
	hal_cpulist_format(ids, 7, out, sizeof(out));
	CHECK_STR(out, "0-3,6,8-9");
	hal_cpulist_format(ids, 7, out, 6);
	CHECK_STR(out, "0-3,6");
	hal_cpulist_format(ids, 7, out, 5); /* what does not fit is cut at a whole range */
	CHECK_STR(out, "0-3");
}

TEST(cpu_pin_calling_thread_to_little)
{
	/* On the real machine: LITTLE always exists (one class is also LITTLE). */
	struct hal_topology t;
	CHECK_EQ_INT(hal_topology_load(&t), 0);
	CHECK_EQ_INT(hal_pin_to_class(&t, 0, HAL_CPU_LITTLE), 0);
	enum hal_cpu_class cls = HAL_CPU_LITTLE;
	CHECK_EQ_INT(hal_cpu_class_parse("Big", &cls), 0);
	CHECK_EQ_INT(cls, HAL_CPU_BIG);
	CHECK_EQ_INT(hal_cpu_class_parse("huge", &cls), -EINVAL);
}

struct parked {
	_Atomic pid_t tid;
	_Atomic int release;
};

static void *park(void *arg)
{
	struct parked *p = arg;
	atomic_store(&p->tid, (pid_t)syscall(SYS_gettid));
	while (!atomic_load(&p->release))
		sched_yield();
	return NULL;
}

TEST(cpu_pin_another_thread_by_tid)
{
	struct hal_topology t;
	CHECK_EQ_INT(hal_topology_load(&t), 0);
	unsigned ids[CONFIG_HAL_MAX_CPUS];
	int n = hal_topology_class_cpus(&t, HAL_CPU_BIG, ids, CONFIG_HAL_MAX_CPUS);
	CHECK(n > 0);

	struct parked p = { 0 };
	pthread_t th;
	CHECK_EQ_INT(pthread_create(&th, NULL, park, &p), 0);
	while (!atomic_load(&p.tid))
		sched_yield();
	CHECK_EQ_INT(hal_pin_to_class(&t, atomic_load(&p.tid), HAL_CPU_BIG), 0);

	cpu_set_t set;
	CHECK_EQ_INT(sched_getaffinity(atomic_load(&p.tid), sizeof(set), &set), 0);
	CHECK_EQ_INT(CPU_COUNT(&set), n);
	for (int i = 0; i < n; i++)
		CHECK(CPU_ISSET(ids[i], &set));
	atomic_store(&p.release, 1);
	pthread_join(th, NULL);
}

/* Random strings over the characters a CPU list is made of: whatever parses must format
 * back to a list that parses to the same set (and nothing crashes on the rest). */
TEST(cpulist_fuzz_round_trip)
{
	static const char alphabet[] = "0123456789,-- \n9";
	uint32_t x = 2463534242u; /* xorshift32: the same cases on every run and machine */
	int parsed = 0;
	for (int iter = 0; iter < 50000; iter++) {
		char s[24];
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		int len = (int)(x % (sizeof(s) - 1));
		for (int i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			s[i] = alphabet[x % (sizeof(alphabet) - 1)];
		}
		s[len] = '\0';
		uint64_t a[2], b[2];
		if (hal_cpulist_parse(s, a, 128, NULL) != 0)
			continue;
		parsed++;
		unsigned ids[128], n = 0;
		for (unsigned i = 0; i < 128; i++)
			if (a[i / 64] >> (i % 64) & 1)
				ids[n++] = i;
		char out[512];
		hal_cpulist_format(ids, n, out, sizeof(out));
		if (hal_cpulist_parse(out, b, 128, NULL) != 0 || a[0] != b[0] || a[1] != b[1])
			test_fail(__FILE__, __LINE__, "\"%s\" -> \"%s\" does not round-trip", s,
				  out);
	}
	printf("    %d of 50000 random lists parsed\n", parsed);
	CHECK(parsed > 100);
}

/* ---- the pin keeper: CPUs that come and go ---- */

/* Writes text into root/rel, making the folders on the way. */
static void put_file(const char *root, const char *rel, const char *text)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The kernel of the fake machine: one thread's CPUs. */
struct fake_kernel {
	uint64_t cpus[HAL_CPU_WORDS];
	int sets;
};

static int fake_set(void *ctx, pid_t tid, const uint64_t *cpus)
{
	struct fake_kernel *k = ctx;
	CHECK_EQ_INT(tid, 0);
	memcpy(k->cpus, cpus, sizeof(k->cpus));
	k->sets++;
	return 0;
}

static int fake_get(void *ctx, pid_t tid, uint64_t *cpus)
{
	struct fake_kernel *k = ctx;
	CHECK_EQ_INT(tid, 0);
	memcpy(cpus, k->cpus, sizeof(k->cpus));
	return 0;
}

/* The fake kernel's CPUs of the thread, as a list. */
static const char *fake_list(const struct fake_kernel *k)
{
	static char buf[128];
	unsigned ids[CONFIG_HAL_MAX_CPUS], n = 0;
	for (unsigned i = 0; i < CONFIG_HAL_MAX_CPUS; i++)
		if (k->cpus[i / 64] >> (i % 64) & 1)
			ids[n++] = i;
	hal_cpulist_format(ids, n, buf, sizeof(buf));
	return buf;
}

/*
 * jittd started while no LITTLE CPU was online said "cannot pin to the LITTLE CPUs:
 * Permission denied" and stayed on the big CPUs after they came back. The keeper looks
 * again (on a timer while nothing is usable), pins when they come back, follows them when
 * some go, and comes back to all of them: the CPUs allowed before its first pin, not the
 * narrower set it pinned to meanwhile. A 4+4 phone in a fake tree; the fake kernel moves
 * the thread to every CPU when all of its own go offline, as Linux does.
 */
TEST(cpu_keeper_pins_when_little_cpus_come_back_online)
{
	char root[512];
	snprintf(root, sizeof(root), "%s/phone", test_tmpdir());
	put_file(root, "sys/devices/system/cpu/present", "0-7\n");
	put_file(root, "sys/devices/system/cpu/online", "4-7\n");
	for (int i = 0; i < 8; i++) {
		char rel[96];
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cpu_capacity", i);
		put_file(root, rel, i < 4 ? "381\n" : "1024\n");
	}
	put_file(root, "proc/self/status", "Name:\tjittd\nCpus_allowed_list:\t0-7\n");
	CHECK_EQ_INT(hal_root_set(root), 0);

	struct fake_kernel fk = { .cpus = { 0xff }, .sets = 0 };
	struct hal_pin_keeper k;
	hal_pin_keeper_init(&k, HAL_CPU_LITTLE, false);
	k.set_cpus = fake_set;
	k.get_cpus = fake_get;
	k.ctx = &fk;

	/* Started with the LITTLE CPUs offline: not pinned, and a timer to look again. */
	CHECK_EQ_INT(hal_pin_keep(&k, 1000), -EACCES);
	CHECK(k.changed);
	CHECK_EQ_INT(fk.sets, 0);
	CHECK_EQ_INT(hal_pin_keeper_deadline(&k), 1000 + HAL_PIN_RECHECK_MS);

	/* They come back: the next look (not before its time) pins to them. */
	put_file(root, "sys/devices/system/cpu/online", "0-7\n");
	CHECK_EQ_INT(hal_pin_keep(&k, 1001), -EACCES);
	CHECK_EQ_INT(fk.sets, 0);
	CHECK_EQ_INT(hal_pin_keep(&k, hal_pin_keeper_deadline(&k)), 0);
	CHECK(k.changed);
	CHECK_STR(k.cpus, "0-3");
	CHECK_STR(fake_list(&fk), "0-3");
	CHECK_EQ_INT(hal_pin_keeper_deadline(&k), INT64_MAX); /* pinned: no timer */

	/* Nothing changed: a look reads the online list and the thread's CPUs, pins nothing. */
	CHECK_EQ_INT(hal_pin_keep(&k, 20000), 0);
	CHECK(!k.changed);
	CHECK_EQ_INT(fk.sets, 1);

	/* All four go offline: the kernel moves the thread anywhere; the keeper says so and
	 * looks again on its timer. */
	put_file(root, "sys/devices/system/cpu/online", "4-7\n");
	fk.cpus[0] = 0xff;
	CHECK_EQ_INT(hal_pin_keep(&k, 30000), -EACCES);
	CHECK(k.changed);
	CHECK_STR(k.cpus, "");
	CHECK_EQ_INT(hal_pin_keeper_deadline(&k), 30000 + HAL_PIN_RECHECK_MS);

	/* Two come back, then all four: pinned to what is online, then to all of them. */
	put_file(root, "sys/devices/system/cpu/online", "2-7\n");
	CHECK_EQ_INT(hal_pin_keep(&k, 40000), 0);
	CHECK_STR(fake_list(&fk), "2-3");
	put_file(root, "sys/devices/system/cpu/online", "0-7\n");
	CHECK_EQ_INT(hal_pin_keep(&k, 50000), 0);
	CHECK(k.changed);
	CHECK_STR(fake_list(&fk), "0-3");

	/* Moved by someone else while the online list stayed: put back. */
	fk.cpus[0] = 0xf0;
	CHECK_EQ_INT(hal_pin_keep(&k, 60000), 0);
	CHECK_STR(fake_list(&fk), "0-3");
	hal_root_set(NULL);
}

/* On the real machine, the keeper pins the caller where hal_pin_to_class would. */
TEST(cpu_keeper_pins_the_caller_on_this_machine)
{
	struct hal_topology t;
	CHECK_EQ_INT(hal_topology_load(&t), 0);
	unsigned ids[CONFIG_HAL_MAX_CPUS];
	int n = hal_topology_class_cpus(&t, HAL_CPU_LITTLE, ids, CONFIG_HAL_MAX_CPUS);
	CHECK(n > 0);
	struct hal_pin_keeper k;
	hal_pin_keeper_init(&k, HAL_CPU_LITTLE, true);
	CHECK_EQ_INT(hal_pin_keep(&k, 0), 0);
	cpu_set_t set;
	CHECK_EQ_INT(sched_getaffinity(0, sizeof(set), &set), 0);
	CHECK_EQ_INT(CPU_COUNT(&set), n);
	for (int i = 0; i < n; i++)
		CHECK(CPU_ISSET(ids[i], &set));
}
