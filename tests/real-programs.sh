#!/bin/sh
# Real programs nobody here wrote, from Debian's source packages, each built by its own build
# system with Debian's gcc defaults (PIE, glibc, dynamically linked), traced through the
# installed SDK and pkg-config (docs/oem.md), and a deliberately slow moment of each seen by
# jitt, perf and the kernel at once (tests/real_moment.py):
#   duktape  a JavaScript interpreter whose errors are longjmps (Makefile.cmdline): a script
#            that throws from 100 calls deep, again and again; no source change (trace_main
#            = 1), the moment asked for with `jitt trigger`.
#   memcached an event-loop server (autotools, libevent): two lines an OEM adds (the worker
#            traced, each event a frame: docs/oem.md "An event loop"), only the server
#            instrumented (memcached_CPPFLAGS, not CFLAGS: its tools stay plain), and a
#            200,000-key multiget that the hang detector catches by itself.
# For each: the summary's top self time names perf's first function of the program, a chain
# or the recovered outer frames reach it from the outer frames, running and preempted agree
# with /proc/PID/task/TID/schedstat within 10% of the window, and no jumped-over call is
# left open.
# Sources come with `apt-get source --download-only` into DL_DIR/src (build/dl), builds are
# kept in DL_DIR/real/<program>-<SDK hash> and reused while the SDK is the same.
# usage: real-programs.sh SRCTREE BIN_DIR [KEEP_DIR]   (host; root for perf and apt)
set -u
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
keep=${3:-}
dl=${DL_DIR:-$src/build/dl}
work=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
. "$src/tests/check-lib.sh"
. "$src/tests/real-lib.sh"
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}
say() { echo "  real-programs: $*"; }
[ -n "$keep" ] && mkdir -p "$keep"

for tool in perf python3 pkg-config; do
	command -v "$tool" >/dev/null || { fail "$tool is missing (make deps)"; finish; }
done

# ---- the SDK, installed as an image would have it ----
if ! real_sdk; then
	fail "make install" "$(tail -n 5 "$work/install.log")"
	finish
fi

conf=$work/jitt.conf
mkdir -p "$work/data/spool" "$work/run"
# Rings of 128 MiB: a window of a hundred milliseconds or more on these call-heavy programs,
# so that schedstat's view, which moves with the scheduler's ticks (a few ms) while a thread
# runs, is fine enough to compare with (and the spool's caps above such a trace).
printf 'data_dir = %s\nrun_dir = %s\nring_kb = 131072\nmax_trace_mb = 1024\n' "$work/data" \
	"$work/run" >"$conf"
JITT_CONFIG=$conf
export JITT_CONFIG
moment() { # label, then real_moment.py's arguments
	label=$1
	shift
	python3 "$src/tests/real_moment.py" --jitt "$bin/jitt" --spool "$work/data/spool" \
		--label "$label" ${keep:+--keep "$keep"} "$@" >"$work/$label.moment" 2>&1
	add_part "$(cat "$work/$label.moment")"
}

# ---- duktape ----
tar=$(fetch duktape) || tar=
# inlined NAME BINARY: the SDK's hooks are inlined into every instrumented function of a
# program its own build system built (LTO): no call to a hook is left (a call costs the
# traced function its registers; issue "call-heavy cost"), and how many trace points (the
# counter reads, x86-64: two per instrumented function) the binary holds.
inlined() {
	calls=$(objdump -d "$2" | grep -c 'call.*<__cyg_profile_func_' || true)
	points=$(objdump -d "$2" | grep -c 'rdtsc' || true)
	check "$1: every trace point inlined ($calls calls to a hook; $points trace points)" \
		is "$calls" 0
}

if [ -z "$tar" ]; then
	fail "duktape: no source (apt-get source duktape; a deb-src entry: make deps)"
else
	b=$dl/real/duktape-$sdk_hash
	if [ ! -x "$b/duk" ]; then
		say "building duktape ($(basename "$tar")) with its Makefile.cmdline and pkg-config jitt"
		# The OEM's build: the Makefile's own variables, jitt's flags in them.
		build_duktape "$tar" "$b" "$work/duk.log" jitt
	fi
	if [ -x "$b/duk" ] && file -L "$b/duk" | grep -q 'pie executable'; then
		ok "duktape: built by its own Makefile, PIE, linked through pkg-config jitt"
		inlined duktape "$b/duk"
		cat >"$work/deep.js" <<'JS'
