/* SPDX-License-Identifier: MIT */
/*
 * agent/runtime/runtime.h - what libjitt's pieces share inside the process: the
 * settings, the frame state the UI thread publishes for the detectors, the anomaly
 * request handed to the control thread, and the status counters `jitt status PID` shows.
 *
 * Who writes what (every shared word is a C11 atomic):
 *   frame_begin_ns, frame_seq   the thread in jitt_frame_begin/end (one frame thread)
 *   request                     any thread (jitt_anomaly, the jank detector) or the
 *                               control thread itself (hang, external trigger)
 *   ctl_idle                    the control thread, when it sleeps with no deadline
 */
#ifndef JITT_AGENT_RUNTIME_H
#define JITT_AGENT_RUNTIME_H

#include "agent/config.h"
#include "agent/marks.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define RT __attribute__((no_instrument_function))
#define AGENT_REASON_MAX 64

/* The status counters, in the order `jitt status` prints them. */
#define AGENT_STATUS_COUNTERS(X)                                                            \
	X(anomaly_hang, "hang detector fired")                                             \
	X(anomaly_jank, "jank detector fired")                                             \
	X(anomaly_explicit, "jitt_anomaly() calls")                                        \
	X(anomaly_external, "jitt trigger requests")                                       \
	X(suppressed_cooldown, "anomalies within the cool-down, not persisted")            \
	X(suppressed_pending, "anomalies while another was being persisted")               \
	X(preempted_cooldown, "clearly worse anomalies let through a cool-down")           \
	X(persisted, "trace files written")                                                \
	X(persist_failed, "persists that failed (see the log): the three below")           \
	X(persist_no_spool, "persists not even tried: the spool folder is missing")        \
	X(persist_no_thread, "persists with no thread traced (every ring off)")            \
	X(persist_write_failed, "trace files that could not be written (full disk...)")    \
	X(threads_frozen, "rings frozen by a clean stop")                                  \
	X(threads_copied, "rings copied because their thread was blocked")                 \
	X(threads_missed, "rings left out of a trace (changed too fast to copy)")          \
	X(restart_retries, "rings restarted late (their thread answered late)")            \
	X(dropped_full, "traces not written: the spool's caps were full (agent/spool.h)")  \
	X(bytes_written, "bytes of trace files written")                                   \
	X(last_freeze_us, "anomaly-to-freeze time of the last persist (us)")               \
	X(last_persist_us, "anomaly-to-file time of the last persist (us, with fsync)")    \
	X(control_wakeups, "times the control thread woke up")                             \
	X(refused, "control requests refused (not allowed)")

struct agent_status {
#define AGENT_STATUS_FIELD(name, help) _Atomic uint64_t name;
	AGENT_STATUS_COUNTERS(AGENT_STATUS_FIELD)
#undef AGENT_STATUS_FIELD
};

struct agent_runtime {
	struct agent_config cfg;
	_Atomic int state; /* 0 off, 1 starting, 2 running, 3 stopping */
	pthread_t control;
	int wake_fd;   /* eventfd: a request or a frame begin wakes the control thread */
	int listen_fd; /* this process's control socket, -1 when it could not be made */
	char socket_path[AGENT_PATH_MAX];

	/* The frame thread's state, for the hang and jank detectors. */
	_Atomic uint64_t frame_begin_ns; /* CLOCK_MONOTONIC of the open frame's begin; 0 none */
	_Atomic int32_t frame_tid;	 /* the thread that began it: the hang's or jank's */
	_Atomic uint64_t frame_seq;	 /* frames begun */
	unsigned slow_in_a_row;	 /* consecutive frames over budget (frame thread only) */
	uint64_t budget_ns, hang_ns, cooldown_ns;
	/* The jank detector's view of this board (frame thread only, api.c): frames ended so
	 * far up to the warm-up's count, the shortest frame of the current run of slow ones,
	 * and the normal frame time, a running median (0 until the first frame ends). */
	uint32_t frames_seen;
	uint64_t slow_min_ns, normal_ns;
	uint64_t normal_q8, preempt_q8; /* jank_normal_pct, cooldown_preempt_pct in 1/256 */
	_Atomic int ctl_idle; /* the control thread sleeps with no deadline: wake it */

