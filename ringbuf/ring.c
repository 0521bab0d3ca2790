/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* MAP_POPULATE, gettid */
#include "ring.h"
#include "stack.h"
#include "trace.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread struct rb_tls rb_tls __attribute__((tls_model(RB_TLS_MODEL)));

enum rb_state {
	RB_OFF,         /* registered, not tracing */
	RB_RUNNING,     /* tracing */
	RB_STOP_PENDING /* asked to stop, answer not seen yet (a validated copy was taken) */
};

struct rb_ring {
	_Atomic uint64_t *slots; /* nslots + 1: the last is a spare for a two-slot record
				  * written at the very end, moved to slot 0 on wrap */
	uint64_t nslots;         /* the ring's size when it was mapped (rb_set_ring_bytes) */
	uintptr_t end;           /* address of slot nslots */
	struct rb_tls *tls;      /* the owner's thread-local control words */
	_Atomic uint32_t laps;   /* written by the owner (wrap) and by rb_start while off */
	bool clock;              /* timestamps from clock_gettime; set by rb_start while off */
	enum rb_state state;     /* control side only, under the lock */
	pid_t tid;
	char name[RB_NAME_MAX];
	/* The outer frames (stack.h): the stack's top and the program's code, from the
	 * registration; the return addresses the owner found when it answered a stop. */
	uintptr_t stack_top, text_lo, text_hi;
	uint32_t nstack;
	uintptr_t stack[RB_STACK_MAX];
	uintptr_t copy_stack[RB_STACK_MAX]; /* the control thread's, for a copy */
	/* Prefaulting (rb_rings_populate), under the lock: bytes done so far; busy while the
	 * control thread faults a chunk in without the lock; dead when its owner gave it back
	 * meanwhile (then whoever clears busy unmaps it). */
	uint64_t populated;
	bool populate_busy, dead;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Room for the most any configuration allows; max_threads is the limit in force. */
#define RB_RING_TABLE 64
static struct rb_ring *rings[RB_RING_TABLE];
static int max_threads = CONFIG_RB_MAX_TRACED_THREADS;
static uint64_t ring_slots = RB_RING_SLOTS; /* of rings mapped from now on */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

#define NO_INSTR __attribute__((no_instrument_function))

/* ---- the traced thread's rare paths (trace.h) ---- */

/*
 * Whether the running ring takes its timestamps from the clock (trace.h, "the clock"),
 * given a value of pos the owner loaded: on ARM its bit RB_POS_CLOCK, published with it.
 * On x86_64 (RB_LIMIT_FIRST) the ring's flag, which rb_start stored before publishing pos:
 * x86 orders loads, so an owner that saw that pos sees the flag too.
 */
NO_INSTR static bool uses_clock(uintptr_t pos)
{
#if defined(RB_LIMIT_FIRST)
	(void)pos;
	return rb_tls.ring->clock;
#else
	return pos & RB_POS_CLOCK;
#endif
}

NO_INSTR static uint64_t now(bool clock)
{
	return clock ? hal_clock_now() : hal_counter_read();
}

/* limit while the ring runs (trace.h) */
NO_INSTR static uintptr_t running_limit(const struct rb_ring *r)
{
#if defined(RB_LIMIT_FIRST)
	if (r->clock)
		return RB_LIMIT_CLOCK;
#endif
	return r->end - RB_LIMIT_SLACK;
}

NO_INSTR static uintptr_t write_sync(uintptr_t p, uint64_t ts, uint32_t laps)
{
	rb_store(p, rb_special_payload(ts, laps));
	rb_store(p + 8, rb_tag(ts, RB_SYNC));
	return p + 16;
}

/* The wrap and the stop check, for a record that ends just before p. */
NO_INSTR static void settle(uintptr_t p)
{
	struct rb_tls *t = &rb_tls;
	struct rb_ring *r = t->ring;
	uintptr_t pos = atomic_load_explicit(&t->pos, memory_order_relaxed);
	uintptr_t mode = pos & RB_POS_CLOCK;
	if (p >= r->end) {
		uintptr_t base = (uintptr_t)r->slots;
		if (p > r->end) {
			/* A two-slot record ended in the spare slot: its tag belongs at slot 0,
			 * so the ring reads circularly over nslots slots. */
			rb_store(base, atomic_load_explicit((_Atomic uint64_t *)r->end,
							      memory_order_relaxed));
			p = base + 8;
		} else {
			p = base;
		}
		uint32_t laps = atomic_load_explicit(&r->laps, memory_order_relaxed) + 1;
		atomic_store_explicit(&r->laps, laps, memory_order_relaxed);
		p = write_sync(p, now(uses_clock(pos)), laps);
		/* Sampled time (trace.h, due): the next record is timed. due pointed near the
		 * end, and would leave the whole next lap untimed. */
		atomic_store_explicit(&t->due, 0, memory_order_relaxed);
	}
	if (atomic_load_explicit(&t->limit, memory_order_relaxed) == 0) {
		/* The calls still running, from this thread's own stack (stack.h): the ring
		 * may have lost their entries. */
		r->nstack = (uint32_t)rb_stack_scan((uintptr_t)__builtin_frame_address(0),
						    r->stack_top, r->text_lo, r->text_hi,
						    r->stack, RB_STACK_MAX);
		/* Tracing off, then the answer: the exact end position, written after the last
		 * record (release: the slots and pos = 0 are visible before it). In this order
		 * a control thread that sees the answer may restart the ring at once: nothing
		 * of the owner's is left to store. (Answer first, a thread paused between the
		 * two stores turned a ring restarted meanwhile off with no stop asked: every
		 * later stop then found it off and unanswered, -EAGAIN for ever.) */
		atomic_store_explicit(&t->pos, 0, memory_order_relaxed);
		atomic_store_explicit(&t->limit, p, memory_order_release);
		return;
	}
	atomic_store_explicit(&t->pos, p | mode, memory_order_relaxed);
}

/* The trace point's rare paths are called from asm (trace.h, RB_RARE, through the stubs
 * in stubs.h), which the compiler cannot see: `used` keeps them, under their names, in
 * every build. */
#define RARE NO_INSTR __attribute__((used))

RARE void rb_slow_path(uintptr_t p)
{
	settle(p);
}

/*
 * pos, with room for a two-slot record: one starts before the ring's end (its tag may take
 * the spare slot, which settle moves to slot 0). The counted thunk's fast path writes two
 * slots with no check but due, and may leave pos at the end itself; a two-slot record
 * written there put its payload in slot 0 and its tag past the spare slot, and every
 * record before it then parsed one slot off (the decoded times jumped by 2^32 ticks).
 * So the ring wraps first. 0 where that answered a stop: nothing is to be written.
 */
NO_INSTR static uintptr_t room_for_two(uintptr_t pos)
{
	const struct rb_ring *r = rb_tls.ring; /* none: a scratch ring, which never wraps */
	if (!r || (pos & ~RB_POS_CLOCK) < r->end)
		return pos;
	settle(pos & ~RB_POS_CLOCK);
	return atomic_load_explicit(&rb_tls.pos, RB_POS_ORDER);
}

/* Both rare writers share this: one or two slots, then the usual advance. */
NO_INSTR static void put(uintptr_t pos, uint64_t payload, uint32_t low, int nslots)
{
	if (nslots == 2 && !(pos = room_for_two(pos)))
		return;
	uintptr_t mode = pos & RB_POS_CLOCK, p = pos & ~RB_POS_CLOCK;
	uint64_t ts = now(uses_clock(pos));
	if (nslots == 2) {
		if (low != RB_WIDE)
			payload = rb_special_payload(ts, (uint32_t)payload);
		rb_store(p, payload);
		p += 8; /* may be the spare slot: see settle() */
	}
	rb_store(p, rb_tag(ts, low));
	p += 8;
	if (p >= atomic_load_explicit(&rb_tls.limit, memory_order_relaxed))
		settle(p);
	else
		atomic_store_explicit(&rb_tls.pos, p | mode, memory_order_relaxed);
}

NO_INSTR void rb_put2(uint64_t payload, uint32_t low)
{
	uintptr_t pos = atomic_load_explicit(&rb_tls.pos, RB_POS_ORDER);
	if (pos)
		put(pos, payload, low, 2);
}

RARE void rb_put_wide(uintptr_t fn)
{
	rb_put2(fn, RB_WIDE);
}

/*
 * A counted call's record (record.h, RB_CALLED; word: rb_called_word) at the position due
 * to be timed (sleds' sampled time): the timer read, the record, and the next due
 * 1..RB_SAMPLED_GAP_MAX records on, from the counter's bits 6..11 as rb_point_sampled takes
 * them.
 */
RARE void rb_put_called(uint32_t id, uint32_t word)
{
	uintptr_t pos = atomic_load_explicit(&rb_tls.pos, RB_POS_ORDER);
	if (!pos || !(pos = room_for_two(pos)))
		return;
	uintptr_t mode = pos & RB_POS_CLOCK, p = pos & ~RB_POS_CLOCK;
	uint64_t ts = now(uses_clock(pos));
	rb_store(p, (uint64_t)word << 32 | id);
	rb_store(p + 8, rb_tag(ts, RB_CALLED)); /* may be the spare slot: see settle() */
	p += 16;
	uintptr_t limit = atomic_load_explicit(&rb_tls.limit, memory_order_relaxed);
	if (p >= limit) {
		settle(p);
		return;
	}
	uintptr_t due = p + 8 * ((ts >> 6) % RB_SAMPLED_GAP_MAX);
	atomic_store_explicit(&rb_tls.due, due < limit ? due : limit, memory_order_relaxed);
	atomic_store_explicit(&rb_tls.pos, p | mode, memory_order_relaxed);
}

RARE void rb_put1_rare(uintptr_t low)
{
	uintptr_t pos = atomic_load_explicit(&rb_tls.pos, RB_POS_ORDER);
	if (pos)
		put(pos, 0, (uint32_t)low, 1);
}

/*
 * The entry and exit of a function in an instrumented shared library (hooks_dso.c): a
 * wide entry with its absolute address, which the trace file's module table maps back to
 * {module, offset}. Out of line and exported (libjitt.ldflags names them with
 * --export-dynamic-symbol), so a library loaded by dlopen finds them too.
 */
__attribute__((visibility("default"))) NO_INSTR void rb_dso_enter(void *fn)
{
	rb_put_wide((uintptr_t)fn);
}

__attribute__((visibility("default"))) NO_INSTR void rb_dso_exit(void)
{
	rb_put1_rare(RB_EXIT);
}

/* ---- registration ---- */

struct main_module {
	uintptr_t bias, top;
	uintptr_t text_lo, text_hi; /* its executable segments, absolute */
};

NO_INSTR static int find_main(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct main_module *m = arg;
	m->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (hi > m->top)
			m->top = hi;
		if ((ph->p_flags & PF_X) && (!m->text_lo || lo < m->text_lo))
			m->text_lo = lo;
		if ((ph->p_flags & PF_X) && hi > m->text_hi)
			m->text_hi = hi;
	}
	return 1; /* the first module is the main program */
}

