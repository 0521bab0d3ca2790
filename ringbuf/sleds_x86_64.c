/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/sleds_x86_64.c - the sleds of a program built with -fpatchable-function-entry=5
 * patched at start-up into jumps to thunks that trace the call (ringbuf/sleds.h says how).
 *
 * Compiled without LTO and with -mgeneral-regs-only (agent/runtime/Kbuild): the two hooks
 * the thunks call save every register they touch (no_caller_saved_registers), because a
 * thunk runs between a caller and its callee, with the arguments live in any register, and
 * they must never touch a vector register (floating-point arguments and return values).
 */
#define _GNU_SOURCE
#include "ringbuf/sleds.h"
#include "ringbuf/trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The linker's bounds of GCC's table of sled addresses (one 8-byte address per function,
 * relocated at load time); weak, so a program without sleds links with both NULL. */
extern const uintptr_t __start___patchable_function_entries[]
	__attribute__((weak, visibility("hidden")));
extern const uintptr_t __stop___patchable_function_entries[]
	__attribute__((weak, visibility("hidden")));

const uintptr_t *rb_sleds_list(size_t *n)
{
	const uintptr_t *b = __start___patchable_function_entries;
	*n = b ? (size_t)(__stop___patchable_function_entries - b) : 0;
	return b;
}

/* ---- the shadow stack: each traced call's return address, and the slot it came from ---- */

struct sled_frame {
	uintptr_t *slot;
	uintptr_t ret;
};

/* Reserved, not committed (MAP_NORESERVE): pages are touched only as deep as calls go. A
 * million frames is deeper than an 8 MiB stack of 16-byte frames can hold. */
#define SHADOW_FRAMES (1u << 20)

static __thread struct sled_frame *shadow __attribute__((tls_model(RB_TLS_MODEL)));
static __thread uint32_t shadow_depth __attribute__((tls_model(RB_TLS_MODEL)));
static pthread_key_t shadow_key;
static pthread_once_t shadow_once = PTHREAD_ONCE_INIT;

static void shadow_free(void *p)
{
	munmap(p, SHADOW_FRAMES * sizeof(struct sled_frame));
	shadow = NULL;
	shadow_depth = 0;
}

static void shadow_key_make(void)
{
	(void)pthread_key_create(&shadow_key, shadow_free);
}

int rb_sleds_thread_init(void)
{
	if (shadow)
		return 0;
	void *p = mmap(NULL, SHADOW_FRAMES * sizeof(struct sled_frame), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	(void)pthread_once(&shadow_once, shadow_key_make);
	(void)pthread_setspecific(shadow_key, p);
	shadow = p;
	shadow_depth = 0;
	return 0;
}

/* A thunk's state cannot be trusted any more (a return whose slot the shadow stack never
 * saw): there is no return address to go back to, so the process ends, loudly. */
__attribute__((noreturn, cold)) static void shadow_lost(const char *why)
{
	static const char head[] = "jitt: sleds: ";
	(void)!write(2, head, sizeof(head) - 1);
	(void)!write(2, why, strlen(why));
	(void)!write(2, "\n", 1);
	abort();
}

#define HOOK __attribute__((no_caller_saved_registers, used, noinline))

/* The thunk's entry, on a traced thread (rb_tls.pos was not 0): slot holds the caller's
 * return address, which the thunk then replaces with its own. */
#define SLED_ENTER(name, point)                                                            \
	HOOK void name(uint32_t id, uintptr_t *slot)                                      \
	{                                                                                  \
		struct sled_frame *s = shadow;                                             \
		uint32_t d = shadow_depth;                                                 \
		if (__builtin_expect(!s || d >= SHADOW_FRAMES, 0))                         \
			shadow_lost(s ? "calls nested over a million deep" : "no shadow stack"); \
		s[d].slot = slot;                                                          \
		s[d].ret = *slot;                                                          \
		shadow_depth = d + 1;                                                      \
		point(id);                                                                 \
	}
/* The body returned to the thunk, whose return slot is slot again: the caller's address
 * goes back there. Frames above it whose slot is below it are calls a longjmp left. */
#define SLED_EXIT(name, point)                                                             \
	HOOK void name(uintptr_t *slot)                                                   \
	{                                                                                  \
		struct sled_frame *s = shadow;                                             \
		uint32_t d = shadow_depth;                                                 \
		while (d && s[d - 1].slot < slot)                                          \
			d--;                                                               \
		if (__builtin_expect(!d || s[d - 1].slot != slot, 0))                      \
			shadow_lost("a return the shadow stack never saw");                \
		d--;                                                                       \
		*slot = s[d].ret;                                                          \
		shadow_depth = d;                                                          \
		point(RB_EXIT);                                                            \
	}

SLED_ENTER(rb_sled_enter_timed, rb_point)
SLED_EXIT(rb_sled_exit_timed, rb_point)
SLED_ENTER(rb_sled_enter_sampled, rb_point_sampled)
SLED_EXIT(rb_sled_exit_sampled, rb_point_sampled)

uintptr_t rb_sleds_return_of(uintptr_t slot)
{
	const struct sled_frame *s = shadow;
	for (uint32_t d = shadow_depth; s && d; d--)
		if ((uintptr_t)s[d - 1].slot == slot)
			return s[d - 1].ret;
	return 0;
}

/* ---- the thunks ---- */

/*
 * One per patched function, THUNK_SIZE bytes, made from this template:
 *   00 cmpq $0, %fs:POS          untraced thread (rb_tls.pos 0): straight to the body
 *   0a je   BODY
 *   10 push %rdi; push %rsi; sub $8, %rsp
 *   16 lea  0x18(%rsp), %rsi     the slot of the caller's return address
 *   1b mov  $ID, %edi            the entry record's low half (trace.h, rb_enter)
 *   20 call ENTER
 *   25 add  $8, %rsp; pop %rsi; pop %rdi
 *   2b lea  8(%rsp), %rsp        the caller's address off the stack, so that the call
 *   30 call BODY                 below puts the thunk's in the same slot
 *   35 sub  $16, %rsp            back to that slot, kept aligned for the call
 *   39 lea  8(%rsp), %rdi
 *   3e call EXIT                 puts the caller's address back in the slot
 *   43 add  $8, %rsp
 *   47 ret                       to the caller, as its call's prediction says
 * BODY is the function's entry + 5, past the sled. The flags are free at a function's
 * entry and after its return; so are %rdi and %rsi after the return.
 */
static const unsigned char thunk_template[] = {
	0x64, 0x48, 0x83, 0x3c, 0x25, 0, 0, 0, 0, 0x00,
	0x0f, 0x84, 0, 0, 0, 0,
	0x57, 0x56, 0x48, 0x83, 0xec, 0x08,
	0x48, 0x8d, 0x74, 0x24, 0x18,
	0xbf, 0, 0, 0, 0,
	0xe8, 0, 0, 0, 0,
	0x48, 0x83, 0xc4, 0x08, 0x5e, 0x5f,
	0x48, 0x8d, 0x64, 0x24, 0x08,
	0xe8, 0, 0, 0, 0,
	0x48, 0x83, 0xec, 0x10,
	0x48, 0x8d, 0x7c, 0x24, 0x08,
	0xe8, 0, 0, 0, 0,
	0x48, 0x83, 0xc4, 0x08,
	0xc3,
};
enum {
	AT_POS = 0x05,
	AT_JE = 0x0c,
	AT_ID = 0x1c,
	AT_ENTER = 0x21,
	AT_BODY = 0x31,
	AT_EXIT = 0x3f,
	THUNK_SIZE = 80,
};
_Static_assert(sizeof(thunk_template) == 0x48 && sizeof(thunk_template) <= THUNK_SIZE,
	       "the template's offsets");

#define SLED_BYTES 5
static const unsigned char sled_nops[SLED_BYTES] = { 0x90, 0x90, 0x90, 0x90, 0x90 };

static uintptr_t thunks_lo, thunks_hi;
static atomic_int patched_once;

int rb_sleds_is_thunk(uintptr_t addr)
{
	return addr >= thunks_lo && addr < thunks_hi;
}

/* rel32 from the end of the 4-byte field at `at` to target; false when out of reach. */
static bool put_rel32(unsigned char *at, uintptr_t target)
{
	int64_t rel = (int64_t)(target - ((uintptr_t)at + 4));
	if (rel != (int32_t)rel)
		return false;
	int32_t r = (int32_t)rel;
	memcpy(at, &r, 4);
	return true;
}

static bool skipped(uintptr_t a, const uintptr_t *skip, size_t n)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (skip[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && skip[lo] == a;
}

/* Anonymous pages for the thunks within reach of a rel32 from every sled and hook: tried
 * from just past the highest sled upwards (the kernel may refuse a hint: MAP_FIXED_NOREPLACE
 * then fails, and the next is tried). */
static unsigned char *thunks_map(uintptr_t lo, uintptr_t hi, size_t size)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (uintptr_t hint = (hi + (1u << 20)) & ~(page - 1); hint - lo < (1ull << 30);
	     hint += 1u << 22) {
		void *p = mmap((void *)hint, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED) {
			if ((uintptr_t)p == hint)
				return p;
			munmap(p, size); /* a kernel before 4.17 took it as a plain hint */
		}
	}
	return NULL;
}

int rb_sleds_patch(const uintptr_t *skip, size_t nskip, enum rb_sled_time time,
		   struct rb_sleds_stats *st)
{
	memset(st, 0, sizeof(*st));
	size_t n;
	const uintptr_t *e = rb_sleds_list(&n);
	if (!n)
		return -ENOENT;
	if (atomic_exchange(&patched_once, 1))
		return -EALREADY;
	st->sleds = n;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (size_t i = 0; i < n; i++) {
		lo = e[i] < lo ? e[i] : lo;
		hi = e[i] > hi ? e[i] : hi;
	}
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t size = (n * THUNK_SIZE + page - 1) & ~(page - 1);
	unsigned char *t = thunks_map(lo, hi, size);
	if (!t)
		return -ENOMEM;

	/* rb_tls.pos as an offset from the thread pointer: the executable's TLS block is at
	 * the same offset in every thread (local-exec). */
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	int64_t pos_off = (int64_t)((uintptr_t)&rb_tls.pos - tp);
	int32_t pos32 = (int32_t)pos_off;
	uintptr_t enter = (uintptr_t)(time == RB_SLED_SAMPLED ? rb_sled_enter_sampled
							      : rb_sled_enter_timed);
	uintptr_t exit = (uintptr_t)(time == RB_SLED_SAMPLED ? rb_sled_exit_sampled
							     : rb_sled_exit_timed);
	bool reach = pos_off == pos32;
	for (size_t i = 0; i < n && reach; i++) {
		unsigned char *c = t + i * THUNK_SIZE;
		memcpy(c, thunk_template, sizeof(thunk_template));
		memset(c + sizeof(thunk_template), 0xcc, THUNK_SIZE - sizeof(thunk_template));
		memcpy(c + AT_POS, &pos32, 4);
		uint32_t id = (uint32_t)e[i];
		memcpy(c + AT_ID, &id, 4);
		reach = put_rel32(c + AT_JE, e[i] + SLED_BYTES) &&
			put_rel32(c + AT_ENTER, enter) &&
			put_rel32(c + AT_BODY, e[i] + SLED_BYTES) && put_rel32(c + AT_EXIT, exit);
	}
	if (!reach || mprotect(t, size, PROT_READ | PROT_EXEC)) {
		int err = reach ? errno : ERANGE;
		munmap(t, size);
		return -err;
	}
	thunks_lo = (uintptr_t)t;
	thunks_hi = (uintptr_t)t + n * THUNK_SIZE;

	/* The text, writable for the moment of the patching. Executable too: this code may
	 * lie in the same pages. */
	uintptr_t plo = lo & ~(page - 1), phi = (hi + SLED_BYTES + page - 1) & ~(page - 1);
	if (mprotect((void *)plo, phi - plo, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -errno;
	for (size_t i = 0; i < n; i++) {
		unsigned char *f = (unsigned char *)e[i];
		if (skipped(e[i], skip, nskip)) {
			st->excluded++;
			continue;
		}
		if (memcmp(f, sled_nops, SLED_BYTES)) {
			st->foreign++;
			continue;
		}
		unsigned char jmp[SLED_BYTES] = { 0xe9 }; /* jmp rel32, from f's sled */
		int32_t rel = (int32_t)((int64_t)((uintptr_t)(t + i * THUNK_SIZE) -
						  ((uintptr_t)f + SLED_BYTES)));
		memcpy(jmp + 1, &rel, 4);
		memcpy(f, jmp, SLED_BYTES);
		st->patched++;
	}
	if (mprotect((void *)plo, phi - plo, PROT_READ | PROT_EXEC))
		return -errno;
	return 0;
}
