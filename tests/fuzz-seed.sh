#!/bin/sh
# Remakes the fuzzers' seeds from real traces (tests/fuzz-corpus/, read by tests/fuzz-run.sh):
# builds jank-sim and jitt with 4 KiB rings (RB_RING_SHIFT=12) in build/fuzz-seed, so each
# trace is about 12 KiB instead of 4 MiB a thread, runs every sim scenario with a settings file
# that points data_dir at a temporary folder, and keeps
#   traces/sim-<scenario>.jtr       the trace it persisted (tracefile, summary and export);
#   diff/<a>-<b>.json               `jitt summarize --json` of two scenarios, A and B joined by
#                                   one NUL byte, as tests/fuzz_diff.c splits them, and each
#                                   summary alone (diffed against itself).
# Run from the top of the tree: sh tests/fuzz-seed.sh. The seeds are committed; this is only
# needed when the trace or summary format changes.
set -eu
o=build/fuzz-seed
corpus=tests/fuzz-corpus
scenarios="compute blocked many-short hang"

if [ ! -f $o/.config ]; then
	make O=$o defconfig
fi
sed -i 's/^CONFIG_RB_RING_SHIFT=.*/CONFIG_RB_RING_SHIFT=12/' $o/.config
make -j2 O=$o "$PWD/$o/bin/jank-sim" "$PWD/$o/bin/jitt"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p $corpus/traces $corpus/diff
for s in $scenarios; do
	mkdir -p "$work/$s/data/spool"
	printf 'data_dir = %s/data\nrun_dir = %s/run\nmax_threads = 8\nlog_level = warn\n' \
		"$work/$s" "$work/$s" >"$work/$s/jitt.conf"
	JITT_CONFIG=$work/$s/jitt.conf $o/bin/jank-sim --scenario=$s --frames 80 >/dev/null
	set -- "$work/$s"/data/spool/*.jtr
	if [ $# -ne 1 ] || [ ! -f "$1" ]; then
		echo "fuzz-seed: $s left no single trace in its spool" >&2
		exit 1
	fi
	cp "$1" $corpus/traces/sim-$s.jtr
	chmod 0644 $corpus/traces/sim-$s.jtr
	$o/bin/jitt summarize --json "$1" >"$work/$s.json"
	cp "$work/$s.json" $corpus/diff/$s.json
done
# Pairs: each scenario against the next one (the differences a developer would diff).
set -- $scenarios
first=$1
while [ $# -gt 0 ]; do
	a=$1
	shift
	b=${1:-$first}
	{ cat "$work/$a.json"; printf '\0'; cat "$work/$b.json"; } >$corpus/diff/$a-$b.json
done
du -sh $corpus
