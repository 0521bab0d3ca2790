/* SPDX-License-Identifier: MIT */
/*
 * `jitt status [PID] [-c CONFIG]`: jittd's counters (traces seen, summarised, quarantined,
 * ...; docs/agent.md), or with PID that traced process's own status, one "key value" per
 * line, as the control socket answers it (agent/ctl.h): its settings file and whether it
 * was found (settings, settings_found), its ring size and thread cap (ring_kb,
 * max_threads), one "thread TID NAME" line per traced thread, then its counters
 * (docs/runtime.md, "Status").
 */
#include "agent/cli/cli.h"

#include <stdio.h>
#include <string.h>

#define USAGE "usage: jitt status [PID] [-c CONFIG]\n"

int cmd_status(int argc, char **argv)
{
	const char *config = NULL;
	pid_t pid = 0;
	bool have_pid = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			config = argv[++i];
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf(USAGE);
			return 0;
		} else if (!have_pid && cli_parse_pid(argv[i], &pid) == 0) {
			have_pid = true;
		} else {
			fprintf(stderr, "jitt status: %s: not a process id\n" USAGE, argv[i]);
			return 2;
		}
	}
	char reply[AGENT_CTL_REPLY];
	int r = cli_ctl_ask("jitt status", config, pid, "status", NULL, reply, sizeof(reply));
	if (r == 0)
		fputs(reply, stdout);
	return r;
}
