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
