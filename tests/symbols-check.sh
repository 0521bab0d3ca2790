#!/bin/sh
# Names for a stripped program (docs/symbols.md), end to end: jank-sim is copied, its debug
# file split off (objcopy --only-keep-debug), the copy stripped and given a .gnu_debuglink,
# and traced. With no debug file anywhere, `jitt summarize` shows build-id+offset and `jitt
# exclude` has nothing to list; with the debug file in .debug/ beside the program, or served
# by Debian's debuginfod (elfutils) on 127.0.0.1, summarize, export, exclude, diff and decode
# name the functions, and the fetched file is kept in the cache, which serves it once the
# server is gone. A server answering garbage costs the names, never the command.
# usage: symbols-check.sh BIN_DIR   (host: runs natively; needs objcopy, debuginfod, curl)
set -u
bin=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/check-lib.sh"
for tool in objcopy debuginfod curl python3; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "symbols-check: no $tool here (board/common/deps.sh installs it): skipped"
		echo "0 passed, 0 failed"
		exit 0
	fi
done
work=$(mktemp -d)
server= junk=
cleanup() {
	for p in $server $junk; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
# No server, cache or settings of the user running the tests leaks in.
unset DEBUGINFOD_URLS DEBUGINFOD_TIMEOUT
export XDG_CACHE_HOME="$work/cache" JITT_CONFIG="$work/jitt.conf"

# ---- the program, as an OEM image ships it, and its trace ----
mkdir -p "$work/data/spool" "$work/run" "$work/debug" "$work/bin"
printf 'data_dir = %s/data\nrun_dir = %s/run\nmax_threads = 8\nlog_level = warn\n' \
	"$work" "$work" >"$work/jitt.conf"
app=$work/bin/app
if ! { cp "$bin/jank-sim" "$app" &&
	objcopy --only-keep-debug "$app" "$work/debug/app.debug" &&
	objcopy --strip-all "$app" &&
	objcopy --add-gnu-debuglink="$work/debug/app.debug" "$app"; }; then
	fail "a stripped jank-sim and its debug file made"
	echo "$passed passed, $failed failed"
	exit 1
fi
"$app" --scenario=compute --frames 80 >/dev/null 2>"$work/app.err"
set -- "$work/data/spool"/*.jtr
trace=$1
if [ ! -f "$trace" ]; then
	fail "the stripped jank-sim left a trace" "$(cat "$work/app.err")"
	echo "$passed passed, $failed failed"
	exit 1
fi
id=$("$bin/jitt" decode "$trace" | sed -n 's/.* build-id \([0-9a-f]*\).*/\1/p' | head -n 1)
check "the trace names the program's build-id" [ ${#id} -eq 40 ]

names() { grep -q 'sim_ui_frame' "$1"; }
summarize() { "$bin/jitt" summarize "$trace" >"$work/out" 2>"$work/err"; }

# ---- nothing here: build-id and offset ----
summarize
if ! names "$work/out" && grep -q "${id%"${id#????????????????}"}+0x" "$work/out"; then
	ok "no debug file: summarize shows build-id+offset"
else
	fail "no debug file: summarize shows build-id+offset" "$(head -n 12 "$work/out")"
fi
"$bin/jitt" exclude "$trace" >/dev/null 2>"$work/err"
check "no debug file: exclude has nothing to list" [ $? -eq 1 ]

# ---- the debug file in .debug/ beside the program (its debuglink) ----
mkdir -p "$work/bin/.debug"
cp "$work/debug/app.debug" "$work/bin/.debug/app.debug"
summarize
check "debuglink in .debug/: summarize names the functions" names "$work/out"
rm -r "$work/bin/.debug"

# ---- a debuginfod server that indexes the debug folder ----
# debuginfod 0.188 has no listen-address option: it listens on every address, on a port
# nobody else holds (the kernel's pick); the client asks 127.0.0.1.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -d "$work/debuginfod.sqlite" -p "$port" -t 0 -g 0 -F "$work/debug" \
	>"$work/debuginfod.log" 2>&1 &
server=$!
url=http://127.0.0.1:$port
served() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/buildid/$id/debuginfo")" = 200 ]; }
if ! wait_for 30 served; then
	fail "debuginfod on $url serves the debug file" "$(tail -n 5 "$work/debuginfod.log")"
	echo "$passed passed, $failed failed"
	exit 1
fi
ok "debuginfod on $url serves the debug file (indexed from -F)"
export DEBUGINFOD_URLS="$url"
summarize
check "debuginfod: summarize names the functions" names "$work/out"
check "debuginfod: the fetched file is kept in the cache" \
	[ -f "$work/cache/jitt/debuginfod/$id.debug" ]
"$bin/jitt" export --format=folded "$trace" >"$work/out" 2>"$work/err"
check "debuginfod: export names the functions" names "$work/out"
"$bin/jitt" exclude "$trace" --budget 0 --keep 0 -o "$work/exclude.opt" >"$work/out" 2>&1
check "debuginfod: exclude lists functions by name" \
	grep -q -- '-finstrument-functions-exclude-function-list=.*util_' "$work/exclude.opt"
"$bin/jitt" diff "$trace" "$trace" >"$work/out" 2>"$work/err"
st=$?
check "debuginfod: diff runs and names no build-id+offset" \
	sh -c "[ $st -eq 0 ] && ! grep -q '+0x' '$work/out'"
"$bin/jitt" decode "$trace" >"$work/out" 2>"$work/err"
check "debuginfod: decode has the symbols" grep -q "build-id $id (symbols)" "$work/out"

# The server gone: the cache still names them, and nothing is asked.
kill "$server" && wait "$server" 2>/dev/null
server=
summarize
check "server gone: the cache still names the functions" names "$work/out"
check "server gone: nothing was asked" [ ! -s "$work/err" ]

# ---- a server that answers garbage ----
rm -rf "$work/cache"
python3 - "$work/junk.port" >/dev/null 2>&1 <<'PY' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nnot an elf" + b"\x00\xff" * 64)
    c.close()
PY
junk=$!
if wait_for 10 test -s "$work/junk.port"; then
	DEBUGINFOD_URLS="http://127.0.0.1:$(cat "$work/junk.port")" "$bin/jitt" summarize "$trace" \
		>"$work/out" 2>"$work/err"
	st=$?
	if [ $st -eq 0 ] && ! names "$work/out" && grep -q '^jitt: debuginfod: ' "$work/err" &&
		[ ! -e "$work/cache/jitt/debuginfod/$id.debug" ]; then
		ok "a garbage server: build-id+offset, one line on stderr, nothing cached"
	else
		fail "a garbage server" "status $st, stderr: $(cat "$work/err")"
	fi
else
	fail "the garbage server started"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