NO_INSTR static struct main_module main_module(void)
{
	struct main_module m = { 0, 0, 0, 0 };
	dl_iterate_phdr(find_main, &m);
	return m;
}

NO_INSTR uintptr_t rb_main_bias(void)
{
	return main_module().bias;
}

/* Whether another ring may be registered now. Under the lock. */
NO_INSTR static int free_slot_locked(void)
{
	int slot = -1, used = 0;
	for (int i = 0; i < RB_RING_TABLE; i++) {
		used += rings[i] != NULL;
		if (!rings[i] && slot < 0)
			slot = i;
	}
	return used < max_threads ? slot : -1;
}

NO_INSTR static void unregister_locked(struct rb_ring *r)
{
	for (int i = 0; i < RB_RING_TABLE; i++)
		if (rings[i] == r)
			rings[i] = NULL;
	if (r->populate_busy) {
		r->dead = true; /* rb_rings_populate unmaps it */
		return;
	}
	munmap((void *)r->slots, (r->nslots + 1) * 8);
	free(r);
}

/* A thread that exits with a ring gives it back. */
NO_INSTR static void on_thread_exit(void *arg)
{
	(void)arg;
	rb_thread_unregister();
}

NO_INSTR static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

NO_INSTR int rb_thread_register(const char *name)
{
	if (rb_tls.ring)
		return -EALREADY;
#if UINTPTR_MAX > 0xffffffffu
	struct main_module m = main_module();
	/* rb_enter() records the low half of an address: the decoder finds the whole one
	 * only for a program whose virtual addresses stay below 4 GiB (trace.h). */
	if (m.top - m.bias > 0xffffffffu)
		return -ERANGE;
#endif
	pthread_once(&exit_key_once, make_exit_key);
	/* Refuse before mapping and touching megabytes; checked again below, under the same
	 * lock that adds the ring. */
	pthread_mutex_lock(&lock);
	int slot = free_slot_locked();
	pthread_mutex_unlock(&lock);
	if (slot < 0)
		return -EBUSY;

	struct rb_ring *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&lock);
	r->nslots = ring_slots;
	pthread_mutex_unlock(&lock);
	/* Not populated here: faulting in 4 MiB took 1 to 3.7 ms, in the app's own thread and,
	 * for the main thread, before main() (a traced duktape's start-up: 6 ms of CPU against
	 * 1). The control thread prefaults it soon after (rb_rings_populate); until then a
	 * trace point may take a page's first fault, one per 512 records of the first lap. */
	void *mem = mmap(NULL, (r->nslots + 1) * 8, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		free(r);
		return -ENOMEM;
	}
	r->slots = mem;
	r->end = (uintptr_t)mem + r->nslots * 8;
	r->tls = &rb_tls;
	r->tid = (pid_t)syscall(SYS_gettid);
	struct main_module code = main_module();
	r->text_lo = code.text_lo;
	r->text_hi = code.text_hi;
	if (rb_stack_top(&r->stack_top) != 0)
		r->stack_top = 0; /* no outer frames for this thread */
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "");

	pthread_mutex_lock(&lock);
	slot = free_slot_locked();
	if (slot < 0) {
		pthread_mutex_unlock(&lock);
		munmap(mem, (r->nslots + 1) * 8);
		free(r);
		return -EBUSY;
	}
	rings[slot] = r;
	atomic_store_explicit(&rb_tls.pos, 0, memory_order_relaxed);
	rb_tls.ring = r;
	atomic_store_explicit(&rb_tls.limit, running_limit(r), memory_order_relaxed);
	pthread_mutex_unlock(&lock);
	pthread_setspecific(exit_key, r);
	return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels say EINVAL */
