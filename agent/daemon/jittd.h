/* SPDX-License-Identifier: MIT */
/*
 * agent/daemon/jittd.h - the daemon's state, shared by its event loop (jittd.c), the work
 * on one trace (worker.c) and its control socket's commands (control.c).
 */
#ifndef JITT_AGENT_DAEMON_JITTD_H
#define JITT_AGENT_DAEMON_JITTD_H

#include "agent/config.h"
#include "agent/ctl.h"
#include "agent/daemon/consent.h"
#include "agent/daemon/worker.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * Two threads: the main one waits in one ppoll() over the spool's inotify fd, the control
 * socket and the stop signals, and so answers while a trace is being summarised; the
 * worker (jittd.c's work()) summarises, one trace at a time. What they share is below,
 * under `lock`, and the worker's counters (under the worker's own lock).
 */
struct jittd {
	struct agent_config c;
	struct agent_spool_dirs dirs; /* the data folder, opened and checked once at start */
	struct jittd_worker w;
	/* The control socket's server, for its counters in `status` (the main thread's only:
	 * the handler runs there). */
	const struct agent_ctl_server *ctl;
	/* Consent and the uploader (uploader/uploader.h; NULL in a build without it). The
	 * main thread's: the control socket and the consent file's inotify both run there. */
	struct jittd_consent consent;
	bool granted;
	struct up_uploader *up;
	pthread_mutex_t lock; /* the fields below */
	pthread_cond_t wake;  /* the worker's: work, or stop */
	bool scan;	      /* the spool may hold work: look at it */
	int64_t retry_at_ms;  /* CLOCK_MONOTONIC of the next try after a failure; 0 none */
	unsigned backoff_ms;  /* the wait after the next failure */
	int last_error;	      /* of the last failed try, 0 after a success */
	bool busy;	      /* the worker is in a pass over the spool */
	atomic_bool stopping; /* finish the trace at hand, then leave */
};

/* The worker's state for `jitt status`: "busy" (in a pass, or one is due), "waiting" (for
 * the retry time after a failure) or "idle" (until new work). From any thread. */
const char *jittd_worker_state(struct jittd *d);

/* The error of the last failed try (0: none), from any thread. */
int jittd_last_error(struct jittd *d);

/* The control socket's commands (agent/ctl.h's handler): "status" for anyone; "scan" (look
 * at the spool now, forgetting the back-off) for those agent_ctl_may_change allows. */
int jittd_control(void *ctx, const struct agent_ctl_peer *peer, const char *cmd, const char *arg,
		  char *reply, size_t size);

/* Consent is now `granted` (asked on the socket, or the file changed): a grant starts
 * uploads; a revoke stops the one in flight and deletes every queued report, the secret,
 * and every raw trace and summary. why: for the log. Main thread. */
void jittd_apply_consent(struct jittd *d, bool granted, const char *why);

/* The next try now, not after the back-off (a "scan" request, a new trace); from any
 * thread. */
void jittd_retry_now(struct jittd *d);

#endif
