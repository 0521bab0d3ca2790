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
	struct rb_ring *ring;    /* the control side's descriptor; NULL when not registered */
	/* Where the thread's stack stood when it began a wrapped wait, 0 when it is not in
	 * one, and a count of the waits it ended: a thread blocked there never answers a stop,
	 * so the control thread scans its outer frames from there (ringbuf/stack.h, ring.c),
	 * and keeps them only if the count did not move meanwhile. */
	_Atomic uintptr_t wait_sp;
	_Atomic uint32_t waits_ended;
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
 * The clock. Where the timer comes from is decided once per start (rb_start): the
 * counter, read inline, or clock_gettime where the HAL fell back (a counter that faults,
 * stands still or runs at an absurd rate; armv7 under qemu-user faults), read out of line.
 * The trace point must learn which without a load and compare of the HAL's flag (5 aarch64
 * instructions, measured in the disassembly):
 *
 *   RB_LIMIT_FIRST (x86_64)  The trace point compares pos with limit before it reads the
 *       timer, so clock mode is a limit below every position, RB_LIMIT_CLOCK: every trace
 *       point takes the rare path, which uses the clock, and the counter (which may fault:
 *       PR_TSC_SIGSEGV) is never read. No test at all. It relies on x86's ordering of
 *       loads (TSO): a thread that sees the new pos of a start also sees the limit stored
 *       before it. The running limit is one slot before the end, so that the trace point
 *       that writes the last slot is the rare one and wraps at once (pos never rests at
 *       the end), and the advance can be one ADD to memory.
 *   ARM  A weakly ordered CPU may load limit before pos (a stale limit is harmless to the
 *       wrap and stop checks, not to a counter that faults), so the mode is the bit
 *       RB_POS_CLOCK of pos, clear in every real position (slots are 8-byte aligned): one
 *       TBNZ (aarch64) or TST and BNE (armv7) per trace point. Boards whose kernels always
 *       let user space read the counter select CONFIG_HAL_TIMER_COUNTER (board/rpi4,
 *       board/android-arm64): no fallback, so no test.
 */
#if defined(__x86_64__)
#define RB_LIMIT_FIRST 1
#define RB_POS_CLOCK ((uintptr_t)0)
#define RB_LIMIT_SLACK ((uintptr_t)8) /* running limit: the ring's end minus one slot */
#else
#define RB_POS_CLOCK ((uintptr_t)1)
#define RB_LIMIT_SLACK ((uintptr_t)0)
#endif
#define RB_LIMIT_CLOCK ((uintptr_t)1)
#if defined(CONFIG_HAL_TIMER_CLOCK) || !HAL_HAVE_COUNTER
#define RB_CLOCK_ONLY 1
#elif defined(CONFIG_HAL_TIMER_COUNTER)
#define RB_COUNTER_ONLY 1
#endif

/*
 * The rare paths, out of line in ring.c, which includes this header: one module split in
 * two on purpose, the few instructions inlined into every traced function here, everything
 * cold beside the ring's other code.
 *   rb_slow_path(p)     ARM: p, just past the record the trace point wrote, reached limit:
 *                       wrap (with a sync record) or answer a stop
 *   rb_put1_rare(low)   a one-slot record the slow way: timestamped by the ring's clock
 *                       (the counter or clock_gettime), then the wrap and the stop check
 *   rb_put_wide(fn)     the entry of a function whose id does not fit in 32 bits (PIC)
 *   rb_put2()           a special record (two slots): from the runtime, never from a hook
 * The trace point reaches the first three through RB_RARE() below, never as a C call.
 */
void rb_slow_path(uintptr_t p) __attribute__((cold, noinline));
void rb_put1_rare(uintptr_t low) __attribute__((cold, noinline));
void rb_put_wide(uintptr_t fn) __attribute__((cold, noinline));
void rb_put2(uint64_t payload, uint32_t low) __attribute__((noinline));

/*
 * RB_RARE(fn, arg): call a rare path from the trace point with every register preserved.
 *
 * A C call on the unlikely branch costs the traced function even when it is never taken:
 * the compiler must assume it clobbers the caller-saved registers, so values live across
 * the trace point move into callee-saved registers (saved and restored by the frame) or
 * around the call, and x86_64 must align the stack for it (a sub/add of rsp in a function
 * that had no frame). On Hubble's Listing 1 (callgrind, x86_64) that was about 6 of the
 * 18.45 instructions per trace point; on aarch64 two more saved registers in the frame.
 *
 * So the call is hidden in an asm statement on the unlikely branch, which to the compiler
 * clobbers no register: only memory, the flags and the registers a PLT entry or a linker
 * veneer may use between the call and its target (x86_64 r10 and r11, aarch64 x16 and x17,
 * armv7 ip). The traced function's frame and register allocation stay what they are
 * without the rare path. The asm keeps what the call itself needs (x86_64: steps over the
 * 128-byte red zone, which a leaf function may be using, and pushes the argument; aarch64:
 * saves x0 and x30; armv7: r0 and lr) and calls fn##_saveall (ringbuf/stubs.h), which
 * saves every other caller-saved register, general and vector, aligns the stack for the C
 * ABI and calls fn.
 *
 * An unwinder that stops inside a rare path (a profiler's signal, a crash in it) cannot
 * step from it back into the traced function: the asm moves the stack pointer without
 * telling the unwind tables. ThreadSanitizer builds, which must see every call, and other
 * architectures make the plain C call.
 */
