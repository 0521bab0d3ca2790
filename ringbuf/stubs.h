/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/stubs.h - the doors from the trace point into its rare paths. Definitions, not
 * declarations: ring.c includes this once, at its end, and nothing else may.
 *
 * Why in ring.c's object: the stubs are toplevel asm, and under -flto an object's symbol
 * table (and so an archive's index, libjitt.a) lists only what the compiler's IR defines,
 * not what asm defines. As an object of its own, an app linked with libjitt.a never pulled
 * them in ("undefined reference to rb_put1_rare_saveall"). ring.o is always linked: every
 * trace point names rb_tls, which ring.c defines.
 *
 * The trace point (trace.h) calls its rare paths (ring.c: rb_slow_path, rb_put1_rare,
 * rb_put_wide) from an asm statement that tells the compiler it clobbers no register, so
 * that the traced function needs no frame for a call it almost never makes (trace.h,
 * RB_RARE). FN_saveall keeps that promise: it saves every register the C ABI lets FN
 * clobber, aligns the stack, calls FN with its argument and restores them all.
 *
 * What the caller's asm already did, per architecture:
 *   x86_64   stepped 128 bytes below the red zone, pushed the argument, CALL
 *   aarch64  saved x0 and x30 (the BL overwrites it), put the argument in x0, BL
 *   armv7    saved r0 and lr, put the argument in r0, BL
 * The flags, and the registers a PLT entry or linker veneer may use on the way (x86_64
 * r10 and r11, aarch64 x16 and x17, armv7 ip), are declared clobbered by the caller's asm.
 *
 * Vector registers are saved too (all caller-saved ones: x86_64 xmm0-15; aarch64 q0-q7
 * and q16-q31, whose low halves q8-q15 the callee keeps; armv7 d0-d7 and, with NEON,
 * d16-d31): the traced function may hold floating-point values across its trace points,
 * and GCC may use them in the C rare paths (or musl in clock_gettime) for copies. Legacy
 * SSE moves leave the upper halves of AVX registers alone, and nothing on these paths
 * uses AVX.
 *
 * Cost, only on the rare paths, with the caller's four instructions: 63 on x86_64, 53 on
 * aarch64, 15 on armv7 (with NEON). Next to a wrap or a stop, nothing; in clock mode (every
 * trace point, where the counter is unusable) noticeable beside clock_gettime itself, but
 * that mode is the slow fallback anyway.
 *
 * ThreadSanitizer builds and other architectures have no stubs: RB_RARE makes the plain
 * call there.
 */
#ifndef JITT_RINGBUF_STUBS_H
#define JITT_RINGBUF_STUBS_H

#include "ringbuf/trace.h"

#if defined(__SANITIZE_THREAD__)
/* RB_RARE is a plain call. */
#elif defined(__x86_64__)
__asm__(".macro rb_saveall_x86_64 fn\n"
	"	.pushsection .text.\\fn\\()_saveall,\"ax\",@progbits\n"
	"	.globl \\fn\\()_saveall\n"
	"	.type \\fn\\()_saveall,@function\n"
	"	.p2align 4\n"
	"\\fn\\()_saveall:\n"
	"	.cfi_startproc\n"
	"	push %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rbx, 0\n"
	"	mov %rsp, %rbx\n" /* [rbx]: rbx, 8(rbx): return, 16(rbx): the argument */
	"	.cfi_def_cfa_register %rbx\n"
	"	push %rax\n"
	"	push %rcx\n"
	"	push %rdx\n"
	"	push %rsi\n"
	"	push %rdi\n"
	"	push %r8\n"
	"	push %r9\n"
	"	push %r10\n"
	"	push %r11\n"
	"	and $-16, %rsp\n"
	"	sub $256, %rsp\n"
	"	movaps %xmm0, 0(%rsp)\n"
	"	movaps %xmm1, 16(%rsp)\n"
	"	movaps %xmm2, 32(%rsp)\n"
	"	movaps %xmm3, 48(%rsp)\n"
	"	movaps %xmm4, 64(%rsp)\n"
	"	movaps %xmm5, 80(%rsp)\n"
	"	movaps %xmm6, 96(%rsp)\n"
	"	movaps %xmm7, 112(%rsp)\n"
	"	movaps %xmm8, 128(%rsp)\n"
	"	movaps %xmm9, 144(%rsp)\n"
	"	movaps %xmm10, 160(%rsp)\n"
	"	movaps %xmm11, 176(%rsp)\n"
	"	movaps %xmm12, 192(%rsp)\n"
	"	movaps %xmm13, 208(%rsp)\n"
	"	movaps %xmm14, 224(%rsp)\n"
	"	movaps %xmm15, 240(%rsp)\n"
	"	mov 16(%rbx), %rdi\n"
	"	call \\fn@PLT\n"
	"	movaps 0(%rsp), %xmm0\n"
	"	movaps 16(%rsp), %xmm1\n"
	"	movaps 32(%rsp), %xmm2\n"
	"	movaps 48(%rsp), %xmm3\n"
	"	movaps 64(%rsp), %xmm4\n"
	"	movaps 80(%rsp), %xmm5\n"
	"	movaps 96(%rsp), %xmm6\n"
	"	movaps 112(%rsp), %xmm7\n"
	"	movaps 128(%rsp), %xmm8\n"
	"	movaps 144(%rsp), %xmm9\n"
	"	movaps 160(%rsp), %xmm10\n"
	"	movaps 176(%rsp), %xmm11\n"
	"	movaps 192(%rsp), %xmm12\n"
	"	movaps 208(%rsp), %xmm13\n"
	"	movaps 224(%rsp), %xmm14\n"
	"	movaps 240(%rsp), %xmm15\n"
	"	lea -72(%rbx), %rsp\n"
	"	pop %r11\n"
	"	pop %r10\n"
	"	pop %r9\n"
	"	pop %r8\n"
	"	pop %rdi\n"
	"	pop %rsi\n"
	"	pop %rdx\n"
	"	pop %rcx\n"
	"	pop %rax\n"
	"	pop %rbx\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	.cfi_restore %rbx\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size \\fn\\()_saveall, .-\\fn\\()_saveall\n"
	"	.popsection\n"
	".endm\n"
	"rb_saveall_x86_64 rb_slow_path\n"
	"rb_saveall_x86_64 rb_put1_rare\n"
	"rb_saveall_x86_64 rb_put_wide\n"
	".purgem rb_saveall_x86_64\n");
#elif defined(__aarch64__)
/* Frame: x29/x30 at 0, x1-x18 at 16..159, q0-q7 at 160..287, q16-q31 at 288..543. */
__asm__(".macro rb_saveall_aarch64 fn\n"
	"	.pushsection .text.\\fn\\()_saveall,\"ax\",%progbits\n"
	"	.globl \\fn\\()_saveall\n"
	"	.type \\fn\\()_saveall,%function\n"
	"	.p2align 2\n"
	"\\fn\\()_saveall:\n"
	"	.cfi_startproc\n"
	"	sub sp, sp, #544\n"
	"	.cfi_def_cfa_offset 544\n"
	"	stp x29, x30, [sp]\n"
	"	.cfi_offset x29, -544\n"
	"	.cfi_offset x30, -536\n"
	"	mov x29, sp\n"
	"	stp x1, x2, [sp, #16]\n"
	"	stp x3, x4, [sp, #32]\n"
	"	stp x5, x6, [sp, #48]\n"
	"	stp x7, x8, [sp, #64]\n"
	"	stp x9, x10, [sp, #80]\n"
	"	stp x11, x12, [sp, #96]\n"
	"	stp x13, x14, [sp, #112]\n"
	"	stp x15, x16, [sp, #128]\n"
	"	stp x17, x18, [sp, #144]\n"
	"	stp q0, q1, [sp, #160]\n"
	"	stp q2, q3, [sp, #192]\n"
	"	stp q4, q5, [sp, #224]\n"
	"	stp q6, q7, [sp, #256]\n"
	"	stp q16, q17, [sp, #288]\n"
	"	stp q18, q19, [sp, #320]\n"
	"	stp q20, q21, [sp, #352]\n"
	"	stp q22, q23, [sp, #384]\n"
	"	stp q24, q25, [sp, #416]\n"
	"	stp q26, q27, [sp, #448]\n"
	"	stp q28, q29, [sp, #480]\n"
	"	stp q30, q31, [sp, #512]\n"
	"	bl \\fn\n"
	"	ldp q0, q1, [sp, #160]\n"
	"	ldp q2, q3, [sp, #192]\n"
	"	ldp q4, q5, [sp, #224]\n"
	"	ldp q6, q7, [sp, #256]\n"
	"	ldp q16, q17, [sp, #288]\n"
	"	ldp q18, q19, [sp, #320]\n"
	"	ldp q20, q21, [sp, #352]\n"
	"	ldp q22, q23, [sp, #384]\n"
	"	ldp q24, q25, [sp, #416]\n"
	"	ldp q26, q27, [sp, #448]\n"
	"	ldp q28, q29, [sp, #480]\n"
	"	ldp q30, q31, [sp, #512]\n"
	"	ldp x1, x2, [sp, #16]\n"
	"	ldp x3, x4, [sp, #32]\n"
	"	ldp x5, x6, [sp, #48]\n"
	"	ldp x7, x8, [sp, #64]\n"
	"	ldp x9, x10, [sp, #80]\n"
	"	ldp x11, x12, [sp, #96]\n"
	"	ldp x13, x14, [sp, #112]\n"
	"	ldp x15, x16, [sp, #128]\n"
	"	ldp x17, x18, [sp, #144]\n"
	"	ldp x29, x30, [sp]\n"
	"	add sp, sp, #544\n"
	"	.cfi_def_cfa_offset 0\n"
	"	.cfi_restore x29\n"
	"	.cfi_restore x30\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size \\fn\\()_saveall, .-\\fn\\()_saveall\n"
	"	.popsection\n"
	".endm\n"
	"rb_saveall_aarch64 rb_slow_path\n"
	"rb_saveall_aarch64 rb_put1_rare\n"
	"rb_saveall_aarch64 rb_put_wide\n"
	".purgem rb_saveall_aarch64\n");
#elif defined(__arm__)
/* r4 keeps the unaligned stack pointer; the VFP registers go below the aligned one. */
#if defined(__ARM_NEON)
#define RB_VPUSH "	vpush {d0-d7}\n	vpush {d16-d31}\n"
#define RB_VPOP "	vpop {d16-d31}\n	vpop {d0-d7}\n"
#elif defined(__ARM_FP)
#define RB_VPUSH "	vpush {d0-d7}\n"
#define RB_VPOP "	vpop {d0-d7}\n"
#else
#define RB_VPUSH ""
#define RB_VPOP ""
#endif
__asm__(".macro rb_saveall_arm fn\n"
	"	.pushsection .text.\\fn\\()_saveall,\"ax\",%progbits\n"
	"	.globl \\fn\\()_saveall\n"
	"	.type \\fn\\()_saveall,%function\n"
	"	.p2align 2\n"
	"\\fn\\()_saveall:\n"
	"	push {r1, r2, r3, r4, ip, lr}\n"
	"	mov r4, sp\n"
	"	bic ip, r4, #7\n"
	"	mov sp, ip\n" RB_VPUSH "	bl \\fn\n" RB_VPOP "	mov sp, r4\n"
	"	pop {r1, r2, r3, r4, ip, pc}\n"
	"	.size \\fn\\()_saveall, .-\\fn\\()_saveall\n"
	"	.popsection\n"
	".endm\n"
	"rb_saveall_arm rb_slow_path\n"
	"rb_saveall_arm rb_put1_rare\n"
	"rb_saveall_arm rb_put_wide\n"
	".purgem rb_saveall_arm\n");
#endif

#endif
