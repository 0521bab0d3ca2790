/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/trace_arm.h - the trace point's pieces on armv7 (ringbuf/trace_arch.h says what
 * each is for): the record as two word stores around the counter's read (or one STRD where
 * the counter read needs an ISB first), and the rare paths' 8-byte store as one STRD.
 */
#ifndef JITT_RINGBUF_TRACE_ARM_H
#define JITT_RINGBUF_TRACE_ARM_H

#if !defined(__SANITIZE_THREAD__)
#define RB_RARE(fn, arg)                                                                   \
	__asm__ __volatile__("push {r0, lr}\n\t"                                          \
			     "mov r0, %0\n\t"                                              \
			     "bl " #fn "_saveall\n\t"                                      \
			     "pop {r0, lr}"                                                \
			     :                                                             \
			     : "r"((uintptr_t)(arg))                                       \
			     : "memory", "cc", "ip")
#endif

#define RB_ARCH_STORE_COUNTER 1
RB_INLINE uintptr_t rb_store_counter_record(uintptr_t p, uintptr_t low)
{
#if !defined(CONFIG_HAL_TIMER_ISB)
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
#else
	uint64_t rec = hal_counter_read() << 32 | low;
	__asm__ __volatile__("strd %[v], %H[v], [%[p]], #8"
			     : [p] "+r"(p), "=m"(*(uint64_t *)p)
			     : [v] "r"(rec));
	return p;
#endif
}

#define RB_ARCH_STORE 1
RB_INLINE void rb_store(uintptr_t p, uint64_t rec)
{
	__asm__ __volatile__("strd %[v], %H[v], [%[p]]"
			     : "=m"(*(uint64_t *)p)
			     : [p] "r"(p), [v] "r"(rec));
}

#endif
