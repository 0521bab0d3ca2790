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

/* Without trace points of their own, in either kind of build (-finstrument-functions'
 * hooks or sleds' patchable entries): the checks read what the program was doing when it
 * began to wait, and a freeze that lands while it polls must not show the poll. */
#define WAIT_UNTRACED __attribute__((no_instrument_function, patchable_function_entry(0, 0)))

/* How many *.jtr the folder $TRACE_SPOOL names holds (none, without it). */
WAIT_UNTRACED static int traces_saved(void)
{
	const char *dir = getenv("TRACE_SPOOL");
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	int found = 0;
	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		found += n > 4 && e->d_name[0] != '.' && !strcmp(e->d_name + n - 4, ".jtr");
	}
	if (d)
		closedir(d);
	return found;
}

WAIT_UNTRACED static int trace_saved(void)
{
	return traces_saved() > 0;
}

/* Until the folder holds n traces (60 s at most). */
WAIT_UNTRACED static void wait_for_traces(int n)
{
	for (int i = 0; getenv("TRACE_SPOOL") && i < 6000; i++) {
		if (traces_saved() >= n)
			return;
		usleep(10000);
	}
}

WAIT_UNTRACED static void wait_for_trace(void)
{
	wait_for_traces(1);
}

#endif
