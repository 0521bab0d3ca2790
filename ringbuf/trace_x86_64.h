/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/trace_x86_64.h - the trace point's pieces on x86_64 (ringbuf/trace_arch.h says
 * what each is for), outside ThreadSanitizer builds: the compare with limit in memory, the
 * counter and the record in two stores, the advance as one ADD to memory.
 */
#ifndef JITT_RINGBUF_TRACE_X86_64_H
#define JITT_RINGBUF_TRACE_X86_64_H

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

/* p >= limit, as one CMP with %fs:limit (its flags the asm's output). */
#define RB_ARCH_PAST_LIMIT 1
RB_INLINE bool rb_past_limit(uintptr_t tp, uintptr_t p)
{
	(void)tp;
	bool past;
	__asm__ __volatile__("cmp %[limit], %[p]"
			     : "=@ccae"(past)
			     : [p] "r"(p), [limit] "m"(rb_tls.limit));
	return past;
}

#define RB_ARCH_STORE_COUNTER 1
RB_INLINE uintptr_t rb_store_counter_record(uintptr_t p, uintptr_t low)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc\n\t"
			     "movq %[low], (%[p])\n\t"
			     "mov %%eax, 4(%[p])"
			     : "=&a"(lo), "=&d"(hi), "=m"(*(uint64_t *)p)
			     : [p] "r"(p), [low] "re"(low));
	return p + 8;
}

#define RB_ARCH_ADVANCE 1
RB_INLINE void rb_advance_pos(uintptr_t p)
{
	(void)p;
	__asm__ __volatile__("addq $8, %0" : "+m"(rb_tls.pos));
}

/* RB_RARE's call, inside an asm statement whose operand [low] is the record's low half: the
 * rare path of the one-asm trace points below. */
#define RB_ASM_RARE_LOW                                                                    \
	"lea -128(%%rsp), %%rsp\n\t"                                                       \
	"push %[low]\n\t"                                                                  \
	"call rb_put1_rare_saveall@PLT\n\t"                                                \
	"lea 136(%%rsp), %%rsp\n\t"

/*
 * The whole trace point (rb_put1's RB_LIMIT_FIRST path, RB_RARE's call included) as one asm
 * statement, with the rare path in .text.unlikely: for clang's hooks (ringbuf/hooks.c).
 * clang-14's -finstrument-functions-after-inlining puts the hook call before the function's
 * stack slots (allocas); once lld inlines a hook whose off test is a C branch, the slots are
 * left outside the entry block and allocated at run time, with a frame pointer (208 of
 * duktape's 761 traced functions). One asm is one basic block, which the inliner splices in
 * without splitting: 12 frames left (4 in the plain build), instrumented-off 1.26x of plain
 * -> 1.15x on fib(29), 1.26x -> 1.13x on the throw workload (docs/oem.md, "Building with
 * clang"), for one instruction more when off (the function's address is taken before the
 * test). GCC instruments before it builds its control flow, so its hooks keep rb_put1.
 * The ring and the control words are touched only here and by the runtime's own functions,
 * never by the instrumented code, hence no "memory" clobber (RB_RARE's reasoning for the
 * registers holds for the call).
 * The cold block goes to a section of its own name, .text.unlikely.jitt_point, never the
 * traced function's: in a function the compiler placed in .text.unlikely itself, the off
 * path ran on from "1:" into the cold block and looped there for ever (rb_point_sampled in
 * duktape's duk__strtable_resize_check, a cold function; the linker still groups the
 * block with the other unlikely code).
 */
#if !defined(RB_CLOCK_ONLY)
#define RB_ARCH_POINT 1
RB_INLINE void rb_point(uintptr_t low)
{
	uintptr_t p;
	__asm__ __volatile__("mov %[pos], %[p]\n\t"
			     "test %[p], %[p]\n\t"
			     "je 1f\n\t"
			     "cmp %[limit], %[p]\n\t"
			     "jae 2f\n\t"
			     "rdtsc\n\t"
			     "movq %[low], (%[p])\n\t"
			     "mov %%eax, 4(%[p])\n\t"
			     "addq $8, %[pos]\n"
			     "1:\n\t"
			     ".pushsection .text.unlikely.jitt_point, \"ax\", @progbits\n"
			     "2:\n\t"
			     RB_ASM_RARE_LOW
			     "jmp 1b\n\t"
			     ".popsection"
			     : [p] "=&r"(p), [pos] "+m"(rb_tls.pos)
			     : [limit] "m"(rb_tls.limit), [low] "re"(low)
			     : "rax", "rdx", "r10", "r11", "cc");
}
#endif

