/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/sleds_x86_64.c - the sleds of a program built with -fpatchable-function-entry=5
 * patched at start-up into jumps to thunks that trace the call (ringbuf/sleds.h says how).
 *
 * Compiled without LTO and with -mgeneral-regs-only (agent/runtime/Kbuild): the hooks the
 * thunks call save every register they touch (no_caller_saved_registers), because a thunk
 * runs between a caller and its callee, with the arguments live in any register, and they
 * must never touch a vector register (floating-point arguments and return values).
 */
#define _GNU_SOURCE
#include "ringbuf/ring.h"
#include "ringbuf/sleds.h"
#include "ringbuf/trace.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
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

#define SLED_BYTES 5 /* -fpatchable-function-entry=5: room for a jmp rel32 */
static uintptr_t page_bytes; /* the system's, from rb_sleds_patch on */

/* What a sled leads to: nothing (out of the trace), its thunk, or its counted thunk; or
 * not known (a sled the patch left alone). sled_modes holds each sled's, so that setting
 * sleds makes writable only the pages of those that change: each mprotect of the text
 * walks its pages and sends the app's CPUs a TLB flush, and most of a window's decision
 * repeats the last one. */
enum sled_mode { SLED_OUT, SLED_TRACED, SLED_COUNTED, SLED_UNKNOWN };
static unsigned char *sled_modes;

/* ---- the shadow stack: each traced call's return address, and the slot it came from ---- */

struct sled_frame {
	uintptr_t *slot;
	uintptr_t ret;
};

/* Reserved, not committed (MAP_NORESERVE): pages are touched only as deep as calls go. A
 * million frames is deeper than an 8 MiB stack of 16-byte frames can hold; past them lies
 * a page that is never accessible, so that the sampled thunk, which does not compare, faults
 * there rather than write past the stack. */
#define SHADOW_FRAMES (1u << 20)
#define SHADOW_BYTES (SHADOW_FRAMES * sizeof(struct sled_frame))

/* The thread's shadow stack and its next free frame (the thunks read and write that in one
 * instruction each). */
static __thread struct sled_frame *shadow __attribute__((tls_model(RB_TLS_MODEL)));
static __thread struct sled_frame *shadow_top __attribute__((tls_model(RB_TLS_MODEL)));
static pthread_key_t shadow_key;
static pthread_once_t shadow_once = PTHREAD_ONCE_INIT;

static void shadow_free(void *p)
{
	munmap(p, SHADOW_BYTES + (size_t)sysconf(_SC_PAGESIZE));
	shadow = shadow_top = NULL;
}

static void shadow_key_make(void)
{
	(void)pthread_key_create(&shadow_key, shadow_free);
}

int rb_sleds_thread_init(void)
{
	if (shadow)
		return 0;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, SHADOW_BYTES + page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (mprotect(p + SHADOW_BYTES, page, PROT_NONE)) {
		int err = errno;
		munmap(p, SHADOW_BYTES + page);
		return -err;
	}
	(void)pthread_once(&shadow_once, shadow_key_make);
	(void)pthread_setspecific(shadow_key, p);
	shadow = shadow_top = (struct sled_frame *)p;
	return 0;
}

/* A thunk's state cannot be trusted any more (a return whose slot the shadow stack never
 * saw): there is no return address to go back to, so the process ends, loudly. The
 * message's length is the literal's (shadow_lost): a strlen() call would go through its
 * own sled (sleds_libc.c), on the thread whose shadow stack is lost. */
__attribute__((noreturn, cold)) static void shadow_lost_n(const char *why, size_t len)
{
	static const char head[] = "jitt: sleds: ";
	(void)!write(2, head, sizeof(head) - 1);
	(void)!write(2, why, len);
	(void)!write(2, "\n", 1);
	abort();
}
#define shadow_lost(literal) shadow_lost_n(literal, sizeof(literal) - 1)

#define HOOK __attribute__((no_caller_saved_registers, used, noinline))

/* The thunk's entry, on a traced thread (rb_tls.pos was not 0): slot holds the caller's
 * return address, which the thunk then replaces with its own. */
#define SLED_ENTER(name, point)                                                            \
	HOOK void name(uint32_t id, uintptr_t *slot)                                      \
	{                                                                                  \
		struct sled_frame *t = shadow_top;                                         \
		if (__builtin_expect(!t, 0))                                               \
			shadow_lost("no shadow stack");                                    \
		if (__builtin_expect(t >= shadow + SHADOW_FRAMES, 0))                      \
			shadow_lost("calls nested over a million deep");                   \
		shadow_top = t + 1; /* taken first: a signal handler's calls go above */  \
		__atomic_signal_fence(__ATOMIC_SEQ_CST);                                   \
		t->slot = slot;                                                            \
		t->ret = *slot;                                                            \
		point(id);                                                                 \
	}
/* The body returned to the thunk, whose return slot is slot again: the caller's address
 * goes back there. Frames above it whose slot is below it are calls a longjmp left. */
