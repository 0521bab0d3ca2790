/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* sched_setaffinity, CPU_SET */
#include "cpu.h"
#include "fs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAXCPU CONFIG_HAL_MAX_CPUS
#define NWORDS ((MAXCPU + 63) / 64)
/* Larger CPU numbers in a list are garbage, not a machine: stop before looping on them. */
#define CPULIST_ID_LIMIT 65536u

static bool bit_test(const uint64_t *bits, unsigned i)
{
	return bits[i / 64] >> (i % 64) & 1;
}

static void bit_set(uint64_t *bits, unsigned i)
{
	bits[i / 64] |= (uint64_t)1 << (i % 64);
}

static const char *parse_id(const char *s, unsigned *id)
{
	if (!isdigit((unsigned char)*s))
		return NULL;
	unsigned long v = 0;
	while (isdigit((unsigned char)*s)) {
		v = v * 10 + (unsigned)(*s++ - '0');
		if (v >= CPULIST_ID_LIMIT)
			return NULL;
	}
	*id = (unsigned)v;
	return s;
}

int hal_cpulist_parse(const char *s, uint64_t *bits, unsigned nbits, bool *truncated)
{
	memset(bits, 0, (nbits + 63) / 64 * sizeof(*bits));
	if (truncated)
		*truncated = false;
	if (*s == '\0')
		return 0; /* the kernel writes an empty list for an empty set */
	for (;;) {
		unsigned first, last;
		s = parse_id(s, &first);
		if (!s)
			return -EINVAL;
		last = first;
		if (*s == '-') {
			s = parse_id(s + 1, &last);
			if (!s || last < first)
				return -EINVAL;
		}
		for (unsigned i = first; i <= last; i++) {
			if (i < nbits)
				bit_set(bits, i);
			else if (truncated)
				*truncated = true;
		}
		if (*s == '\0')
			return 0;
		if (*s++ != ',')
			return -EINVAL;
	}
}

void hal_cpulist_format(const unsigned *ids, unsigned n, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < n;) {
		unsigned j = i;
		while (j + 1 < n && ids[j + 1] == ids[j] + 1)
			j++;
		int w = j == i ? snprintf(buf + len, size - len, "%s%u", len ? "," : "", ids[i])
			       : snprintf(buf + len, size - len, "%s%u-%u", len ? "," : "", ids[i],
					  ids[j]);
		if (w < 0 || (size_t)w >= size - len) {
			buf[len] = '\0'; /* cut at the last whole range that fits */
			return;
		}
		len += (size_t)w;
		i = j + 1;
	}
}

const char *hal_cpu_class_name(enum hal_cpu_class cls)
{
	static const char *const names[] = { "LITTLE", "middle", "big" };
	return cls < HAL_CPU_NCLASSES ? names[cls] : "?";
}

const char *hal_cpu_source_name(enum hal_cpu_source source)
{
	static const char *const names[] = { "cpu_capacity", "cpufreq", "midr", "none" };
	return source <= HAL_CPU_SRC_NONE ? names[source] : "?";
}

