/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/trace_generic.h - the trace point's pieces that the architecture's file did not
 * define (ringbuf/trace_arch.h): relaxed C11 atomics, which ThreadSanitizer can see.
 */
#ifndef JITT_RINGBUF_TRACE_GENERIC_H
#define JITT_RINGBUF_TRACE_GENERIC_H

#if !defined(RB_RARE)
#define RB_RARE(fn, arg) fn((uintptr_t)(arg))
#endif

#if !defined(RB_ARCH_TLS)
/* No thread pointer is needed: the compiler addresses rb_tls. */
RB_INLINE uintptr_t rb_tp(void)
{
	return 0;
}

RB_INLINE uintptr_t rb_load_pos(uintptr_t tp)
{
	(void)tp;
	return atomic_load_explicit(&rb_tls.pos, RB_POS_ORDER);
}

RB_INLINE void rb_store_pos(uintptr_t tp, uintptr_t p)
{
	(void)tp;
	atomic_store_explicit(&rb_tls.pos, p, memory_order_relaxed);
}
#endif

#if !defined(RB_ARCH_PAST_LIMIT)
RB_INLINE bool rb_past_limit(uintptr_t tp, uintptr_t p)
{
	(void)tp;
	return p >= atomic_load_explicit(&rb_tls.limit, memory_order_relaxed);
}
#endif

#if !defined(RB_ARCH_STORE_COUNTER)
RB_INLINE uintptr_t rb_store_counter_record(uintptr_t p, uintptr_t low)
{
	atomic_store_explicit((_Atomic uint64_t *)p, hal_counter_read() << 32 | (uint32_t)low,
			      memory_order_relaxed);
	return p + 8;
}
#endif

#if !defined(RB_ARCH_ADVANCE)
RB_INLINE void rb_advance_pos(uintptr_t p)
{
	atomic_store_explicit(&rb_tls.pos, p + 8, memory_order_relaxed);
}
#endif

#if !defined(RB_ARCH_STORE)
RB_INLINE void rb_store(uintptr_t p, uint64_t rec)
{
	atomic_store_explicit((_Atomic uint64_t *)p, rec, memory_order_relaxed);
}
#endif

#endif
