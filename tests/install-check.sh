#!/bin/sh
# `make install` into a temporary folder, checked as an OEM would use it (docs/oem.md):
#  - the tree: every file that should be there and nothing else, binaries 0755, the rest
#    0644 (the SysV script 0755), folders 0755, nothing writable by others, no @NAME@ left;
#  - the init files: the systemd unit passes `systemd-analyze verify` (where systemd is
#    installed), the SysV script passes `sh -n` and says its usage;
#  - the settings file: every key the parser knows is in it, and jittd and a traced app
#    accept it;
#  - the SDK: libjitt.a, libjitt.cflags, libjitt.ldflags and jitt.h, with the compiler
#    libjitt.cc names, build a service that links and runs; with no spool it persists
#    nothing and says so once, with one it persists a trace the installed jitt summarises.
# usage: install-check.sh SRCTREE BOARD OBJ_DIR
set -u
src=$1 board=$2 o=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
dest=$work/dest
jpid=
cleanup() {
	[ -n "$jpid" ] && kill -9 "$jpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
. "$here/check-lib.sh"

if ! make -C "$src" BOARD="$board" O="$o" install DESTDIR="$dest" >"$work/install.log" 2>&1; then
	fail "make install DESTDIR=..." "$(tail -n 20 "$work/install.log")"
	echo "$passed passed, $failed failed"
	exit 1
fi
ok "make install DESTDIR=... BOARD=$board"

# ---- the tree ----
expected="0755 etc/init.d/jittd
0644 etc/jitt.conf
0755 usr/bin/jitt
0755 usr/bin/jittd
0644 usr/include/jitt/jitt.h
0644 usr/lib/cmake/jitt/jittConfig.cmake
0644 usr/lib/cmake/jitt/jittConfigVersion.cmake
0644 usr/lib/jitt/libjitt-clang.a
0644 usr/lib/jitt/libjitt-clang.cflags
0644 usr/lib/jitt/libjitt-clang.ldflags
0644 usr/lib/jitt/libjitt-dso.a
0644 usr/lib/jitt/libjitt-glibc.a
0644 usr/lib/jitt/libjitt-glibc.ldflags
0644 usr/lib/jitt/libjitt-sampled.a
0644 usr/lib/jitt/libjitt-sleds.a
0644 usr/lib/jitt/libjitt-sleds.cflags
0644 usr/lib/jitt/libjitt-sleds.ldflags
0644 usr/lib/jitt/libjitt.a
0644 usr/lib/jitt/libjitt.cc
0644 usr/lib/jitt/libjitt.cflags
0644 usr/lib/jitt/libjitt.ldflags
0644 usr/lib/pkgconfig/jitt-clang.pc
0644 usr/lib/pkgconfig/jitt-dso.pc
0644 usr/lib/pkgconfig/jitt-musl.pc
0644 usr/lib/pkgconfig/jitt-sampled.pc
0644 usr/lib/pkgconfig/jitt-sleds.pc
0644 usr/lib/pkgconfig/jitt.pc
0644 usr/lib/systemd/system/jittd.service
0644 usr/lib/sysusers.d/jitt.conf
0644 usr/lib/tmpfiles.d/jitt.conf
0644 usr/share/doc/jitt/exclude.md
0644 usr/share/doc/jitt/oem.md
0644 usr/share/doc/jitt/runtime.md"
got=$(cd "$dest" && find . ! -type d -exec stat -c '%04a %n' {} + | sed 's| \./| |' |
	sort -k 2)
if is "$got" "$expected"; then
	ok "the tree: $(echo "$got" | wc -l) files, each with its mode"
else
	fail "the tree" "$(printf 'expected:\n%s\ngot:\n%s' "$expected" "$got")"
fi
dirs=$(cd "$dest" && find . -type d ! -perm 0755)
check "the tree: every folder is 0755${dirs:+ (not: $dirs)}" is "$dirs" ""
open=$(cd "$dest" && find . -perm -0002 -o -perm -0020)
check "the tree: nothing writable by group or others${open:+ (is: $open)}" is "$open" ""
left=$(grep -rl '@[A-Z_]*@' "$dest/etc" "$dest/usr/lib/systemd" "$dest/usr/lib/sysusers.d" \
	"$dest/usr/lib/tmpfiles.d")
check "the init files: every @NAME@ filled in${left:+ (not in: $left)}" is "$left" ""
for p in jitt jittd; do
	check "$p is stripped, with its build-id" sh -c \
		"file '$dest/usr/bin/$p' | grep -q 'stripped' && ! file '$dest/usr/bin/$p' | grep -q 'not stripped' && file '$dest/usr/bin/$p' | grep -q BuildID"
done

# ---- the init files ----
unit=$dest/usr/lib/systemd/system/jittd.service
if command -v systemd-analyze >/dev/null 2>&1; then
	# verify wants ExecStart's program where the unit says: point it into DESTDIR.
	mkdir -p "$work/unit"
	sed "s|^ExecStart=/usr/bin/|ExecStart=$dest/usr/bin/|" "$unit" >"$work/unit/jittd.service"
	out=$(systemd-analyze verify --man=no "$work/unit/jittd.service" 2>&1)
	status=$?
	if [ $status -eq 0 ] && [ -z "$out" ]; then
		exposure=$(systemd-analyze security --offline=yes "$work/unit/jittd.service" 2>&1 |
			sed -n 's/.*Overall exposure level for jittd.service: *//p')
		ok "jittd.service passes systemd-analyze verify (security: exposure ${exposure:-?})"
	else
		fail "jittd.service: systemd-analyze verify says (status $status)" "$out"
	fi
else
	echo "note jittd.service not verified: no systemd-analyze on this machine"
fi
for want in 'User=jitt' 'NoNewPrivileges=yes' 'ProtectSystem=strict' 'PrivateTmp=yes' \
	'ProtectHome=yes' 'ReadWritePaths=/var/lib/jitt /run/jitt' 'StateDirectoryMode=0711' \
	'RuntimeDirectoryMode=1733' 'CapabilityBoundingSet=$' 'RestrictAddressFamilies=AF_UNIX'; do
	check "jittd.service: $want" grep -q "^$want" "$unit"
done
check "tmpfiles: the spool 3733, owned by jitt" \
	grep -q '^d /var/lib/jitt/spool  *3733 jitt jitt' "$dest/usr/lib/tmpfiles.d/jitt.conf"
sysv=$dest/etc/init.d/jittd
check "the SysV script passes sh -n" sh -n "$sysv"
if command -v busybox >/dev/null 2>&1; then
	check "the SysV script passes busybox sh -n" busybox sh -n "$sysv"
fi
out=$(sh "$sysv" frobnicate 2>&1)
check "the SysV script: an unknown action gives its usage and status 2" \
	sh -c "sh '$sysv' frobnicate >/dev/null 2>&1; [ \$? -eq 2 ] && echo '$out' | grep -q 'start|stop|restart|status'"
check "the SysV script starts jittd as jitt, makes the spool 3733" \
	sh -c "grep -q '^USER=jitt' '$sysv' && grep -q 'dir 3733 \"\$DATA_DIR/spool\"' '$sysv'"

# ---- the settings file ----
conf=$dest/etc/jitt.conf
keys=$(sed -n 's/.*{ "\([a-z_]*\)", offsetof.*/\1/p; s/.*UP_STRING("\([a-z_]*\)".*/\1/p' \
	"$src/agent/config.c")
missing=
for k in data_dir run_dir log_level $keys; do
	grep -q "^#* *$k = " "$conf" || missing="$missing $k"
done
check "jitt.conf: every key the parser knows ($(echo $keys | wc -w) and 3)${missing:+; missing:$missing}" \
	is "$missing" ""
check "jitt.conf: the uploader's URL and CA bundle are set" \
	sh -c "grep -q '^upload_url = https://' '$conf' && grep -q '^upload_ca_file = /' '$conf'"
# The installed file as it is, then the folders moved into $work (later lines win): a line
# of the file the parser refused would fail here.
mkdir -p "$work/data" "$work/run"
{
	cat "$conf"
	printf 'data_dir = %s/data\nrun_dir = %s/run\nlog_level = warn\n' "$work" "$work"
	echo "consent_file = $work/data/consent"
} >"$work/test.conf"
"$dest/usr/bin/jittd" -f -c "$work/test.conf" >"$work/jittd.log" 2>&1 &
jpid=$!
if wait_for 10 "$dest/usr/bin/jitt" status -c "$work/test.conf" >/dev/null 2>&1; then
	ok "jittd accepts the installed jitt.conf and answers jitt status"
else
	fail "jittd with the installed jitt.conf" "$(cat "$work/jittd.log")"
fi
kill -TERM "$jpid" && wait "$jpid"
jpid=
rm -rf "$work/data" "$work/run"

# ---- the SDK ----
sdk=$dest/usr/lib/jitt
cc=$(cat "$sdk/libjitt.cc")
cat >"$work/service.c" <<'C'
#include <jitt/jitt.h>
#include <stdio.h>
#include <time.h>
__attribute__((noinline)) static int oem_service_work(int x)
{
	for (volatile int i = 0; i < 2000000; i++)
		x += i & 1;
	return x;
}
int main(void)
{
	jitt_thread_name("oem-main");
	int traced = jitt_trace_thread(true);
	int x = oem_service_work(1);
	int a = jitt_anomaly("first");
	int b = -1;
	for (int i = 0; i < 10 && b; i++) {
		struct timespec ts = { 0, 200000000 }; /* the control thread persists, or not */
		nanosleep(&ts, NULL);
		b = jitt_anomaly("again");
	}
	struct timespec ts = { 0, 300000000 };
	nanosleep(&ts, NULL);
	printf("traced %d anomaly %d %d work %d\n", traced, a, b, x > 0);
	return 0;
}
C
# shellcheck disable=SC2046 # the flags files are lists of words
if $cc -c -O2 -Wall -Werror $(cat "$sdk/libjitt.cflags") -I"$dest/usr/include" "$work/service.c" \
	-o "$work/service.o" 2>"$work/cc.err" &&
	$cc -static -O2 -flto "$work/service.o" "$sdk/libjitt.a" $(cat "$sdk/libjitt.ldflags") \
		-o "$work/service" 2>>"$work/cc.err"; then
	ok "the SDK: a service built with libjitt.cc ($cc), libjitt.cflags, jitt.h, linked with libjitt.a and libjitt.ldflags"
else
	fail "the SDK: the service does not build" "$(cat "$work/cc.err")"
fi
# With cooldown_ms = 0 each anomaly is persisted, or tried.
echo "cooldown_ms = 0" >>"$work/test.conf"
mkdir -p "$work/data" "$work/run" # as the init makes them, but the spool
out=$(JITT_CONFIG=$work/test.conf "$work/service" 2>"$work/service.err")
check "the service runs traced with the installed jitt.conf ($out)" \
	matches "$out" '^traced 0 anomaly 0 0 work 1$'
n=$(grep -c 'spool' "$work/service.err")
check "no spool: the service says so once ($n line(s))" is "$n" 1
check "no spool: ... and makes none, persists nothing" test ! -e "$work/data/spool"
mkdir "$work/data/spool"
out=$(JITT_CONFIG=$work/test.conf "$work/service" 2>"$work/service.err")
set -- "$work"/data/spool/*.jtr
check "with the spool (made as the init does): $# traces persisted" is "$#" 2
if [ -f "$1" ] && "$dest/usr/bin/jitt" summarize "$1" >"$work/summary" 2>&1 &&
	grep -q oem_service_work "$work/summary"; then
	ok "the installed jitt summarises the service's trace, naming oem_service_work"
else
	fail "the service's trace" "$(cat "$work/summary" "$work/service.err" 2>/dev/null)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
