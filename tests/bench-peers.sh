#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench-peers.sh BIN_DIR [OUT_DIR] - jitt against the tracers an OEM engineer would pick
# instead (an OEM weighing jitt for its image; docs/peers.md says what each figure means and
# what it leaves out):
#
#   jitt        BIN_DIR/peers-jitt: the board build (static, musl, -flto, hooks inlined)
#   uftrace-pg  gcc -pg, recorded by `uftrace record` (its libmcount's mcount)
#   uftrace-fi  gcc -finstrument-functions, recorded by `uftrace record`
#   xray-fdr    clang -fxray-instrument, XRay's flight-data-recorder mode, in a ring of
#               buffers as large as jitt's ring
#   xray-fdr-all the same with buffers for the whole run (every record kept and counted)
#
# 1. Each peer's program is built here from the same sources (tests/peers_main.c, the driver;
#    tests/peers_listing1.c, Hubble's Listing 1 compiled twice: plain, and instrumented;
#    the sim app's UI frame, tests/peers_sim.c over its call tree from sim/gen-tree.awk,
#    generated twice: instrumented, and plain under names ending in _plain).
# 2. Cost per trace point: REPS rounds; each round runs every tracer's program once per
#    workload (Listing 1, and the sim app's frame at each SIMWORK), all in one list, in an
#    order rotated by one each round. A run times its build's plain and instrumented copy
#    (Listing 1: WORK iterations a level, CALLS calls of the depth-10 recursion; the sim:
#    FRAMES frames), TRIES times each after one untimed run of the instrumented copy (the
#    tracer's buffers warm), and keeps the fastest of each, in the thread's CPU time. The
#    tables quote medians over the rounds: ns per call of one level (us per frame), ns per
#    trace point over the build's own plain copy ((traced - plain) / trace points: 2 a call,
#    an entry and an exit), and ratios. Every run must have recorded 2 records a call
#    (jitt: its ring's count; uftrace: `uftrace report`'s calls; XRay: the function records
#    in its log, by `llvm-xray convert`; XRay's ring: a full ring of the newest): one run
#    that did not makes its row VOID.
# 3. Post-processing: a full jitt ring of Listing 1 through `jitt summarize`, against
#    `uftrace report` and `llvm-xray account` on about as many records; CPU time of each
#    tool (user + sys), the fastest of 3, and its peak memory.
# A benchmark, not a test: `make bench-peers` runs it, `make test` does not. Host only.
# Environment: REPS (5), TRIES (3), CALLS (30000: 600 K records a run, more than a 4 MiB
# ring holds, so jitt's and XRay's rings wrap in every timed run), WORK (0), FRAMES (30: 610 K
# records a run, the rings wrap too), SIMWORK ("0 73": loop iterations per unit of the sim
# tree's weights, one table each; 0: the trace points dominate, 73: the app's 3 ms frame
# on docs/peers.md's machine; "" leaves the sim out).
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
frames=${FRAMES:-30}
simwork=${SIMWORK-0 73}
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
# The sim's call tree, as sim/Kbuild generates it, and its plain copy under other names.
awk -f "$srctree/sim/gen-tree.awk" >"$tmp/tree.c"
awk -v suffix=_plain -f "$srctree/sim/gen-tree.awk" >"$tmp/tree_plain.c"
tree_calls=$(sed -n 's/^const unsigned long sim_tree_calls = \([0-9]*\);.*/\1/p' "$tmp/tree.c")
sed -n 's/^uint32_t \([a-z0-9_]*\)(uint32_t x);$/\1/p' "$tmp/tree.c" >"$tmp/tree.functions"
build() { # tracer cc instrument-flags link-flags
	name=$1 cc=$2 iflags=$3 lflags=$4
	$cc -O2 -I"$srctree" -c "$here/peers_main.c" -o "$tmp/$name-main.o"
	$cc -O2 -I"$srctree" -c "$here/peers_$5.c" -o "$tmp/$name-tracer.o"
	$cc -O2 -I"$srctree" -DLISTING1_NAME=listing1_plain -c "$here/peers_listing1.c" \
		-o "$tmp/$name-plain.o"
	$cc -O2 -I"$srctree" -DLISTING1_NAME=listing1_traced $iflags -c "$here/peers_listing1.c" \
		-o "$tmp/$name-traced.o"
	$cc -O2 -I"$srctree" -c "$here/peers_sim.c" -o "$tmp/$name-sim.o"
	$cc -O2 -I"$srctree" -c "$tmp/tree_plain.c" -o "$tmp/$name-tree-plain.o"
	$cc -O2 -I"$srctree" $iflags -c "$tmp/tree.c" -o "$tmp/$name-tree.o"
	$cc $lflags "$tmp/$name-main.o" "$tmp/$name-tracer.o" "$tmp/$name-plain.o" \
		"$tmp/$name-traced.o" "$tmp/$name-sim.o" "$tmp/$name-tree-plain.o" \
		"$tmp/$name-tree.o" -o "$out/peers-$name"
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
# `uftrace report`'s calls of the tree's functions. Its rows also hold uftrace's own
# scheduler events (`linux:schedule`, once a voluntary switch: one made a run count a call
# too many), which are no trace point of the app; a function of the plain copy (_plain)
# would be one, wrongly, and is counted, so that it voids the run.
uftrace_tree_calls() { # data dir
	uftrace report -d "$1" 2>>"$out/uftrace.log" |
		awk -v list="$tmp/tree.functions" 'BEGIN { while ((getline f <list) > 0) tree[f] = 1 }
		($NF in tree || $NF ~ /_plain$/) && $(NF - 1) ~ /^[0-9]+$/ { n += $(NF - 1) }
		END { print n + 0 }'
}

# One run of one tracer's program on one workload (listing1, or sim:W for the sim's frames
# at SIMWORK W): the workload, the tracer, the driver's line with the records counted from
# the tracer's files, and "ok 1" when it recorded what it should, "ok 0" when not.
run_one() { # workload tracer round
	data=$out/data/$2-$3
	rm -rf "$data"
	mkdir -p "$data"
	case $1 in
	listing1)
		set -- "$1" "$2" "$work" "$calls" "$tries"
		want=$((calls * (tries + 1) * 20))
		;;
	sim:*)
		set -- "$1" "$2" --sim "${1#sim:}" "$frames" "$tries"
		want=$((frames * (tries + 1) * tree_calls * 2))
		;;
	esac
	w=$1 t=$2
	shift 2
	case $t in
	jitt)
		line=$("$bin/peers-jitt" "$@") || line=""
		got=$(echo "$line" | awk '{ print $7 + 0 }')
		ok=$((got == want))
		;;
	uftrace-*)
		line=$(uftrace record --no-libcall -d "$data/u" "$out/peers-$t" "$@" \
			2>>"$out/uftrace.log") || line=""
		if [ "$w" = listing1 ]; then
			got=$(($(uftrace_calls "$data/u") * 2))
		else
			got=$(($(uftrace_tree_calls "$data/u") * 2))
		fi
		ok=$((got == want))
		;;
	xray-fdr)
		line=$(xray_run ring "$data/log." 0 "$@") || line=
		got=$(xray_records "$(ls "$data"/log.* | head -n 1)")
		least=$xray_ring_min
		[ "$want" -ge "$least" ] || least=$want
		ok=$((got >= least && got <= want))
		;;
	xray-fdr-all)
		line=$(xray_run all "$data/log." "$want" "$@") || line=
		got=$(xray_records "$(ls "$data"/log.* | head -n 1)")
		ok=$((got == want))
		;;
	esac
	rm -rf "$data"
	# A program that failed printed no line: a row of zeros, not recorded.
	[ -n "$line" ] || line="$t plain 0 traced 0 records 0 expected $want clock 0 points 0" ok=0
	echo "$w $t $line ok $ok" | awk -v g="$got" '{ $9 = g; print }'
}

