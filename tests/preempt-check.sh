#!/bin/sh
# Preempted time: a frame made slow by other processes, not by code. jank-sim
# --scenario=preempted runs its frames' normal 3 ms of work while hog processes hold the UI
# thread's CPU (sim/hog.c), the jank detector fires and persists a trace, and the summary
# must say the thread was preempted rather than name an innocent function:
#   - the detector is jank;
#   - window.sched.source is perf or schedstat (printed);
#   - window.preempted_ns is at least half of window.ns, and running_ns + preempted_ns +
#     blocked_ns is window.ns within 1%;
#   - with perf, top_window[0]'s self time (running time only) is under a quarter of the
#     window: the frame's own code is about 3 ms;
#   - the text summary says "preempted".
# Twice: with perf's context switches (schedstat where the kernel refuses perf), then with
# the fallback forced (sched_pages = 0), whose source must be schedstat.
# And no hog outlives the app. Every figure checked is printed.
#
# usage: preempt-check.sh BIN_DIR [KEEP_DIR]
#   BIN_DIR   holds jitt and jank-sim (the host's: build/host/bin)
#   KEEP_DIR  if given, made if missing, gets LABEL.jtr, LABEL.summary.txt and
#             LABEL.summary.json for preempted and preempted-schedstat
# Needs python3. Host only (the hogs are /proc/self/exe run again, natively).
# Prints "ok what" / "FAIL what: why" lines, then "N passed, N failed"; exits 1 on failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: preempt-check.sh BIN_DIR [KEEP_DIR]}
keep=${2:-}
. "$here/check-lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The spool holds exactly one finished trace (writers' temporaries start with a dot).
one_trace() {
	set -- "$1"/*.jtr
	[ $# -eq 1 ] && [ -f "$1" ]
}
finish() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

if ! command -v python3 >/dev/null; then
	fail "preempted" "needs python3"
	finish
fi
if [ -n "$keep" ] && ! mkdir -p "$keep"; then
	fail "preempted" "cannot make $keep"
	finish
fi

# One run of the scenario: a label, extra config lines, the source the summary must name
# ("any": perf, or schedstat where perf is refused).
scenario() {
	label=$1 extra=$2 want=$3
	dir=$work/$label
	out=${keep:-$work}/$label
	mkdir -p "$dir/data/spool" "$dir/run" # as the image's init makes them
	printf 'data_dir = %s/data\nrun_dir = %s/run\nmax_threads = 8\nlog_level = warn\n%s\n' \
		"$dir" "$dir" "$extra" >"$dir/jitt.conf"
	JITT_CONFIG=$dir/jitt.conf "$bin/jank-sim" --scenario=preempted --frames 80 \
		>"$dir/out" 2>"$dir/err" &
	app=$!
	wait $app
	status=$?
	injected=$(grep '^injected ' "$dir/out")
	if [ $status -ne 0 ] || [ -z "$injected" ]; then
		fail "$label: jank-sim" "exited with $status; $(cat "$dir/err")"
		return
	fi
	ok "$label: ${injected#injected } ($(sed -n 's/^preempted //p' "$dir/out"))"
	case $injected in
	*" sched=fifo"*) ;;
	*) echo "     (the hogs ran at nice 0, not SCHED_FIFO: the frames may not all be slow)" ;;
	esac

	# The hogs are `jank-sim --hog CPU APP_PID FD`: none may be left once the app has exited.
	left=$(pgrep -f -- "--hog [0-9]+ $app " 2>/dev/null)
	if [ -z "$left" ]; then
		ok "$label: no hog left behind"
	else
		fail "$label: no hog left behind" "still running: $left"
		kill -9 $left 2>/dev/null
	fi

	if ! wait_for 10 one_trace "$dir/data/spool"; then
		fail "$label: a trace" "expected one trace in the spool, found: $(ls "$dir/data/spool")"
		return
	fi
	set -- "$dir"/data/spool/*.jtr
	cp "$1" "$out.jtr"
	if ! "$bin/jitt" summarize "$out.jtr" >"$out.summary.txt" 2>"$dir/err"; then
		fail "$label: jitt summarize" "$(cat "$dir/err")"
		return
	fi
	if ! "$bin/jitt" summarize --json "$out.jtr" >"$out.summary.json" 2>"$dir/err"; then
		fail "$label: jitt summarize --json" "$(cat "$dir/err")"
		return
	fi

	# The checks, one line each: "ok<TAB>what" or "fail<TAB>what<TAB>why".
	python3 - "$out.summary.json" "$out.summary.txt" "$want" >"$dir/checks" <<-'PY'
	import json, re, sys
	s = json.load(open(sys.argv[1]))
	text = open(sys.argv[2]).read()
	def say(good, what, why=""):
	    print("%s\t%s\t%s" % ("ok" if good else "fail", what, why))
	ms = lambda ns: "%.3f ms" % (ns / 1e6)

	say(s.get("detector") == "jank", "the detector is jank (detector %s, reason: %s)"
	    % (s.get("detector"), s.get("reason")))
	w = s.get("window", {})
	version = s.get("version")
	missing = [k for k in ("running_ns", "preempted_ns", "blocked_ns", "sched") if k not in w]
	if missing:
	    # Summary schema version 2 and older: the window's time is not split by the scheduler.
	    say(False, "the window's time split by the scheduler",
	        "summary schema version %s has no window.%s (version 3 adds them); "
	        "the window: %s" % (version, ", window.".join(missing), json.dumps(w)))
	    sys.exit(0)
	ns, run, pre, blk = w["ns"], w["running_ns"], w["preempted_ns"], w["blocked_ns"]
	sched = w["sched"]
	source = sched.get("source")
	extra = ""
	if "cpu_ns" in sched:
	    extra += ", cpus %s" % ", ".join("%s %s" % (c, ms(t)) for c, t in sched["cpu_ns"].items())
	if "migrations" in sched:
	    extra += ", %d migrations" % sched["migrations"]
	want = sys.argv[3]
	if want == "any":
	    say(source in ("perf", "schedstat"), "window.sched.source is perf or schedstat (%s%s)"
	        % (source, extra))
	else:
	    say(source == want, "window.sched.source is %s (%s%s)" % (want, source, extra))
	say(pre * 2 >= ns, "preempted at least half the window (%s of %s, %.0f%%)"
	    % (ms(pre), ms(ns), 100.0 * pre / ns if ns else 0))
	total = run + pre + blk
	say(ns and abs(total - ns) * 100 <= ns, "running + preempted + blocked is the window within 1%% "
	    "(%s + %s + %s = %s, window %s)" % (ms(run), ms(pre), ms(blk), ms(total), ms(ns)))
	# Not the first line: it names the trace file, which is called preempted.jtr here.
	lines = [l.strip() for l in text.splitlines()[1:] if re.search(r"\bpreempted\b", l)]
	said = "; ".join(lines[:3]) if lines else "no line says preempted"
	if source == "perf":
	    top = s.get("top_window") or []
	    if top:
	        f = top[0]
	        name = s["functions"][f[0]][2]
	        say(f[1] * 4 < ns, "no innocent culprit: rank 1 %s has %s self, under a quarter of %s"
	            "%s" % (name, ms(f[1]), ms(ns),
	                    " (%s preempted)" % ms(f[5]) if len(f) > 5 else ""))
	    else:
	        say(False, "no innocent culprit", "top_window is empty")
	say(bool(lines), "the text says preempted (%s)" % said,
	    "the text summary never says preempted; it begins: " +
	    " | ".join(l.strip() for l in text.splitlines()[1:4]))
	PY
	if [ ! -s "$dir/checks" ]; then
		fail "$label: the summary's checks" "python3 could not read $out.summary.json"
	fi
	tab=$(printf '\t')
	while IFS=$tab read -r verdict what why; do
		if [ "$verdict" = ok ]; then
			ok "$label: $what"
		else
			fail "$label: $what" "$why"
		fi
	done <"$dir/checks"
	if [ "$failed" -gt 0 ] && [ -z "$keep" ]; then
		cp "$out.jtr" /tmp/preempt-check-$label.jtr 2>/dev/null &&
			echo "     (trace kept in /tmp/preempt-check-$label.jtr)"
	fi
}

# perf context switches where the kernel allows them; then the fallback, forced by
# sched_pages = 0: schedstat samples at frame boundaries.
scenario preempted "" any
scenario preempted-schedstat "sched_pages = 0" schedstat
finish
