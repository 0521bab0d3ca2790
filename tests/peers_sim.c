/* SPDX-License-Identifier: MIT */
/*
 * The sim app (sim/, jank-sim) in bench-peers: the UI thread's frame, the work sim_ui_frame
 * (sim/ui.c) does, through the generated call tree (sim/gen-tree.awk: 286 functions, 10170
 * calls a frame). The tree is built twice per peer: instrumented, under its own names, and
 * plain, every name with the suffix _plain (gen-tree.awk's `suffix`), so both run in one
 * process as Listing 1's two copies do.
 *
 * Left out, so that every peer does the same work and the frame is the UI thread's alone:
 * the post to worker-1 and io-1 (sim_post_frame_work: other threads), the sleep to the
 * next vsync, the frame marks (jitt's own API, no peer has it) and the jank scenarios. The
 * frame's load is fixed: WORK loop iterations per unit of the tree's weights, every frame
 * (the app varies it by 10 % from frame to frame; here it would only add noise). At 73
 * (tests/bench-peers.sh's default) a frame is the app's 3 ms on the machine of
 * docs/peers.md (its calibration: 578 iterations a microsecond).
 */
#include "sim/sim.h"
#include "tests/peers.h"

#include <stdlib.h>

/* The app defines these in sim/ui.c, which the peers do not link (it sleeps to vsyncs and
 * posts to the workers). No scenario is armed: sim_inject is never called. */
uint64_t sim_iters_per_weight;
int sim_armed_site = SIM_SITE_OFF;

uint32_t sim_inject(int site, uint32_t x)
{
	(void)site, (void)x;
	abort();
}

/* The plain copy's roots (the file gen-tree.awk writes with suffix=_plain). */
uint32_t input_dispatch_plain(uint32_t x);
uint32_t anim_tick_plain(uint32_t x);
uint32_t layout_traversal_plain(uint32_t x);
uint32_t draw_traversal_plain(uint32_t x);

/* One frame: sim_ui_frame's four phases, in its order. */
static long frame_traced(int work, long x)
{
	uint32_t y = (uint32_t)x;
	sim_iters_per_weight = (uint64_t)work;
	y = input_dispatch(y);
	y = anim_tick(y);
	y = layout_traversal(y);
	y = draw_traversal(y);
	return y;
}

static long frame_plain(int work, long x)
{
	uint32_t y = (uint32_t)x;
	sim_iters_per_weight = (uint64_t)work;
	y = input_dispatch_plain(y);
	y = anim_tick_plain(y);
	y = layout_traversal_plain(y);
	y = draw_traversal_plain(y);
	return y;
}

void peers_sim(struct peers_workload *w)
{
	w->name = "sim";
	w->plain = frame_plain;
	w->traced = frame_traced;
	w->units = 1;
	w->points = 2 * (long)sim_tree_calls;
}
