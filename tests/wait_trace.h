/* SPDX-License-Identifier: MIT */
/*
 * tests/wait_trace.h - for the small traced programs the check scripts build: after
 * jitt_anomaly(), the control thread persists the trace on its own; the program waits for
 * a *.jtr to appear in the folder $TRACE_SPOOL names before it exits, rather than sleeping
 * for a guess (a bound of 60 s only catches a hang). Without $TRACE_SPOOL it returns at
 * once.
 */
#ifndef JITT_TESTS_WAIT_TRACE_H
#define JITT_TESTS_WAIT_TRACE_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void wait_for_trace(void)
{
	const char *dir = getenv("TRACE_SPOOL");
	for (int i = 0; dir && i < 6000; i++) {
		DIR *d = opendir(dir);
		struct dirent *e;
		int found = 0;
		while (d && (e = readdir(d))) {
			size_t n = strlen(e->d_name);
			found |= n > 4 && e->d_name[0] != '.' && !strcmp(e->d_name + n - 4, ".jtr");
		}
		if (d)
			closedir(d);
		if (found)
			return;
		usleep(10000);
	}
}

#endif
