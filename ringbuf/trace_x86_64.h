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
			     ".pushsection .text.unlikely\n"
			     "2:\n\t"
			     "lea -128(%%rsp), %%rsp\n\t"
			     "push %[low]\n\t"
			     "call rb_put1_rare_saveall@PLT\n\t"
			     "lea 136(%%rsp), %%rsp\n\t"
			     "jmp 1b\n\t"
			     ".popsection"
			     : [p] "=&r"(p), [pos] "+m"(rb_tls.pos)
			     : [limit] "m"(rb_tls.limit), [low] "re"(low)
			     : "rax", "rdx", "r10", "r11", "cc");
}
#endif

#endif
