#!/bin/sh
# SPDX-License-Identifier: MIT
#
# speedtest1.sh BIN_DIR [OUT_DIR] - how much of a summary and a report survives the 4 KiB
# cap on a real program nobody here wrote: SQLite's speedtest1 (a bytecode interpreter under
# a SQL front end: deep call paths, long names). It is built from Debian's source package as
# an OEM would build an app (docs/runtime.md, "Linking an app"): -finstrument-functions
# -flto, linked with BIN_DIR/../lib/libjitt.a and the flags in libjitt.ldflags. While the
# instrumented build runs, `jitt trigger` saves TRACES traces at spaced moments; for each,
# `jitt summarize --json` and `jitt report` are measured: bytes, how many of the K = 10
# ranked contexts each keeps, the chains (count/frames) it kept, and the deepest context
# path (its frames inside the ring: calls entered before the ring's oldest record count as one).
# A measurement, not a test: `make bench-real` runs it, `make test` does not.
# Host only (musl-gcc), needs deb-src (make deps), dpkg-dev and tcl (see below).
# Environment: SIZE (speedtest1 --size, 50: about 10 s instrumented here), TRACES (5).
set -eu

bin=$(cd "${1:?usage: speedtest1.sh BIN_DIR [OUT_DIR]}" && pwd)
lib=$(cd "$bin/../lib" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
srctree=$(cd "$here/.." && pwd)
mkdir -p "${2:-$bin/../speedtest1}"
out=$(cd "${2:-$bin/../speedtest1}" && pwd)
dl=${DL_DIR:-$srctree/build/dl}
size=${SIZE:-50}
traces=${TRACES:-5}
cc=${CC_MUSL:-musl-gcc}

# Pinned like mbedtls (board/common/mbedtls.mk): bookworm's sqlite3 with its security
# updates. The .dsc's SHA-256 is checked here; the .dsc carries the tarballs' checksums,
# which dpkg-source verifies. If Debian moves on, update both lines.
SQLITE_DEB_VERSION=3.40.1-2+deb12u2
SQLITE_DSC_SHA256=ee3459ae9d00939741c7708fc1b8ce1bde12d8c3fb1dfa005bbbc8651d884e23
dsc=sqlite3_$SQLITE_DEB_VERSION.dsc

say() { echo "speedtest1: $*"; }
# A is missing, or B is newer than A (POSIX test has no -nt).
stale() { [ ! -e "$1" ] || [ -n "$(find "$2" -newer "$1" 2>/dev/null)" ]; }

# ---- 1. the source, verified and cached ----
mkdir -p "$dl"
if [ ! -f "$dl/$dsc" ]; then
	say "fetching sqlite3 $SQLITE_DEB_VERSION source package into $dl"
	(cd "$dl" && apt-get source --download-only "sqlite3=$SQLITE_DEB_VERSION") || {
		echo "speedtest1: 'apt-get source sqlite3=$SQLITE_DEB_VERSION' failed: it needs a" >&2
		echo "deb-src entry (make deps adds one) and that version still in the archive." >&2
		exit 1
	}
fi
got=$(sha256sum "$dl/$dsc" | cut -d' ' -f1)
if [ "$got" != "$SQLITE_DSC_SHA256" ]; then
	echo "speedtest1: $dl/$dsc has SHA-256 $got, expected $SQLITE_DSC_SHA256" >&2
	exit 1
fi

# Debian's source package is SQLite's source tree, without the one-file amalgamation
# (sqlite3.c) that speedtest1 is normally built against, and libsqlite3-dev ships only
# headers and libraries. So it is generated the way SQLite's own build does it: configure,
# then `make sqlite3.c`, which builds a few generator tools (lemon, mkkeywordhash) with the
# host's gcc and runs tclsh scripts. Only speedtest1 itself is built with musl.
stamp=$out/.amalgamation-$SQLITE_DEB_VERSION
if [ ! -f "$stamp" ]; then
	if ! command -v tclsh >/dev/null; then
		if [ "$(id -u)" = 0 ]; then
			say "installing tcl (tclsh generates sqlite3.c)"
			apt-get install -y tcl >/dev/null
		else
			echo "speedtest1: needs tclsh to generate sqlite3.c: apt-get install tcl" >&2
			exit 1
		fi
	fi
	rm -rf "$out/src" "$out/amalg" "$out"/.amalgamation-*
	say "unpacking and generating sqlite3.c (host gcc, tclsh; under a minute)"
	dpkg-source -x "$dl/$dsc" "$out/src" >"$out/unpack.log" 2>&1 || {
		cat "$out/unpack.log" >&2
		exit 1
	}
	mkdir -p "$out/amalg"
	(cd "$out/amalg" && nice ../src/configure --disable-tcl >"$out/amalg.log" 2>&1 &&
		nice make sqlite3.c >>"$out/amalg.log" 2>&1) || {
		echo "speedtest1: generating sqlite3.c failed; see $out/amalg.log" >&2
		exit 1
	}
	touch "$stamp"
fi

# ---- 2. two builds, both static with musl ----
# No extension loading: a static musl program has no dlopen to speak of.
flags="-static -O2 -DSQLITE_OMIT_LOAD_EXTENSION -I$out/amalg"
st=$out/src/test/speedtest1.c
if stale "$out/speedtest1-plain" "$stamp"; then
	say "building speedtest1-plain"
	# shellcheck disable=SC2086 # $flags is a list of words
	nice $cc $flags "$st" "$out/amalg/sqlite3.c" -o "$out/speedtest1-plain"
fi
# The OEM's build: every function of speedtest1 and of SQLite is a trace point; the shim
# only asks for the main thread to be traced (tests/speedtest1_shim.c). LTO compiles all of
# SQLite again at the link: a minute or two.
if stale "$out/speedtest1" "$lib/libjitt.a" || stale "$out/speedtest1" "$here/speedtest1_shim.c" ||
	stale "$out/speedtest1" "$stamp"; then
	say "building speedtest1 with -finstrument-functions -flto and libjitt.a (a minute or two)"
	# shellcheck disable=SC2046,SC2086 # $flags and the flags file are lists of words
	nice $cc $flags -flto -finstrument-functions -I"$srctree" "$st" "$out/amalg/sqlite3.c" \
		"$here/speedtest1_shim.c" "$lib/libjitt.a" $(cat "$lib/libjitt.ldflags") \
		-o "$out/speedtest1" 2>"$out/link.log" || {
		cat "$out/link.log" >&2
		exit 1
	}
fi

# ---- 3. a run with traces saved at spaced moments ----
run=$out/run
rm -rf "$run"
mkdir -p "$run/data" "$run/sock" "$run/db"
# cooldown_ms = 0: the runtime refuses a persist within the cool-down of the last one
# (10 s by default), which would swallow every trigger after the first.
printf 'data_dir = %s/data\nrun_dir = %s/sock\ncooldown_ms = 0\nmax_traces = %s\nlog_level = warn\n' \
	"$run" "$run" $((traces + 2)) >"$run/conf"
spool=$run/data/spool
count_traces() { set -- "$spool"/*.jtr; [ -e "$1" ] && echo $# || echo 0; }

say "plain run, --size $size (for the overhead)"
t0=$(date +%s.%N)
(cd "$run/db" && nice "$out/speedtest1-plain" --size "$size" plain.db >"$run/plain.out" 2>&1)
t1=$(date +%s.%N)
rm -f "$run/db/plain.db"

say "instrumented run, --size $size, $traces triggers"
t2=$(date +%s.%N)
(cd "$run/db" && JITT_CONFIG=$run/conf exec nice "$out/speedtest1" --size "$size" traced.db \
	>"$run/traced.out" 2>&1) &
pid=$!
trap 'kill $pid 2>/dev/null; wait 2>/dev/null' EXIT
# The subshell execs, so $! is speedtest1's pid, and its control socket is named by it.
i=0
while [ ! -S "$run/sock/jitt-$pid.sock" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
[ -S "$run/sock/jitt-$pid.sock" ] || { say "no control socket after 10 s"; cat "$run/traced.out"; exit 1; }
n=0
while [ $n -lt "$traces" ]; do
	sleep 1.5 # spaced: each trace sees another part of the run
	kill -0 $pid 2>/dev/null || break
	"$bin/jitt" trigger $pid "speedtest1-$((n + 1))" -c "$run/conf" >/dev/null 2>&1 || break
	# The next trigger waits for this trace's file: one persist at a time.
	i=0
	while [ "$(count_traces)" -le $n ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	[ "$(count_traces)" -gt $n ] || break
	n=$((n + 1))
done
wait $pid || true
trap - EXIT
t3=$(date +%s.%N)
grep TOTAL "$run/plain.out" | sed 's/^ */  plain:        /'
grep TOTAL "$run/traced.out" | sed 's/^ */  instrumented: /'
echo "  wall time: plain $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s, instrumented $(awk "BEGIN{printf \"%.1f\", $t3 - $t2}") s; $n traces"
[ "$n" -gt 0 ] || { say "no trace was saved"; exit 1; }

# ---- 4. each trace: summary, report, the figures ----
# Oldest first: the names (trace-PID-NS-N.jtr) sort by the time of the trace.
k=0
for t in "$spool"/*.jtr; do
	k=$((k + 1))
	"$bin/jitt" summarize "$t" --json >"$run/summary-$k.json"
	"$bin/jitt" report "$run/summary-$k.json" >"$run/report-$k.json" 2>/dev/null
done
python3 - "$run" "$k" <<'PY'
import json, sys
run, n = sys.argv[1], int(sys.argv[2])

def paths(ctxs):
    """Each context's whole path: context j's first n frames ("from") then its own, plus
    the frames an elided middle left out (counted, not listed)."""
    whole, depth = [], []
    for c in ctxs:
        p = list(c.get("path", []))
        if "from" in c:
            j, m = c["from"]
            p = whole[j][:m] + p
        whole.append(p)
        depth.append(len(p) + c.get("elided", 0))
    return whole, depth

print("  %-5s %8s %11s %7s %8s %11s %7s %8s %s" % ("trace", "summary", "contexts", "chains",
      "report", "contexts", "deepest", "longest", "left out (summary; report)"))
print("  %-5s %8s %11s %7s %8s %11s %7s %8s" % ("", "bytes", "in summary", "frames", "bytes",
      "in report", "context", "name"))
for i in range(1, n + 1):
    sraw = open("%s/summary-%d.json" % (run, i), "rb").read()
    rraw = open("%s/report-%d.json" % (run, i), "rb").read()
    s, r = json.loads(sraw), json.loads(rraw)
    rs = r["summary"]
    _, sd = paths(s.get("contexts", []))
    names = [f[2] for f in s.get("functions", [])]
    def lo(d):
        return ", ".join("%s %d" % (k[:-len("_left_out")], v) for k, v in d.items()
                         if k.endswith("_left_out")) or "none"
    ch = s.get("chains", [])
    print("  %-5d %8d %8d/10 %7s %8d %8d/10 %7d %8d %s; %s" % (i, len(sraw), len(s.get("contexts", [])),
          "%d/%d" % (len(ch), sum(len(c) for c in ch)), len(rraw), len(rs.get("contexts", [])), max(sd or [0]),
          max([len(x) for x in names] or [0]), lo(s), lo(rs)))

s = json.load(open("%s/summary-1.json" % run))
fn = s["functions"]
print("\n  trace 1: %s, thread %s, window %s %.1f ms; %d records, %d contexts in the trace"
      % (s.get("reason"), s.get("thread"), s["window"]["kind"], s["window"]["ns"] / 1e6,
         s["trace"]["records"], s["trace"]["contexts"]))
for key in ("top_window", "top_trace"):
    print("  %s (self time):" % key)
    for e in s.get(key, [])[:6]:
        print("    %9.3f ms %8d calls  %s" % (e[1] / 1e6, e[2], fn[e[0]][2]))
whole, depth = paths(s.get("contexts", []))
if whole:
    d = depth.index(max(depth))
    print("  deepest ranked context (#%d, %d frames, cost %.3f ms), innermost 6:" %
          (d + 1, depth[d], s["contexts"][d]["cost_ns"] / 1e6))
    print("    " + " > ".join(fn[f][2] for f in whole[d][-6:]))
PY
echo "  files: $run"
