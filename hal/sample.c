/* SPDX-License-Identifier: MIT */
/*
 * hal/sample.c - a thread's sampled addresses (sample.h): perf's task clock, its samples in
 * a forward ring that the reader drains and hands back (data_tail).
 */
#include "hal/sample.h"
#include "hal/perf_abi.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

int hal_sample_open(struct hal_perf_ring *r, pid_t tid, unsigned data_pages,
		    uint64_t period_ns)
{
	if (!period_ns) { /* 0 would open a counter that never samples */
		*r = (struct hal_perf_ring){ .fd = -1 };
		return -EINVAL;
	}
	struct perf_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK; /* the thread's own CPU time, in ns */
	a.sample_period = period_ns;
	a.sample_type = PERF_SAMPLE_IP;
	a.flags = ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV; /* what paranoid 2 allows */
	/* Writable: the reader hands drained bytes back through data_tail (a forward ring:
	 * the kernel never overwrites what is unread, it drops new samples). */
	return perf_ring_open(r, &a, tid, data_pages, PROT_READ | PROT_WRITE);
}

int hal_sample_period(struct hal_perf_ring *r, uint64_t period_ns)
{
	if (r->fd < 0 || !period_ns)
		return -EINVAL;
	return ioctl(r->fd, IOC_PERIOD, &period_ns) == 0 ? 0 : -errno;
}

int hal_sample_cpu_ns(const struct hal_perf_ring *r, uint64_t *ns)
{
	if (r->fd < 0)
		return -EBADF;
	uint64_t count; /* read_format 0: the count alone */
	ssize_t got = read(r->fd, &count, sizeof(count));
	if (got != (ssize_t)sizeof(count))
		return got < 0 ? -errno : -EIO;
	*ns = count;
	return 0;
}

long hal_sample_drain(struct hal_perf_ring *r, void *buf, size_t size)
{
	if (r->fd < 0 || !r->base)
		return -EBADF;
	uint8_t *page = r->base;
	const uint8_t *data = perf_ring_data(r);
	uint64_t *head_p = (uint64_t *)(page + MMAP_PAGE_DATA_HEAD);
	uint64_t *tail_p = (uint64_t *)(page + MMAP_PAGE_DATA_TAIL);
	/* The records up to head are written once head is read (acquire); the kernel may
	 * reuse what is before tail once tail is stored (release). */
	uint64_t head = __atomic_load_n(head_p, __ATOMIC_ACQUIRE);
	uint64_t tail = *tail_p, mask = r->data_size - 1;
	size_t done = 0;
	while (tail < head && head - tail <= r->data_size) {
		struct perf_header h;
		uint8_t *out = (uint8_t *)buf + done;
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(tail + i) & mask];
		if (h.size < sizeof(h) || h.size > head - tail) {
			tail = head; /* not a record: what follows cannot be found */
			break;
		}
		if (h.size > size - done)
			break;
		for (size_t i = 0; i < h.size; i++)
			out[i] = data[(tail + i) & mask];
		done += h.size;
		tail += h.size;
	}
	if (tail > head || head - tail > r->data_size)
		tail = head; /* a head the reader cannot follow: start again from it */
	__atomic_store_n(tail_p, tail, __ATOMIC_RELEASE);
	return (long)done;
}

size_t hal_sample_parse(const void *buf, size_t size, uint64_t *ips, size_t max,
			uint64_t *skipped, uint64_t *lost)
{
	const uint8_t *p = buf;
	size_t n = 0, at = 0;
	*skipped = 0;
	while (at + sizeof(struct perf_header) <= size) {
		struct perf_header h;
		memcpy(&h, p + at, sizeof(h));
		if (h.size < sizeof(h) || h.size > size - at) {
			(*skipped)++; /* malformed: nothing after it can be found */
			break;
		}
		if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 8 && n < max) {
			memcpy(&ips[n++], p + at + sizeof(h), 8);
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			uint64_t count;
			memcpy(&count, p + at + sizeof(h) + 8, sizeof(count)); /* after its id */
			*lost += count;
		} else {
			(*skipped)++;
		}
		at += h.size;
	}
	return n;
}
