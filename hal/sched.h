/* SPDX-License-Identifier: MIT */
/*
 * hal/sched.h - when a thread left its CPU and came back, and why: the kernel's
 * context-switch records (a frame can be slow because other processes held its CPU), so
 * that time a thread spent preempted (runnable, not running) is not counted as the self
 * time of whatever function it was in.
 *
 * Source 1, perf: one software "dummy" event per thread with context_switch and
 * sample_id_all (TID, TIME, CPU), its clock CLOCK_MONOTONIC (the trace file's header maps it
 * to timer ticks), read through a small mmapped ring that the kernel overwrites, oldest
 * first, as a flight recorder does (a read-only mapping written backward: the newest
 * record is always at data_head). Nothing runs on the traced thread: the kernel writes the
 * ring at each switch. Unprivileged at perf_event_paranoid 2 for one's own threads; refused
 * at Android's 3 and under seccomp filters that deny perf_event_open.
 *
 * Source 2, schedstat: /proc/self/task/TID/schedstat, the thread's time on a CPU and
 * waiting on a run queue, in ns, and its number of time slices. No per-switch times: it is
 * sampled (at frame boundaries) and the deltas say how much of a frame was preemption.
 *
 * The copied records are data from a file when jittd reads them: hal_sched_parse takes
 * any bytes, bounded, and says what it skipped.
 */
#ifndef JITT_HAL_SCHED_H
#define JITT_HAL_SCHED_H

#include "hal/perf_ring.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum hal_sched_kind {
	HAL_SCHED_IN = 1,	   /* back on a CPU */
	HAL_SCHED_OUT_PREEMPTED,   /* left its CPU runnable: preempted */
	HAL_SCHED_OUT_SLEEPING,	   /* left its CPU to sleep or block */
};

struct hal_sched_event {
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint32_t cpu;
	uint32_t kind; /* enum hal_sched_kind */
};

/*
 * Start recording tid's context switches into a ring of data_pages pages (a power of two;
 * 8 pages of 4 KiB hold 1,024 switch records). 0, or a negative errno: -EACCES / -EPERM
 * (perf_event_paranoid, seccomp, SELinux), -ENOSYS, -ENOENT / -EOPNOTSUPP (a kernel
 * without these records), -ESRCH, -ENOMEM. On error the ring is left closed (fd -1).
 * hal_perf_ring_close closes it.
 */
int hal_sched_open(struct hal_perf_ring *r, pid_t tid, unsigned data_pages);

/*
 * Copy the ring's records, newest first as the kernel wrote them, into buf: at most size
 * bytes, whole records only. Pauses the ring while it copies (the kernel drops what comes
 * meanwhile), then resumes it. Returns the bytes copied, or a negative errno.
 */
long hal_sched_copy(struct hal_perf_ring *r, void *buf, size_t size);

/*
 * The switch records of a copy (newest first) into ev, oldest first: at most max events.
 * Any other record is skipped, a malformed one ends the walk; *skipped counts both, and
 * *lost the records the kernel reported lost. Returns the number of events.
 */
size_t hal_sched_parse(const void *buf, size_t size, struct hal_sched_event *ev, size_t max,
		       uint64_t *skipped, uint64_t *lost);

/* The fallback: tid's time on a CPU and waiting to run, in ns, and its time slices, from
 * <root>/proc/self/task/TID/schedstat. 0, or an error of hal_read_text, or -EINVAL. */
int hal_sched_stat(pid_t tid, uint64_t *on_cpu_ns, uint64_t *wait_ns, uint64_t *slices);

#endif
