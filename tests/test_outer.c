/* SPDX-License-Identifier: MIT */
/*
 * The outer frames among the words a stack scan found (agent/analysis/outer.h): a word left
 * by a call that returned looks like a return address, and on a real interpreter's stack
 * half the words were such. The program's own calls tell them apart: each frame must call
 * the next. The cases are the shapes met on duktape, SQLite and memcached stacks.
 */
#include "harness.h"
#include "agent/analysis/outer.h"
#include "agent/analysis/symbols.h"
#include "ringbuf/elf.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PLT = 0 }; /* a direct call into code without a symbol */

/* A word in function f that calls g directly (g PLT: into another module). */
static struct agent_outer_word calls(uint64_t f, uint64_t g)
{
	return (struct agent_outer_word){ .func = f, .home = f, .callee = g,
					  .call = AGENT_CALL_DIRECT };
}

static struct agent_outer_word calls_pointer(uint64_t f)
{
	return (struct agent_outer_word){ .func = f, .home = f, .call = AGENT_CALL_INDIRECT };
}

/* A word in f that calls the runtime (the rare path of f's trace point). */
static struct agent_outer_word calls_runtime(uint64_t f, uint64_t rt)
{
	struct agent_outer_word w = calls(f, rt);
	w.callee_runtime = true;
	return w;
}

static struct agent_outer_word runtime(uint64_t f, uint64_t g)
{
	struct agent_outer_word w = calls(f, g);
	w.runtime = w.callee_runtime = true;
	return w;
}

/* The frames chosen, outermost first, as a 0-ended list. */
static size_t chain(const struct agent_outer_word *w, size_t n, uint64_t *got)
{
	uint64_t frame[64];
	size_t kept = agent_outer_chain(w, n, frame), k = 0;
	for (size_t i = 0; i < n; i++)
		if (frame[i])
			got[k++] = frame[i];
	got[k] = 0;
	CHECK_EQ_U64(k, kept);
	return k;
}

static void check_frames(const uint64_t *got, const uint64_t *want)
{
	size_t i = 0;
	while (want[i] && CHECK(got[i] == want[i]))
		i++;
	CHECK_EQ_U64(got[i], want[i]);
}

/* duktape's fib: stale runs between real frames, the sampled hooks' block at the end,
 * the runtime's own stack after it (with a stale program word in it). */
TEST(outer_chain_drops_the_words_of_returned_calls)
{
	enum { START = 1, MAIN, HANDLE_FH, SAFE_CALL, HANDLE_SAFE, WRAPPED, CALL_METHOD, LOOP,
	       HANDLE_RETURN, RECONFIG, PUSH, INTERN_CHECKED, INTERN, ALLOC, GETVAR, GETPROP,
	       RB_SAVEALL, RB_PUT };
	const struct agent_outer_word w[] = {
		calls(START, PLT),	     /* __libc_start_main, which calls main */
		calls(MAIN, HANDLE_FH),
		calls(HANDLE_FH, SAFE_CALL),
		calls(SAFE_CALL, HANDLE_SAFE),
		calls(PUSH, INTERN_CHECKED), /* stale: three calls that returned */
		calls(INTERN_CHECKED, INTERN),
		calls(INTERN, ALLOC),
		calls_pointer(HANDLE_SAFE), /* calls WRAPPED through a pointer */
		calls(WRAPPED, CALL_METHOD),
		calls(CALL_METHOD, LOOP),
		calls(LOOP, HANDLE_RETURN),
		calls(HANDLE_RETURN, RECONFIG),
		calls(GETVAR, GETPROP),		   /* stale */
		calls_runtime(0, RB_SAVEALL),	   /* RECONFIG's trace point block */
		runtime(RB_SAVEALL, RB_PUT),
		calls(GETVAR, GETPROP), /* stale, in the runtime's own frames */
	};
	uint64_t got[64];
	chain(w, sizeof(w) / sizeof(w[0]), got);
	const uint64_t want[] = { START,       MAIN, HANDLE_FH,	    SAFE_CALL, HANDLE_SAFE,
				  WRAPPED,     CALL_METHOD, LOOP, HANDLE_RETURN, RECONFIG, 0 };
	check_frames(got, want);
}

/* CI's duktape moment: a stale word left in the runtime's own frames by an earlier answer
 * calls into the runtime too (GET_VARMAP's trace point); the chain ends at the frame that
 * answered (FIND_PTR), not at the stale word, which it cannot call. */
