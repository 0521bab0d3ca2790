/* SPDX-License-Identifier: MIT */
/*
 * hal/sched.c - a thread's context switches from the kernel (sched.h): perf's switch records
 * in a backward, overwritten ring, and /proc's schedstat as the fallback.
 */
#include "hal/sched.h"
#include "hal/fs.h"
#include "hal/perf_abi.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* What every record ends with (sample_id_all), for sample_type TID | TIME | CPU, in the
 * order perf_event_open(2) gives: pid, tid; time; cpu, reserved. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};

#define SWITCH_OUT	   (1u << 13) /* PERF_RECORD_MISC_SWITCH_OUT */
#define SWITCH_OUT_PREEMPT (1u << 14) /* PERF_RECORD_MISC_SWITCH_OUT_PREEMPT, Linux 4.17 */

int hal_sched_open(struct hal_perf_ring *r, pid_t tid, unsigned data_pages)
{
	struct perf_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY; /* counts nothing: only its side records */
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a.clockid = CLOCK_MONOTONIC;
	a.flags = ATTR_SAMPLE_ID_ALL | ATTR_CONTEXT_SWITCH | ATTR_USE_CLOCKID |
		  /* The flight recorder's ring: written backward (the newest record at
		   * data_head), over the oldest, never waiting for a reader (the mapping is
		   * read-only). */
		  ATTR_WRITE_BACKWARD |
		  /* What perf_event_paranoid 2 allows an unprivileged thread. */
		  ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV;
	return perf_ring_open(r, &a, tid, data_pages, PROT_READ);
}

/* n bytes of the data area from offset `at` (any value: taken modulo its size) into out. */
static void ring_read(const struct hal_perf_ring *r, uint64_t at, void *out, size_t n)
{
	const uint8_t *data = perf_ring_data(r);
	uint64_t mask = r->data_size - 1;
	size_t first = (size_t)(r->data_size - (at & mask));
	if (first > n)
		first = n;
	memcpy(out, data + (at & mask), first);
	memcpy((uint8_t *)out + first, data, n - first);
}

long hal_sched_copy(struct hal_perf_ring *r, void *buf, size_t size)
{
	if (r->fd < 0 || !r->base)
		return -EBADF;
	/* Paused, the kernel writes nothing: the walk reads records it will not overwrite. */
	if (ioctl(r->fd, IOC_PAUSE_OUTPUT, 1) != 0)
		return -errno;
	const uint64_t *data_head = (const uint64_t *)((const uint8_t *)r->base + MMAP_PAGE_DATA_HEAD);
	uint64_t head = __atomic_load_n(data_head, __ATOMIC_ACQUIRE);
	uint64_t done = 0;
	bool lapped = false;
	/* From the newest record on, until a lap is read, the never-written (zero) part is
	 * met, or what is left would cross the oldest record's start. */
	while (done + sizeof(struct perf_header) <= r->data_size) {
		struct perf_header h;
		ring_read(r, head + done, &h, sizeof(h));
		if (h.size < sizeof(h))
			break; /* the never-written part: every record is here */
		if (done + h.size > r->data_size || done + h.size > size) {
			lapped = true;
			break;
		}
		ring_read(r, head + done, (uint8_t *)buf + done, h.size);
		done += h.size;
	}
	/* A whole lap read: the ring was full, its oldest records overwritten */
	r->lapped = lapped || done + sizeof(struct perf_header) > r->data_size;
	(void)ioctl(r->fd, IOC_PAUSE_OUTPUT, 0);
	return (long)done;
}

size_t hal_sched_parse(const void *buf, size_t size, struct hal_sched_event *ev, size_t max,
		       uint64_t *skipped, uint64_t *lost)
{
	const uint8_t *p = buf;
	size_t n = 0, at = 0;
	*skipped = 0;
	*lost = 0;
	while (at + sizeof(struct perf_header) <= size) {
		struct perf_header h;
		memcpy(&h, p + at, sizeof(h));
		if (h.size < sizeof(h) || h.size > size - at) {
			(*skipped)++; /* malformed: nothing after it can be found */
			break;
		}
		struct sample_id id;
		bool has_id = h.size >= sizeof(h) + sizeof(id);
		if (has_id)
			memcpy(&id, p + at + h.size - sizeof(id), sizeof(id));
		if (h.type == PERF_RECORD_SWITCH && has_id && n < max) {
			ev[n++] = (struct hal_sched_event){
				.time_ns = id.time,
				.cpu = id.cpu,
				.kind = !(h.misc & SWITCH_OUT)	   ? HAL_SCHED_IN
					: h.misc & SWITCH_OUT_PREEMPT ? HAL_SCHED_OUT_PREEMPTED
								      : HAL_SCHED_OUT_SLEEPING,
			};
		} else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
			uint64_t count;
			memcpy(&count, p + at + sizeof(h) + 8, sizeof(count)); /* after its id */
			*lost += count;
		} else {
			(*skipped)++;
		}
		at += h.size;
	}
	/* Newest first as copied: turned to time order. */
	for (size_t i = 0; i < n / 2; i++) {
		struct hal_sched_event t = ev[i];
		ev[i] = ev[n - 1 - i];
		ev[n - 1 - i] = t;
	}
	return n;
}

int hal_sched_stat(pid_t tid, uint64_t *on_cpu_ns, uint64_t *wait_ns, uint64_t *slices)
{
	char rel[64], text[128];
	snprintf(rel, sizeof(rel), "proc/self/task/%d/schedstat", (int)tid);
	int e = hal_read_text(rel, text, sizeof(text));
	if (e < 0)
		return e;
	/* Three unsigned decimals separated by single spaces, nothing else: a fake tree's
	 * garbage, or a number too large, is refused. */
	uint64_t v[3];
	const char *q = text;
	for (int i = 0; i < 3; i++) {
		char *end;
		if (*q < '0' || *q > '9')
			return -EINVAL;
		errno = 0;
		unsigned long long x = strtoull(q, &end, 10);
		if (errno || *end != (i < 2 ? ' ' : '\0'))
			return -EINVAL;
		v[i] = x;
		q = end + (i < 2);
	}
	uint64_t a = v[0], b = v[1], c = v[2];
	*on_cpu_ns = a;
	*wait_ns = b;
	*slices = c;
	return 0;
}
