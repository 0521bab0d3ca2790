/* SPDX-License-Identifier: MIT */
/*
 * The `jitt` command's file arguments (agent/cli/cli_file.c; hostile input,
 * docs/security.md): what is not a trace file is refused by what it is, at once; and a
 * mapped file truncated by another process while it is read ends the command with a
 * sentence and status 1, not SIGBUS. The truncation is real (a mapping of a file cut to
 * nothing, then read), made in a child so that the handler's _exit ends only the child.
 * tests/run.sh runs the same refusals through the real command. Then files named by -o
 * (agent/cli/cli_out.c): a file is replaced whole, a FIFO or a device written in place, a
 * symbolic link, a folder and the command's own input refused; tests/export-check.sh does
 * the same through `jitt export`.
 */
#include "harness.h"
#include "deadline.h"
#include "agent/cli/cli.h"
#include "ringbuf/tracefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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

/* ---- files named by -o (agent/cli/cli_out.c) ---- */

/* cli_out_open and, when it opened, a write of text and cli_out_close; stderr caught into
 * said. Returns cli_out_open's status, or 2 when the write or the close failed. */
/* A second name for a file (a hard link). 0 or -errno. */
static int link_to(const char *from, const char *to)
{
	return link(from, to) == 0 ? 0 : -errno;
}

static int write_out(const char *path, const char *input, const char *text, char *said,
		     size_t size)
{
	char caught[512];
	snprintf(caught, sizeof(caught), "%s/said", test_tmpdir());
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	int fd = open(caught, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	dup2(fd, STDERR_FILENO);
	close(fd);
	struct cli_out o;
	int r = cli_out_open("jitt test", path, 0600, &input, input ? 1 : 0, &o);
	if (r == 0 && (fputs(text, o.f) < 0 || cli_out_close(&o, 0) != 0))
		r = 2;
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	FILE *f = fopen(caught, "r");
	size_t n = f ? fread(said, 1, size - 1, f) : 0;
	said[n] = 0;
	if (f)
		fclose(f);
	return r;
}

static void file_text(const char *path, char *text, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(text, 1, size - 1, f) : 0;
	text[n] = 0;
	if (f)
		fclose(f);
}

/* Nothing named like a temporary of ours left in the test's folder. */
static bool no_temporary(void)
{
	DIR *d = opendir(test_tmpdir());
	bool none = d != NULL;
	for (struct dirent *e; d && (e = readdir(d));)
		none = none && !strstr(e->d_name, ".tmp-");
	if (d)
		closedir(d);
	return none;
}

TEST(cli_out_replaces_a_file_whole_and_makes_a_new_one_0600)
{
	char path[512], said[512], text[64];
	snprintf(path, sizeof(path), "%s/out.json", test_tmpdir());
	mode_t old = umask(022);
	CHECK_EQ_INT(write_out(path, NULL, "new\n", said, sizeof(said)), 0);
	umask(old);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	CHECK_EQ_INT(write_out(path, NULL, "again\n", said, sizeof(said)), 0);
	file_text(path, text, sizeof(text));
	CHECK_STR(text, "again\n");
	CHECK_STR(said, "");
	CHECK(no_temporary());
}

TEST(cli_out_writes_a_fifo_and_a_device_in_place)
{
	char fifo[512], said[512], text[64] = "";
	snprintf(fifo, sizeof(fifo), "%s/fifo", test_tmpdir());
	CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
	/* The reader opens first (without waiting for a writer), so the writer's open returns. */
	int r = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	CHECK(r >= 0);
	CHECK_EQ_INT(write_out(fifo, NULL, "through the FIFO\n", said, sizeof(said)), 0);
	ssize_t n = read(r, text, sizeof(text) - 1);
	text[n > 0 ? n : 0] = 0;
	close(r);
	CHECK_STR(text, "through the FIFO\n");
	struct stat st;
	CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
	/* Written to, not renamed over: as root, a rename made /dev/null a regular file. */
	CHECK_EQ_INT(write_out("/dev/null", NULL, "nothing\n", said, sizeof(said)), 0);
	CHECK(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
	CHECK_STR(said, "");
	CHECK(no_temporary());
}

TEST(cli_out_refuses_a_symlink_a_folder_and_an_input)
{
	char dir[512], target[600], link[600], input[600], hard[600], said[1024], want[1400],
		text[64];
	snprintf(dir, sizeof(dir), "%s", test_tmpdir());
	snprintf(target, sizeof(target), "%s/target", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(input, sizeof(input), "%s/in.jtr", dir);
	snprintf(hard, sizeof(hard), "%s/hard.jtr", dir);
	FILE *f = fopen(target, "w");
	CHECK(f && fputs("kept\n", f) >= 0 && fclose(f) == 0);
	CHECK_EQ_INT(symlink(target, link), 0);
	CHECK_EQ_INT(link_to(target, input), 0);
	CHECK_EQ_INT(link_to(target, hard), 0);
	static const struct {
		int which; /* 0 the symlink, 1 the folder, 2 the input, 3 a hard link of it */
		const char *why;
	} cases[] = {
		{ 0, "a symbolic link: neither replaced nor followed (name its target, or "
		     "remove it)" },
		{ 1, "a directory, not a file to write" },
		{ 2, "a file this command reads: not written over" },
		{ 3, "a file this command reads: not written over" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *path = cases[i].which == 0	 ? link
				   : cases[i].which == 1 ? dir
				   : cases[i].which == 2 ? input
							 : hard;
		CHECK_EQ_INT(write_out(path, input, "replaced\n", said, sizeof(said)), 1);
		snprintf(want, sizeof(want), "jitt test: %s: %s\n", path, cases[i].why);
		CHECK_STR(said, want);
	}
	struct stat st;
	CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	file_text(target, text, sizeof(text));
	CHECK_STR(text, "kept\n");
	CHECK(no_temporary());
}
