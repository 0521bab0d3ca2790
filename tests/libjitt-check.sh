#!/bin/sh
# An OEM's build, outside ours: apps compiled with -finstrument-functions -flto and linked
# with $(O)/lib/libjitt.a and the flags in $(O)/lib/libjitt.ldflags only.
#  - app.c calls libjitt: the runtime starts by itself (the constructor), a blocking call is
#    wrapped, jitt_anomaly() persists a trace, and its summary names the app's function.
#  - plain.c has no jitt code at all: with trace_main = 1 its main thread is traced from the
#    constructor, by the kernel's name for it ("plain"), and `jitt trigger` persists it;
#    JITT_DISABLE=1 or enabled = 0 start nothing (no control thread, no socket); the
#    control sockets of such apps killed with -9 are removed by the next app's start and
#    by jittd's, never a live app's.
# usage: libjitt-check.sh LIB_DIR BIN_DIR CC   (host: runs the apps natively)
set -u
lib=$1 bin=$2 cc=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
apps=
jpid=
cleanup() {
	for p in $apps $jpid; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
. "$here/check-lib.sh"

cat >"$work/app.c" <<'C'
#include "agent/jitt.h"
#include "tests/wait_trace.h"
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
__attribute__((noinline)) static int oem_busy_function(int x)
{
	for (volatile int i = 0; i < 3000000; i++)
		x += i & 1;
	return x;
}
int main(void)
{
	jitt_thread_name("oem-main");
	if (jitt_trace_thread(true))
		return 1;
	pthread_mutex_lock(&lock);
	int x = oem_busy_function(1);
	pthread_mutex_unlock(&lock);
	usleep(1000);
	printf("anomaly %d x %d\n", jitt_anomaly("oem check"), x > 0);
	wait_for_trace(); /* the control thread persists */
	return 0;
}
C
# No jitt code: works, says so, then waits on its stdin until it is killed or it closes.
cat >"$work/plain.c" <<'C'
#include <stdio.h>
#include <unistd.h>
__attribute__((noinline)) static int oem_plain_work(int x)
{
	for (volatile int i = 0; i < 3000000; i++)
		x += i & 1;
	return x;
}
int main(void)
{
	printf("ready %d\n", oem_plain_work(1) > 0);
	fflush(stdout);
	char c;
	return read(0, &c, 1) < 0;
}
C
conf() { # name, extra settings: a settings file in the shared folders
	name=$1
	shift
	{
		printf 'data_dir = %s/data\nrun_dir = %s/run\nlog_level = warn\n' "$work" "$work"
		for kv in "$@"; do echo "$kv"; done
	} >"$work/$name.conf"
}
conf app
mkdir -p "$work/data/spool" "$work/run" # as the image's init makes them
build() { # name
	$cc -static -O2 -flto -finstrument-functions -I"$here/.." "$work/$1.c" "$lib/libjitt.a" \
		$(cat "$lib/libjitt.ldflags") -o "$work/$1" 2>"$work/$1.err"
}
if build app && build plain; then
	ok "libjitt: apps link with libjitt.a and libjitt.ldflags alone"
else
	fail "libjitt: the apps do not link" "$(cat "$work/app.err" "$work/plain.err")"
	echo "$passed passed, $failed failed"
	exit 1
fi

out=$(TRACE_SPOOL=$work/data/spool JITT_CONFIG=$work/app.conf "$work/app" 2>&1)
set -- "$work"/data/spool/*.jtr
if [ "$out" = "anomaly 0 x 1" ] && [ -f "$1" ] &&
	"$bin/jitt" summarize "$1" >"$work/summary" 2>&1 &&
	grep -q '^anomaly: explicit: oem check' "$work/summary" &&
	grep -q 'oem_busy_function' "$work/summary"; then
	ok "libjitt: it started by itself, persisted a trace, and the summary names its function"
else
	fail "libjitt: app said '$out'; trace '$1'; summary:" "$(cat "$work/summary" 2>/dev/null)"
fi
rm -f "$work"/data/spool/*.jtr

# plain NAME CONF [VAR=VALUE]: start the plain app in the background (its pid in $app, its
# output in $work/NAME.out), stdin a FIFO nobody writes; wait until main() runs.
mkfifo "$work/hold"
exec 3<>"$work/hold"
plain() {
	name=$1 c=$2
	shift 2
	env JITT_CONFIG="$work/$c.conf" "$@" "$work/plain" <"$work/hold" >"$work/$name.out" 2>&1 &
	app=$!
	apps="$apps $app"
	wait_for 10 grep -q '^ready' "$work/$name.out"
}
sock() { echo "$work/run/jitt-$1.sock"; }
gone() { [ ! -e "$1" ]; }

threads() { ls "/proc/$1/task" | wc -l; }

# ---- the switches: no code in the app, settings and environment only.
conf main 'trace_main = 1' 'log_level = info'
plain traced main && traced=$app
if wait_for 10 test -S "$(sock "$traced")" &&
	out=$("$bin/jitt" trigger -c "$work/main.conf" "$traced" 2>&1) &&
	"$bin/jitt" summarize "$(printf '%s\n' "$out" | sed -n 's/^trace //p')" >"$work/summary" 2>&1 &&
	grep -q '^thread "plain"' "$work/summary" && grep -q 'oem_plain_work' "$work/summary"; then
	ok "trace_main: an app with no jitt code is traced from the constructor, as \"plain\""
else
	fail "trace_main: trigger said '$out'; summary:" "$(cat "$work/summary" 2>/dev/null)"
fi
# What it is, says the app itself (one line in its log, at info) and `jitt status PID`: the
# threads traced, the ring's size, the settings file read.
status=$("$bin/jitt" status -c "$work/main.conf" "$traced" 2>&1)
check "jitt status PID: the traced main thread by tid and name" matches "$status" \
	"^thread $traced plain\$"
check "jitt status PID: the ring size, the settings file read" sh -c \
	'printf "%s\n" "$1" | grep -qx "ring_kb 4096" && printf "%s\n" "$1" | grep -qx "settings $2" &&
	printf "%s\n" "$1" | grep -qx "settings_found 1"' - "$status" "$work/main.conf"
check "the app's log says it is traced, once" is \
	"$(grep -c "jitt: pid $traced traced: settings $work/main.conf; rings of 4096 KiB, up to 2 threads; the main thread traced" "$work/traced.out")" 1
kill "$traced" && wait "$traced" 2>/dev/null
rm -f "$work"/data/spool/*.jtr
plain untraced app && untraced=$app
wait_for 10 test -S "$(sock "$untraced")"
out=$("$bin/jitt" trigger -c "$work/app.conf" "$untraced" 2>&1)
check "trace_main: off by default, nothing is traced ($out)" matches "$out" "persist failed: No data"
kill "$untraced" && wait "$untraced" 2>/dev/null
conf off 'enabled = 0' 'trace_main = 1'
for how in "JITT_DISABLE=1:main" "enabled = 0:off"; do
	if [ "${how%%:*}" = "JITT_DISABLE=1" ]; then
		plain off main JITT_DISABLE=1
	else
		plain off off
	fi
	check "switched off by ${how%%:*}: main() runs, no control socket, no control thread" \
		test ! -e "$(sock "$app")" -a "$(threads "$app")" -eq 1
	kill "$app" && wait "$app" 2>/dev/null
done
set -- "$work"/data/spool/*.jtr
check "switched off: no trace was written" test "$#" -eq 1 -a ! -e "$1"
rm -f "$work"/data/spool/*.jtr

# ---- stale control sockets: an app killed with -9 leaves its socket behind.
conf plain
plain dead1 plain && dead1=$app
wait_for 10 test -S "$(sock "$dead1")"
kill -9 "$dead1" && wait "$dead1" 2>/dev/null
check "stale sockets: an app killed with -9 leaves jitt-$dead1.sock" test -S "$(sock "$dead1")"
plain live plain && live=$app
check "stale sockets: the next app's start removes it" wait_for 10 gone "$(sock "$dead1")"
check "stale sockets: ... and keeps its own, live one" test -S "$(sock "$live")"
plain dead2 plain && dead2=$app
kill -9 "$dead2" && wait "$dead2" 2>/dev/null
"$bin/jittd" -f -c "$work/plain.conf" >"$work/jittd.log" 2>&1 &
jpid=$!
if wait_for 10 "$bin/jitt" status -c "$work/plain.conf" >/dev/null 2>&1; then
	check "stale sockets: jittd's start removes them" wait_for 10 gone "$(sock "$dead2")"
	check "stale sockets: ... and keeps a live app's" test -S "$(sock "$live")"
else
	fail "stale sockets: jittd does not start" "$(cat "$work/jittd.log")"
fi
kill -TERM "$jpid" && wait "$jpid"
jpid=
kill "$live" && wait "$live" 2>/dev/null

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
