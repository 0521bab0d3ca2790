/* SPDX-License-Identifier: MIT */
/* tests/harness.c - runs the registered tests, each in its own child process, so a crash or
 * a hang in one is reported as that test's failure and the others still run. */
#define _XOPEN_SOURCE 700
#include "harness.h"

#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEST_TIMEOUT_S 300 /* generous: armv7 under qemu-user is ~20x slower */

static struct test_case *first, **last = &first;
static int failures;
static const char *fakes;
static char tmpdir[256];

void test_register(struct test_case *tc)
{
	*last = tc;
	last = &tc->next;
}

int test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stdout, "    %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	failures++;
	return 0;
}

const char *test_fakes(void)
{
	return fakes;
}

pid_t test_dead_pid(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

const char *test_tmpdir(void)
{
	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(tmpdir, sizeof(tmpdir), "%s/jitt-test-XXXXXX", base ? base : "/tmp");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			exit(1);
		}
	}
	return tmpdir;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static int selected(const char *name, int argc, char **argv, int from)
{
	if (from >= argc)
		return 1;
	for (int i = from; i < argc; i++)
		if (strstr(name, argv[i]))
			return 1;
	return 0;
}

/* Runs one test in a child. Returns 1 when it passed. */
static int run_one(struct test_case *tc)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return 0;
	}
	if (pid == 0) {
		alarm(TEST_TIMEOUT_S);
		tc->fn();
		if (tmpdir[0])
			nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		fflush(stdout);
		_exit(failures ? 1 : 0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		;
	if (WIFSIGNALED(status)) {
		printf("    died of signal %d (%s)\n", WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? "timed out" : strsignal(WTERMSIG(status)));
		return 0;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	int i = 1;
	fakes = getenv("JITT_FAKES");
	if (i + 1 < argc && strcmp(argv[i], "--fakes") == 0) {
		fakes = argv[i + 1];
		i += 2;
	}
	if (!fakes)
		fakes = "sim/fakes";
	setvbuf(stdout, NULL, _IOLBF, 0);

	int passed = 0, failed = 0;
	for (struct test_case *tc = first; tc; tc = tc->next) {
		if (!selected(tc->name, argc, argv, i))
			continue;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int ok = run_one(tc);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
		if (ok)
			passed++;
		else
			failed++;
		printf("%s %s (%ld ms)\n", ok ? "ok  " : "FAIL", tc->name, ms);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