	/* One anomaly request at a time: 0 free, 1 being written, 2 ready for the control
	 * thread, 3 being persisted (until the rings restart). The detector is an enum
	 * agent_detector. */
	_Atomic int request;
	uint32_t request_detector;
	uint64_t request_ns; /* when the request was published (CLOCK_MONOTONIC) */
	uint64_t request_frame_ns; /* the anomaly's frame time (jank, hang); 0: no frame */
	bool request_preempts;	   /* it pre-empts the cool-down: the cool-down runs on */
	char request_reason[AGENT_REASON_MAX];
	_Atomic uint64_t last_persist_ns; /* CLOCK_MONOTONIC of the last persist's start */
	/* The cool-down's pre-emption (agent_request_persist): the frame time of the anomaly
	 * that started the cool-down (0: not a frame's, which nothing pre-empts), and whether
	 * a worse one went through already in this cool-down. */
	_Atomic uint64_t cooldown_frame_ns;
	_Atomic int cooldown_preempted;
	char last_trace[AGENT_PATH_MAX];  /* control thread only */

	struct agent_status status;
};

extern struct agent_runtime agent_rt;

/*
 * Scheduling records (sched.c). thread_start: the calling thread, starting to be traced,
 * gets a perf context-switch ring, or samples schedstat at frame boundaries (0, or why
 * not perf; a thread traced again, after a restart, chooses again). sample: a frame boundary (only a thread without a perf ring writes). freeze:
 * under rb_lock, after the rings froze: each frozen thread's switches into f[i].sched
 * (in *mem, freed with free()), the source and CPU classes into *info; rings of threads
 * not in live[] (no longer traced) are closed.
 */
struct rb_frozen;
struct rb_trace_sched;
int agent_sched_thread_start(void);
void agent_sched_sample(void);
/* At shutdown: every perf ring closed, no thread counted as sampling. */
void agent_sched_stop_all(void);
void agent_sched_freeze(struct rb_frozen *f, int n, const pid_t *live, int nlive,
		       struct rb_trace_sched *info, void **mem);

/*
 * The blocking-call wrappers bound through the program's GOT (glibc, dynamically linked:
 * wrap.c, bind.c). agent_wrappers_bind, as a thread is first traced: once, from whichever
 * thread comes first (absent from musl's runtime, whose program is linked with --wrap).
 * agent_got_bind: for each function the main program's relocations name, its real address
 * (dlsym) into *real, then the wrapper's into the program's slots; returns how many were
 * bound.
 */
struct agent_bound {
	const char *name;
	void *wrapper;
	void **real;
};
void agent_wrappers_bind(void) __attribute__((weak));
size_t agent_got_bind(const struct agent_bound *b, size_t n);

/*
 * Sleds (sleds.c, ringbuf/sleds.h): start patches the program's sleds as the settings say,
 * before any thread is traced (nothing in a program built without them); thread_start
 * gives a thread that starts to be traced its shadow stack (0, or -ENOMEM: not traced).
 */
struct agent_config;
struct rb_ring_view;
void agent_sleds_start(const struct agent_config *cfg);
int agent_sleds_thread_start(void);
/* On the control thread, after measure_point_cost timed the hooks: where the program's
 * records are written by sampled thunks, the trace files' trace point cost is theirs
 * (timed on the runtime's own sled), and it follows the learning windows, whose records
 * are every one timed (a trace's self times are taken out of that cost: summary.c). */
void agent_sleds_point_cost(void);
/*
 * Learning what to leave out (sleds.c, sleds_learn_ns), on the control thread: timeout is
 * the ms until the next step (-1: none pending); step, given the traced rings' records in
 * all, says what to do now (and sets the next): BEGIN, a window opens (note each ring's
 * records: agent_sleds_window_copy says when the window is full), READ, look at
 * the rings (learn from those with a full window); learn takes the copied windows of the
 * traced threads, and takes the functions too short to matter out of the trace until the
 * next window. Between windows, LOOK: the newest records of each traced thread (at most
 * AGENT_LEARN_LOOK_SLOTS, rb_peek_newest) go to look, which may ask for a window at the
 * next step (new functions).
 */
enum agent_learn_step { AGENT_LEARN_NONE, AGENT_LEARN_BEGIN, AGENT_LEARN_READ, AGENT_LEARN_LOOK };
#define AGENT_LEARN_LOOK_SLOTS 1024
/* A window is this part of a ring's records: 32,768 calls of a 1 MiB ring tell the hot
 * functions' lengths, and the window's full tracing and its decoding cost a quarter of a
 * whole ring's (a server's short run paid 30% for whole rings). */
#define AGENT_LEARN_WINDOW_PART 4
int agent_sleds_learn_timeout(uint64_t now_ns);
enum agent_learn_step agent_sleds_learn_step(uint64_t now_ns, uint64_t records,
					     const pid_t *tids, int ntids);
void agent_sleds_learn(const struct rb_ring_view *views, int n);
void agent_sleds_look(const struct rb_ring_view *views, int n);
/* The newest records of a ring of slots slots to learn from, since records were written
 * since the open window opened: 0 while they are too few (until a thread ended it). */
