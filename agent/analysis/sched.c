/* SPDX-License-Identifier: MIT */
#include "agent/analysis/sched.h"
#include "hal/sched.h"
#include "ringbuf/record.h"

#include <string.h>

static uint64_t overlap(uint64_t a, uint64_t b, uint64_t w0, uint64_t w1)
{
	uint64_t lo = a > w0 ? a : w0, hi = b < w1 ? b : w1;
	return hi > lo ? hi - lo : 0;
}

/* Running from `from` to `to` on cpu: its class's share of the window. */
static void ran(const struct rb_trace *t, struct summary_sched *out, uint32_t cpu, uint64_t from,
		uint64_t to, uint64_t w0, uint64_t w1, uint64_t *per_cpu, size_t ncpu)
{
	uint64_t d = overlap(from, to, w0, w1);
	if (!d)
		return;
	uint8_t cls = cpu < t->sched.ncpus ? t->sched.cpu_class[cpu] : RB_CPU_CLASS_UNKNOWN;
	if (cls < HAL_CPU_NCLASSES)
		out->on_class[cls] += d;
	else
		out->on_unknown += d;
	if (cpu < ncpu) {
		per_cpu[cpu] += d;
		if (per_cpu[cpu] > out->main_cpu_ticks) {
			out->main_cpu_ticks = per_cpu[cpu];
			out->main_cpu = cpu;
		}
	}
}

void sched_window_perf(const struct rb_trace *t, const struct rb_file_thread *th, uint64_t w0,
		       uint64_t w1, struct summary_sched *out)
{
	out->source = SUMMARY_SCHED_PERF;
	out->lost = th->sched_lost;
	bool seen[HAL_CPU_NCLASSES] = { false };
	for (uint32_t c = 0; c < t->sched.ncpus; c++)
		if (t->sched.cpu_class[c] < HAL_CPU_NCLASSES && !seen[t->sched.cpu_class[c]]) {
			seen[t->sched.cpu_class[c]] = true;
			out->nclasses++;
		}
	/* Running between a switch in and the next switch out; before the first switch,
	 * since the window's start on the CPU the first switch out left. */
	uint64_t per_cpu[RB_FILE_MAX_CPUS];
	memset(per_cpu, 0, sizeof(per_cpu));
	bool running = th->nsw && th->sw[0].kind != HAL_SCHED_IN;
	uint64_t since = w0;
	uint32_t cpu = th->nsw ? th->sw[0].cpu : 0;
	bool known_cpu = th->nsw > 0;
	for (uint32_t i = 0; i < th->nsw; i++) {
		const struct rb_switch *sw = &th->sw[i];
		if (sw->kind == HAL_SCHED_IN) {
			if (known_cpu && sw->cpu != cpu && sw->ts >= w0 && sw->ts < w1)
				out->migrations++;
			cpu = sw->cpu;
			known_cpu = true;
			running = true;
			since = sw->ts;
		} else {
			if (running)
				ran(t, out, sw->cpu, since, sw->ts, w0, w1, per_cpu, RB_FILE_MAX_CPUS);
			cpu = sw->cpu;
			running = false;
		}
	}
	if (running)
		ran(t, out, cpu, since, w1, w0, w1, per_cpu, RB_FILE_MAX_CPUS);
}

bool sched_window_stat(const struct sched_sample *s, size_t n, uint64_t w0, uint64_t w1,
		       uint64_t hz, uint64_t *preempted)
{
	const struct sched_sample *first = NULL, *last = NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i].kind != RB_SCHED_WAIT || s[i].ts < w0 || s[i].ts > w1)
			continue;
		if (!first)
			first = &s[i];
		last = &s[i];
	}
	if (!first || first == last)
		return false;
	uint64_t us = (uint32_t)(last->us - first->us);
	uint64_t ticks = (uint64_t)((double)us * (double)hz / 1e6);
	/* Never more than the time between the two samples (a torn or crafted record). */
	*preempted = ticks < last->ts - first->ts ? ticks : last->ts - first->ts;
	return true;
}