# ---- 2. cost per trace point, interleaved ----
tracers="jitt uftrace-pg uftrace-fi xray-fdr xray-fdr-all"
workloads=listing1
for sw in $simwork; do
	workloads="$workloads sim:$sw"
done
say "Listing 1 (depth 10, work $work), $calls calls x $tries tries per run;" \
	"the sim app's frame (work ${simwork:-none}), $frames frames x $tries tries per run;" \
	"$reps rounds"
# Every (workload, tracer) pair once a round.
pairs=$(for w in $workloads; do for t in $tracers; do printf '%s/%s ' "$w" "$t"; done; done)
npairs=$(echo $pairs | wc -w)
results=$out/results
: >"$results"
r=1
while [ "$r" -le "$reps" ]; do
	# Round r starts at the ((r - 1) mod npairs)-th pair.
	order=$(echo $pairs | awk -v k=$(((r - 1) % npairs)) '{ for (i = 0; i < NF; i++) printf "%s ", $((i + k) % NF + 1) }')
	for p in $order; do
		run_one "${p%/*}" "${p#*/}" "$r" >>"$results"
	done
	r=$((r + 1))
done

median() { # numbers on stdin
	sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
col() { # workload tracer key -> median of the value after key over its runs
	awk -v w="$1" -v t="$2" -v k="$3" '$1 == w && $2 == t {
		for (i = 3; i < NF; i++) if ($i == k) { print $(i + 1); break } }' "$results" | median
}
# One table: per unit (Listing 1: ns a call of one level; the sim: us a frame), ns per trace
# point over the build's own plain copy, traced/plain, and the ratio to jitt's ns per point.
table() { # workload unit scale title
	w=$1 unit=$2 scale=$3
	echo
	say "$4"
	echo
	printf '%-12s %9s %9s %10s %8s %9s %s\n' tracer plain traced ns/point traced/ "/ jitt's" records
	printf '%-12s %9s %9s %10s %8s %9s %s\n' "" "$unit" "$unit" "" plain "ns/point" "(runs ok / runs)"
	points=$(col "$w" jitt points)
	jitt_point=$(awk -v p="$(col "$w" jitt plain)" -v t="$(col "$w" jitt traced)" -v n="$points" \
		'BEGIN { print n ? (t - p) / n : 0 }')
	# A ratio to a cost that a run measured at zero or below (the work hid it, or noise
	# did) says nothing: not printed.
	jitt_low=$(awk -v w="$w" '$1 == w && $2 == "jitt" && $7 - $5 <= 0 { n++ }
		END { print n + 0 }' "$results")
	[ "$jitt_low" = 0 ] || jitt_point=0
	for t in $tracers; do
		plain=$(col "$w" "$t" plain) traced=$(col "$w" "$t" traced)
		ok=$(awk -v w="$w" -v t="$t" '$1 == w && $2 == t && $NF == 1 { n++ } END { print n + 0 }' "$results")
		runs=$(awk -v w="$w" -v t="$t" '$1 == w && $2 == t { n++ } END { print n + 0 }' "$results")
		status=""
		[ "$ok" = "$runs" ] || status="  VOID: a run did not record what it should"
		awk -v t="$t" -v p="$plain" -v x="$traced" -v j="$jitt_point" -v n="$points" \
			-v s="$scale" -v ok="$ok" -v runs="$runs" -v st="$status" 'BEGIN {
			pt = n ? (x - p) / n : 0
			r = j ? sprintf("%8.2fx", pt / j) : sprintf("%9s", "-")
			printf "%-12s %9.3f %9.3f %10.2f %7.2fx %s %s/%s%s\n", t, p / s, x / s, pt,
				p ? x / p : 0, r, ok, runs, st
		}'
	done
	[ "$jitt_low" = 0 ] ||
		echo "  / jitt's ns/point: none, $jitt_low run(s) of jitt measured its trace points at no cost"
}
counts() { # workload made-line
	w=$1
	echo "  records a run: $2, counted: jitt $(col "$w" jitt records) (its ring's count)," \
		"uftrace-pg $(col "$w" uftrace-pg records) and uftrace-fi" \
		"$(col "$w" uftrace-fi records) (uftrace report), xray-fdr-all" \
		"$(col "$w" xray-fdr-all records) (llvm-xray convert); xray-fdr's ring" \
		"($xray_ring_max x 1 MiB) kept the newest $(col "$w" xray-fdr records) (llvm-xray" \
		"convert; at least $(awk -v a="$xray_ring_min" -v b="$(col "$w" jitt expected)" \
			'BEGIN { print a < b ? a : b }') required); medians" |
		fold -s -w 92 | sed "s/ *$//"
}

table listing1 ns/call 1 "Listing 1 (depth 10, work $work), $calls calls x $tries tries per run, $reps rounds"
counts listing1 "$((calls * (tries + 1) * 20)) made ($calls calls x ($tries tries + 1 untimed) x 10 levels x 2)"
echo "  clock_gettime(CLOCK_MONOTONIC), ns a call, same runs (median): glibc" \
	"$(col listing1 uftrace-pg clock), musl $(col listing1 jitt clock)"
for sw in $simwork; do
	table "sim:$sw" us/frame 1000 "the sim app's UI frame (work $sw), $frames frames x $tries tries per run, $reps rounds"
	counts "sim:$sw" "$((frames * (tries + 1) * tree_calls * 2)) made ($frames frames x ($tries tries + 1 untimed) x $tree_calls calls x 2)"
done

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
