/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/trace_aarch64.h - the trace point's pieces on aarch64 (ringbuf/trace_arch.h says
 * what each is for): the control words addressed from the thread pointer with the offset
 * in the load or store itself, and the record as one store that post-increments p.
 */
#ifndef JITT_RINGBUF_TRACE_AARCH64_H
#define JITT_RINGBUF_TRACE_AARCH64_H

#if !defined(__SANITIZE_THREAD__)
#define RB_RARE(fn, arg)                                                                   \
	__asm__ __volatile__("stp x0, x30, [sp, #-16]!\n\t"                               \
			     "mov x0, %0\n\t"                                              \
			     "bl " #fn "_saveall\n\t"                                      \
			     "ldp x0, x30, [sp], #16"                                      \
			     :                                                             \
			     : "r"((uintptr_t)(arg))                                       \
			     : "memory", "cc", "x16", "x17")
#endif

/* The executable's (local-exec) control words, at a TLS LO12 offset from the thread
 * pointer, read at every trace point (volatile). */
#if !defined(__SANITIZE_THREAD__) && !(defined(__PIC__) && !defined(__PIE__))
#define RB_ARCH_TLS 1
RB_INLINE uintptr_t rb_tp(void)
{
	uintptr_t tp;
	__asm__ __volatile__("mrs %0, tpidr_el0" : "=r"(tp));
	return tp;
}

RB_INLINE uintptr_t rb_load_pos(uintptr_t tp)
{
	uintptr_t v;
	__asm__ __volatile__("ldr %0, [%1, #:tprel_lo12:rb_tls]" : "=r"(v) : "r"(tp));
	return v;
}

RB_INLINE void rb_store_pos(uintptr_t tp, uintptr_t p)
{
	__asm__ __volatile__("str %0, [%1, #:tprel_lo12:rb_tls]" : : "r"(p), "r"(tp));
}

#define RB_ARCH_PAST_LIMIT 1
RB_INLINE bool rb_past_limit(uintptr_t tp, uintptr_t p)
{
	uintptr_t v;
	__asm__ __volatile__("ldr %0, [%1, #:tprel_lo12:rb_tls+8]" : "=r"(v) : "r"(tp));
	return p >= v;
}
#endif

/*
 * Position-independent code may hand the record an address above 4 GiB, of which only the
 * low half is kept (rb_enter): BFI inserts the counter over its upper half, one instruction
 * where the zero-extension and the OR were two. A fixed-address program is linked below
 * 4 GiB, where the address is its own low half and needs neither.
 */
#if defined(__PIC__) || defined(__PIE__)
#define RB_LOW32_BFI 1
#endif

#define RB_ARCH_STORE_COUNTER 1
RB_INLINE uintptr_t rb_store_counter_record(uintptr_t p, uintptr_t low)
{
	uint64_t ts = hal_counter_read(), rec = ts << 32 | low;
#if defined(RB_LOW32_BFI)
	if (!__builtin_constant_p(low)) {
		rec = low;
		__asm__("bfi %x0, %x1, #32, #32" : "+r"(rec) : "r"(ts));
	}
#endif
	__asm__ __volatile__("str %x[v], [%x[p]], #8"
			     : [p] "+r"(p), "=m"(*(uint64_t *)p)
			     : [v] "r"(rec));
	return p;
}

#endif
