/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/ring.h - the control side: registering traced threads, starting and stopping
 * their rings (Hubble section 6, Fig. 4), and freezing them for a trace file.
 *
 * At most CONFIG_RB_MAX_TRACED_THREADS threads have a ring at once (Hubble 4.3). A ring is
 * mapped (and its pages touched) when its thread registers, never on the trace point, and
 * unmapped when the thread unregisters or exits.
 */
#ifndef JITT_RINGBUF_RING_H
#define JITT_RINGBUF_RING_H

#include "ringbuf/decode.h"

struct hal_sched_event;

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The ring's size by default (Kconfig); rb_set_ring_bytes changes it at run time. */
#define RB_RING_BYTES ((uint64_t)1 << CONFIG_RB_RING_SHIFT)
#define RB_RING_SLOTS (RB_RING_BYTES / 8)
/* The sizes a ring may have: Kconfig's range, and what a trace file may hold. */
#define RB_RING_MIN_BYTES ((uint64_t)1 << 12)
#define RB_RING_MAX_BYTES ((uint64_t)1 << 30)
#define RB_NAME_MAX 16

struct rb_ring;

/* A ring frozen for persisting: in place after a clean stop, or a validated copy. */
struct rb_frozen {
	const uint64_t *slots; /* nslots slots; records end at `end`, circularly */
	uint64_t nslots;
	uint64_t end;   /* index of the slot after the newest record */
	uint64_t valid; /* slots before `end` (circularly) that hold whole records */
	uint32_t laps;  /* times the ring wrapped since tracing started */
	bool copied;    /* a validated copy: the thread did not reach a trace point in time */
	bool anomaly;   /* the anomaly is this thread's (set by the caller: a hang's thread) */
	uint64_t frozen_ticks; /* the timer when it was frozen: its open calls ran until then */
	pid_t tid;
	char name[RB_NAME_MAX];
	void *copy; /* owned buffer of a copy, freed by rb_frozen_release */
	/* The return addresses on the thread's stack when it answered the stop, innermost
	 * first (stack.h); none for a copy (the thread did not answer). */
	const uintptr_t *stack;
	uint32_t nstack;
	/* The thread's context switches (hal/sched.h), oldest first, for the trace file's
	 * scheduling section; set by the caller of rb_trace_write_sched, never freed here. */
	const struct hal_sched_event *sched;
	uint32_t nsched;
	bool sched_on;	     /* a perf ring was recording this thread */
	uint64_t sched_lost; /* switch records the kernel dropped or the parse skipped, and 1
			      * where the ring lapped (its oldest overwritten) */
};

/* How many slots from index 0 hold what a frozen ring needs: up to the end when the valid
 * records do not wrap around, else all of them. */
static inline uint64_t rb_frozen_stored(const struct rb_frozen *f)
{
	return f->valid <= f->end ? f->end : f->nslots;
}

/* A frozen ring as the decoder reads it. */
static inline struct rb_ring_view rb_frozen_view(const struct rb_frozen *f)
{
	return (struct rb_ring_view){ .slots = f->slots,
				      .nslots = f->nslots,
				      .stored = rb_frozen_stored(f),
				      .end = f->end,
				      .valid = f->valid,
				      .word_size = sizeof(void *),
				      .frozen_ticks = f->copied ? f->frozen_ticks : 0 };
}

/* Give the calling thread a ring (tracing stays off until rb_start). Returns 0, -EALREADY,
 * -EBUSY when CONFIG_RB_MAX_TRACED_THREADS rings exist, -ENOMEM, or -ERANGE when the
 * program's virtual addresses reach past 4 GiB (its function ids would not be exact). */
int rb_thread_register(const char *name);
/* Prefault one chunk of a ring registered since (rb_thread_register maps it unpopulated):
 * the control thread's, off the app's path. True while work was done (call again). */
bool rb_rings_populate(void);
/* Change the limit on traced threads (CONFIG_RB_MAX_TRACED_THREADS at start), 1..64;
 * rings already registered are kept. 0 or -EINVAL. */
int rb_set_max_threads(int n);
/* The size of the rings mapped from now on (RB_RING_BYTES at start): a power of two in
 * RB_RING_MIN_BYTES..RB_RING_MAX_BYTES, else -EINVAL; rings already mapped keep theirs.
 * rb_ring_bytes() says the size in force. */
int rb_set_ring_bytes(uint64_t bytes);
uint64_t rb_ring_bytes(void);
/* Stop tracing the calling thread and unmap its ring. 0 or -ENOENT. */
int rb_thread_unregister(void);
/* Rename the calling thread's ring (shown in trace files). */
int rb_thread_set_name(const char *name);

