/* SPDX-License-Identifier: MIT */
/*
 * The public API of agent/jitt.h: init and shutdown, threads, frame marks and the two
 * detectors that run on the frame thread itself (jank; the hang detector runs on the
 * control thread, because a hung frame never reaches its end), and explicit anomalies.
 */
#include "agent/jitt.h"
#include "agent/log.h"
#include "agent/runtime/runtime.h"
#include "hal/timer.h"
#include "ringbuf/ring.h"
#include "ringbuf/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define JITT_VERSION "0.6.0"

struct agent_runtime agent_rt = { .wake_fd = -1, .listen_fd = -1 };

RT const char *jitt_version(void)
{
	return JITT_VERSION;
}

RT uint64_t agent_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

RT void agent_wake_control(void)
{
	uint64_t one = 1;
	if (agent_rt.wake_fd >= 0)
		(void)syscall(SYS_write, agent_rt.wake_fd, &one, sizeof(one));
}

/* JITT_DISABLE set, and not to "0": this run stays untraced whatever the settings say (an
 * OEM's switch for one app or one run, no rebuild). getenv even in a set-uid program, unlike
 * JITT_CONFIG: switching off only takes tracing away, it gives the caller nothing. */
RT static bool disabled_by_environment(void)
{
	const char *v = getenv("JITT_DISABLE");
	return v && *v && strcmp(v, "0") != 0;
}

RT int jitt_init(const char *config_file)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&agent_rt.state, &expected, 1))
		return -EALREADY;
	struct agent_runtime *rt = &agent_rt;
	if (disabled_by_environment()) {
		atomic_store(&rt->state, 0);
		return -ECANCELED;
	}
	/* A fresh start (after a jitt_shutdown too): counters, requests, frames. */
	memset(&rt->status, 0, sizeof(rt->status));
	atomic_store(&rt->request, 0);
	atomic_store(&rt->last_persist_ns, 0);
	atomic_store(&rt->frame_begin_ns, 0);
	rt->slow_in_a_row = 0;
	rt->frames_seen = 0;
	rt->slow_min_ns = rt->normal_ns = 0;
	atomic_store(&rt->cooldown_frame_ns, 0);
	atomic_store(&rt->cooldown_preempted, 0);
	rt->last_trace[0] = 0;
	char err[300];
	int e = agent_config_load(&rt->cfg, config_file, err, sizeof(err));
	agent_log_open("jitt", 0, rt->cfg.log_level);
	if (e) {
		log_err("jitt: %s", err);
		atomic_store(&rt->state, 0);
		return e;
	}
	if (!rt->cfg.enabled) {
		log_dbg("jitt: switched off (enabled = 0)");
		atomic_store(&rt->state, 0);
		return -ECANCELED;
	}
	rt->budget_ns = (uint64_t)rt->cfg.frame_budget_us * 1000u;
	rt->hang_ns = (uint64_t)rt->cfg.hang_ms * 1000000u;
	rt->cooldown_ns = (uint64_t)rt->cfg.cooldown_ms * 1000000u;
	/* Percentages as 1/256ths: the frame thread multiplies and shifts, never divides
	 * (armv7 has no 64-bit division: a library call). */
	rt->normal_q8 = (uint64_t)rt->cfg.jank_normal_pct * 256u / 100u;
	rt->preempt_q8 = (uint64_t)rt->cfg.cooldown_preempt_pct * 256u / 100u;
	if (rt->cfg.max_threads)
		rb_set_max_threads((int)rt->cfg.max_threads);
	rb_set_ring_bytes((uint64_t)rt->cfg.ring_kb * 1024u); /* the parser checked it */
	e = hal_timer_init();
	if (!e)
		e = agent_control_start();
	if (e) {
		log_err("jitt: cannot start the control thread: %s", strerror(-e));
		atomic_store(&rt->state, 0);
		return e;
	}
	/* Before any thread is traced, and in the constructor before main(): a thunk may run
	 * as soon as its sled is patched. */
	agent_sleds_start(&rt->cfg);
	atomic_store(&rt->state, 2);
	/* With AUTO_INIT this is the constructor, before main(): the app needs no code. */
	bool main_traced = false;
	if (rt->cfg.trace_main && syscall(SYS_gettid) == getpid()) {
		e = jitt_trace_thread(true);
		if (e)
			log_warn("jitt: the main thread is not traced: %s", strerror(-e));
		main_traced = !e;
	}
	/* One line in the app's log says it is traced, and how: what `jitt status PID` says
	 * too (one write, a few microseconds of the start-up). */
	log_info("jitt: pid %d traced: settings %s%s; rings of %u KiB, up to %u threads; %s",
		 (int)getpid(), rt->cfg.file, rt->cfg.file_found ? "" : " (not found: defaults)",
		 rt->cfg.ring_kb, rt->cfg.max_threads,
		 main_traced ? "the main thread traced"
			     : "no thread traced yet (jitt_trace_thread, or trace_main = 1)");
	return 0;
}

