#!/bin/sh
# Instructions per trace point, counted by valgrind --tool=callgrind (deterministic, unlike
# timings): bench-trace runs Listing 1 with work 0 for a fixed number of calls, once
# uninstrumented and once per other variant; the difference in instructions executed,
# divided by the trace points (2 per call of each of the 10 levels), is the cost. bench-trace
# fails a variant that did not record what it should.
# usage: callgrind-trace.sh BENCH_TRACE_BINARY [MAX_ON]
# With MAX_ON, exits 1 when "tracing on" costs more instructions per trace point.
set -eu
bin=$1 calls=20000 max_on=${2:-}
command -v valgrind >/dev/null || { echo "callgrind: valgrind is not installed"; exit 0; }
tmp=$(mktemp -d)
count() { # variant -> instructions executed by the whole program
	valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$bin" --only "$1" $calls \
		>/dev/null 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
	sed -n 's/^summary: *//p' "$tmp/out"
}
plain=$(count uninstrumented)
echo "instructions per trace point (callgrind, $calls calls x 10 levels x 2 trace points):"
status=0
for v in "tracing off" "tracing on" "empty hook (bare call)" "physical limit" \
	"sampled time on" "sampled limit"; do
	n=$(count "$v")
	per=$(awk -v n="$n" -v p="$plain" -v c=$calls 'BEGIN { printf "%.2f", (n - p) / (c * 20) }')
	printf '  %-24s %6s\n' "$v" "$per"
	if [ "$v" = "tracing on" ] && [ -n "$max_on" ] &&
		awk -v x="$per" -v m="$max_on" 'BEGIN { exit !(x > m) }'; then
		echo "  FAIL: tracing on costs more than $max_on instructions per trace point"
		status=1
	fi
done
rm -rf "$tmp"
[ -z "$max_on" ] || [ $status -ne 0 ] || echo "  ok: tracing on at most $max_on per trace point"
exit $status
