/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/record.h - the trace record format (Hubble section 5.1, Fig. 2), in 8-byte slots.
 *
 * Every record ends with a "tag" slot whose upper 32 bits are the low 32 bits of the
 * timer (ts32) and whose lower 32 bits say what it is, so a ring decodes in reverse from
 * its end position (Hubble 5.1.1):
 *
 *   entry          [ts32 << 32 | id32]              id32 >= 0x10, one slot
 *   exit           [ts32 << 32 | 0x0]               one slot
 *   wide entry     [id64] [ts32 << 32 | 0x1]        an id that does not fit in 32 bits
 *   special        [payload] [ts32 << 32 | kind]    kind 0x2..0xD and 0xF, see below
 *   counted call   [calls << 56 | mean << 32 | id32] [ts32 << 32 | 0xE]   see RB_CALLED
 *
 * Values 0x0..0xF are never function ids: Hubble reserves 0 and 1; jitt uses 2..F for the
 * special records and the counted call. A special record's payload carries the upper half of its timestamp
 * (payload >> 32 == ts >> 32) and a 32-bit argument (payload & 0xffffffff), so each one is
 * an exact 64-bit time anchor: timestamps are recovered exactly across any number of 2^32
 * wraps and across long gaps (Hubble's scheme alone goes wrong after 2^32 ticks without a
 * trace point: 224 s on a 19.2 MHz counter, 1.7 s on a 2.6 GHz TSC).
 *
 * Function ids: on 64-bit, the low 32 bits of a function's address (for a program linked
 * below 4 GiB, the address itself; for a PIE program, its ELF virtual address plus the low
 * half of the load bias, modulo 2^32: the trace file's module table has the bias); a
 * function elsewhere (a shared library) is a wide entry with its absolute address. On 32-bit (armv7), every
 * entry is one slot with the absolute address, as in Hubble 5.1.2. The trace file's module
 * table maps either back to {module, offset}.
 */
#ifndef JITT_RINGBUF_RECORD_H
#define JITT_RINGBUF_RECORD_H

#include <stdint.h>

enum rb_kind {
	RB_EXIT = 0x0,
	RB_WIDE = 0x1,
	RB_SYNC = 0x2,       /* arg: laps of the ring so far; written at start and at each wrap */
	RB_MARK = 0x3,       /* arg: frame/loop boundary or anomaly code (the agent defines them) */
	RB_WAIT_BEGIN = 0x4, /* arg: object key (a lock, condition, fd) the thread waits on */
	RB_WAIT_END = 0x5,   /* arg: the same key */
	RB_WAKE = 0x6,       /* arg: key of the object this thread signalled (Argus 3.1) */
	/* The schedstat fallback (hal/sched.h), at frame boundaries when no perf ring could
	 * be opened: the thread's total time on a CPU (7) and waiting on a run queue (8), in
	 * microseconds modulo 2^32. Two samples' difference is what happened between them. */
	RB_SCHED_RUN = 0x7,
	RB_SCHED_WAIT = 0x8,
	/* Non-local exits, from the runtime's wrappers of setjmp and longjmp: the decoder
	 * closes the frames a longjmp skipped (their exit hooks never ran). arg: the jump
	 * buffer's address, low half; a longjmp with arg 0 leaves every open frame
	 * (pthread_exit). */
	RB_SETJMP = 0x9,
	RB_LONGJMP = 0xA,
	/* Coroutines (ucontext): a thread that switches stacks leaves one context's frames
	 * open and resumes another's, whose exits and entries then interleave in one ring.
	 * arg: the ucontext's address, low half. makecontext writes CTX_MADE (a fresh context,
	 * whose function will return to its uc_link); swapcontext writes CTX_SWAP (the
	 * context it saves, the one being left) and then CTX_SET (the one it switches to);
	 * setcontext writes CTX_SET alone. The decoder keeps each context's frames apart. */
	RB_CTX_MADE = 0xB,
	RB_CTX_SWAP = 0xC,
	RB_CTX_SET = 0xD,
	/* A counted call (sleds, docs/trace-points.md "Counted calls"): a short function
	 * that calls no traced one, entered through a thunk that counts its calls and, one
	 * in RB_CALLED_EVERY on average, writes this record before it jumps to the body,
	 * with no exit record. Not a special record: its payload is [word << 32 | id], the
	 * function's id and a word of the mean length of its calls in timer ticks as the
	 * runtime measured them (low 24 bits) and how many calls the record stands for
	 * (high 8 bits; 0 is one): rb_called_word. Its tag's upper half is ts32 like an
	 * entry's (0 when written untimed, untimed.h). The decoder gives it as an entry and
	 * an exit `mean` later, never past the next record, and the calls it stands for
	 * (rb_event.calls); a summary counts them all, with their time taken from where they
	 * ran as far as the ring knows: the caller's time around the record. */
	RB_CALLED = 0xE,
	RB_KIND_LAST = 0xF,  /* 0xF reserved: decoded as "unknown special" */
	RB_FIRST_ID = 0x10,  /* the smallest function id */
};

/* Sampled time (docs/untimed.md): the records between two timed ones are written untimed,
 * [0 << 32 | id]; each timed record puts the next one 1..RB_SAMPLED_GAP_MAX records on, so
 * about one record in 32 reads the timer (trace_x86_64.h says why 64). */
#define RB_SAMPLED_GAP_MAX 64
/* A counted call (RB_CALLED) leaves the due timed record to the next traced call, unless it
 * comes this many slots past due: a run of counted calls alone still gets a time now and
 * then (ringbuf/sleds_x86_64.c, the counted thunk). */
#define RB_COUNTED_LATE 64
/* A counted function's calls are recorded one in this many on average: after each record
 * the thread counts 1..2 * RB_CALLED_EVERY - 1 calls down, drawn at random, to the next
 * (a fixed count would see only one function of a loop that calls several in turn). Each
 * record stands for this many calls. A counted call costs the countdown and a jump most of
 * the time; its record, some 10 instructions more, one time in 16 (memcached's worker
 * spent 5% of its time in them, recording every call of its hash). */
#define RB_CALLED_EVERY 16
#define RB_CALLED_MEAN_MAX 0xffffffu

/* Inlined everywhere, and never instrumented itself (an OEM may compile these headers with
 * -finstrument-functions). */
#define RB_INLINE static inline __attribute__((always_inline, no_instrument_function))

RB_INLINE uint64_t rb_tag(uint64_t ts, uint32_t low)
{
	return ts << 32 | low;
}

RB_INLINE uint32_t rb_tag_ts32(uint64_t tag)
{
	return (uint32_t)(tag >> 32);
}

RB_INLINE uint32_t rb_tag_low(uint64_t tag)
{
	return (uint32_t)tag;
}

/* A counted call's word: its function's mean call in ticks (up to RB_CALLED_MEAN_MAX: a
 * counted function is short), and the calls one record stands for (1..255). */
RB_INLINE uint32_t rb_called_word(uint64_t mean, uint32_t calls)
{
	return calls << 24 | (uint32_t)(mean < RB_CALLED_MEAN_MAX ? mean : RB_CALLED_MEAN_MAX);
}

RB_INLINE uint32_t rb_called_mean(uint32_t word)
{
	return word & RB_CALLED_MEAN_MAX;
}

RB_INLINE uint32_t rb_called_calls(uint32_t word)
{
	return word >> 24 ? word >> 24 : 1;
}

/* A tag's low half says its record has a payload slot before it: a wide entry or a special
 * record (1..0xF). Every other record is one slot. */
RB_INLINE int rb_two_slots(uint32_t low)
{
	return low - 1 < RB_FIRST_ID - 1;
}

/* The payload slot of a special record: the timestamp's upper half and the argument. */
RB_INLINE uint64_t rb_special_payload(uint64_t ts, uint32_t arg)
{
	return (ts & 0xffffffff00000000ull) | arg;
}

#endif
