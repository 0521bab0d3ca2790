/* SPDX-License-Identifier: MIT */
/*
 * hal/perf_ring.h - one thread's perf event and the ring the kernel writes its records
 * into, mapped into this process: what hal/sched.h's context switches (a backward ring the
 * kernel overwrites) and hal/sample.h's samples (a forward ring the reader drains) are
 * read from. Opened by hal_sched_open or hal_sample_open; closed here.
 */
#ifndef JITT_HAL_PERF_RING_H
#define JITT_HAL_PERF_RING_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

struct hal_perf_ring {
	int fd;		    /* the event; -1 when closed */
	void *base;	    /* the control page, then the data */
	size_t map_size;
	uint64_t data_size; /* a power of two */
	bool lapped;	    /* hal_sched_copy's last copy: the oldest records were overwritten */
};

/* Unmaps and closes; the ring is then closed (fd -1), and closing it again does nothing. */
void hal_perf_ring_close(struct hal_perf_ring *r);

#endif