/*
 * Sampled time (RB_TIME_SAMPLED: libjitt-sampled.a's hooks, docs/untimed.md): the trace
 * point of a program whose calls are too many for a timer read each. rdtsc is 8 to 20 ns
 * (20 in the VMs of 2026-11-27) of a trace point that is otherwise a store; here about one
 * record in 32 reads it, and the others are written untimed, [0 << 32 | id] (record.h; the
 * decoder estimates their times between their timed neighbours). Which record is timed is
 * decided by position, not by function: rb_tls.due is the position of the next timed
 * record, set by each timed one to 1..RB_SAMPLED_GAP_MAX (64) slots on from bits 6..11 of
 * the counter it read (what the program did since the last one decides, so no loop of the
 * program's can fall into step with it), and never past limit, so the untimed path needs
 * no other compare; a stop request (limit 0) is answered at the next timed record, within
 * 64. One in 16 (1..32) cost a sleds thunk's traced call 1.1 ns more at rdtsc's 20 ns
 * (docs/trace-points.md, "One timer read in 32").
 *
 *   off      mov pos, test, jne                       (not taken)
 *   untimed  + cmp due, jae, two 4-byte stores (the id, a zero upper half), add, jmp back
 *   timed    + cmp limit, jae, rdtsc and the upper half, the next due
 *
 * rdtsc writes eax and edx, which the asm saves around it and gives back before it touches
 * a control word again: the compiler may address those through any register (one build
 * read limit as %fs:8(%rax)), and a clobber would keep values out of two registers at every
 * trace point. The counter's low half goes through the stack into t, a register of the
 * compiler's choosing that no operand uses (early clobber).
 *
 * The on path is in a cold section, away from the function's body: one asm statement, one
 * basic block to the compiler (rb_point's reason), whose off path is the three
 * instructions. An untimed record thus takes two jumps (there and back): 1.8 ns a trace
 * point on Listing 1 where the same record inline, the off path a taken JE, costs 0.95 ns
 * (the same-run limit, a store and a timer read in 16: 0.96 ns); but on duktape's fib,
 * all functions traced, that layout made instrumented-off 1.47x of plain against 1.30x,
 * for 2% less when on (interleaved, fastest of 5). Off is what runs in production.
 * (tests/bench_trace.c has the rows: make bench.) The id is stored as 4 bytes and a zero, not as 8: in a PIE program it is a
 * 64-bit address in a register, whose upper half would read as a timestamp.
 */
#if !defined(RB_CLOCK_ONLY)
#define RB_ARCH_POINT_SAMPLED 1
_Static_assert(RB_SAMPLED_GAP_MAX == 64, "rb_point_sampled takes 6 bits of the counter");
RB_INLINE void rb_point_sampled(uintptr_t low)
{
	uintptr_t p, t;
	__asm__ __volatile__("mov %[pos], %[p]\n\t"
			     "test %[p], %[p]\n\t"
			     "jne 2f\n"
			     "1:\n\t"
			     ".pushsection .text.unlikely.jitt_point, \"ax\", @progbits\n"
			     "2:\n\t"
			     "cmp %[due], %[p]\n\t"
			     "jae 3f\n\t"
			     "movl %k[low], (%[p])\n\t"
			     "movl $0, 4(%[p])\n\t"
			     "addq $8, %[pos]\n\t"
			     "jmp 1b\n"
			     "3:\n\t"
			     "cmp %[limit], %[p]\n\t"
			     "jae 4f\n\t"
			     "movl %k[low], (%[p])\n\t"
			     "lea -136(%%rsp), %%rsp\n\t"
			     "push %%rax\n\t"
			     "push %%rdx\n\t"
			     "rdtsc\n\t"
			     "mov %%eax, 16(%%rsp)\n\t"
			     "pop %%rdx\n\t"
			     "pop %%rax\n\t"
			     "mov (%%rsp), %k[t]\n\t"
			     "lea 136(%%rsp), %%rsp\n\t"
			     "mov %k[t], 4(%[p])\n\t"
			     "shr $3, %k[t]\n\t" /* bits 6..11, as 8-byte slots */
			     "and $0x1f8, %k[t]\n\t"
			     "lea 8(%[p],%[t]), %[t]\n\t"
			     "cmp %[limit], %[t]\n\t"
			     "cmova %[limit], %[t]\n\t"
			     "mov %[t], %[due]\n\t"
			     "addq $8, %[pos]\n\t"
			     "jmp 1b\n"
			     "4:\n\t"
			     RB_ASM_RARE_LOW
			     "jmp 1b\n\t"
			     ".popsection"
			     : [p] "=&r"(p), [t] "=&r"(t), [pos] "+m"(rb_tls.pos),
			       [due] "+m"(rb_tls.due)
			     : [limit] "m"(rb_tls.limit), [low] "re"(low)
			     : "r10", "r11", "cc");
}
#endif

#endif
