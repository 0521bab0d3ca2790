#!/bin/sh
# `make run`: jitt's story on this machine, in under a minute. jittd starts and watches the
# spool; the sim app (a 60 Hz UI loop, a worker, an I/O thread, all traced by libjitt) runs
# normal frames, then a jank is injected; the jank detector fires and the runtime persists
# the rings; jittd summarises the trace into the outbox; the summary is shown. Then, on the
# host (where the reference collector is built): consent is granted, the network is Wi-Fi
# (the HAL's override file, in a fake root), the report is anonymised and uploaded over TLS
# to the collector on 127.0.0.1, whose receipt is shown; then consent is revoked and the
# outbox and the traces are gone. What it cannot show here (no collector, under qemu-user)
# it says it skips, and why, at the start and at the end.
# usage: demo.sh BIN_DIR ["QEMU_CMD"]   (SCENARIO=compute|blocked|many-short|hang, default
# blocked; JITT_DEMO_DIR=folder keeps everything there instead of a temporary folder)
set -u
bin=$1
qemu=${2:-}
scenario=${SCENARIO:-blocked}
work=${JITT_DEMO_DIR:-$(mktemp -d /tmp/jitt-demo.XXXXXX)}
mkdir -p "$work"
conf=$work/jitt.conf
here=$(cd "$(dirname "$0")" && pwd)
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
jittd_pid= coll_pid=
cleanup() { for p in $jittd_pid $coll_pid; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT INT TERM

# Says, in bold on standard error, that a part of the story is left out and why: a demo
# that quietly shows half of itself looks like one that worked.
loud() {
	printf '\n\033[1;33m== %s\033[0m\n' "$*" >&2
}

# The collector an OEM would run, with test certificates: on the host only (`make run`
# builds it there; a board's build under qemu-user has no collector in its bin folder).
upload= why_not=
if [ -n "$qemu" ]; then
	why_not="the upload (steps 6-7): this is a board's build under qemu-user, and the reference collector is built for the host only (make BOARD=host run shows it)"
elif [ ! -x "$bin/collector" ]; then
	why_not="the upload (steps 6-7): no reference collector in $bin (make run builds it on the host board: it needs libmbedtls-dev and libsqlite3-dev, make deps)"
elif ! sh "$here/../tests/certs.sh" "$work/certs" >"$work/certs.log" 2>&1; then
	why_not="the upload (steps 6-7): the test certificates could not be made (tests/certs.sh needs openssl): $(tail -n 3 "$work/certs.log")"
else
	"$bin/collector" serve --port 0 --port-file "$work/collector.port" \
		--cert "$work/certs/server.pem" --key "$work/certs/server.key" --db "$work/collector.db" \
		--dump "$work/collector.dump" 2>"$work/collector.log" &
	coll_pid=$!
	i=0
	while [ ! -s "$work/collector.port" ] && kill -0 "$coll_pid" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -s "$work/collector.port" ]; then
		upload=1
	else
		why_not="the upload (steps 6-7): the reference collector did not start: $(tail -n 3 "$work/collector.log")"
	fi
fi
[ -n "$upload" ] || loud "SKIPPED: $why_not"
mkdir -p "$work/root/run/jitt"
# The folders the image's init makes (board/common/init/): the traced app never does, and
# jittd only checks them.
mkdir -p "$work/data/spool" "$work/run" && chmod 0711 "$work/data" && chmod 1733 "$work/data/spool"
echo wifi >"$work/root/run/jitt/network" # what a phone's connectivity service would write
cat >"$conf" <<CONF
data_dir = $work/data
run_dir = $work/run
max_threads = 8
keep_traces = 1
log_level = info
upload_url = https://localhost:$(cat "$work/collector.port" 2>/dev/null || echo 1)/v1/reports
upload_ca_file = $work/certs/ca.pem
upload_poll_s = 1
CONF

step "1. jittd starts: it watches $work/data/spool"
$qemu "$bin/jittd" -f -c "$conf" --root "$work/root" 2>"$work/jittd.log" &
jittd_pid=$!
i=0
while [ ! -S "$work/run/jittd.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ -n "$upload" ]; then
	echo "   the user grants consent to send anonymised reports (off by default):"
	$qemu "$bin/jitt" consent grant -c "$conf" | sed 's/^/   $ jitt consent grant: /'
fi
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

if [ -n "$upload" ]; then
	step "6. consent granted, on Wi-Fi: the report, anonymised by allow-list, went over TLS"
	i=0
	while ! grep -q 'Created' "$work/collector.log" && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -q 'Created' "$work/collector.log" ||
		loud "NOT SHOWN: no report reached the collector in 20 s: see $work/jittd.log and $work/collector.log"
	echo "   what the collector received, decrypted (headers and the report's bytes):"
	tr -d '\r' <"$work/collector.dump" | fold -w 100 | sed 's/^/   | /' | head -n 40
	echo "   the collector's receipt:"
	sed 's/^collector: /   collector: /' "$work/collector.log"
	"$bin/collector" stats --db "$work/collector.db" --top 3 | sed 's/^/   collector stats: /'
	echo "   (jitt report FILE.json prints these bytes for any summary, with placeholders for"
	echo "   the two values only an upload has: the idempotency key and the pseudonymous id)"

	step "7. the user revokes consent: queued reports, raw traces and summaries are deleted"
	$qemu "$bin/jitt" consent revoke -c "$conf" | sed 's/^/   $ jitt consent revoke: /'
	for f in outbox traces uploads; do
		echo "   data/$f: $(ls "$work/data/$f" | tr '\n' ' ')"
	done
	echo "   (uploads/ keeps only the budget count: no report, no install secret)"
fi
[ -n "$upload" ] || loud "SKIPPED: $why_not"
[ -n "${JITT_DEMO_DIR:-}" ] || echo "(everything is in $work)"