TEST(outer_chain_ends_at_the_answering_frame_not_a_stale_runtime_caller)
{
	enum { START = 1, MAIN, LOOP, FIND_STRIDX, FIND_PTR, GET_VARMAP, RB_SAVEALL, RB_PUT };
	const struct agent_outer_word w[] = {
		calls(START, MAIN),
		calls(MAIN, LOOP),
		calls(LOOP, FIND_STRIDX),
		calls(FIND_STRIDX, FIND_PTR),
		calls_runtime(FIND_PTR, RB_SAVEALL), /* answered here */
		runtime(RB_SAVEALL, RB_PUT),
		calls_runtime(GET_VARMAP, RB_SAVEALL), /* stale, in the runtime's frames */
	};
	uint64_t got[64];
	chain(w, sizeof(w) / sizeof(w[0]), got);
	const uint64_t want[] = { START, MAIN, LOOP, FIND_STRIDX, FIND_PTR, 0 };
	check_frames(got, want);
}

/* A tail call leaves no frame for the function called first: a break, kept when the
 * frames on both sides of it hold together. A call into another module's PLT (an event
 * loop's library, which calls back) can land anywhere, so it can reach past a break: the
 * frames left out are the price of never taking stale words glued by such calls. */
TEST(outer_chain_keeps_tail_calls_and_calls_through_other_modules)
{
	enum { START = 1, MAIN, A, B_FIRST, B, C, D, E, RB };
	const struct agent_outer_word w[] = {
		calls(START, MAIN), calls(MAIN, A),
		calls(A, B_FIRST), /* which jumped to B */
		calls(B, C),	   calls(C, D),	  calls(D, E), calls_runtime(E, RB),
	};
	uint64_t got[64];
	chain(w, sizeof(w) / sizeof(w[0]), got);
	const uint64_t want[] = { START, MAIN, A, B, C, D, E, 0 };
	check_frames(got, want);

	enum { WORKER = 1, HANDLER, MACHINE, TRANSMIT, SEND, SENDMSG };
	const struct agent_outer_word p[] = {
		calls(WORKER, PLT), /* event_base_loop, which calls HANDLER back */
		calls(HANDLER, MACHINE),
		calls(MACHINE, TRANSMIT),
		calls_pointer(TRANSMIT), /* SEND, through a pointer: a break as costly */
		calls(SEND, SENDMSG),
		calls_runtime(SENDMSG, RB),
	};
	chain(p, sizeof(p) / sizeof(p[0]), got);
	const uint64_t want_p[] = { WORKER, SEND, SENDMSG, 0 };
	check_frames(got, want_p);
}

/* Two words of one function: the outer one was left by a call it made that returned
 * (memcached's tcp_sendmsg, its sendmsg done, at its exit's trace point). */
TEST(outer_chain_keeps_one_word_of_a_function)
{
	enum { WORKER = 1, SEND, RB };
	const struct agent_outer_word w[] = {
		calls(WORKER, PLT),
		calls(SEND, PLT), /* sendmsg, returned */
		calls_runtime(SEND, RB),
	};
	uint64_t got[64];
	chain(w, sizeof(w) / sizeof(w[0]), got);
	const uint64_t want[] = { WORKER, SEND, 0 };
	check_frames(got, want);
	/* A function that calls itself holds two. */
	const struct agent_outer_word r[] = { calls(WORKER, SEND), calls(SEND, SEND),
					      calls_runtime(SEND, RB) };
	chain(r, 3, got);
	const uint64_t want_r[] = { WORKER, SEND, SEND, 0 };
	check_frames(got, want_r);
}

/* SQLite, static musl: main is called through a pointer, the runtime's start left its own
 * words, and the stack holds a stale run from a statement that returned, outer to the
 * frame that called the function whose trace point answered. */
TEST(outer_chain_roots_the_chain_where_the_thread_began)
{
	enum { START = 1, START_C, STAGE2, MAIN, TESTSET, RANDOM, EXEC, HALT, RELEASE, BIND,
	       RUN, RESET, RB_TRACE_SELF, UNLOCK, RB };
	const struct agent_outer_word w[] = {
		{ .func = 0, .callee = START_C, .call = AGENT_CALL_DIRECT }, /* _start */
		calls_pointer(STAGE2),			/* START_C jumped here: main */
		runtime(RB_TRACE_SELF, UNLOCK),		/* the runtime's start, returned */
		calls(MAIN, TESTSET),
		calls(EXEC, HALT), /* stale: a statement run earlier */
		calls(HALT, RELEASE),
		calls(TESTSET, RANDOM),
		calls_pointer(BIND), /* stale */
		calls(RUN, RESET),   /* stale */
		calls_runtime(0, RB), /* RANDOM's trace point block */
	};
	uint64_t got[64];
	chain(w, sizeof(w) / sizeof(w[0]), got);
	const uint64_t want[] = { STAGE2, MAIN, TESTSET, RANDOM, 0 };
	check_frames(got, want);
}

/* A thread started through jitt's wrapper: its trampoline is outermost, and is not a
 * frame; nor is anything inside the frame that called the rare path. */
TEST(outer_chain_leaves_out_the_runtime)
{
	enum { TRAMPOLINE = 1, THREAD, F, RB, RB_INNER, STALE };
	struct agent_outer_word tramp = calls_pointer(TRAMPOLINE);
	tramp.runtime = true;
	const struct agent_outer_word w[] = {
		tramp,
		calls(THREAD, F),
		calls_runtime(F, RB),
		runtime(RB, RB_INNER),
		calls(STALE, F),
	};
	uint64_t got[64];
	chain(w, sizeof(w) / sizeof(w[0]), got);
	const uint64_t want[] = { THREAD, F, 0 };
	check_frames(got, want);
	CHECK_EQ_U64(agent_outer_chain(w, 0, NULL), 0);

	/* A wrapper of jitt's whose trace point answered (memcached's item_get unlocking
	 * through __wrap_pthread_mutex_unlock): its block is not a frame of the program. */
	enum { ITEM_GET = 10, WRAP_UNLOCK };
	const struct agent_outer_word u[] = {
		calls(THREAD, ITEM_GET),
		calls_runtime(ITEM_GET, WRAP_UNLOCK),
		calls_runtime(0, RB),
		runtime(RB, RB_INNER),
	};
	chain(u, sizeof(u) / sizeof(u[0]), got);
	const uint64_t want_u[] = { THREAD, ITEM_GET, 0 };
	check_frames(got, want_u);
}

/* Whatever the words, the frames are some of them, in order, and the chain ends. */
TEST(outer_chain_of_garbage_words_is_some_of_them)
{
	uint64_t seed = 7;
	for (int round = 0; round < 2000; round++) {
		struct agent_outer_word w[40];
		size_t n = (size_t)(round % 41);
		for (size_t i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			w[i].func = (seed >> 33) % 6;
			w[i].home = (seed >> 36) % 3 ? w[i].func : (seed >> 40) % 6;
			w[i].callee = (seed >> 43) % 7;
			w[i].call = (uint8_t)((seed >> 47) % 4); /* 3: not a kind at all */
			w[i].runtime = (seed >> 50) % 5 == 0;
			w[i].callee_runtime = (seed >> 53) % 4 == 0;
		}
		uint64_t frame[40];
		size_t kept = agent_outer_chain(w, n, frame), k = 0;
		for (size_t i = 0; i < n; i++) {
			if (!frame[i])
				continue;
			k++;
			if (!CHECK(!w[i].runtime && (frame[i] == w[i].func || !w[i].func)))
				return;
		}
		if (!CHECK(k == kept))
			return;
	}
}

/* The code of a call is read from the program's own file, through the descriptor the
 * symbols came from: here, this test program (not PIE, so addresses are its own). */
/* This test program as a trace's module 0, its symbols open (not PIE, so addresses are
 * its own). Stays put while open: the trace points into it. */
struct self {
	struct rb_elf elf;
	char exe[512];
	struct rb_module mod;
	struct rb_trace t;
	struct agent_symbols s;
};

static bool self_open(struct self *me)
{
	memset(me, 0, sizeof(*me));
	if (!CHECK(rb_elf_load("/proc/self/exe", &me->elf) == 0))
		return false;
	ssize_t len = readlink("/proc/self/exe", me->exe, sizeof(me->exe) - 1);
	CHECK(len > 0);
	me->exe[len > 0 ? len : 0] = '\0';
	me->mod = (struct rb_module){ .path = me->exe, .end = ~0ull,
				      .build_id_len = me->elf.build_id_len };
	memcpy(me->mod.build_id, me->elf.build_id, me->elf.build_id_len);
	me->t = (struct rb_trace){ .nmodules = 1, .modules = &me->mod };
	if (CHECK(agent_symbols_open(&me->s, &me->t) == 0))
		return true;
	rb_elf_free(&me->elf);
	return false;
}

static void self_close(struct self *me)
{
	agent_symbols_close(&me->s);
	rb_elf_free(&me->elf);
}

