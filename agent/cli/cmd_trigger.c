/* SPDX-License-Identifier: MIT */
/*
 * `jitt trigger PID [REASON] [-c CONFIG]`: ask a traced process to persist its rings now,
 * as if an anomaly had been detected (its control socket's "trigger REASON", agent/ctl.h).
 * REASON is stored in the trace file; "external" when none is given.
 *
 * The process answers with the trace's name in the spool, but the spool is only where a
 * trace waits for jittd: once summarised it moves to traces/ (keep_traces = 1) or is deleted
 * (docs/agent.md, "One trace, exactly once"), so a name in the spool alone would soon name
 * nothing. Both are printed: where it was written, and what jittd does with it then.
 */
#include "agent/cli/cli.h"
#include "agent/config.h"

#include <stdio.h>
#include <string.h>

#define USAGE "usage: jitt trigger PID [REASON] [-c CONFIG]\n"

static void help(FILE *out)
{
	fputs("asks the traced process PID to save its trace now, with REASON\n"
	      "(\"external\" by default); prints where it was written, and where jittd\n"
	      "keeps it once summarised. The settings: CONFIG, else $JITT_CONFIG, else\n"
	      "  " CONFIG_AGENT_CONFIG_FILE "\n",
	      out);
}

static const struct option longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt trigger", USAGE, help, "c:", longopts };

/* The process's reply, "trace DATA/spool/NAME.jtr", then what jittd (per the settings
 * file) does with that file. A reply in any other form, or a spool not jittd's, is printed
 * as it came: nothing more is known about it. */
static void print_trace(const char *config, const char *reply)
{
	fputs(reply, stdout);
	struct agent_config c;
	char err[512], spool[AGENT_PATH_MAX + 8];
	if (strncmp(reply, "trace ", 6) != 0 || agent_config_load(&c, config, err, sizeof(err)))
		return;
	/* The reply is printable already (cli_ctl_ask escaped it), and so is what matches it. */
	const char *path = reply + 6;
	size_t n = (size_t)snprintf(spool, sizeof(spool), "%s/spool/", c.data_dir);
	size_t len = strcspn(path, "\n");
	if (n >= sizeof(spool) || len <= n + 4 || strncmp(path, spool, n) != 0)
		return;
	const char *name = path + n;
	if (memchr(name, '/', len - n) || strncmp(path + len - 4, ".jtr", 4) != 0)
		return;
	int base = (int)(len - n - 4); /* NAME without .jtr */
	if (c.keep_traces)
		printf("then kept as %s/traces/%.*s.jtr, once jittd has summarised it into "
		       "%s/outbox/%.*s.json\n",
		       c.data_dir, base, name, c.data_dir, base, name);
	else
		printf("then deleted, once jittd has summarised it into %s/outbox/%.*s.json "
		       "(keep_traces = 0)\n",
		       c.data_dir, base, name);
}

int cmd_trigger(int argc, char **argv)
{
	const char *config = NULL, *reason = NULL, *pid_arg = NULL;
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
			if (!pid_arg)
				pid_arg = p.arg;
			else if (!reason)
				reason = p.arg;
			else
				return cli_usage_error(&p, "PID and one REASON; also given", p.arg);
			break;
		}
	}
	pid_t pid;
	if (!pid_arg)
		return cli_usage_error(&p, "no process id given", NULL);
	if (cli_parse_pid(pid_arg, &pid) != 0)
		return cli_usage_error(&p, "not a process id:", pid_arg);
	if (!reason)
		reason = "external";
	/* One line on the wire: printable, short enough for the request. */
	size_t n = strlen(reason);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)reason[i] < 0x20 || reason[i] == 0x7f)
			return cli_usage_error(&p, "REASON must be printable, not", reason);
	if (n == 0 || n > AGENT_CTL_LINE - 16) {
		char what[64];
		snprintf(what, sizeof(what), "REASON must be 1 to %d characters",
			 AGENT_CTL_LINE - 16);
		return cli_usage_error(&p, what, NULL);
	}
	char reply[AGENT_CTL_REPLY];
	int r = cli_ctl_ask("jitt trigger", config, pid, "trigger", reason, reply, sizeof(reply));
	if (r == 0) {
		if (reply[0])
			print_trace(config, reply);
		else
			printf("triggered %d (%s)\n", (int)pid, reason);
	}
	return r;
}
