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

#endif
