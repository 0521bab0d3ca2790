/* SPDX-License-Identifier: MIT */
/*
 * The `jitt` command's file arguments: a trace named on the command line may be anything
 * (a FIFO, a folder, /dev/zero, a file another process is still writing or truncating).
 * Each is refused by what it is, in words, never waited on; and a mapped trace cut short
 * under the command ends it with a sentence and status 1, not a signal.
 */
#include "agent/cli/cli.h"
#include "agent/escape.h"
#include "hal/fs.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_trace_open(const char *prog, const char *path, struct rb_trace *t)
{
	char shown[512], err[256] = "", why[512];
	agent_escape(shown, sizeof(shown), path);
	/* Opened once (hal_open_file inside): a folder, a FIFO or a device is named for what it
	 * is, where a plain open would say "No such device" for a folder, "empty file" for
	 * /dev/zero and wait forever on a FIFO. */
	unsigned kind = 0;
	int e = rb_trace_open_kind(path, t, &kind, err, sizeof(err));
	if (e == -EISDIR || (e == -EINVAL && !err[0]))
		fprintf(stderr, "%s: %s: %s, not a trace file\n", prog, shown, hal_file_kind(kind));
	else if (e)
		fprintf(stderr, "%s: %s: %s\n", prog, shown,
			agent_escape(why, sizeof(why), e == -EINVAL ? err : strerror(-e)));
	return e ? 1 : 0;
}

static void truncated(int sig, siginfo_t *info, void *ctx)
{
	(void)sig;
	(void)ctx;
	/* Only async-signal-safe calls here: write and _exit. */
	static const char cut[] = "jitt: a file being read was truncated by another process\n";
	static const char other[] = "jitt: bus error (SIGBUS)\n";
	if (info->si_code == BUS_ADRERR) {
		ssize_t r = write(STDERR_FILENO, cut, sizeof(cut) - 1);
		(void)r;
	} else {
		ssize_t r = write(STDERR_FILENO, other, sizeof(other) - 1);
		(void)r;
	}
	_exit(1);
}

int cli_sigbus_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = truncated;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL) == 0 ? 0 : -errno;
}
