#!/bin/sh
# bench-jittd: jittd's memory while idle and while it summarises a real trace (jank-sim's
# compute jank: three threads' 4 MiB rings), and how long the summary took to appear.
# usage: bench-jittd.sh BIN_DIR
set -u
bin=$1
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
for d in d app; do
	printf 'data_dir = %s/%s\nrun_dir = %s/run-%s\nmax_threads = 8\nlog_level = warn\n' \
		"$work" $d "$work" $d >"$work/$d.conf"
done
mkdir -p "$work/app/spool" "$work/run-app" # the app's folders, as the image's init makes them
"$bin/jittd" -f -c "$work/d.conf" 2>"$work/jittd.log" &
pid=$!
sleep 1
idle=$(awk '/^VmRSS:/ {print $2, $3}' /proc/$pid/status)
JITT_CONFIG=$work/app.conf "$bin/jank-sim" --scenario=compute --frames 80 >/dev/null 2>&1
set -- "$work"/app/spool/*.jtr
[ -f "$1" ] || { echo "bench-jittd: jank-sim persisted no trace"; exit 1; }
size=$(wc -c <"$1")
t0=$(date +%s%N)
mv "$1" "$work/d/spool/"
i=0
while ! ls "$work/d/outbox/"*.json >/dev/null 2>&1 && [ $i -lt 3000 ]; do
	sleep 0.01
	i=$((i + 1))
done
t1=$(date +%s%N)
sleep 0.2
after=$(awk '/^VmRSS:/ {print $2, $3}' /proc/$pid/status)
peak=$(awk '/^VmHWM:/ {print $2, $3}' /proc/$pid/status)
echo "bench-jittd"
echo "  idle RSS:                          $idle"
echo "  summarising a $((size / 1024)) KiB trace: peak RSS $peak (mapped trace included), $after after"
echo "  trace in the spool to summary in the outbox: $(((t1 - t0) / 1000000)) ms"
