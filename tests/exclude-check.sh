#!/bin/sh
# `jitt exclude` end to end (docs/exclude.md): what it answers to bad input (a clear error
# and status 1 for a file that is not a usable trace, a usage line and status 2 for bad
# arguments), and the round trip an OEM makes, with real builds: an app compiled with the
# flags of $(O)/lib/libjitt.cflags is traced, `jitt exclude -o` lists its cheap functions,
# libjitt's build takes the list (make JITT_EXCLUDE=FILE writes it into libjitt.cflags),
# and the app rebuilt with those flags no longer traces them, GCC's substring matching
# included, while the function that matters still is.
# usage: exclude-check.sh BIN_DIR CC   (host: builds and runs natively)
set -u
bin=$(cd "$1" && pwd) cc=$2
here=$(cd "$(dirname "$0")" && pwd)
srctree=$(cd "$here/.." && pwd)
lib=$bin/../lib
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
. "$here/check-lib.sh"

# ---- bad input: status and a message naming what is wrong ----
expect() { jitt_expect exclude "$@"; } # what, wanted status, text on stderr, arguments...
printf 'JITTRACE this is not a trace file at all\n' >"$work/garbage.jtr"
head -c 4096 /dev/urandom >"$work/random.jtr"
mkfifo "$work/fifo"
expect "a garbage file" 1 "$work/garbage.jtr: " "$work/garbage.jtr"
expect "random bytes" 1 "$work/random.jtr: " "$work/random.jtr"
expect "a missing file" 1 "No such file" "$work/missing.jtr"
expect "a folder" 1 "a directory, not a trace file" "$work"
expect "a FIFO, not waited on" 1 "a FIFO, not a trace file" "$work/fifo"
expect "one bad file among good ones" 1 "$work/garbage.jtr" \
	"$here/golden/decode-synthetic.jtr" "$work/garbage.jtr"
# The committed trace comes from another machine: nothing in it has a name here.
expect "a trace with no names here" 1 "nothing to list" "$here/golden/decode-synthetic.jtr"
expect "no trace" 2 "usage" --budget 5
expect "a bad budget" 2 "--budget" --budget ten "$work/garbage.jtr"
expect "a negative cost" 2 "--cost" --cost -3 "$work/garbage.jtr"
expect "a fractional --keep" 2 "--keep" --keep 2.5 "$work/garbage.jtr"
expect "--min-calls 0" 2 "--min-calls" --min-calls 0 "$work/garbage.jtr"
expect "--protect over 100" 2 "--protect" --protect 101 "$work/garbage.jtr"
expect "a negative --protect" 2 "--protect" --protect -5 "$work/garbage.jtr"
expect "--protect without a number" 2 "--protect" --protect 5% "$work/garbage.jtr"
expect "a negative --min-us" 2 "--min-us" --min-us -1 "$work/garbage.jtr"
expect "--min-us nan" 2 "--min-us" --min-us nan "$work/garbage.jtr"
expect "--off-cost 0" 2 "--off-cost" --off-cost 0 "$work/garbage.jtr"
expect "--ratio 1" 2 "--ratio" --ratio 1 "$work/garbage.jtr"
expect "--ratio inf" 2 "--ratio" --ratio inf "$work/garbage.jtr"
expect "--cost and --ratio" 2 "give one" --cost 5 --ratio 3 "$work/garbage.jtr"
expect "-o without a file" 2 "needs a value" "$work/garbage.jtr" -o
expect "an unknown option" 2 "unknown option" --fast "$work/garbage.jtr"

