/* SPDX-License-Identifier: MIT */
/*
 * The UI loop: one frame per vsync at opt.fps (60 Hz), each frame input, animation, layout
 * and draw through the generated tree, between jitt_frame_begin() and jitt_frame_end();
 * then the thread sleeps to the next vsync, outside the frame, as a choreographer does.
 */
#include "agent/jitt.h"
#include "sim/sim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int sim_armed_site;
uint64_t sim_iters_per_weight;
static volatile uint32_t ui_sink;

SIM_INLINE uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The frame's content varies as a real screen's does: most frames within 10% of the
 * average, one in about 40 heavier by half (a new row scrolled in), all within budget. */
SIM_INLINE void frame_load(uint32_t seed, unsigned frame)
{
	uint32_t h = seed * 2654435761u ^ frame * 40503u;
	h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
	uint64_t base = (uint64_t)sim_opt.work_us * sim_opt.ipu / sim_tree_weight;
	unsigned pct = 90 + h % 21 + ((h >> 8) % 40 == 0 ? 50 : 0);
	sim_iters_per_weight = base * pct / 100 ? base * pct / 100 : 1;
}

SIM_FN uint32_t sim_ui_frame(uint32_t x, unsigned frame)
{
	x = input_dispatch(x);
	x = anim_tick(x);
	x = layout_traversal(x);
	x = draw_traversal(x);
	sim_post_frame_work(frame);
	return x;
}

/* Sleep to the next vsync; a frame that ran past one has dropped it. */
SIM_FN void sim_wait_vsync(struct timespec *vsync, uint64_t period_ns)
{
	uint64_t now = now_ns();
	uint64_t t = (uint64_t)vsync->tv_sec * 1000000000u + (uint64_t)vsync->tv_nsec;
	do
		t += period_ns;
	while (t <= now);
	vsync->tv_sec = (time_t)(t / 1000000000u);
	vsync->tv_nsec = (long)(t % 1000000000u);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, vsync, NULL) == EINTR && !sim_stop)
		;
}

SIM_FN void sim_ui_run(uint64_t *work_ns, unsigned cap, unsigned *measured)
{
	const struct sim_injection *in = sim_injection(sim_opt.scenario);
	uint64_t period = 1000000000u / sim_opt.fps;
	struct timespec vsync;
	clock_gettime(CLOCK_MONOTONIC, &vsync);
	uint32_t x = sim_opt.seed;
	*measured = 0;

	bool preempted = sim_opt.scenario == SIM_PREEMPTED;
	static uint64_t slow_ns[1000]; /* the preempted frames' times (--jank-frames <= 1000) */
	for (unsigned f = 1; !sim_stop && (!sim_opt.frames || f <= sim_opt.frames); f++) {
		bool inject = in && f > sim_opt.warmup && f <= sim_opt.warmup + in->frames;
		if (inject && f == sim_opt.warmup + 1) {
			/* The hogs hold the UI thread's CPU for a vsync period before its first
			 * slow frame, which then begins as the others do, from a vsync sleep
			 * (one that began as the hogs came up ran almost unhindered: 3.6 ms). */
			int cpu = -1, err = preempted ? sim_hogs_start(&cpu) : 0;
			if (err)
				fprintf(stderr, "jank-sim: preempted: starting the hogs: %s\n",
					strerror(-err));
			else if (preempted)
				sim_wait_vsync(&vsync, period);
			/* Before the frame starts: the line costs the frame nothing. */
			printf("injected scenario=%s culprit=%s thread=%s frame=%u frames=%u "
			       "ms=%u",
			       in->name, in->culprit, in->thread, f, in->frames,
			       in->frames * in->ms);
			if (preempted)
				printf(" hogs=%u cpu=%d sched=%s", err ? 0 : sim_hog_count(), cpu,
				       sim_hogs_fifo() ? "fifo" : "normal");
			printf("\n");
			fflush(stdout);
		}
		sim_armed_site = inject ? in->site : SIM_SITE_OFF;
		frame_load(sim_opt.seed, f);

		uint64_t t0 = now_ns();
		jitt_frame_begin();
		x = sim_ui_frame(x, f);
		jitt_frame_end();
		uint64_t t1 = now_ns();

		if (f > sim_opt.warmup)
			work_ns[(*measured)++ % cap] = t1 - t0;
		if (inject && preempted)
			slow_ns[f - sim_opt.warmup - 1] = t1 - t0;
		if (inject && preempted && f == sim_opt.warmup + in->frames) {
			/* Right after the last slow frame: no hog outlives the jank. */
			sim_hogs_stop();
			printf("preempted frame_ms=");
			for (unsigned i = 0; i < in->frames; i++)
				printf("%s%.1f", i ? "," : "", slow_ns[i] / 1e6);
			printf("\n");
			fflush(stdout);
		}
		sim_wait_vsync(&vsync, period);
	}
	ui_sink = x;
}
