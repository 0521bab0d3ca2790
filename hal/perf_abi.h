/* SPDX-License-Identifier: MIT */
/*
 * hal/perf_abi.h - perf_event_open(2)'s ABI, the part hal's perf users (sched.c's switch
 * records, sample.c's samples) need, written out: musl's cross toolchains carry no kernel
 * headers. The attribute is given at its 5th published size (112 bytes); the kernel takes
 * any known size. Field offsets and bits as the man page and the kernel's uapi header give
 * them. Inside hal only.
 */
#ifndef JITT_HAL_PERF_ABI_H
#define JITT_HAL_PERF_ABI_H

#include "hal/perf_ring.h"

#include <stdint.h>
#include <sys/types.h>

struct perf_attr {
	uint32_t type, size;
	uint64_t config, sample_period, sample_type, read_format;
	uint64_t flags; /* bit fields, below */
	uint32_t wakeup_events, bp_type;
	uint64_t config1, config2, branch_sample_type, sample_regs_user;
	uint32_t sample_stack_user;
	int32_t clockid;
	uint64_t sample_regs_intr;
	uint32_t aux_watermark;
	uint16_t sample_max_stack, reserved;
};
_Static_assert(sizeof(struct perf_attr) == 112, "PERF_ATTR_SIZE_VER5");

enum {
	PERF_TYPE_SOFTWARE = 1,
	PERF_COUNT_SW_TASK_CLOCK = 1,
	PERF_COUNT_SW_DUMMY = 9,
	PERF_SAMPLE_IP = 1u << 0,
	PERF_SAMPLE_TID = 1u << 1,
	PERF_SAMPLE_TIME = 1u << 2,
	PERF_SAMPLE_CPU = 1u << 7,
	PERF_FLAG_FD_CLOEXEC = 1u << 3,
	PERF_RECORD_LOST = 2,
	PERF_RECORD_SAMPLE = 9,
	PERF_RECORD_SWITCH = 14,
};
#define ATTR_DISABLED	      (1ull << 0)
#define ATTR_EXCLUDE_KERNEL   (1ull << 5)
#define ATTR_EXCLUDE_HV	      (1ull << 6)
#define ATTR_SAMPLE_ID_ALL    (1ull << 18)
#define ATTR_USE_CLOCKID      (1ull << 25)
#define ATTR_CONTEXT_SWITCH   (1ull << 26)
#define ATTR_WRITE_BACKWARD   (1ull << 27)
#define IOC_PERIOD	      0x40082404ul /* _IOW('$', 4, __u64) */
#define IOC_PAUSE_OUTPUT      0x40042409ul /* _IOW('$', 9, __u32) */
#define MMAP_PAGE_DATA_HEAD   1024	   /* perf_event_mmap_page's data_head, */
#define MMAP_PAGE_DATA_TAIL   1032	   /* data_tail (the reader's, forward rings), */
#define MMAP_PAGE_DATA_OFFSET 1040	   /* and data_offset, since Linux 4.1 */

struct perf_header {
	uint32_t type;
	uint16_t misc, size;
};

/* perf_event_open(a) for tid (its size set here), and its ring of data_pages pages (a power
 * of two) mapped with prot: PROT_READ for a backward ring the kernel overwrites, with
 * PROT_WRITE for a forward one whose reader hands bytes back (data_tail). 0, or a negative
 * errno, the ring then closed (fd -1). */
int perf_ring_open(struct hal_perf_ring *r, struct perf_attr *a, pid_t tid,
		   unsigned data_pages, int prot);
/* The start of r's data area. */
const uint8_t *perf_ring_data(const struct hal_perf_ring *r);

#endif
