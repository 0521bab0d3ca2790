#!/bin/sh
# SPDX-License-Identifier: MIT
#
# speedtest1.sh BIN_DIR [OUT_DIR] - jitt on a real program nobody here wrote: SQLite's
# speedtest1 (a bytecode interpreter under a SQL front end: deep call paths, long names,
# millions of tiny calls). It is built from Debian's source package as an OEM would build
# an app (docs/runtime.md, "Linking an app"): the flags of BIN_DIR/../lib/libjitt.cflags
# (-finstrument-functions -flto), linked with libjitt.a and the flags in libjitt.ldflags.
#  1. A traced run, `jitt trigger` saving a trace every INTERVAL seconds (0.4) until it ends.
#  2. Summaries and reports of TRACES (5) of them, spread over the run: bytes, how many of
#     the K = 10 ranked contexts each keeps, the chains (count/frames), the deepest context
#     path (its frames inside the ring: calls entered before the ring's oldest record count
#     as one) (docs/report-format.md).
#  3. `jitt exclude` on all of them writes the list; speedtest1 is built again with it.
#  4. The overhead, in one run (docs/exclude.md): plain (uninstrumented), off (instrumented,
#     its thread not traced), on, and on with the list, REPS (5) rounds interleaved, CPU
#     time of each process (user + sys: wall time lies on a loaded machine), the fastest
#     and the median against plain; every run's verification hash must be plain's, and
#     each traced run must save the trace it is asked for once, a quarter second into it.
#  5. A traced run of the build with the list, triggered at the same points of its work,
#     and the top self time over all traces with and without the list.
# A measurement, not a test: `make bench-real` runs it, `make test` does not.
# Host only (musl-gcc), needs deb-src (make deps), dpkg-dev and tcl (board/common/sqlite.sh).
# Environment: SIZE (speedtest1 --size, 50: about 10 s traced here), TRACES (5), REPS (5),
# INTERVAL (0.4), BUDGET (jitt exclude --budget, 10); QUICK=1: SIZE 20 and REPS 2 unless set.
set -eu

bin=$(cd "${1:?usage: speedtest1.sh BIN_DIR [OUT_DIR]}" && pwd)
lib=$(cd "$bin/../lib" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
srctree=$(cd "$here/.." && pwd)
mkdir -p "${2:-$bin/../speedtest1}"
out=$(cd "${2:-$bin/../speedtest1}" && pwd)
dl=${DL_DIR:-$srctree/build/dl}
if [ "${QUICK:-0}" = 1 ]; then size=${SIZE:-20} reps=${REPS:-2}; else size=${SIZE:-50} reps=${REPS:-5}; fi
traces=${TRACES:-5}
interval=${INTERVAL:-0.4}
budget=${BUDGET:-10}
cc=${CC_MUSL:-musl-gcc}

say() { echo "speedtest1: $*"; }
# A is missing, or B is newer than A (POSIX test has no -nt).
stale() { [ ! -e "$1" ] || [ -n "$(find "$2" -newer "$1" 2>/dev/null)" ]; }

# ---- 1. the source and SQLite's amalgamation, verified and cached (shared with the
# boards' builds: board/common/sqlite.sh pins the version). Only speedtest1 itself is
# built with musl. ----
sq=$(sh "$srctree/board/common/sqlite.sh" "$dl")
stamp=$sq/.version

# ---- 2. the builds, all static with musl ----
# No extension loading: a static musl program has no dlopen to speak of.
flags="-static -O2 -DSQLITE_OMIT_LOAD_EXTENSION -I$sq/amalg"
st=$sq/src/test/speedtest1.c
if stale "$out/speedtest1-plain" "$stamp"; then
	say "building speedtest1-plain"
	# shellcheck disable=SC2086 # $flags is a list of words
	nice $cc $flags "$st" "$sq/amalg/sqlite3.c" -o "$out/speedtest1-plain"
fi
# The OEM's build: every function of speedtest1 and of SQLite is a trace point; the shim
# only asks for the main thread to be traced (tests/speedtest1_shim.c). Measured here with
# no list: libjitt.cflags must be the plain flags (a build made with JITT_EXCLUDE has one).
appflags=$(cat "$lib/libjitt.cflags")
case $appflags in
*exclude-function-list*)
	echo "speedtest1: $lib/libjitt.cflags has an exclusion list (make JITT_EXCLUDE=...):" >&2
	echo "this measures the full instrumentation first; build libjitt without it" >&2
	exit 1
	;;
