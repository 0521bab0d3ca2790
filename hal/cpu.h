/* SPDX-License-Identifier: MIT */
/*
 * hal/cpu.h - CPU capacity classes (big.LITTLE) and thread pinning.
 *
 * Phones mix fast and slow cores; jitt keeps its own work (the control thread, jittd) on
 * the LITTLE cores so it never competes with the app it watches (Hubble section 4.3). The
 * classes come from the best source the kernel offers:
 *   1. cpu_capacity (the scheduler's own view, from the device tree or ACPI),
 *   2. cpufreq's cpuinfo_max_freq,
 *   3. the core type (MIDR part number) in /proc/cpuinfo, for known ARM cores,
 *   4. otherwise one class holding every CPU.
 * Distinct values order the classes: the lowest is LITTLE, the highest big, everything in
 * between (the middle cluster of a 1+3+4 phone) MIDDLE. With one class, LITTLE and big both
 * name it, so "pin to LITTLE" works everywhere.
 *
 * Only online CPUs in the process's allowed set (sched_getaffinity; under a fake root, the
 * fake's proc/self/status) are usable; the others are listed but never pinned to.
 */
#ifndef JITT_HAL_CPU_H
#define JITT_HAL_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum hal_cpu_class {
	HAL_CPU_LITTLE,
	HAL_CPU_MIDDLE,
	HAL_CPU_BIG,
	HAL_CPU_NCLASSES,
};

enum hal_cpu_source {
	HAL_CPU_SRC_CAPACITY,
	HAL_CPU_SRC_CPUFREQ,
	HAL_CPU_SRC_MIDR,
	HAL_CPU_SRC_NONE, /* one class */
};

struct hal_cpu {
	uint16_t id;
	bool online;
	bool allowed;
	bool ranked; /* false: no rank could be read (an offline CPU missing from cpuinfo) */
	enum hal_cpu_class cls; /* meaningful only when ranked */
	uint64_t rank; /* the value that was compared: capacity, kHz or a core-type score */
};

struct hal_topology {
	struct hal_cpu cpu[CONFIG_HAL_MAX_CPUS];
	unsigned ncpus;	   /* present CPUs, in id order */
	unsigned nclasses; /* distinct classes found: 1, 2 or 3 */
	enum hal_cpu_source source;
	bool truncated;	  /* CPUs numbered CONFIG_HAL_MAX_CPUS or more were ignored */
	char reason[160]; /* why better sources were passed over; "" with cpu_capacity */
};

/* Read the topology through hal's root. Returns 0, or -ENOENT when no CPU is found at all. */
int hal_topology_load(struct hal_topology *topo);

/* A class's usable (online and allowed) CPUs, in id order, into ids[max]. Returns the
 * count, or -ENODEV when the machine has no CPU of that class, or -EACCES when it has but
 * none is online and allowed. */
int hal_topology_class_cpus(const struct hal_topology *topo, enum hal_cpu_class cls, unsigned *ids,
			    unsigned max);

/* Pin a thread (tid 0: the calling thread) to a class's usable CPUs. Returns 0, the errors
 * of hal_topology_class_cpus, or the -errno of sched_setaffinity. */
int hal_pin_to_class(const struct hal_topology *topo, pid_t tid, enum hal_cpu_class cls);

/*
 * Keeping threads on a class while CPUs come and go. A phone takes cores offline and back
 * (hotplug, thermal limits); a thread that tried to pin itself while its class had no CPU
 * online stayed wherever it was, and one whose class all went offline is moved by the
 * kernel to any CPU, and stays there when they come back. The keeper looks again:
 *
 *	hal_pin_keeper_init(&k, HAL_CPU_LITTLE, false);
 *	each wake-up:   hal_pin_keep(&k, now_ms);   (k.changed: worth a log line)
 *	poll timeout:   no later than hal_pin_keeper_deadline(&k)
 *
 * A look reads sys/devices/system/cpu/online (one small file) and the caller's CPUs, and
 * only when either changed since the last look loads the topology and pins again: to the
 * class's CPUs that are online and were allowed before the first pin (the launcher's or
 * the cpuset's choice; the threads' own CPUs after that are the keeper's). Looks are at
 * least HAL_PIN_RECHECK_MS apart; the deadline asks for a wake-up only while the class has
 * CPUs but none usable (offline now), so a pinned thread costs no wake-up at all.
 */
#define HAL_PIN_RECHECK_MS 5000
#define HAL_CPU_WORDS ((CONFIG_HAL_MAX_CPUS + 63) / 64)

struct hal_pin_keeper {
	enum hal_cpu_class cls;
	bool all_threads; /* every thread of this process (jittd), else only the caller */
	int err;	  /* the last look: 0 pinned, or why not (as hal_pin_to_class) */
	bool changed;	  /* the last hal_pin_keep() pinned elsewhere, or err changed */
	bool started;	  /* looked once: allowed[] holds the set before the first pin */
	char cpus[64];	  /* what it is pinned to, as a CPU list; "" when not pinned */
	char online[128]; /* sys/devices/system/cpu/online at the last look */
	uint64_t allowed[HAL_CPU_WORDS], pinned[HAL_CPU_WORDS];
	int64_t next_ms; /* the earliest next look */
	/* How a thread's CPUs are set and read (tid 0: the caller): sched_setaffinity and
	 * sched_getaffinity, from hal_pin_keeper_init; tests stand in for the kernel of a
	 * fake tree. */
	int (*set_cpus)(void *ctx, pid_t tid, const uint64_t *cpus);
	int (*get_cpus)(void *ctx, pid_t tid, uint64_t *cpus);
	void *ctx;
};

void hal_pin_keeper_init(struct hal_pin_keeper *k, enum hal_cpu_class cls, bool all_threads);
/* Look, unless the last look was less than HAL_PIN_RECHECK_MS ago (now_ms: any monotonic
 * clock in ms, the same at every call). Returns k->err. */
int hal_pin_keep(struct hal_pin_keeper *k, int64_t now_ms);
/* When the keeper wants to look without any other event: INT64_MAX for never (pinned, or
 * a reason waiting cannot change, such as no CPU of the class at all). */
int64_t hal_pin_keeper_deadline(const struct hal_pin_keeper *k);

/* The kernel's name of one of this process's threads ("proc/self/task/<tid>/comm" under
 * hal's root: the program's name, or what pthread_setname_np set), at most size - 1 bytes,
 * without the newline. Returns 0, or -errno (a thread that is gone: -ENOENT). */
int hal_thread_name(pid_t tid, char *buf, size_t size);

const char *hal_cpu_class_name(enum hal_cpu_class cls);
const char *hal_cpu_source_name(enum hal_cpu_source source);
/* Parse a class name ("little", "middle", "big", case-insensitive). 0 or -EINVAL. */
int hal_cpu_class_parse(const char *name, enum hal_cpu_class *cls);

/*
 * Parse a kernel CPU list ("0-3,6,8-9") into a bitmap of `nbits` bits (bits beyond it are
 * dropped and reported by *truncated, when given). Returns 0 or -EINVAL on any malformed
 * range. Formats ids back into "0-3,6" with hal_cpulist_format.
 */
int hal_cpulist_parse(const char *s, uint64_t *bits, unsigned nbits, bool *truncated);
void hal_cpulist_format(const unsigned *ids, unsigned n, char *buf, size_t size);

#endif
