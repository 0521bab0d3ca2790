/* SPDX-License-Identifier: MIT */
/*
 * `jitt consent grant|revoke|status [-c CONFIG]`: the user's consent to uploads, kept by
 * jittd (agent/daemon/consent.h): "consent grant" on its control socket, allowed to root,
 * the system user and jittd's own user (as "scan"); "status" to anyone. Revoke deletes
 * every queued report, raw trace and summary, and the install secret, before it answers.
 */
#include "agent/cli/cli.h"

#include <stdio.h>
#include <string.h>

#define USAGE "usage: jitt consent grant|revoke|status [-c CONFIG]\n"

int cmd_consent(int argc, char **argv)
{
	const char *config = NULL, *what = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			config = argv[++i];
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf(USAGE);
			return 0;
		} else if (!what && (!strcmp(argv[i], "grant") || !strcmp(argv[i], "revoke") ||
				     !strcmp(argv[i], "status"))) {
			what = argv[i];
		} else {
			fprintf(stderr, USAGE);
			return 2;
		}
	}
	if (!what) {
		fprintf(stderr, USAGE);
		return 2;
	}
	char reply[AGENT_CTL_REPLY];
	int r = cli_ctl_ask("jitt consent", config, 0, "consent", what, reply, sizeof(reply));
	if (r == 0)
		fputs(reply, stdout);
	return r;
}
