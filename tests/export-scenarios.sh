#!/bin/sh
# What the viewers really load: every jank scenario of the sim app (compute, blocked,
# many-short, hang) exported in the three formats, each checked by tests/export_verify.py,
# which shares no code with jitt: Perfetto decoded by protoc against Perfetto's own protos
# (no unknown field, interned names defined before use, clocks, tracks, begin/end and
# flows), Chrome JSON (strict, B/E balanced and named alike), folded stacks; then self time
# per function agrees between the three exports and `jitt summarize --json` (hang included),
# and the culprit the app says it injected has a large self time in every export (hang: the
# detector froze the rings while the culprit still ran, so its time runs to the freeze).
#
# usage: export-scenarios.sh BIN_DIR [KEEP_DIR]
#   BIN_DIR   holds jitt and jank-sim (the host's: build/host/bin)
#   KEEP_DIR  if given, made if missing, and per scenario S it gets S.jtr (the trace),
#             S.json (Chrome), S.pftrace (Perfetto), S.folded, S.summary.json and S.culprit
#             (the culprit's function name, one line), for other checks to load.
# Needs python3 and protoc (Debian's protobuf-compiler), and the descriptor set
# $JITT_PERFETTO_DESC (default ../shared/testdata/perfetto_trace.desc beside the project,
# else /work/shared/testdata). Host only.
# Prints "ok what" / "FAIL what: why" lines, then "N passed, N failed"; exits 1 on failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: export-scenarios.sh BIN_DIR [KEEP_DIR]}
keep=${2:-}
# The descriptor set lives beside the project (../shared/testdata), not in it.
desc=${JITT_PERFETTO_DESC:-$here/../../shared/testdata/perfetto_trace.desc}
[ -f "$desc" ] || desc=/work/shared/testdata/perfetto_trace.desc
. "$here/check-lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

verify() { python3 "$here/export_verify.py" "$@"; }
# checked WHAT COMMAND...: ok with the command's last line, or FAIL with all it said.
checked() {
	what=$1
	shift
	if said=$("$@" 2>&1); then
		ok "$what: $(printf "%s\n" "$said" | tail -n 1)"
	else
		fail "$what" "$said"
	fi
}
# The spool holds exactly one finished trace (writers' temporaries start with a dot).
one_trace() {
	set -- "$1"/*.jtr
	[ $# -eq 1 ] && [ -f "$1" ]
}

if ! command -v protoc >/dev/null || ! command -v python3 >/dev/null || [ ! -f "$desc" ]; then
	fail "export scenarios" "needs python3, protoc and $desc"
	echo "$passed passed, $failed failed"
	exit 1
fi
if [ -n "$keep" ] && ! mkdir -p "$keep"; then
	fail "export scenarios" "cannot make $keep"
	echo "$passed passed, $failed failed"
	exit 1
fi
# The checkers themselves first, on hand-written traces good and bad.
checked "export_verify.py selftest" verify selftest "$desc"

for scenario in compute blocked many-short hang; do
	dir=$work/$scenario
	out=${keep:-$dir}/$scenario
	mkdir -p "$dir/data/spool" "$dir/run" # as the image's init makes them
	printf 'data_dir = %s/data\nrun_dir = %s/run\nmax_threads = 8\nlog_level = warn\n' \
		"$dir" "$dir" >"$dir/jitt.conf"
	JITT_CONFIG=$dir/jitt.conf "$bin/jank-sim" --scenario=$scenario --frames 80 \
		>"$dir/out" 2>"$dir/err"
	status=$?
	injected=$(grep '^injected ' "$dir/out")
	culprit=$(printf '%s\n' "$injected" | sed -n 's/.* culprit=\([^ ]*\).*/\1/p')
	if [ $status -ne 0 ] || [ -z "$culprit" ]; then
		fail "$scenario" "jank-sim exited with $status; $(cat "$dir/err")"
		continue
	fi
	if ! wait_for 10 one_trace "$dir/data/spool"; then
		fail "$scenario" "expected one trace in the spool, found: $(ls "$dir/data/spool")"
		continue
	fi
	set -- "$dir"/data/spool/*.jtr
	if ! cp "$1" "$out.jtr" || ! printf '%s\n' "$culprit" >"$out.culprit"; then
		fail "$scenario" "could not write $out.jtr or $out.culprit"
		continue
	fi
	if ! "$bin/jitt" summarize --json "$out.jtr" >"$out.summary.json" 2>"$dir/err"; then
		fail "$scenario: jitt summarize --json" "$(cat "$dir/err")"
		continue
	fi
	exported=1
	for fmt in chrome:json perfetto:pftrace folded:folded; do
		if ! "$bin/jitt" export --format=${fmt%:*} -o "$out.${fmt#*:}" "$out.jtr" \
			2>"$dir/err"; then
			fail "$scenario: jitt export --format=${fmt%:*}" "$(cat "$dir/err")"
			exported=
		fi
	done
	[ -n "$exported" ] || continue
	# The timeline checks save their self times, so `agree` reads each export once.
	checked "$scenario: chrome" verify chrome "$out.json" --save "$dir/chrome.self.json"
	checked "$scenario: perfetto" verify perfetto "$out.pftrace" "$desc" \
		--save "$dir/perfetto.self.json"
	checked "$scenario: folded" verify folded "$out.folded"
	if [ ! -s "$dir/chrome.self.json" ] || [ ! -s "$dir/perfetto.self.json" ]; then
		fail "$scenario: self time agrees" "a timeline could not be read (above)"
		continue
	fi
	checked "$scenario: self time agrees with the summary" verify agree \
		"$out.summary.json" "$dir/chrome.self.json" "$dir/perfetto.self.json" \
		"$out.folded" --desc "$desc" --save "$dir/agree.json"
	# The culprit's share in every export. Hang: it runs to the freeze, hundreds of ms
	# (the detector fires after 400 ms of the frame), the export's time as the summary's.
	# The others spin 120 ms (many-short) to 210 ms in all, of which the ring may have
	# lost the oldest part (many-short kept 115 ms of 120): half is a margin.
	min=50
	[ $scenario != hang ] || min=100
	if [ -s "$dir/agree.json" ]; then
		checked "$scenario: the culprit $culprit's self time is large" verify culprit \
			"$dir/agree.json" "$culprit" $min
	else
		fail "$scenario: the culprit $culprit's self time is large" "agree saved no times"
	fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
