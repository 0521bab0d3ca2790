#!/bin/sh
# `jitt export` files opened in a real viewer (what it really loads, not what a checker
# accepts): speedscope (npm package, pinned below) in headless Chromium (Debian's), driven
# by tests/viewer-drive.js over the DevTools protocol on a pipe, the app and the file served
# on 127.0.0.1. For each FILE:
#   import      speedscope imports it with no console warning or error and no page error
#               (speedscope 1.25 warns "... Doing nothing instead." for each E event it
#               cannot match to its B), with the importer the extension says, and shows
#               the profile view (waited for, bounded only to catch a hang);
#   culprit     the profile speedscope loaded, read back through its own Export (Ctrl+S),
#               has a frame named CULPRIT with time in it, in one of its threads;
#   screenshot  OUT_DIR/<file name>-time-order.png (speedscope's flame chart, calls in time
#               order) and -left-heavy.png, of the culprit's thread: kept as test artefacts.
#
# usage: viewer-check.sh BIN_DIR OUT_DIR FILE:CULPRIT...
#   BIN_DIR    the host build's bin/ (speedscope is unpacked beside it, in BIN_DIR/../viewers)
#   OUT_DIR    where the screenshots go (made if missing)
#   FILE       a `jitt export --format=chrome` file named *.json, or --format=folded *.folded
#   CULPRIT    the function the file must show (jank-sim prints it: "injected ... culprit=NAME")
# e.g.  viewer-check.sh build/host/bin build/host/viewer-shots /tmp/hang.json:sim_culprit_hang \
#           /tmp/hang.folded:sim_culprit_hang
# Prints "ok   viewer ..." / "FAIL viewer ...: why" and ends with "N passed, N failed"; exit
# status 0 when nothing failed. When node or Chromium cannot start here, prints
# "skip viewer-check: <reason>" then "0 passed, 0 failed" and exits 0 (CI installs both:
# board/common/deps.sh). A bad export is never a skip.
#
# speedscope comes from the npm registry once, by `npm pack` into DL_DIR (default build/dl,
# as in the Makefile), checked against the sha512 below (npm's "integrity" of the package),
# and is unpacked into BIN_DIR/../viewers/speedscope-VERSION; later runs use the tarball
# already there, offline. A tarball whose hash differs is refused.
# Environment: DL_DIR, CHROMIUM (default /usr/bin/chromium), JITT_TEST_PATIENCE (scales the
# bounds of the waits, 6 by default as in tests/check-lib.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
SPEEDSCOPE_VERSION=1.25.0
SPEEDSCOPE_SHA512=cpf9HWTZf1ijLXBJrk87Ve/54tnYx6rlf0gUThvn3ook6h63hLXVOQiMf44PT+XoV503cPfvfiT5gP5vojp6Ag==

