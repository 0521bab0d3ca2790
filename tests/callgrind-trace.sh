#!/bin/sh
# Instructions per trace point, counted by valgrind --tool=callgrind (deterministic, unlike
# timings): bench-trace runs Listing 1 with work 0 for a fixed number of calls, once
# uninstrumented and once per other variant; the difference in instructions executed,
# divided by the trace points (2 per call of each of the 10 levels), is the cost.
# usage: callgrind-trace.sh BENCH_TRACE_BINARY
set -eu
bin=$1 calls=20000
command -v valgrind >/dev/null || { echo "callgrind: valgrind is not installed"; exit 0; }
tmp=$(mktemp -d)
count() { # variant -> instructions executed by the whole program
	valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$bin" --only "$1" $calls \
		>/dev/null 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
	sed -n 's/^summary: *//p' "$tmp/out"
}
plain=$(count uninstrumented)
echo "instructions per trace point (callgrind, $calls calls x 10 levels x 2 trace points):"
for v in "tracing off" "tracing on" "empty hook (bare call)" "physical limit"; do
	n=$(count "$v")
	awk -v v="$v" -v n="$n" -v p="$plain" -v c=$calls \
		'BEGIN { printf "  %-24s %6.2f\n", v, (n - p) / (c * 20) }'
done
rm -rf "$tmp"
