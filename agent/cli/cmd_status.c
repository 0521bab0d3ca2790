/* SPDX-License-Identifier: MIT */
/*
 * `jitt status [PID] [-c CONFIG]`: jittd's counters (traces seen, summarised, quarantined,
 * ...; docs/agent.md), or with PID that traced process's own status, one "key value" per
 * line, as the control socket answers it (agent/ctl.h): its settings file and whether it
 * was found (settings, settings_found), its ring size and thread cap (ring_kb,
 * max_threads), one "thread TID NAME" line per traced thread, one "records TID N" line per
 * thread (slots written since its ring last started), then its counters
 * (docs/runtime.md, "Status").
 */
#include "agent/cli/cli.h"
#include "agent/config.h"

#include <stdio.h>
#include <string.h>

#define USAGE "usage: jitt status [PID] [-c CONFIG]\n"

static void help(FILE *out)
{
	fputs("jittd's counters, or with PID that traced process's own status: its settings\n"
	      "file, ring size, traced threads and counters. The settings: CONFIG, else\n"
	      "$JITT_CONFIG, else " CONFIG_AGENT_CONFIG_FILE "\n",
	      out);
}

static const struct option longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt status", USAGE, help, "c:", longopts };

int cmd_status(int argc, char **argv)
{
	const char *config = NULL, *pid_arg = NULL;
	struct cli_args p;
	cli_args_init(&p, &command, argc, argv);
	for (int c; (c = cli_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case 'c':
			config = p.arg;
			break;
		case CLI_OPERAND:
			if (pid_arg)
				return cli_usage_error(&p, "one PID at most; also given", p.arg);
			pid_arg = p.arg;
			break;
		}
	}
	pid_t pid = 0;
	if (pid_arg && cli_parse_pid(pid_arg, &pid) != 0)
		return cli_usage_error(&p, "not a process id:", pid_arg);
	char reply[AGENT_CTL_REPLY];
	int r = cli_ctl_ask("jitt status", config, pid, "status", NULL, reply, sizeof(reply));
	if (r == 0)
		fputs(reply, stdout);
	return r;
}
