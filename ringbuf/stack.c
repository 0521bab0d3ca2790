/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "stack.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NO_INSTR       __attribute__((no_instrument_function))
#define SCAN_MAX_BYTES ((uintptr_t)1 << 20)
/* The scan reads whatever words the stack holds, some of them objects other threads write
 * (a lock, an atomic the thread shares from its stack): racy reads of values it only
 * compares, by design. ThreadSanitizer is told not to watch them. */
#if defined(__SANITIZE_THREAD__)
#define SCAN_READS __attribute__((no_sanitize_thread))
#else
#define SCAN_READS
#endif

/*
 * The mapping that holds sp, from the kernel's map of this process: /proc/self/maps
 * itself, not through hal's root, since it describes this very process. Used for the main
 * thread, whose stack musl's pthread_getattr_np finds by probing with mremap page by page
 * (a minute of emulated system calls under qemu-user, thousands on a device).
 */
NO_INSTR static int mapping_top(uintptr_t sp, uintptr_t *top)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	char line[512];
	int err = -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && sp >= lo && sp < hi) {
			*top = (uintptr_t)hi;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

NO_INSTR int rb_stack_top(uintptr_t *top)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	if (getpid() == (pid_t)syscall(SYS_gettid))
		return mapping_top(sp, top);
	pthread_attr_t a;
	void *lo;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return -ENOTSUP;
	int err = pthread_attr_getstack(&a, &lo, &size);
	pthread_attr_destroy(&a);
	if (err)
		return -err;
	*top = (uintptr_t)lo + size;
	return sp >= (uintptr_t)lo && sp < *top ? 0 : -ERANGE;
}

/*
 * Whether the instruction before ra is a call. Each architecture's forms that a compiler
 * emits for calls, direct and through a register or memory; a word that passes is a
 * return address with good odds, a stale one sometimes.
 */
NO_INSTR static int after_call(uintptr_t ra, uintptr_t text_lo)
{
#if defined(__x86_64__)
	/* FF /2 with each ModRM form, a REX prefix or not before it. memcached's transmit
	 * calls its connection's sendmsg as call *0x1e0(%rbx): a frame the first four forms
	 * alone missed. */
	const uint8_t *p = (const uint8_t *)ra;
	uintptr_t room = ra - text_lo;
	if (room >= 5 && p[-5] == 0xe8) /* call rel32 */
		return 1;
	if (room >= 2 && p[-2] == 0xff) {
		uint8_t m = p[-1];
		if ((m & 0xf8) == 0xd0) /* call *%reg */
			return 1;
		if ((m & 0xf8) == 0x10 && (m & 7) != 4 && (m & 7) != 5) /* call *(%reg) */
			return 1;
	}
	if (room >= 3 && p[-3] == 0xff && (p[-2] == 0x14 || /* call *(base,index) */
					   ((p[-2] & 0xf8) == 0x50 && p[-2] != 0x54)))
		return 1; /* call *disp8(%reg) */
	if (room >= 4 && p[-4] == 0xff && p[-3] == 0x54) /* call *disp8(base,index) */
		return 1;
	if (room >= 6 && p[-6] == 0xff &&
	    (p[-5] == 0x15 || /* call *disp32(%rip) */
	     ((p[-5] & 0xf8) == 0x90 && p[-5] != 0x94))) /* call *disp32(%reg) */
		return 1;
	if (room >= 7 && p[-7] == 0xff && (p[-6] == 0x94 || p[-6] == 0x14)) /* SIB, disp32 */
		return 1;
	return 0;
#elif defined(__aarch64__)
	if (ra - text_lo < 4 || (ra & 3))
		return 0;
	uint32_t i;
	memcpy(&i, (const void *)(ra - 4), 4);
	return (i & 0xfc000000u) == 0x94000000u /* BL */ ||
	       (i & 0xfffffc1fu) == 0xd63f0000u; /* BLR */
#elif defined(__arm__)
	if (ra - text_lo < 4 || (ra & 3))
		return 0;
	uint32_t i;
	memcpy(&i, (const void *)(ra - 4), 4);
	return ((i & 0x0f000000u) == 0x0b000000u && (i >> 28) != 0xf) /* BL */ ||
	       (i & 0xfe000000u) == 0xfa000000u /* BLX imm */ ||
	       (i & 0x0ffffff0u) == 0x012fff30u; /* BLX reg */
#else
	(void)ra, (void)text_lo;
	return 0;
#endif
}

/* Sleds (sleds.h): a patched function's thunk keeps the caller's return address on the
 * thread's shadow stack, its own in the stack slot. Weak: only programs linked with
 * libjitt-sleds.a have them. On another thread's stack (a blocked thread's, scanned by the
 * control thread) the lookup finds nothing and the word is passed over, as before. */
extern int rb_sleds_is_thunk(uintptr_t addr) __attribute__((weak));
extern uintptr_t rb_sleds_return_of(uintptr_t slot) __attribute__((weak));

NO_INSTR SCAN_READS size_t rb_stack_scan(uintptr_t sp, uintptr_t top, uintptr_t text_lo, uintptr_t text_hi,
			      uintptr_t *out, size_t max)
{
	size_t n = 0;
	sp &= ~(uintptr_t)(sizeof(uintptr_t) - 1);
	if (top <= sp || text_hi <= text_lo)
		return 0;
	if (top - sp > SCAN_MAX_BYTES)
		top = sp + SCAN_MAX_BYTES;
	for (uintptr_t a = sp; a + sizeof(uintptr_t) <= top && n < max; a += sizeof(uintptr_t)) {
		uintptr_t w = *(volatile const uintptr_t *)a;
		if (rb_sleds_is_thunk && rb_sleds_is_thunk(w))
			w = rb_sleds_return_of(a);
		if (w > text_lo && w < text_hi && after_call(w, text_lo))
			out[n++] = w;
	}
	return n;
}