int hal_cpu_class_parse(const char *name, enum hal_cpu_class *cls)
{
	for (int c = 0; c < HAL_CPU_NCLASSES; c++) {
		if (strcasecmp(name, hal_cpu_class_name(c)) == 0) {
			*cls = c;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- which CPUs exist, are online, are allowed ---- */

static int read_cpulist(const char *rel, uint64_t *bits, bool *truncated)
{
	char buf[4096];
	int n = hal_read_text(rel, buf, sizeof(buf));
	if (n < 0)
		return n;
	return hal_cpulist_parse(buf, bits, MAXCPU, truncated);
}

/* Present CPUs: the kernel's list, else the cpuN folders. */
static int find_present(uint64_t *present, bool *truncated)
{
	if (read_cpulist("sys/devices/system/cpu/present", present, truncated) == 0) {
		for (unsigned w = 0; w < NWORDS; w++)
			if (present[w])
				return 0;
	}
	memset(present, 0, NWORDS * sizeof(*present));
	char path[PATH_MAX];
	if (hal_path(path, sizeof(path), "sys/devices/system/cpu") != 0)
		return -ENAMETOOLONG;
	DIR *dir = opendir(path);
	if (!dir)
		return -ENOENT;
	bool any = false;
	struct dirent *e;
	while ((e = readdir(dir))) {
		unsigned id;
		const char *end;
		if (strncmp(e->d_name, "cpu", 3) != 0 || !(end = parse_id(e->d_name + 3, &id)) ||
		    *end)
			continue;
		if (id < MAXCPU) {
			bit_set(present, id);
			any = true;
		} else {
			*truncated = true;
		}
	}
	closedir(dir);
	return any ? 0 : -ENOENT;
}

static void find_online(struct hal_topology *t)
{
	uint64_t online[NWORDS];
	if (read_cpulist("sys/devices/system/cpu/online", online, NULL) == 0) {
		bool any = false;
		for (unsigned i = 0; i < t->ncpus; i++)
			any |= t->cpu[i].online = bit_test(online, t->cpu[i].id);
		if (any)
			return; /* else a broken list: this code runs on some CPU */
	}
	/* Per-CPU files; cpu0 usually has none because it cannot go offline. */
	for (unsigned i = 0; i < t->ncpus; i++) {
		char rel[96];
		uint64_t v;
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%u/online", t->cpu[i].id);
		t->cpu[i].online = hal_read_u64(rel, &v) != 0 || v != 0;
	}
}

/* Cpus_allowed_list of a fake tree's proc/self/status; -ENOENT when it has none. */
static int fake_allowed(uint64_t *allowed)
{
	FILE *f = hal_fopen("proc/self/status");
	if (!f)
		return -ENOENT;
	char line[4096];
	int err = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Cpus_allowed_list:", 18) != 0)
			continue;
		char *v = line + 18;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = '\0';
		err = hal_cpulist_parse(v, allowed, MAXCPU, NULL);
		break;
	}
	fclose(f);
	return err;
}

static void find_allowed(struct hal_topology *t)
{
	uint64_t allowed[NWORDS];
	bool known = false;
	if (hal_root_is_real()) {
		/* The calling thread's set: the one a thread it creates inherits. */
		cpu_set_t set;
		if (sched_getaffinity(0, sizeof(set), &set) == 0) {
			memset(allowed, 0, sizeof(allowed));
			for (unsigned i = 0; i < MAXCPU && i < CPU_SETSIZE; i++)
				if (CPU_ISSET(i, &set))
					bit_set(allowed, i);
			known = true;
		}
	} else {
		/* The host's affinity says nothing about a fake machine: ask the fake. */
		known = fake_allowed(allowed) == 0;
	}
	for (unsigned i = 0; i < t->ncpus; i++)
		t->cpu[i].allowed = !known || bit_test(allowed, t->cpu[i].id);
}

/* ---- ranking: capacity, then cpufreq, then core type ---- */

/* Append to the topology's reason: each source that was passed over says why. */
__attribute__((format(printf, 2, 3))) static void note(struct hal_topology *t, const char *fmt, ...)
{
	size_t len = strlen(t->reason);
	if (len + 3 >= sizeof(t->reason))
		return;
	if (len) {
		memcpy(t->reason + len, "; ", 3);
		len += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->reason + len, sizeof(t->reason) - len, fmt, ap);
	va_end(ap);
}

static int rank_from_file(struct hal_topology *t, const char *fmt, const char *what)
{
	for (unsigned i = 0; i < t->ncpus; i++) {
		struct hal_cpu *c = &t->cpu[i];
		char rel[128];
		uint64_t v;
		snprintf(rel, sizeof(rel), fmt, c->id);
		int err = hal_read_u64(rel, &v);
		if (err == 0 && v == 0)
			err = -EINVAL; /* a core with no capacity is a broken file, not a core */
		if (err == 0) {
			c->rank = v;
			c->ranked = true;
		} else if (c->online) {
			note(t, "%s of cpu%u %s", what, c->id,
			     err == -ENOENT ? "missing" : "is not a number");
			return err;
		}
	}
	return 0;
}

/* Relative single-thread performance of ARM core types, by MIDR implementer and part
 * number (ARM TRMs; Qualcomm's Kryo parts score as the ARM core they derive from). Only
 * the order matters: it separates the clusters of one SoC. */
static const struct {
	uint16_t implementer, part, score;
} core_scores[] = {
	{ 0x41, 0xc07, 10 },  /* Cortex-A7 */
	{ 0x41, 0xd04, 12 },  /* Cortex-A35 */
	{ 0x41, 0xd03, 15 },  /* Cortex-A53 */
	{ 0x41, 0xd05, 18 },  /* Cortex-A55 */
	{ 0x41, 0xd46, 20 },  /* Cortex-A510 */
	{ 0x41, 0xd80, 22 },  /* Cortex-A520 */
	{ 0x41, 0xc0f, 30 },  /* Cortex-A15 */
	{ 0x41, 0xc0e, 30 },  /* Cortex-A17 */
	{ 0x41, 0xd07, 35 },  /* Cortex-A57 */
	{ 0x41, 0xd08, 40 },  /* Cortex-A72 */
	{ 0x41, 0xd09, 42 },  /* Cortex-A73 */
	{ 0x41, 0xd0a, 48 },  /* Cortex-A75 */
	{ 0x41, 0xd0b, 55 },  /* Cortex-A76 */
	{ 0x41, 0xd0d, 60 },  /* Cortex-A77 */
	{ 0x41, 0xd41, 65 },  /* Cortex-A78 */
	{ 0x41, 0xd47, 70 },  /* Cortex-A710 */
	{ 0x41, 0xd4d, 75 },  /* Cortex-A715 */
	{ 0x41, 0xd81, 80 },  /* Cortex-A720 */
	{ 0x41, 0xd44, 85 },  /* Cortex-X1 */
	{ 0x41, 0xd48, 90 },  /* Cortex-X2 */
	{ 0x41, 0xd4e, 95 },  /* Cortex-X3 */
	{ 0x41, 0xd82, 100 }, /* Cortex-X4 */
	{ 0x51, 0x801, 15 },  /* Kryo 2xx Silver (A53) */
	{ 0x51, 0x803, 18 },  /* Kryo 3xx Silver (A55) */
	{ 0x51, 0x805, 18 },  /* Kryo 4xx Silver (A55) */
	{ 0x51, 0x800, 42 },  /* Kryo 2xx Gold (A73) */
	{ 0x51, 0x802, 48 },  /* Kryo 3xx Gold (A75) */
	{ 0x51, 0x804, 55 },  /* Kryo 4xx Gold (A76) */
};

static int core_score(uint64_t implementer, uint64_t part)
{
	for (size_t i = 0; i < sizeof(core_scores) / sizeof(core_scores[0]); i++)
		if (core_scores[i].implementer == implementer && core_scores[i].part == part)
			return core_scores[i].score;
	return -1;
}

static struct hal_cpu *cpu_by_id(struct hal_topology *t, uint64_t id)
{
	for (unsigned i = 0; i < t->ncpus; i++)
		if (t->cpu[i].id == id)
			return &t->cpu[i];
	return NULL;
}

/* "key<tabs>: value" -> value, or NULL when the line is another key. */
static const char *cpuinfo_value(const char *line, const char *key)
{
	size_t n = strlen(key);
	if (strncmp(line, key, n) != 0)
		return NULL;
	line += n;
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line++ != ':')
		return NULL;
	while (*line == ' ' || *line == '\t')
		line++;
	return line;
}

static int rank_from_midr(struct hal_topology *t)
{
	FILE *f = hal_fopen("proc/cpuinfo");
	if (!f) {
		note(t, "no proc/cpuinfo");
		return -ENOENT;
	}
	char line[512];
	struct hal_cpu *cur = NULL;
	uint64_t implementer = 0;
	int err = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		const char *v;
		uint64_t x;
		if ((v = cpuinfo_value(line, "processor"))) {
			cur = hal_parse_u64(v, 10, &x) == 0 ? cpu_by_id(t, x) : NULL;
			implementer = 0;
		} else if ((v = cpuinfo_value(line, "CPU implementer")) && cur) {
			if (strncmp(v, "0x", 2) != 0 || hal_parse_u64(v + 2, 16, &implementer) != 0)
				implementer = 0;
		} else if ((v = cpuinfo_value(line, "CPU part")) && cur) {
			int score = -1;
			if (strncmp(v, "0x", 2) == 0 && hal_parse_u64(v + 2, 16, &x) == 0)
				score = core_score(implementer, x);
			if (score < 0) {
				note(t, "core type of cpu%u unknown", cur->id);
				err = -ENOENT;
				break;
			}
			cur->rank = (uint64_t)score;
			cur->ranked = true;
		}
	}
	fclose(f);
	for (unsigned i = 0; !err && i < t->ncpus; i++) {
		if (t->cpu[i].online && !t->cpu[i].ranked) {
			note(t, "no core type for cpu%u in proc/cpuinfo", t->cpu[i].id);
			err = -ENOENT;
		}
	}
	return err;
}

