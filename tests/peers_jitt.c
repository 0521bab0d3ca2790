/* SPDX-License-Identifier: MIT */
/*
 * jitt in bench-peers: the build of bench-trace (tests/Kbuild: static, musl, -flto, the
 * hooks of ringbuf/hooks.c inlined into listing1_traced). The ring counts its own records
 * (rb_self_records). `--persist DIR` fills one ring with Listing 1 and writes it as a
 * trace file, the input of `jitt summarize` in the post-processing table.
 */
#include "hal/timer.h"
#include "ringbuf/ring.h"
#include "ringbuf/tracefile.h"
#include "tests/peers.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

const char peers_tracer[] = "jitt";

static uint64_t records_at_begin;

int peers_begin(void)
{
	hal_timer_init();
	int err = rb_trace_self(true);
	records_at_begin = rb_self_records();
	return err;
}

int64_t peers_records(void)
{
	return (int64_t)(rb_self_records() - records_at_begin);
}

int peers_end(void)
{
	return rb_trace_self(false);
}

static _Atomic int registered, quit;
static _Atomic long calls_done;

/* A traced thread running Listing 1 (work 0) until told to stop: it answers the stop at
 * its next trace point, as an app's thread does when the control thread freezes it. */
static void *listing1_thread(void *arg)
{
	(void)arg;
	if (rb_thread_register("listing1") != 0) {
		atomic_store(&registered, -1);
		return NULL;
	}
	rb_trace_self(true);
	atomic_store(&registered, 1);
	long sum = 1;
	while (!atomic_load_explicit(&quit, memory_order_relaxed)) {
		sum += listing1_traced(10, 0, sum);
		atomic_fetch_add_explicit(&calls_done, 1, memory_order_relaxed);
	}
	return (void *)sum;
}

int peers_persist(const char *dir, char *path, size_t size)
{
	hal_timer_init();
	pthread_t t;
	if (pthread_create(&t, NULL, listing1_thread, NULL) != 0)
		return -EAGAIN;
	while (atomic_load(&registered) == 0)
		sched_yield();
	int err = atomic_load(&registered) < 0 ? -ENOMEM : 0;
	/* 20 records a call: wait until the ring has wrapped at least once, so it is full. */
	while (!err && atomic_load(&calls_done) * 20 < (long)(RB_RING_SLOTS * 3 / 2))
		sched_yield();
	struct rb_ring *r;
	struct rb_frozen f;
	if (!err) {
		rb_lock();
		err = rb_rings(&r, 1) == 1 ? rb_stop(r, 30000, &f) : -ENOENT;
		rb_unlock();
	}
	if (!err) {
		err = rb_trace_write(dir, "bench-peers: full ring", &f, 1, path, size);
		rb_frozen_release(&f);
	}
	atomic_store(&quit, 1);
	pthread_join(t, NULL);
	return err;
}
