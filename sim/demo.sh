#!/bin/sh
# `make run`: jitt's story on this machine, in under a minute. jittd starts and watches the
# spool; the sim app (a 60 Hz UI loop, a worker, an I/O thread, all traced by libjitt) runs
# normal frames, then a jank is injected; the jank detector fires and the runtime persists
# the rings; jittd summarises the trace into the outbox; the summary is shown.
# usage: demo.sh BIN_DIR ["QEMU_CMD"]   (SCENARIO=compute|blocked|many-short|hang, default
# blocked; JITT_DEMO_DIR=folder keeps everything there instead of a temporary folder)
set -u
bin=$1
qemu=${2:-}
scenario=${SCENARIO:-blocked}
work=${JITT_DEMO_DIR:-$(mktemp -d /tmp/jitt-demo.XXXXXX)}
mkdir -p "$work"
conf=$work/jitt.conf
cat >"$conf" <<CONF
data_dir = $work/data
run_dir = $work/run
max_threads = 8
keep_traces = 1
log_level = info
CONF

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
jittd_pid=
cleanup() { [ -z "$jittd_pid" ] || kill "$jittd_pid" 2>/dev/null; }
trap cleanup EXIT INT TERM

step "1. jittd starts: it watches $work/data/spool"
$qemu "$bin/jittd" -f -c "$conf" 2>"$work/jittd.log" &
jittd_pid=$!
i=0
while [ ! -S "$work/run/jittd.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sed 's/^/   jittd: /' "$work/jittd.log"
shown=$(wc -l <"$work/jittd.log")

step "2. the app runs 60 normal frames at 60 Hz, then a jank is injected ($scenario)"
JITT_CONFIG=$conf $qemu "$bin/jank-sim" --scenario="$scenario" --frames 90 \
	>"$work/app.out" 2>"$work/app.err"
sed 's/^/   app: /' "$work/app.out"
step "3. the detector fired: libjitt froze the app's threads and persisted their rings"
sed 's/^/   app: /' "$work/app.err"

step "4. jittd summarised the trace (on a LITTLE core, at the lowest priority)"
i=0
while ! ls "$work/data/outbox/"*.json >/dev/null 2>&1 && [ $i -lt 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.2
sed 's/^/   jittd: /' "$work/jittd.log" | tail -n +$((shown + 1))
summary=$(ls "$work/data/outbox/"*.json 2>/dev/null | head -n 1)
if [ -z "$summary" ]; then
	echo "no summary appeared in $work/data/outbox: see $work/jittd.log" >&2
	exit 1
fi
echo "   outbox: ${summary##*/}, $(wc -c <"$summary") bytes of JSON (all that may ever leave"
echo "   the device, with the user's consent; the raw trace stays in data/traces)"
echo "   jitt status:"
$qemu "$bin/jitt" status -c "$conf" | grep -v ' 0$' | sed 's/^/     /'

trace=$work/data/traces/$(basename "$summary" .json).jtr
step "5. what the developer reads: jitt summarize -k 5 ${trace#$work/}"
$qemu "$bin/jitt" summarize -k 5 "$trace" | sed -n '/^what changed/q;p'
echo "(the full report, with what changed against the normal frames: jitt summarize $trace)"
[ -n "${JITT_DEMO_DIR:-}" ] || echo "(everything is in $work)"
