/* SPDX-License-Identifier: MIT */
/*
 * agent/marks.h - what the argument of a mark record (ringbuf/record.h, RB_MARK) means.
 * The runtime writes them (jitt_frame_begin/end, detectors); the summary reads them.
 *
 *   1        a frame or loop iteration begins (jitt_frame_begin, jitt_frame)
 *   2        the frame ends (jitt_frame_end); with jitt_frame() alone, the next begin ends it
 *   0x100|d  an anomaly, d the detector that fired (enum agent_detector): the trace file's
 *            reason string says more
 * Other values are kept in the trace and ignored by the summary.
 */
#ifndef JITT_AGENT_MARKS_H
#define JITT_AGENT_MARKS_H

#include <stdint.h>

#define AGENT_MARK_FRAME_BEGIN 1u
#define AGENT_MARK_FRAME_END   2u
#define AGENT_MARK_ANOMALY     0x100u

enum agent_detector {
	AGENT_DETECT_HANG = 1,	   /* a frame still running past the hang threshold */
	AGENT_DETECT_JANK = 2,	   /* k consecutive frames over budget */
	AGENT_DETECT_EXPLICIT = 3, /* jitt_anomaly() */
	AGENT_DETECT_EXTERNAL = 4, /* jitt trigger PID */
};

static inline int agent_mark_is_anomaly(uint32_t arg)
{
	return (arg & ~0xffu) == AGENT_MARK_ANOMALY;
}

const char *agent_detector_name(uint32_t mark_arg);

/*
 * The keys of wait and wake records (RB_WAIT_BEGIN/END, RB_WAKE): what a thread waited
 * on, so a wake of the same key names who ended the wait (Argus 3.1). The blocking-call
 * wrappers (agent/runtime/wrap.c) make them; the low 2 bits say what the key names:
 *   0  a mutex or condition variable: its address folded to 32 bits, low bits cleared
 *   1  a file descriptor: fd << 2 | 1 (poll and select: the first one)
 *   2  a sleep: just 2
 *   3  anything else (kept as written)
 */
#define AGENT_KEY_FD(fd)  ((uint32_t)(fd) << 2 | 1u)
#define AGENT_KEY_SLEEP   2u
static inline uint32_t agent_key_object(const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	return (uint32_t)(a ^ a >> 32) & ~3u;
}

/* "fd 5", "a sleep" or "object 0x1234" into buf. */
void agent_wait_key_name(uint32_t key, char *buf, unsigned size);

#endif