static void clear_ranks(struct hal_topology *t)
{
	for (unsigned i = 0; i < t->ncpus; i++) {
		t->cpu[i].ranked = false;
		t->cpu[i].rank = 0;
	}
}

/* Lowest distinct rank is LITTLE, highest big, any in between middle. */
static void classify(struct hal_topology *t)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (unsigned i = 0; i < t->ncpus; i++) {
		if (!t->cpu[i].ranked)
			continue;
		lo = t->cpu[i].rank < lo ? t->cpu[i].rank : lo;
		hi = t->cpu[i].rank > hi ? t->cpu[i].rank : hi;
	}
	bool middle = false;
	for (unsigned i = 0; i < t->ncpus; i++) {
		struct hal_cpu *c = &t->cpu[i];
		if (!c->ranked)
			continue;
		if (c->rank == lo) {
			c->cls = HAL_CPU_LITTLE;
		} else if (c->rank == hi) {
			c->cls = HAL_CPU_BIG;
		} else {
			c->cls = HAL_CPU_MIDDLE;
			middle = true;
		}
	}
	t->nclasses = lo == hi ? 1 : middle ? 3 : 2;
}

int hal_topology_load(struct hal_topology *t)
{
	memset(t, 0, sizeof(*t));
	uint64_t present[NWORDS];
	int err = find_present(present, &t->truncated);
	if (err)
		return err;
	for (unsigned id = 0; id < MAXCPU; id++) {
		if (bit_test(present, id)) {
			t->cpu[t->ncpus].id = (uint16_t)id;
			t->ncpus++;
		}
	}
	find_online(t);
	find_allowed(t);

	if (rank_from_file(t, "sys/devices/system/cpu/cpu%u/cpu_capacity", "cpu_capacity") == 0) {
		t->source = HAL_CPU_SRC_CAPACITY;
	} else if (clear_ranks(t),
		   rank_from_file(t, "sys/devices/system/cpu/cpu%u/cpufreq/cpuinfo_max_freq",
				  "cpuinfo_max_freq") == 0) {
		t->source = HAL_CPU_SRC_CPUFREQ;
	} else if (clear_ranks(t), rank_from_midr(t) == 0) {
		t->source = HAL_CPU_SRC_MIDR;
	} else {
		/* One class: every CPU alike. Honest, and pinning to "LITTLE" still works. */
		clear_ranks(t);
		for (unsigned i = 0; i < t->ncpus; i++)
			t->cpu[i].ranked = true;
		t->source = HAL_CPU_SRC_NONE;
	}
	classify(t);
	return 0;
}

