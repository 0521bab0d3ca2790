/* SPDX-License-Identifier: MIT */
/*
 * bench-peers (tests/bench-peers.sh): Hubble's Listing 1 (section 8.1) and the sim app's UI
 * frame (sim/, its generated call tree) built by each tracer the OEM engineer could pick
 * instead of jitt. One driver (peers_main.c) times the build's uninstrumented copy
 * (listing1_plain, the tree's *_plain functions) and its instrumented copy (listing1_traced,
 * the tree) in the same process; each tracer supplies these four calls (peers_jitt.c,
 * peers_xray.c, peers_uftrace.c), the few lines in which the tracers differ.
 */
#ifndef JITT_TESTS_PEERS_H
#define JITT_TESTS_PEERS_H

#include <stddef.h>
#include <stdint.h>

long listing1_plain(int depth, int work, long sum);
long listing1_traced(int depth, int work, long sum);

/*
 * A workload the driver times: one step of it on the plain and on the instrumented copy
 * (the same code, built twice), with WORK its knob. A step is `units` units (Listing 1: one
 * call of the depth-10 recursion, 10 units, a call of one level each; the sim app: one
 * frame, 1 unit), each `points` trace points when instrumented (2: an entry and an exit;
 * a frame of the sim's tree: 2 a call of its 10170).
 */
struct peers_workload {
	const char *name;
	long (*plain)(int work, long x);
	long (*traced)(int work, long x);
	long units;
	long points;
};
/* The sim app's UI frame (tests/peers_sim.c). */
void peers_sim(struct peers_workload *w);

/* The tracer's name as the table prints it. */
extern const char peers_tracer[];
/* Start recording for the calling thread; 0 or a negative errno. */
int peers_begin(void);
/* Records the tracer counted so far in this process, or -1 when only its own tools can
 * count them afterwards (uftrace's data files, XRay's log). */
int64_t peers_records(void);
/* Stop recording and write out what the tracer writes at exit (XRay's log). 0 or < 0. */
int peers_end(void);
/* `--persist DIR`: a full ring of Listing 1 into a trace file in DIR, for `jitt summarize`;
 * -ENOTSUP for the tracers that have no such thing (their runs with `--once` do it). */
int peers_persist(const char *dir, char *path, size_t size);

#endif
