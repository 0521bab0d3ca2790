/* SPDX-License-Identifier: MIT */
/*
 * peers-time OUT CMD [ARGS...]: run CMD with its standard output into OUT and print, on
 * one line, the CPU time it used (user + sys, of it and its children, from wait4's
 * rusage), its wall time, both in seconds, and its peak resident memory in KiB. For the
 * post-processing table of tests/bench-peers.sh: CPU time, because on a loaded machine
 * wall time counts the time a program waited for a core. Exits with CMD's status.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: peers-time OUT CMD [ARGS...]\n");
		return 2;
	}
	int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		perror(argv[1]);
		return 2;
	}
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0) {
		perror("peers-time: fork");
		return 2;
	}
	if (pid == 0) {
		dup2(out, 1);
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("peers-time: wait4");
		return 2;
	}
	double wall = now() - t0;
	double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		     (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	printf("%.4f %.4f %ld\n", cpu, wall, ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
