#!/bin/sh
# Runs one board's tests: the unit-test program and the `jitt` command's golden outputs.
# POSIX sh and busybox only, so it runs the same natively, under qemu-user (--qemu) and
# inside a qemu board. Prints every result, ends with "N passed, N failed" and writes that
# line to --result FILE for tests/total.sh.
#
# usage: run.sh --bin DIR [--board NAME] [--qemu "CMD"] [--fakes DIR] [--golden DIR]
#               [--result FILE] [--static-check]
# --static-check (on the build machine, which has `file` and the link maps): every program
# is statically linked and its link map names no object from outside musl, gcc and our build.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin= board=native qemu= fakes=$here/../sim/fakes golden=$here/golden result= static_check=
while [ $# -gt 0 ]; do
	case $1 in
	--bin) bin=$2; shift 2 ;;
	--board) board=$2; shift 2 ;;
	--qemu) qemu=$2; shift 2 ;;
	--fakes) fakes=$2; shift 2 ;;
	--golden) golden=$2; shift 2 ;;
	--result) result=$2; shift 2 ;;
	--static-check) static_check=1; shift ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "$bin" ] || { echo "run.sh: --bin DIR is required" >&2; exit 2; }

echo "== tests for $board${qemu:+ (under $qemu)}"
passed=0 failed=0

# Runs a program that counts its own tests (its last line is "N passed, N failed"), shows
# its output and adds its counts to ours; a failing status with no failure counted, or no
# result line, is one failure more. usage: counted NAME COMMAND...
counted() {
	name=$1
	shift
	out=$(mktemp)
	"$@" >"$out" 2>&1
	status=$?
	cat "$out"
	line=$(tail -n 1 "$out")
	rm -f "$out"
	case $line in
	*" passed, "*" failed")
		p=${line%% passed*}
		f=${line#*passed, }
		f=${f%% failed*}
		passed=$((passed + p)) failed=$((failed + f))
		[ "$status" -eq 0 ] || [ "$f" -gt 0 ] || failed=$((failed + 1))
		;;
	*)
		echo "FAIL $name ended without a result line (exit status $status)"
		failed=$((failed + 1))
		;;
	esac
}

counted unit-tests $qemu "$bin/unit-tests" --fakes "$fakes"
# libjitt's runtime, linked with the blocking-call wrappers as an app is.
counted runtime-tests $qemu "$bin/runtime-tests"
# Each jank scenario of the sim app, end to end (python3 reads the summaries: on the build
# machine, natively or under qemu-user; not inside a qemu board).
if [ "$board" = host ] || [ -n "$qemu" ]; then
	counted sim-check sh "$here/sim-check.sh" "$bin" "$qemu"
fi

# One golden comparison: what (the test's name), the expected file, the output.
golden_check() {
	if [ "$3" = "$(cat "$2")" ]; then
		echo "ok   $1"
		passed=$((passed + 1))
	else
		echo "FAIL $1; expected:"
		cat "$2"
		echo "  got:"
		echo "$3"
		failed=$((failed + 1))
	fi
}

# Golden outputs of `jitt hal --root <fake tree>`. The timer and scheduling sections describe
# the machine the test runs on, not the fake tree, so they are left out of the comparison.
for expected in "$golden"/hal-*.txt; do
	[ -f "$expected" ] || continue
	name=${expected##*/hal-}
	name=${name%.txt}
	golden_check "jitt hal --root $name" "$expected" "$($qemu "$bin/jitt" hal --root \
		"$fakes/$name" 2>&1 | awk '/^[a-z]/ { skip = ($1 == "timer:" || $1 == "scheduling:") } !skip')"
done

# The timer section is the machine's own, but it must say how fine the timer really is (a
# timer coarser than its rate: a VM's TSC moved 21 ticks at a time while its rate said
# 0.48 ns per tick).
hal_out=$($qemu "$bin/jitt" hal 2>&1)
if printf '%s\n' "$hal_out" | grep -q '^  resolution: [0-9][0-9]* ticks* ([0-9.]* ns)'; then
	echo "ok   jitt hal prints the timer's resolution ($(printf '%s\n' "$hal_out" |
		sed -n 's/^  resolution: \([^,]*\),.*/\1/p'))"
	passed=$((passed + 1))
