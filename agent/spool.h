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

#include <stdint.h>

/* Create the data folder's sub-folders that are missing (mode 0700). 0 or -errno. */
int agent_spool_prepare(const struct agent_config *c);

/*
 * Make room for `incoming` more bytes of raw traces: remove the oldest *.jtr of spool/ and
 * traces/ together (by modification time, then name) until one more file fits within
 * max_traces and the bytes within max_trace_mb. Returns how many files were removed (their
 * bytes added to *removed_bytes when not NULL), or a negative errno.
 */
int agent_spool_trim(const struct agent_config *c, uint64_t incoming, uint64_t *removed_bytes);

#endif
