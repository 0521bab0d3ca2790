/* SPDX-License-Identifier: MIT */
/* agent/cli.h - the `jitt` command's subcommands, one file each (cmd_<name>.c). */
#ifndef JITT_AGENT_CLI_H
#define JITT_AGENT_CLI_H

/* Each returns the process exit status: 0 ok, 1 failure, 2 usage error. */
int cmd_hal(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_summarize(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif
