#!/bin/sh
# Non-local exits in real builds (agent/runtime/nonlocal.c, ringbuf/decode.h): a program
# built with the SDK's archives and flags jumps out of deep recursions 2,000 times with
# longjmp and siglongjmp (an interpreter's error path), and C++ throws through instrumented
# frames; its trace must leave no frame open but those really running at the freeze (main),
# where without the wrappers every jumped-over call stays open (140,000 of them).
# Built three ways: static musl; PIE glibc; PIE glibc with -D_FORTIFY_SOURCE=2 (longjmp is
# then __longjmp_chk). And a C++ program on glibc (exceptions: GCC's cleanups run the exit
# hooks). And coroutines on glibc's ucontext (makecontext, swapcontext): two generators
# yield from 20 and 5 calls deep to a scheduler 800 times; their calls must show inside the
# scheduler's resume, never the scheduler's inside theirs (as they did without the wrappers).
# usage: nonlocal-check.sh SRCTREE BIN_DIR   (host)
set -u
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
lib=$bin/../lib
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$src/tests/check-lib.sh"

cat >"$work/jumps.c" <<'C'
#include "agent/jitt.h"
#include <setjmp.h>
#include <stdio.h>
#include <unistd.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include "tests/wait_trace.h"
static jmp_buf env;
static sigjmp_buf senv;
__attribute__((noinline)) static void thrower(int depth)
{
	if (depth == 0)
		longjmp(env, 1);
	thrower(depth - 1);
	__asm__ __volatile__("" ::: "memory"); /* not a tail call */
}
__attribute__((noinline)) static void sig_thrower(int depth)
{
	if (depth == 0)
		siglongjmp(senv, 1);
	sig_thrower(depth - 1);
	__asm__ __volatile__("" ::: "memory");
}
__attribute__((noinline)) static int protected_call(void)
{
	if (setjmp(env) == 0) {
		thrower(40);
		return 0;
	}
	return 1;
}
__attribute__((noinline)) static int sig_protected(void)
{
	if (sigsetjmp(senv, 1) == 0) {
		sig_thrower(30);
		return 0;
	}
	return 1;
}
__attribute__((noinline)) static int work_loop(void)
{
	int n = 0;
	for (int i = 0; i < 2000; i++)
		n += protected_call() + sig_protected();
	return n;
}
int main(void)
{
	int traced = jitt_trace_thread(true);
	int n = work_loop();
	int a = jitt_anomaly("jumps");
	wait_for_trace();
	printf("traced %d jumps %d anomaly %d\n", traced, n, a);
	return 0;
}
C
cat >"$work/throws.cc" <<'C'
#include "agent/jitt.h"
#include <stdio.h>
#include <unistd.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include "tests/wait_trace.h"
__attribute__((noinline)) static void thrower(int depth)
{
	if (depth == 0)
		throw depth;
	thrower(depth - 1);
	__asm__ __volatile__("" ::: "memory");
}
__attribute__((noinline)) static int protected_call()
{
	try {
		thrower(40);
	} catch (int) {
		return 1;
	}
	return 0;
}
int main()
{
	int traced = jitt_trace_thread(true);
	int n = 0;
	for (int i = 0; i < 2000; i++)
		n += protected_call();
	int a = jitt_anomaly("jumps");
	wait_for_trace();
	printf("traced %d jumps %d anomaly %d\n", traced, n, a);
	return 0;
}
C
cat >"$work/coroutines.c" <<'C'
#include "agent/jitt.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include "tests/wait_trace.h"
/* Two generators on their own stacks: each recurses (20 and 5 deep), yields at the bottom
 * to the scheduler, and ends after 4 yields (its function returns to uc_link). */
static ucontext_t sched_ctx, co_ctx[2];
static char stacks[2][64 * 1024];
static int alive[2];
static volatile int sink;
__attribute__((noinline)) static void yield_to_sched(int co)
{
	swapcontext(&co_ctx[co], &sched_ctx);
}
__attribute__((noinline)) static void descend(int co, int depth)
{
	if (depth == 0) {
		yield_to_sched(co);
		return;
	}
	descend(co, depth - 1);
	sink++;
}
__attribute__((noinline)) static void generator(int co)
{
	for (int i = 0; i < 4; i++)
		descend(co, co ? 5 : 20);
	alive[co] = 0;
}
__attribute__((noinline)) static void start(int co)
{
	getcontext(&co_ctx[co]);
	co_ctx[co].uc_stack.ss_sp = stacks[co];
	co_ctx[co].uc_stack.ss_size = sizeof(stacks[co]);
	co_ctx[co].uc_link = &sched_ctx;
	makecontext(&co_ctx[co], (void (*)(void))generator, 1, co);
	alive[co] = 1;
}
__attribute__((noinline)) static void resume(int co)
{
	swapcontext(&sched_ctx, &co_ctx[co]);
}
__attribute__((noinline)) static int scheduler(void)
{
	int n = 0;
	for (int round = 0; round < 400; round++) {
		for (int co = 0; co < 2; co++) {
			if (!alive[co])
				start(co);
			resume(co);
			n++;
		}
	}
	return n;
}
int main(void)
{
	int traced = jitt_trace_thread(true);
	int n = scheduler();
	int a = jitt_anomaly("coroutines");
	wait_for_trace();
	printf("traced %d jumps %d anomaly %d\n", traced, n, a);
	return 0;
}
C
conf=$work/jitt.conf
mkdir -p "$work/data/spool" "$work/run"
printf 'data_dir = %s\nrun_dir = %s\n' "$work/data" "$work/run" >"$conf"
flags=$(cat "$lib/libjitt.cflags")