TEST(symbols_code_reads_the_program_file)
{
	static struct self me;
	if (!self_open(&me))
		return;
	uint8_t file[16];
	uint16_t machine = 0;
	uint64_t at = (uint64_t)(uintptr_t)agent_hex;
	CHECK_EQ_INT(agent_symbols_code(&me.s, 0, at, file, sizeof(file), &machine), 0);
	CHECK(memcmp(file, (const void *)agent_hex, sizeof(file)) == 0);
#if defined(__x86_64__)
	CHECK_EQ_INT(machine, EM_X86_64);
#elif defined(__aarch64__)
	CHECK_EQ_INT(machine, EM_AARCH64);
#elif defined(__arm__)
	CHECK_EQ_INT(machine, EM_ARM);
#endif
	/* Outside every executable section, and across the end of one: refused. */
	CHECK(agent_symbols_code(&me.s, 0, 8, file, sizeof(file), &machine) < 0);
	CHECK(agent_symbols_code(&me.s, 0, ~0ull - 4, file, sizeof(file), &machine) < 0);
	CHECK(agent_symbols_code(&me.s, 1, at, file, sizeof(file), &machine) < 0);
	self_close(&me);
}

/* Functions of this program whose calls the root test reads from its code. */
__attribute__((noinline)) void outer_test_leaf_x(void)
{
	__asm__ __volatile__("");
}

__attribute__((noinline)) void outer_test_leaf_y(void)
{
	__asm__ __volatile__("");
}

__attribute__((noinline)) void outer_test_leaf_z(void)
{
	__asm__ __volatile__("");
}

__attribute__((noinline)) void outer_test_leaf_w(void)
{
	__asm__ __volatile__("");
}

__attribute__((noinline)) void outer_test_dispatch(void)
{
	outer_test_leaf_w();
	__asm__ __volatile__("");
}

__attribute__((noinline)) void outer_test_loop(int n)
{
	for (int i = 0; i < n; i++) {
		outer_test_leaf_x();
		outer_test_leaf_y();
		outer_test_dispatch();
	}
}

__attribute__((noinline)) void outer_test_helper(void)
{
	outer_test_leaf_z();
	__asm__ __volatile__("");
}

/* The time at the root named by the frame that made the root's calls (an interpreter's
 * loop), not by the untraced helper just outside the open call, entered a moment ago. */
TEST(outer_root_of_the_frame_that_made_the_root_calls)
{
	static struct self me;
	if (!self_open(&me))
		return;
#define KEY(fn) ((uint64_t)1 << 48 | (uint64_t)(uintptr_t)(fn))
	struct agent_outer o = { .n = 4 };
	o.key[0] = KEY(outer_test_leaf_y); /* any frame further out */
	o.key[1] = KEY(outer_test_loop);
	o.key[2] = KEY(outer_test_helper);
	o.key[3] = KEY(outer_test_leaf_z); /* open at the freeze */
	const uint64_t open[] = { KEY(outer_test_leaf_z) };
	struct agent_root_calls rc = { .n = 3 };
	rc.key[0] = KEY(outer_test_leaf_x);
	rc.calls[0] = 100;
	rc.key[1] = KEY(outer_test_leaf_y);
	rc.calls[1] = 50;
	rc.key[2] = KEY(outer_test_leaf_z);
	rc.calls[2] = 1;
	CHECK_EQ_U64(agent_outer_root(&o, open, 1), KEY(outer_test_helper));
	CHECK_EQ_U64(agent_outer_root_of(&me.s, &o, open, 1, &rc), KEY(outer_test_loop));
	/* The root's calls all made by the helper: the helper. */
	rc.n = 1;
	rc.key[0] = KEY(outer_test_leaf_z);
	CHECK_EQ_U64(agent_outer_root_of(&me.s, &o, open, 1, &rc), KEY(outer_test_helper));
	/* None made by any frame's code: the innermost outside the open calls. */
	rc.key[0] = KEY(agent_hex);
	CHECK_EQ_U64(agent_outer_root_of(&me.s, &o, open, 1, &rc), KEY(outer_test_helper));
	rc.n = 0;
	CHECK_EQ_U64(agent_outer_root_of(&me.s, &o, open, 1, &rc), KEY(outer_test_helper));
	/* The root's calls made through a function that was out of the trace most of the
	 * time, and at the root itself when traced: still the loop's. */
	rc.n = 3;
	rc.key[0] = KEY(outer_test_leaf_w);
	rc.calls[0] = 100;
	rc.key[1] = KEY(outer_test_dispatch);
	rc.calls[1] = 1;
	rc.key[2] = KEY(outer_test_leaf_z);
	rc.calls[2] = 1;
	CHECK_EQ_U64(agent_outer_root_of(&me.s, &o, open, 1, &rc), KEY(outer_test_loop));
#undef KEY
	self_close(&me);
}
