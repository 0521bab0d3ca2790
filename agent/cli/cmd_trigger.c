/* SPDX-License-Identifier: MIT */
/*
 * `jitt trigger PID [REASON] [-c CONFIG]`: ask a traced process to persist its rings now,
 * as if an anomaly had been detected (its control socket's "trigger REASON", agent/ctl.h).
 * REASON is stored in the trace file; "external" when none is given.
 */
#include "agent/cli/cli.h"

#include <stdio.h>
#include <string.h>

#define USAGE "usage: jitt trigger PID [REASON] [-c CONFIG]\n"

int cmd_trigger(int argc, char **argv)
{
	const char *config = NULL, *reason = NULL, *pid_arg = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			config = argv[++i];
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf(USAGE);
			return 0;
		} else if (!pid_arg) {
			pid_arg = argv[i];
		} else if (!reason) {
			reason = argv[i];
		} else {
			fprintf(stderr, USAGE);
			return 2;
		}
	}
	pid_t pid;
	if (!pid_arg || cli_parse_pid(pid_arg, &pid) != 0) {
		if (pid_arg)
			fprintf(stderr, "jitt trigger: %s: not a process id\n", pid_arg);
		fprintf(stderr, USAGE);
		return 2;
	}
	if (!reason)
		reason = "external";
	/* One line on the wire: printable, short enough for the request. */
	size_t n = strlen(reason);
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)reason[i] < 0x20 || reason[i] == 0x7f) {
			fprintf(stderr, "jitt trigger: REASON must be printable\n" USAGE);
			return 2;
		}
	}
	if (n == 0 || n > AGENT_CTL_LINE - 16) {
		fprintf(stderr, "jitt trigger: REASON must be 1 to %d characters\n" USAGE,
			AGENT_CTL_LINE - 16);
		return 2;
	}
	char reply[AGENT_CTL_REPLY];
	int r = cli_ctl_ask("jitt trigger", config, pid, "trigger", reason, reply, sizeof(reply));
	if (r == 0) {
		if (reply[0])
			fputs(reply, stdout);
		else
			printf("triggered %d (%s)\n", (int)pid, reason);
	}
	return r;
}