int hal_topology_class_cpus(const struct hal_topology *t, enum hal_cpu_class cls, unsigned *ids,
			    unsigned max)
{
	if (cls >= HAL_CPU_NCLASSES)
		return -EINVAL;
	if (t->nclasses == 1 && cls == HAL_CPU_BIG)
		cls = HAL_CPU_LITTLE; /* one class is both the fastest and the slowest */
	int n = 0;
	bool exists = false;
	for (unsigned i = 0; i < t->ncpus; i++) {
		const struct hal_cpu *c = &t->cpu[i];
		if (!c->ranked || c->cls != cls)
			continue;
		exists = true;
		if (c->online && c->allowed && (unsigned)n < max)
			ids[n++] = c->id;
	}
	if (!exists)
		return -ENODEV;
	return n ? n : -EACCES;
}

int hal_thread_name(pid_t tid, char *buf, size_t size)
{
	char rel[64], comm[64]; /* the kernel keeps 15 bytes (TASK_COMM_LEN) */
	if (size == 0)
		return -EINVAL;
	snprintf(rel, sizeof(rel), "proc/self/task/%d/comm", (int)tid);
	int n = hal_read_text(rel, comm, sizeof(comm)); /* bounded; the newline stripped */
	if (n < 0)
		return n;
	snprintf(buf, size, "%s", comm);
	return 0;
}

/* ---- pinning ---- */

static int kernel_set_cpus(void *ctx, pid_t tid, const uint64_t *cpus)
{
	(void)ctx;
	cpu_set_t set;
	CPU_ZERO(&set);
	for (unsigned i = 0; i < MAXCPU && i < CPU_SETSIZE; i++)
		if (bit_test(cpus, i))
			CPU_SET(i, &set);
	return sched_setaffinity(tid, sizeof(set), &set) ? -errno : 0;
}

