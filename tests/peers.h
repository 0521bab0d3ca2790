/* SPDX-License-Identifier: MIT */
/*
 * bench-peers (tests/bench-peers.sh): Hubble's Listing 1 (section 8.1) built by each tracer
 * the OEM engineer could pick instead of jitt. One driver (peers_main.c) times the build's
 * uninstrumented copy (listing1_plain) and its instrumented copy (listing1_traced) in the
 * same process; each tracer supplies these four calls (peers_jitt.c, peers_xray.c,
 * peers_uftrace.c), the few lines in which the tracers differ.
 */
#ifndef JITT_TESTS_PEERS_H
#define JITT_TESTS_PEERS_H

#include <stddef.h>
#include <stdint.h>

long listing1_plain(int depth, int work, long sum);
long listing1_traced(int depth, int work, long sum);

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
