/* SPDX-License-Identifier: MIT */
/*
 * jank-sim-plain's stand-in for libjitt: agent/jitt.h's functions doing nothing, so the
 * same sources build without libjitt and without trace points: the baseline of the
 * overhead benchmark (tests/bench_sim.sh).
 */
#include "agent/jitt.h"

#include <errno.h>

const char *jitt_version(void)
{
	return "none";
}

int jitt_init(const char *config_file)
{
	(void)config_file;
	return 0;
}

void jitt_shutdown(void)
{
}

int jitt_trace_thread(bool on)
{
	(void)on;
	return 0;
}

int jitt_thread_name(const char *name)
{
	return name ? 0 : -EINVAL;
}

void jitt_frame_begin(void)
{
}

void jitt_frame_end(void)
{
}

void jitt_frame(void)
{
}

int jitt_anomaly(const char *reason)
{
	(void)reason;
	return -ENODEV;
}

