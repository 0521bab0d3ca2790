#!/bin/sh
# jittd end to end, with real trace files (copies of the committed golden trace, arriving by
# rename as rb_trace_write makes them): each gets exactly one summary in the outbox (strict
# JSON) and is kept or deleted per keep_traces; bad files go to quarantine with a .why and
# jittd goes on; work left from a stopped run is done at start; a full disk (a small tmpfs)
# leaves traces in the spool until space returns; kill -9 at random moments over 20 rounds
# loses and repeats nothing; the caps trim; `jitt status` shows the counters; another user
# reads the status but changes nothing; `jitt status` / `jitt trigger` errors.
# On the build machine (python3 from board/common/deps.sh), natively or under qemu-user
# (inotify, unix sockets and SO_PEERCRED work there); POSIX sh.
#
# usage: jittd-check.sh BIN_DIR ["QEMU_CMD"]   prints "ok what" / "FAIL what" / "skip what",
#                                              then "N passed, N failed"
set -u
here=$(cd "$(dirname "$0")" && pwd)
self=$here/jittd-check.sh
bin=${1:?usage: jittd-check.sh BIN_DIR [QEMU_CMD]}
qemu=${2:-}
bin=$(cd "$bin" && pwd)
jittd=$bin/jittd
jitt=$bin/jitt
golden=$here/golden/decode-synthetic.jtr
jpid=
. "$here/check-lib.sh"


# A data folder, a run folder and a settings file under $1. Extra settings as arguments.
setup() {
	d=$1
	shift
	mkdir -p "$d"
	{
		echo "data_dir = $d/data"
		echo "run_dir = $d/run"
		echo "max_traces = 1000"
		echo "max_trace_mb = 1000"
		echo "log_level = debug"
		for kv in "$@"; do echo "$kv"; done
	} >"$d/conf"
}

# Start jittd in the foreground on folder $1 (log appended to $1/log); wait until it answers.
start() {
	$qemu "$jittd" -f -c "$1/conf" >>"$1/log" 2>&1 &
	jpid=$!
	i=0
	while [ $i -lt 200 ]; do
		$qemu "$jitt" status -c "$1/conf" >/dev/null 2>&1 && return 0
		kill -0 "$jpid" 2>/dev/null || return 1
		sleep 0.02
		i=$((i + 1))
	done
	return 1
}
stop() { # SIGTERM; jittd's exit status
	kill -TERM "$jpid" 2>/dev/null
	wait "$jpid"
	s=$?
	jpid=
	return $s
}

# A trace arriving as the runtime writes one: a temporary name, then a rename.
drop() { # folder name [source]
	cp "${3:-$golden}" "$1/data/spool/.tmp-$2" && mv "$1/data/spool/.tmp-$2" "$1/data/spool/$2.jtr"
}
count() { # files matching a glob pattern
	n=0
	for f in "$@"; do [ -e "$f" ] && n=$((n + 1)); done
	echo $n
}
# Poll until the command succeeds: an event, waited for; $1 seconds only bounds a hang.
# jittd runs SCHED_IDLE, so on a loaded machine (a fuzzer on every core) it may get no CPU
# for long: the bound is generous, times JITT_TEST_PATIENCE (default 6), and only delays
# the report of a real failure.
counter() { # folder key: one value of `jitt status`
	$qemu "$jitt" status -c "$1/conf" 2>/dev/null | awk -v k="$2" '$1 == k { print $2 }'
}
spool_empty() { [ "$(count "$1"/data/spool/*.jtr)" -eq 0 ]; }
# The spool is empty and the last trace's move and trim are done: jittd's worker says it is
# idle (it has no pass under way and none due).
idle() { spool_empty "$1" && [ "$(counter "$1" worker)" = idle ]; }
outbox_has() { [ "$(count "$1"/data/outbox/*.json)" -eq "$2" ]; }
no_temporaries() { ! ls -A "$1/data/outbox" "$1/data/quarantine" | grep -q '^\.'; }
at_least() { v=$(counter "$1" "$2"); [ "${v:-0}" -ge "$3" ]; } # folder, key, value
ntraces() { ls "$1" | grep -c '\.jtr$'; } # in a folder
strict_json() { # every file named must be strict JSON, UTF-8, a jitt summary
	python3 - "$@" <<'EOF'
import json, sys
def no_constant(name):
    raise ValueError("not JSON: " + name)
for path in sys.argv[1:]:
    with open(path, encoding="utf-8", errors="strict") as f:
        doc = json.load(f, parse_constant=no_constant)
    if doc.get("schema") != "jitt.summary":
        sys.exit("%s: not a jitt summary" % path)
EOF
}
# A request on a control socket as another program would send it; prints the reply.
ask() { # socket request
	python3 - "$1" "$2" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
out = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
EOF
}

# ---- the disk-full part runs in its own mount namespace:
# `JITTD_CHECK_DISKFULL=DIR jittd-check.sh BIN [QEMU]`
if [ -n "${JITTD_CHECK_DISKFULL:-}" ]; then
	d=$JITTD_CHECK_DISKFULL
	setup "$d"
	mkdir -p "$d/data"
	mount -t tmpfs -o size=256k,mode=0700 tmpfs "$d/data" || { echo "skip disk full: no tmpfs"; exit 0; }
	start "$d" || { fail "disk full: jittd starts"; exit 1; }
	# Fill the disk, keeping back two pages for the traces themselves.
	dd if=/dev/zero of="$d/data/reserve" bs=4096 count=2 2>/dev/null
	dd if=/dev/zero of="$d/data/filler" bs=4096 2>/dev/null
	rm -f "$d/data/reserve"
	# Both copied before either is renamed in: jittd's first try must not take the second
	# one's page.
	cp "$golden" "$d/data/spool/.tmp-1" && cp "$golden" "$d/data/spool/.tmp-2" &&
		mv "$d/data/spool/.tmp-1" "$d/data/spool/trace-full-1.jtr" &&
		mv "$d/data/spool/.tmp-2" "$d/data/spool/trace-full-2.jtr"
	check "disk full: summaries fail and are retried with back-off" wait_for 8 at_least "$d" retries 2
	check "disk full: the traces stay in the spool" \
		test -f "$d/data/spool/trace-full-1.jtr" -a -f "$d/data/spool/trace-full-2.jtr"
	check "disk full: no summary, no temporary" is "$(ls -A "$d/data/outbox")" ""
	check "disk full: status says why" matches "$($qemu "$jitt" status -c "$d/conf")" "^last_error No space"
	check "disk full: the log says why" grep -q "cannot write .*No space left" "$d/log"
	rm -f "$d/data/filler"
	check "disk full: once space is back, both are summarised" wait_for 20 outbox_has "$d" 2
	wait_for 10 idle "$d"
	check "disk full: ... and kept, nothing lost" \
		test -f "$d/data/traces/trace-full-1.jtr" -a -f "$d/data/traces/trace-full-2.jtr"
	check "disk full: the summaries are strict JSON" strict_json "$d"/data/outbox/*.json
	stop
	umount "$d/data"

	# keep_traces = 1 on a disk with room for one summary, not for a raw copy as well:
	# summaries come first; each copy that does not fit is skipped and counted, and the
	# traces behind are summarised, not held up by the first one's copy.
	d=${JITTD_CHECK_DISKFULL}-keep
	setup "$d" "keep_traces = 1"
	mkdir -p "$d/data"
	mount -t tmpfs -o size=256k,mode=0700 tmpfs "$d/data" || { echo "skip disk full: no tmpfs"; exit 0; }
	start "$d" || { fail "disk full, keep: jittd starts"; exit 1; }
	# Three pages for the traces, one for a summary.
	dd if=/dev/zero of="$d/data/reserve" bs=4096 count=4 2>/dev/null
	dd if=/dev/zero of="$d/data/filler" bs=4096 2>/dev/null
	rm -f "$d/data/reserve"
	for n in 1 2 3; do cp "$golden" "$d/data/spool/.tmp-$n"; done
	for n in 1 2 3; do mv "$d/data/spool/.tmp-$n" "$d/data/spool/trace-keep-$n.jtr"; done
	check "disk full, keep: the three traces are summarised, none held up by a copy" \
		wait_for 20 outbox_has "$d" 3
	wait_for 10 idle "$d"
	check "disk full, keep: the copies that did not fit are skipped and counted" \
		is "$(counter "$d" copies_skipped) $(counter "$d" kept) $(counter "$d" pending)" "3 0 0"
	check "disk full, keep: the log says why" grep -q "copy not kept: .*No space left" "$d/log"
	check "disk full, keep: no temporary is left" no_temporaries "$d"
	rm -f "$d/data/filler"
	drop "$d" trace-keep-4
	check "disk full, keep: once space is back, copies are kept again" \
		wait_for 20 test -f "$d/data/traces/trace-keep-4.jtr"
	wait_for 10 idle "$d"
	# Full again, but for the next trace itself: its summary takes the place of the
	# oldest kept copy (summaries before raw copies).
	dd if=/dev/zero of="$d/data/reserve" bs=4096 count=1 2>/dev/null
	dd if=/dev/zero of="$d/data/filler" bs=4096 2>/dev/null
	rm -f "$d/data/reserve"
	drop "$d" trace-keep-5
	check "disk full, keep: a summary is written in the place of the oldest kept copy" \
		wait_for 20 test -f "$d/data/outbox/trace-keep-5.json"
	check "disk full, keep: that copy is gone, counted as rotated out" \
		sh -c "! test -f '$d/data/traces/trace-keep-4.jtr' && [ $(counter "$d" rotated) -ge 1 ]"
	stop
	umount "$d/data"
	echo "$passed passed, $failed failed"
	exit 0
fi

tmp=$(mktemp -d)
chmod 0755 "$tmp" # another user must reach the sockets in the permission checks
cleanup() {
	[ -n "$jpid" ] && kill -9 "$jpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- summaries, kept traces, quarantine ----
d=$tmp/basic
setup "$d" "keep_traces = 1"
if start "$d"; then ok "jittd starts and answers on its socket"; else
	fail "jittd starts" "$(cat "$d/log")"
	echo "$passed passed, $failed failed"
	exit 1
fi
for n in 1 2 3 4 5; do drop "$d" "trace-100-1000$n-$n"; done
# Written in place and closed (IN_CLOSE_WRITE), as a writer without rename would.
cp "$golden" "$d/data/spool/trace-direct.jtr"
check "6 traces: 6 summaries in the outbox" wait_for 10 outbox_has "$d" 6
wait_for 10 idle "$d"
check "6 traces: kept in traces/, the spool empty" \
	is "$(ntraces "$d/data/traces") $(ntraces "$d/data/spool")" "6 0"
check "summaries are strict JSON jitt summaries" strict_json "$d"/data/outbox/*.json
check "summaries are mode 0600" is "$(find "$d/data/outbox" -type f ! -perm 0600)" ""
check "status: summarised 6" is "$(counter "$d" summarised)" 6
check "status: kept 6, seen 6, pending 0" \
	is "$(counter "$d" kept) $(counter "$d" traces_seen) $(counter "$d" pending)" "6 6 0"
check "status: summary bytes" is "$(counter "$d" summary_bytes)" \
	"$(cat "$d"/data/outbox/*.json | wc -c | tr -d ' ')"
last=$(counter "$d" last_summary)
check "status: last summary names an outbox file" test -f "$d/data/outbox/$last"

head -c 200 "$golden" >"$tmp/truncated"
head -c 500 /dev/urandom >"$tmp/random"
: >"$tmp/empty"
drop "$d" trace-bad-truncated "$tmp/truncated"
drop "$d" trace-bad-random "$tmp/random"
drop "$d" trace-bad-empty "$tmp/empty"
drop "$d" trace-after-bad
three_quarantined() { [ "$(ntraces "$d/data/quarantine")" -eq 3 ]; }
check "bad files: 3 in quarantine" wait_for 10 three_quarantined
q=$d/data/quarantine
why_ok() {
	grep -q '^trace-bad-truncated.jtr: offset ' "$q/trace-bad-truncated.why" &&
		grep -q '^trace-bad-random.jtr: offset ' "$q/trace-bad-random.why" &&
		grep -q '^trace-bad-empty.jtr: ..' "$q/trace-bad-empty.why"
}
check "bad files: each with a .why naming the file and the fault" why_ok
check "bad files: jittd keeps working" wait_for 10 test -f "$d/data/outbox/trace-after-bad.json"
wait_for 10 idle "$d"
check "bad files: no summary for them" is "$(ls "$d/data/outbox" | grep trace-bad)" ""
check "status: quarantined 3, summarised 7" \
	is "$(counter "$d" quarantined) $(counter "$d" summarised)" "3 7"
check "the log names each quarantined file" is "$(grep -c 'trace-bad-.*quarantined' "$d/log")" 3
out=$($qemu "$jitt" status -c "$d/conf")
check "jitt status prints the counters" matches "$out" "^summarised 7$"
check "jitt status: traces_seen 10, retries 0, deleted 0, trimmed 0" is \
	"$(printf '%s\n' "$out" | awk '$1 ~ /^(traces_seen|retries|deleted|trimmed)$/' | tr '\n' ' ')" \
	"traces_seen 10 retries 0 deleted 0 trimmed 0 "

# ---- another user: reads the status, changes nothing ----
sock=$d/run/jittd.sock
reply=$(ask "$sock" scan)
check "root may ask for a scan" is "$reply" "ok"
reply=$(ask "$sock" frobnicate)
check "root: an unknown command is EINVAL" is "$reply" "error EINVAL: unknown command"
if [ "$(id -u)" -ne 0 ]; then
	echo "skip another user's requests: not root, cannot switch uid"
elif ! setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	echo "skip another user's requests: setpriv cannot switch uid here"
else
	chmod 0755 "$d"
	chmod 0644 "$d/conf"
	nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
	check "another user: jitt status works" matches "$($nobody $qemu "$jitt" status -c "$d/conf")" "^summarised 7$"
	py=
	for p in python3 /usr/bin/python3; do
		$nobody $p -c '' 2>/dev/null && py=$p && break
	done
	if [ -z "$py" ]; then
		echo "skip another user's change request: no python3 that uid 65534 may run"
	else
		reply=$($nobody $py -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
s.sendall(b"scan\n"); print(s.recv(4096).decode(), end="")' "$sock" 2>&1)
		check "another user: a change is refused with EPERM" matches "$reply" "^error EPERM: "
		check "another user: the refusal is logged" grep -q "refused 'scan' to uid 65534" "$d/log"
	fi
fi

# ---- a second jittd, then stopping ----
# It waits (--wait MS) for the first to exit, as after a kill -9 (restart-check.sh); this
# one does not.
$qemu "$jittd" -f -c "$d/conf" --wait 300 >"$tmp/second" 2>&1
s=$?
check "a second jittd on the same run folder waits, then exits 1" \
	matches "$s $(cat "$tmp/second" | tr '\n' ' ')" "^1 jittd: waiting up to 300 ms for jittd $jpid .*another jittd (pid $jpid) is running"
check "a second jittd leaves the first's socket alone" matches "$($qemu "$jitt" status -c "$d/conf")" "^pid $jpid\$"
stop
s=$?
# The lock file stays (removing it would let a third jittd lock a file a second one opened).
check "SIGTERM: jittd exits 0 and removes its socket" is "$s $(ls "$d/run" | tr '\n' ' ')" "0 jittd.lock "

# ---- work left by an earlier run: spool, a committed summary, a half-written temporary ----
drop "$d" trace-left-1
drop "$d" trace-left-2
drop "$d" trace-committed
cp "$d/data/outbox/trace-after-bad.json" "$d/data/outbox/trace-committed.json"
: >"$d/data/outbox/.jittd-trace-left-1.json.tmp"
start "$d"
check "at start: work left in the spool is done" wait_for 10 idle "$d"
check "at start: a half-written summary is removed" no_temporaries "$d"
check "at start: a committed summary is not made again, only finished" is \
	"$(grep -c 'trace-committed.jtr: already summarised' "$d/log") $(grep -c 'trace-committed.jtr: summarised' "$d/log") $(ntraces "$d/data/traces")" \
	"1 0 10"
check "at start: status counts them" is "$(counter "$d" summarised) $(counter "$d" kept)" "2 3"
stop

# ---- keep_traces = 0, and the caps ----
d=$tmp/nokeep
setup "$d" "keep_traces = 0"
start "$d"
for n in 1 2 3; do drop "$d" "trace-200-$n-$n"; done
check "keep_traces 0: summarised" wait_for 10 outbox_has "$d" 3
wait_for 10 idle "$d"
check "keep_traces 0: traces deleted" is "$(ls -A "$d/data/traces")$(ls -A "$d/data/spool")" ""
check "status: deleted 3, kept 0" is "$(counter "$d" deleted) $(counter "$d" kept)" "3 0"
stop

d=$tmp/caps
setup "$d" "keep_traces = 1"
sed -i 's/^max_traces = .*/max_traces = 3/' "$d/conf"
start "$d"
for n in 1 2 3 4 5; do
	drop "$d" "trace-300-$n-$n"
	wait_for 10 test -f "$d/data/outbox/trace-300-$n-$n.json"
done
wait_for 10 idle "$d"
# Kept copies leave room for the next trace: 2 of max_traces 3.
check "caps: 5 summaries, 2 raw traces kept (the newest), room for the next" is \
	"$(count "$d"/data/outbox/*.json) $(ls "$d/data/traces" | tr '\n' ' ')" \
	"5 trace-300-4-4.jtr trace-300-5-5.jtr "
check "status: trimmed 3, all of them kept copies rotated out, none dropped unsummarised" \
	is "$(counter "$d" trimmed) $(counter "$d" rotated) $(counter "$d" dropped)" "3 3 0"
stop

# The spool's traces are never trimmed for a kept copy, whatever their age: with
# max_traces 3, three old traces waiting while jittd was stopped, and a kept copy of a newer
# one, the copy goes, the three are summarised.
d=$tmp/order
setup "$d" "keep_traces = 1"
sed -i 's/^max_traces = .*/max_traces = 3/' "$d/conf"
start "$d"
drop "$d" trace-500-9-9
wait_for 10 test -f "$d/data/traces/trace-500-9-9.jtr"
stop
for n in 1 2 3; do
	drop "$d" "trace-500-$n-$n"
	touch -d '1 hour ago' "$d/data/spool/trace-500-$n-$n.jtr"
done
start "$d"
check "order: the three waiting traces are summarised" wait_for 10 outbox_has "$d" 4
wait_for 10 idle "$d"
check "order: none dropped; the old copy, and copies beyond the caps, rotated out" \
	is "$(counter "$d" traces_seen) $(counter "$d" summarised) $(counter "$d" dropped)" "3 3 0"