#endif
/* Prefaulted per call, without the lock: the control thread runs at the lowest priority,
 * and an app thread starting or stopping its tracing must never wait for it (holding the
 * lock through a chunk, the main thread waited up to 2 ms for it before main()). */
#define POPULATE_CHUNK (256u << 10)

NO_INSTR bool rb_rings_populate(void)
{
	struct rb_ring *r = NULL;
	uint64_t at = 0, n = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < RB_RING_TABLE && !r; i++) {
		uint64_t bytes = rings[i] ? (rings[i]->nslots + 1) * 8 : 0;
		if (rings[i] && rings[i]->populated < bytes) {
			r = rings[i];
			at = r->populated;
			n = bytes - at < POPULATE_CHUNK ? bytes - at : POPULATE_CHUNK;
			r->populate_busy = true;
		}
	}
	pthread_mutex_unlock(&lock);
	if (!r)
		return false;
	/* Faults the pages in writable without writing them: the owner may be writing
	 * records there already. Where the kernel cannot, the first lap faults instead. */
	bool done = madvise((char *)r->slots + at, n, MADV_POPULATE_WRITE) != 0;
	pthread_mutex_lock(&lock);
	r->populated = done ? (r->nslots + 1) * 8 : at + n;
	r->populate_busy = false;
	if (r->dead) { /* given back meanwhile */
		munmap((void *)r->slots, (r->nslots + 1) * 8);
		free(r);
	}
	pthread_mutex_unlock(&lock);
	return true;
}

