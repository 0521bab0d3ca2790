/* SPDX-License-Identifier: MIT */
/*
 * agent/cli/cli.h - the `jitt` command's subcommands, one file each (cmd_<name>.c).
 *
 * The room agent/cli/ is the command line and nothing else: parsing arguments, printing for
 * people, exit codes. The work is done by agent/analysis/ (summaries, diffs, exports) and by
 * jittd or a traced process over their control sockets (agent/ctl.h); nothing else includes
 * this room.
 */
#ifndef JITT_AGENT_CLI_H
#define JITT_AGENT_CLI_H

/* Each returns the process exit status: 0 ok, 1 failure, 2 usage error. */
int cmd_hal(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_summarize(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_exclude(int argc, char **argv);
int cmd_inlined(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_trigger(int argc, char **argv);
int cmd_consent(int argc, char **argv);

/* ---- Command lines (agent/cli/cli_args.c): one way for every subcommand ---- */
#include <getopt.h>
#include <stdio.h>

#define CLI_OPERAND 1	 /* getopt_long's code for an operand, in order ("-" mode) */
#define CLI_END	    (-1) /* every element read */
#define CLI_EXIT    (-2) /* the command ends now with status: help or a usage error said */

/* Each long option table has it, before its end { NULL, 0, NULL, 0 }. */
#define CLI_HELP_OPTION { "help", no_argument, NULL, 'h' }

/* What a subcommand's command line is: declared once per command (static const). */
struct cli_command {
	const char *prog;	       /* "jitt export": every message starts with it */
	const char *synopsis;	       /* "usage: ...\n", after a usage error and atop -h */
	void (*help)(FILE *out);       /* the rest of -h's text (NULL: the synopsis is all) */
	const char *shortopts;	       /* as getopt's, without h (added: -h and --help) */
	const struct option *longopts; /* with CLI_HELP_OPTION */
};

struct cli_args {
	const struct cli_command *cmd;
	int argc;
	char **argv;
	char shortopts[64];
	const char *arg; /* the value of the option cli_next returned, or the operand */
	int status;	 /* after CLI_EXIT: 0 (help printed) or 2 (usage error printed) */
	int ended;	 /* options ended ("--" or the last element): operands only */
};

/* Starts reading argv (argv[0] is the subcommand's name) as cmd says. */
void cli_args_init(struct cli_args *p, const struct cli_command *cmd, int argc, char **argv);
/* The next element: an option's value (getopt_long's; its value, if it takes one, in
 * p->arg: `--opt=value` and `--opt value` alike), CLI_OPERAND (p->arg), CLI_END, or
 * CLI_EXIT with p->status after -h/--help (synopsis and help on stdout, 0), or after an
 * unknown option, a missing value or a value where none is taken (one line naming the
 * option, then the synopsis, on stderr, 2). */
int cli_next(struct cli_args *p);
/* A usage error: "PROG: WHAT 'ARG'" (ARG escaped; left out when NULL), then the synopsis,
 * on standard error. Returns 2, the status to exit with. */
int cli_usage_error(const struct cli_args *p, const char *what, const char *arg);
/* A decimal number lo..hi, digits only. 0 or -EINVAL. */
int cli_parse_long(const char *s, long lo, long hi, long *out);
/* An analysis of the trace or summary PATH failed with e: one wording for every command,
 * "PROG: PATH: a thread's ring cannot be decoded" (-EINVAL), "...: out of memory"
 * (-ENOMEM) or strerror's words, on standard error. Returns 1, the status to exit with. */
int cli_analysis_error(const char *prog, const char *path, int e);

/* For the commands that read trace files (agent/cli/cli_file.c). */
struct rb_trace;
/* Open path as a trace file, or print "prog: PATH: why" and return 1: a folder, a FIFO or
 * a device is refused by what it is ("a directory, not a trace file"), without waiting on
 * it. 0 with t open. */
int cli_trace_open(const char *prog, const char *path, struct rb_trace *t);
/* Trace files are mapped: one truncated by another process while it is read raises
 * SIGBUS. Installed by main(), this ends the command with "jitt: a file being read was
 * truncated by another process" and status 1 instead. 0 or -errno. */
int cli_sigbus_install(void);

/* ---- A file named by -o (agent/cli/cli_out.c) ---- */
#include <sys/types.h>

struct cli_out {
	FILE *f;	  /* where to write */
	const char *path; /* as given */
	char tmp[4096];	  /* the temporary renamed over path when whole; "" when written in
			   * place (a device, a FIFO) */
};
/* Opens PATH for the command's output, or prints "PROG: PATH: why" and returns 1. A regular
 * file, or none, is written under a temporary name (mode, less the umask) that
 * cli_out_close renames over PATH; a device or a FIFO is written in place (a FIFO waits
 * here for its reader); a symbolic link, a folder, a socket, and any of the command's
 * ninputs input files (the same inode) are refused. 0 with o->f open. */
int cli_out_open(const char *prog, const char *path, mode_t mode, const char *const *inputs,
		 int ninputs, struct cli_out *o);
/* Closes o->f: when e is 0 and the writes went through, the temporary is renamed over PATH;
 * otherwise it is removed. Returns e, or -EIO (a failed write), or rename's -errno. */
int cli_out_close(struct cli_out *o, int e);
/* Where debug files of stripped modules come from (agent/cli/cli_symbols.c): called once by
 * main(), before any command reads a trace. */
void cli_symbols_setup(void);

/* For the commands that talk to a control socket (agent/cli/cli_ctl.c). */
#include "agent/ctl.h"

#include <stddef.h>

/* A process id: decimal, 1..INT_MAX. 0 or -EINVAL. */
int cli_parse_pid(const char *s, pid_t *pid);
/* Send "cmd arg" to jittd's socket (pid 0) or a traced process's, per the settings file
 * (NULL: the default). Returns 0 with the reply in reply, or prints "prog: why" and
 * returns 1. */
int cli_ctl_ask(const char *prog, const char *config, pid_t pid, const char *cmd,
		const char *arg, char *reply, size_t size);

#endif