stop

# ---- a full disk ----
d=$tmp/full
mkdir -p "$d"
if [ "$(id -u)" -eq 0 ]; then ns="unshare --mount"; else ns="unshare --user --map-root-user --mount"; fi
if $ns sh -c "mount -t tmpfs -o size=64k tmpfs '$d' && umount '$d'" 2>/dev/null; then
	add_part "$($ns env JITTD_CHECK_DISKFULL="$d" sh "$self" "$bin" "$qemu" 2>&1)"
else
	echo "skip disk full: cannot mount a small tmpfs (not root, no user namespaces)"
fi

# ---- kill -9 at random moments while traces arrive, 20 rounds ----
d=$tmp/kill
setup "$d" "keep_traces = 1" "log_level = info"
mkdir -p "$d/data/spool"
seed=$$
names=
n=0
for round in $(seq 1 20); do
	$qemu "$jittd" -f -c "$d/conf" >>"$d/log" 2>&1 &
	jpid=$!
	for k in 1 2 3; do
		n=$((n + 1))
		drop "$d" "trace-400-$round-$k"
		names="$names trace-400-$round-$k"
	done
	# 0 to 40 ms: from before jittd is up to the middle of a summary.
	seed=$(((seed * 1103515245 + 12345) % 2147483648))
	sleep "$(printf '0.%03d' $((seed / 65536 % 41)))"
	kill -9 "$jpid" 2>/dev/null
	wait "$jpid" 2>/dev/null
	jpid=
	ls -i "$d/data/outbox" 2>/dev/null | awk '/\.json$/ { print $2, $1 }' >>"$d/inodes"
done
start "$d"
check "kill -9: after the last restart the spool is emptied" wait_for 20 idle "$d"
stop
missing= repeated=
for name in $names; do
	[ -f "$d/data/outbox/$name.json" ] && [ -f "$d/data/traces/$name.jtr" ] || missing="$missing $name"
	c=$(grep -c "$name.jtr: summarised into" "$d/log")
	[ "$c" -le 1 ] || repeated="$repeated $name"
done
check "kill -9: all $n traces have their summary and their kept trace" is "$missing" ""
check "kill -9: no summary was made twice (log)" is "$repeated" ""
check "kill -9: no summary was rewritten (inode of each stays)" \
	is "$(sort -u "$d/inodes" | awk '{ print $1 }' | uniq -d)" ""
check "kill -9: exactly $n summaries, $n kept traces, nothing in quarantine" is \
	"$(count "$d"/data/outbox/*.json) $(ntraces "$d/data/traces") $(ls -A "$d/data/quarantine")" \
	"$n $n "
