/* SPDX-License-Identifier: MIT */
/*
 * A dynamically linked PIE program (glibc) using libjitt and calling an instrumented shared
 * library: its own functions must be narrow entries relative to its load bias, the
 * library's wide entries, and the trace file's module table must map both back to
 * {module, offset}. Prints ok/FAIL lines and "N passed, N failed".
 */
#define _GNU_SOURCE
#include "hal/timer.h"
#include "ringbuf/decode.h"
#include "ringbuf/ring.h"
#include "ringbuf/tracefile.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dyn_lib_entry(int x);
int dyn_main_work(int x); /* tests/dyn_work.c, instrumented */

static _Atomic int registered, quit, rounds;
static int passed, failed;

#define EXPECT(cond)                                                  \
	do {                                                          \
		if (cond) {                                           \
			passed++;                                     \
			printf("ok   dynamic: %s\n", #cond);          \
		} else {                                              \
			failed++;                                     \
			printf("FAIL dynamic: %s\n", #cond);          \
		}                                                     \
	} while (0)

static void *traced(void *arg)
{
	(void)arg;
	rb_thread_register("dyn");
	atomic_store(&registered, 1);
	while (!atomic_load(&quit)) {
		dyn_main_work(atomic_fetch_add(&rounds, 1));
		sched_yield();
	}
	return NULL;
}

/* The load bias of the module that holds addr. */
static uintptr_t bias_of(const void *addr)
{
	Dl_info info;
	struct link_map *lm = NULL;
	if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return 0;
	return lm->l_addr;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	hal_timer_init();
	pthread_t t;
	pthread_create(&t, NULL, traced, NULL);
	while (!atomic_load(&registered))
		sched_yield();
	struct rb_ring *r;
	struct rb_frozen f;
	rb_lock();
	rb_rings(&r, 1);
	rb_start(r);
	rb_unlock();
	int start = atomic_load(&rounds);
	while (atomic_load(&rounds) < start + 3)
		sched_yield();
	rb_lock();
	/* It answers as soon as it runs: 30 s only catches a hang on a loaded machine. */
	int err = rb_stop(r, 30000, &f);
	rb_unlock();
	EXPECT(err == 0);
	char path[4096], msg[256];
	EXPECT(rb_trace_write(dir, "dynamic", &f, 1, path, sizeof(path)) == 0);
	atomic_store(&quit, 1);
	pthread_join(t, NULL);

	struct rb_trace tr;
	EXPECT(rb_trace_open(path, &tr, msg, sizeof(msg)) == 0);
	struct rb_event *ev;
	size_t n;
	EXPECT(rb_decode(&tr.threads[0].view, tr.ref_ticks, &ev, &n, NULL) == 0);
	uint64_t want_main = (uintptr_t)dyn_main_work - bias_of((void *)dyn_main_work);
	uint64_t want_lib = (uintptr_t)dyn_lib_entry - bias_of((void *)dyn_lib_entry);
	int main_hits = 0, lib_hits = 0, lib_wide = 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t vaddr;
		if (ev[i].kind != RB_EV_ENTRY)
			continue;
		int m = rb_trace_resolve(&tr, &ev[i], &vaddr);
		if (m == 0 && vaddr == want_main)
			main_hits++;
		if (m > 0 && vaddr == want_lib && strstr(tr.modules[m].path, "libdyntraced")) {
			lib_hits++;
			lib_wide &= ev[i].wide;
		}
	}
	printf("    %zu events: %d entries of dyn_main_work, %d of dyn_lib_entry\n", n, main_hits,
	       lib_hits);
	EXPECT(main_hits >= 3);
	EXPECT(lib_hits >= 3);
	EXPECT(lib_wide);
	EXPECT(tr.nmodules >= 3 && tr.modules[0].build_id_len > 0);
	free(ev);
	rb_trace_close(&tr);
	rb_frozen_release(&f);
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
