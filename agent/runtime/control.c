/* SPDX-License-Identifier: MIT */
/*
 * The control thread: one per traced process, pinned to the LITTLE class at the lowest
 * priority (Hubble 4.3), so it never competes with the app it watches. Lowest is nice 19
 * rather than SCHED_IDLE: with every core busy, SCHED_IDLE (weight 3 against nice 19's 15)
 * starved the persist for seconds (bench-freeze, 2 busy threads on 2 cores: median 3.0 s
 * against 1.2 s), and an unprivileged thread can never raise itself back. It runs the hang
 * detector, serves the process's control socket, and does the stop/persist/restart cycle
 * of Hubble 6 (Fig. 4) when a detector fires.
 *
 * How it wakes (no busy polling): it sleeps in poll() on an eventfd and the control
 * socket, with a timeout only when something is due:
 *   - a frame is open: its begin + hang_ms (the hang detector, Argus 2.2: the hang is
 *     caught while the frame still runs, so the ring holds the hung moment itself);
 *   - a ring's restart is pending (its thread was blocked during the freeze): 20 ms;
 *   - the timer's calibration can be finished (hal/timer.h): once, 20 ms after the probe.
 *     It used to be a 20 ms sleep in the app's constructor, before main(); here it costs
 *     the app nothing, and a shutdown meanwhile wakes the thread at once.
 *   - a thread registered a ring: the control thread faults its pages in (ringbuf/ring.h),
 *     which took 1 to 3.7 ms of the app's own thread, before main() for the main thread.
 * With no frame open it sleeps with no deadline, and the next jitt_frame_begin() wakes
 * it (one eventfd write). So a 60 Hz UI loop costs one wake-up per hang_ms (2.5 a second
 * at 400 ms, each a few microseconds), and an idle process none at all; frames cost no
 * system call. An anomaly request or a control request wakes it at once.
 *
 * The control socket is served in this same thread, by agent/ctl.c's server, which never
 * waits: every client has its own deadline, and the poll timeout is the earliest of the
 * hang deadline and the clients' (a hostile client: 16 silent connections from another
 * user used to hold this loop for 200 ms each, and the hang was reported late or not at
 * all). One thread rather than a second one for the socket: the server cannot block, so a
 * second thread would buy nothing and cost a stack and a lock around what status and
 * trigger read and write here (the restart list, the last trace). The hang detector never
 * waits behind a client: each wake-up looks at the hang first, with one clock reading that
 * the server then judges its clients' deadlines by, so a client can never be given up on
 * before a hang due earlier is caught; and before a second "trigger" in one wake-up the hang
 * is looked at again, so the hang waits at most one persist.
 */
#include "agent/ctl.h"
#include "agent/jitt.h"
#include "agent/log.h"
#include "agent/runtime/runtime.h"
#include "agent/spool.h"
#include "hal/cpu.h"
#include "hal/timer.h"
#include "ringbuf/ring.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How long a freeze waits for the threads to answer before it copies a blocked one's ring
 * (ringbuf/ring.h): a running thread answers within microseconds. */
#define STOP_WAIT_MS 10
#define RESTART_RETRY_MS 20
#define MAX_RINGS 64

/* Rings frozen by a copy whose thread has not answered yet: restarted when it does. */
static pid_t restart_tids[MAX_RINGS];
static int nrestart;
static uint64_t hang_fired_seq; /* the frame the hang detector fired for */
/* The control socket's server, in .bss: a small table, and about 70 KiB of buffers that
 * only the clients that come touch. */
static struct agent_ctl_server ctl;
static bool persisted_this_step; /* a "trigger" persisted in this wake-up already */
static bool spool_warned;	 /* the missing spool was said (control thread only) */

/* ---- stop, persist, restart ---- */

RT static void restart(struct rb_ring **rings, int n)
{
	int kept = 0;
	for (int k = 0; k < nrestart; k++) {
		/* Gone (its thread exited), or turned off by its thread since: not ours to start. */
		int e = -ENOENT;
		for (int i = 0; i < n; i++)
			if (rb_ring_tid(rings[i]) == restart_tids[k] && rb_ring_on(rings[i]))
				e = rb_start(rings[i]);
		if (e == -EBUSY)
			restart_tids[kept++] = restart_tids[k];
		else if (e == 0)
			atomic_fetch_add(&agent_rt.status.restart_retries, 1);
	}
	nrestart = kept;
}

