/* SPDX-License-Identifier: MIT */
/*
 * jitt.h - the one header an OEM includes to use jitt in a program built with
 * -finstrument-functions (and -flto, so the trace points are inlined), linked with
 * libjitt and the wrap flags of the blocking calls (docs/agent.md).
 *
 * The runtime starts by itself before main() (a constructor, CONFIG_AGENT_AUTO_INIT) with
 * the Kconfig defaults, overridden by the config file (CONFIG_AGENT_CONFIG_FILE, or the
 * file named by the JITT_CONFIG environment variable). Nothing is traced until a thread
 * asks, jitt_trace_thread(true), or the settings say trace_main = 1 (the main thread is then
 * traced from the constructor). JITT_DISABLE=1 in the environment, or enabled = 0 in the
 * settings, keeps the runtime off: no ring, no thread, no socket.
 *
 * Functions return 0 or a negative errno. Every function may be called from any thread,
 * before or after init. C11, usable from C++. This interface is stable: new functions
 * may be added, none changes.
 */
#ifndef JITT_H
#define JITT_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of libjitt, "MAJOR.MINOR.PATCH". */
const char *jitt_version(void);

/*
 * Start the runtime: read the configuration, start the control thread (which runs the
 * detectors and persists traces). Done automatically before main() unless Kconfig turns
 * that off; calling it again returns -EALREADY. config_file NULL: the default file (which
 * may be absent). Switched off (JITT_DISABLE, enabled = 0): -ECANCELED, nothing started.
 * With trace_main = 1, called on the main thread, it also traces that thread.
 */
int jitt_init(const char *config_file);
/* Stop the control thread and close the control socket: nothing is detected or persisted
 * any more, once a trace already asked for (jitt_anomaly) is written. Threads keep tracing
 * into their rings until they turn it off or exit; traces already persisted stay.
 * jitt_init() may start the runtime again. At the process's exit the runtime stops by
 * itself, without waiting for its control thread unless a trace is being written. */
void jitt_shutdown(void);

/*
 * Trace the calling thread's function calls (on) or stop (off). The first call maps the
 * thread's ring. At most CONFIG_RB_MAX_TRACED_THREADS threads are traced at once (Hubble
 * section 4.3): -EBUSY beyond that; the others pay only the off check. Only a running
 * runtime traces: before jitt_init(), after a jitt_init() that failed (its settings
 * refused) or was switched off, and after jitt_shutdown(), on is -ENODEV and no ring is
 * mapped. Off always works.
 */
int jitt_trace_thread(bool on);

/* Name the calling thread in trace files and summaries (at most 15 bytes kept); before it
 * is traced too (the name waits for its ring). Without one, a thread goes by the kernel's
 * name for it (the program's name, or what pthread_setname_np set), read when it is
 * persisted. */
int jitt_thread_name(const char *name);

/*
 * Frame (or loop iteration) marks, for the UI thread's loop: call jitt_frame_begin() and
 * jitt_frame_end() around each iteration, or jitt_frame() once per iteration (it ends the
 * previous one and begins the next). They feed the hang detector (an iteration still
 * running past CONFIG_AGENT_HANG_MS) and the jank detector (CONFIG_AGENT_JANK_FRAMES
 * consecutive frames over CONFIG_AGENT_FRAME_BUDGET_US and over CONFIG_AGENT_JANK_NORMAL_PCT
 * of the thread's normal frame time, after CONFIG_AGENT_JANK_WARMUP_FRAMES: docs/runtime.md),
 * and mark the trace so that the summary finds the slow frame. One thread of the process
 * at a time drives the detectors: the last one that called jitt_frame_begin().
 */
void jitt_frame_begin(void);
void jitt_frame_end(void);
void jitt_frame(void);

/*
 * Report an anomaly the program noticed itself: the calling thread's ring gets a mark and
 * the whole process's rings are frozen and persisted with `reason` (at most 63 bytes
 * kept). Returns 0 when the persist was requested, -EAGAIN during the cool-down after the
 * previous one, -ENODEV when the runtime is not running.
 */
int jitt_anomaly(const char *reason);

#ifdef __cplusplus
}
#endif

#endif
