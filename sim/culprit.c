/* SPDX-License-Identifier: MIT */
/*
 * The jank scenarios' culprits, each with a name a test looks for in the summary.
 *
 * A jank spans opt.jank_frames consecutive frames (CONFIG_AGENT_JANK_FRAMES, 3): the jank
 * detector fires on that many consecutive frames over budget (Hubble 4.2.1), so one slow
 * frame alone would never be recorded. Each of those frames runs the culprit once, tens
 * of milliseconds, 120 to 210 ms in all. A hang is one frame of 2 s: the hang detector
 * fires while it is still running, past CONFIG_AGENT_HANG_MS (400 ms). The preempted
 * scenario has no culprit here: its frames are slow because other processes hold the CPU
 * (sim/hog.c).
 */
#include "sim/sim.h"

#include <stddef.h>

/* A short call of the many-short scenario: thousands per frame, none long. */
#define SHORT_CALL_US 8

/* A table lookup, not the app's work: untraced, so it adds no call to the culprits' frames. */
SIM_UNTRACED const struct sim_injection *sim_injection(enum sim_scenario s)
{
	static struct sim_injection in[] = {
		[SIM_COMPUTE] = { "compute", "sim_culprit_compute", "ui", SIM_SITE_DEEP, 0, 60 },
		[SIM_BLOCKED] = { "blocked", "sim_culprit_slow_task", "worker-1", SIM_SITE_IMAGE,
				  0, 70 },
		[SIM_MANY_SHORT] = { "many-short", "sim_culprit_short", "ui", SIM_SITE_RASTER, 0,
				     40 },
		[SIM_HANG] = { "hang", "sim_culprit_hang", "ui", SIM_SITE_DEEP, 1, 2000 },
		/* No function of the app: other processes take the UI thread's CPU (sim/hog.c),
		 * so no site is armed and the frames' own code costs nothing more (ms 0). */
		[SIM_PREEMPTED] = { "preempted", "(preemption)", "ui", SIM_SITE_OFF, 0, 0 },
	};
	if (s == SIM_NONE || s >= sizeof(in) / sizeof(in[0]))
		return NULL;
	if (s != SIM_HANG)
		in[s].frames = sim_opt.jank_frames;
	return &in[s];
}

/* One long computation, deep in layout (glyph_*, about ten calls below the frame). */
SIM_FN uint32_t sim_culprit_compute(unsigned ms, uint32_t x)
{
	return sim_spin_us(x, (uint64_t)ms * 1000);
}

/* Hubble section 3's first case in miniature: many calls, each cheap. */
SIM_FN uint32_t sim_culprit_short(uint32_t x)
{
	return sim_spin_us(x, SHORT_CALL_US);
}

/* A UI thread stuck in one call for seconds. */
SIM_FN uint32_t sim_culprit_hang(unsigned ms, uint32_t x)
{
	return sim_spin_us(x, (uint64_t)ms * 1000);
}

/* Runs on worker-1 while the UI thread waits for it (sim_wait_for_worker). */
SIM_FN uint32_t sim_culprit_slow_task(unsigned ms, uint32_t x)
{
	return sim_spin_us(x, (uint64_t)ms * 1000);
}

SIM_FN uint32_t sim_inject(int site, uint32_t x)
{
	(void)site;
	/* Once per frame: the site's function runs several times in a frame. */
	sim_armed_site = SIM_SITE_OFF;
	const struct sim_injection *in = sim_injection(sim_opt.scenario);
	switch (sim_opt.scenario) {
	case SIM_COMPUTE:
		return sim_culprit_compute(in->ms, x);
	case SIM_BLOCKED:
		return sim_wait_for_worker(in->ms, x);
	case SIM_MANY_SHORT:
		for (unsigned i = 0; i < in->ms * 1000 / SHORT_CALL_US; i++)
			x = sim_culprit_short(x + i);
		return x;
	case SIM_HANG:
		return sim_culprit_hang(in->ms, x);
	case SIM_PREEMPTED: /* never armed: the frames run their normal code */
	case SIM_NONE:
		break;
	}
	return x;
}
