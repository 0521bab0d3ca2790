#!/bin/sh
# `jitt export` checked by readers that share no code with it (tests/export_verify.py):
# Chrome JSON made strict with every B matched by its E per thread, Perfetto protobuf by
# `protoc --decode` against Perfetto's own protos, folded stacks by their line format. The traces: the synthetic one tests/test_export.c
# writes (kept with JITT_EXPORT_KEEP) and the committed golden one. Then the command line:
# usage errors exit 2, bad trace files exit 1 naming the file, -o leaves no half file and
# replaces only a file (a device or a FIFO is written to; a symlink, a folder or the trace
# itself is refused).
# Host only (python3 and protoc come from board/common/deps.sh).
#
# usage: export-check.sh BIN_DIR     prints "ok what" / "FAIL what", then "N passed, N failed"
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: export-check.sh BIN_DIR}
jitt=$bin/jitt
passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() {
	echo "ok   $1"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL $1${2:+: $2}"
	failed=$((failed + 1))
}

# The Chrome and Perfetto checks are tests/export_verify.py's (strict JSON, E named as its
# B; Perfetto through protoc against Perfetto's own protos). Each prints "slices N".
desc=${JITT_PERFETTO_DESC:-$here/../../shared/testdata/perfetto_trace.desc}
[ -f "$desc" ] || desc=/work/shared/testdata/perfetto_trace.desc
check_chrome() {
	r=$(python3 "$here/export_verify.py" chrome "$1") || { echo "$r"; return 1; }
	echo "$r" | sed -n 's/.* \([0-9][0-9]*\) slices.*/slices \1/p'
}
check_perfetto() {
	r=$(python3 "$here/export_verify.py" perfetto "$1" "$desc") || { echo "$r"; return 1; }
	echo "$r" | sed -n 's/.* \([0-9][0-9]*\) slices.*/slices \1/p'
}

# Folded stacks: "frame;...;frame COUNT", COUNT a positive integer, no empty frame.
check_folded() {
	python3 - "$1" <<'EOF'
import re, sys
data = open(sys.argv[1], "rb").read().decode("utf-8")
lines = data.split("\n")
if lines[-1] != "" or len(lines) < 2:
    sys.exit("no lines, or no final newline")
for line in lines[:-1]:
    m = re.fullmatch(r"([^;\n]+(?:;[^;\n]+)*) ([1-9][0-9]*)", line)
    if not m:
        sys.exit("bad line %r" % line)
print("lines", len(lines) - 1)
EOF
}

# The synthetic trace of the unit test, and its exports made by the library.
if JITT_EXPORT_KEEP=$tmp "$bin/unit-tests" export >"$tmp/unit.txt" 2>&1 &&
	[ -s "$tmp/export.jtr" ]; then
	ok "unit-tests export kept its trace and exports"
else
	fail "unit-tests export kept its trace and exports" "$(tail -n 3 "$tmp/unit.txt")"
fi

for trace in "$tmp/export.jtr" "$here/golden/decode-synthetic.jtr"; do
	name=${trace##*/}
	[ -f "$trace" ] || continue
	for fmt in chrome perfetto folded; do
		out=$tmp/$name.$fmt
		if ! "$jitt" export --format=$fmt -o "$out" "$trace" 2>"$tmp/err.txt"; then
			fail "jitt export --format=$fmt $name" "$(cat "$tmp/err.txt")"
			continue
		fi
		case $fmt in
		chrome) res=$(check_chrome "$out" 2>&1) ;;
		perfetto) res=$(check_perfetto "$out" 2>&1) ;;
		folded) res=$(check_folded "$out" 2>&1) ;;
		esac
		if [ $? -eq 0 ]; then
			ok "jitt export --format=$fmt $name: $res"
		else
			fail "jitt export --format=$fmt $name" "$res"
		fi
		eval "res_$fmt=\$res"
	done
	# The same slices in both timeline formats (each checked balanced above).
	if [ -n "$res_chrome" ] && [ "$res_perfetto" = "$res_chrome" ]; then
		ok "$name: Chrome and Perfetto agree ($res_chrome, all ended)"
	else
		fail "$name: Chrome and Perfetto agree" "chrome $res_chrome, perfetto $res_perfetto"
	fi
	# The command writes what the library writes.
	if [ "$name" = export.jtr ]; then
		if cmp -s "$out" "$tmp/export.folded"; then
			ok "jitt export -o writes what agent_export_folded writes"
		else
			fail "jitt export -o writes what agent_export_folded writes"
		fi
	fi
