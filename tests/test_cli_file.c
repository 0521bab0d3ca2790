/* SPDX-License-Identifier: MIT */
/*
 * The `jitt` command's file arguments (agent/cli/cli_file.c, issue 12 items 1 and 10): what
 * is not a trace file is refused by what it is, at once; and a mapped file truncated by
 * another process while it is read ends the command with a sentence and status 1, not
 * SIGBUS. The truncation is real (a mapping of a file cut to nothing, then read), made in a
 * child so that the handler's _exit ends only the child. tests/run.sh runs the same refusals
 * through the real command.
 */
#include "harness.h"
#include "deadline.h"
#include "agent/cli/cli.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn in a child whose stderr is caught into out; returns its wait status. */
static int in_child(void (*fn)(const char *), const char *arg, char *out, size_t size)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		close(p[1]);
		fn(arg);
		_exit(0);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	/* Until the child is gone and its end of the pipe with it. */
	while (n + 1 < size && (r = read(p[0], out + n, size - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	out[n] = '\0';
	close(p[0]);
	int status = -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

static void read_a_truncated_mapping(const char *path)
{
	if (cli_sigbus_install() != 0)
		_exit(4);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		_exit(5);
	volatile const uint8_t *m = mmap(NULL, 65536, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED || ftruncate(fd, 0) != 0)
		_exit(6);
	(void)m[32768]; /* past the end now: SIGBUS */
	_exit(7);
}

TEST(cli_sigbus_says_truncated_and_exits_1)
{
	char path[512], msg[512];
	snprintf(path, sizeof(path), "%s/cut.jtr", test_tmpdir());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && ftruncate(fd, 65536) == 0);
	close(fd);
	int status = in_child(read_a_truncated_mapping, path, msg, sizeof(msg));
	if (!CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1))
		printf("    status %#x, said: %s\n", status, msg);
	CHECK_STR(msg, "jitt: a file being read was truncated by another process\n");
}

static void open_as_trace(const char *path)
{
	struct rb_trace t;
	deadline_start(); /* a FIFO must not hold the command */
	int r = cli_trace_open("jitt test", path, &t);
	deadline_stop();
	_exit(r == 0 ? 0 : 1);
}

TEST(cli_trace_open_names_what_is_not_a_trace)
{
	char fifo[512], msg[1024];
	snprintf(fifo, sizeof(fifo), "%s/fifo", test_tmpdir());
	CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
	static const struct {
		const char *path, *said;
	} cases[] = {
		{ NULL, "a FIFO, not a trace file\n" },
		{ "/dev/zero", "jitt test: /dev/zero: a character device, not a trace file\n" },
		{ "/dev/null", "jitt test: /dev/null: a character device, not a trace file\n" },
		{ "/", "jitt test: /: a directory, not a trace file\n" },
		{ "/nonexistent/x.jtr",
		  "jitt test: /nonexistent/x.jtr: No such file or directory\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = cases[i].path ? cases[i].path : fifo;
		int status = in_child(open_as_trace, path, msg, sizeof(msg));
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
		size_t n = strlen(msg), m = strlen(cases[i].said);
		if (!CHECK(n >= m && strcmp(msg + n - m, cases[i].said) == 0))
			printf("    %s said: %s", path, msg);
	}
}
