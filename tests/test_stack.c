/* SPDX-License-Identifier: MIT */
/* The outer frames' scan (ringbuf/stack.h): a chain of real calls finds its own return
 * addresses on the stack, innermost first. */
#define _GNU_SOURCE
#include "harness.h"
#include "ringbuf/stack.h"

#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uintptr_t want[3], found[RB_STACK_MAX];
static size_t nfound;

/* The main program's executable segments: what the runtime scans for (ring.c). */
struct code {
	uintptr_t lo, hi;
};

__attribute__((no_instrument_function)) static int main_code(struct dl_phdr_info *info, size_t size,
							     void *arg)
{
	(void)size;
	struct code *c = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			c->lo = !c->lo || lo < c->lo ? lo : c->lo;
			c->hi = lo + ph->p_memsz > c->hi ? lo + ph->p_memsz : c->hi;
		}
	}
	return 1;
}

__attribute__((noinline, no_instrument_function)) static void level3(void)
{
	want[2] = (uintptr_t)__builtin_return_address(0); /* in level2 */
	uintptr_t top;
	if (rb_stack_top(&top) != 0) {
		nfound = 0;
		return;
	}
	struct code code = { 0, 0 };
	dl_iterate_phdr(main_code, &code);
	nfound = rb_stack_scan((uintptr_t)__builtin_frame_address(0), top, code.lo, code.hi, found,
			       RB_STACK_MAX);
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline, no_instrument_function)) static void level2(void)
{
	want[1] = (uintptr_t)__builtin_return_address(0); /* in level1 */
	level3();
	__asm__ __volatile__("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline, no_instrument_function)) static void level1(void)
{
	want[0] = (uintptr_t)__builtin_return_address(0); /* in the test */
	level2();
	__asm__ __volatile__("" ::: "memory");
}

TEST(stack_scan_finds_the_return_addresses_of_open_calls_innermost_first)
{
	level1();
	int at[3] = { -1, -1, -1 };
	for (size_t i = 0; i < nfound; i++)
		for (int k = 0; k < 3; k++)
			if (found[i] == want[k] && at[k] < 0)
				at[k] = (int)i;
	if (!CHECK(at[0] >= 0 && at[1] >= 0 && at[2] >= 0))
		printf("    found %zu; want %#lx %#lx %#lx\n", nfound, (unsigned long)want[0],
		       (unsigned long)want[1], (unsigned long)want[2]);
	CHECK(at[2] < at[1] && at[1] < at[0]);
}

TEST(stack_scan_of_nothing_finds_nothing)
{
	uintptr_t out[4];
	CHECK_EQ_U64(rb_stack_scan(1000, 1000, 0, 1 << 30, out, 4), 0);
	CHECK_EQ_U64(rb_stack_scan(1000, 2000, 5, 5, out, 4), 0);
}

#if defined(__x86_64__)
/* Each form x86-64 compilers emit for a call, found after it; bytes that end no call, not
 * (an indirect call at a large offset, call *0x1e0(%rbx), is how memcached calls its
 * connection's sendmsg: a frame the scan once missed). */
TEST(stack_scan_knows_each_form_of_an_x86_call)
{
	static const struct {
		uint8_t bytes[8];
		uint8_t len;
		int call;
	} forms[] = {
		{ { 0xe8, 1, 2, 3, 4 }, 5, 1 },			 /* call rel32 */
		{ { 0xff, 0xd0 }, 2, 1 },			 /* call *%rax */
		{ { 0x41, 0xff, 0xd3 }, 3, 1 },			 /* call *%r11 */
		{ { 0xff, 0x13 }, 2, 1 },			 /* call *(%rbx) */
		{ { 0xff, 0x14, 0xc5 }, 3, 1 },			 /* call *(,%rax,8) SIB */
		{ { 0xff, 0x53, 0x10 }, 3, 1 },			 /* call *0x10(%rbx) */
		{ { 0xff, 0x54, 0x24, 0x08 }, 4, 1 },		 /* call *0x8(%rsp) */
		{ { 0xff, 0x93, 0xe0, 0x01, 0, 0 }, 6, 1 },	 /* call *0x1e0(%rbx) */
		{ { 0xff, 0x15, 1, 2, 3, 4 }, 6, 1 },		 /* call *disp32(%rip) */
		{ { 0xff, 0x94, 0xc3, 0, 1, 0, 0 }, 7, 1 },	 /* call *0x100(%rbx,%rax,8) */
		{ { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 }, 7, 0 }, /* nops */
		{ { 0xff, 0xe0 }, 2, 0 },			 /* jmp *%rax */
		{ { 0xff, 0x63, 0x10 }, 3, 0 },			 /* jmp *0x10(%rbx) */
	};
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		/* The code: padding that is no call, then the form, ending at the word. */
		uint8_t code[32];
		memset(code, 0x90, sizeof(code));
		memcpy(code + 16 - forms[f].len, forms[f].bytes, forms[f].len);
		uintptr_t stack[2] = { (uintptr_t)(code + 16), 0 };
		uintptr_t out[2];
		size_t n = rb_stack_scan((uintptr_t)stack, (uintptr_t)(stack + 2), (uintptr_t)code,
					 (uintptr_t)(code + sizeof(code)), out, 2);
		if (!CHECK(n == (size_t)forms[f].call))
			printf("    form %zu: found %zu\n", f, n);
	}
}
#endif