done
for f in export.json export.pftrace; do
	[ -f "$tmp/$f" ] || continue
	case $f in
	*.json) res=$(check_chrome "$tmp/$f" 2>&1) ;;
	*) res=$(check_perfetto "$tmp/$f" 2>&1) ;;
	esac
	if [ $? -eq 0 ]; then
		ok "unit test's $f: $res"
	else
		fail "unit test's $f" "$res"
	fi
done

# The command line: usage errors, bad files, and -o.
expect() { # what, expected status, stderr must contain (or ""), command...
	what=$1 want=$2 says=$3
	shift 3
	"$@" >"$tmp/out.txt" 2>"$tmp/err.txt"
	got=$?
	if [ "$got" -eq "$want" ] && { [ -z "$says" ] || grep -qF -- "$says" "$tmp/err.txt"; }; then
		ok "$what"
	else
		fail "$what" "exit $got (want $want): $(head -n 2 "$tmp/err.txt")"
	fi
}
golden=$here/golden/decode-synthetic.jtr
expect "jitt export with no arguments: usage" 2 "usage: jitt export" "$jitt" export
expect "jitt export --format=svg: usage" 2 "usage: jitt export" \
	"$jitt" export --format=svg "$golden"
expect "jitt export without --format: usage" 2 "usage: jitt export" "$jitt" export "$golden"
expect "jitt export -x: usage" 2 "usage: jitt export" "$jitt" export --format=chrome -x "$golden"
expect "jitt export --help" 0 "" "$jitt" export --help
# Each usage error says what is wrong, for a first export by hand: the valid formats, the
# missing one.
expect "jitt export --format=json: names the valid formats" 2 \
	"the formats are chrome, folded and perfetto, not 'json'" "$jitt" export --format=json "$golden"
expect "jitt export without --format: asks which" 2 "which format?" "$jitt" export "$golden"
expect "jitt export --format=Chrome: the name in any case" 0 "" \
	"$jitt" export --format=Chrome "$golden"
expect "jitt export --output=FILE" 0 "" "$jitt" export --format=folded --output="$tmp/out.folded" "$golden"
if cmp -s "$tmp/out.folded" "$tmp/decode-synthetic.jtr.folded"; then
	ok "--output=FILE writes what -o FILE writes"
else
	fail "--output=FILE writes what -o FILE writes"
fi
"$jitt" export --help | grep -q "in nanoseconds" && ok "--help says folded counts are ns" ||
	fail "--help says folded counts are ns"
# Binary to a terminal: refused, unless -o - insists. script(1) gives the command a tty.
if command -v script >/dev/null; then
	script -qec "$jitt export --format=perfetto $golden" /dev/null >"$tmp/tty.txt" 2>&1
	st=$?
	if [ $st -eq 2 ] && grep -q "not writing it to a terminal" "$tmp/tty.txt"; then
		ok "perfetto to a terminal: refused with a reason"
	else
		fail "perfetto to a terminal: refused with a reason" "status $st: $(head -c 200 "$tmp/tty.txt")"
	fi
	script -qec "$jitt export --format=perfetto -o - $golden" /dev/null >"$tmp/tty.txt" 2>&1
	if [ $? -eq 0 ] && [ "$(wc -c <"$tmp/tty.txt")" -gt 100 ]; then
		ok "perfetto to a terminal with -o -: written"
	else
		fail "perfetto to a terminal with -o -: written"
	fi
else
	echo "skip perfetto to a terminal: no script(1)"
fi
head -c 4096 /dev/urandom >"$tmp/garbage.jtr"
head -c 300 "$golden" >"$tmp/torn.jtr"
for bad in garbage.jtr torn.jtr missing.jtr; do
	for fmt in chrome folded perfetto; do
		expect "jitt export --format=$fmt $bad: exit 1 naming the file" 1 "$tmp/$bad" \
			"$jitt" export --format=$fmt "$tmp/$bad"
	done
done
if [ ! -s "$tmp/out.txt" ]; then
	ok "nothing written for a bad file"
else
	fail "nothing written for a bad file"
fi
expect "jitt export -o into a missing folder: exit 1" 1 "$tmp/no/such/dir/x.json" \
	"$jitt" export --format=chrome -o "$tmp/no/such/dir/x.json" "$golden"
expect "jitt export -o over a bad file: exit 1" 1 "$tmp/garbage.jtr" \
	"$jitt" export --format=chrome -o "$tmp/never.json" "$tmp/garbage.jtr"
# An export holds what the trace holds: 0600 whatever the umask, and -o never writes
# through a link planted at its temporary name.
(umask 022 && "$jitt" export --format=folded -o "$tmp/mode.folded" "$golden" 2>/dev/null)
mode=$(stat -c %a "$tmp/mode.folded" 2>/dev/null)
if [ "$mode" = 600 ]; then ok "-o writes 0600 under umask 022"; else fail "-o writes 0600 under umask 022" "mode $mode"; fi
# -o replaces a file by a rename, and so would replace whatever else had the name: a device
# or a FIFO is written to instead, a symbolic link and the trace itself are refused, each
# left as it was (agent/cli/cli_out.c).
"$jitt" export --format=folded "$golden" >"$tmp/want.folded"
expect "-o /dev/null: written to, exit 0" 0 "" "$jitt" export --format=folded -o /dev/null "$golden"
if [ -c /dev/null ]; then ok "-o /dev/null: still a character device"; else
	fail "-o /dev/null: still a character device" "$(ls -l /dev/null)"
	# As root a broken build really replaces it: put the machine's back at once.
	[ "$(id -u)" = 0 ] && rm -f /dev/null && mknod -m 666 /dev/null c 1 3
fi
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/from-fifo" &
reader=$!
expect "-o FIFO: written to, exit 0" 0 "" "$jitt" export --format=folded -o "$tmp/fifo" "$golden"
if [ -p "$tmp/fifo" ]; then
	wait $reader # the export closed its end: the reader has all of it
	ok "-o FIFO: still a FIFO"
	if cmp -s "$tmp/from-fifo" "$tmp/want.folded"; then ok "-o FIFO: its reader got the export"; else
		fail "-o FIFO: its reader got the export"
	fi
else
	kill $reader 2>/dev/null # it waits on the FIFO that was renamed over
	fail "-o FIFO: still a FIFO" "$(ls -l "$tmp/fifo")"
fi
echo "the link's target" >"$tmp/target"
ln -s "$tmp/target" "$tmp/link"
expect "-o SYMLINK: refused, exit 1" 1 "$tmp/link: a symbolic link" \
	"$jitt" export --format=folded -o "$tmp/link" "$golden"
if [ -L "$tmp/link" ] && [ "$(cat "$tmp/target")" = "the link's target" ]; then
	ok "-o SYMLINK: the link and its target unchanged"
else
	fail "-o SYMLINK: the link and its target unchanged"
fi
cp "$golden" "$tmp/same.jtr"
expect "-o X.jtr X.jtr: refused, exit 1" 1 "$tmp/same.jtr: a file this command reads" \
	"$jitt" export --format=folded -o "$tmp/same.jtr" "$tmp/same.jtr"
ln "$tmp/same.jtr" "$tmp/hard.jtr"
expect "-o a hard link of the trace: refused, exit 1" 1 "a file this command reads" \
	"$jitt" export --format=folded -o "$tmp/hard.jtr" "$tmp/same.jtr"
