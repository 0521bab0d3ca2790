/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/trace.h - the trace point: what runs at every function entry and exit.
 *
 * Each traced thread owns a ring of 8-byte slots (record.h) and two shared control words
 * in its thread-local block, Hubble's start and stop (section 6, Fig. 4):
 *
 *   pos    Hubble's start. 0: tracing is off for this thread. Otherwise the address of
 *          the next free slot (on ARM, with RB_POS_CLOCK set when timestamps come from
 *          clock_gettime: see "the clock" below). Written by the traced thread at every
 *          trace point; by the control thread only while it is 0 (to start).
 *   limit  Hubble's stop. While tracing runs, the ring's end address (x86_64: one slot
 *          before it, or RB_LIMIT_CLOCK); 0 when the control thread asks the thread to
 *          stop; the end position (an address inside the ring) once the traced thread has
 *          stopped itself. Written by the control thread only to ask (0) and to restart,
 *          by the traced thread only to answer.
 *
 * The trace point (on: one timer read, one 8-byte record, the advance, one compare), on ARM:
 *
 *     p = pos; if (!p) return;               off: one thread-local load and a branch
 *     *p++ = ts32 << 32 | id;                the record
 *     if (p >= limit) slow(p); else pos = p; the wrap and the stop check, in one compare
 *
 * One compare serves both: limit is the ring's end, so p reaches it only when the ring
 * wraps; a stop request sets limit to 0, so every p is past it and the next trace point
 * takes the slow path, which answers with the exact end position (a two-slot record is
 * never cut) and turns tracing off. On x86_64 the compare comes first, before the timer
 * is read, and the advance is one ADD to memory (see RB_LIMIT_FIRST).
 *
 * Why this shape: on x86_64 the timer read (rdtsc, about 8 ns) hides every difference
 * between designs while tracing is on, and all of them cost a fraction of a nanosecond when
 * off, so the choice rests on what the stop needs and on instructions. funtrace's mask (a
 * ring aligned to twice its size, a mask of 0 as "off") costs the same but cannot answer a
 * stop: the control thread never learns where the writer stopped, nor when. A NULL test,
 * an end compare and a separate stop flag cost a load, a compare and a branch more. The
 * same-run figures, with the alternatives modelled in tests/bench_listing1_plain.c, are in
 * docs/ringbuf.md ("Why this shape"); tests/count-trace-insns.sh counts the instructions.
 * A guard page at the ring's end would save the compare but needs a signal handler on the
 * hot path's wrap, which a library cannot own safely.
 *
 * Every access to the control words and the slots is a relaxed C11 atomic, or the plain
 * instruction one compiles to written as asm: no lock, no locked read-modify-write, no
 * undefined behaviour, and the control thread may read a running ring (the validated copy).
 *
 * Not reentrant: a signal handler compiled with -finstrument-functions that interrupts a
 * trace point of its own thread spoils a record or two of that thread's ring. Everywhere,
 * as before the trace point lost a third of its instructions (docs/ringbuf.md): the
 * interrupted record or the handler's entry is overwritten, which can leave an entry
 * without its exit. On x86_64, where the advance is an ADD to pos, also a slot skipped with
 * what an earlier lap left there (the handler's records moved pos on before the interrupted
 * trace point added its 8). Exclude such handlers from instrumentation, or keep them off
 * traced threads.
 */
#ifndef JITT_RINGBUF_TRACE_H
#define JITT_RINGBUF_TRACE_H

#include "hal/timer.h"
#include "ringbuf/record.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct rb_ring;

struct rb_tls {
	_Atomic uintptr_t pos;   /* Hubble's start */
	_Atomic uintptr_t limit; /* Hubble's stop */
	/* Sampled time (RB_TIME_SAMPLED, x86_64): the position from which the next record is
	 * timed; records before it are written without the timer (trace_x86_64.h,
	 * rb_point_sampled). Never past limit's running value, so the untimed path needs no
	 * limit compare; 0 (the next record timed) at every start and wrap. */
	_Atomic uintptr_t due;
	struct rb_ring *ring;    /* the control side's descriptor; NULL when not registered */
	/* Where the thread's stack stood when it began a wrapped wait, 0 when it is not in
	 * one, and a count of the waits it ended: a thread blocked there never answers a stop,
	 * so the control thread scans its outer frames from there (ringbuf/stack.h, ring.c),
	 * and keeps them only if the count did not move meanwhile. */
	_Atomic uintptr_t wait_sp;
	_Atomic uint32_t waits_ended;
	/* Sleds' counted calls (record.h, RB_CALLED_EVERY): the calls left before the next
	 * one is recorded, counted down by the counted thunk in every thread, traced or not;
	 * and the state of the draw of the next count. */
	_Atomic int32_t counted_left;
	uint32_t counted_draw;
};

/* A fixed offset from the thread pointer: local-exec in the executable (code that is not
 * PIC, or PIE), initial-exec in a shared library; never a __tls_get_addr call. */
#if defined(__PIC__) && !defined(__PIE__)
#define RB_TLS_MODEL "initial-exec"
#else
#define RB_TLS_MODEL "local-exec"
#endif
extern __thread struct rb_tls rb_tls __attribute__((tls_model(RB_TLS_MODEL)));

/* What the trace point below is made of: the clock's mode, the rare paths, and the control
 * words' loads and stores, each as one or two instructions per architecture. */
#include "ringbuf/trace_arch.h"

/*
 * Write a one-slot record whose low half is the low 32 bits of `low` (an entry's function
 * address: rb_enter). The whole trace point.
 */
RB_INLINE void rb_put1(uintptr_t low)
{
	uintptr_t tp = rb_tp();
	uintptr_t p = rb_load_pos(tp);
	if (RB_OFF(!p))
		return;
#if defined(RB_CLOCK_ONLY)
	RB_RARE(rb_put1_rare, low);
#elif defined(RB_LIMIT_FIRST)
	if (__builtin_expect(rb_past_limit(tp, p), 0)) {
		RB_RARE(rb_put1_rare, low);
		return;
	}
	rb_store_counter_record(p, low);
	rb_advance_pos(p);
#else
#if !defined(RB_COUNTER_ONLY)
	if (__builtin_expect(p & RB_POS_CLOCK, 0)) {
		RB_RARE(rb_put1_rare, low);
		return;
	}
#endif
	p = rb_store_counter_record(p, low);
	if (__builtin_expect(rb_past_limit(tp, p), 0))
		RB_RARE(rb_slow_path, p);
	else
		rb_store_pos(tp, p);
#endif
}

/*
 * The function id of an entry: the low 32 bits of the function's address, whatever the
 * program's load address. In a fixed-address program linked below 4 GiB that is the
 * address itself; in a PIE program the decoder subtracts the low half of the main
 * program's load bias, modulo 2^32 (the trace file's module table has it): exact for any
 * program smaller than 4 GiB, and free on the hot path, where a subtraction of the bias
 * would cost a thread-local load, a SUB and a range check at every entry. These hooks are
 * the executable's own (hidden: hooks.c): a shared library's instrumented functions enter
 * through hooks_dso.c, as wide entries with their absolute address.
 */
RB_INLINE void rb_enter(void *fn)
{
	rb_put1((uintptr_t)fn);
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