NO_INSTR int rb_thread_unregister(void)
{
	struct rb_ring *r = rb_tls.ring;
	if (!r)
		return -ENOENT;
	pthread_mutex_lock(&lock);
	/* This thread is the writer: turning itself off needs no handshake. */
	atomic_store_explicit(&rb_tls.pos, 0, memory_order_relaxed);
	rb_tls.ring = NULL;
	unregister_locked(r);
	pthread_mutex_unlock(&lock);
	pthread_setspecific(exit_key, NULL);
	return 0;
}

NO_INSTR int rb_thread_set_name(const char *name)
{
	struct rb_ring *r = rb_tls.ring;
	if (!r)
		return -ENOENT;
	pthread_mutex_lock(&lock);
	snprintf(r->name, sizeof(r->name), "%s", name);
	pthread_mutex_unlock(&lock);
	return 0;
}

NO_INSTR void rb_lock(void)
{
	pthread_mutex_lock(&lock);
}

NO_INSTR void rb_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

NO_INSTR int rb_rings(struct rb_ring **out, int max)
{
	int n = 0;
	for (int i = 0; i < RB_RING_TABLE && n < max; i++)
		if (rings[i])
			out[n++] = rings[i];
	return n;
}

NO_INSTR int rb_set_ring_bytes(uint64_t bytes)
{
	if (bytes < RB_RING_MIN_BYTES || bytes > RB_RING_MAX_BYTES || (bytes & (bytes - 1)))
		return -EINVAL;
	pthread_mutex_lock(&lock);
	ring_slots = bytes / 8;
	pthread_mutex_unlock(&lock);
	return 0;
}

