#!/bin/sh
# What a call costs through a sled (ringbuf/sleds.h, x86_64): tests/bench_sleds.c built with
# jitt-sleds.pc's flags and plain, run in interleaved rounds, each run the fastest of its
# repetitions in the thread's CPU time; every variant's ns a call and its difference from the
# plain call, and the same difference counted in instructions by callgrind (deterministic).
# The rows:
#   plain     the program's own build
#   limit     plain, with a traced call's records stored inline (the same-run physical
#             limit: two records, one in 32 timed)
#   limit-counted  plain, with a counted call's record stored inline (record.h, RB_CALLED)
#   off       sleds as the compiler left them, five 1-byte NOPs (JITT_DISABLE=1)
#   untraced  sleds patched, this thread not traced: the thunk's compare and jumps
#   sampled   traced through the thunk, one record in 32 timed (the default)
#   counted   traced, the leaf's calls counted through its counted thunk (rb_sleds_count)
#   timed     traced, every record timed (sleds = timed)
# usage: bench-sleds.sh SRCTREE BIN_DIR   (CALLS, ROUNDS; CALLGRIND=0 to leave out the counts)
set -u
src=$(cd "$1" && pwd)
bin=$(cd "$2" && pwd)
lib=$bin/../lib
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
calls=${CALLS:-20000000} rounds=${ROUNDS:-3}

if [ ! -f "$lib/libjitt-sleds.a" ]; then
	echo "bench-sleds: no libjitt-sleds.a (x86_64 boards only)"
	exit 0
fi
flags=$(cat "$lib/libjitt-sleds.cflags")
# shellcheck disable=SC2086,SC2046 # flag lists
if ! gcc -O2 -fPIE -pie $flags -DBENCH_SLEDS_RUNTIME -I"$src" "$src/tests/bench_sleds.c" -o "$work/sleds" \
	"$lib/libjitt-sleds.a" -flto "$lib/libjitt-glibc.a" $(cat "$lib/libjitt-glibc.ldflags") \
	-Wl,-u,rb_sleds_patch >"$work/build.log" 2>&1 ||
	! gcc -O2 -fPIE -pie -I"$src" "$src/tests/bench_sleds.c" -o "$work/plain" \
		>>"$work/build.log" 2>&1; then
	echo "bench-sleds: build failed"
	cat "$work/build.log"
	exit 1
fi

mkdir -p "$work/data/spool" "$work/run"
conf() { # NAME LINES...: a settings file
	name=$1
	shift
	{
		printf 'data_dir = %s\nrun_dir = %s\ncooldown_ms = 0\nsleds_learn_ns = 0\n' \
			"$work/data" "$work/run"
		for l in "$@"; do echo "$l"; done
	} >"$work/$name.conf"
}
conf untraced "trace_main = 0"
conf sampled "trace_main = 1"
conf timed "trace_main = 1" "sleds = timed"

# variant NAME: run it once with N calls, print its ns a call (and check its sum)
variant() {
	case $1 in
	plain) "$work/plain" "$2" ;;
	limit) "$work/plain" "$2" limit ;;
	limit-counted) "$work/plain" "$2" limit-counted ;;
	off) JITT_DISABLE=1 "$work/sleds" "$2" ;;
	untraced) JITT_CONFIG=$work/untraced.conf "$work/sleds" "$2" ;;
	sampled) JITT_CONFIG=$work/sampled.conf "$work/sleds" "$2" ;;
	counted) JITT_CONFIG=$work/sampled.conf "$work/sleds" "$2" counted ;;
	timed) JITT_CONFIG=$work/timed.conf "$work/sleds" "$2" ;;
	esac 2>>"$work/runs.log"
}
names="plain limit limit-counted off untraced sampled counted timed"
want=$(variant plain 1000 | sed 's/.*(//')
for v in $names; do
	got=$(variant "$v" 1000 | sed 's/.*(//')
	if [ "$got" != "$want" ]; then
		echo "bench-sleds: $v computed '$got', plain '$want'"
		cat "$work/runs.log"
		exit 1
	fi
done

r=0
while [ $r -lt "$rounds" ]; do
	for v in $names; do
		variant "$v" "$calls" | awk -v v="$v" '{ print v, $1 }' >>"$work/times"
	done
	r=$((r + 1))
done

# instructions a call: two runs of different lengths, the difference over the calls between
# them, counted inside the callers' loops only (--toggle-collect: the runtime's control
# thread, whose wake-ups follow the clock, moved the figures by 2 instructions a call)
ir() { # variant calls -> the whole run's instructions (the sleds are patched at run time)
	e=JITT_CONFIG=$work/$1.conf prog=$work/sleds arg=
	case $1 in
	plain) e=JITT_DISABLE=1 prog=$work/plain ;;
	limit) e=JITT_DISABLE=1 prog=$work/plain arg=limit ;;
	limit-counted) e=JITT_DISABLE=1 prog=$work/plain arg=limit-counted ;;
	counted) e=JITT_CONFIG=$work/sampled.conf arg=counted ;;
	off) e=JITT_DISABLE=1 ;;
	esac
	# shellcheck disable=SC2086 # arg: none or one word
	env "$e" valgrind --tool=callgrind --smc-check=all --toggle-collect='bench_loop*' --callgrind-out-file="$work/cg" \
		"$prog" "$2" $arg >/dev/null 2>>"$work/cg.log" || return 1
	sed -n 's/^summary: *//p' "$work/cg"
}
have_vg=0
[ "${CALLGRIND:-1}" = 1 ] && command -v valgrind >/dev/null && have_vg=1
echo "a call through a sled, $calls calls of a leaf, fastest of 7 repetitions x $rounds rounds (thread CPU time):"
printf '  %-18s %10s %12s %16s\n' variant "ns a call" "over plain" "instructions over plain"
plain_ns=$(awk '$1 == "plain" { if (m == "" || $2 < m) m = $2 } END { print m }' "$work/times")
plain_ir=
for v in $names; do
	ns=$(awk -v v="$v" '$1 == v { if (m == "" || $2 < m) m = $2 } END { print m }' "$work/times")
	ins=-
	if [ $have_vg = 1 ]; then
		a=$(ir "$v" 20000) b=$(ir "$v" 40000)
		if [ -n "$a" ] && [ -n "$b" ]; then
			per=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (b - a) / (7 * 20000) }')
			[ "$v" = plain ] && plain_ir=$per
			ins=$(awk -v p="$per" -v q="$plain_ir" 'BEGIN { printf "%.1f", p - q }')
		fi
	fi
	printf '  %-18s %10s %+12.2f %16s\n' "$v" "$ns" "$(awk -v a="$ns" -v b="$plain_ns" \
		'BEGIN { print a - b }')" "$ins"
done
