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

static const struct option longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt consent", USAGE, NULL, "c:", longopts };

int cmd_consent(int argc, char **argv)
{
	const char *config = NULL, *what = NULL;
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
			if (what)
				return cli_usage_error(
					&p, "one of grant, revoke or status; also given", p.arg);
			if (strcmp(p.arg, "grant") && strcmp(p.arg, "revoke") &&
			    strcmp(p.arg, "status"))
				return cli_usage_error(&p, "grant, revoke or status, not", p.arg);
			what = p.arg;
			break;
		}
	}
	if (!what)
		return cli_usage_error(&p, "grant, revoke or status?", NULL);
	char reply[AGENT_CTL_REPLY];
	int r = cli_ctl_ask("jitt consent", config, 0, "consent", what, reply, sizeof(reply));
	if (r == 0)
		fputs(reply, stdout);
	return r;
}
