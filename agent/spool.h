/* SPDX-License-Identifier: MIT */
/*
 * agent/spool.h - the data folder's raw traces and their caps, shared by the runtime
 * (which writes traces into spool/) and jittd (which moves them to traces/ or deletes them
 * once summarised). Raw traces are `*.jtr` files; they never leave the device.
 *
 *   <data_dir>/spool/       new traces, written atomically by the runtime
 *   <data_dir>/traces/      raw traces kept after summarising (keep_traces = 1)
 *   <data_dir>/outbox/      summaries (JSON), for the uploader
 *   <data_dir>/quarantine/  files that could not be summarised, each with a .why file
 */
#ifndef JITT_AGENT_SPOOL_H
#define JITT_AGENT_SPOOL_H

#include "agent/config.h"

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Create the data folder's sub-folders that are missing (mode 0700). 0 or -errno. */
int agent_spool_prepare(const struct agent_config *c);

/*
 * Make room for `incoming` more bytes of raw traces: remove the oldest *.jtr of spool/ and
 * traces/ together (by modification time, then name) until one more file fits within
 * max_traces and the bytes within max_trace_mb. With incoming 0 (no file coming: jittd after
 * moving one), only bring the two folders within the caps. Only regular `*.jtr` files count:
 * writers' temporaries start with a dot. Returns how many files were removed (their bytes
 * added to *removed_bytes when not NULL), or a negative errno.
 */
int agent_spool_trim(const struct agent_config *c, uint64_t incoming, uint64_t *removed_bytes);

/* A raw trace in one of the data folder's sub-folders. */
struct agent_spool_file {
	struct timespec mtime;
	uint64_t bytes;
	const char *sub; /* "spool" or "traces" */
	char name[128];	 /* longer names are no writer's of ours and are not listed */
};

/*
 * The raw traces of one sub-folder ("spool", "traces"), oldest first as the trim removes
 * them, into a malloc'd array (*files, free it; NULL when *n is 0). A missing folder holds
 * none. 0, -ENOMEM or the -errno of reading the folder.
 */
int agent_spool_list(const struct agent_config *c, const char *sub,
		     struct agent_spool_file **files, size_t *n);

#endif