check "kill -9: no temporary left" no_temporaries "$d"
check "kill -9: summaries are strict JSON" strict_json "$d"/data/outbox/*.json
echo "     ($(grep -c 'summarised into' "$d/log") summaries logged, $(grep -c 'already summarised' "$d/log") finished after a kill, $(grep -c 'half-written' "$d/log") temporaries removed)"

# ---- the command line ----
d=$tmp/cli
setup "$d"
mkdir -p "$d/run"
expect() { # what, status, text in stderr, command...
	what=$1 want=$2 text=$3
	shift 3
	err=$("$@" 2>&1 >/dev/null)
	got=$?
	if [ "$got" -eq "$want" ] && printf '%s' "$err" | grep -q -- "$text"; then
		ok "$what"
	else
		fail "$what" "status $got (wanted $want), said: $err"
	fi
}
expect "jitt status: no jittd" 1 "jitt status: no jittd listening on $d/run/jittd.sock" \
	$qemu "$jitt" status -c "$d/conf"
expect "jitt status PID: no such process" 1 "no traced process 12345 listening on" \
	$qemu "$jitt" status 12345 -c "$d/conf"
expect "jitt trigger: no such process" 1 "jitt trigger: no traced process 12345" \
	$qemu "$jitt" trigger 12345 -c "$d/conf"
expect "jitt status: missing config" 1 "jitt status: $d/nope" $qemu "$jitt" status -c "$d/nope"
expect "jitt status: bad PID" 2 "usage: jitt status" $qemu "$jitt" status abc
# Whatever listens on a process's socket may be another user's: its reply reaches the
# terminal escaped, line by line.
# (It listens under its own pid: jitt asks only the process its socket is named after.)
python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind("%s/jitt-%d.sock" % (sys.argv[1], os.getpid())); s.listen(1); s.settimeout(60)
c, _ = s.accept(); c.recv(300)
c.sendall(b"ok\nstate \x1b[2J\xc2\x9b31m\nnext line\n"); c.close()' "$d/run" &
spid=$!
wait_for 10 test -S "$d/run/jitt-$spid.sock"
out=$($qemu "$jitt" status $spid -c "$d/conf" 2>&1)
check "jitt status: a reply's terminal escapes are shown escaped, its lines kept" is \
	"$out" 'state \x1b[2J\xc2\x9b31m
next line'
wait "$spid" 2>/dev/null
expect "jitt status: PID 0" 2 "usage: jitt status" $qemu "$jitt" status 0
expect "jitt status: two PIDs" 2 "usage: jitt status" $qemu "$jitt" status 1 2
expect "jitt trigger: no PID" 2 "usage: jitt trigger" $qemu "$jitt" trigger
expect "jitt trigger: bad PID" 2 "usage: jitt trigger" $qemu "$jitt" trigger 12x
expect "jitt trigger: too many" 2 "usage: jitt trigger" $qemu "$jitt" trigger 1 a b
expect "jittd: bad option" 2 "usage: jittd" $qemu "$jittd" --bogus
echo "hang_ms = 1" >"$d/bad.conf"
expect "jittd: bad settings name the line" 1 "line 1: hang_ms" $qemu "$jittd" -f -c "$d/bad.conf"

# `jitt trigger` against a stand-in for a traced process's socket: what goes on the wire.
fake() { # pid the socket is named after ("self": the stand-in's own), reply; its pid in
	# $fpid, its socket in $s4 (the request it got goes to $s4.req)
	python3 - "$d/run" "$1" "$2" <<'EOF' &
import os, socket, sys
run, name, reply = sys.argv[1], sys.argv[2], sys.argv[3]
path = "%s/jitt-%s.sock" % (run, os.getpid() if name == "self" else name)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path + ".new"); os.rename(path + ".new", path); s.listen(1); s.settimeout(10)
c, _ = s.accept()
req = b""
while not req.endswith(b"\n"):
    b = c.recv(256)
    if not b:
        break
    req += b
c.sendall(reply.encode())
c.close()
with open(path + ".req", "w") as f:
    f.write(req.decode())
EOF
	fpid=$!
	if [ "$1" = self ]; then s4=$d/run/jitt-$fpid.sock; else s4=$d/run/jitt-$1.sock; fi
	wait_for 5 test -S "$s4"
}
fake self "ok
"
$qemu "$jitt" trigger $fpid -c "$d/conf" >"$tmp/out" 2>&1
s=$?
wait $fpid
check "jitt trigger PID: sends 'trigger external'" is "$s $(cat "$s4.req") $(cat "$tmp/out")" \
	"0 trigger external triggered $fpid (external)"
rm -f "$s4" "$s4.req"
fake self "ok
saved trace-4242-1-1.jtr
"
$qemu "$jitt" trigger $fpid slow-scroll -c "$d/conf" >"$tmp/out" 2>&1
s=$?
wait $fpid
check "jitt trigger PID REASON: sends the reason, prints the reply" is \
	"$s $(cat "$s4.req") $(cat "$tmp/out")" "0 trigger slow-scroll saved trace-4242-1-1.jtr"
rm -f "$s4" "$s4.req"
fake self "error EPERM: uid 1234 may not trigger
"
expect "jitt trigger: refused is 'permission denied', status 1" 1 \
	"jitt trigger: permission denied: uid 1234 may not trigger" $qemu "$jitt" trigger $fpid -c "$d/conf"
wait $fpid
rm -f "$s4" "$s4.req"
# A socket made in another pid's name (anyone may, in the run folder, before that pid
# exists): not asked; it hears nothing (its accept times out).
fake 4242 "ok
"
expect "jitt trigger: a socket in pid 4242's name served by another process is not asked" 1 \
	"jitt trigger: not asked: $s4 is served by process $fpid, not 4242" \
	$qemu "$jitt" trigger 4242 -c "$d/conf"
wait $fpid
check "the squatter got no request" is "$(cat "$s4.req" 2>/dev/null)" ""
rm -f "$s4" "$s4.req"

# ---- jitt trigger on a traced app, jittd running: where the trace can be read ----
# The app writes the trace into the spool, and jittd moves it to traces/ once summarised:
# `jitt trigger` names both, and the second is where `jitt summarize` finds it afterwards
# (the spool's name alone, all it printed before, named nothing by then).
d=$tmp/trigger
setup "$d" "keep_traces = 1" "max_threads = 8"
mkdir -p "$d/data/spool" "$d/run" # as the image's init makes them
if ! start "$d"; then
	fail "trigger: jittd starts" "$(tail -5 "$d/log")"
else
	JITT_CONFIG=$d/conf $qemu "$bin/jank-sim" --scenario=none --frames 0 >"$d/app.log" 2>&1 &
	app=$!
	# Until its threads are registered the app has nothing to save (ENODATA): asked again.
	trig() { $qemu "$jitt" trigger $app "from jittd-check" -c "$d/conf" >"$d/trig.out" 2>&1; }
	if wait_for 10 test -S "$d/run/jitt-$app.sock" && wait_for 10 trig; then
		out=$(cat "$d/trig.out")
		written=$(printf '%s\n' "$out" | sed -n 's/^trace //p')
		kept=$(printf '%s\n' "$out" | sed -n 's/^then kept as \(.*\), once jittd has summarised it into .*/\1/p')
		name=${written##*/}
		check "jitt trigger: first, where the trace was written (the spool)" is "$written" "$d/data/spool/$name"
		check "jitt trigger: kept in traces/ once summarised" is "$kept" "$d/data/traces/$name"
		check "jitt trigger: jittd moved the trace where trigger said" wait_for 10 test -f "$kept"
		check "... and no longer in the spool" wait_for 10 test ! -e "$written"
		check "jitt summarize reads the trace where jitt trigger said it is kept" \
			matches "$($qemu "$jitt" summarize "$kept" 2>&1)" "^anomaly: external: from jittd-check"
	else
		fail "jitt trigger on the sim app" "$(cat "$d/trig.out" "$d/app.log" 2>/dev/null)"
	fi
	kill "$app" 2>/dev/null
	wait "$app" 2>/dev/null
	stop
	# keep_traces = 0: trigger says jittd deletes the trace once summarised (what the
	# settings say; no jittd is needed for that).
	setup "$d" "keep_traces = 0" "max_threads = 8"
	JITT_CONFIG=$d/conf $qemu "$bin/jank-sim" --scenario=none --frames 0 >"$d/app.log" 2>&1 &
	app=$!
	if wait_for 10 test -S "$d/run/jitt-$app.sock" && wait_for 10 trig; then
		check "jitt trigger, keep_traces = 0: says the trace is deleted once summarised" \
			matches "$(cat "$d/trig.out")" "^then deleted, once jittd has summarised it into $d/data/outbox/trace-.*\\.json (keep_traces = 0)$"
	else
		fail "jitt trigger on the sim app, keep_traces = 0" "$(cat "$d/trig.out" "$d/app.log")"
	fi
	kill "$app" 2>/dev/null
	wait "$app" 2>/dev/null
fi

# ---- hostile clients on jittd's socket: silent connections, malformed requests ----
# A request as raw bytes (a Python bytes literal); prints the reply on one line (newlines as
# "\n"), then "END" when the server's close was clean or the error when it was a reset.
ask_raw() { # socket bytes
	python3 - "$1" "$2" <<'EOF'
import ast, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(ast.literal_eval(sys.argv[2]))
out = b""
try:
    while True:
        b = s.recv(4096)
        if not b:
            out += b"END"
            break
        out += b
except OSError as e:
    out += ("%s" % e.__class__.__name__).encode()
sys.stdout.write(out.decode(errors="replace").replace("\n", "\\n"))
EOF
}
# Keeps $2 connections to socket $1 open without a word, opening a new one whenever the
# server closes one, until killed; writes "ready" to $3 once $2 were open at the same time.
flood() { # socket connections readyfile [as-user python]
	$4 ${5:-python3} - "$1" "$2" "$3" <<'EOF'
import select, socket, sys, time
path, n, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socks, said = [], False
end = time.time() + 120  # only if the test itself hangs
while time.time() < end:
    while len(socks) < n:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
        except OSError:
            s.close()
            break
        socks.append(s)
    if len(socks) >= n and not said:
        open(ready, "w").write("ready\n")
        said = True
    r, _, _ = select.select(socks, [], [], 0.02)
    for s in r:
        s.close()
        socks.remove(s)
EOF
}
d=$tmp/hostile
setup "$d"
if ! start "$d"; then
	fail "hostile clients: jittd starts" "$(tail -5 "$d/log")"
else
	sock=$d/run/jittd.sock
	long=$(python3 -c 'print("x" * 299)')
	check "a 300-byte request: error EMSGSIZE, then a clean end (no reset)" matches \
		"$(ask_raw "$sock" "b'$long\n'")" '^error EMSGSIZE: request longer than 256 bytes\\nEND$'
	check "'status<NUL>scan' is refused, not read as status" matches \
		"$(ask_raw "$sock" "b'status\\x00scan\\n'")" '^error EINVAL: .*"status\\x00scan"\\nEND$'
	# The flood is another user's when we can switch (our own connections count against
	# our own cap of 4, and the same user could as well kill the process it floods).
	as= py=
	if [ "$(id -u)" -eq 0 ]; then
		for p in python3 /usr/bin/python3; do
			setpriv --reuid=65534 --regid=65534 --clear-groups $p -c '' 2>/dev/null && py=$p && break
		done
	fi
	if [ -n "$py" ]; then
		as="setpriv --reuid=65534 --regid=65534 --clear-groups"
		chmod 0755 "$d"
	fi
	if [ -z "$as" ]; then
		echo "skip a flood of silent clients: cannot be another user here"
	else
		# A C1 control (CSI as UTF-8) passes the parser: it reaches the log escaped.
		$as $py -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
s.sendall(b"\xc2\x9bscan\n"); s.recv(4096)' "$sock"
		check "another user's refused request reaches the log escaped" \
			grep -q "refused '\\\\xc2\\\\x9bscan' to uid 65534" "$d/log"
		check "... and no raw byte of it" test "$(LC_ALL=C grep -c "$(printf '\302\233')" "$d/log")" -eq 0
		: >"$d/flood-ready"
		chmod 0666 "$d/flood-ready" # for the other user to say so
		flood "$sock" 32 "$d/flood-ready" "$as" "$py" &
		fpid=$!
		check "flood: 32 silent connections of another user are open" wait_for 20 test -s "$d/flood-ready"
		k=0 answered=0
		while [ $k -lt 5 ]; do
			$qemu "$jitt" status -c "$d/conf" >/dev/null 2>"$tmp/status-err" && answered=$((answered + 1))
			k=$((k + 1))
		done
		check "flood: jitt status answers, 5 times out of 5" is "$answered" 5
		drop "$d" trace-flood
		check "flood: a new trace is summarised" wait_for 20 outbox_has "$d" 1
		alive() { kill -0 "$1" 2>/dev/null; }
		check "flood: the flood was still going" alive "$fpid"
		check "flood: jitt status counts the connections over the uid's cap" \
			test "$(counter "$d" clients_over_uid_cap)" -gt 0
		kill "$fpid" 2>/dev/null
		wait "$fpid" 2>/dev/null
	fi
	stop
fi

# ---- hostile input: files other users control ----
# A data folder another user could change: jittd refuses to start, names the folder and says
# why. Bounded by timeout: a jittd that starts there would run on.
d=$tmp/strict
setup "$d"
refused() { # what, text: jittd exits 1 at start and says text
	out=$(timeout 20 $qemu "$jittd" -f -c "$d/conf" 2>&1)
	s=$?
	if [ $s -eq 1 ] && printf '%s' "$out" | grep -q -- "$2"; then ok "$1"; else fail "$1" "status $s: $out"; fi
}
mkdir -p "$d/data/spool" "$d/victim"
echo old >"$d/victim/old.json"
touch -d '2000-01-01' "$d/victim/old.json"
drop "$d" trace-strict
ln -s "$d/victim" "$d/data/outbox"
ln -s "$d/victim" "$d/data/traces"
refused "symlinked traces: jittd refuses to start and names it" "data/traces is a symbolic link"
rm "$d/data/traces"
refused "symlinked outbox: jittd refuses to start and names it" "data/outbox is a symbolic link"
rm "$d/data/outbox"
check "symlinked folders: nothing written, moved or deleted where they pointed" \
	is "$(ls -A "$d/victim") $(ls "$d/data/spool")" "old.json trace-strict.jtr"
chmod 0777 "$d"
refused "a folder above others may write: refused, named" "$d is writable by others (mode 0777) without the sticky bit"
chmod 0755 "$d"
chmod 0777 "$d/data/spool"
refused "a spool others may write without the sticky bit: refused" "data/spool is writable by others (mode 0777) without the sticky bit"
chmod 01733 "$d/data/spool"
made=
for f in /spool /outbox /traces /quarantine; do [ -e "$f" ] || made="$made $f"; done
sed -i "s|^data_dir = .*|data_dir = /|" "$d/conf"
refused "data_dir = /: refused" "is the root folder"
for f in $made; do [ -e "$f" ] && made_now="${made_now:-} $f"; done
check "data_dir = /: nothing made in /" is "${made_now:-}" ""
sed -i "s|^data_dir = .*|data_dir = data|" "$d/conf"
refused "a relative data_dir: refused" "absolute path"

# Entries planted in the spool under a trace's name: a symlink to another user's file, a
# FIFO, a socket (its open fails: ENXIO), a hard link to that file. Removed, never followed,
# read or moved.
d=$tmp/planted
setup "$d" "keep_traces = 1"
start "$d"
echo secret >"$tmp/theirs"
chmod 0600 "$tmp/theirs"
ln -s "$tmp/theirs" "$d/data/spool/trace-link.jtr"
mkfifo "$d/data/spool/trace-fifo.jtr"
ln "$tmp/theirs" "$d/data/spool/trace-hard.jtr"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$d/data/spool/trace-sock.jtr"
drop "$d" trace-after-planted
check "planted: a later trace is summarised" wait_for 10 test -f "$d/data/outbox/trace-after-planted.json"
wait_for 10 idle "$d"
check "planted: symlink, FIFO, socket and hard link removed from the spool" is "$(ls -A "$d/data/spool")" ""
check "planted: the file they named is untouched (content, one link)" \
	is "$(cat "$tmp/theirs") $(stat -c %h "$tmp/theirs")" "secret 1"
check "planted: none of them summarised, kept or quarantined" \
	is "$(ls "$d/data/outbox") $(ls "$d/data/traces") $(ls -A "$d/data/quarantine")" \
	"trace-after-planted.json trace-after-planted.jtr "
check "planted: the log names each and what it was" is \
	"$(grep -c -e 'trace-link.jtr: a symbolic link in the spool' -e 'trace-fifo.jtr: a FIFO in the spool' -e 'trace-sock.jtr: a socket in the spool' -e 'trace-hard.jtr: a hard link' "$d/log")" 4

# Kept and quarantined traces are jittd's own files, mode 0600, not the writer's moved in
# with its owner and mode.
if [ "$(id -u)" -eq 0 ]; then
	cp "$golden" "$d/data/spool/.tmp-theirs" && chown 65534:65534 "$d/data/spool/.tmp-theirs" &&
		chmod 0644 "$d/data/spool/.tmp-theirs" && mv "$d/data/spool/.tmp-theirs" "$d/data/spool/trace-theirs.jtr"
	head -c 200 "$golden" >"$d/data/spool/.tmp-theirs" && chown 65534:65534 "$d/data/spool/.tmp-theirs" &&
		chmod 0644 "$d/data/spool/.tmp-theirs" && mv "$d/data/spool/.tmp-theirs" "$d/data/spool/trace-theirs-bad.jtr"
	wait_for 10 test -f "$d/data/quarantine/trace-theirs-bad.jtr"
	wait_for 10 idle "$d"
	check "another user's trace: kept and quarantined copies are jittd's, mode 0600" is \
		"$(stat -c '%u %a' "$d/data/traces/trace-theirs.jtr" "$d/data/quarantine/trace-theirs-bad.jtr" "$d/data/quarantine/trace-theirs-bad.why" | tr '\n' ' ')" \
		"0 600 0 600 0 600 "
	check "another user's trace: the copies are whole" \
		cmp -s "$golden" "$d/data/traces/trace-theirs.jtr"
else
	echo "skip owner of kept traces: not root"
fi
stop

# Writers killed while persisting: a gone writer's temporary is removed, at start
# and on each pass, and counted; a live writer's is left alone.
d=$tmp/temporaries
setup "$d"
mkdir -p "$d/data/spool"
sh -c 'exit 0' &
gone=$!
wait $gone
printf 'half a trace' >"$d/data/spool/.tmp-trace-$gone-1-0"
printf 'being written' >"$d/data/spool/.tmp-trace-$$-1-0"
touch -d '5 minutes ago' "$d/data/spool/.tmp-trace-$gone-1-0" "$d/data/spool/.tmp-trace-$$-1-0"
start "$d"
check "at start: a gone writer's temporary is removed" wait_for 10 test ! -e "$d/data/spool/.tmp-trace-$gone-1-0"
check "at start: a live writer's temporary is left" test -e "$d/data/spool/.tmp-trace-$$-1-0"
printf 'half a trace' >"$d/data/spool/.tmp-trace-$gone-2-0"
touch -d '5 minutes ago' "$d/data/spool/.tmp-trace-$gone-2-0"
drop "$d" trace-after-tmp
check "on a pass: a gone writer's temporary is removed" wait_for 10 test ! -e "$d/data/spool/.tmp-trace-$gone-2-0"
wait_for 10 idle "$d"
check "status counts them as trimmed" is "$(counter "$d" trimmed)" 2
stop

# Races only luck would win, made exact by stopping jittd at its system calls
# (tests/ptrace-race.py): x86_64, natively, with ptrace allowed.
race=$here/ptrace-race.py
if [ -n "$qemu" ] || [ "$(uname -m)" != x86_64 ] || [ "$(id -u)" -ne 0 ]; then
	echo "skip races at system calls: x86_64 natively as root only"
else
	# Each race on a jittd of its own: one that fails (hangs, dies) takes no other down.
	race_start() { # folder
		d=$1
		setup "$d" "keep_traces = 1"
		start "$d"
	}
	race_stop() { # SIGTERM, then (a jittd that hangs) SIGKILL; the exit status of the first
		kill -TERM "$jpid" 2>/dev/null
		wait_for 30 eval '! kill -0 "$jpid" 2>/dev/null' || kill -9 "$jpid" 2>/dev/null
		wait "$jpid"
		s=$?
		jpid=
		return $s
	}
	racing() { # name mode arg: run the race on spool/name; its output in $d/race.out
		: >"$d/race.out"
		python3 "$race" "$jpid" "$d/data/spool" "$1" "$2" "$3" >"$d/race.out" 2>&1 &
		rpid=$!
		wait_for 10 grep -q attached "$d/race.out"
		drop "$d" "${1%.jtr}"
	}
	answers() { $qemu "$jitt" status -c "$d/conf" >/dev/null 2>&1; }
	# Item 2: the listing saw a trace, the open meets a FIFO.
	race_start "$tmp/race-fifo"
	mkfifo "$d/data/spool/.fifo"
	racing trace-swap.jtr fifo "$d/data/spool/.fifo"
	wait $rpid
	check "FIFO swapped in between listing and open: the race ran" grep -q "done fifo" "$d/race.out"
	check "FIFO swapped in: jittd does not block, it answers" answers
	check "FIFO swapped in: removed, and the log says so" \
		wait_for 10 grep -q "trace-swap.jtr: a FIFO in the spool, not a trace: removed" "$d/log"
	drop "$d" trace-after-swap
	check "FIFO swapped in: later traces are summarised" wait_for 10 test -f "$d/data/outbox/trace-after-swap.json"
	race_stop
	# Item 1: the writer truncates the trace after jittd took its size.
	race_start "$tmp/race-cut"
	racing trace-cut.jtr truncate 0
	wait $rpid
	check "trace truncated under jittd: the race ran" grep -q "done truncate" "$d/race.out"
	check "trace truncated under jittd: no SIGBUS, jittd answers" answers
	check "trace truncated under jittd: quarantined, saying it shrank" \
		wait_for 10 grep -qs "^trace-cut.jtr: offset 0: file shrank while read: 0 of " "$d/data/quarantine/trace-cut.why"
	race_stop
	# Item 10: a summary that takes long (held at a system call) leaves the socket answering;
	# SIGTERM then finishes that trace before jittd exits.
	race_start "$tmp/race-held"
	mkdir -p "$d/marks"
	racing trace-held.jtr hold "$d/marks"
	wait_for 10 test -f "$d/marks/held"
	out=$($qemu "$jitt" status -c "$d/conf" 2>&1)
	check "while a trace is being summarised, jitt status answers" matches "$out" "^worker busy$"
	check "... and shows the trace pending" matches "$out" "^pending 1$"
	kill -TERM "$jpid"
	touch "$d/marks/release"
	wait $rpid
	race_stop
	s=$?
	check "SIGTERM while summarising: that trace is finished, then exit 0" \
		is "$s $(ls "$d/data/outbox" | grep -c trace-held)" "0 1"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