# try NAME WANT_JUMPS COMPILE-COMMAND...: builds, runs, decodes
try() {
	name=$1 want=$2
	shift 2
	if ! "$@" >"$work/$name.log" 2>&1; then
		fail "$name: build" "$(tail -n 5 "$work/$name.log")"
		return
	fi
	rm -f "$work/data/spool/"*
	out=$(TRACE_SPOOL=$work/data/spool JITT_CONFIG=$conf "$work/$name" 2>>"$work/$name.log")
	check "$name: runs and persists ('$out')" is "$out" "traced 0 jumps $want anomaly 0"
	trace=$(ls "$work/data/spool/"*.jtr 2>/dev/null | head -n 1)
	[ -n "$trace" ] || { fail "$name: no trace" "$(cat "$work/$name.log")"; return; }
	"$bin/jitt" decode "$trace" >"$work/$name.dec" 2>&1
	open=$(sed -n 's/^ *\([0-9]*\) calls still running when the ring was frozen$/\1/p' \
		"$work/$name.dec")
	# main is running at the freeze; nothing else may be left open
	if [ "${open:-0}" -le 1 ]; then
		ok "$name: no jumped-over call left open (${open:-0} running at the freeze)"
	else
		fail "$name: $open calls left open" "$(tail -n 3 "$work/$name.dec")"
	fi
	"$bin/jitt" summarize "$trace" >"$work/$name.sum" 2>&1
	check "$name: the summary names ${fn:-thrower}" grep -q "${fn:-thrower}" "$work/$name.sum"
	if grep -q 'calls elided' "$work/$name.sum"; then
		fail "$name: a chain elides calls" "$(grep 'elided' "$work/$name.sum" | head -n 2)"
	else
		ok "$name: no chain elides calls"
	fi
}

# shellcheck disable=SC2086,SC2046 # flag lists
try jumps-musl 4000 musl-gcc -static -O2 $flags -I"$src" "$work/jumps.c" -o "$work/jumps-musl" \
	"$lib/libjitt.a" $(cat "$lib/libjitt.ldflags")
# shellcheck disable=SC2086,SC2046
try jumps-glibc 4000 gcc -O2 -fPIE -pie $flags -I"$src" "$work/jumps.c" -o "$work/jumps-glibc" \
	"$lib/libjitt-glibc.a" $(cat "$lib/libjitt-glibc.ldflags")
# shellcheck disable=SC2086,SC2046
try jumps-fortify 4000 gcc -O2 -D_FORTIFY_SOURCE=2 -fPIE -pie $flags -I"$src" "$work/jumps.c" \
	-o "$work/jumps-fortify" "$lib/libjitt-glibc.a" $(cat "$lib/libjitt-glibc.ldflags")
if nm "$work/jumps-fortify" 2>/dev/null | grep -q __longjmp_chk; then
	ok "jumps-fortify: longjmp is __longjmp_chk there"
else
	fail "jumps-fortify: no __longjmp_chk: the fortified case was not built"
fi
# shellcheck disable=SC2086,SC2046
try throws 2000 g++ -O2 -fPIE -pie $flags -I"$src" "$work/throws.cc" -o "$work/throws" \
	"$lib/libjitt-glibc.a" $(cat "$lib/libjitt-glibc.ldflags")

# Coroutines (glibc's ucontext): each generator's frames are kept apart from the
# scheduler's, and shown inside the resume that ran them.
fn=descend
# shellcheck disable=SC2086,SC2046
try coroutines 800 gcc -O2 -fPIE -pie $flags -I"$src" "$work/coroutines.c" -o "$work/coroutines" \
	"$lib/libjitt-glibc.a" $(cat "$lib/libjitt-glibc.ldflags")
starts=$(sed -n 's/^ *\([0-9]*\) calls the ring starts inside$/\1/p' "$work/coroutines.dec")
check "coroutines: no exit closes a call the ring never entered (${starts:-0})" is "${starts:-0}" 0
check "coroutines: the generator's calls under resume" \
	grep -q 'resume > generator > descend' "$work/coroutines.sum"
# without the switch records, the scheduler's calls nest inside the generator's
if grep -q 'descend > resume' "$work/coroutines.sum"; then
	fail "coroutines: a resume shown inside a generator" "$(grep -m1 'descend > resume' "$work/coroutines.sum")"
else
	ok "coroutines: no resume shown inside a generator"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