#define SHUTDOWN_WAIT_MS  10000
#define EXIT_SAVE_WAIT_MS 200

RT void jitt_shutdown(void)
{
	/* The control thread stops at the shutdown without taking a request: one asked for
	 * already (jitt_anomaly just before) is written first. Bounded: a persist takes
	 * milliseconds, seconds on a starved machine; past the bound it is given up. */
	for (int i = 0; i < SHUTDOWN_WAIT_MS && atomic_load(&agent_rt.request) != 0 &&
			atomic_load(&agent_rt.state) == 2;
	     i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	int expected = 2;
	if (!atomic_compare_exchange_strong(&agent_rt.state, &expected, 3))
		return;
	agent_control_stop();
	agent_sched_stop_all();
	agent_sleds_learn_stop();
	atomic_store(&agent_rt.state, 0);
}

/*
 * The process is exiting (autoinit's destructor: main returned, or exit()). A trace being
 * asked for or written is finished first: the whole shutdown, which waits for the control
 * thread. Otherwise the control thread is not waited for: it runs at the lowest priority,
 * and on a busy machine joining it kept a traced hello world from exiting for up to 12 ms
 * (2 of 5 runs beside two compilers); exit_group ends it, the kernel closes its files, and
 * only the socket's name is left to remove. No request is taken once the state is 3.
 */
RT void agent_exit(void)
{
	struct agent_runtime *rt = &agent_rt;
	if (atomic_load(&rt->request) != 0) {
		jitt_shutdown(); /* which writes it first */
		return;
	}
	int expected = 2;
	if (!atomic_compare_exchange_strong(&rt->state, &expected, 3))
		return;
	/* What learning decided since its memory was last saved: the control thread saves it
	 * as it ends, waited for so long at most (a run's last phases, which the next run
	 * need not open windows for; saved without it only every LEARN_SAVE_GAP_MS) */
	if (agent_sleds_memory_unsaved())
		agent_control_wait_exit(EXIT_SAVE_WAIT_MS);
	if (rt->listen_fd >= 0)
		unlink(rt->socket_path);
	/* What the control thread cost the app, in its CPU time (an OEM's check), and what
	 * learning did: at debug level */
	struct timespec cpu;
	if (agent_log_enabled(AGENT_LOG_DEBUG) && !agent_control_cpu(&cpu))
		log_dbg("jitt: control thread: %lld.%03ld s of CPU time", (long long)cpu.tv_sec,
			cpu.tv_nsec / 1000000);
	agent_sleds_learn_report();
}

/* A name given before the thread has a ring: used when it gets one, so that naming a
 * thread never maps a ring (a runtime that is not running must map none). */
static __thread char pending_name[RB_NAME_MAX];

RT int jitt_trace_thread(bool on)
{
	if (!on)
		return rb_trace_self(false);
	/* Only a running runtime can ever persist a ring: without it (not started, its
	 * settings refused, switched off) a ring would cost 4 MiB and the full tracing cost
	 * for nothing. Turning off is always allowed. */
	if (atomic_load(&agent_rt.state) != 2)
		return -ENODEV;
	/* The timer must be probed before the first trace point reads it. */
	int err = hal_timer_init();
	if (err)
		return err;
	err = agent_sleds_thread_start();
	if (err)
		return err;
	if (!rb_tls.ring) {
		err = rb_thread_register(pending_name);
		if (err)
			return err;
		pending_name[0] = 0;
		agent_wake_control(); /* it prefaults the ring (control.c) */
		/* Its scheduling: a perf ring, else schedstat samples (sched.c). Tracing goes
		 * on either way. */
		(void)agent_sched_thread_start();
	}
	if (agent_wrappers_bind) /* before its first record: its waits are recorded */
		agent_wrappers_bind();
	return rb_trace_self(true);
}

RT int jitt_thread_name(const char *name)
{
	if (!name)
		return -EINVAL;
	int err = rb_thread_set_name(name);
	if (err == -ENOENT) {
		snprintf(pending_name, sizeof(pending_name), "%s", name);
		err = 0;
	}
	return err;
}

/* ---- frames: Hubble 4.2.1's two UI detectors ---- */

/* The calling thread's id, asked of the kernel once per thread. */
RT static pid_t self_tid(void)
{
	static __thread pid_t tid;
	if (!tid)
		tid = (pid_t)syscall(SYS_gettid);
	return tid;
}

RT void jitt_frame_begin(void)
{
	struct agent_runtime *rt = &agent_rt;
	/* The thread whose frame a hang or a jank is about: the trace file says so
	 * (control.c), since its frame's begin may be older than its ring holds. */
	atomic_store_explicit(&rt->frame_tid, self_tid(), memory_order_relaxed);
	rb_special(RB_MARK, AGENT_MARK_FRAME_BEGIN);
	agent_sched_sample(); /* only without a perf ring: schedstat's totals, after the mark */
	/* seq_cst, paired with the control thread's in control.c: either it sees this frame
	 * before it goes to sleep with no deadline, or this thread sees it asleep and wakes
	 * it. A frame costs no system call while the control thread has a deadline. */
	atomic_store(&rt->frame_begin_ns, agent_now_ns());
	atomic_fetch_add_explicit(&rt->frame_seq, 1, memory_order_relaxed);
	if (atomic_load(&rt->ctl_idle))
		agent_wake_control();
}

/*
 * The jank detector (Hubble 4.2.1): jank_frames consecutive slow frames. A slow frame is one
 * over the budget and, on a board whose normal frame is itself near or over the budget,
 * over jank_normal_pct of that normal (on a slow board: one several times slower than the
 * build machine every warm-up frame was over 16.7 ms, the detector fired on start-up noise,
 * and the cool-down then hid the real jank). So the threshold is
 *
 *	max(frame_budget_us, jank_normal_pct% x the normal frame time)
 *
 * never lower than the budget alone: where normal frames take less than half the budget
 * (200%, the default) nothing changes. The normal frame time is a running median followed
 * by steps of 1/16 of itself, up when a frame took longer, down when shorter: it converges
 * on the median (in the log domain) within about a dozen frames from a guess twice off, and
 * a run of slow frames moves it by only 6% each. No slow frame teaches it once the warm-up
 * is over, so sustained jank stays jank. During the first jank_warmup_frames every frame
 * teaches it and none counts as slow: the baseline is not known yet, and start-up frames
 * (first-time page faults, lazy initialisation, a JIT translating code) are not the app's
 * jank. The cost: a multiply, a shift and a few compares per frame, no system call, no
 * lock, nothing shared (docs/runtime.md has the measurement).
 */
RT void jitt_frame_end(void)
{
	struct agent_runtime *rt = &agent_rt;
	uint64_t begin = atomic_load_explicit(&rt->frame_begin_ns, memory_order_relaxed);
	agent_sched_sample(); /* before the mark: the frame's samples lie inside it */
	rb_special(RB_MARK, AGENT_MARK_FRAME_END);
	if (!begin)
		return; /* no frame open */
	uint64_t took = agent_now_ns() - begin;
	atomic_store_explicit(&rt->frame_begin_ns, 0, memory_order_relaxed);
	uint64_t over = rt->budget_ns, normal = rt->normal_ns;
	if (rt->normal_q8 && (normal * rt->normal_q8) >> 8 > over)
		over = (normal * rt->normal_q8) >> 8;
	bool warm = rt->frames_seen >= rt->cfg.jank_warmup_frames;
	bool slow = warm && rt->budget_ns && took > over;
	if (!warm)
		rt->frames_seen++;
	if (!slow && rt->normal_q8) {
		if (!normal)
			rt->normal_ns = took ? took : 1;
		else if (took > normal)
			rt->normal_ns = normal + (normal >> 4) + 1;
		else if (took < normal)
			rt->normal_ns = normal - (normal >> 4);
	}
	if (!slow) {
		rt->slow_in_a_row = 0;
		return;
	}
	if (!rt->slow_in_a_row || took < rt->slow_min_ns)
		rt->slow_min_ns = took;
	if (++rt->slow_in_a_row < rt->cfg.jank_frames)
		return;
	rt->slow_in_a_row = 0;
	/* The mark goes into this thread's ring before the next frame begins, so the
	 * summary's slow frame is the last of them. The reason gives the threshold in
	 * effect, and the normal frame time when that set it (64 bytes: it may lose its
	 * tail). */
	char reason[AGENT_REASON_MAX];
	int w = snprintf(reason, sizeof(reason), "jank: %u frames over %llu us, the last %llu us",
			 rt->cfg.jank_frames, (unsigned long long)(over / 1000),
			 (unsigned long long)(took / 1000));
	if (over > rt->budget_ns && w > 0 && (size_t)w < sizeof(reason))
		snprintf(reason + w, sizeof(reason) - (size_t)w, ", normal %llu",
			 (unsigned long long)(normal / 1000));
	(void)agent_request_persist(AGENT_DETECT_JANK, reason, true, rt->slow_min_ns);
}

RT void jitt_frame(void)
{
	if (atomic_load_explicit(&agent_rt.frame_begin_ns, memory_order_relaxed))
		jitt_frame_end();
	jitt_frame_begin();
}

RT int jitt_anomaly(const char *reason)
{
	if (atomic_load(&agent_rt.state) != 2)
		return -ENODEV;
	char r[AGENT_REASON_MAX];
	snprintf(r, sizeof(r), "explicit: %s", reason ? reason : "");
	return agent_request_persist(AGENT_DETECT_EXPLICIT, r, true, 0);
}

/* Within the cool-down: whether an anomaly of this frame time may still go through. Once
 * per cool-down, only a frame's anomaly, only after one that was a frame's too, and only
 * when clearly worse: a flood of anomalies still cannot become a flood of writes (at most
 * two traces per cool-down), but a false alarm (start-up noise on a slow board, say) does
 * not hide the real jank that follows it for cooldown_ms. */
RT static bool may_preempt(const struct agent_runtime *rt, uint64_t frame_ns)
{
	uint64_t first = atomic_load(&rt->cooldown_frame_ns);
	return rt->preempt_q8 && frame_ns && first && !atomic_load(&rt->cooldown_preempted) &&
	       frame_ns >= (first * rt->preempt_q8) >> 8;
}

RT int agent_request_persist(uint32_t detector, const char *reason, bool mark_self,
			     uint64_t frame_ns)
{
	struct agent_runtime *rt = &agent_rt;
	if (atomic_load(&rt->state) != 2)
		return -ENODEV;
	static _Atomic uint64_t *const fired[] = {
		[AGENT_DETECT_HANG] = &agent_rt.status.anomaly_hang,
		[AGENT_DETECT_JANK] = &agent_rt.status.anomaly_jank,
		[AGENT_DETECT_EXPLICIT] = &agent_rt.status.anomaly_explicit,
		[AGENT_DETECT_EXTERNAL] = &agent_rt.status.anomaly_external,
	};
	if (detector >= 1 && detector <= AGENT_DETECT_EXTERNAL)
		atomic_fetch_add(fired[detector], 1);
	uint64_t last = atomic_load(&rt->last_persist_ns);
	bool preempts = false;
	if (last && agent_now_ns() - last < rt->cooldown_ns) {
		if (!may_preempt(rt, frame_ns)) {
			atomic_fetch_add(&rt->status.suppressed_cooldown, 1);
			return -EAGAIN;
		}
		preempts = true;
	}
	int expected = 0;
	if (!atomic_compare_exchange_strong(&rt->request, &expected, 1)) {
		atomic_fetch_add(&rt->status.suppressed_pending, 1);
		return -EAGAIN;
	}
	/* The slot is ours; the pre-emption too, unless another thread's took it meanwhile. */
	if (preempts && atomic_exchange(&rt->cooldown_preempted, 1)) {
		atomic_store(&rt->request, 0);
		atomic_fetch_add(&rt->status.suppressed_cooldown, 1);
		return -EAGAIN;
	}
	/* The mark goes in before the request is published: the freeze cannot miss it. */
	if (mark_self)
		rb_special(RB_MARK, AGENT_MARK_ANOMALY | detector);
	rt->request_detector = detector;
	rt->request_ns = agent_now_ns();
	rt->request_frame_ns = frame_ns;
	rt->request_preempts = preempts;
	if (preempts)
		atomic_fetch_add(&rt->status.preempted_cooldown, 1);
	snprintf(rt->request_reason, sizeof(rt->request_reason), "%s", reason);
	atomic_store_explicit(&rt->request, 2, memory_order_release);
	agent_wake_control();
	return 0;
}
