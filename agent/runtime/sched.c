/* SPDX-License-Identifier: MIT */
/*
 * agent/runtime/sched.c - each traced thread's scheduling (frames made slow by other
 * processes): when it was switched out and in, and why, so the summary can tell time
 * preempted from time working.
 *
 * A thread that starts being traced gets a perf context-switch ring (hal/sched.h) of
 * sched_pages pages: the kernel writes it at each switch, nothing runs on the thread. When
 * the rings freeze, the control thread copies each traced thread's ring, and the trace file
 * gets them as its scheduling section (docs/trace-format.md), with each CPU's class.
 *
 * Where perf is refused (perf_event_paranoid 3 as on Android, seccomp) or sched_pages is 0,
 * the thread instead samples its schedstat (time on a CPU, time waiting to run) at each
 * frame boundary into its own ring as two special records: only the frame's totals, no
 * per-function split, and about 10 us a sample (make bench).
 */
#include "hal/cpu.h"
#include "hal/sched.h"
#include "ringbuf/trace.h"
#include "ringbuf/tracefile.h"
#include "runtime.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SCHED_SLOTS 64 /* CONFIG_RB_MAX_TRACED_THREADS's range */

struct sched_slot {
	pid_t tid; /* 0: free */
	struct hal_perf_ring ring;
};

static struct sched_slot slots[SCHED_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t cpu_class[RB_FILE_MAX_CPUS];
static uint32_t ncpus; /* 0: the topology is not read yet */

/* This thread samples schedstat at frame boundaries (it has no perf ring). */
static __thread pid_t stat_tid;

/* Close the rings of threads that are no longer traced (exited): slots_lock held. */
RT static void reap(const pid_t *live, int nlive)
{
	for (int i = 0; i < SCHED_SLOTS; i++) {
		if (!slots[i].tid)
			continue;
		bool found = false;
		for (int k = 0; k < nlive && !found; k++)
			found = live[k] == slots[i].tid;
		if (!found) {
			hal_perf_ring_close(&slots[i].ring);
			slots[i].tid = 0;
		}
	}
}

RT int agent_sched_thread_start(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	stat_tid = 0; /* traced before, under another runtime's settings: choose again */
	uint32_t pages = agent_rt.cfg.sched_pages;
	int e = pages ? -ENOSPC : -ENODEV;
	pthread_mutex_lock(&slots_lock);
	for (int i = 0; i < SCHED_SLOTS && pages; i++) {
		if (slots[i].tid == tid) {
			e = 0; /* already has one */
			break;
		}
	}
	for (int i = 0; i < SCHED_SLOTS && e == -ENOSPC; i++) {
		if (slots[i].tid)
			continue;
		e = hal_sched_open(&slots[i].ring, tid, pages);
		if (!e)
			slots[i].tid = tid;
		break;
	}
	pthread_mutex_unlock(&slots_lock);
	if (e)
		stat_tid = tid;
	return e;
}

RT void agent_sched_stop_all(void)
{
	pthread_mutex_lock(&slots_lock);
	reap(NULL, 0);
	pthread_mutex_unlock(&slots_lock);
}

RT void agent_sched_sample(void)
{
	uint64_t run, wait, slices;
	/* Not for a thread whose tracing is off (pos 0): its records would go nowhere. */
	if (!stat_tid || !atomic_load_explicit(&rb_tls.pos, memory_order_relaxed) ||
	    hal_sched_stat(stat_tid, &run, &wait, &slices) != 0)
		return;
	rb_special(RB_SCHED_RUN, (uint32_t)(run / 1000));
	rb_special(RB_SCHED_WAIT, (uint32_t)(wait / 1000));
}

/* Each CPU's class, read once (the first freeze): sysfs does not change under an app. */
RT static void load_classes(void)
{
	if (ncpus)
		return;
	struct hal_topology *topo = malloc(sizeof(*topo));
	if (!topo || hal_topology_load(topo) != 0) {
		free(topo);
		return;
	}
	for (unsigned i = 0; i < topo->ncpus; i++) {
		const struct hal_cpu *c = &topo->cpu[i];
		if (c->id < RB_FILE_MAX_CPUS) {
			cpu_class[c->id] = c->ranked ? (uint8_t)c->cls : RB_CPU_CLASS_UNKNOWN;
			if (c->id + 1u > ncpus)
				ncpus = c->id + 1u;
		}
	}
	/* A gap in the ids (CPUs not present) is unknown, not LITTLE. */
	for (uint32_t id = 0; id < ncpus; id++) {
		bool seen = false;
		for (unsigned i = 0; i < topo->ncpus && !seen; i++)
			seen = topo->cpu[i].id == id;
		if (!seen)
			cpu_class[id] = RB_CPU_CLASS_UNKNOWN;
	}
	free(topo);
}

RT void agent_sched_freeze(struct rb_frozen *f, int n, const pid_t *live, int nlive,
			  struct rb_trace_sched *info, void **mem)
{
	*mem = NULL;
	*info = (struct rb_trace_sched){ RB_SCHED_NONE, 0, NULL };
	pthread_mutex_lock(&slots_lock);
	uint64_t bytes = 0;
	int nring = 0;
	for (int i = 0; i < SCHED_SLOTS; i++)
		if (slots[i].tid) {
			bytes += slots[i].ring.data_size;
			nring++;
		}
	/* Each switch record is 32 bytes: room for the copies and their parsed events. */
	uint8_t *buf = nring ? malloc(bytes + bytes / 2 + 64) : NULL;
	struct hal_sched_event *ev = buf ? (struct hal_sched_event *)(buf + bytes) : NULL;
	for (int i = 0; i < n && buf; i++) {
		struct sched_slot *s = NULL;
		for (int k = 0; k < SCHED_SLOTS && !s; k++)
			if (slots[k].tid && slots[k].tid == f[i].tid)
				s = &slots[k];
		if (!s)
			continue;
		long got = hal_sched_copy(&s->ring, buf, s->ring.data_size);
		if (got < 0)
			continue;
		uint64_t skipped = 0, lost = 0;
		size_t max = (size_t)s->ring.data_size / 32;
		size_t k = hal_sched_parse(buf, (size_t)got, ev, max, &skipped, &lost);
		f[i].sched = ev;
		f[i].nsched = (uint32_t)k;
		f[i].sched_on = true;
		/* A ring that lapped lost its oldest records, how many unknown: one at least,
		 * which tells the summary that the records do not reach back to the trace's
		 * start (cct.h, switches_from) */
		f[i].sched_lost = skipped + lost + s->ring.lapped;
		ev += k;
		info->source = RB_SCHED_PERF;
	}
	reap(live, nlive);
	pthread_mutex_unlock(&slots_lock);
	*mem = buf;
	/* A thread with no perf ring samples schedstat at its frame boundaries. */
	if (info->source == RB_SCHED_NONE && n)
		info->source = RB_SCHED_SCHEDSTAT;
	load_classes();
	info->ncpus = ncpus;
	info->cpu_class = cpu_class;
}
