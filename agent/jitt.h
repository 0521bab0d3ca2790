/* SPDX-License-Identifier: MIT */
/*
 * jitt.h - the one header an OEM includes to use jitt in a program built with
 * -finstrument-functions (and -flto, so the trace points are inlined).
 *
 * Functions return 0 or a negative errno. C11, usable from C++.
 */
#ifndef JITT_H
#define JITT_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Trace the calling thread's function calls (on) or stop (off). The first call maps the
 * thread's ring. At most CONFIG_RB_MAX_TRACED_THREADS threads are traced at once (Hubble
 * section 4.3): -EBUSY beyond that; the others pay only the off check.
 */
int jitt_trace_thread(bool on);

/* Name the calling thread in trace files and summaries (at most 15 bytes kept). */
int jitt_thread_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif
