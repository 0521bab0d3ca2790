#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench-peers.sh BIN_DIR [OUT_DIR] - jitt against the tracers an OEM engineer would pick
# instead (issue 16; docs/peers.md says what each figure means and what it leaves out):
#
#   jitt        BIN_DIR/peers-jitt: the board build (static, musl, -flto, hooks inlined)
#   uftrace-pg  gcc -pg, recorded by `uftrace record` (its libmcount's mcount)
#   uftrace-fi  gcc -finstrument-functions, recorded by `uftrace record`
#   xray-fdr    clang -fxray-instrument, XRay's flight-data-recorder mode, in a ring of
#               buffers as large as jitt's ring
#   xray-fdr-all the same with buffers for the whole run (every record kept and counted)
#
# 1. Each peer's program is built here from the same sources (tests/peers_main.c, the driver;
#    tests/peers_listing1.c, Hubble's Listing 1 compiled twice: plain, and instrumented).
# 2. Cost per trace point: REPS rounds; each round runs every tracer's program once, in an
#    order rotated by one each round. A run times its build's plain and instrumented copy of
#    Listing 1 (WORK iterations a level, CALLS calls of the depth-10 recursion), TRIES times
#    each after one untimed run of the instrumented copy (the tracer's buffers warm), and
#    keeps the fastest of each, in the thread's CPU time. The table quotes medians
#    over the rounds: ns per call of one level, ns per trace point over the build's own
#    plain copy ((traced - plain) / 2: an entry and an exit), and ratios. Every run must
#    have recorded 2 records a call (jitt: its ring's count; uftrace: `uftrace report`'s
#    calls; XRay: the function records in its log, by `llvm-xray convert`; XRay's ring: a
#    full ring of the newest): one run that did not makes its row VOID.
# 3. Post-processing: a full jitt ring of Listing 1 through `jitt summarize`, against
#    `uftrace report` and `llvm-xray account` on about as many records; CPU time of each
#    tool (user + sys), the fastest of 3, and its peak memory.
# A benchmark, not a test: `make bench-peers` runs it, `make test` does not. Host only.
# Environment: REPS (5), TRIES (3), CALLS (30000: 600 K records a run, more than a 4 MiB
# ring holds, so jitt's and XRay's rings wrap in every timed run), WORK (0).
set -eu

bin=$(cd "${1:?usage: bench-peers.sh BIN_DIR [OUT_DIR]}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
srctree=$(cd "$here/.." && pwd)
mkdir -p "${2:-$bin/../peers}"
out=$(cd "${2:-$bin/../peers}" && pwd)
reps=${REPS:-5}
tries=${TRIES:-3}
calls=${CALLS:-30000}
work=${WORK:-0}
say() { echo "bench-peers: $*"; }

# ---- the peers, from Debian's archive (like board/common/deps.sh, installed on demand) ----
XRAY_LIB=/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.xray-fdr-x86_64.a
need=""
command -v uftrace >/dev/null || need="$need uftrace"
command -v clang-14 >/dev/null || need="$need clang-14"
command -v llvm-xray-14 >/dev/null || need="$need llvm-14"
[ -e "$XRAY_LIB" ] || need="$need libclang-rt-14-dev"
if [ -n "$need" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "bench-peers: missing:$need; as root: apt-get install$need" >&2
		exit 1
	fi
	say "installing$need"
	apt-get update -q >/dev/null || true
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need >/dev/null
fi

# ---- 1. the peers' builds: -O2 as the board build, glibc, dynamically linked (uftrace
# traces only such programs); Listing 1 twice, only listing1_traced instrumented ----
tmp=$out/build
mkdir -p "$tmp"
build() { # tracer cc instrument-flags link-flags
	name=$1 cc=$2 iflags=$3 lflags=$4
	$cc -O2 -I"$srctree" -c "$here/peers_main.c" -o "$tmp/$name-main.o"
	$cc -O2 -I"$srctree" -c "$here/peers_$5.c" -o "$tmp/$name-tracer.o"
	$cc -O2 -I"$srctree" -DLISTING1_NAME=listing1_plain -c "$here/peers_listing1.c" \
		-o "$tmp/$name-plain.o"
	$cc -O2 -I"$srctree" -DLISTING1_NAME=listing1_traced $iflags -c "$here/peers_listing1.c" \
		-o "$tmp/$name-traced.o"
	$cc $lflags "$tmp/$name-main.o" "$tmp/$name-tracer.o" "$tmp/$name-plain.o" \
		"$tmp/$name-traced.o" -o "$out/peers-$name"
}
# -pg only at compile time: linking with -pg would add gprof's start-up and its gmon.out.
# Unrecorded, the calls go to glibc's mcount and its empty __cyg_profile_func_enter/exit.
build uftrace-pg gcc -pg "" uftrace
build uftrace-fi gcc -finstrument-functions "" uftrace
build xray-fdr clang-14 "-fxray-instrument -fxray-instruction-threshold=1" \
	"-fxray-instrument -fxray-modes=xray-fdr" xray
gcc -O2 "$here/peers_time.c" -o "$out/peers-time"

# jitt's ring, persisted once: its size is the memory XRay's ring gets below, and the file
# is the input of `jitt summarize` in part 3.
pp=$out/post
rm -rf "$pp"
mkdir -p "$pp"
trace=$("$bin/peers-jitt" --persist "$pp")
ring_slots=$("$bin/jitt" decode "$trace" | awk '$1 == "thread" && $4 == "ring" { print $6; exit }')
ring_bytes=$((${ring_slots:?jitt decode: no ring size} * 8))

# XRay FDR keeps its records in per-thread buffers from a fixed pool and reuses the oldest
# when the pool is used up (observed: with the defaults, 100 x 16 KiB, a 4 M-record run
# left the newest 200 K records in the log). Two settings:
#   xray-fdr      a ring as large as jitt's (1 MiB buffers): the flight recorder as it would
#                 be deployed. Its log can hold only the newest records; the run counts as
#                 recorded when the log holds at least all but one buffer's worth.
#   xray-fdr-all  buffers for the whole run (8 bytes a function record, and room for its
#                 metadata records), so every record can be counted.
# func_duration_threshold_us=0: by default FDR drops calls under 5 us, every call here.
xray_bufsize=1048576
xray_ring_max=$((ring_bytes / xray_bufsize))
[ "$xray_ring_max" -ge 2 ] || xray_ring_max=2
xray_ring_min=$(((xray_ring_max - 1) * xray_bufsize / 8))
xray_run() { # ring|all logbase records args...
	if [ "$1" = ring ]; then
		xmax=$xray_ring_max
	else
		xmax=$(($3 * 10 / xray_bufsize + 4))
	fi
	xbase=$2
	shift 3
	XRAY_OPTIONS="patch_premain=false xray_logfile_base=$xbase" \
		XRAY_FDR_OPTIONS="func_duration_threshold_us=0 buffer_size=$xray_bufsize buffer_max=$xmax" \
		"$out/peers-xray-fdr" "$@" 2>>"$out/xray.log"
}
# Function records (entries and exits) in an XRay log, counted in `llvm-xray convert`'s
# YAML. `llvm-xray account` pairs them and counts calls, but it gave up on both kinds of
# run log here: a wrapped ring's buffers ("empty stack"; with -k it dropped most calls), and
# a whole run's 2.4 M records in 26 buffers (the same error; 1.2 M in 15 buffers passed).
xray_records() { # log
	llvm-xray-14 convert -m "$out/peers-xray-fdr" -f yaml "$1" 2>>"$out/xray.log" |
		grep -c 'kind: function-' || true
}
# `llvm-xray account`'s count of listing1_traced (calls, each an entry and an exit record).
xray_calls() { # log
	llvm-xray-14 account -m "$out/peers-xray-fdr" "$1" 2>>"$out/xray.log" |
		awk '$NF == "listing1_traced" { print $2; n = 1 } END { if (!n) print 0 }'
}
# `uftrace report`'s count of listing1_traced.
uftrace_calls() { # data dir
	uftrace report -d "$1" 2>>"$out/uftrace.log" |
		awk '$NF == "listing1_traced" { print $(NF - 1); n = 1 } END { if (!n) print 0 }'
}

# One run of one tracer's program: the tracer, the driver's line with the records counted
# from the tracer's files, and "ok 1" when it recorded what it should, "ok 0" when not.
run_one() { # tracer round
	data=$out/data/$1-$2
	rm -rf "$data"
	mkdir -p "$data"
	want=$((calls * (tries + 1) * 20))
	case $1 in
	jitt)
		line=$("$bin/peers-jitt" "$work" "$calls" "$tries") || line=""
		got=$(echo "$line" | awk '{ print $7 + 0 }')
		ok=$((got == want))
		;;
	uftrace-*)
		line=$(uftrace record --no-libcall -d "$data/u" "$out/peers-$1" "$work" "$calls" \
			"$tries" 2>>"$out/uftrace.log") || line=""
		got=$(($(uftrace_calls "$data/u") * 2))
		ok=$((got == want))
		;;
	xray-fdr)
		line=$(xray_run ring "$data/log." 0 "$work" "$calls" "$tries") || line=
		got=$(xray_records "$(ls "$data"/log.* | head -n 1)")
		least=$xray_ring_min
		[ "$want" -ge "$least" ] || least=$want
		ok=$((got >= least && got <= want))
		;;
	xray-fdr-all)
		line=$(xray_run all "$data/log." "$want" "$work" "$calls" "$tries") || line=
		got=$(xray_records "$(ls "$data"/log.* | head -n 1)")
		ok=$((got == want))
		;;
	esac
	rm -rf "$data"
	# A program that failed printed no line: a row of zeros, not recorded.
	[ -n "$line" ] || line="$1 plain 0 traced 0 records 0 expected $want clock 0" ok=0
	echo "$1 $line ok $ok" | awk -v g="$got" '{ $8 = g; print }'
}