#define SLED_EXIT(name, point)                                                             \
	HOOK void name(uintptr_t *slot)                                                   \
	{                                                                                  \
		struct sled_frame *b = shadow, *t = shadow_top;                            \
		while (t > b && t[-1].slot < slot)                                         \
			t--;                                                               \
		if (__builtin_expect(t == b || t[-1].slot != slot, 0))                     \
			shadow_lost("a return the shadow stack never saw");                \
		t--;                                                                       \
		*slot = t->ret;                                                            \
		__atomic_signal_fence(__ATOMIC_SEQ_CST); /* read before it is given back */ \
		shadow_top = t;                                                            \
		point(RB_EXIT);                                                            \
	}

/* In a learning window (rb_sleds_window_open), or while the runtime times its probe
 * (rb_sleds_time_probe), every record of a sampled thunk is timed: after each timed one,
 * due goes back to 0 (the next one timed, as at a ring's start), so the durations the
 * runtime learns from are measured, not estimated. time_all counts those two reasons: one
 * load on every exit, as a flag was. An open window's records are counted down here, on
 * the timed path only; the thread that takes the count to zero ends the window
 * (window_end_here). */
enum { WINDOW_NONE, WINDOW_OPEN, WINDOW_ENDING, WINDOW_ENDED };
static _Atomic int window_state;
static _Atomic int time_all, probe_fenced;
static _Atomic uint64_t window_left;
static void window_end_here(void);

void rb_sleds_time_probe(bool on, bool fenced)
{
	if (fenced)
		atomic_fetch_add_explicit(&probe_fenced, on ? 1 : -1, memory_order_relaxed);
	atomic_fetch_add_explicit(&time_all, on ? 1 : -1, memory_order_relaxed);
}

/* Every record of a window (and of the probe that times a window's records) is fenced: its
 * timer read waits for the loads before it. rdtsc does not, so a function's cache misses
 * were still in flight at its exit's read and their stall fell in the next gap, its
 * caller's: memcached's assoc_find, a miss on its hash bucket a call, measured 57 to 126 ns
 * a call in the windows, where perf at a trace's moment gave it some 360, and a remembered
 * run counted its calls at that mean until perf's own samples corrected it. The windows' times are
 * what learning ranks by, and a counted function's mean where perf's samples are too few.
 * Outside the windows the timed record stays unfenced: it places records in time, and the
 * fence would cost every one (some 1% of SQLite's time, docs/trace-points.md section 7). */
static inline void point_sampled(uint32_t low)
{
	int all = atomic_load_explicit(&time_all, memory_order_relaxed);
	/* A ring's records in an open window, not a scratch ring's (an unfenced probe may run
	 * while the constructor's first window is open) */
	if (all && ((rb_tls.ring &&
		     atomic_load_explicit(&window_state, memory_order_relaxed) == WINDOW_OPEN) ||
		    atomic_load_explicit(&probe_fenced, memory_order_relaxed)))
		__asm__ __volatile__("lfence" ::: "memory");
	rb_point_sampled(low);
	if (all) {
		atomic_store_explicit(&rb_tls.due, 0, memory_order_relaxed);
		/* A ring's records only: a scratch ring's (the probe's) are no app's */
		if (rb_tls.ring &&
		    atomic_load_explicit(&window_state, memory_order_relaxed) == WINDOW_OPEN &&
		    atomic_fetch_sub_explicit(&window_left, 1, memory_order_relaxed) == 1)
			window_end_here();
	}
}

SLED_ENTER(rb_sled_enter_timed, rb_point)
SLED_EXIT(rb_sled_exit_timed, rb_point)
SLED_EXIT(rb_sled_exit_sampled, point_sampled)

/* The sampled thunk's timed records (about one in 32) and the rare paths behind them. */
HOOK void rb_sled_point_sampled(uint32_t low)
{
	point_sampled(low);
}

/* By sled: the counted calls traced threads recorded, for the runtime to tell each counted
 * function's calls (rb_sleds_counted_records); and the word a counted call's record
 * carries (record.h, rb_called_word: the measured mean and the calls a record stands for).
 * The word is data, not an immediate in the counted thunk: the runtime rewrites a mean as
 * perf's samples refine it, and a change in the thunk's code took two mprotects of the
 * thunks' pages, each a TLB flush sent to the app's CPUs (a speedtest1 --memdb run made
 * 610 mprotects, 332 since). Read only on the record's path, one call in RB_CALLED_EVERY. */
static _Atomic uint32_t *counted_records, *counted_words;

/*
 * A counted call to record (the counted thunk's rare path: its countdown reached 0, one
 * call in RB_CALLED_EVERY on average), idx its function's sled, whose counted_words entry
 * the record carries. The next countdown is drawn first, in every thread: 1..2 *
 * RB_CALLED_EVERY - 1, from the top bits of a linear congruential draw (its low bits
 * repeat with short periods).
 *   untraced thread: nothing more;
 *   before the due position: the record untimed (its tag's upper half 0), as the sampled
 *   thunk's untimed records (p < due <= limit, one slot short of the ring's end, so both
 *   slots fit);
 *   at it or past it, by less than RB_COUNTED_LATE slots: untimed too, due left for the
 *   next traced call's record to take. The call's length is its measured mean, which the
 *   untimed fit takes as known (untimed.c), so a timer read here buys little. But a phase
 *   of counted calls alone (SQLite's LIKE tests: strcspn and memcpy counted, what calls
 *   them out) had no timed record for as long as the ring's whole length, and the fit had
 *   nothing to spread its 1.25 s by: so past due by RB_COUNTED_LATE slots, it is timed;
 *   at limit (the ring's end, or a stop asked), or that late: rb_put_called writes it
 *   timed, then wraps or answers, and sets the next due (rb_sled_called_timed: a call
 *   from here had this function save every register the callee may use, 9 pushes and pops
 *   on every record where 2 do; named rb_ as the runtime's frames are, which the outer
 *   frames recovered from a stack leave out: agent/analysis/outer.c).
 */
