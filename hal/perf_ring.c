/* SPDX-License-Identifier: MIT */
/*
 * hal/perf_ring.c - a thread's perf event and its mapped ring (perf_ring.h), opened for
 * sched.c and sample.c with their own attributes (perf_abi.h, perf_ring_open).
 */
#include "hal/perf_ring.h"
#include "hal/perf_abi.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

int perf_ring_open(struct hal_perf_ring *r, struct perf_attr *a, pid_t tid,
		   unsigned data_pages, int prot)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0 || !data_pages || (data_pages & (data_pages - 1)))
		return -EINVAL;
	a->size = sizeof(*a);
	int fd = (int)syscall(SYS_perf_event_open, a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t map = (size_t)(1 + data_pages) * (size_t)page;
	void *base = mmap(NULL, map, prot, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		int e = -errno;
		close(fd);
		return e;
	}
	r->fd = fd;
	r->base = base;
	r->map_size = map;
	r->data_size = (uint64_t)data_pages * (uint64_t)page;
	return 0;
}

void hal_perf_ring_close(struct hal_perf_ring *r)
{
	if (r->base)
		munmap(r->base, r->map_size);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

const uint8_t *perf_ring_data(const struct hal_perf_ring *r)
{
	uint64_t offset;
	memcpy(&offset, (const uint8_t *)r->base + MMAP_PAGE_DATA_OFFSET, sizeof(offset));
	if (!offset) /* a kernel before 4.1: the data follows the control page */
		offset = r->map_size - r->data_size;
	return (const uint8_t *)r->base + offset;
}
