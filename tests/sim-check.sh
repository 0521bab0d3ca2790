#!/bin/sh
# End to end, each jank scenario of the sim app (sim/README.md): the app runs with libjitt,
# a detector fires during the jank and persists a trace, and `jitt summarize --json` of that
# trace names the culprit the app says it injected:
#   compute, many-short, hang: the culprit is rank 1 in the window's top self time and ends
#     the first longest chain (hang: the hang detector fired, while the frame still ran);
#   blocked: the UI thread was blocked, woken by the worker, whose top function in that
#     time is the culprit.
# usage: sim-check.sh BIN_DIR ["QEMU_CMD"]. Needs python3 (the host's) to read the JSON.
# Ends with "N passed, N failed".
set -u
bin=$1
qemu=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

ok() { echo "ok   sim $1"; passed=$((passed + 1)); }
fail() { echo "FAIL sim $1: $2"; failed=$((failed + 1)); }

# Under qemu-user a traced frame is slower (on armv7 every trace point is an emulated
# clock_gettime: 9 to 17 ms a frame), so frames come at 20 Hz against a 30 ms budget; each
# scenario's slow frames still take 40 ms or more.
budget= fps=
if [ -n "$qemu" ]; then
	budget='frame_budget_us = 30000'
	fps=--fps=20
fi

for scenario in compute blocked many-short hang; do
	dir=$work/$scenario
	mkdir -p "$dir/data/spool" "$dir/run" # as the image's init makes them
	# blocked: the trace that names the waker is the jank detector's, at the frame's end,
	# after the wake-up. The worker's 210 ms of work took over a second on a loaded
	# machine, and the hang detector (400 ms) froze the UI thread while it still waited,
	# before any wake-up: its bound is then only for a real hang.
	hang=
	[ $scenario = blocked ] && hang='hang_ms = 60000'
	printf 'data_dir = %s/data\nrun_dir = %s/run\nmax_threads = 8\nlog_level = warn\n%s\n%s\n' \
		"$dir" "$dir" "$budget" "$hang" >"$dir/jitt.conf"
	JITT_CONFIG=$dir/jitt.conf $qemu "$bin/jank-sim" --scenario=$scenario --frames 80 $fps \
		>"$dir/out" 2>"$dir/err"
	status=$?
	injected=$(grep '^injected ' "$dir/out")
	if [ $status -ne 0 ] || [ -z "$injected" ]; then
		fail $scenario "jank-sim exited with $status; $(cat "$dir/err")"
		continue
	fi
	set -- "$dir"/data/spool/*.jtr
	if [ $# -ne 1 ] || [ ! -f "$1" ]; then
		fail $scenario "expected one trace in the spool, found: $(ls "$dir/data/spool")"
		continue
	fi
	if ! $qemu "$bin/jitt" summarize --json "$1" >"$dir/summary.json" 2>"$dir/err"; then
		fail $scenario "jitt summarize failed: $(cat "$dir/err")"
		continue
	fi
	why=$(python3 - "$scenario" "$dir/summary.json" "$injected" <<'PY'
import json, sys
scenario, path, injected = sys.argv[1], sys.argv[2], sys.argv[3]
said = dict(kv.split("=", 1) for kv in injected.split()[1:])
s = json.load(open(path))
name = lambda f: s["functions"][f][2]
def fail(msg):
    print(msg)
    sys.exit(1)
culprit = said["culprit"]
if scenario == "blocked":
    if s["window"]["blocked_ns"] * 2 < s["window"]["ns"]:
        fail("the window was not mostly blocked: %s" % s["window"])
    if not s["blocked_on"]:
        fail("no blocked_on in the summary")
    hop = s["blocked_on"][0]
    if hop["thread"] != "ui" or hop.get("woken_by") != said["thread"]:
        fail("blocked_on names %s woken by %s, expected ui woken by %s"
             % (hop["thread"], hop.get("woken_by"), said["thread"]))
    if not hop["top"] or name(hop["top"][0][0]) != culprit:
        fail("the waker's top function is %s, expected %s"
             % (hop["top"] and name(hop["top"][0][0]), culprit))
else:
    expected = "hang" if scenario == "hang" else "jank"
    if not s["reason"].startswith(expected):
        fail("reason %r, expected the %s detector" % (s["reason"], expected))
    if not s["top_window"] or name(s["top_window"][0][0]) != culprit:
        fail("rank 1 in the window is %s, expected %s"
             % (s["top_window"] and name(s["top_window"][0][0]), culprit))
    if not s["chains"] or name(s["chains"][0][-1][0]) != culprit:
        fail("the first chain ends in %s, expected %s"
             % (s["chains"] and name(s["chains"][0][-1][0]), culprit))
PY
	)
	if [ $? -eq 0 ]; then
		ok "$scenario: ${injected#injected }"
	else
		fail $scenario "$why"
		cp "$1" "/tmp/sim-check-$scenario.jtr" 2>/dev/null &&
			echo "     (trace kept in /tmp/sim-check-$scenario.jtr)"
	fi
done
# The external detector through the app's own control socket: `jitt trigger PID` persists
# a trace and `jitt status PID` counts it; another user may read the status but not
# trigger (as root, through setpriv; on the host only).
if [ -z "$qemu" ] && [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	dir=$work/external
	mkdir -p "$dir/data/spool" "$dir/run" # as the image's init makes them
	chmod 755 "$work" "$dir"
	printf 'data_dir = %s/data\nrun_dir = %s/run\nmax_threads = 8\nlog_level = warn\n' \
		"$dir" "$dir" >"$dir/jitt.conf"
	chmod 644 "$dir/jitt.conf"
	JITT_CONFIG=$dir/jitt.conf "$bin/jank-sim" --scenario=none --frames 0 >/dev/null 2>&1 &
	app=$!
	i=0
	while [ ! -S "$dir/run/jitt-$app.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	# The socket comes before main(): until its UI thread is traced the app has nothing to
	# persist (ENODATA). Its status lists the traced threads: waited for.
	i=0
	until "$bin/jitt" status -c "$dir/jitt.conf" $app 2>/dev/null | grep -q '^thread [0-9]* ui$' ||
		[ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
	chmod 755 "$dir/run" 2>/dev/null
	nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
	out=$($nobody "$bin/jitt" trigger -c "$dir/jitt.conf" $app 2>&1)
	status=$?
	if [ $status -eq 1 ] && echo "$out" | grep -q 'permission denied'; then
		ok "external: another user is refused a trigger ($out)"
	else
		fail external "another user's trigger: status $status, $out"
	fi
	if $nobody "$bin/jitt" status -c "$dir/jitt.conf" $app | grep -q '^refused 1$'; then
		ok "external: another user reads the status, which counts the refusal"
	else
		fail external "another user could not read the status, or no refusal counted"
	fi
	out=$("$bin/jitt" trigger -c "$dir/jitt.conf" $app "from sim-check" 2>&1)
	set -- "$dir"/data/spool/*.jtr
	if echo "$out" | grep -q '^trace ' && [ -f "$1" ] &&
		"$bin/jitt" status -c "$dir/jitt.conf" $app | grep -q '^anomaly_external 1$' &&
		"$bin/jitt" summarize "$1" | grep -q '^anomaly: external: from sim-check' &&
		"$bin/jitt" summarize --json "$1" | grep -q '"detector":"external"'; then
		ok "external: jitt trigger persisted ${1##*/}, counted in jitt status, detector external"
	else
		fail external "jitt trigger: $out"
	fi
	kill $app
	wait $app 2>/dev/null
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