esac
# LTO compiles all of SQLite again at the link: a minute or two.
build_traced() { # output, extra compile flags (an @file or nothing)
	say "building ${1##*/} with libjitt.cflags${2:+ and $2} and libjitt.a (a minute or two)"
	# shellcheck disable=SC2046,SC2086 # $flags and the flags files are lists of words
	nice $cc $flags $appflags ${2:-} -I"$srctree" "$st" "$sq/amalg/sqlite3.c" \
		"$here/speedtest1_shim.c" "$lib/libjitt.a" $(cat "$lib/libjitt.ldflags") \
		-o "$1" 2>"$1.log" || {
		cat "$1.log" >&2
		exit 1
	}
}
if stale "$out/speedtest1" "$lib/libjitt.a" || stale "$out/speedtest1" "$here/speedtest1_shim.c" ||
	stale "$out/speedtest1" "$stamp" || stale "$out/speedtest1" "$lib/libjitt.cflags"; then
	build_traced "$out/speedtest1"
fi

# ---- 3. a traced run, a trace every INTERVAL seconds ----
run=$out/run
rm -rf "$run"
mkdir -p "$run/sock" "$run/db"
# Each variant has its own settings and spool. cooldown_ms = 0: the runtime refuses a
# persist within the cool-down of the last one (10 s by default), which would swallow
# every trigger after the first. Traces are 4 MiB each: 100 fit.
for v in on list off; do
	mkdir -p "$run/$v/spool" # as the image's init makes it
	printf 'data_dir = %s/%s\nrun_dir = %s/sock\ncooldown_ms = 0\nmax_traces = 100\nmax_trace_mb = 500\nlog_level = warn\n' \
		"$run" "$v" "$run" >"$run/$v.conf"