// An interpreter's slow moment: errors thrown from deep in a recursion, caught, retried.
function deep(n) {
	if (n === 0)
		throw new Error('deep');
	return deep(n - 1) + 1;
}
function retryDeep(rounds) {
	var caught = 0;
	for (var i = 0; i < rounds; i++) {
		try {
			deep(100);
		} catch (e) {
			caught++;
		}
	}
	return caught;
}
for (;;)
	retryDeep(200);
JS
		cp "$conf" "$work/duk.conf" && echo 'trace_main = 1' >>"$work/duk.conf"
		JITT_CONFIG=$work/duk.conf "$b/duk" "$work/deep.js" >/dev/null 2>"$work/duk.err" &
		duk=$!
		pids="$pids $duk"
		# running its script (a control socket means the runtime is up)
		if wait_for 30 test -S "$work/run/jitt-$duk.sock"; then
			JITT_CONFIG=$work/duk.conf moment duktape --pid "$duk" --trigger \
				--outer main --outer duk_js_execute_bytecode # the executor: its
				# bytecode loop is not on the stack while a throw unwinds
		else
			fail "duktape: the traced interpreter did not start" "$(cat "$work/duk.err")"
		fi
		kill "$duk" 2>/dev/null
	else
		fail "duktape: build" "$(tail -n 5 "$work/duk.log" 2>/dev/null)"
	fi
fi

# ---- memcached ----
tar=$(fetch memcached) || tar=
if [ -z "$tar" ]; then
	fail "memcached: no source (apt-get source memcached)"
else
	b=$dl/real/memcached-$sdk_hash
	if [ ! -x "$b/memcached" ]; then
		say "building memcached ($(basename "$tar")) with configure && make, pkg-config jitt"
		# What an OEM adds (docs/oem.md): the worker thread traced before its event loop,
		# and each event handled as a frame.
		build_memcached "$tar" "$b" "$work/mc.log" jitt
	fi
	if [ -x "$b/memcached" ] && file -L "$b/memcached" | grep -q 'pie executable'; then
		ok "memcached: built by configure and make, PIE, linked through pkg-config jitt"
		inlined memcached "$b/memcached"
		if nm "$b/sizes" "$b/timedrun" 2>/dev/null | grep -q __cyg_profile; then
			fail "memcached: its tools are instrumented too"
		else
			ok "memcached: its tools (sizes, timedrun) are not instrumented"
		fi
		port=$((20000 + $$ % 10000))
		# Every multiget over hang_ms is a hang: no cool-down between them.
		cp "$conf" "$work/mc.conf" && echo 'cooldown_ms = 0' >>"$work/mc.conf"
		# One worker: the client's connection and the readiness probe go to the same one.
		JITT_CONFIG=$work/mc.conf "$b/memcached" -u "$(id -un)" -p "$port" -l 127.0.0.1 -t 1 -m 512 -U 0 \
			2>"$work/mc.err" &
		mc=$!
		pids="$pids $mc"
		probe() { python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null; }
		if wait_for 30 probe; then
			cat >"$work/client.py" <<'PY'
import socket, sys
port, nkeys = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
def until(tail):
    buf = b""
    while not buf.endswith(tail):
        d = s.recv(1 << 20)
        if not d:
            sys.exit("the server closed the connection")
        buf += d
    return buf
for base in range(0, nkeys, 5000):
    s.sendall(b"".join(b"set key:%d 0 0 8 noreply\r\nvalue%03d\r\n" % (k, k % 1000)
                       for k in range(base, min(nkeys, base + 5000))))
s.sendall(b"mn\r\n")
until(b"MN\r\n")
# Half the keys exist: the answer stays small enough that the worker is busy looking keys
# up, not waiting for the client to read (a frozen blocked thread has no stack to scan).
req = b"get " + b" ".join(b"key:%d" % k if k % 2 else b"miss:%d" % k
                          for k in range(2 * nkeys)) + b"\r\n"
while True:  # the slow moment, again and again until killed
    s.sendall(req)
    until(b"END\r\n")
PY
			python3 "$work/client.py" "$port" 200000 2>"$work/client.err" &
			client=$!
			pids="$pids $client"
			JITT_CONFIG=$work/mc.conf moment memcached --pid "$mc" --seconds 0.5 --outer worker_libevent \
				--outer process_get_command
			kill "$client" 2>/dev/null
		else
			fail "memcached: the server did not listen" "$(cat "$work/mc.err")"
		fi
		kill "$mc" 2>/dev/null
	else
		fail "memcached: build" "$(tail -n 5 "$work/mc.log" 2>/dev/null)"
	fi
fi
finish