# ---- the round trip ----
# oem_tiny is called a lot and does almost nothing: the list's first entry. oem_tiny_twin
# costs more a call, but contains oem_tiny's name, so GCC's list excludes it too. oem_work
# is where the time goes, in few calls. oem_walk is as cheap as oem_tiny here, but loops as
# long as its argument says: listed only with --no-loops. The options make the list the same
# on any machine and load: no budget (every function of 1000 calls or more is a candidate),
# none kept, none protected (oem_tiny_twin's share of the time, about 7%, would be by
# default), calls of any length, and (the round trip) loops not read.
cat >"$work/app.c" <<'C'
#include "agent/jitt.h"
#include "tests/wait_trace.h"
#include <stdio.h>
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) void oem_tiny(unsigned long i) { sink += i; }
__attribute__((noinline)) void oem_tiny_twin(unsigned long i)
{
	for (volatile int k = 0; k < 1000; k++)
		sink ^= i;
}
__attribute__((noinline)) void oem_walk(unsigned long n)
{
	for (unsigned long k = n; k; k--)
		sink += k;
}
__attribute__((noinline)) void oem_work(void)
{
	for (volatile int i = 0; i < 100000; i++)
		sink += (unsigned long)i;
}
int main(void)
{
	jitt_thread_name("oem-main");
	if (jitt_trace_thread(true))
		return 1;
	for (unsigned long i = 0; i < 100000; i++) {
		oem_tiny(i);
		oem_walk(i & 1);
		if (i % 100 == 0)
			oem_tiny_twin(i);
		if (i % 1000 == 0)
			oem_work();
	}
	printf("anomaly %d\n", jitt_anomaly("exclude check"));
	wait_for_trace(); /* the control thread persists */
	return 0;
}
C
# Builds and runs the app with the compile flags in $1; its one trace's path on stdout.
build_run() { # cflags-file name
	rm -rf "$work/$2.data"
	mkdir -p "$work/$2.data/spool" # as the image's init makes it
	printf 'data_dir = %s/%s.data\nrun_dir = %s\nlog_level = warn\n' "$work" "$2" "$work" \
		>"$work/$2.conf"
	# shellcheck disable=SC2046 # the flags files are lists of words
	$cc -static -O2 $(cat "$1") -I"$srctree" "$work/app.c" "$lib/libjitt.a" \
		$(cat "$lib/libjitt.ldflags") -o "$work/$2" 2>"$work/$2.err" || return 1
	[ "$(TRACE_SPOOL=$work/$2.data/spool JITT_CONFIG=$work/$2.conf "$work/$2")" = "anomaly 0" ] || return 1
	set -- "$work/$2.data"/spool/*.jtr
	[ -f "$1" ] && echo "$1"
}
calls() { "$bin/jitt" decode "$1" | grep -c " $2\$"; }

if t1=$(build_run "$lib/libjitt.cflags" app-on) && [ "$(calls "$t1" oem_tiny)" -eq 100000 ]
then
	ok "round trip: the app built with libjitt.cflags traces its 100000 calls of oem_tiny"
else
	fail "round trip: the instrumented app: $(cat "$work/app-on.err" 2>/dev/null)"
	echo "$passed passed, $failed failed"
	exit 1
fi
# The runtime measured its trace point at its start (control.c): the header has it, and
# jitt exclude takes it when given no cost (a plausible figure: 0.1 to 500 ns).
"$bin/jitt" exclude "$t1" >"$work/measured.txt" 2>&1
c=$(sed -n 's/^trace point: C = \([0-9.]*\) ns, measured by the traced program.*/\1/p' "$work/measured.txt")
check "the trace carries the trace point's cost, measured at the program's start: C = ${c:-?} ns" \
	awk -v c="${c:-0}" 'BEGIN { exit !(c >= 0.1 && c <= 500) }'
check "jitt decode shows it" sh -c "'$bin/jitt' decode '$t1' | grep -q 'a trace point [0-9.]* ns (measured'"
# main was entered before tracing began: its loop's own time is outside every traced call,
# and the top names it from the stack, as jitt summarize does (a tiny --cost, so that taking
# the trace points out cannot bring that time to 0).
"$bin/jitt" exclude "$t1" --cost 0.001 >"$work/outside.txt" 2>&1
check "the top names the time outside every traced call by the stack: main" \
	grep -Eq '^ +[0-9]+\. .* #[0-9]+ +main \[outside every traced call' "$work/outside.txt"
# entries FILE: a list's names, one a line, sorted
entries() { sed 's/^[^=]*=//' "$1" | tr ',' '\n' | sort; }
"$bin/jitt" exclude "$t1" --budget 0 --keep 0 --protect 0 --min-us 0 --min-calls 1000 \
	-o "$work/exclude.opt" >"$work/report" 2>&1
status=$?
if [ $status -eq 0 ] && [ "$(entries "$work/exclude.opt" | tr '\n' ' ')" = "oem_tiny oem_walk " ] &&
	grep -q 'and oem_tiny_twin, whose name contains it' "$work/report" &&
	grep -q '^loops: *not known (--code PLAIN' "$work/report"; then
	ok "round trip: the list is oem_tiny (oem_tiny_twin goes with it) and oem_walk, not oem_work"
else
	fail "round trip: jitt exclude said (status $status):"
	cat "$work/report" "$work/exclude.opt"
fi
# Loops, read from the code of the plain build (--code): oem_walk, oem_tiny_twin and
# oem_work loop (and main). They are taken after every loop-free candidate: oem_tiny first,
# then oem_walk (oem_tiny_twin goes with oem_tiny, and is counted). With --keep-loops never:
# oem_tiny's entry would take oem_tiny_twin along, so the list is empty. (The instrumented
# build cannot tell: its trace points' blocks jump back into every function.)
$cc -static -O2 -I"$srctree" "$work/app.c" "$lib/libjitt.a" $(cat "$lib/libjitt.ldflags") \
	-o "$work/app-plain" 2>"$work/app-plain.err" || fail "loops: the plain build: $(cat "$work/app-plain.err")"
"$bin/jitt" exclude "$t1" --budget 0 --keep 0 --protect 0 --min-us 0 --min-calls 1000 \
	--code "$work/app-plain" -o "$work/last.opt" >"$work/last.txt" 2>&1
status=$?
if [ $status -eq 0 ] &&
	grep -qx -- '-finstrument-functions-exclude-function-list=oem_tiny,oem_walk' "$work/last.opt" &&
	grep -q '^ *2 of them hold a loop: taken when the loop-free ones did not reach the budget' \
		"$work/last.txt" &&
	grep -Eq '^loops: +[0-9]+ functions hold a loop in the code of 1 file \(--code\): .*excluded only after every loop-free candidate' \
		"$work/last.txt"; then
	ok "loops: taken last: oem_tiny, then oem_walk (and oem_tiny_twin, two with a loop)"
else
	fail "loops: jitt exclude --code said (status $status):"
	cat "$work/last.txt" "$work/last.opt"
fi
"$bin/jitt" exclude "$t1" --budget 0 --keep 0 --protect 0 --min-us 0 --min-calls 1000 \
	--code "$work/app-plain" --keep-loops -o "$work/loops.opt" >"$work/loops.txt" 2>&1
status=$?
looped=$(sed -n 's/^not picked:.*, \([0-9]*\) with a loop (--keep-loops),.*/\1/p' "$work/loops.txt")
if [ $status -eq 0 ] && [ ! -s "$work/loops.opt" ] && [ "${looped:-0}" -ge 3 ] &&
	grep -q 'never excluded (--keep-loops)' "$work/loops.txt"; then
	ok "loops: --keep-loops: oem_walk, oem_tiny_twin and oem_work are kept, nothing is listed"
else
	fail "loops: --keep-loops: jitt exclude said (status $status):"
	cat "$work/loops.txt" "$work/loops.opt"
fi
expect "--keep-loops without --code" 2 "--keep-loops needs --code" --keep-loops "$t1"
expect "--code: not an ELF file" 1 "--code $work/garbage.jtr: not an ELF file" \
	--code "$work/garbage.jtr" "$t1"
expect "--code: a missing file" 1 "No such file" --code "$work/missing" "$t1"
OBJDUMP=$work/no-objdump expect "--code: no objdump" 1 "objdump could not be run" \
	--code "$work/app-plain" "$t1"
# With --keep 0 and no budget, only --protect (by default 5% of the time) keeps oem_work,
# where the time goes, out of the list: before it, every function was listed.
"$bin/jitt" exclude "$t1" --budget 0 --keep 0 --min-calls 1 -o "$work/protect.opt" \
	>"$work/protect.txt" 2>&1
status=$?
if [ $status -eq 0 ] && grep -q 'oem_work (protected)' "$work/protect.txt" &&
	! grep -q oem_work "$work/protect.opt"; then
	ok "--keep 0: oem_work is protected, not listed"
else
	fail "--keep 0: jitt exclude said (status $status):"
	cat "$work/protect.txt" "$work/protect.opt"
fi
# libjitt's build takes the list: make JITT_EXCLUDE=FILE puts it into libjitt.cflags.
sdk=$work/sdk
if make -s -C "$srctree" BOARD=host O="$sdk" JITT_EXCLUDE="$work/exclude.opt" \
	"$sdk/lib/libjitt.cflags" >"$work/make.log" 2>&1 &&
	[ "$(cat "$sdk/lib/libjitt.cflags")" = "$(cat "$lib/libjitt.cflags") $(cat "$work/exclude.opt")" ]
then
	ok "round trip: make JITT_EXCLUDE=FILE adds the list to libjitt.cflags"
else
	fail "round trip: libjitt.cflags with JITT_EXCLUDE: $(cat "$sdk/lib/libjitt.cflags" \
		"$work/make.log" 2>&1)"
fi
if t2=$(build_run "$sdk/lib/libjitt.cflags" app-list) && [ "$(calls "$t2" oem_tiny)" -eq 0 ] &&
	[ "$(calls "$t2" oem_tiny_twin)" -eq 0 ] && [ "$(calls "$t2" oem_work)" -eq 100 ]; then
	ok "round trip: rebuilt with it, oem_tiny and oem_tiny_twin are not traced, oem_work is"
else
	fail "round trip: the app rebuilt with the list: $(cat "$work/app-list.err" 2>/dev/null)"
	[ -n "${t2:-}" ] && "$bin/jitt" summarize "$t2"
fi
# A list that is not jitt's is refused by the build, with a sentence.
printf 'oem_tiny\n' >"$work/bad.opt"
if ! make -s -C "$srctree" BOARD=host O="$sdk" JITT_EXCLUDE="$work/bad.opt" \
	"$sdk/lib/libjitt.cflags" >"$work/make.log" 2>&1 &&
	grep -q "not a file of jitt exclude -o" "$work/make.log"; then
	ok "round trip: make JITT_EXCLUDE refuses a file that is not a list"
else
	fail "round trip: make JITT_EXCLUDE took a bad file: $(cat "$work/make.log")"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