#if defined(__SANITIZE_THREAD__) || !(defined(__x86_64__) || defined(__aarch64__) || defined(__arm__))
#define RB_RARE(fn, arg) fn((uintptr_t)(arg))
#elif defined(__x86_64__)
/* "e": a constant argument (a function's address, below 2 GiB in a fixed-address build) is
 * pushed as an immediate, so the trace point needs no register for it. */
#define RB_RARE(fn, arg)                                                                   \
	__asm__ __volatile__("lea -128(%%rsp), %%rsp\n\t"                                 \
			     "push %0\n\t"                                                 \
			     "call " #fn "_saveall@PLT\n\t"                                \
			     "lea 136(%%rsp), %%rsp"                                       \
			     :                                                             \
			     : "re"((uintptr_t)(arg))                                      \
			     : "memory", "r10", "r11")
#elif defined(__aarch64__)
#define RB_RARE(fn, arg)                                                                   \
	__asm__ __volatile__("stp x0, x30, [sp, #-16]!\n\t"                               \
			     "mov x0, %0\n\t"                                              \
			     "bl " #fn "_saveall\n\t"                                      \
			     "ldp x0, x30, [sp], #16"                                      \
			     :                                                             \
			     : "r"((uintptr_t)(arg))                                       \
			     : "memory", "cc", "x16", "x17")
#else
#define RB_RARE(fn, arg)                                                                   \
	__asm__ __volatile__("push {r0, lr}\n\t"                                          \
			     "mov r0, %0\n\t"                                              \
			     "bl " #fn "_saveall\n\t"                                      \
			     "pop {r0, lr}"                                                \
			     :                                                             \
			     : "r"((uintptr_t)(arg))                                       \
			     : "memory", "cc", "ip")
#endif

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

/*
 * The control words as the hot path reads and writes them. Relaxed C11 atomics, except
 * where GCC 12 makes them cost more than the plain instruction they are; there the same
 * plain instruction is written as asm, which is outside the C memory model (so no data
 * race), volatile (never merged or moved across the others) and, in ThreadSanitizer
 * builds, replaced by the C atomics it can see. Counted by tests/count-trace-insns.sh:
 *   aarch64  GCC addresses a thread-local through an ADD of its offset to the thread
 *            pointer, then a bare register (atomics take no offset): one ADD per trace
 *            point. The asm puts the offset in the LDR/STR itself (a TLS LO12 relocation,
 *            checked by the linker: the -mtls-size=12 the boards compile with promises
 *            less than 4 KiB of TLS). The thread pointer is read at every trace point
 *            (volatile) rather than kept across calls in a callee-saved register, which
 *            would cost the frame a save and a restore. Executable (local-exec) only.
 *   x86_64   GCC reads an atomic member of a thread-local struct through its address
 *            (%fs:0, ADD, load), and would load limit into a register to compare it: one
 *            CMP with %fs:limit instead, its flags the asm's output. The advance is one
 *            ADD to %fs:pos (the traced thread is the only writer of a running pos).
 */
#if defined(__aarch64__) && !defined(__SANITIZE_THREAD__) && !(defined(__PIC__) && !defined(__PIE__))
#define RB_TLS_ASM 1
#endif