NO_INSTR uint64_t rb_ring_bytes(void)
{
	pthread_mutex_lock(&lock);
	uint64_t bytes = ring_slots * 8;
	pthread_mutex_unlock(&lock);
	return bytes;
}

NO_INSTR int rb_set_max_threads(int n)
{
	if (n < 1 || n > RB_RING_TABLE)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	max_threads = n;
	pthread_mutex_unlock(&lock);
	return 0;
}

/* ---- start and stop (Hubble Fig. 4), from the control thread ---- */

/* Once a stop is asked (limit 0), only the owner writes limit, and only its answer. */
NO_INSTR static bool answered(const struct rb_ring *r, uintptr_t limit)
{
	(void)r;
	return limit != 0;
}

NO_INSTR pid_t rb_ring_tid(const struct rb_ring *r)
{
	return r->tid;
}

NO_INSTR const char *rb_ring_name(const struct rb_ring *r)
{
	return r->name;
}

NO_INSTR bool rb_ring_on(const struct rb_ring *r)
{
	return r->state != RB_OFF;
}

NO_INSTR int rb_start(struct rb_ring *r)
{
	struct rb_tls *t = r->tls;
	if (r->state == RB_RUNNING)
		return 0;
	if (r->state == RB_STOP_PENDING) {
		if (!answered(r, atomic_load_explicit(&t->limit, memory_order_acquire)))
			return -EBUSY;
		r->state = RB_OFF;
	}
	/* The thread is off (pos == 0) and does not touch its ring: the ring and laps are
	 * ours until pos is published. */
#if defined(RB_CLOCK_ONLY)
	r->clock = true;
#elif defined(RB_COUNTER_ONLY)
	r->clock = false;
#else
	/* The HAL's published choice, the one hal_timer_now() follows (tests flip it). */
	hal_timer_init();
	r->clock = atomic_load_explicit(&hal_timer_use_clock, memory_order_relaxed);
#endif
	uintptr_t mode = r->clock ? RB_POS_CLOCK : 0;
	atomic_store_explicit(&r->laps, 0, memory_order_relaxed);
	uintptr_t p = write_sync((uintptr_t)r->slots, now(r->clock), 0);
	atomic_store_explicit(&t->limit, running_limit(r), memory_order_relaxed);
	/* Sampled time: the first record timed, and no due left from another ring (the untimed
	 * path trusts due to lie inside this one). */
	atomic_store_explicit(&t->due, 0, memory_order_relaxed);
	/* Release: the sync record and the limit are visible before the thread sees pos. A
	 * thread that still sees an old answer in limit just takes the slow path once, which
	 * treats anything but 0 as "keep going". */
	atomic_store_explicit(&t->pos, p | mode, memory_order_release);
	r->state = RB_RUNNING;
	return 0;
}

NO_INSTR static void freeze_in_place(const struct rb_ring *r, uintptr_t end, struct rb_frozen *out)
{
	uint32_t laps = atomic_load_explicit(&r->laps, memory_order_relaxed);
	out->slots = (const uint64_t *)r->slots;
	out->end = (end - (uintptr_t)r->slots) / 8;
	out->valid = laps ? r->nslots : out->end;
	out->laps = laps;
	out->copied = false;
	out->stack = r->stack;
	out->nstack = r->nstack;
}

