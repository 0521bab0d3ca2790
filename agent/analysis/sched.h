/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/sched.h - where a thread ran during the summary's window, from the trace
 * file's scheduling records (time other processes took, not its code): with perf's context
 * switches, its running time per CPU class and its migrations; with the schedstat fallback,
 * the run-queue wait between the window's first and last samples. The per-function split of
 * preempted time is the calling-context tree's (cct.h); this is the window's.
 */
#ifndef JITT_AGENT_SCHED_H
#define JITT_AGENT_SCHED_H

#include "agent/analysis/summary.h"
#include "ringbuf/tracefile.h"

#include <stddef.h>
#include <stdint.h>

/* A schedstat record (RB_EV_SCHEDSTAT) of the window's thread, oldest first. */
struct sched_sample {
	uint64_t ts;
	uint32_t us;  /* the total, in us modulo 2^32 */
	uint8_t kind; /* RB_SCHED_RUN or RB_SCHED_WAIT */
};

/* perf: th's running time per CPU class and its migrations in [w0, w1) into out. */
void sched_window_perf(const struct rb_trace *t, const struct rb_file_thread *th, uint64_t w0,
		       uint64_t w1, struct summary_sched *out);

/* schedstat: the run-queue wait between the first and the last RB_SCHED_WAIT sample in
 * [w0, w1], in ticks of a timer of hz; false when fewer than two samples are in it. */
bool sched_window_stat(const struct sched_sample *s, size_t n, uint64_t w0, uint64_t w1,
		       uint64_t hz, uint64_t *preempted);

#endif