/* The thread pointer where RB_TLS_ASM addresses the control words from it; else 0. */
RB_INLINE uintptr_t rb_tp(void)
{
#if defined(RB_TLS_ASM)
	uintptr_t tp;
	__asm__ __volatile__("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
#else
	return 0;
#endif
}

RB_INLINE uintptr_t rb_load_pos(uintptr_t tp)
{
#if defined(RB_TLS_ASM)
	uintptr_t v;
	__asm__ __volatile__("ldr %0, [%1, #:tprel_lo12:rb_tls]" : "=r"(v) : "r"(tp));
	return v;
#else
	(void)tp;
	return atomic_load_explicit(&rb_tls.pos, RB_POS_ORDER);
#endif
}

RB_INLINE void rb_store_pos(uintptr_t tp, uintptr_t p)
{
#if defined(RB_TLS_ASM)
	__asm__ __volatile__("str %0, [%1, #:tprel_lo12:rb_tls]" : : "r"(p), "r"(tp));
#else
	(void)tp;
	atomic_store_explicit(&rb_tls.pos, p, memory_order_relaxed);
#endif
}

/* p >= limit: the wrap or a stop (or, RB_LIMIT_FIRST, clock mode) is due. */
RB_INLINE bool rb_past_limit(uintptr_t tp, uintptr_t p)
{
#if defined(RB_TLS_ASM)
	uintptr_t v;
	__asm__ __volatile__("ldr %0, [%1, #:tprel_lo12:rb_tls+8]" : "=r"(v) : "r"(tp));
	return p >= v;
#elif defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	(void)tp;
	bool past;
	__asm__ __volatile__("cmp %[limit], %[p]"
			     : "=@ccae"(past)
			     : [p] "r"(p), [limit] "m"(rb_tls.limit));
	return past;
#else
	(void)tp;
	return p >= atomic_load_explicit(&rb_tls.limit, memory_order_relaxed);
#endif
}

/*
 * Position-independent 64-bit code may hand the record an address above 4 GiB, of which
 * only the low half is kept (rb_enter). x86_64 stores the counter over the upper half
 * anyway; aarch64 inserts it there (RB_LOW32_BFI). A fixed-address program is linked below
 * 4 GiB, where the address is its own low half and needs neither.
 */
#if defined(__aarch64__) && (defined(__PIC__) || defined(__PIE__))
#define RB_LOW32_BFI 1
#endif

/*
 * Store a record of the counter and `low` at p; return p advanced by one slot. aarch64: one
 * 8-byte store that post-increments p, as Hubble's STRD (section 5.1.3), which GCC 12's
 * atomics cannot do (on armv7 a 64-bit relaxed atomic store is even an LDREXD/STREXD loop).
 * armv7 and x86_64: two stores, which build no 8-byte value (x86_64: the id as an immediate
 * where it is a constant, then RDTSC's low half over the upper half: a shift and an OR
 * fewer). The slot is not yet published, and a validated copy leaves out the one in
 * flight, so no reader sees it half written.
 */
RB_INLINE uintptr_t rb_store_counter_record(uintptr_t p, uintptr_t low)
{
#if defined(__aarch64__)
	uint64_t ts = hal_counter_read(), rec = ts << 32 | low;
#if defined(RB_LOW32_BFI)
	/* An entry's address in PIE code: BFI puts the counter over its upper half, one
	 * instruction where the zero-extension and the OR were two. */
	if (!__builtin_constant_p(low)) {
		rec = low;
		__asm__("bfi %x0, %x1, #32, #32" : "+r"(rec) : "r"(ts));
	}
#endif
	__asm__ __volatile__("str %x[v], [%x[p]], #8"
			     : [p] "+r"(p), "=m"(*(uint64_t *)p)
			     : [v] "r"(rec));
	return p;
#elif defined(__arm__) && !defined(CONFIG_HAL_TIMER_ISB)
	/* Two word stores, each post-incrementing p, instead of STRD: the same count, without
	 * STRD's even/odd register pair (GCC saved two callee-saved registers in the traced
	 * function's frame to make one), and the id's register, once stored, takes the
	 * counter's unused upper word: two registers besides p. */
	uint32_t ts, id = (uint32_t)low;
	__asm__ __volatile__("str %[id], [%[p]], #4\n\t"
			     "mrrc p15, 1, %[ts], %[id], c14\n\t"
			     "str %[ts], [%[p]], #4"
			     : [p] "+r"(p), [id] "+r"(id), [ts] "=&r"(ts), "=m"(*(uint64_t *)p));
	return p;
#elif defined(__arm__)
	uint64_t rec = hal_counter_read() << 32 | low;
	__asm__ __volatile__("strd %[v], %H[v], [%[p]], #8"
			     : [p] "+r"(p), "=m"(*(uint64_t *)p)
			     : [v] "r"(rec));
	return p;
#elif defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc\n\t"
			     "movq %[low], (%[p])\n\t"
			     "mov %%eax, 4(%[p])"
			     : "=&a"(lo), "=&d"(hi), "=m"(*(uint64_t *)p)
			     : [p] "r"(p), [low] "re"(low));
	return p + 8;
#else
	atomic_store_explicit((_Atomic uint64_t *)p, hal_counter_read() << 32 | (uint32_t)low,
			      memory_order_relaxed);
	return p + 8;
#endif
}

/* pos += 8, by the traced thread (RB_LIMIT_FIRST). */
RB_INLINE void rb_advance_pos(uintptr_t p)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	(void)p;
	__asm__ __volatile__("addq $8, %0" : "+m"(rb_tls.pos));
#else
	atomic_store_explicit(&rb_tls.pos, p + 8, memory_order_relaxed);
#endif
}

/* One 8-byte store of a record into the slot at p (the rare paths). */
RB_INLINE void rb_store(uintptr_t p, uint64_t rec)
{
#if defined(__arm__)
	__asm__ __volatile__("strd %[v], %H[v], [%[p]]"
			     : "=m"(*(uint64_t *)p)
			     : [p] "r"(p), [v] "r"(rec));
#else
	atomic_store_explicit((_Atomic uint64_t *)p, rec, memory_order_relaxed);
#endif
}

/*
 * Write a one-slot record whose low half is the low 32 bits of `low` (an entry's function
 * address: rb_enter). The whole trace point.
 */
RB_INLINE void rb_put1(uintptr_t low)
{
	uintptr_t tp = rb_tp();
	uintptr_t p = rb_load_pos(tp);
	if (!p)
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
