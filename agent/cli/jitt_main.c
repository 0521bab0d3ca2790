/* SPDX-License-Identifier: MIT */
/* jitt: the command-line front end. One subcommand per file (agent/cli/cmd_*.c). */
#include "agent/cli/cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "hal", cmd_hal, "timer source, CPU classes and network state of this machine" },
	{ "decode", cmd_decode, "print a trace file: every thread's calls with whole timestamps" },
	{ "summarize", cmd_summarize, "what a trace says about its slow moment (text or --json)" },
	{ "diff", cmd_diff, "compare two traces or summaries: what got slower, what is new" },
	{ "export", cmd_export, "a trace for ui.perfetto.dev, speedscope or flame graphs" },
	{ "exclude", cmd_exclude, "functions to build without trace points, for GCC's exclude list" },
	{ "inlined", cmd_inlined, "what a plain build inlined everywhere, for GCC's exclude list" },
	{ "report", cmd_report, "the exact bytes an upload of a summary would send" },
	{ "status", cmd_status, "jittd's counters, or a traced process's state (PID)" },
	{ "trigger", cmd_trigger, "ask a traced process to save its trace now" },
	{ "consent", cmd_consent, "grant, revoke or show the consent to upload reports" },
};

static int usage(FILE *out)
{
	fprintf(out, "usage: jitt COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n`jitt COMMAND --help` tells more.\n");
	return out == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
	(void)cli_sigbus_install();
	cli_symbols_setup();
	if (argc < 2)
		return usage(stderr);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return usage(stdout);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "jitt: unknown command '%s'\n", argv[1]);
	return usage(stderr);
}
