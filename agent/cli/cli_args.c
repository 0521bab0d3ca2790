/* SPDX-License-Identifier: MIT */
/*
 * How every `jitt` subcommand reads its command line and says what went wrong: getopt_long
 * (as sim/main.c does), with the same rules everywhere: -h/--help prints the synopsis and
 * the help to standard output and ends with 0; an unknown option, a missing value or a
 * value given to an option that takes none prints one line naming it, then the synopsis,
 * to standard error, and ends with 2; `--opt=value` and `--opt value` both work; options and operands may come
 * in any order, and "--" ends the options.
 */
#include "agent/cli/cli.h"
#include "agent/escape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_args_init(struct cli_args *p, const struct cli_command *cmd, int argc, char **argv)
{
	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->argc = argc;
	p->argv = argv;
	/* "-": operands come back in order as 1, so argv[optind] before a call is always the
	 * element that call reads (the error messages name it); ":": a missing value is told
	 * apart from an unknown option. */
	snprintf(p->shortopts, sizeof(p->shortopts), "-:h%s", cmd->shortopts);
	opterr = 0;
	optind = 0; /* a full restart, in glibc and musl alike */
}

/* One line on standard error, then the synopsis: status 2. */
static int usage_line(struct cli_args *p, const char *fmt, const char *name)
{
	char shown[256]; /* what was typed, escaped (agent/escape.h) */
	fprintf(stderr, "%s: ", p->cmd->prog);
	fprintf(stderr, fmt, agent_escape(shown, sizeof(shown), name));
	fputs(p->cmd->synopsis, stderr);
	return p->status = 2;
}

int cli_usage_error(const struct cli_args *p, const char *what, const char *arg)
{
	fprintf(stderr, "%s: %s", p->cmd->prog, what);
	if (arg) {
		fputs(" '", stderr);
		agent_escape_fput(stderr, arg);
		fputc('\'', stderr);
	}
	fputc('\n', stderr);
	fputs(p->cmd->synopsis, stderr);
	return 2;
}

/* The option an error is about, as it was typed: "--output" (without its "=value") or
 * "-o" (one letter of a cluster such as "-vx"). */
static void option_name(const char *elem, int letter, char *out, size_t size)
{
	if (elem && strncmp(elem, "--", 2) == 0)
		snprintf(out, size, "%.*s", (int)strcspn(elem, "="), elem);
	else
		snprintf(out, size, "-%c", letter);
}

int cli_next(struct cli_args *p)
{
	if (p->ended) /* what followed "--": operands, whatever they look like */
		goto operand;
	int at = optind ? optind : 1;
	const char *elem = at < p->argc ? p->argv[at] : NULL;
	int c = getopt_long(p->argc, p->argv, p->shortopts, p->cmd->longopts, NULL);
	char name[64];
	switch (c) {
	case -1:
		/* musl's getopt ends the options at a lone "-" where glibc's reads it as an
		 * operand (standard input, by convention): an operand here, options after it. */
		if (optind < p->argc && strcmp(p->argv[optind], "-") == 0) {
			p->arg = p->argv[optind++];
			return CLI_OPERAND;
		}
		p->ended = 1;
		goto operand;
	case 1:
		p->arg = optarg;
		return CLI_OPERAND;
	case 'h':
		fputs(p->cmd->synopsis, stdout);
		if (p->cmd->help)
			p->cmd->help(stdout);
		p->status = 0;
		return CLI_EXIT;
	case ':':
		option_name(elem, optopt, name, sizeof(name));
		usage_line(p, "%s needs a value\n", name);
		return CLI_EXIT;
	case '?':
		option_name(elem, optopt, name, sizeof(name));
		/* "--json=1": getopt_long knows the option (optopt is its value) but it takes
		 * no value; an unknown or ambiguous long option leaves optopt 0. */
		if (elem && strncmp(elem, "--", 2) == 0 && strchr(elem, '=') && optopt)
			usage_line(p, "%s takes no value\n", name);
		else
			usage_line(p, "unknown option '%s'\n", name);
		return CLI_EXIT;
	default:
		p->arg = optarg;
		return c;
	}
operand:
	if (optind >= p->argc)
		return CLI_END;
	p->arg = p->argv[optind++];
	return CLI_OPERAND;
}

int cli_parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	/* Digits only: strtol would take " 5", "+5" and "-0". */
	if (*s < '0' || *s > '9' || *end || errno || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

int cli_analysis_error(const char *prog, const char *path, int e)
{
	fprintf(stderr, "%s: ", prog);
	agent_escape_fput(stderr, path);
	fprintf(stderr, ": %s\n",
		e == -EINVAL   ? "a thread's ring cannot be decoded"
		: e == -ENOMEM ? "out of memory"
			       : strerror(-e));
	return 1;
}
