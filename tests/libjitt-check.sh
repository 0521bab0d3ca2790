#!/bin/sh
# An OEM's build, outside ours: an app compiled with -finstrument-functions -flto and linked
# with $(O)/lib/libjitt.a and the flags in $(O)/lib/libjitt.ldflags only. The runtime starts
# by itself (the constructor), a blocking call is wrapped, jitt_anomaly() persists a trace,
# and its summary names the app's function.
# usage: libjitt-check.sh LIB_DIR BIN_DIR CC   (host: runs the app natively)
set -u
lib=$1 bin=$2 cc=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/app.c" <<'C'
#include "agent/jitt.h"
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
	usleep(300000); /* the control thread persists */
	return 0;
}
C
printf 'data_dir = %s/data\nrun_dir = %s/run\nlog_level = warn\n' "$work" "$work" >"$work/conf"
passed=0 failed=0
if $cc -static -O2 -flto -finstrument-functions -I"$(dirname "$0")/.." "$work/app.c" \
	"$lib/libjitt.a" $(cat "$lib/libjitt.ldflags") -o "$work/app" 2>"$work/err"; then
	echo "ok   libjitt: an app links with libjitt.a and libjitt.ldflags alone"
	passed=$((passed + 1))
else
	echo "FAIL libjitt: the app does not link: $(cat "$work/err")"
	echo "0 passed, 1 failed"
	exit 1
fi
out=$(JITT_CONFIG=$work/conf "$work/app" 2>&1)
set -- "$work"/data/spool/*.jtr
if [ "$out" = "anomaly 0 x 1" ] && [ -f "$1" ] &&
	"$bin/jitt" summarize "$1" >"$work/summary" 2>&1 &&
	grep -q '^anomaly: explicit: oem check' "$work/summary" &&
	grep -q 'oem_busy_function' "$work/summary"; then
	echo "ok   libjitt: it started by itself, persisted a trace, and the summary names its function"
	passed=$((passed + 1))
else
	echo "FAIL libjitt: app said '$out'; trace '$1'; summary:"
	cat "$work/summary" 2>/dev/null
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
