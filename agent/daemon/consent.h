/* SPDX-License-Identifier: MIT */
/*
 * agent/daemon/consent.h - the user's consent to uploads, as jittd keeps it: one line,
 * "granted" or "revoked", in the consent file (consent_file, or DATA_DIR/consent). Two
 * writers: jittd itself (`jitt consent grant|revoke` on its control socket), or an OEM's
 * settings app writing the file directly; jittd watches the file's folder (inotify) and
 * acts on a change without a restart.
 *
 * Missing, unreadable, malformed, or changeable by someone it should not be (not owned by
 * root, the system user or jittd's user; writable by group or others; a symlink): revoked.
 * Off by default, and off whenever in doubt.
 */
#ifndef JITT_AGENT_DAEMON_CONSENT_H
#define JITT_AGENT_DAEMON_CONSENT_H

#include "agent/config.h"

#include <stdbool.h>
#include <stddef.h>

struct jittd_consent {
	char path[AGENT_PATH_MAX]; /* the file */
	char dir[AGENT_PATH_MAX];  /* its folder, watched */
	const char *name;	   /* its name in dir (into path) */
	int64_t system_uid;
};

/* Where the file is, from the settings. 0 or -ENAMETOOLONG. */
int jittd_consent_init(struct jittd_consent *k, const struct agent_config *c);
/* The state now; *why says why it is revoked when the file is not a plain "granted". */
bool jittd_consent_read(const struct jittd_consent *k, char *why, size_t whysize);
/* Written atomically (fsync'd, renamed). 0 or -errno. */
int jittd_consent_write(const struct jittd_consent *k, bool granted);

#endif