if cmp -s "$tmp/same.jtr" "$golden"; then ok "-o X.jtr X.jtr: the trace unchanged"; else
	fail "-o X.jtr X.jtr: the trace unchanged"
fi
mkdir "$tmp/folder"
expect "-o FOLDER: refused, exit 1" 1 "$tmp/folder: a directory" \
	"$jitt" export --format=folded -o "$tmp/folder" "$golden"
echo old >"$tmp/old.folded"
expect "-o an existing file: replaced, exit 0" 0 "" \
	"$jitt" export --format=folded -o "$tmp/old.folded" "$golden"
if cmp -s "$tmp/old.folded" "$tmp/want.folded"; then ok "-o an existing file: replaced whole"; else
	fail "-o an existing file: replaced whole"
fi
expect "jitt export --max-stack 0: usage" 2 "--max-stack" \
	"$jitt" export --format=folded --max-stack 0 "$golden"
expect "jitt export --max-stack 1: exit 0, the cut counted" 0 "cut at the root side" \
	"$jitt" export --format=folded --max-stack 1 "$golden"
if awk '{ n = split($1, f, ";"); if (n > 3) bad = 1 } END { exit bad }' "$tmp/out.txt"; then
	ok "--max-stack 1: a label, the cut and one frame a line"
else
	fail "--max-stack 1: a label, the cut and one frame a line"
fi
# Names from a summary's JSON and file names reach the terminal escaped (hostile names):
# no ESC, CR, BEL, C1 CSI or bidi override in what jitt diff, summarize and decode print.
# Version 3, so the evil name also reaches diff's functions table and its chain line.
for side in a b; do
	if [ $side = a ]; then split='"running_ns":8,"preempted_ns":1'; else split='"running_ns":1,"preempted_ns":8'; fi
	printf '%s' '{"schema":"jitt.summary","version":3,"thread":"ui\u001b[2J","modules":[],' \
		'"functions":[[-1,0,"f\u001b]0;pwn\u0007\r\n\u009b\u202e"],[-1,16,"'$side'"]],' \
		'"window":{"ns":10,'"$split"',"blocked_ns":1,"sched":{"source":"perf"}},' \
		'"top_window":[[0,2,1,0,0,1]],"chains":[[[1,3,1,0,0,0],[0,2,2,0,0,1,4]]],' \
		'"contexts":[{"path":[1,0],"self_ns":[1,2],"base_ns":[0,0]}]}' >"$tmp/evil-$side.json"
done
evil=$(printf '%s/x\033[2J\r.jtr' "$tmp")
cp "$golden" "$evil"
raw=$(printf '[\033\r\007]|\302\233|\342\200\256')
for json in "" --json; do
	"$jitt" diff $json "$tmp/evil-a.json" "$tmp/evil-b.json" >"$tmp/out.txt" 2>&1
	st=$?
	if [ $st -eq 0 ] && ! grep -qE "$raw" "$tmp/out.txt" && grep -qE 'x1b|u001b' "$tmp/out.txt"; then
		ok "jitt diff${json:+ $json}: names from summaries escaped"
	else
		fail "jitt diff${json:+ $json}: names from summaries escaped" "status $st"
	fi
done
for cmd in summarize decode; do
	"$jitt" $cmd "$evil" >"$tmp/out.txt" 2>&1
	if grep -qE "$raw" "$tmp/out.txt" || ! grep -qF 'x\x1b[2J\x0d.jtr' "$tmp/out.txt"; then
		fail "jitt $cmd: a file name with escapes is printed escaped"
	else
		ok "jitt $cmd: a file name with escapes is printed escaped"
	fi
done
leftovers=$(ls "$tmp" | grep -E '\.tmp-|^never\.json$')
if [ -z "$leftovers" ]; then
	ok "-o leaves no temporary or half file"
else
	fail "-o leaves no temporary or half file" "$leftovers"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
