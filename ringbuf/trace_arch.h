/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/trace_arch.h - the pieces of the trace point (ringbuf/trace.h, which includes
 * this header; nothing else should): the clock's mode, the rare paths, and the helpers
 * that load and store the control words and the record. Where an architecture does better
 * than C11's relaxed atomics, its file (trace_x86_64.h, trace_aarch64.h, trace_arm.h)
 * defines the helper as a few instructions of asm and says so with an RB_ARCH_* macro;
 * trace_generic.h defines the rest with atomics (and everything in ThreadSanitizer builds,
 * which must see every access, where the architecture's file says so).
 */
#ifndef JITT_RINGBUF_TRACE_ARCH_H
#define JITT_RINGBUF_TRACE_ARCH_H

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
/*
 * RB_OFF(off): the test of pos, and which path is laid out straight. On x86_64 the off path
 * runs through (the branch to the on path not taken) and the on path sits after the
 * function's body, one jump away and one jump back: when tracing is off, a traced function
 * runs three instructions (mov, test, jne) and no taken branch per trace point; when on, the jumps hide behind
 * rdtsc's ~8 ns (measured with speedtest1 --memdb, kept functions traced: off 1.06x -> 1.01x
 * of plain, on 2.61x and 2.62x, the same). At -Os GCC does not move blocks, and the on path
 * stays inline either way. ARM keeps the on path straight: there the record costs under a
 * nanosecond and a taken branch would be a visible part of it (docs/ringbuf.md).
 */
#if defined(__x86_64__)
#define RB_OFF(off) __builtin_expect((off), 1)
#else
#define RB_OFF(off) (off)
#endif

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
/* A counted call, timed (sleds' sampled time: ringbuf/sleds_x86_64.c). */
void rb_put_called(uint32_t id, uint32_t word) __attribute__((cold, noinline));

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
 * architectures make the plain C call. (The asm for each architecture is in its file.)
 */

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
/*
 * rb_store_counter_record(p, low): store a record of the counter and `low` at p; return p
 * advanced by one slot. aarch64: one 8-byte store that post-increments p, as Hubble's STRD
 * (section 5.1.3), which GCC 12's atomics cannot do (on armv7 a 64-bit relaxed atomic store
 * is even an LDREXD/STREXD loop). armv7 and x86_64: two stores, which build no 8-byte value (x86_64: the id as an immediate
 * where it is a constant, then RDTSC's low half over the upper half: a shift and an OR
 * fewer). The slot is not yet published, and a validated copy leaves out the one in
 * flight, so no reader sees it half written.
 *
 * And rb_advance_pos(p): pos += 8, by the traced thread (RB_LIMIT_FIRST); rb_store(p, rec):
 * one 8-byte store of a record into the slot at p (the rare paths).
 */

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#include "ringbuf/trace_x86_64.h"
#elif defined(__aarch64__)
#include "ringbuf/trace_aarch64.h"
#elif defined(__arm__)
#include "ringbuf/trace_arm.h"
#endif
#include "ringbuf/trace_generic.h"

#endif