# ---- 2. cost per trace point, interleaved ----
say "Listing 1 (depth 10, work $work), $calls calls x $tries tries per run, $reps rounds"
tracers="jitt uftrace-pg uftrace-fi xray-fdr xray-fdr-all"
ntracers=5
results=$out/results
: >"$results"
r=1
while [ "$r" -le "$reps" ]; do
	# Round r starts at the ((r - 1) mod ntracers)-th tracer.
	order=$(echo $tracers | awk -v k=$(((r - 1) % ntracers)) '{ for (i = 0; i < NF; i++) printf "%s ", $((i + k) % NF + 1) }')
	for t in $order; do
		run_one "$t" "$r" >>"$results"
	done
	r=$((r + 1))
done

median() { # numbers on stdin
	sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
col() { # tracer field -> median of that field over its runs
	awk -v t="$1" -v f="$2" '$1 == t { print $f }' "$results" | median
}
echo
printf '%-11s %9s %9s %10s %8s %9s %s\n' tracer plain traced ns/point traced/ "/ jitt's" records
printf '%-11s %9s %9s %10s %8s %9s %s\n' "" "ns/call" "ns/call" "" plain "ns/point" "(runs ok / runs)"
jitt_point=$(awk -v p="$(col jitt 4)" -v t="$(col jitt 6)" 'BEGIN { print (t - p) / 2 }')
for t in $tracers; do
	plain=$(col "$t" 4) traced=$(col "$t" 6)
	ok=$(awk -v t="$t" '$1 == t && $14 == 1 { n++ } END { print n + 0 }' "$results")
	runs=$(awk -v t="$t" '$1 == t { n++ } END { print n + 0 }' "$results")
	status=""
	[ "$ok" = "$runs" ] || status="  VOID: a run did not record what it should"
	awk -v t="$t" -v p="$plain" -v x="$traced" -v j="$jitt_point" -v ok="$ok" -v n="$runs" \
		-v s="$status" 'BEGIN {
		pt = (x - p) / 2
		printf "%-11s %9.3f %9.3f %10.2f %7.1fx %8.2fx %s/%s%s\n", t, p, x, pt, x / p, pt / j, ok, n, s
	}'
