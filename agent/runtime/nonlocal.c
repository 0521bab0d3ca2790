/* SPDX-License-Identifier: MIT */
/*
 * Non-local exits: a longjmp leaves frames whose exit hooks never run, and a thread that
 * calls pthread_exit leaves all of them. Without a word in the ring the decoder would keep
 * them open for ever (an interpreter's error() or a coroutine's yield: tens of thousands of
 * calls "still running" in one trace). So the runtime wraps the jumps, as it wraps the
 * blocking calls (wrap.c, the same -Wl,--wrap flags): setjmp writes a setjmp record with
 * the jump buffer's key, longjmp a longjmp record with it, pthread_exit a longjmp with key
 * 0; the decoder closes the frames left (ringbuf/decode.h). The hot path pays nothing: the
 * trace point is unchanged, and the records are written by these wrappers only, two slots
 * each and only on a traced thread.
 *
 * Mechanism chosen over the alternatives: an exit record carrying the function's id would
 * let the decoder match exits to entries without help, at one more instruction or two at
 * every exit (the address, PC-relative in PIE); walking the stack at the longjmp needs
 * unwind tables and the target's stack pointer, which glibc mangles inside jmp_buf. The
 * setjmp record gives the decoder the depth to return to instead, exactly, at the cost of
 * one call of a wrapper per setjmp (an interpreter's protected call) and per longjmp.
 *
 * setjmp returns twice, so its wrapper cannot be a C function that calls the real one and
 * returns: it is a few instructions of assembly that save the arguments, note the record
 * (note_setjmp), restore them and jump to the real setjmp, which then saves the caller's
 * own return address and stack. C++ exceptions need none of this: GCC runs an
 * instrumented function's exit hook in its cleanup when an exception unwinds through it
 * (tests/nonlocal-check.sh checks it).
 *
 * Coroutines (glibc's ucontext; musl has none): makecontext, swapcontext and setcontext
 * each write a record with the context's key (record.h, RB_CTX_*), and the decoder keeps
 * each context's frames apart (ringbuf/coroutines.h). swapcontext returns when its context
 * is resumed, into this wrapper's frame, which waits on the context's own stack meanwhile:
 * a C wrapper does. makecontext is variadic: its wrapper is a trampoline like setjmp's,
 * saving every argument register.
 *
 * Names: musl's setjmp, _setjmp, sigsetjmp, longjmp, _longjmp, siglongjmp are functions;
 * glibc's sigsetjmp is a macro for __sigsetjmp, and with _FORTIFY_SOURCE its longjmp,
 * _longjmp and siglongjmp become __longjmp_chk. The SDK's flags for each libc name its own
 * (agent/runtime/Kbuild).
 */
#define _GNU_SOURCE
#include "agent/runtime/runtime.h"
#include "ringbuf/trace.h"

#include <stdint.h>

/* The key of a jump buffer or a ucontext: the low half of its address (a buffer on the
 * stack of a function that is still running when it is jumped to). */
RT static inline uint32_t jmpbuf_key(const void *env)
{
	uint32_t key = (uint32_t)(uintptr_t)env;
	return key ? key : 1; /* 0 means "every frame" (pthread_exit) */
}

/* Called by the setjmp trampolines below (asm: `used` keeps it under LTO). */
RT __attribute__((used)) void jitt_note_setjmp(const void *env);
RT __attribute__((used)) void jitt_note_setjmp(const void *env)
{
	rb_special(RB_SETJMP, jmpbuf_key(env));
}

/*
 * __wrap_NAME: save the first two arguments (env, and sigsetjmp's savemask) and the return
 * address, call jitt_note_setjmp(env), restore, and jump to __real_NAME, which sees the
 * caller's stack and return address as if called directly.
 */
#if defined(__x86_64__)
#define SETJMP_TRAMPOLINE(name)                                                            \
	__asm__(".text\n\t.globl __wrap_" #name "\n\t.type __wrap_" #name ",@function\n"   \
		"__wrap_" #name ":\n\t"                                                   \
		"push %rdi\n\t"                                                           \
		"push %rsi\n\t"                                                           \
		"sub $8, %rsp\n\t" /* the C call's 16-byte alignment */                   \
		"call jitt_note_setjmp@PLT\n\t"                                           \
		"add $8, %rsp\n\t"                                                        \
		"pop %rsi\n\t"                                                            \
		"pop %rdi\n\t"                                                            \
		"jmp __real_" #name "@PLT\n\t"                                            \
		".size __wrap_" #name ", .-__wrap_" #name)
#elif defined(__aarch64__)
#define SETJMP_TRAMPOLINE(name)                                                            \
	__asm__(".text\n\t.globl __wrap_" #name "\n\t.type __wrap_" #name ",%function\n"   \
		"__wrap_" #name ":\n\t"                                                   \
		"stp x0, x1, [sp, #-32]!\n\t"                                             \
		"str x30, [sp, #16]\n\t"                                                  \
		"bl jitt_note_setjmp\n\t"                                                 \
		"ldr x30, [sp, #16]\n\t"                                                  \
		"ldp x0, x1, [sp], #32\n\t"                                               \
		"b __real_" #name "\n\t"                                                  \
		".size __wrap_" #name ", .-__wrap_" #name)
#elif defined(__arm__)
#define SETJMP_TRAMPOLINE(name)                                                            \
	__asm__(".text\n\t.arm\n\t.globl __wrap_" #name "\n\t.type __wrap_" #name ",%function\n" \
		"__wrap_" #name ":\n\t"                                                   \
		"push {r0, r1, r2, lr}\n\t" /* 16 bytes: the stack stays 8-aligned */     \
		"bl jitt_note_setjmp\n\t"                                                 \
		"pop {r0, r1, r2, lr}\n\t"                                                \
		"b __real_" #name "\n\t"                                                  \
		".size __wrap_" #name ", .-__wrap_" #name)
#else
#error "agent/runtime/nonlocal.c: no setjmp trampoline for this architecture"
#endif

#define LONGJMP_WRAPPER(name)                                                              \
	_Noreturn void __real_##name(void *env, int val);                                 \
	RT _Noreturn void __wrap_##name(void *env, int val);                              \
	RT _Noreturn void __wrap_##name(void *env, int val)                               \
	{                                                                                  \
		rb_special(RB_LONGJMP, jmpbuf_key(env));                                   \
		__real_##name(env, val);                                                   \
	}

SETJMP_TRAMPOLINE(setjmp);
SETJMP_TRAMPOLINE(_setjmp);
LONGJMP_WRAPPER(longjmp)
LONGJMP_WRAPPER(_longjmp)
LONGJMP_WRAPPER(siglongjmp)
#if defined(__GLIBC__)
SETJMP_TRAMPOLINE(__sigsetjmp);
LONGJMP_WRAPPER(__longjmp_chk)
#else
SETJMP_TRAMPOLINE(sigsetjmp);
#endif

#if defined(__GLIBC__)
#include <ucontext.h>

/* Called by the makecontext trampoline below. */
RT __attribute__((used)) void jitt_note_makecontext(const void *ucp);
RT __attribute__((used)) void jitt_note_makecontext(const void *ucp)
{
	rb_special(RB_CTX_MADE, jmpbuf_key(ucp));
}

/* __wrap_makecontext(ucp, func, argc, ...): every argument register saved around the note
 * (the variadic ones too, and %al, the x86-64 count of vector registers used), then a jump
 * to the real one with the caller's stack (arguments past the registers are there). */
#if defined(__x86_64__)
__asm__(".text\n\t.globl __wrap_makecontext\n\t.type __wrap_makecontext,@function\n"
	"__wrap_makecontext:\n\t"
	"push %rdi\n\tpush %rsi\n\tpush %rdx\n\tpush %rcx\n\t"
	"push %r8\n\tpush %r9\n\tpush %rax\n\t" /* 7 pushes: the call is 16-aligned */
	"call jitt_note_makecontext@PLT\n\t"
	"pop %rax\n\tpop %r9\n\tpop %r8\n\tpop %rcx\n\t"
	"pop %rdx\n\tpop %rsi\n\tpop %rdi\n\t"
	"jmp __real_makecontext@PLT\n\t"
	".size __wrap_makecontext, .-__wrap_makecontext");
#elif defined(__aarch64__)
__asm__(".text\n\t.globl __wrap_makecontext\n\t.type __wrap_makecontext,%function\n"
	"__wrap_makecontext:\n\t"
	"stp x0, x1, [sp, #-80]!\n\tstp x2, x3, [sp, #16]\n\t"
	"stp x4, x5, [sp, #32]\n\tstp x6, x7, [sp, #48]\n\tstr x30, [sp, #64]\n\t"
	"bl jitt_note_makecontext\n\t"
	"ldr x30, [sp, #64]\n\tldp x6, x7, [sp, #48]\n\tldp x4, x5, [sp, #32]\n\t"
	"ldp x2, x3, [sp, #16]\n\tldp x0, x1, [sp], #80\n\t"
	"b __real_makecontext\n\t"
	".size __wrap_makecontext, .-__wrap_makecontext");
#elif defined(__arm__)
__asm__(".text\n\t.arm\n\t.globl __wrap_makecontext\n\t.type __wrap_makecontext,%function\n"
	"__wrap_makecontext:\n\t"
	"push {r0, r1, r2, r3, ip, lr}\n\t" /* 24 bytes: the stack stays 8-aligned */
	"bl jitt_note_makecontext\n\t"
	"pop {r0, r1, r2, r3, ip, lr}\n\t"
	"b __real_makecontext\n\t"
	".size __wrap_makecontext, .-__wrap_makecontext");
#endif

int __real_swapcontext(ucontext_t *oucp, const ucontext_t *ucp);
RT int __wrap_swapcontext(ucontext_t *oucp, const ucontext_t *ucp);
RT int __wrap_swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	rb_special(RB_CTX_SWAP, jmpbuf_key(oucp));
	rb_special(RB_CTX_SET, jmpbuf_key(ucp));
	return __real_swapcontext(oucp, ucp);
}

int __real_setcontext(const ucontext_t *ucp);
RT int __wrap_setcontext(const ucontext_t *ucp);
RT int __wrap_setcontext(const ucontext_t *ucp)
{
	rb_special(RB_CTX_SET, jmpbuf_key(ucp));
	return __real_setcontext(ucp);
}
#endif

_Noreturn void __real_pthread_exit(void *ret);
RT _Noreturn void __wrap_pthread_exit(void *ret);
RT _Noreturn void __wrap_pthread_exit(void *ret)
{
	rb_special(RB_LONGJMP, 0);
	__real_pthread_exit(ret);
}
