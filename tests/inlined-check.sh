#!/bin/sh
# `jitt inlined` end to end (docs/exclude.md, "What the compiler kept"): what it answers to
# bad input (status 1 and the reason for a file it cannot use, a usage line and status 2
# for bad arguments), and the round trip with real builds: an app built plain (-O2 -flto,
# as it ships) inlines its helper everywhere; built with libjitt.cflags it traces the
# helper at every call; `jitt inlined PLAIN INSTRUMENTED -o FILE` lists the helper and not
# the function that kept its body, and the app rebuilt with the list traces the kept
# function only, with fewer trace points in its code.
# usage: inlined-check.sh BIN_DIR CC   (host: builds and runs natively)
set -u
bin=$(cd "$1" && pwd) cc=$2
here=$(cd "$(dirname "$0")" && pwd)
srctree=$(cd "$here/.." && pwd)
lib=$bin/../lib
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
. "$here/check-lib.sh"

# ---- bad input ----
expect() { jitt_expect inlined "$@"; } # what, wanted status, text on stderr, arguments...
printf '\177ELF but nothing else\n' >"$work/garbage"
head -c 4096 /dev/urandom >"$work/random"
mkfifo "$work/fifo"
cp "$bin/jitt" "$work/stripped" && strip "$work/stripped"
expect "a garbage file" 1 "$work/garbage: not an ELF file" "$work/garbage" "$bin/jitt"
expect "random bytes" 1 "$work/random: not an ELF file" "$bin/jitt" "$work/random"
expect "a missing file" 1 "No such file" "$work/missing" "$bin/jitt"
expect "a folder" 1 "Is a directory" "$work" "$bin/jitt"
expect "a FIFO, not waited on" 1 "$work/fifo" "$work/fifo" "$bin/jitt"
expect "a stripped build" 1 "no symbol table" "$bin/jitt" "$work/stripped"
expect "no file" 2 "no plain build given"
expect "one file" 2 "no instrumented build given" "$bin/jitt"
expect "three files" 2 "one file too many" "$bin/jitt" "$bin/jitt" "$bin/jitt"
expect "-o without a file" 2 "needs a value" "$bin/jitt" "$bin/jitt" -o
expect "an unknown option" 2 "unknown option" --fast "$bin/jitt" "$bin/jitt"
cp "$bin/jitt" "$work/input"
expect "-o over an input" 1 "$work/input: a file this command reads" "$work/input" "$bin/jitt" \
	-o "$work/input"

# ---- the round trip ----
# oem_step is small: the plain build inlines it into oem_work everywhere. oem_work keeps
# its body (noinline). Instrumented, GCC traces oem_step at each of its 100000 calls.
cat >"$work/app.c" <<'C'
#include <stdio.h>
#ifdef PLAIN /* the app as it ships, without jitt */
#define jitt_trace_thread(on) 0
#define jitt_anomaly(what) 0
#define wait_for_trace() ((void)0)
#else
#include "agent/jitt.h"
#include "tests/wait_trace.h"
#endif
static volatile unsigned long sink;
static unsigned long oem_step(unsigned long i) { return i * 3 + (i >> 2); }
__attribute__((noinline)) void oem_work(void)
{
	for (unsigned long i = 0; i < 1000; i++)
		sink += oem_step(i);
}
int main(void)
{
	if (jitt_trace_thread(true))
		return 1;
	for (int i = 0; i < 100; i++)
		oem_work();
	printf("anomaly %d\n", jitt_anomaly("inlined check"));
	wait_for_trace();
	return 0;
}
C
# Builds the app with the compile flags in $1 (none: plain, without jitt) as $2.
build() { # cflags-file name
	if [ -z "$1" ]; then
		$cc -static -O2 -flto -I"$srctree" -DPLAIN "$work/app.c" -o "$work/$2" \
			2>"$work/$2.err"
		return
	fi
	# shellcheck disable=SC2046 # the flags files are lists of words
	$cc -static -O2 $(cat "$1") -I"$srctree" "$work/app.c" "$lib/libjitt.a" \
		$(cat "$lib/libjitt.ldflags") -o "$work/$2" 2>"$work/$2.err"
}
run() { # name: its one trace's path on stdout
	rm -rf "$work/$1.data"
	mkdir -p "$work/$1.data/spool"
	printf 'data_dir = %s/%s.data\nrun_dir = %s\nlog_level = warn\n' "$work" "$1" "$work" \
		>"$work/$1.conf"
	[ "$(TRACE_SPOOL=$work/$1.data/spool JITT_CONFIG=$work/$1.conf "$work/$1")" = \
		"anomaly 0" ] || return 1
	set -- "$work/$1.data"/spool/*.jtr
	[ -f "$1" ] && echo "$1"
}
calls() { "$bin/jitt" decode "$1" | grep -c " $2\$"; }
points() { objdump -d "$1" | grep -c rdtsc; }

if build "" plain && build "$lib/libjitt.cflags" app-on && t1=$(run app-on) &&
	[ "$(calls "$t1" oem_step)" -eq 100000 ] && [ "$(calls "$t1" oem_work)" -eq 100 ]; then
	ok "round trip: built with libjitt.cflags, the app traces oem_step's 100000 calls"
else
	fail "round trip: the builds: $(cat "$work/plain.err" "$work/app-on.err" 2>/dev/null)"
	echo "$passed passed, $failed failed"
	exit 1
fi
"$bin/jitt" inlined "$work/plain" "$work/app-on" -o "$work/inlined.opt" >"$work/report" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q -- '-finstrument-functions-exclude-function-list=.*oem_step' \
	"$work/inlined.opt" && ! grep -q 'oem_work' "$work/inlined.opt" &&
	! sed 's/^[^=]*=//' "$work/inlined.opt" | tr ',' '\n' | grep -qx 'main'; then
	ok "round trip: the list has oem_step, not oem_work nor main"
else
	fail "round trip: jitt inlined said (status $status):"
	cat "$work/report" "$work/inlined.opt"
fi
cat "$lib/libjitt.cflags" "$work/inlined.opt" | tr '\n' ' ' >"$work/kept.cflags"
if build "$work/kept.cflags" app-kept && t2=$(run app-kept) &&
	[ "$(calls "$t2" oem_step)" -eq 0 ] && [ "$(calls "$t2" oem_work)" -eq 100 ] &&
	[ "$(points "$work/app-kept")" -lt "$(points "$work/app-on")" ]; then
	ok "round trip: rebuilt with it, oem_step is not traced, oem_work is ($(points \
		"$work/app-on") -> $(points "$work/app-kept") trace points)"
else
	fail "round trip: the app rebuilt with the list: $(cat "$work/app-kept.err" 2>/dev/null)"
	[ -n "${t2:-}" ] && "$bin/jitt" summarize "$t2"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
