/* SPDX-License-Identifier: MIT */
/*
 * agent/daemon/worker.h - what jittd does with one trace of the spool: summarise it into
 * the outbox, then keep a copy or delete it; quarantine it when it cannot be summarised;
 * leave it for later when the summary cannot be written (a full disk).
 *
 * The spool is written by other users: each entry is opened once (hal_open_file, relative
 * to the spool's descriptor, no symlink followed, no blocking on a FIFO) and read into
 * memory with read(), never mapped, so a file truncated under jittd is an error, not
 * SIGBUS. What is kept or quarantined is a new file of jittd's own (mode 0600) written
 * from that memory, never the writer's file moved.
 *
 * Exactly once, whenever the daemon is killed: the summary is committed by a rename in
 * outbox/ before the trace leaves the spool, and a trace whose summary is already in the
 * outbox only finishes its move. Our half-written temporaries (".jittd-*.tmp") are removed
 * at start.
 */
#ifndef JITT_AGENT_DAEMON_WORKER_H
#define JITT_AGENT_DAEMON_WORKER_H

#include "agent/config.h"
#include "agent/spool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct up_uploader;

/* Since the daemon started. */
struct jittd_stats {
	uint64_t seen;		/* distinct traces found in the spool, those the caps removed
				 * before they were read included */
	uint64_t summarised;	/* summaries written to the outbox */
	uint64_t quarantined;	/* traces moved to quarantine/ */
	uint64_t retries;	/* attempts that failed for want of space (or another write
				 * error) and left the trace for later */
	uint64_t kept;		/* traces moved to traces/ */
	uint64_t deleted;	/* traces deleted after summarising (keep_traces = 0) */
	uint64_t trimmed;	/* files removed by the caps: the three below, gone writers'
				 * temporaries, dead claimants' slots, quarantined files */
	uint64_t rotated;	/* kept copies (their summary exists) removed by the caps */
	uint64_t dropped;	/* spool traces removed by the caps, never summarised */
	uint64_t copies_skipped; /* kept copies not made: no room within the caps, or the
				  * disk full (the summary was written) */
	uint64_t summary_bytes; /* bytes of summaries written */
	char last_summary[128]; /* the last summary's file name, "" for none yet */
};

struct jittd_worker {
	const struct agent_config *c;
	const struct agent_spool_dirs *dirs; /* the data folder, opened by agent_spool_prepare */
	pthread_mutex_t lock;		     /* st: written by the worker, read by the control
					      * socket's thread (jittd_worker_stats) */
	struct jittd_stats st;
	char retrying[128]; /* the trace whose last attempt failed: not "seen" twice */
	/* Each summary written is offered to the uploader (NULL: none, consent never asked). */
	struct up_uploader *up;
	/* Counts jittd_worker_forget calls: a trace being summarised when consent is revoked
	 * is forgotten once more when it is done, so nothing it writes outlives the revoke. */
	atomic_uint forgets;
};

/* The data folder's descriptors stay jittd's and must outlive w. 0 or -errno. */
int jittd_worker_init(struct jittd_worker *w, const struct agent_config *c,
		      const struct agent_spool_dirs *dirs);
/* A consistent copy of the counters, from any thread. */
void jittd_worker_stats(struct jittd_worker *w, struct jittd_stats *out);

/* Remove the temporaries a killed run left in outbox/, traces/ and quarantine/. Returns how
 * many. */
int jittd_worker_recover(struct jittd_worker *w);

/* The caps and gone writers' temporaries (agent_spool_trim_at), counted and logged. */
void jittd_worker_trim(struct jittd_worker *w);

/*
 * Handle the spool's trace `name` ("X.jtr"). Returns 0 when it is done with (summarised
 * and kept or deleted, quarantined, removed as planted, or gone meanwhile), or a negative
 * errno when it stays in the spool for a later try (-ENOSPC, -EDQUOT, -ENOMEM, -EIO, ...).
 * Logs what happened.
 */
int jittd_worker_process(struct jittd_worker *w, const char *name);

/* Consent revoked: every raw trace and summary jittd holds (spool/, traces/, outbox/,
 * quarantine/) deleted. From any thread. Returns how many files went. */
int jittd_worker_forget(struct jittd_worker *w);

#endif
