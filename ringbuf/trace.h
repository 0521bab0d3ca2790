/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/trace.h - the trace point: what runs at every function entry and exit.
 *
 * Each traced thread owns a ring of 8-byte slots (record.h) and two shared control words
 * in its thread-local block, Hubble's start and stop (section 6, Fig. 4):
 *
 *   pos    Hubble's start. 0: tracing is off for this thread. Otherwise the address of
 *          the next free slot (bit 0 set: timestamps come from clock_gettime, see below).
 *          Written by the traced thread at every trace point; by the control thread only
 *          while it is 0 (to start).
 *   limit  Hubble's stop. The ring's end address while tracing runs; 0 when the control
 *          thread asks the thread to stop; the end position (an address inside the ring)
 *          once the traced thread has stopped itself. Written by the control thread only
 *          to ask (0) and to restart (end), by the traced thread only to answer.
 *
 * The trace point (on: one timer read, one 8-byte store, the advance, one compare):
 *
 *     p = pos; if (!p) return;               off: one thread-local load and a branch
 *     *p++ = ts32 << 32 | id;                the record
 *     if (p >= limit) slow(p); else pos = p; the wrap and the stop check, in one compare
 *
 * One compare serves both: limit is the ring's end, so p reaches it only when the ring
 * wraps; a stop request sets limit to 0, so every p is past it and the next trace point
 * takes the slow path, which answers with the exact end position (a two-slot record is
 * never cut) and turns tracing off.
 *
 * Why this shape (bench-trace, Hubble's Listing 1, work 0, x86_64 VM, medians, ns per
 * trace point over the uninstrumented build; the "alt" variants are in
 * tests/bench_listing1_plain.c):
 *   this design             on 8.66   off 0.40
 *   mask that wraps and     on 8.52   off 8.39  (funtrace: no off branch, but "off" still
 *     disables                                   reads the timer and stores)
 *   NULL + end compare +    on 8.50   off 0.14  (the same off path, written by hand in an
 *     separate stop flag                         uninstrumented function; one more load,
 *                                                compare and branch when on)
 *   physical limit          on 8.04             (timer read + one store, masked index)
 * On x86 the timer read (rdtsc, ~8 ns here) hides the differences when tracing is on, so
 * the choice rests on the off cost, which rules out the mask, and on the instruction
 * count (tests/count-trace-insns.sh), where one compare instead of two saves two
 * instructions per trace point. A guard page at the ring's end would save the compare but
 * needs a signal handler on the hot path's wrap, which a library cannot own safely.
 *
 * Every access to the control words and the slots is a relaxed C11 atomic, which compiles
 * to plain loads and stores on ARM and x86: no lock, no read-modify-write, no undefined
 * behaviour, and the control thread may read a running ring (the validated copy).
 */
#ifndef JITT_RINGBUF_TRACE_H
#define JITT_RINGBUF_TRACE_H

#include "hal/timer.h"
#include "ringbuf/record.h"

#include <stdatomic.h>
#include <stdint.h>

struct rb_ring;

struct rb_tls {
	_Atomic uintptr_t pos;   /* Hubble's start */
	_Atomic uintptr_t limit; /* Hubble's stop */
	uintptr_t bias;          /* the main program's load bias (PIE); 0 for a fixed address */
	struct rb_ring *ring;    /* the control side's descriptor; NULL when not registered */
};

/* A fixed offset from the thread pointer: local-exec in the executable (code that is not
 * PIC, or PIE), initial-exec in a shared library; never a __tls_get_addr call. */
#if defined(__PIC__) && !defined(__PIE__)
#define RB_TLS_MODEL "initial-exec"
#else
#define RB_TLS_MODEL "local-exec"
#endif
extern __thread struct rb_tls rb_tls __attribute__((tls_model(RB_TLS_MODEL)));

/*
 * The rare path: wrap (with a sync record) or stop. Never inlined. These two live in
 * ring.c, which includes this header, while this header's inline trace point calls them:
 * one module split in two on purpose, the few instructions inlined into every traced
 * function here, everything cold out of line beside the ring's other code.
 */
void rb_slow_path(uintptr_t p) __attribute__((cold, noinline));
/* A wide entry (id beyond 32 bits) or a special record: two slots. Never inlined. */
void rb_put2(uint64_t payload, uint32_t low) __attribute__((noinline));

/*
 * The three memory accesses of the hot path. Relaxed C11 atomics, except where GCC 12
 * makes them cost more than the plain load or store they are: on aarch64 it gives atomics
 * only a bare base register (the "Q" constraint), so the limit load costs an extra add and
 * the slot store cannot post-increment; on x86_64 it reads a member of a thread-local
 * struct through its address. There the same plain LDR/STR/MOV are written as asm, which
 * is outside the C memory model (so no data race) and lets the slot store advance p as
 * Hubble's STRD does (section 5.1.3): 2 instructions fewer per trace point on each, counted
 * by tests/count-trace-insns.sh. ThreadSanitizer builds keep the C atomics it can see.
 */