NO_INSTR static void nap_us(long us)
{
	struct timespec ts = { 0, us * 1000 };
	nanosleep(&ts, NULL);
}

/*
 * The outer frames of a thread that did not answer because it is blocked in a wrapped wait
 * (agent/runtime/wrap.c notes where its stack stood): its stack from there up does not
 * change while it waits, so the control thread may scan it, and keeps what it found only
 * if the thread was still in the same wait afterwards. A thread busy without a trace point
 * has none.
 */
NO_INSTR static void blocked_stack(struct rb_ring *r, struct rb_frozen *out)
{
	struct rb_tls *t = r->tls;
	uint32_t ended = atomic_load_explicit(&t->waits_ended, memory_order_acquire);
	uintptr_t sp = atomic_load_explicit(&t->wait_sp, memory_order_acquire);
	out->stack = r->copy_stack;
	out->nstack = 0;
	if (!sp || sp >= r->stack_top)
		return;
	size_t n = rb_stack_scan(sp, r->stack_top, r->text_lo, r->text_hi, r->copy_stack,
				 RB_STACK_MAX);
	if (atomic_load_explicit(&t->waits_ended, memory_order_acquire) == ended &&
	    atomic_load_explicit(&t->wait_sp, memory_order_acquire) == sp)
		out->nstack = (uint32_t)n;
}

/*
 * The thread did not answer: copy its ring while it may be writing. Whatever it wrote
 * during the copy lies between the position read before and the one read after (plus one
 * record in flight, at most two slots): those slots held the oldest data and may be torn,
 * so they are left out. Everything else is whole, and older than the first position.
 * With max under the ring's size, only the newest max slots are copied, in order, into a
 * copy of that many (their end is its end: index 0).
 */
NO_INSTR static int validated_copy(struct rb_ring *r, struct rb_frozen *out, uint64_t max,
				   uint64_t *into)
{
	struct rb_tls *t = r->tls;
	const uint64_t nslots = r->nslots, n = max < nslots ? max : nslots;
	uint64_t *copy = into ? into : malloc(n * 8);
	if (!copy)
		return -ENOMEM;
	for (int attempt = 0; attempt < 3; attempt++) {
		uintptr_t p1 = atomic_load_explicit(&t->pos, memory_order_acquire) & ~RB_POS_CLOCK;
		uint32_t laps1 = atomic_load_explicit(&r->laps, memory_order_acquire);
		if (!p1)
			break; /* it answered meanwhile: the caller freezes in place */
		uint64_t i1 = (p1 - (uintptr_t)r->slots) / 8;
		for (uint64_t i = 0, from = n == nslots ? 0 : i1 + nslots - n; i < n; i++)
			copy[i] = atomic_load_explicit(&r->slots[(from + i) % nslots],
						       memory_order_relaxed);
		uintptr_t p2 = atomic_load_explicit(&t->pos, memory_order_acquire) & ~RB_POS_CLOCK;
		uint32_t laps2 = atomic_load_explicit(&r->laps, memory_order_acquire);
		if (!p2)
			break;
		uint64_t i2 = (p2 - (uintptr_t)r->slots) / 8;
		uint64_t moved = (uint64_t)(laps2 - laps1) * nslots + i2 - i1;
		if (laps2 - laps1 > 1 || moved + 2 >= nslots)
			continue; /* it lapped the copy: try again */
		uint64_t before = laps1 ? nslots : i1;
		if (n < nslots) { /* the newest n: spoiled only where the writer came round */
			uint64_t spoiled = moved + 2 > nslots - n ? moved + 2 - (nslots - n) : 0;
			before = before < n ? before : n;
			out->nslots = n;
			out->end = 0; /* after the last slot: the copy holds no older ones */
			out->valid = before > spoiled ? before - spoiled : 0;
		} else {
			uint64_t spoiled = laps1 || laps2 != laps1 || i2 + 2 > nslots ?
						   moved + 2 /* the oldest slots were overwritten */
						   : 0;
			out->end = i1;
			out->valid = before > nslots - spoiled ? nslots - spoiled : before;
			blocked_stack(r, out);
		}
		out->slots = copy;
		out->copy = into ? NULL : copy;
		out->laps = laps1;
		out->copied = true;
		return 0;
	}
	if (!into)
		free(copy);
	return atomic_load_explicit(&t->pos, memory_order_acquire) ? -EAGAIN : -EINPROGRESS;
}