done
# speedtest1's own options, the same for every run: --verify prints a hash of every
# result (each run must give plain's), --nosync leaves fsync's disk waits out of the work.
args="--size $size --verify --nosync"
count_traces() { set -- "$1"/*.jtr; [ -e "$1" ] && echo $# || echo 0; }

# Runs variant $1's binary $2 once, saving a trace every $3 seconds until it ends; the
# traces go to $run/$1/spool, the output to $run/$1.out; prints how many were saved.
collect() {
	spool=$run/$1/spool
	# shellcheck disable=SC2086 # $args is a list of words
	(cd "$run/db" && rm -f "$1.db" && JITT_CONFIG=$run/$1.conf exec nice "$2" $args "$1.db" \
		>"$run/$1.out" 2>&1) &
	pid=$!
	trap 'kill $pid 2>/dev/null; wait 2>/dev/null' EXIT
	# The subshell execs, so $! is speedtest1's pid, and its control socket is named by it.
	i=0
	while [ ! -S "$run/sock/jitt-$pid.sock" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	[ -S "$run/sock/jitt-$pid.sock" ] || { say "no control socket after 10 s" >&2; cat "$run/$1.out" >&2; exit 1; }
	n=0
	while [ $n -lt 100 ]; do
		sleep "$3"
		kill -0 $pid 2>/dev/null || break
		"$bin/jitt" trigger $pid "speedtest1-$((n + 1))" -c "$run/$1.conf" >/dev/null 2>&1 || break
		# The next trigger waits for this trace's file: one persist at a time.
		i=0
		while [ "$(count_traces "$spool")" -le $n ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
		[ "$(count_traces "$spool")" -gt $n ] || break
		n=$((n + 1))
	done
	wait $pid || { say "$1 failed" >&2; cat "$run/$1.out" >&2; exit 1; }
	trap - EXIT
	rm -f "$run/db/$1.db"
	echo "$n"
}

say "traced run, $args, a trace every $interval s"
n=$(collect on "$out/speedtest1" "$interval")
grep TOTAL "$run/on.out" | sed 's/^ */  traced: /'
echo "  $n traces"
[ "$n" -gt 0 ] || { say "no trace was saved"; exit 1; }

# ---- 4. TRACES of them, spread over the run: summary, report, the figures ----
# Oldest first: the names (trace-PID-NS-N.jtr) sort by the time of the trace.
k=0 j=0
for t in "$run/on/spool"/*.jtr; do
	j=$((j + 1))
	# the traces numbered 1, 1 + n/TRACES, 1 + 2n/TRACES, ...
	[ $(((j - 1) * traces / n)) -eq $k ] || continue
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

# ---- 5. the list, and speedtest1 built with it ----
say "jitt exclude --budget $budget on the $n traces"
"$bin/jitt" exclude "$run/on/spool"/*.jtr --budget "$budget" --code "$out/speedtest1-plain" \
	-o "$run/exclude.opt" \
	>"$run/exclude.txt" || { cat "$run/exclude.txt"; exit 1; }
sed -n '1,/^$/p' "$run/exclude.txt" | sed 's/^/  /'
[ -s "$run/exclude.opt" ] || { say "the list is empty"; exit 1; }
# Rebuilt when the list changed: the traces differ from run to run, and so may the list.
if stale "$out/speedtest1-list" "$out/speedtest1" || ! cmp -s "$run/exclude.opt" "$out/exclude.opt"; then
	cp "$run/exclude.opt" "$out/exclude.opt"
	build_traced "$out/speedtest1-list" "@$out/exclude.opt"
fi

# ---- 6. the overhead: the four variants interleaved, CPU time ----
say "plain, off, on, on with the list: $reps rounds, $args"
python3 "$here/speedtest1_time.py" --reps "$reps" --run "$run" --jitt "$bin/jitt" \
	--args "$args" --plain "$out/speedtest1-plain" --traced "$out/speedtest1" \
	--list "$out/speedtest1-list" --exclude "$run/exclude.txt" >"$run/time.txt" ||
	{ cat "$run/time.txt"; exit 1; }
cat "$run/time.txt"

# ---- 7. the top self time with and without the list ----
# The build with the list is triggered at the same points of its work: every INTERVAL
# scaled by its median time over the traced build's.
scale=$(sed -n 's/^scale //p' "$run/time.txt")
m=$(collect list "$out/speedtest1-list" "$(awk "BEGIN{printf \"%.3f\", $interval * $scale}")")
say "the traced run with the list: $m traces"
"$bin/jitt" exclude "$run/on/spool"/*.jtr --keep 10 >"$run/top-on.txt"
"$bin/jitt" exclude "$run/list/spool"/*.jtr --keep 10 >"$run/top-list.txt"
python3 - "$run" "$n" "$m" <<'PY'
import re, sys
run, n, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def top(path):
    """The top 10 self time over all traces, [(time, name)], and their running time."""
    rows, on, total = [], False, ""
    for line in open(path):
        if line.startswith("traces:"):
            total = line.split("threads): ", 1)[-1].strip()
        if line.startswith("top "):
            on = True
            continue
        g = re.match(r"\s*\d+\.\s+([0-9.]+ \S+) ->\s+(?:excluded|[0-9.]+ \S+)\s+(?:#\d+)?\s*(.+)$",
                     line) if on else None
        if on and not g:
            break
        if g:
            rows.append((g.group(1), g.group(2)))
    return rows, total

def ns(text):
    v, unit = text.split()
    return float(v) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]

a, ta = top("%s/top-on.txt" % run)
b, tb = top("%s/top-list.txt" % run)
print("\n  top self time over all traces: on, %d traces: %s" % (n, ta))
print("                                 on with the list, %d traces: %s" % (m, tb))
names_a, names_b = [x[1] for x in a], [x[1] for x in b]
ra, rb = ns(ta.split(" running")[0]), ns(tb.split(" running")[0])
for i in range(max(len(a), len(b))):
    l = "%10s %5.1f%%  %-40s" % (a[i][0], 100 * ns(a[i][0]) / ra, a[i][1]) if i < len(a) else " " * 59
    r = "%10s %5.1f%%  %s" % (b[i][0], 100 * ns(b[i][0]) / rb, b[i][1]) if i < len(b) else ""
    mark = "" if i >= len(b) or b[i][1] in names_a else "  (new)"
    print("  %2d. %s %s%s" % (i + 1, l, r, mark))
print("  the same functions in both top 10s: %d of %d" % (len(set(names_a) & set(names_b)),
      len(names_a)))
PY
echo "  files: $run"