else
	echo "FAIL jitt hal prints no timer resolution:"
	printf '%s\n' "$hal_out" | head -n 6
	failed=$((failed + 1))
fi

# Golden outputs of `jitt decode` on committed trace files (the first line names the path,
# which differs between machines). The files come from another machine: their modules'
# symbols are not here, so names print as build-id+offset everywhere.
for trace in "$golden"/decode-*.jtr; do
	[ -f "$trace" ] || continue
	golden_check "jitt decode ${trace##*/}" "${trace%.jtr}.txt" \
		"$($qemu "$bin/jitt" decode "$trace" 2>&1 | tail -n +2)"
	summary=$golden/summarize-${trace##*/decode-}
	summary=${summary%.jtr}.txt
	[ -f "$summary" ] && golden_check "jitt summarize ${trace##*/}" "$summary" \
		"$($qemu "$bin/jitt" summarize "$trace" 2>&1 | tail -n +2)"
done

# `jitt export` read back by independent tools (a strict JSON parser, protoc --decode_raw):
# on the host board only, where board/common/deps.sh installed them. Its counts join ours.
if [ "$board" = host ]; then
	counted rooms-check.sh sh "$here/rooms-check.sh" "$here/.."
	counted export-check.sh sh "$here/export-check.sh" "$bin"
	# Every sim scenario exported three ways, each format checked by an independent reader
	# (Perfetto against Perfetto's own protos), self time equal to the summary's, the
	# hang's culprit included; then the Chrome and folded files loaded into speedscope in
	# headless Chromium, the screenshots kept in $(O)/viewer-shots (docs/exports.md).
	scenarios=$bin/../export-scenarios
	rm -rf "$scenarios"
	counted export-scenarios.sh sh "$here/export-scenarios.sh" "$bin" "$scenarios"
	set --
	for c in "$scenarios"/*.culprit; do
		[ -f "$c" ] || continue
		s=${c%.culprit}
		for f in "$s.json" "$s.folded"; do
			[ -f "$f" ] && set -- "$@" "$f:$(cat "$c")"
		done
	done
	if [ $# -gt 0 ]; then
		counted viewer-check.sh sh "$here/viewer-check.sh" "$bin" "$bin/../viewer-shots" "$@"
	fi
	# Frames made slow by other processes on the UI thread's CPU, not by code; the summary
	# must say preempted, not name an innocent function (host: the hogs are the app run again
	# natively).
	counted preempt-check.sh sh "$here/preempt-check.sh" "$bin"
	# An app built the way an OEM would, from $(O)/lib/libjitt.a and its flags file.
	counted libjitt-check.sh sh "$here/libjitt-check.sh" "$bin/../lib" "$bin" musl-gcc
	# The installed SDK in a make project (pkg-config) and a CMake one: PIE on glibc, an
	# instrumented shared library, a tool left alone; and a static musl program.
	counted sdk-check.sh sh "$here/sdk-check.sh" "$here/.." "$bin"
	# Real programs from Debian's sources (duktape, memcached), built by their own build
	# systems through pkg-config: a slow moment of each, seen by jitt, perf and schedstat.
	counted real-programs.sh sh "$here/real-programs.sh" "$here/.." "$bin" "$bin/../real-moments"
	# longjmp, siglongjmp, a fortified longjmp and C++ exceptions leave no frame open.
	counted nonlocal-check.sh sh "$here/nonlocal-check.sh" "$here/.." "$bin"
	# Sleds (x86_64): a program built with jitt-sleds.pc's flags gives its plain build's
	# results untraced and traced (every argument and result register, the stack, longjmp,
	# threads), and its traces name its functions.
	counted sleds-check.sh sh "$here/sleds-check.sh" "$here/.." "$bin"
	# make install into a temporary folder: the tree and its modes, the init files, the
	# settings file, and a service built from the installed SDK (docs/oem.md).
	counted install-check.sh sh "$here/install-check.sh" "$here/.." host "$(cd "$bin/.." && pwd)"
	# Many apps, many uids (docs/oem.md): two apps, jittd and the system uid under uids of
	# their own; who may deposit, list, read, replace, delete and trigger what (root only:
	# otherwise one skip line).
	counted uids-check.sh sh "$here/uids-check.sh" "$bin"
	# The spool under load and faults: 40 traced apps under four uids, jittd running,
	# starved, stopped and killed, a small tmpfs filled and freed; the caps at every sample,
	# each trace summarised once or counted as dropped (root only: otherwise one skip line).
	counted spool-stress.sh sh "$here/spool-stress.sh" "$bin"
	# `jitt exclude`: bad input, and the round trip (trace, exclude, rebuild) in real builds.
	counted exclude-check.sh sh "$here/exclude-check.sh" "$bin" musl-gcc
	# `jitt inlined`: bad input, and the round trip (plain and instrumented, list, rebuild).
	counted inlined-check.sh sh "$here/inlined-check.sh" "$bin" musl-gcc
	# A stripped program named through its debug file: debuglink, and Debian's debuginfod.
	counted symbols-check.sh sh "$here/symbols-check.sh" "$bin"
	# The uploader's TLS transport against nginx: stored, refused certificates, timeouts.
	counted tls-check.sh sh "$here/tls-check.sh" "$bin"
	# The reference collector over TLS on 127.0.0.1, driven by curl, openssl and python3.
	counted collector-check.sh sh "$here/collector-check.sh" "$bin"
	# The uploader end to end: jittd, the sim app and the collector (consent, network,
	# faults, kill -9, revoke, budget, planted identifiers, nginx in front).
	counted upload-check.sh sh "$here/upload-check.sh" "$bin"
fi
# jittd end to end: summaries, quarantine, a full disk, kill -9 rounds, jitt status; on the
# build machine, natively or under qemu-user (not inside a qemu board: no python3 there).
if [ "$board" = host ] || [ -n "$qemu" ]; then
	counted jittd-check.sh sh "$here/jittd-check.sh" "$bin" "$qemu"
fi
# A jittd killed with -9 under load and restarted at once, as the init files start it: the
# new one waits for the old one to be gone, serves, and summarises what it left.
if [ "$board" = host ]; then
	counted restart-check.sh sh "$here/restart-check.sh" "$here/.." "$bin"
fi
# The cross-built transport against the build machine's nginx, under qemu-user (the host
# board runs it above).
if [ "$board" != host ] && [ -n "$qemu" ]; then
	counted tls-check.sh sh "$here/tls-check.sh" "$bin" "$qemu"
fi

# The summary in JSON of the committed trace, and what the commands answer to bad input:
# a clear error and status 1 for a file that is not a trace, a usage line and status 2 for
# bad arguments.
golden_json=$golden/summarize-synthetic.json
[ -f "$golden_json" ] && golden_check "jitt summarize --json decode-synthetic.jtr" \
	"$golden_json" "$($qemu "$bin/jitt" summarize --json "$golden/decode-synthetic.jtr" 2>&1)"
bad=$(mktemp)
printf 'JITTRACE this is not a trace file at all\n' >"$bad"
expect_status() { # what, wanted status, wanted text in stderr, command...
	what=$1 want=$2 text=$3
	shift 3
	err=$($qemu "$bin/jitt" "$@" 2>&1 >/dev/null)
	got=$?
	if [ "$got" -eq "$want" ] && printf '%s' "$err" | grep -q -- "$text"; then
		echo "ok   $what"
		passed=$((passed + 1))
	else
		echo "FAIL $what: status $got (wanted $want), said: $err"
		failed=$((failed + 1))
	fi
}
expect_status "jitt summarize: bad file" 1 "$bad" summarize "$bad"
expect_status "jitt summarize: missing file" 1 "No such file" summarize "$bad.missing"
expect_status "jitt summarize: no file" 2 "usage" summarize
expect_status "jitt summarize: bad -k" 2 "-k" summarize -k 0 "$bad"
expect_status "jitt export: bad file" 1 "$bad" export --format=chrome "$bad"
expect_status "jitt export: bad format" 2 "usage" export --format=svg "$bad"
expect_status "jitt diff: bad file" 1 "$bad" diff "$bad" "$golden/decode-synthetic.jtr"
expect_status "jitt diff: one file" 2 "usage" diff "$bad"
# A FIFO, a folder or a device named as a trace is refused at once, by what it is (hostile
# arguments: a FIFO waited for a writer forever, a folder said "No such device"). `timeout`
# only turns a hang into a failure; it measures nothing.
limit=
command -v timeout >/dev/null 2>&1 && limit="timeout 10"
mkfifo "$bad.fifo" && mkdir "$bad.dir"
for cmd in decode summarize "export --format=folded" diff; do
	for file in "$bad.fifo=a FIFO" "$bad.dir=a directory" "/dev/zero=a character device"; do
		kind=${file#*=} file=${file%%=*}
		set -- $cmd "$file"
		[ "$cmd" = diff ] && set -- diff "$golden/decode-synthetic.jtr" "$file"
		err=$($limit $qemu "$bin/jitt" "$@" 2>&1 >/dev/null)
		got=$?
		what="jitt $cmd: $kind is refused"
		if [ "$got" -eq 1 ] && printf '%s' "$err" | grep -qF -- "$file: $kind, not a trace file"
		then
			echo "ok   $what"
			passed=$((passed + 1))
		else
			echo "FAIL $what: status $got (wanted 1), said: $err"
			failed=$((failed + 1))
		fi
	done
done
rm -rf "$bad.fifo" "$bad.dir"

# The command line of every subcommand (agent/cli/cli_args.c), as a transcript: each
# "$ jitt ARGS" line of tests/golden/cli-args.txt is run in the golden folder, and followed
# by what it wrote to standard output and to standard error and its exit status. -h prints
# the synopsis and the help on stdout and exits 0; a bad option, a missing value or a bad
# operand prints one line and the synopsis on stderr and exits 2. (ARGS are split at
# spaces. Nothing here may write a file: the golden folder is the source tree's; -o is
# tested in export-check.sh.)
cli_transcript() {
	abs_bin=$(cd "$bin" && pwd)
	set -f
	grep '^\$ jitt' "$golden/cli-args.txt" | while IFS= read -r line; do
		set -- ${line#\$ jitt}
		printf '%s\n' "$line"
		(cd "$golden" && $qemu "$abs_bin/jitt" "$@" >"$bad.out" 2>"$bad.err")
		status=$?
		[ -s "$bad.out" ] && { echo "[stdout]"; cat "$bad.out"; }
		[ -s "$bad.err" ] && { echo "[stderr]"; cat "$bad.err"; }
		echo "[exit $status]"
		echo
	done
	set +f
	rm -f "$bad.out" "$bad.err"
}
[ -f "$golden/cli-args.txt" ] &&
	golden_check "jitt's command lines (cli-args.txt)" "$golden/cli-args.txt" "$(cli_transcript)"
rm -f "$bad"

# Static musl links only: glibc's objects (/usr/lib/<triplet>-gnu/, /usr/<triplet>/lib/)
# must never get in, so every input the linker loaded must come from an allowed place
# (our build, musl, gcc, or gcc's own temporary LTO objects).
if [ -n "$static_check" ]; then
	build=$(cd "$bin/.." && pwd)
	for prog in "$bin"/*; do
		[ -f "$prog.map" ] || continue
		what="${prog##*/} is static and links musl only"
		strangers=$(grep -oE '/[^ ()]+\.(o|a|so[.0-9]*)' "$prog.map" | sort -u | grep -vE \
			"^($build/|/usr/lib/[a-z0-9_]+-linux-musl[a-z]*/|/usr/lib/gcc(-cross)?/)" |
			grep -vE '/cc[A-Za-z0-9]+\.(ltrans[0-9]*(\.ltrans)?|debug\.temp)\.o$')
		if file -b "$prog" | grep -q "statically linked" && [ -z "$strangers" ]; then
			echo "ok   $what"
			passed=$((passed + 1))
		else
			echo "FAIL $what: $(file -b "$prog" | cut -d, -f1-5) ${strangers:+; foreign objects: $strangers}"
			failed=$((failed + 1))
		fi
	done
fi

echo "$passed passed, $failed failed"
[ -z "$result" ] || echo "$board $passed passed, $failed failed" >"$result"
[ "$failed" -eq 0 ]