HOOK static void rb_sled_called_timed(uint32_t id, uint32_t word)
{
	rb_put_called(id, word);
}

HOOK void rb_sled_called_sampled(uint32_t idx)
{
	struct rb_tls *t = &rb_tls;
	uint32_t draw = t->counted_draw * 1664525u + 1013904223u;
	t->counted_draw = draw;
	int32_t left = 1 + (int32_t)(((uint64_t)(draw >> 8) * (2 * RB_CALLED_EVERY - 1)) >> 24);
	atomic_store_explicit(&t->counted_left, left, memory_order_relaxed);
	uintptr_t p = atomic_load_explicit(&t->pos, memory_order_relaxed);
	if (!p)
		return;
	uint32_t id = (uint32_t)__start___patchable_function_entries[idx];
	atomic_fetch_add_explicit(&counted_records[idx], 1, memory_order_relaxed);
	uint32_t word = atomic_load_explicit(&counted_words[idx], memory_order_relaxed);
	uintptr_t due = atomic_load_explicit(&t->due, memory_order_relaxed);
	if (p < due || (p < atomic_load_explicit(&t->limit, memory_order_relaxed) &&
			p - 8 * RB_COUNTED_LATE < due)) {
		uint64_t *slot = (uint64_t *)p;
		atomic_store_explicit((_Atomic uint64_t *)slot, (uint64_t)word << 32 | id,
				      memory_order_relaxed);
		atomic_store_explicit((_Atomic uint64_t *)(slot + 1), rb_tag(0, RB_CALLED),
				      memory_order_relaxed);
		atomic_store_explicit(&t->pos, p + 16, memory_order_relaxed);
		return;
	}
	rb_sled_called_timed(id, word);
}

/* A function of the runtime's own with a sled, patched as the program's are: what a traced
 * call costs is timed on its calls (agent/runtime/sleds.c). */
__attribute__((patchable_function_entry(SLED_BYTES, 0), noipa)) void rb_sleds_probe(void)
{
	__asm__ volatile("");
}

uintptr_t rb_sleds_return_of(uintptr_t slot)
{
	if (!shadow_top)
		return 0;
	/* The sampled thunk's call of its timed entry record (at 20: in the template), where
	 * a trace is frozen: the caller's address is in the top frame only, popped off its
	 * slot, which now holds the saved %rdi, 16 bytes above this call's own return
	 * address. Without it the stack lost the entered function's caller, and with it the
	 * open calls' match to the stack (agent/analysis/outer.c). */
	if (shadow_top > shadow && (uintptr_t)shadow_top[-1].slot == slot + 16)
		slot += 16;
	/* A function a traced one jumped to (a tail call) has a frame of its own here with
	 * the same slot, and the thunk's address as its return: the caller's is further
	 * down. Without it duktape's loop, which calls duk_js_getvar_activation, which jumps
	 * to duk__getvar_helper, was lost from the stack, and the chain was stale words. */
	for (const struct sled_frame *t = shadow_top; t > shadow; t--)
		if ((uintptr_t)t[-1].slot == slot && !rb_sleds_is_thunk(t[-1].ret))
			return t[-1].ret;
	return 0;
}

/* ---- the thunks ---- */

/*
 * A thunk per patched function, made from a template below: its code, then a table of the
 * fields to fill, each a kind (enum field) and the offset of its 4 bytes. The fields hold
 * placeholders the assembler encodes as disp32/imm32/rel32: a TLS variable's offset from
 * the thread pointer, the function's id, a call's or jump's target. BODY is the function's
 * entry + 5, past its sled; the thunk calls it where the caller called the function, so its
 * stack arguments are where they were.
 */
enum field {
	F_END, F_POS, F_DUE, F_TOP, F_ID, F_BODY, F_POINT, F_ENTER, F_EXIT, F_CALLED,
	F_LIMIT, F_LEFT, F_IDX
};
/* The templates name the kinds by number (FIELD's first argument) */
_Static_assert(F_EXIT == 8 && F_CALLED == 9 && F_LEFT == 11 && F_IDX == 12, "FIELD numbers");
#define FIELD(kind, end, back) ".byte " #kind "\n\t.short " #end " - 0b - " #back "\n\t"

/*
 * Sampled time (the default), all in the thunk but the timed record, about one in 32:
 *   untraced thread (rb_tls.pos 0): straight to the body, the thunk's only cost a compare
 *   and a jump;
 *   entry: a frame of the shadow stack taken, then filled with the slot of the caller's
 *   return address and the address, popped off the stack into it (in this order: a
 *   signal handler's calls, which may come between any two instructions, take the frames
 *   above it; the popped slot lies in the red zone, which a signal frame skips); an
 *   untimed record [0 << 32 | id] in two 4-byte stores as rb_point_sampled's (%r11 is the
 *   only register free at a function's entry: %rax holds a variadic call's count of vector
 *   registers, %r10 a nested function's static chain), or at the due position a call of
 *   rb_sled_point_sampled with the id; the body called;
 *   exit: the top frame's slot must be the one the body returned from (else frames a
 *   longjmp left: rb_sled_exit_sampled sorts that out); the frame read, then given
 *   back (a signal handler's calls may take it from then on); the caller's address pushed back
 *   into its slot and returned to, which the caller's call predicted; the exit record as
 *   the entry's (%rax and %rdx hold the result; %rcx and %r11 are free after a return).
 */
__asm__(".pushsection .rodata.jitt_sleds, \"a\"\n"
	".globl rb_sled_tmpl_sampled\n\t.hidden rb_sled_tmpl_sampled\n"
	"rb_sled_tmpl_sampled:\n0:\n\t"
	"cmpq $0, %fs:0x7ffffff0\n1:\n\t"
	".byte 0x0f, 0x84\n\t.long 0\n2:\n\t"
	"mov %fs:0x7ffffff0, %r11\n3:\n\t"
	"add $16, %r11\n\t"
	"mov %r11, %fs:0x7ffffff0\n4:\n\t"
	"mov %rsp, -16(%r11)\n\t"
	"popq -8(%r11)\n\t"
	"mov %fs:0x7ffffff0, %r11\n5:\n\t"
	"cmp %fs:0x7ffffff0, %r11\n6:\n\t"
	"jae 20f\n\t"
	"movl $0x7ffffff0, (%r11)\n7:\n\t"
	"movl $0, 4(%r11)\n\t"
	"addq $8, %fs:0x7ffffff0\n8:\n"
	"10:\n\t"
	".byte 0xe8\n\t.long 0\n9:\n\t"
	"mov %fs:0x7ffffff0, %r11\n11:\n\t"
	"sub $16, %r11\n\t"
	"lea -8(%rsp), %rcx\n\t"
	"cmp %rcx, (%r11)\n\t"
	"jne 30f\n\t"
	"mov 8(%r11), %rcx\n\t"
	"mov %r11, %fs:0x7ffffff0\n12:\n\t"
	"push %rcx\n\t"
	"mov %fs:0x7ffffff0, %r11\n13:\n\t"
	"test %r11, %r11\n\t"
	"je 15f\n\t"
	"cmp %fs:0x7ffffff0, %r11\n14:\n\t"
	"jae 25f\n\t"
	"movq $0, (%r11)\n\t"
	"addq $8, %fs:0x7ffffff0\n16:\n"
	"15:\n\t"
	"ret\n"
	"20:\n\t"
	"push %rdi\n\t"
	"mov $0x7ffffff0, %edi\n21:\n\t"
	"sub $8, %rsp\n\t"
	".byte 0xe8\n\t.long 0\n22:\n\t"
	"add $8, %rsp\n\t"
	"pop %rdi\n\t"
	"jmp 10b\n"
	"25:\n\t"
	"xor %edi, %edi\n\t"
	"sub $8, %rsp\n\t"
	".byte 0xe8\n\t.long 0\n26:\n\t"
	"add $8, %rsp\n\t"
	"ret\n"
	"30:\n\t"
	"sub $16, %rsp\n\t"
	"lea 8(%rsp), %rdi\n\t"
	".byte 0xe8\n\t.long 0\n31:\n\t"
	"add $8, %rsp\n\t"
	"ret\n"
	".globl rb_sled_tmpl_sampled_end\n\t.hidden rb_sled_tmpl_sampled_end\n"
	"rb_sled_tmpl_sampled_end:\n\t"
	".globl rb_sled_fields_sampled\n\t.hidden rb_sled_fields_sampled\n"
	"rb_sled_fields_sampled:\n\t"
	FIELD(1, 1b, 5) FIELD(5, 2b, 4) FIELD(3, 3b, 4) FIELD(3, 4b, 4) FIELD(1, 5b, 4)
	FIELD(2, 6b, 4) FIELD(4, 7b, 4) FIELD(1, 8b, 5) FIELD(5, 9b, 4) FIELD(3, 11b, 4)
	FIELD(3, 12b, 4) FIELD(1, 13b, 4) FIELD(2, 14b, 4) FIELD(1, 16b, 5) FIELD(4, 21b, 4)
	FIELD(6, 22b, 4) FIELD(6, 26b, 4) FIELD(8, 31b, 4)
	".byte 0\n\t.short 0\n\t"
	".popsection");

/*
 * A counted call (record.h, RB_CALLED), for a short function that calls no traced one,
 * once the runtime has measured it (rb_sleds_count): its calls counted down
 * (rb_tls.counted_left, in every thread), and a jump to the body, which returns straight
 * to its caller. No shadow stack, no exit record, no return to intercept: 4 instructions
 * with the sled's jump, where a traced call's thunk runs some 34. Where the count reaches
 * 0, one call in RB_CALLED_EVERY on average, rb_sled_called_sampled(idx) records it, %rdi
 * saved around it, which also aligns the stack for the call (the caller's return address
 * is still on it). Recording every call took 11 instructions and 2.8 ns over a plain call
 * (bench-sleds), 5% of memcached's worker on multiget.
 */
__asm__(".pushsection .rodata.jitt_sleds, \"a\"\n"
	".globl rb_sled_tmpl_counted\n\t.hidden rb_sled_tmpl_counted\n"
	"rb_sled_tmpl_counted:\n0:\n\t"
	"decl %fs:0x7ffffff0\n1:\n\t"
	"jle 20f\n\t"
	".byte 0xe9\n\t.long 0\n2:\n"
	"20:\n\t"
	"push %rdi\n\t"
	"mov $0x7ffffff0, %edi\n21:\n\t"
	".byte 0xe8\n\t.long 0\n23:\n\t"
	"pop %rdi\n\t"
	".byte 0xe9\n\t.long 0\n24:\n\t"
	".globl rb_sled_tmpl_counted_end\n\t.hidden rb_sled_tmpl_counted_end\n"
	"rb_sled_tmpl_counted_end:\n\t"
	".globl rb_sled_fields_counted\n\t.hidden rb_sled_fields_counted\n"
	"rb_sled_fields_counted:\n\t"
	FIELD(11, 1b, 4) FIELD(5, 2b, 4) FIELD(12, 21b, 4) FIELD(9, 23b, 4) FIELD(5, 24b, 4)
	".byte 0\n\t.short 0\n\t"
	".popsection");

/*
 * Every record timed (sleds = timed): the entry and the exit in the C hooks above, which
 * keep the shadow stack too.
 *   untraced thread: straight to the body;
 *   push %rdi, %rsi and a pad; %rsi the slot of the caller's return address, %edi the id;
 *   call rb_sled_enter_timed; pop; the caller's address taken off the stack; call the body;
 *   back to the slot (kept aligned for the call), rb_sled_exit_timed(slot) puts the
 *   caller's address back there; return to it.
 */
__asm__(".pushsection .rodata.jitt_sleds, \"a\"\n"
	".globl rb_sled_tmpl_timed\n\t.hidden rb_sled_tmpl_timed\n"
	"rb_sled_tmpl_timed:\n0:\n\t"
	"cmpq $0, %fs:0x7ffffff0\n1:\n\t"
	".byte 0x0f, 0x84\n\t.long 0\n2:\n\t"
	"push %rdi\n\t"
	"push %rsi\n\t"
	"sub $8, %rsp\n\t"
	"lea 0x18(%rsp), %rsi\n\t"
	"mov $0x7ffffff0, %edi\n3:\n\t"
	".byte 0xe8\n\t.long 0\n4:\n\t"
	"add $8, %rsp\n\t"
	"pop %rsi\n\t"
	"pop %rdi\n\t"
	"lea 8(%rsp), %rsp\n\t"
	".byte 0xe8\n\t.long 0\n5:\n\t"
	"sub $16, %rsp\n\t"
	"lea 8(%rsp), %rdi\n\t"
	".byte 0xe8\n\t.long 0\n6:\n\t"
	"add $8, %rsp\n\t"
	"ret\n"
	".globl rb_sled_tmpl_timed_end\n\t.hidden rb_sled_tmpl_timed_end\n"
	"rb_sled_tmpl_timed_end:\n\t"
	".globl rb_sled_fields_timed\n\t.hidden rb_sled_fields_timed\n"
	"rb_sled_fields_timed:\n\t"
	FIELD(1, 1b, 5) FIELD(5, 2b, 4) FIELD(4, 3b, 4) FIELD(7, 4b, 4) FIELD(5, 5b, 4)
	FIELD(8, 6b, 4)
	".byte 0\n\t.short 0\n\t"
	".popsection");

struct field_at {
	uint8_t kind;
	uint16_t at;
} __attribute__((packed));
extern const unsigned char rb_sled_tmpl_sampled[], rb_sled_tmpl_sampled_end[];
extern const unsigned char rb_sled_tmpl_timed[], rb_sled_tmpl_timed_end[];
extern const unsigned char rb_sled_tmpl_counted[], rb_sled_tmpl_counted_end[];
extern const struct field_at rb_sled_fields_sampled[], rb_sled_fields_timed[];
extern const struct field_at rb_sled_fields_counted[];
/* What GCC's -fpatchable-function-entry leaves: five 1-byte NOPs, which the patch-up
 * at start-up (before other threads run) finds and replaces. */
static const unsigned char sled_nops[SLED_BYTES] = { 0x90, 0x90, 0x90, 0x90, 0x90 };
/* What a function taken out of the trace gets instead: one 5-byte NOP. A thread may be
 * between the five 1-byte ones when the jump is stored back (sled_set), and would go on
 * in the middle of it: duktape crashed so, once in some 80 runs, when learning put
 * functions back. One instruction, it is either before it or past it. */
static const unsigned char sled_nop5[SLED_BYTES] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

static uintptr_t thunks_lo, thunks_hi;
static size_t thunk_stride, thunk_count;
/* Sampled time: each function's counted thunk, this far into its stride (else 0). */
static size_t counted_at;
static uint64_t thunk_head; /* the first 8 bytes of every thunk, as made */

const _Atomic uint32_t *rb_sleds_counted_records(size_t *n)
{
	*n = counted_records ? thunk_count : 0;
	return counted_records;
}
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

/* A thunk made from its template at c (len bytes) for sled entry e, its fields filled;
 * false when a target lies out of a rel32's reach. */
static bool thunk_make(unsigned char *c, const unsigned char *tmpl, size_t len,
		       const struct field_at *fields, uintptr_t e, uint32_t idx, const int64_t *off,
		       enum rb_sled_time time)
{
	memcpy(c, tmpl, len);
	bool reach = true;
	for (const struct field_at *f = fields; f->kind != F_END && reach; f++) {
		unsigned char *at = c + f->at;
		uint32_t id = (uint32_t)e;
		switch (f->kind) {
		case F_POS:
		case F_DUE:
		case F_TOP:
		case F_LIMIT:
		case F_LEFT:
			reach = off[f->kind] == (int32_t)off[f->kind];
			memcpy(at, &(int32_t){ (int32_t)off[f->kind] }, 4);
			break;
		case F_ID:
			memcpy(at, &id, 4);
			break;
		case F_IDX:
			memcpy(at, &idx, 4);
			break;
		case F_BODY:
			reach = put_rel32(at, e + SLED_BYTES);
			break;
		case F_POINT:
			reach = put_rel32(at, (uintptr_t)rb_sled_point_sampled);
			break;
		case F_CALLED:
			reach = put_rel32(at, (uintptr_t)rb_sled_called_sampled);
			break;
		case F_ENTER:
			reach = put_rel32(at, (uintptr_t)rb_sled_enter_timed);
			break;
		case F_EXIT:
			reach = put_rel32(at, (uintptr_t)(time == RB_SLED_TIMED ? rb_sled_exit_timed
									 : rb_sled_exit_sampled));
			break;
		}
	}
	return reach;
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
	const unsigned char *tmpl = rb_sled_tmpl_sampled, *tmpl_end = rb_sled_tmpl_sampled_end;
	const struct field_at *fields = rb_sled_fields_sampled;
	if (time == RB_SLED_TIMED) {
		tmpl = rb_sled_tmpl_timed, tmpl_end = rb_sled_tmpl_timed_end;
		fields = rb_sled_fields_timed;
	}
	size_t len = (size_t)(tmpl_end - tmpl), stride = (len + 15) & ~(size_t)15;
	size_t clen = (size_t)(rb_sled_tmpl_counted_end - rb_sled_tmpl_counted), cat = 0;
	if (time == RB_SLED_SAMPLED)
		cat = stride, stride += (clen + 15) & ~(size_t)15;
	uintptr_t page = page_bytes = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t size = (n * stride + page - 1) & ~(page - 1);
	unsigned char *t = thunks_map(lo, hi, size);
	if (!t)
		return -ENOMEM;

	/* The control words' offsets from the thread pointer: the executable's TLS block is
	 * at the same offset in every thread (local-exec). */
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	int64_t off[] = {
		[F_POS] = (int64_t)((uintptr_t)&rb_tls.pos - tp),
		[F_DUE] = (int64_t)((uintptr_t)&rb_tls.due - tp),
		[F_TOP] = (int64_t)((uintptr_t)&shadow_top - tp),
		[F_LIMIT] = (int64_t)((uintptr_t)&rb_tls.limit - tp),
		[F_LEFT] = (int64_t)((uintptr_t)&rb_tls.counted_left - tp),
	};
	bool reach = true;
	memset(t, 0xcc, n * stride); /* int3 between the thunks */
	for (size_t i = 0; i < n && reach; i++) {
		unsigned char *c = t + i * stride;
		reach = thunk_make(c, tmpl, len, fields, e[i], (uint32_t)i, off, time) &&
			(!cat || thunk_make(c + cat, rb_sled_tmpl_counted, clen,
					    rb_sled_fields_counted, e[i], (uint32_t)i, off, time));
	}
	if (!reach || mprotect(t, size, PROT_READ | PROT_EXEC)) {
		int err = reach ? errno : ERANGE;
		munmap(t, size);
		return -err;
	}
	thunks_lo = (uintptr_t)t;
	thunks_hi = (uintptr_t)t + n * stride;
	memcpy(&thunk_head, t, 8);
	thunk_stride = stride, thunk_count = n, counted_at = cat;
	sled_modes = malloc(n);
	if (sled_modes)
		memset(sled_modes, SLED_UNKNOWN, n);
	if (cat) {
		counted_records = calloc(n, sizeof(*counted_records));
		counted_words = calloc(n, sizeof(*counted_words));
		if (!counted_records || !counted_words)
			counted_at = 0; /* nothing counted: rb_sleds_count refuses */
	}

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
		int32_t rel = (int32_t)((int64_t)((uintptr_t)(t + i * stride) -
						  ((uintptr_t)f + SLED_BYTES)));
		memcpy(jmp + 1, &rel, 4);
		memcpy(f, jmp, SLED_BYTES);
		st->patched++;
		if (sled_modes)
			sled_modes[i] = SLED_TRACED;
	}
	if (mprotect((void *)plo, phi - plo, PROT_READ | PROT_EXEC))
		return -errno;
	return 0;
}

/* One aligned 8-byte store, which another thread fetches whole, old or new (x86 stores
 * within a cache line are atomic). */
static void store8(uint64_t *w, const unsigned char bytes[8])
{
	uint64_t word;
	memcpy(&word, bytes, 8);
	__atomic_store_n(w, word, __ATOMIC_RELEASE);
}


/* jmp rel32 from `from` (its 5 bytes) to `to`. */
static void jmp_to(unsigned char jmp[SLED_BYTES], uintptr_t from, uintptr_t to)
{
	jmp[0] = 0xe9;
	int32_t rel = (int32_t)((int64_t)(to - (from + SLED_BYTES)));
	memcpy(jmp + 1, &rel, 4);
}

/*
 * Sled i set to `mode`, each way in one store, by the sled's place:
 *   within one aligned 8-byte word: one 5-byte NOP (sled_nop5), or its jump to either
 *   thunk, with the 3 bytes of the body after them as they are;
 *   else, its first two bytes within a cache line: a 2-byte jump over the sled (EB 03)
 *   over the first two bytes of the jump to the thunk, whose other three stay, or those
 *   two bytes back (as XRay's sleds are turned off and on); counted, the thunk's first 8
 *   bytes are a jump on to its counted thunk;
 *   else (an -Os build does not align functions): its thunk's first 8 bytes, a jump
 *   straight to the body, or to its counted thunk, or the thunk's own again.
 * The thunk's first instruction is longer than 8 bytes: a thread is before it or past it.
 */
static void sled_set(size_t i, uintptr_t entry, enum sled_mode mode)
{
	uintptr_t thunk = thunks_lo + i * thunk_stride, counted = thunk + counted_at;
	unsigned char jmp[SLED_BYTES];
	jmp_to(jmp, entry, mode == SLED_COUNTED && counted_at ? counted : thunk);
	unsigned char bytes[8], head[8]; /* the thunk's first 8 bytes, for the other places */
	memcpy(head, &thunk_head, 8);
	if (mode == SLED_COUNTED && counted_at)
		jmp_to(head, thunk, counted);
	if ((entry & 7) <= 8 - SLED_BYTES) {
		uint64_t *w = (uint64_t *)(void *)(entry & ~(uintptr_t)7);
		memcpy(bytes, w, 8);
		memcpy(bytes + (entry & 7), mode != SLED_OUT ? jmp : sled_nop5, SLED_BYTES);
		store8(w, bytes);
	} else if ((entry & 63) != 63) {
		uint16_t two = 0xeb | (SLED_BYTES - 2) << 8; /* jmp rel8 +3, little-endian */
		jmp_to(jmp, entry, thunk);
		if (mode != SLED_OUT) {
			memcpy(&two, jmp, 2);
			store8((uint64_t *)(void *)thunk, head);
		}
		__asm__ volatile("movw %1, %0" : "=m"(*(uint16_t *)(void *)entry) : "r"(two) : "memory");
	} else {
		if (mode == SLED_OUT)
			jmp_to(head, thunk, entry + SLED_BYTES); /* to the body */
		store8((uint64_t *)(void *)thunk, head);
	}
}

/* The mean sled i's counted calls record (with the calls a record stands for: record.h,
 * rb_called_word), set before the sled leads to its counted thunk. */
static void counted_mean_set(size_t i, uint32_t mean)
{
	atomic_store_explicit(&counted_words[i], rb_called_word(mean, RB_CALLED_EVERY),
			      memory_order_relaxed);
}

/* Pages [lo, hi) rounded out to whole pages (page_bytes, set by rb_sleds_patch: a window's
 * end calls this from a thunk, where only system calls are safe to make), given prot. */
static int protect(uintptr_t lo, uintptr_t hi, int prot)
{
	uintptr_t page = page_bytes;
	lo &= ~(page - 1);
	hi = (hi + page - 1) & ~(page - 1);
	return mprotect((void *)lo, hi - lo, prot) ? -errno : 0;
}

/* Sleds idx[0..n) set to mode (rb_sleds_trace, rb_sleds_count); counted ones' thunks get
 * their mean first (mean[k], ticks), or keep theirs (mean NULL). */
static long sleds_set(const size_t *idx, const uint32_t *mean, size_t n, enum sled_mode mode)
{
	size_t count;
	const uintptr_t *e = rb_sleds_list(&count);
	if (!thunks_lo || !n)
		return 0;
	/* Counted calls' means first, which are data: a counted sled that stays counted
	 * changes nothing else. Then the sleds that change, and the thunks of those whose
	 * jump is their thunk's first bytes (sled_set): the span of each to make writable. */
	uintptr_t lo = UINTPTR_MAX, hi = 0, tlo = UINTPTR_MAX, thi = 0;
	long done = 0;
	for (size_t k = 0; k < n; k++) {
		size_t i = idx[k];
		if (i >= thunk_count || i >= count)
			continue;
		done++;
		if (mode == SLED_COUNTED && mean)
			counted_mean_set(i, mean[k]);
		if (sled_modes && sled_modes[i] == mode)
			continue; /* as it is already */
		lo = e[i] < lo ? e[i] : lo;
		hi = e[i] + 8 > hi ? e[i] + 8 : hi;
		if ((e[i] & 7) > 8 - SLED_BYTES) {
			uintptr_t t = thunks_lo + i * thunk_stride;
			tlo = t < tlo ? t : tlo;
			thi = t + 8 > thi ? t + 8 : thi;
		}
	}
	if (!hi)
		return done;
	/* Writable and still executable: other threads run this code meanwhile (and this
	 * function may lie in the same pages). */
	const int rwx = PROT_READ | PROT_WRITE | PROT_EXEC, rx = PROT_READ | PROT_EXEC;
	int err = protect(lo, hi, rwx);
	if (!err && thi)
		err = protect(tlo, thi, rwx);
	if (err)
		return err;
	for (size_t k = 0; k < n; k++) {
		size_t i = idx[k];
		if (i >= thunk_count || i >= count || (sled_modes && sled_modes[i] == mode))
			continue;
		sled_set(i, e[i], mode);
		if (sled_modes)
			sled_modes[i] = (unsigned char)mode;
	}
	err = protect(lo, hi, rx);
	int err2 = thi ? protect(tlo, thi, rx) : 0;
	return err ? err : err2 ? err2 : done;
}

/* ---- learning windows (sleds.h, rb_sleds_window_open) ---- */

/* NONE -> OPEN (the control thread) -> ENDING -> ENDED (the thread that wrote the window's
 * last record) -> NONE (the control thread, rb_sleds_window_close); or OPEN -> NONE when
 * the control thread closes it first. Only one side sets sleds at a time: the control
 * thread sets none between opening a window and closing it. */
static struct rb_sleds_window window; /* written before OPEN is published */
static size_t window_kept;	      /* and these before ENDED */
static pid_t window_tid;

/* n 8-byte words from src to dst, in general registers: this runs inside a thunk, between
 * a caller and its callee, whose vector registers may hold arguments (the C library's
 * memcpy would use them; a plain loop may be turned into a call of it). */
static void copy_words(uint64_t *dst, const uint64_t *src, uint64_t n)
{
	__asm__ volatile("rep movsq" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/* The calling thread's newest records, up to max slots, into keep in order; how many. */
static size_t keep_own(uint64_t *keep, size_t max)
{
	const uint64_t *slots;
	uint64_t nslots;
	uint32_t laps;
	uintptr_t p = atomic_load_explicit(&rb_tls.pos, memory_order_relaxed);
	if (!keep || !max || !p || !rb_ring_own(&slots, &nslots, &laps))
		return 0;
	uint64_t at = (p - (uintptr_t)slots) / 8 % nslots, have = laps ? nslots : at;
	uint64_t n = max < have ? max : have, from = (at + nslots - n) % nslots;
	uint64_t first = nslots - from < n ? nslots - from : n;
	copy_words(keep, slots + from, first);
	copy_words(keep + first, slots, n - first);
	return n;
}

/* The window's last record was this thread's: every record sampled again, the sleds the
 * window traced put back as they were, its records kept aside. Some 100 us, once a window
 * (two mprotects a set of sleds, and a copy of a quarter of a ring at most). */
static void window_end_here(void)
{
	int open = WINDOW_OPEN;
	if (!atomic_compare_exchange_strong_explicit(&window_state, &open, WINDOW_ENDING,
						     memory_order_acquire, memory_order_relaxed))
		return;
	atomic_fetch_sub_explicit(&time_all, 1, memory_order_relaxed);
	(void)sleds_set(window.out, NULL, window.nout, SLED_OUT);
	(void)sleds_set(window.counted, NULL, window.ncounted, SLED_COUNTED);
	window_kept = keep_own(window.keep, window.keep_slots);
	window_tid = rb_tls.ring ? rb_ring_tid(rb_tls.ring) : 0;
	if (window.point_after1024)
		rb_trace_set_point_cost1024(window.point_after1024);
	atomic_store_explicit(&window_state, WINDOW_ENDED, memory_order_release);
}

void rb_sleds_window_open(const struct rb_sleds_window *w)
{
	window = *w;
	window_kept = 0;
	atomic_store_explicit(&window_left, w->records ? w->records : 1, memory_order_relaxed);
	atomic_store_explicit(&window_state, WINDOW_OPEN, memory_order_release);
	atomic_fetch_add_explicit(&time_all, 1, memory_order_relaxed);
}

bool rb_sleds_window_ended(pid_t *tid, size_t *kept)
{
	if (atomic_load_explicit(&window_state, memory_order_acquire) != WINDOW_ENDED)
		return false;
	*tid = window_tid;
	*kept = window_kept;
	return true;
}

void rb_sleds_window_close(void)
{
	int s = WINDOW_OPEN;
	if (atomic_compare_exchange_strong_explicit(&window_state, &s, WINDOW_NONE,
						    memory_order_acq_rel, memory_order_acquire)) {
		atomic_fetch_sub_explicit(&time_all, 1, memory_order_relaxed);
		return;
	}
	while (s == WINDOW_ENDING) { /* its sleds and its copy: some 100 us */
		sched_yield();
		s = atomic_load_explicit(&window_state, memory_order_acquire);
	}
	atomic_store_explicit(&window_state, WINDOW_NONE, memory_order_relaxed);
}

long rb_sleds_trace(const size_t *idx, size_t n, bool traced)
{
	return sleds_set(idx, NULL, n, traced ? SLED_TRACED : SLED_OUT);
}

long rb_sleds_count(const size_t *idx, const uint32_t *mean, size_t n)
{
	if (!counted_at)
		return thunks_lo ? -ENOTSUP : 0;
	return sleds_set(idx, mean, n, SLED_COUNTED);
}
