#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench-upload.sh BIN [RUNS] - what an upload costs, on this machine's loopback:
#   1. bytes per report at K = 10, and how many of the 10 ranked contexts the 4 KiB summary
#      and the report keep, for each jank-sim scenario (a fresh trace of each);
#   2. one TLS handshake + one report POSTed and answered (up-post to the reference
#      collector, a new connection each time): the median of RUNS (21) runs of wall time,
#      and of the process's CPU time (user + system), which a loaded machine lies less about;
#   3. jittd's peak memory (VmHWM) with the uploader idle (consent off) against one that
#      summarised and uploaded the same trace, each a fresh jittd.
# Host only: the collector is a host tool.
set -eu

bin=$(cd "${1:?usage: bench-upload.sh BIN [RUNS]}" && pwd)
runs=${2:-21}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
cpid= jpid=
cleanup() {
	for p in $cpid $jpid; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

wait_file() { # bounded: only catches a hang
	i=0
	while [ ! -s "$1" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
	[ -s "$1" ]
}

# ---- 1. bytes per report ----
echo "bench-upload: bytes per report (K = 10), a fresh jank-sim trace of each scenario"
printf '  %-11s %14s %16s %13s %15s\n' scenario "summary bytes" "summary contexts" "report bytes" "report contexts"
for scenario in compute blocked many-short hang; do
	d=$tmp/sim-$scenario
	mkdir -p "$d/data/spool" "$d/run" # as the image's init makes them
	printf 'data_dir = %s/data\nrun_dir = %s/run\nmax_threads = 3\n' "$d" "$d" >"$d/conf"
	JITT_CONFIG=$d/conf "$bin/jank-sim" --scenario="$scenario" --frames 80 >/dev/null 2>&1 || true
	trace=$(ls "$d/data/spool/"*.jtr 2>/dev/null | head -n 1)
	[ -n "$trace" ] || { echo "  $scenario: no trace"; continue; }
	"$bin/jitt" summarize --json "$trace" >"$d/summary.json"
	"$bin/jitt" report "$d/summary.json" >"$d/report.json" 2>/dev/null
	python3 - "$scenario" "$d/summary.json" "$d/report.json" <<'PY'
import json, sys
s = open(sys.argv[2], "rb").read(); r = open(sys.argv[3], "rb").read()
sc = len(json.loads(s).get("contexts", [])); rc = len(json.loads(r)["summary"].get("contexts", []))
print("  %-11s %14d %16s %13d %15s" % (sys.argv[1], len(s), "%d of 10" % sc, len(r), "%d of 10" % rc))
PY
done

# ---- 2. one handshake and one report ----
sh "$here/certs.sh" "$tmp/certs" >/dev/null 2>&1
"$bin/collector" serve --port 0 --port-file "$tmp/port" --cert "$tmp/certs/server.pem" \
	--key "$tmp/certs/server.key" --db "$tmp/coll.db" 2>/dev/null &
cpid=$!
wait_file "$tmp/port"
port=$(cat "$tmp/port")
report=$tmp/sim-blocked/report.json
echo
echo "bench-upload: TLS 1.2 handshake (ECDHE-ECDSA P-256) + POST of one report ($(wc -c <"$report") bytes)"
echo "  + 201, a new connection each time, loopback; $runs runs"
python3 - "$bin/up-post" "https://localhost:$port/v1/reports" "$tmp/certs/ca.pem" "$report" "$runs" <<'PY'
import os, resource, statistics, subprocess, sys, time, uuid
post, url, ca, report, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
body = open(report).read()
wall, cpu = [], []
for i in range(runs):
    key = str(uuid.uuid4())
    path = report + ".%d" % i
    open(path, "w").write(body.replace(body[body.index('"key":"') + 7:][:36], key, 1))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    out = subprocess.run([post, url, ca, path, "--key", key], capture_output=True, text=True)
    wall.append(time.monotonic() - t)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if "201" not in out.stdout + out.stderr:
        sys.exit("up-post did not store the report: " + out.stdout + out.stderr)
print("  wall: median %.1f ms (min %.1f)   CPU of up-post: median %.1f ms (min %.1f)" %
      (statistics.median(wall) * 1e3, min(wall) * 1e3, statistics.median(cpu) * 1e3, min(cpu) * 1e3))
PY

# ---- 3. jittd's peak memory ----
hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }
jittd_run() { # NAME CONSENT: one trace summarised (and, with consent, uploaded); prints VmHWM
	d=$tmp/jittd-$1
	mkdir -p "$d/root/run/jitt"
	echo wifi >"$d/root/run/jitt/network"
	cat >"$d/conf" <<EOF
data_dir = $d/data
run_dir = $d/run
upload_url = https://localhost:$port/v1/reports
upload_ca_file = $tmp/certs/ca.pem
EOF
	"$bin/jittd" -f -c "$d/conf" --root "$d/root" 2>"$d/log" &
	jpid=$!
	i=0
	until "$bin/jitt" status -c "$d/conf" >/dev/null 2>&1 || [ $i -gt 200 ]; do sleep 0.05; i=$((i + 1)); done
	[ "$2" = granted ] && "$bin/jitt" consent grant -c "$d/conf" >/dev/null
	trace=$(ls "$tmp"/sim-blocked/data/spool/*.jtr | head -n 1)
	cp "$trace" "$d/data/spool/.tmp" && mv "$d/data/spool/.tmp" "$d/data/spool/t.jtr"
	want="summarised 1"
	[ "$2" = granted ] && want="uploaded 1"
	i=0
	until "$bin/jitt" status -c "$d/conf" | grep -qx "$want" || [ $i -gt 600 ]; do sleep 0.05; i=$((i + 1)); done
	hwm "$jpid"
	kill "$jpid"
	wait "$jpid" 2>/dev/null || true
	jpid=
}
idle=$(jittd_run idle revoked)
up=$(jittd_run upload granted)
echo
echo "bench-upload: jittd's peak memory (VmHWM), one blocked-jank trace"
echo "  consent off (summarised only): $idle KiB   consent on (summarised and uploaded): $up KiB   difference: $((up - idle)) KiB"
