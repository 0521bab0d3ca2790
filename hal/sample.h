/* SPDX-License-Identifier: MIT */
/*
 * hal/sample.h - where a thread's time goes, as a profiler sees it: the kernel interrupts
 * the thread every so much of its CPU time (perf's software task clock, no hardware
 * counter: it works in VMs and on cores without a PMU) and writes the user-space address
 * it was at into a small mmapped ring, which its reader drains. Nothing runs on the thread
 * but the kernel's timer, whose interrupt costs the thread 6 to 36 us a sample in the VMs
 * this was measured on (docs/runtime.md). What perf record does, for the
 * samples only (no stacks, no kernel addresses: what perf_event_paranoid 2 allows an
 * unprivileged process for its own threads; refused at Android's 3 and under seccomp).
 *
 * sleds learning (agent/runtime/sleds.c) uses it to keep a profile's top traced. The
 * drained bytes are parsed as data (hal_sample_parse takes any bytes, bounded).
 */
#ifndef JITT_HAL_SAMPLE_H
#define JITT_HAL_SAMPLE_H

#include "hal/perf_ring.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


/*
 * Start sampling tid (any thread of this process) every period_ns of its CPU time, into a
 * ring of data_pages pages (a power of two; a sample takes 16 bytes, so 8 pages of 4 KiB
 * hold 2,048). 0, or a negative errno: -EACCES / -EPERM (perf_event_paranoid, seccomp,
 * SELinux), -ENOSYS, -ENOENT, -ESRCH, -ENOMEM, -EINVAL. On error the ring is closed (fd -1).
 * hal_perf_ring_close closes it.
 */
int hal_sample_open(struct hal_perf_ring *r, pid_t tid, unsigned data_pages,
		    uint64_t period_ns);

/* A new period, from the next sample on. 0 or a negative errno. */
int hal_sample_period(struct hal_perf_ring *r, uint64_t period_ns);

/*
 * The CPU time the sampled thread has run since the ring was opened, in ns, kernel time
 * included: its task clock's count (a sample is taken only in user space, but the clock
 * runs, and each tick costs the thread its interrupt, wherever it lands). 0 or a negative
 * errno.
 */
int hal_sample_cpu_ns(const struct hal_perf_ring *r, uint64_t *ns);

/*
 * Move the ring's unread records into buf, oldest first, whole records only, at most size
 * bytes; what did not fit stays for the next call. The kernel drops samples while the ring
 * is full (and says so with a lost record). Returns the bytes moved, or a negative errno.
 */
long hal_sample_drain(struct hal_perf_ring *r, void *buf, size_t size);

/*
 * The sampled addresses of drained records into ips: at most max. Any other record is
 * skipped, a malformed one ends the walk; *skipped counts both, and *lost adds the samples
 * the kernel reported lost. Returns the number of addresses.
 */
size_t hal_sample_parse(const void *buf, size_t size, uint64_t *ips, size_t max,
			uint64_t *skipped, uint64_t *lost);

#endif
