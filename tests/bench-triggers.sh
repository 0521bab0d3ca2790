#!/bin/sh
# How many of 40 back-to-back `jitt trigger`s fail against jank-sim (two traced threads, ui
# and worker-1), beside HOGS busy loops; the failures by reply, and the app's counters.
# A measurement, not a test (docs/runtime.md, "On fire"): at --fps 2 both threads sleep
# through most triggers, which used to fail ("persist failed: No data available") until
# one of them woke.
#
# usage: bench-triggers.sh BIN_DIR [HOGS [JANK_SIM_ARGS...]]
#   e.g. bench-triggers.sh build/host/bin 3 --fps 2
set -u
bin=$(cd "${1:?usage: bench-triggers.sh BIN_DIR [HOGS [JANK_SIM_ARGS...]]}" && pwd)
hogs=${2:-0}
[ $# -ge 2 ] && shift 2 || shift $#
w=$(mktemp -d)
sim= hp=
cleanup() {
	[ -n "$hp" ] && kill $hp 2>/dev/null
	[ -n "$sim" ] && kill "$sim" 2>/dev/null && wait "$sim" 2>/dev/null
	rm -rf "$w"
}
trap cleanup EXIT INT TERM
mkdir -p "$w/data/spool" "$w/run"
cat >"$w/c.conf" <<EOF
data_dir = $w/data
run_dir = $w/run
cooldown_ms = 0
max_traces = 100
max_trace_mb = 2000
log_level = error
EOF
JITT_CONFIG=$w/c.conf "$bin/jank-sim" --frames 0 "$@" >"$w/sim.out" 2>&1 &
sim=$!
# Both threads traced: the socket comes first, at the runtime's start.
i=0
while [ "$("$bin/jitt" status -c "$w/c.conf" "$sim" 2>/dev/null | grep -c '^thread [0-9]* [a-z0-9-]*$')" != 2 ]; do
	i=$((i + 1))
	[ $i -gt 500 ] && { echo "jank-sim did not start tracing"; exit 1; }
	sleep 0.02
done
for h in $(seq 1 "$hogs"); do
	sh -c 'while :; do :; done' &
	hp="$hp $!"
done
fail=0
for t in $(seq 1 40); do
	out=$("$bin/jitt" trigger -c "$w/c.conf" "$sim" 2>&1) || {
		fail=$((fail + 1))
		echo "$out" | sed "s/process $sim/process PID/" >>"$w/fails"
	}
done
kill $hp 2>/dev/null
hp=
echo "failed $fail of 40 (hogs $hogs, jank-sim $*)"
[ -f "$w/fails" ] && sort "$w/fails" | uniq -c
"$bin/jitt" status -c "$w/c.conf" "$sim" | grep -E '^(persist|threads_|restart_retries|suppressed)' | tr '\n' ' '
echo