/* Restart a ring whose stop was asked; one whose thread has not answered yet is listed
 * (once) for a retry. Under rb_lock. */
RT static void restart_or_list(struct rb_ring *r)
{
	if (rb_start(r) != -EBUSY)
		return;
	pid_t tid = rb_ring_tid(r);
	for (int k = 0; k < nrestart; k++)
		if (restart_tids[k] == tid)
			return;
	if (nrestart < MAX_RINGS)
		restart_tids[nrestart++] = tid;
}

RT static void retry_restarts(void)
{
	struct rb_ring *rings[MAX_RINGS];
	rb_lock();
	restart(rings, rb_rings(rings, MAX_RINGS));
	rb_unlock();
}

RT static bool is_dir(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Is there a spool to persist into? It belongs to the image (made by the install and its
 * init, with their owner and mode), never made here: a missing one is said once, and said
 * again only if it comes back and goes away again. One stat(), in this thread, only when
 * starting and when a detector fired. Its path goes to spool. */
RT static bool spool_ready(const struct agent_config *cfg, char *spool, size_t size)
{
	if (agent_config_path(cfg, "spool", spool, size) == 0 && is_dir(spool)) {
		spool_warned = false;
		return true;
	}
	if (!spool_warned)
		log_warn("jitt: the spool %s/spool is missing (the image's init makes it): "
			 "no trace is persisted until it exists",
			 cfg->data_dir);
	spool_warned = true;
	return false;
}

/* Freeze every traced thread of the process together, write one trace file, restart. */
RT static int persist(const char *reason, pid_t anomaly_tid, uint64_t t0, char *path,
		       size_t path_size)
{
	struct agent_runtime *rt = &agent_rt;
	struct agent_status *st = &rt->status;
	/* The trace file carries the timer's rate: within the first CONFIG_HAL_TIMER_
	 * CALIBRATION_MS of the process the calibration is finished first, before the freeze
	 * and outside rb_lock (the rings hold the anomaly meanwhile). */
	(void)hal_timer_calibrate();
	/* Nowhere to write: no freeze either (the rings run on untouched). */
	char spool[AGENT_PATH_MAX];
	if (!spool_ready(&rt->cfg, spool, sizeof(spool))) {
		atomic_fetch_add(&st->persist_failed, 1);
		atomic_fetch_add(&st->persist_no_spool, 1);
		return -ENOENT;
	}
	struct rb_ring *rings[MAX_RINGS];
	struct rb_frozen frozen[MAX_RINGS], ok[MAX_RINGS];
	int errs[MAX_RINGS], nok = 0, e = 0;

	rb_lock();
	int n = rb_rings(rings, MAX_RINGS);
	/* A thread copied by the last persist may have answered since: restart it first, or
	 * this persist would leave it out. */
	if (nrestart)
		restart(rings, n);
	rb_stop_many(rings, n, STOP_WAIT_MS, frozen, errs);
	atomic_store(&st->last_freeze_us, (agent_now_ns() - t0) / 1000);
	for (int i = 0; i < n; i++) {
		if (errs[i] == -EINVAL)
			continue; /* off: its thread turned tracing off */
		if (errs[i]) { /* too fast to copy (or no memory): this trace goes without it */
			atomic_fetch_add(&st->threads_missed, 1);
			continue;
		}
		atomic_fetch_add(frozen[i].copied ? &st->threads_copied : &st->threads_frozen, 1);
		frozen[i].anomaly = anomaly_tid && frozen[i].tid == anomaly_tid;
		ok[nok++] = frozen[i];
	}
	/* A thread the app did not name goes by the kernel's name for it (the program's, or
	 * what pthread_setname_np set): read now, so a later rename counts. */
	for (int i = 0; i < nok; i++)
		if (!ok[i].name[0])
			(void)hal_thread_name(ok[i].tid, ok[i].name, sizeof(ok[i].name));
	/* Their context switches, copied now: the perf rings run on (what comes after the
	 * freeze falls after the rings' end, and the summary cuts it there). */
	pid_t live[MAX_RINGS];
	for (int i = 0; i < n; i++)
		live[i] = rb_ring_tid(rings[i]);
	struct rb_trace_sched sched;
	void *sched_mem;
	agent_sched_freeze(ok, nok, live, n, &sched, &sched_mem);
	if (!nok)
		e = -ENODATA;
	/* Into a slot of the spool's (agent/spool.h): the caps hold without listing it. */
	if (!e)
		e = agent_spool_write(&rt->cfg, spool, reason, ok, nok, &sched, path, path_size);
	free(sched_mem);
	/* Every ring whose stop was asked, copied or not, runs again (or is listed to). */
	for (int i = 0; i < n; i++) {
		if (errs[i] == -EINVAL)
			continue;
		if (!errs[i])
			rb_frozen_release(&frozen[i]);
		restart_or_list(rings[i]);
	}
	rb_unlock();

	uint64_t us = (agent_now_ns() - t0) / 1000;
	if (e == -EDQUOT) { /* dropped: the spool is full; jittd frees slots as it summarises */
		atomic_fetch_add(&st->dropped_full, 1);
		log_warn("jitt: not persisted (%s): the spool is full (max_traces %u, "
			 "max_trace_mb %u)",
			 reason, rt->cfg.max_traces, rt->cfg.max_trace_mb);
		return e;
	}
	if (e) {
		atomic_fetch_add(&st->persist_failed, 1);
		atomic_fetch_add(e == -ENODATA ? &st->persist_no_thread : &st->persist_write_failed,
				 1);
		log_err("jitt: cannot persist (%s): %s", reason,
			e == -ENODATA ? "no thread is traced" : strerror(-e));
		return e;
	}
	struct stat sb;
	if (stat(path, &sb) == 0)
		atomic_fetch_add(&st->bytes_written, (uint64_t)sb.st_size);
	atomic_fetch_add(&st->persisted, 1);
	atomic_store(&st->last_persist_us, us);
	snprintf(rt->last_trace, sizeof(rt->last_trace), "%s", path);
	log_info("jitt: %s: %d thread(s) persisted to %s in %llu us", reason, nok, path,
		 (unsigned long long)us);
	return 0;
}

#define LEARN_COPY_KEPT 8192 /* slots: copies up to this size go to a buffer kept */

/* The records of the rings that trace, in all (the sleds' learning watches their rate),
 * and their threads (it samples them): *ntids of them into tids (MAX_RINGS at most). */
RT static uint64_t traced_threads(pid_t *tids, int *ntids)
{
	struct rb_ring *rings[MAX_RINGS];
	uint64_t sum = 0;
	*ntids = 0;
	rb_lock();
	int n = rb_rings(rings, MAX_RINGS);
	for (int i = 0; i < n; i++)
		if (rb_ring_on(rings[i])) {
			sum += rb_ring_records(rings[i]);
			tids[(*ntids)++] = rb_ring_tid(rings[i]);
		}
	rb_unlock();
	return sum;
}

/*
 * Sleds learning what to leave out (sleds.c): a window opens (BEGIN): each ring's records
 * now are noted; then (READ) from each traced thread whose ring holds a window's worth of
 * records since, a copy of those taken as it goes on writing (rb_peek_newest: the ring
 * keeps its records for the next trace); once a traced thread ended the window, from every
 * traced thread, and the copy that thread made of its own. Between windows (LOOK), a copy
 * of each traced ring's newest records.
 */
RT static void learn_sleds(enum agent_learn_step step)
{
	static struct {
		pid_t tid;
		uint64_t records; /* its ring's records when its window opened */
	} seen[MAX_RINGS];
	/* Kept from one step to the next: a malloc and a free of each copy cost the process
	 * an madvise or munmap each, and the TLB flushes they send to the app's CPUs. */
	static uint64_t *kept[MAX_RINGS];
	struct rb_ring *rings[MAX_RINGS];
	struct rb_frozen frozen[MAX_RINGS];
	struct rb_ring_view views[MAX_RINGS];
	int nviews = 0;
	uint64_t slots = rb_ring_bytes() / 8; /* takes rb_lock itself */
	rb_lock();
	int n = rb_rings(rings, MAX_RINGS);
	for (int i = 0; i < n; i++) {
		uint64_t records = rb_ring_records(rings[i]);
		pid_t tid = rb_ring_tid(rings[i]);
		int k = 0;
		while (k < MAX_RINGS && seen[k].tid && seen[k].tid != tid)
			k++;
		if (k == MAX_RINGS)
			continue;
		if (!seen[k].tid || records < seen[k].records) /* new, or restarted since */
			seen[k].records = 0;
		seen[k].tid = tid;
		if (step == AGENT_LEARN_BEGIN) {
			seen[k].records = records;
			continue;
		}
		if (step == AGENT_LEARN_READ && agent_sleds_window_kept(tid, &views[nviews])) {
			memset(&frozen[nviews], 0, sizeof(frozen[nviews])); /* nothing to release */
			nviews++;
			continue;
		}
		/* A look's newest slots, or the window's records: a copy of those slots only
		 * (a copy of a whole 4 MiB ring for each window, and its page faults, were a
		 * quarter of this thread's time on speedtest1) */
		uint64_t copy = step == AGENT_LEARN_LOOK
					? AGENT_LEARN_LOOK_SLOTS
					: agent_sleds_window_copy(slots, records - seen[k].records);
		if (!rb_ring_on(rings[i]) || !copy)
			continue;
		/* Looks and partial windows (8,192 records) into a buffer kept for the next */
		if (copy <= LEARN_COPY_KEPT && !kept[nviews])
			kept[nviews] = malloc(LEARN_COPY_KEPT * sizeof(uint64_t));
		uint64_t *into = copy <= LEARN_COPY_KEPT ? kept[nviews] : NULL;
		if (rb_peek_newest_into(rings[i], copy, into, &frozen[nviews]))
			continue;
		views[nviews] = rb_frozen_view(&frozen[nviews]);
		nviews++;
	}
	rb_unlock();
	if (nviews && step == AGENT_LEARN_LOOK)
		agent_sleds_look(views, nviews);
	else if (nviews)
		agent_sleds_learn(views, nviews);
	for (int i = 0; i < nviews; i++)
		rb_frozen_release(&frozen[i]);
}

/* Take the pending request, if any, and persist it. */
RT static int handle_request(char *path, size_t path_size)
{
	struct agent_runtime *rt = &agent_rt;
	if (atomic_load_explicit(&rt->request, memory_order_acquire) != 2)
		return -ENOENT;
	char reason[AGENT_REASON_MAX];
	memcpy(reason, rt->request_reason, sizeof(reason));
	uint64_t asked = rt->request_ns;
	/* The cool-down starts now, unless this anomaly pre-empted one: that one runs on, so
	 * a cool-down holds at most two traces. */
	if (!rt->request_preempts) {
		atomic_store(&rt->cooldown_frame_ns, rt->request_frame_ns);
		atomic_store(&rt->cooldown_preempted, 0);
		atomic_store(&rt->last_persist_ns, agent_now_ns());
	}
	/* The slot stays taken until the rings run again. From the freeze to the restart a
	 * mark cannot be written (a frozen ring records nothing), so a request accepted then
	 * would be persisted without its mark, and the summary would look for the anomaly in
	 * the wrong place. Refused, it is counted (suppressed_pending) instead. */
	atomic_store(&rt->request, 3);
	/* A hang or a jank is the frame thread's: named in the file, for a summary that finds
	 * no anomaly mark (a hang's thread is still in its frame and cannot mark its ring). */
	bool frames = rt->request_detector == AGENT_DETECT_HANG ||
		      rt->request_detector == AGENT_DETECT_JANK;
	pid_t tid = frames ? atomic_load(&rt->frame_tid) : 0;
	int e = persist(reason, tid, asked, path, path_size);
	atomic_store(&rt->request, 0);
	return e;
}

/* ---- the control socket ---- */

RT static void check_hang(struct agent_runtime *rt, uint64_t now);

/* The traced threads for "status": "thread TID NAME" lines, by the ring's name or the
 * kernel's; a ring whose thread turned tracing off (it keeps the ring) says "(off)". Then
 * "records TID N" for each: the slots its ring has written since tracing last (re)started
 * (0 while off or frozen), so an OEM's check or a benchmark can see that a thread really
 * records, and how fast, without freezing it. */
RT static size_t status_threads(char *reply, size_t size, size_t at)
{
	struct rb_ring *rings[MAX_RINGS];
	struct {
		pid_t tid;
		bool on;
		uint64_t records;
		char name[RB_NAME_MAX];
	} t[MAX_RINGS];
	rb_lock();
	int n = rb_rings(rings, MAX_RINGS);
	for (int i = 0; i < n; i++) {
		t[i].tid = rb_ring_tid(rings[i]);
		t[i].on = rb_ring_on(rings[i]);
		t[i].records = rb_ring_records(rings[i]);
		snprintf(t[i].name, sizeof(t[i].name), "%s", rb_ring_name(rings[i]));
	}
	rb_unlock();
	for (int i = 0; i < n && at < size; i++) {
		if (!t[i].name[0])
			(void)hal_thread_name(t[i].tid, t[i].name, sizeof(t[i].name));
		int w = snprintf(reply + at, size - at, "thread %d %s%s\n", (int)t[i].tid,
				 t[i].name, t[i].on ? "" : " (off)");
		at += w > 0 ? (size_t)w : 0;
	}
	for (int i = 0; i < n && at < size; i++) {
		int w = snprintf(reply + at, size - at, "records %d %llu\n", (int)t[i].tid,
				 (unsigned long long)t[i].records);
		at += w > 0 ? (size_t)w : 0;
	}
	return at;
}

RT static int handle_ctl(void *ctx, const struct agent_ctl_peer *peer, const char *cmd,
			 const char *arg, char *reply, size_t size)
{
	struct agent_runtime *rt = ctx;
	if (!strcmp(cmd, "status")) {
		/* Who it is and how it was set up, the threads it traces, then the counters. */
		size_t at = 0;
		int w = snprintf(reply, size,
				 "pid %d\nversion %s\nsettings %s\nsettings_found %d\n"
				 "ring_kb %llu\nmax_threads %u\n",
				 (int)getpid(), jitt_version(), rt->cfg.file, rt->cfg.file_found,
				 (unsigned long long)(rb_ring_bytes() / 1024), rt->cfg.max_threads);
		at = w > 0 ? (size_t)w : 0;
		at = status_threads(reply, size, at < size ? at : size);
#define AGENT_STATUS_LINE(name, help)                                                      \
	if (at < size) {                                                                   \
		w = snprintf(reply + at, size - at, "%s %llu\n", #name,                   \
			     (unsigned long long)atomic_load(&rt->status.name));           \
		at += w > 0 ? (size_t)w : 0;                                               \
	}
		AGENT_STATUS_COUNTERS(AGENT_STATUS_LINE)
#undef AGENT_STATUS_LINE
		if (at < size && rt->last_trace[0])
			snprintf(reply + at, size - at, "last_trace %s\n", rt->last_trace);
		return 0;
	}
	if (!strcmp(cmd, "trigger")) {
		if (!agent_ctl_may_change(peer, rt->cfg.system_uid)) {
			atomic_fetch_add(&rt->status.refused, 1);
			snprintf(reply, size, "uid %u may not trigger this process", (unsigned)peer->uid);
			return -EPERM;
		}
		char reason[AGENT_REASON_MAX];
		if (!*arg || !strcmp(arg, "external"))
			snprintf(reason, sizeof(reason), "external");
		else
			snprintf(reason, sizeof(reason), "external: %s", arg);
		/* A second trigger in one wake-up (the next client came while the control
		 * thread, starved, was still serving the last one): the hang detector and any
		 * detector's request go first, as between two wake-ups, so a hang still waits at
		 * most one persist. It used to be refused ("busy, ask again"): 19 of 40
		 * back-to-back `jitt trigger`s with three CPU hogs on two cores. */
		if (persisted_this_step) {
			char path[AGENT_PATH_MAX];
			check_hang(rt, agent_now_ns());
			handle_request(path, sizeof(path));
		}
		int e = agent_request_persist(AGENT_DETECT_EXTERNAL, reason, false, 0);
		if (e == -EAGAIN) {
			snprintf(reply, size, "not now: within the cool-down of the last trace");
			return e;
		}
		char path[AGENT_PATH_MAX];
		if (!e) {
			persisted_this_step = true;
			e = handle_request(path, sizeof(path));
		}
		if (e) {
			snprintf(reply, size, "persist failed: %s",
				 e == -ENOENT	? "the spool folder is missing"
				 : e == -EDQUOT ? "the spool is full (its caps), not written"
						: strerror(-e));
			return e;
		}
		snprintf(reply, size, "trace %s\n", path);
		return 0;
	}
	snprintf(reply, size, "unknown command '%.40s'", cmd);
	return -EINVAL;
}

/* ---- the thread ---- */

/*
 * The thread's chores wait START_CHORES_MS after its start: pinning (a topology load, a
 * dozen sysfs reads) and the stale sockets' sweep (a folder listing). Done at once they
 * delayed a short-lived app's exit, whose destructor joins this thread: a traced hello
 * world's whole run took 0.38 ms against 0.13 ms plain (medians of 400, interleaved, the
 * run folder on tmpfs); with them here, 0.30 ms (docs/runtime.md, "Start-up"). The thread
 * only sleeps in poll() meanwhile, so where it sleeps does not matter.
 */
#define START_CHORES_MS 20
static uint64_t chores_at_ns; /* 0: done */
/* On the LITTLE CPUs, again when they come back after hotplug (hal/cpu.h). */
static struct hal_pin_keeper pin;

RT static void keep_pinned(uint64_t now_ns)
{
	hal_pin_keep(&pin, (int64_t)(now_ns / 1000000u));
	if (!pin.changed)
		return;
	if (pin.err)
		log_dbg("jitt: control thread not pinned to the LITTLE CPUs (%s): trying again "
			"when CPUs come online", strerror(-pin.err));
	else
		log_dbg("jitt: control thread pinned to the LITTLE CPUs %s", pin.cpus);
}

RT static void chores(struct agent_runtime *rt, uint64_t now_ns)
{
	if (chores_at_ns) {
		if (now_ns < chores_at_ns)
			return;
		chores_at_ns = 0;
		/* The sockets of this user's traced processes killed with -9 (an app's own
		 * earlier runs, mostly): here, at low priority, not on the app's way to main(). */
		int stale = agent_ctl_remove_stale(rt->cfg.run_dir);
		if (stale > 0)
			log_dbg("jitt: removed %d stale control socket(s) from %s", stale,
				rt->cfg.run_dir);
	}
	keep_pinned(now_ns);
}

/* The chores' next deadline in ms from now, or -1. */
RT static int chores_timeout(uint64_t now_ns)
{
	uint64_t due = chores_at_ns;
	if (!due) {
		int64_t pin_ms = hal_pin_keeper_deadline(&pin);
		if (pin_ms == INT64_MAX)
			return -1;
		due = (uint64_t)pin_ms * 1000000u;
	}
	return due <= now_ns ? 0 : (int)((due - now_ns + 999999) / 1000000);
}

/* The poll timeout: the next deadline (a hang, a restart, a client's), or -1 (and ctl_idle
 * set) when none. */
RT static int next_timeout(struct agent_runtime *rt)
{
	for (;;) {
		uint64_t begin = atomic_load(&rt->frame_begin_ns);
		uint64_t seq = atomic_load(&rt->frame_seq);
		int timeout = nrestart ? RESTART_RETRY_MS : -1;
		if (!hal_timer_calibrated()) {
			uint64_t left = hal_timer_calibration_left_ns();
			int ms = (int)((left + 999999) / 1000000);
			if (timeout < 0 || ms < timeout)
				timeout = ms;
		}
		int chores_ms = chores_timeout(agent_now_ns());
		if (chores_ms >= 0 && (timeout < 0 || chores_ms < timeout))
			timeout = chores_ms;
		int learn_ms = agent_sleds_learn_timeout(agent_now_ns());
		if (learn_ms >= 0 && (timeout < 0 || learn_ms < timeout))
			timeout = learn_ms;
		int64_t client = rt->listen_fd >= 0 ? agent_ctl_server_deadline(&ctl) : INT64_MAX;
		if (client != INT64_MAX) {
			int64_t left = client - agent_ctl_now_ms();
			int ms = left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
			if (timeout < 0 || ms < timeout)
				timeout = ms;
		}
		if (begin && seq != hang_fired_seq) {
			uint64_t now = agent_now_ns(), due = begin + rt->hang_ns;
			int ms = due <= now ? 0 : (int)((due - now + 999999) / 1000000);
			if (timeout < 0 || ms < timeout)
				timeout = ms;
		}
		if (timeout >= 0)
			return timeout;
		/* seq_cst, paired with jitt_frame_begin(): set idle, then look again. */
		atomic_store(&rt->ctl_idle, 1);
		if (!atomic_load(&rt->frame_begin_ns))
			return -1;
		atomic_store(&rt->ctl_idle, 0);
	}
}

/* now: the wake-up's one clock reading (see the top of this file). */
RT static void check_hang(struct agent_runtime *rt, uint64_t now)
{
	uint64_t begin = atomic_load(&rt->frame_begin_ns);
	uint64_t seq = atomic_load(&rt->frame_seq);
	if (!begin || seq == hang_fired_seq)
		return;
	uint64_t took = now > begin ? now - begin : 0;
	if (took < rt->hang_ns)
		return;
	hang_fired_seq = seq;
	char reason[AGENT_REASON_MAX];
	snprintf(reason, sizeof(reason), "hang: a frame still running after %llu ms",
		 (unsigned long long)(took / 1000000));
	(void)agent_request_persist(AGENT_DETECT_HANG, reason, false, took);
}

/* The trace hooks the program links (ringbuf/hooks.c: timed, or sampled), inlined here
 * with LTO as in every traced function. */
extern void __cyg_profile_func_enter(void *fn, void *call_site);
extern void __cyg_profile_func_exit(void *fn, void *call_site);

#define COST_CALLS   2048 /* entries and exits a batch: 4,096 records, 32 KiB of scratch */
#define COST_BATCHES 8

/*
 * What one trace point costs on this device, for the traces' headers (tracefile.h): what
 * `jitt exclude` takes out of the traced time to rank as a profile of the plain build
 * would, without a benchmark's traced/plain ratio (docs/exclude.md). The linked hooks in a
 * tight loop on a scratch ring (ring.h), the fastest of 8 batches: back to back, as in
 * call-heavy code, where the points are many. Once, when this thread starts: on a LITTLE
 * core where there are two classes (the app's big cores are faster, so it errs high: the
 * functions then look cheaper, and more of them are listed). About 33,000 trace points, a
 * few hundred microseconds of this thread.
 */
RT static void measure_point_cost(void)
{
	uint64_t *slots = calloc(2 * COST_CALLS + 8, sizeof(*slots));
	if (!slots)
		return;
	uint64_t best = UINT64_MAX;
	for (int b = 0; b < COST_BATCHES; b++) {
		if (rb_scratch_begin(slots, 2 * COST_CALLS + 8) != 0)
			break;
		uint64_t t0 = hal_counter_read();
		for (int i = 0; i < COST_CALLS; i++) {
			__cyg_profile_func_enter((void *)measure_point_cost, NULL);
			__cyg_profile_func_exit((void *)measure_point_cost, NULL);
		}
		uint64_t t1 = hal_counter_read();
		rb_scratch_end();
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	free(slots);
	if (best != UINT64_MAX)
		rb_trace_set_point_cost((double)best / (2.0 * COST_CALLS));
}

/* Posted by the control thread as it ends (agent_control_wait_exit), its CPU time then
 * kept: an ended thread's clock is no longer its own */
static sem_t control_ended;
static struct timespec control_cpu;
static atomic_bool control_done;

RT static void *control_main(void *arg)
{
	struct agent_runtime *rt = arg;
	/* A name that says whose thread it is in ps -T and /proc/PID/task/TID/comm (an OEM
	 * checks its CPUs and priority there; the boot test does). */
	prctl(PR_SET_NAME, "jitt-control");
	/* nice 19 (this thread only: Linux's nice is per thread), not SCHED_IDLE; while the
	 * sleds' first window waits for its decision, at the app's: until then every function
	 * is traced, and at nice 19 beside busy cores this thread made that decision 3.7-3.9 s
	 * into duktape's run (48-63 ms at the app's). An unprivileged thread cannot come back
	 * from 19. */
	bool niced = !agent_sleds_may_learn(&rt->cfg);
	if (niced)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	hal_pin_keeper_init(&pin, HAL_CPU_LITTLE, false);
	chores_at_ns = agent_now_ns() + START_CHORES_MS * 1000000ull;
	measure_point_cost();
	agent_sleds_point_cost();
	while (atomic_load(&rt->state) != 3) {
		struct pollfd pfd[1 + AGENT_CTL_POLLFDS] = { { rt->wake_fd, POLLIN, 0 } };
		int n = 1;
		if (rt->listen_fd >= 0)
			n += agent_ctl_server_pollfds(&ctl, pfd + 1, AGENT_CTL_POLLFDS);
		int timeout = next_timeout(rt);
		int r = poll(pfd, (nfds_t)n, timeout);
		atomic_store(&rt->ctl_idle, 0);
		atomic_fetch_add_explicit(&rt->status.control_wakeups, 1, memory_order_relaxed);
		if (r < 0 && errno != EINTR) {
			log_err("jitt: control thread: poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents & POLLIN) {
			uint64_t v;
			(void)!read(rt->wake_fd, &v, sizeof(v));
		}
		if (atomic_load(&rt->state) == 3)
			break;
		/* (state 2: the sleds were started, with their learning or without) */
		if (!niced && atomic_load(&rt->state) == 2 && agent_sleds_first_decided()) {
			setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
			niced = true;
		}
		if (!hal_timer_calibrated() && hal_timer_calibration_left_ns() == 0)
			(void)hal_timer_calibrate(); /* due: no sleep */
		/* Rings registered since: their pages faulted in here, not in the app's thread
		 * (ringbuf/ring.h), a chunk at a time between the other duties. */
		while (atomic_load(&rt->state) != 3 && rb_rings_populate())
			check_hang(rt, agent_now_ns());
		/* The hang first, and what any detector asked for, then the clients. */
		uint64_t now = agent_now_ns();
		check_hang(rt, now);
		char path[AGENT_PATH_MAX];
		handle_request(path, sizeof(path));
		if (rt->listen_fd >= 0) {
			persisted_this_step = false;
			int e = agent_ctl_server_step(&ctl, pfd + 1, n - 1,
						      (int64_t)(now / 1000000));
			if (e < 0)
				log_warn("jitt: control socket: %s", strerror(-e));
		}
		if (nrestart)
			retry_restarts();
		if (agent_sleds_learn_timeout(agent_now_ns()) == 0) {
			pid_t tids[MAX_RINGS];
			int ntids;
			uint64_t records = traced_threads(tids, &ntids);
			enum agent_learn_step step =
				agent_sleds_learn_step(agent_now_ns(), records, tids, ntids);
			if (step != AGENT_LEARN_NONE)
				learn_sleds(step);
		}
		chores(rt, agent_now_ns());
	}
	agent_sleds_exit_save();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &control_cpu);
	atomic_store(&control_done, true);
	sem_post(&control_ended);
	return NULL;
}

RT int agent_control_start(void)
{
	struct agent_runtime *rt = &agent_rt;
	nrestart = 0;
	hang_fired_seq = atomic_load(&rt->frame_seq);
	rt->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rt->wake_fd < 0)
		return -errno;
	/* The control socket is optional: status and trigger are lost without it, the
	 * detectors are not. run_dir is the image's (its init makes it, with the owner and
	 * mode chosen there: docs/oem.md): a traced program never creates it. */
	rt->listen_fd = -1;
	if (agent_config_socket(&rt->cfg, getpid(), rt->socket_path, sizeof(rt->socket_path)) == 0) {
		rt->listen_fd = agent_ctl_listen(rt->socket_path);
		if (rt->listen_fd == -ENOENT && !is_dir(rt->cfg.run_dir))
			log_warn("jitt: run_dir %s is missing (the image's init makes it): no "
				 "control socket, so no status or trigger",
				 rt->cfg.run_dir);
		else if (rt->listen_fd < 0)
			log_warn("jitt: no control socket %s: %s", rt->socket_path,
				 strerror(-rt->listen_fd));
	}
	agent_ctl_server_init(&ctl, rt->listen_fd, handle_ctl, rt);
	sem_init(&control_ended, 0, 0);
	atomic_store(&control_done, false);
	/* The spool too is the image's: without it nothing is persisted (said once), and the
	 * app runs on. */
	spool_warned = false;
	char spool[AGENT_PATH_MAX];
	(void)spool_ready(&rt->cfg, spool, sizeof(spool));

	/* The control thread takes no signal of the app's. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&rt->control, NULL, control_main, rt);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		agent_control_stop();
		return -e;
	}
	return 0;
}

RT void agent_control_wait_exit(unsigned ms)
{
	struct agent_runtime *rt = &agent_rt;
	struct timespec until;
	if (!rt->control || clock_gettime(CLOCK_REALTIME, &until))
		return;
	agent_wake_control();
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000)
		until.tv_sec++, until.tv_nsec -= 1000000000;
	while (sem_timedwait(&control_ended, &until) && errno == EINTR)
		;
}

RT int agent_control_cpu(struct timespec *cpu)
{
	clockid_t clock;
	if (atomic_load(&control_done)) {
		*cpu = control_cpu;
		return 0;
	}
	if (!agent_rt.control || pthread_getcpuclockid(agent_rt.control, &clock))
		return -1;
	return clock_gettime(clock, cpu);
}

RT void agent_control_stop(void)
{
	struct agent_runtime *rt = &agent_rt;
	if (rt->control) {
		agent_wake_control();
		pthread_join(rt->control, NULL);
		rt->control = 0;
	}
	if (ctl.handler) { /* started */
		agent_ctl_server_close(&ctl);
		ctl.handler = NULL;
	}
	if (rt->listen_fd >= 0) {
		close(rt->listen_fd);
		unlink(rt->socket_path);
		rt->listen_fd = -1;
	}
	if (rt->wake_fd >= 0) {
		close(rt->wake_fd);
		rt->wake_fd = -1;
	}
}
