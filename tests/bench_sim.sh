#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench_sim.sh BIN [RUNS] - jitt's overhead on a realistic app: jank-sim (sim/README.md)
# with tracing on, with tracing off (instrumented, libjitt running, no ring written), and
# jank-sim-plain (no trace points, no libjitt), the same frames of the same seed, no jank.
# Figures are the frame work time (median and p99 of each run; the sleep to the next vsync
# is not work) and the process's CPU time, each the median of RUNS runs (5). The three run
# side by side, one of each per round, in an order that rotates, so that a machine getting
# busier or cooler slows all three alike. Every build gets the same calibration, so each
# does exactly the same work; Hubble's target (section 4.1) is under 3% worst case.
set -eu

bin=${1:?usage: bench_sim.sh BIN [RUNS]}
runs=${2:-5}
frames=130 # 10 of warm-up, then 120 measured: 2.2 s a run at 60 Hz

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The runtime's files go to a scratch folder; max_threads 3 traces io-1 as well.
mkdir -p "$tmp/data/spool" "$tmp/run" # as the image's init makes them
printf 'data_dir = %s/data\nrun_dir = %s/run\nmax_threads = 3\n' "$tmp" "$tmp" >"$tmp/jitt.conf"

calib=$("$bin/jank-sim-plain" --calibrate | sed -n 's/^calib=//p')
common="--scenario=none --warmup 10 --frames $frames --calib $calib --stats"

run() { # variant -> appends "variant median p99 cpu" to $tmp/results
	case $1 in
	plain) set -- plain "$bin/jank-sim-plain" ;;
	off) set -- off "$bin/jank-sim" --no-trace ;;
	on) set -- on "$bin/jank-sim" ;;
	esac
	v=$1
	shift
	# shellcheck disable=SC2086 # $common is a list of options
	JITT_CONFIG="$tmp/jitt.conf" "$@" $common 2>>"$tmp/log" |
		sed -n "s/^stats .*work_median_us=\([0-9.]*\) work_p99_us=\([0-9.]*\) .*cpu_ms=\([0-9.]*\) .*/$v \1 \2 \3/p" \
			>>"$tmp/results"
}

i=0
while [ "$i" -lt "$runs" ]; do
	case $((i % 3)) in
	0) order="plain off on" ;;
	1) order="off on plain" ;;
	2) order="on plain off" ;;
	esac
	for v in $order; do run "$v"; done
	i=$((i + 1))
done

echo "jank-sim: $runs runs of each, $((frames - 10)) frames at 60 Hz after 10 of warm-up," \
	"no jank, calibration $calib iterations/us; medians of the runs"
awk -v runs="$runs" '
function median(v, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{ n[$1]++; med[$1, n[$1]] = $2; p99[$1, n[$1]] = $3; cpu[$1, n[$1]] = $4 }
END {
	split("plain off on", vs, " ")
	label["plain"] = "plain (no jitt)"; label["off"] = "tracing off"; label["on"] = "tracing on"
	for (k = 1; k <= 3; k++) {
		v = vs[k]
		if (n[v] != runs) {
			printf "bench-sim: %s ran %d times of %d (see the log)\n", v, n[v], runs
			bad = 1
			continue
		}
		for (i = 1; i <= n[v]; i++) { a[i] = med[v, i]; b[i] = p99[v, i]; c[i] = cpu[v, i] }
		M[v] = median(a, n[v]); P[v] = median(b, n[v]); C[v] = median(c, n[v])
	}
	if (bad)
		exit 1
	printf "  %-22s %14s %14s %12s\n", "", "work median", "work p99", "CPU time"
	for (k = 1; k <= 3; k++)
		printf "  %-22s %11.1f us %11.1f us %9.1f ms\n", label[vs[k]], M[vs[k]], P[vs[k]], C[vs[k]]
	printf "  %-22s %14.3f %14.3f %12.3f\n", "tracing off / plain", M["off"] / M["plain"],
		P["off"] / P["plain"], C["off"] / C["plain"]
	printf "  %-22s %14.3f %14.3f %12.3f\n", "tracing on / plain", M["on"] / M["plain"],
		P["on"] / P["plain"], C["on"] / C["plain"]
}' "$tmp/results" || { cat "$tmp/log"; exit 1; }