RB_INLINE uintptr_t rb_load_limit(void)
{
#if defined(__aarch64__) && !defined(__SANITIZE_THREAD__)
	uintptr_t v;
	__asm__ __volatile__("ldr %x0, %1" : "=r"(v) : "m"(rb_tls.limit));
	return v;
#elif defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	/* GCC 12 reads an atomic member of a thread-local struct through its address
	 * (%fs:0, add, load): one MOV %fs:off instead. */
	uintptr_t v;
	__asm__ __volatile__("mov %1, %0" : "=r"(v) : "m"(rb_tls.limit));
	return v;
#else
	return atomic_load_explicit(&rb_tls.limit, memory_order_relaxed);
#endif
}

/* Store a record at p and return p advanced by one slot. */
RB_INLINE uintptr_t rb_store_next(uintptr_t p, uint64_t rec)
{
#if defined(__aarch64__)
	__asm__ __volatile__("str %x[v], [%x[p]], #8"
			     : [p] "+r"(p), "=m"(*(uint64_t *)p)
			     : [v] "r"(rec));
	return p;
#elif UINTPTR_MAX > 0xffffffffu
	atomic_store_explicit((_Atomic uint64_t *)p, rec, memory_order_relaxed);
	return p + 8;
#else
	/* A 64-bit relaxed atomic store is an LDREXD/STREXD loop on ARMv7; Hubble's one STRD
	 * (section 5.1.3), post-incrementing, is what we want. */
	__asm__ __volatile__("strd %[v], %H[v], [%[p]], #8"
			     : [p] "+r"(p), "=m"(*(uint64_t *)p)
			     : [v] "r"(rec));
	return p;
#endif
}

/* One 8-byte store of a record into the slot at p (the rare paths). */
RB_INLINE void rb_store(uintptr_t p, uint64_t rec)
{
	(void)rb_store_next(p, rec);
}

/*
 * Where the timer comes from, decided once per start: the hardware counter, read inline,
 * or (when the HAL's probe fell back, e.g. armv7 under qemu-user) clock_gettime, which
 * the out-of-line rb_put1_clock() reads. The choice is bit 0 of pos, which is otherwise
 * always clear (slots are 8-byte aligned): one bit test on the hot path instead of a load
 * and compare of the HAL's flag (5 aarch64 instructions, measured in the disassembly).
 */
#define RB_POS_CLOCK ((uintptr_t)1)
#if defined(CONFIG_HAL_TIMER_CLOCK) || !HAL_HAVE_COUNTER
#define RB_CLOCK_ONLY 1
#elif defined(CONFIG_HAL_TIMER_COUNTER)
#define RB_COUNTER_ONLY 1
#endif

void rb_put1_clock(uintptr_t low) __attribute__((cold, noinline));

/*
 * The traced thread writes into the ring only at addresses it got from pos, which the
 * control thread publishes with a release store after it is done reading the ring: the
 * writes carry an address dependency on that load, which orders them after it on every
 * CPU we run on (what C11 calls consume). C11 has no usable consume, so ThreadSanitizer,
 * which cannot see dependencies, gets acquire: on x86, where it runs, that is the same
 * plain MOV.
 */
#if defined(__SANITIZE_THREAD__)
#define RB_POS_ORDER memory_order_acquire
#else
#define RB_POS_ORDER memory_order_relaxed
#endif

/* Write a one-slot record whose low half is `low` (below 2^32: callers make sure, so the
 * value needs no zero-extension on the hot path). */
RB_INLINE void rb_put1(uintptr_t low)
{
	uintptr_t p = atomic_load_explicit(&rb_tls.pos, RB_POS_ORDER);
	if (!p)
		return;
#if defined(RB_CLOCK_ONLY)
	rb_put1_clock(low);
#else
#if !defined(RB_COUNTER_ONLY)
	if (__builtin_expect(p & RB_POS_CLOCK, 0)) {
		rb_put1_clock(low);
		return;
	}
#endif
	p = rb_store_next(p, hal_counter_read() << 32 | low);
	if (__builtin_expect(p >= rb_load_limit(), 0))
		rb_slow_path(p);
	else
		atomic_store_explicit(&rb_tls.pos, p, memory_order_relaxed);
#endif
}

/*
 * The function id of an entry. A non-PIC build is linked at a fixed address below 4 GiB
 * (checked when a thread is registered), so the address itself is the id and needs no
 * arithmetic. PIC/PIE code subtracts the load bias and falls back to a wide entry when the
 * result does not fit (a function of a shared library).
 */
RB_INLINE void rb_enter(void *fn)
{
#if UINTPTR_MAX > 0xffffffffu && (defined(__PIC__) || defined(__PIE__))
	uintptr_t id = (uintptr_t)fn - rb_tls.bias;
	if (__builtin_expect(id > 0xffffffffu, 0)) {
		if (atomic_load_explicit(&rb_tls.pos, memory_order_relaxed))
			rb_put2((uintptr_t)fn, RB_WIDE);
		return;
	}
	rb_put1(id);
#else
	rb_put1((uintptr_t)fn); /* below 4 GiB: rb_thread_register checked */
#endif
}

RB_INLINE void rb_exit(void)
{
	rb_put1(RB_EXIT);
}

/* A special record (record.h): mark, wait-begin, wait-end, wake. */
RB_INLINE void rb_special(enum rb_kind kind, uint32_t arg)
{
	if (atomic_load_explicit(&rb_tls.pos, memory_order_relaxed))
		rb_put2(arg, kind);
}

#endif
