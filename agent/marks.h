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

#endif
