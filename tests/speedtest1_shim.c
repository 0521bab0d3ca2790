/* SPDX-License-Identifier: MIT */
/*
 * A measurement shim for tests/speedtest1.sh, not part of jitt: SQLite's speedtest1 is a
 * program nobody here wrote and it does not call libjitt, but libjitt traces only threads
 * that ask (jitt_trace_thread). Linked into the instrumented speedtest1, this constructor
 * makes the main thread, where all of speedtest1's work runs, ask, before main() starts;
 * unless SPEEDTEST1_TRACE=0, for the "off" variant: the runtime runs, the thread is not
 * traced, and each trace point costs only its off check.
 */
#include "agent/jitt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

__attribute__((constructor)) static void speedtest1_shim(void)
{
	/* Constructors of equal priority run in an order the link decides, so this one may
	 * come before libjitt's own (jitt_auto_init): starting the runtime here makes the
	 * order not matter, since the second jitt_init() only returns -EALREADY. */
	(void)jitt_init(NULL);
	(void)jitt_thread_name("main");
	const char *trace = getenv("SPEEDTEST1_TRACE");
	if (!trace || strcmp(trace, "0") != 0)
		(void)jitt_trace_thread(true);
}