static int kernel_get_cpus(void *ctx, pid_t tid, uint64_t *cpus)
{
	(void)ctx;
	cpu_set_t set;
	if (sched_getaffinity(tid, sizeof(set), &set))
		return -errno;
	memset(cpus, 0, NWORDS * sizeof(*cpus));
	for (unsigned i = 0; i < MAXCPU && i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			bit_set(cpus, i);
	return 0;
}

void hal_pin_keeper_init(struct hal_pin_keeper *k, enum hal_cpu_class cls, bool all_threads)
{
	memset(k, 0, sizeof(*k));
	k->cls = cls;
	k->all_threads = all_threads;
	k->err = -EAGAIN; /* not looked yet */
	k->set_cpus = kernel_set_cpus;
	k->get_cpus = kernel_get_cpus;
}

/* Pins the caller, or every thread of the process (its proc/self/task; under a fake root
 * without one, the caller). The first error, after trying them all. */
static int pin_threads(struct hal_pin_keeper *k, const uint64_t *cpus)
{
	DIR *dir = NULL;
	char path[PATH_MAX];
	if (k->all_threads && hal_path(path, sizeof(path), "proc/self/task") == 0)
		dir = opendir(path);
	if (!dir)
		return k->set_cpus(k->ctx, 0, cpus);
	int err = 0;
	struct dirent *e;
	while ((e = readdir(dir))) {
		unsigned tid;
		const char *end = parse_id(e->d_name, &tid);
		if (!end || *end)
			continue;
		int r = k->set_cpus(k->ctx, (pid_t)tid, cpus);
		if (r && r != -ESRCH && !err) /* a thread that just exited is no error */
			err = r;
	}
	closedir(dir);
	return err;
}

/* The full look: the topology, the class's usable CPUs, the pin. */
static int look(struct hal_pin_keeper *k, uint64_t *pinned)
{
	struct hal_topology *t = malloc(sizeof(*t)); /* 2.5 KiB: not on a small stack */
	if (!t)
		return -ENOMEM;
	int err = hal_topology_load(t);
	if (!err) {
		for (unsigned i = 0; i < t->ncpus; i++) {
			if (!k->started && t->cpu[i].allowed)
				bit_set(k->allowed, t->cpu[i].id);
			t->cpu[i].allowed = bit_test(k->allowed, t->cpu[i].id);
		}
		k->started = true;
		unsigned ids[MAXCPU];
		int n = hal_topology_class_cpus(t, k->cls, ids, MAXCPU);
		err = n < 0 ? n : 0;
		for (int i = 0; i < n; i++)
			bit_set(pinned, ids[i]);
		if (n > 0) {
			err = pin_threads(k, pinned);
			hal_cpulist_format(ids, (unsigned)n, k->cpus, sizeof(k->cpus));
		}
	}
	free(t);
	return err;
}

int hal_pin_keep(struct hal_pin_keeper *k, int64_t now_ms)
{
	k->changed = false;
	if (k->next_ms && now_ms < k->next_ms)
		return k->err;
	k->next_ms = now_ms + HAL_PIN_RECHECK_MS;
	/* The cheap look: nothing came or went, and the caller is where it was put. */
	char online[sizeof(k->online)];
	uint64_t now_cpus[NWORDS];
	int r = hal_read_text("sys/devices/system/cpu/online", online, sizeof(online));
	if (r < 0)
		online[0] = '\0'; /* unreadable: every look is a full one */
	bool same = r >= 0 && k->started && strcmp(online, k->online) == 0;
	if (same && k->err == 0)
		same = k->get_cpus(k->ctx, 0, now_cpus) == 0 &&
		       !memcmp(now_cpus, k->pinned, sizeof(now_cpus));
	if (same)
		return k->err;
	uint64_t pinned[NWORDS] = { 0 };
	int err = look(k, pinned);
	if (err)
		k->cpus[0] = '\0';
	k->changed = err != k->err || (!err && memcmp(pinned, k->pinned, sizeof(pinned)));
	k->err = err;
	memcpy(k->pinned, pinned, sizeof(pinned));
	memcpy(k->online, online, sizeof(online));
	return err;
}

int64_t hal_pin_keeper_deadline(const struct hal_pin_keeper *k)
{
	/* -EACCES: the class has CPUs, none online (and allowed) now; -EINVAL: they went
	 * offline between the look and the pin. Both may change with hotplug. */
	return k->err == -EACCES || k->err == -EINVAL ? k->next_ms : INT64_MAX;
}

int hal_pin_to_class(const struct hal_topology *t, pid_t tid, enum hal_cpu_class cls)
{
	unsigned ids[MAXCPU];
	int n = hal_topology_class_cpus(t, cls, ids, MAXCPU);
	if (n < 0)
		return n;
	cpu_set_t set;
	CPU_ZERO(&set);
	for (int i = 0; i < n; i++)
		if (ids[i] < CPU_SETSIZE)
			CPU_SET(ids[i], &set);
	if (sched_setaffinity(tid, sizeof(set), &set) != 0)
		return -errno;
	return 0;
}
