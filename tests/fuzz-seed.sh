#!/bin/sh
# Remakes the fuzzers' seeds from real traces (tests/fuzz-corpus/, read by tests/fuzz-run.sh):
# builds jank-sim and jitt with 4 KiB rings (RB_RING_SHIFT=12) in build/fuzz-seed, so each
# trace is about 12 KiB instead of 4 MiB a thread, runs every sim scenario with a settings file
# that points data_dir at a temporary folder, and keeps
#   traces/sim-<scenario>.jtr       the trace it persisted (tracefile, summary and export);
#   diff/<a>-<b>.json               `jitt summarize --json` of two scenarios, A and B joined by
#                                   one NUL byte, as tests/fuzz_diff.c splits them, and each
#                                   summary alone (diffed against itself); diff/v3-*.json are
#                                   hand-written (summary version 3, with the scheduling
#                                   figures) and kept;
#   crafted/                        hand-made hostile traces (docs/security.md) for the
#                                   parsers: a call chain 300 deep (output was quadratic in
#                                   the depth, a summary past 4 KiB) and a thread name
#                                   holding a terminal escape.
# Run from the top of the tree: sh tests/fuzz-seed.sh. The seeds are committed; this is only
# needed when the trace or summary format changes.
set -eu
o=build/fuzz-seed
corpus=tests/fuzz-corpus
scenarios="compute blocked many-short hang preempted"

if [ ! -f $o/.config ]; then
	make O=$o defconfig
fi
sed -i 's/^CONFIG_RB_RING_SHIFT=.*/CONFIG_RB_RING_SHIFT=12/' $o/.config
make -j2 O=$o "$PWD/$o/bin/jank-sim" "$PWD/$o/bin/jitt"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p $corpus/traces $corpus/diff
for s in $scenarios; do
	mkdir -p "$work/$s/data/spool" "$work/$s/run" # as the image's init makes them
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
# Crafted traces, written here from docs/trace-format.md (CRC included): one thread, a sync
# record, then `depth` nested entries of distinct functions and their exits.
mkdir -p $corpus/crafted
python3 - $corpus/crafted <<'PY'
import struct, sys, zlib
def trace(depth, name):
    ts = 1000
    slots = [0, ts << 32 | 2]  # sync: ts_hi32 0, laps 0
    for d in range(depth):
        ts += 1000
        slots.append(ts << 32 | (0x1000 + 16 * d))
    for d in range(depth):
        ts += 1000
        slots.append(ts << 32)
    ring = 1
    while ring < len(slots):
        ring *= 2
    pad = lambda b: b + bytes(-len(b) % 8)
    reason, path = b"crafted", b"/nonexistent/app"
    module = struct.pack("<QQQIB3x32s", 0, 0x1000, 0x100000, len(path), 20, b"\x11" * 20)
    n = len(slots)
    thread = struct.pack("<II16sQQQQII", 1, 0, name, ring, n, n, n, 0, 0)
    thread += b"".join(struct.pack("<Q", s) for s in slots)
    body = pad(reason) + module + pad(path) + thread
    size = 96 + len(body) + 8
    head = b"JITTRACE" + struct.pack("<HBBIQQQQQIIIIQ16x", 1, 8, 1, 96, 10**9, ts + 10, 0, 0,
                                     size, 42, 1, 1, len(reason), ts + 5)
    data = head + body
    return data + struct.pack("<I", zlib.crc32(data)) + b"JEND"
out = sys.argv[1]
open(out + "/deep-300.jtr", "wb").write(trace(300, b"ui"))
open(out + "/thread-name-escape.jtr", "wb").write(trace(5, b"\x1b]0;pwned\x07\x1b[2J"))
PY
du -sh $corpus