if [ $# -lt 3 ]; then
	echo "usage: viewer-check.sh BIN_DIR OUT_DIR FILE:CULPRIT..." >&2
	exit 2
fi
bin=$1 out=$2
shift 2
. "$here/check-lib.sh"
dl=${DL_DIR:-$here/../build/dl}
viewers=$(cd "$bin/.." && pwd)/viewers
app=$viewers/speedscope-$SPEEDSCOPE_VERSION
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

skip() {
	echo "skip viewer-check: $1"
	echo "0 passed, 0 failed"
	exit 0
}

# The sha512 of a file in base64, as npm writes "integrity" (without its "sha512-").
sha512() {
	node -e 'const c = require("crypto"), fs = require("fs");
		process.stdout.write(c.createHash("sha512").update(fs.readFileSync(process.argv[1]))
			.digest("base64"))' "$1"
}

# The pinned speedscope, fetched once and checked, unpacked once per tarball: prints why
# not and returns 1 when it cannot be had.
speedscope() {
	tgz=$dl/speedscope-$SPEEDSCOPE_VERSION.tgz
	if [ ! -f "$tgz" ]; then
		mkdir -p "$dl" && part=$(mktemp -d "$dl/.speedscope.XXXXXX") || return 1
		if ! (cd "$part" && npm pack --silent "speedscope@$SPEEDSCOPE_VERSION") \
			>"$tmp/npm.txt" 2>&1; then
			echo "npm pack speedscope@$SPEEDSCOPE_VERSION failed: $(tail -n 2 "$tmp/npm.txt")"
			rm -rf "$part"
			return 1
		fi
		got=$(sha512 "$part/speedscope-$SPEEDSCOPE_VERSION.tgz")
		if [ "$got" != "$SPEEDSCOPE_SHA512" ]; then
			echo "the registry's speedscope-$SPEEDSCOPE_VERSION.tgz has sha512 $got," \
				"expected $SPEEDSCOPE_SHA512: refused"
			rm -rf "$part"
			return 1
		fi
		mv "$part/speedscope-$SPEEDSCOPE_VERSION.tgz" "$tgz" && rm -rf "$part" || return 1
	fi
	got=$(sha512 "$tgz")
	if [ "$got" != "$SPEEDSCOPE_SHA512" ]; then
		echo "$tgz has sha512 $got, expected $SPEEDSCOPE_SHA512: refused (remove it to fetch again)"
		return 1
	fi
	[ "$(cat "$app/.sha512" 2>/dev/null)" = "$got" ] && return 0
	rm -rf "$app" "$app.part" && mkdir -p "$app.part" &&
		tar xzf "$tgz" -C "$app.part" package/dist/release package/LICENSE package/package.json &&
		mv "$app.part/package" "$app" && rm -rf "$app.part" &&
		echo "$got" >"$app/.sha512" || { echo "cannot unpack $tgz into $app"; return 1; }
}

v=$(node --version 2>&1) || skip "node cannot start: $v"
probe=$(node "$here/viewer-drive.js" probe 2>&1)
case $? in
0) ;;
77) skip "${probe#skip }" ;;
*) fail "viewer: chromium probe" "$probe" ;;
esac
if why=$(speedscope); then
	ok "viewer: speedscope $SPEEDSCOPE_VERSION (sha512 checked) in ${app#"$(pwd)"/}"
else
	fail "viewer: speedscope $SPEEDSCOPE_VERSION" "$why"
	echo "$passed passed, $failed failed"
	exit 1
fi
mkdir -p "$out"

for arg in "$@"; do
	file=${arg%:*} culprit=${arg##*:}
	name=${file##*/}
	if [ "$file" = "$arg" ] || [ -z "$culprit" ]; then
		fail "viewer $arg" "expected FILE:CULPRIT"
		continue
	fi
	case $name in
	*.json | *.folded) ;;
	*) fail "viewer $name" "not a .json (Chrome) or .folded export"; continue ;;
	esac
	if [ ! -f "$file" ]; then
		fail "viewer $name" "no such file: $file"
		continue
	fi
	# The driver prints "<check> ok|fail TEXT" per check, or "note TEXT".
	node "$here/viewer-drive.js" "$app/dist/release" "$file" "$culprit" "$out/$name" \
		>"$tmp/drive.txt" 2>&1
	status=$?
	while IFS= read -r line; do
		what=${line%% *} rest=${line#* }
		case $rest in
		"ok "*) ok "viewer $name $what: ${rest#ok }" ;;
		"fail "*) fail "viewer $name $what" "${rest#fail }" ;;
		*) echo "     $rest" ;;
		esac
	done <"$tmp/drive.txt"
	# A driver that stopped without its lines (chromium gone since the probe, a crash).
	if [ $status -ne 0 ] && ! grep -q '^[a-z]* fail ' "$tmp/drive.txt"; then
		fail "viewer $name" "the driver exited with $status: $(tail -n 3 "$tmp/drive.txt")"
	fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
