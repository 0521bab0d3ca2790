/* SPDX-License-Identifier: MIT */
/*
 * agent/daemon/jittd.h - the daemon's state, shared by its event loop (jittd.c), the work
 * on one trace (worker.c) and its control socket's commands (control.c).
 */
#ifndef JITT_AGENT_DAEMON_JITTD_H
#define JITT_AGENT_DAEMON_JITTD_H

#include "agent/config.h"
#include "agent/ctl.h"
#include "agent/daemon/worker.h"

#include <stdbool.h>
#include <stdint.h>

struct jittd {
	struct agent_config c;
	struct jittd_worker w;
	bool scan;	     /* the spool may hold work: look at it */
	int64_t retry_at_ms; /* CLOCK_MONOTONIC of the next try after a failure; 0 none */
	unsigned backoff_ms; /* the wait after the next failure */
	int last_error;	     /* of the last failed try, 0 after a success */
};

/* The control socket's commands (agent/ctl.h's handler): "status" for anyone; "scan" (look
 * at the spool now, forgetting the back-off) for those agent_ctl_may_change allows. */
int jittd_control(void *ctx, const struct agent_ctl_peer *peer, const char *cmd, const char *arg,
		  char *reply, size_t size);

/* The next try now, not after the back-off (a "scan" request). */
void jittd_retry_now(struct jittd *d);

#endif