/* The ring answered (or never will): freeze what it holds. 0, or an error of the copy. */
NO_INSTR static int finish_stop(struct rb_ring *r, bool answered_now, struct rb_frozen *out)
{
	struct rb_tls *t = r->tls;
	if (answered_now) {
		out->frozen_ticks = hal_timer_now();
		freeze_in_place(r, atomic_load_explicit(&t->limit, memory_order_acquire), out);
		r->state = RB_OFF;
		return 0;
	}
	int err = validated_copy(r, out, UINT64_MAX, NULL);
	/* A copied thread was still inside its open calls (blocked, or busy without a trace
	 * point) when the copy was validated: they ran at least until now. */
	out->frozen_ticks = hal_timer_now();
	if (err == -EINPROGRESS) {
		/* It is answering: pos went 0, and the answer follows in limit. Seen, the
		 * ring freezes in place; not yet (the thread between its two stores), the
		 * stop stays pending below, so that no later stop asks again over the answer
		 * and rb_start waits for it. */
		uintptr_t limit = atomic_load_explicit(&t->limit, memory_order_acquire);
		if (answered(r, limit)) {
			freeze_in_place(r, limit, out);
			r->state = RB_OFF;
			return 0;
		}
		err = -EAGAIN;
	}
	/* The stop stays asked whether or not the copy worked: the thread answers at its next
	 * trace point, and only rb_start may then turn it on again. (A failed copy that left
	 * the ring RB_RUNNING used to lose it for good: the thread answered, rb_start saw a
	 * running ring and did nothing, and every later stop found it off.) */
	r->state = RB_STOP_PENDING;
	return err;
}

NO_INSTR int rb_stop_many(struct rb_ring **rs, int n, unsigned wait_ms, struct rb_frozen *out,
			  int *errs)
{
	int failures = 0;
	/* Ask them all first, so they freeze at nearly the same moment and the waits overlap. */
	for (int i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].nslots = rs[i]->nslots;
		out[i].tid = rs[i]->tid;
		memcpy(out[i].name, rs[i]->name, sizeof(out[i].name));
		/* A ring whose stop is still pending from an earlier copy is stopped again
		 * too: its thread has written nothing since, or has answered; it is not asked
		 * again (limit may hold its answer). Leaving it out made a persist with all
		 * threads still blocked since the last one find no thread at all. */
		errs[i] = rs[i]->state == RB_OFF ? -EINVAL : 1 /* waiting */;
		if (rs[i]->state == RB_RUNNING)
			atomic_store_explicit(&rs[i]->tls->limit, 0, memory_order_relaxed);
	}
	/* Poll for the answers, as Hubble's control thread does (Fig. 4, lines 4-5): at first
	 * quickly, a busy thread answers within microseconds. */
	uint64_t waited_us = 0;
	for (long step = 20;; step = step < 1000 ? step * 2 : 1000) {
		int waiting = 0;
		for (int i = 0; i < n; i++) {
			if (errs[i] != 1)
				continue;
			uintptr_t limit = atomic_load_explicit(&rs[i]->tls->limit,
							       memory_order_acquire);
			if (answered(rs[i], limit))
				errs[i] = finish_stop(rs[i], true, &out[i]);
			else
				waiting++;
		}
		if (!waiting || waited_us >= (uint64_t)wait_ms * 1000)
			break;
		nap_us(step);
		waited_us += (uint64_t)step;
	}
	/* The rest did not reach a trace point in time (blocked in a system call). */
	for (int i = 0; i < n; i++) {
		if (errs[i] == 1)
			errs[i] = finish_stop(rs[i], false, &out[i]);
		failures += errs[i] != 0;
	}
	return failures;
}

NO_INSTR int rb_stop(struct rb_ring *r, unsigned wait_ms, struct rb_frozen *out)
{
	int err;
	rb_stop_many(&r, 1, wait_ms, out, &err);
	return err;
}

