/* SPDX-License-Identifier: MIT */
/*
 * agent/daemon/worker.h - what jittd does with one trace of the spool: summarise it into
 * the outbox, then keep or delete it; quarantine it when it cannot be summarised; leave it
 * for later when the summary cannot be written (a full disk).
 *
 * Exactly once, whenever the daemon is killed: the summary is committed by a rename in
 * outbox/ before the trace leaves the spool, and a trace whose summary is already in the
 * outbox only finishes its move. Our half-written temporaries (".jittd-*.tmp") are removed
 * at start.
 */
#ifndef JITT_AGENT_DAEMON_WORKER_H
#define JITT_AGENT_DAEMON_WORKER_H

#include "agent/config.h"

#include <stdint.h>

/* Since the daemon started. */
struct jittd_stats {
	uint64_t seen;		/* distinct traces found in the spool */
	uint64_t summarised;	/* summaries written to the outbox */
	uint64_t quarantined;	/* traces moved to quarantine/ */
	uint64_t retries;	/* attempts that failed for want of space (or another write
				 * error) and left the trace for later */
	uint64_t kept;		/* traces moved to traces/ */
	uint64_t deleted;	/* traces deleted after summarising (keep_traces = 0) */
	uint64_t trimmed;	/* raw traces removed by the caps */
	uint64_t summary_bytes; /* bytes of summaries written */
	char last_summary[128]; /* the last summary's file name, "" for none yet */
};

struct jittd_worker {
	const struct agent_config *c;
	char spool[AGENT_PATH_MAX], outbox[AGENT_PATH_MAX], traces[AGENT_PATH_MAX],
		quarantine[AGENT_PATH_MAX];
	struct jittd_stats st;
	char retrying[128]; /* the trace whose last attempt failed: not "seen" twice */
};

/* The folders of c's data folder (which must exist: agent_spool_prepare). 0 or
 * -ENAMETOOLONG. */
int jittd_worker_init(struct jittd_worker *w, const struct agent_config *c);

/* Remove the temporaries a killed run left in outbox/ and quarantine/. Returns how many. */
int jittd_worker_recover(struct jittd_worker *w);

/*
 * Handle the spool's trace `name` ("X.jtr"). Returns 0 when it is done with (summarised
 * and kept or deleted, quarantined, or gone meanwhile), or a negative errno when it stays
 * in the spool for a later try (-ENOSPC, -EDQUOT, -ENOMEM, -EIO, ...). Logs what happened.
 */
int jittd_worker_process(struct jittd_worker *w, const char *name);

#endif