done
echo "  records a run: $((calls * (tries + 1) * 20)) made ($calls calls x ($tries tries + 1 untimed) x 10 levels x 2)," \
	"counted: jitt $(col jitt 8) (its ring's count), uftrace-pg $(col uftrace-pg 8)" \
	"and uftrace-fi $(col uftrace-fi 8) (uftrace report), xray-fdr-all $(col xray-fdr-all 8)" \
	"(llvm-xray convert); xray-fdr's ring ($xray_ring_max x 1 MiB) kept the newest" \
	"$(col xray-fdr 8) (llvm-xray convert; at least" \
	"$(awk -v a="$xray_ring_min" -v b=$((calls * (tries + 1) * 20)) 'BEGIN { print a < b ? a : b }')" \
	"required); medians" | fold -s -w 92 | sed "s/ *$//"
echo "  clock_gettime(CLOCK_MONOTONIC), ns a call, same runs (median): glibc $(col uftrace-pg 12)," \
	"musl $(col jitt 12)"

# ---- 3. post-processing: the same number of records through each tool ----
jrec=$("$bin/jitt" decode "$trace" | awk '$2 == "records," { print $1; exit }')
n=$(((jrec + 19) / 20))
uftrace record --no-libcall -d "$pp/uftrace" "$out/peers-uftrace-pg" --once "$n" >/dev/null \
	2>>"$out/uftrace.log"
urec=$(($(uftrace_calls "$pp/uftrace") * 2))
mkdir -p "$pp/xray"
xray_run all "$pp/xray/log." $((n * 20)) --once "$n" >/dev/null
xlog=$(ls "$pp"/xray/log.* | head -n 1)
xrec=$(xray_records "$xlog")
xcalls=$(($(xray_calls "$xlog") * 2))
[ "$xcalls" = "$xrec" ] ||
	echo "bench-peers: llvm-xray account counted $xcalls of the log's $xrec records" >&2

best() { # name records command... : the fastest of 3 by CPU time, or FAILED
	name=$1 recs=$2
	shift 2
	: >"$pp/$name.times"
	for i in 1 2 3; do
		"$out/peers-time" "$pp/$name.out" "$@" >>"$pp/$name.times" 2>>"$pp/$name.err" ||
			echo FAILED >>"$pp/$name.times"
	done
	if grep -q FAILED "$pp/$name.times"; then
		printf '%-22s %9s FAILED (see %s)\n' "$name" "$recs" "$pp/$name.err"
		return
	fi
	sort -n "$pp/$name.times" | head -n 1 | {
		read -r cpu wall rss
		awk -v n="$name" -v r="$recs" -v c="$cpu" -v w="$wall" -v m="$rss" 'BEGIN {
			printf "%-22s %9s %9.1f %9.1f %9.0f %8.0f\n", n, r, c * 1000, w * 1000, m / 1024,
				c * 1e9 / r }'
	}
}
echo
echo "post-processing, about the same number of Listing 1 records (fastest of 3 by CPU time):"
printf '%-22s %9s %9s %9s %9s %8s\n' tool records "cpu ms" "wall ms" "peak MiB" "ns/rec"
best "jitt summarize" "$jrec" "$bin/jitt" summarize "$trace"
best "uftrace report" "$urec" uftrace report -d "$pp/uftrace"
best "llvm-xray account" "$xrec" llvm-xray-14 account -m "$out/peers-xray-fdr" "$xlog"
echo "  uftrace-pg and xray-fdr builds, --once $n calls (x 10 levels x 2); jitt: one full ring ($(ls -l "$trace" |
	awk '{ print $5 }') bytes)"
echo
echo "versions: $(uftrace --version | head -n 1); $(clang-14 --version | head -n 1);" \
	"$(gcc --version | head -n 1)"