/* The registered rings, for the control thread: fills up to max, returns the count. The
 * pointers stay valid until the ring's thread unregisters or exits: hold rb_lock() from
 * rb_rings() through every rb_start() and rb_stop() on them. */
int rb_rings(struct rb_ring **rings, int max);
/* The thread a ring belongs to, the name it was given ("" when none), and whether it is
 * tracing (started, not stopped by its thread); under rb_lock(). */
pid_t rb_ring_tid(const struct rb_ring *r);
const char *rb_ring_name(const struct rb_ring *r);
bool rb_ring_on(const struct rb_ring *r);
void rb_lock(void);
void rb_unlock(void);

/* Start tracing: writes the first sync record, then publishes the start position. 0, or
 * -EBUSY while a stop is still pending (the thread has not answered yet). */
int rb_start(struct rb_ring *r);
/*
 * Stop and freeze: asks the thread to stop at its next trace point and waits up to
 * wait_ms for its answer (the exact end position). A thread blocked in a system call
 * never answers: then a validated copy is taken (out->copied), and the stop stays pending
 * until the thread answers (rb_start says -EBUSY until then). A ring whose stop is pending
 * is stopped again: frozen at its answer if it gave one, else copied again. Returns 0,
 * -EINVAL when the ring is off, or -EAGAIN when the ring changed too fast to copy or its
 * thread was caught between turning off and answering (or -ENOMEM): then too the stop
 * stays pending.
 */
int rb_stop(struct rb_ring *r, unsigned wait_ms, struct rb_frozen *out);
/* Stop several rings together (one freeze of the whole process): all are asked first, then
 * awaited for at most wait_ms in all. errs[i] gets what rb_stop would return for rs[i];
 * returns how many failed. */
int rb_stop_many(struct rb_ring **rs, int n, unsigned wait_ms, struct rb_frozen *out,
		 int *errs);
/*
 * A copy of a running ring's newest max slots (all of them: UINT64_MAX), taken while its
 * thread goes on writing (the validated copy of a stop that got no answer, without the
 * stop): for statistics, which need no exact end and must not cost the ring its records
 * (the sleds' learning, agent/runtime/sleds.c). Fewer than the ring's are copied in order
 * into a copy of that many (its nslots), their end at its end (index 0, circularly).
 * 0, -EINVAL when the ring is not running, -EAGAIN when it changed too fast to copy, or
 * -ENOMEM; rb_frozen_release frees it.
 */
int rb_peek_newest(struct rb_ring *r, uint64_t max, struct rb_frozen *out);
/* The same into buf, of max slots (at most the ring's), the caller's: nothing to free (the
 * control thread's looks, every 10 ms, reuse one rather than malloc's and free's system
 * calls). */
int rb_peek_newest_into(struct rb_ring *r, uint64_t max, uint64_t *buf, struct rb_frozen *out);
void rb_frozen_release(struct rb_frozen *f);

/* A shared library's trace points (ringbuf/hooks_dso.c), exported by the program. */
void rb_dso_enter(void *fn);
void rb_dso_exit(void);

/* The main program's load bias (0 unless it is PIE): an entry's id is the low half of
 * bias + the function's virtual address. */
uintptr_t rb_main_bias(void);

/* The calling thread's own tracing on or off (registering it first if needed). */
int rb_trace_self(bool on);
/*
 * Trace points of the calling thread, unregistered and off, into slots (nslots, 8-byte
 * aligned) until rb_scratch_end: for measuring what one costs (agent/runtime's start).
 * Nothing decodes them; the caller writes fewer than nslots - 2 records, so the ring
 * never wraps (a wrap needs a registered ring). -EBUSY when the thread is registered or
 * tracing, -ENOTSUP where the timer is the clock's (its trace point is the rare path,
 * which needs one too).
 */
int rb_scratch_begin(uint64_t *slots, size_t nslots);
void rb_scratch_end(void);
/* How many slots the calling thread's ring has filled since its start, sync records left
 * out (the number of records when all took one slot), or 0 when it is not running. For
 * benchmarks: a variant that was meant to trace really did. */
uint64_t rb_self_records(void);
/* The same for ring r's thread, read from another (relaxed: a count that may lag by the
 * records being written meanwhile). Under the lock (rb_lock) while r is registered. */
uint64_t rb_ring_records(const struct rb_ring *r);
/* The calling thread's own ring, for its own reading (sleds.h, a window's end): its slots,
 * their count and its laps so far; false when the thread has none. */
bool rb_ring_own(const uint64_t **slots, uint64_t *nslots, uint32_t *laps);

#endif