uint64_t agent_sleds_window_copy(uint64_t slots, uint64_t since);
/* Whether thread tid ended the open window (ringbuf/sleds.h): then *v is the copy it made
 * of its window, to learn from in place of its ring. */
bool agent_sleds_window_kept(pid_t tid, struct rb_ring_view *v);
/* Whether the settings and the program let the sleds learn (agent_sleds_start then starts
 * learning, unless the patch fails), and whether learning has applied its first decision
 * or is not on: the control thread of a program that may learn runs at the app's priority
 * until then (control.c). */
bool agent_sleds_may_learn(const struct agent_config *cfg);
bool agent_sleds_first_decided(void);
/* At shutdown, the control thread stopped: learning ends (its samples too), the sleds stay
 * as it left them. */
void agent_sleds_learn_stop(void);
/* At the process's exit (debug level): the windows, and the records the traced threads
 * wrote in all and in them. */
void agent_sleds_learn_report(void);
/* Whether learning decided something its memory does not hold yet (any thread may ask);
 * and, on the control thread as it ends, the memory saved (a short run's last phases,
 * which the next run then need not open windows for). */
bool agent_sleds_memory_unsaved(void);
void agent_sleds_exit_save(void);
/*
 * Learning's profile (learn_samples.c): perf's samples of the traced threads, by sled.
 * start maps each sled's function (its symbol's size in elf, or up to the next sled);
 * follow samples the threads tids every period_ns of their CPU time (0, or the error that
 * turned sampling off: perf refused); read adds each sled's new samples to hits, and
 * weight each to recent (a second count, which the caller forgets faster), and returns
 * their number (a sample in no function of the program, in the C library or the
 * trace points' code, is not counted: a profile of the program's own code).
 */
struct rb_elf;
int agent_samples_start(const uintptr_t *sleds, size_t nsleds, uintptr_t bias,
			const struct rb_elf *elf);
int agent_samples_follow(const pid_t *tids, int n, uint64_t period_ns);
uint64_t agent_samples_read(uint64_t *hits, uint64_t *recent, uint64_t weight);
/* The CPU time the sampled threads have run since each was followed, kernel time
 * included: what the sampling's ticks come from, though most of a server thread's land in
 * the kernel and give no sample (hal_sample_cpu_ns). */
uint64_t agent_samples_cpu_ns(void);
void agent_samples_stop(void);
/* Whether sled idx's time is out of the samples' sight: a wrapper of a C library function
 * (ringbuf/sleds_libc.c) whose code is not the program's (a shared library's, or a program
 * without symbols) and whose samples therefore fall nowhere. */
bool agent_samples_blind(size_t idx);
/* The sled whose function holds ip, as a sample there is counted (after start), or -1. */
long agent_samples_sled_of(uintptr_t ip);

/* CLOCK_MONOTONIC in ns. */
uint64_t agent_now_ns(void);

/*
 * Hand an anomaly to the control thread; mark_self: first put the anomaly mark into the
 * calling thread's ring (a thread can only write its own); frame_ns: how long the anomaly's
 * frame took (the jank's shortest slow frame, the hang's frame so far), 0 for an anomaly
 * that is no frame's. Returns 0, -EAGAIN within the cool-down or while another request
 * waits (both counted, and then no mark is written), -ENODEV when the runtime is not
 * running. Within the cool-down a frame cooldown_preempt_pct times as long as the one that
 * started it goes through, once per cool-down, without starting a new one.
 */
int agent_request_persist(uint32_t detector, const char *reason, bool mark_self, uint64_t frame_ns);
/* At the process's exit: jitt_shutdown when a trace is being asked for or written, else
 * only the state and the socket's name (the control thread is not waited for). */
void agent_exit(void);

/* Wake the control thread (one eventfd write, through the system call directly: an
 * application's write() wrapper must not see it). */
void agent_wake_control(void);

/*
 * The control thread (control.c). api.c starts and stops it; it calls back into api.c
 * (agent_request_persist, agent_now_ns) for the hang and external detectors. The cycle is
 * kept: both halves share one state (agent_rt, above) and one way to ask for a persist,
 * whoever asks, and splitting that out would make a third file with nothing of its own.
 */
int agent_control_start(void);
void agent_control_stop(void);
/* At the process's exit, the state already 3: the control thread woken, and waited for
 * up to ms until it has ended its step and saved what learning still had to (not joined:
 * exit_group ends it). */
void agent_control_wait_exit(unsigned ms);
/* The control thread's CPU time, while it runs or as it ended: 0, else -1. */
int agent_control_cpu(struct timespec *cpu);

#endif
