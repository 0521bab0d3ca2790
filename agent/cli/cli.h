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
int cmd_report(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_trigger(int argc, char **argv);
int cmd_consent(int argc, char **argv);

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

/* Where debug files of stripped modules come from (agent/cli/cli_symbols.c): called once by
 * main(), before any command reads a trace. */
void cli_symbols_setup(void);

/* For the commands that talk to a control socket (agent/cli/cli_ctl.c). */
#include "agent/ctl.h"

#include <stddef.h>
#include <sys/types.h>

/* A process id: decimal, 1..INT_MAX. 0 or -EINVAL. */
int cli_parse_pid(const char *s, pid_t *pid);
/* Send "cmd arg" to jittd's socket (pid 0) or a traced process's, per the settings file
 * (NULL: the default). Returns 0 with the reply in reply, or prints "prog: why" and
 * returns 1. */
int cli_ctl_ask(const char *prog, const char *config, pid_t pid, const char *cmd,
		const char *arg, char *reply, size_t size);

#endif