NO_INSTR int rb_peek_newest_into(struct rb_ring *r, uint64_t max, uint64_t *buf,
				 struct rb_frozen *out)
{
	memset(out, 0, sizeof(*out));
	out->nslots = r->nslots;
	out->tid = r->tid;
	memcpy(out->name, r->name, sizeof(out->name));
	if (r->state != RB_RUNNING)
		return -EINVAL;
	int err = validated_copy(r, out, max, buf);
	out->frozen_ticks = hal_timer_now();
	return err == -EINPROGRESS ? -EAGAIN : err; /* stopping itself meanwhile */
}

NO_INSTR int rb_peek_newest(struct rb_ring *r, uint64_t max, struct rb_frozen *out)
{
	return rb_peek_newest_into(r, max, NULL, out);
}

NO_INSTR void rb_frozen_release(struct rb_frozen *f)
{
	free(f->copy);
	f->copy = NULL;
	f->slots = NULL;
}

NO_INSTR int rb_scratch_begin(uint64_t *slots, size_t nslots)
{
	struct rb_tls *t = &rb_tls;
	if (t->ring || atomic_load_explicit(&t->pos, memory_order_relaxed))
		return -EBUSY;
#if defined(RB_CLOCK_ONLY)
	return -ENOTSUP;
#elif !defined(RB_COUNTER_ONLY)
	hal_timer_init();
	if (atomic_load_explicit(&hal_timer_use_clock, memory_order_relaxed))
		return -ENOTSUP;
#endif
	if (nslots < 4)
		return -EINVAL;
	/* As rb_start, with the counter: limit one slot short of the end, due 0, then pos. */
	uintptr_t end = (uintptr_t)(slots + nslots);
	atomic_store_explicit(&t->limit, end - RB_LIMIT_SLACK, memory_order_relaxed);
	atomic_store_explicit(&t->due, 0, memory_order_relaxed);
	atomic_store_explicit(&t->pos, (uintptr_t)slots, memory_order_release);
	return 0;
}

NO_INSTR void rb_scratch_end(void)
{
	struct rb_tls *t = &rb_tls;
	atomic_store_explicit(&t->pos, 0, memory_order_relaxed);
	atomic_store_explicit(&t->limit, 0, memory_order_relaxed);
	atomic_store_explicit(&t->due, 0, memory_order_relaxed);
}

NO_INSTR int rb_trace_self(bool on)
{
	if (!rb_tls.ring) {
		if (!on)
			return 0;
		int err = rb_thread_register(NULL);
		if (err)
			return err;
	}
	struct rb_ring *r = rb_tls.ring;
	pthread_mutex_lock(&lock);
	int err = 0;
	if (on) {
		err = rb_start(r);
	} else if (r->state != RB_OFF) {
		/* The writer stops itself: no handshake needed. */
		atomic_store_explicit(&rb_tls.pos, 0, memory_order_relaxed);
		atomic_store_explicit(&rb_tls.limit, running_limit(r), memory_order_relaxed);
		r->state = RB_OFF;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* Slots written since r last started, from its owner's pos as t holds it (0: off). */
NO_INSTR static uint64_t records(const struct rb_ring *r, const struct rb_tls *t)
{
	uintptr_t p = atomic_load_explicit(&t->pos, memory_order_relaxed) & ~RB_POS_CLOCK;
	if (!r || !p)
		return 0;
	/* Each lap holds a sync record (2 slots) and nslots - 2 others. */
	uint64_t laps = atomic_load_explicit(&r->laps, memory_order_relaxed);
	return laps * (r->nslots - 2) + (p - (uintptr_t)r->slots) / 8 - 2;
}

NO_INSTR uint64_t rb_self_records(void)
{
	return records(rb_tls.ring, &rb_tls);
}

NO_INSTR uint64_t rb_ring_records(const struct rb_ring *r)
{
	return records(r, r->tls);
}

NO_INSTR bool rb_ring_own(const uint64_t **slots, uint64_t *nslots, uint32_t *laps)
{
	const struct rb_ring *r = rb_tls.ring;
	if (!r)
		return false;
	*slots = (const uint64_t *)r->slots;
	*nslots = r->nslots;
	*laps = atomic_load_explicit(&r->laps, memory_order_relaxed);
	return true;
}

/* The rare paths' register-preserving stubs (trace.h, RB_RARE): in this object, not one of
 * their own, for the reason stubs.h gives. */
#include "ringbuf/stubs.h"
