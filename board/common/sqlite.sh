#!/bin/sh
# SPDX-License-Identifier: MIT
#
# sqlite.sh DL_DIR - SQLite's one-file amalgamation (sqlite3.c, sqlite3.h), generated once
# from Debian's sqlite3 source package into DL_DIR/sqlite3/ and shared by every board and
# by tests/speedtest1.sh. Prints that folder. Nothing here is compiled for a board: each
# user compiles amalg/sqlite3.c with its own compiler and flags.
#   DL_DIR/sqlite3/src/          the unpacked source package (speedtest1.c is in test/)
#   DL_DIR/sqlite3/amalg/        sqlite3.c, sqlite3.h
#   DL_DIR/sqlite3/.version      the Debian version they came from; written last, so its
#                                time is when they changed (users compare against it)
# A new pin below replaces the folder on the next run.
# Needs deb-src (make deps adds one), dpkg-dev, the host's gcc and tclsh (tcl).
set -eu

# Pinned like mbedtls (board/common/mbedtls.mk): bookworm's sqlite3 with its security
# updates. The .dsc's SHA-256 is checked here; the .dsc carries the tarballs' checksums,
# which dpkg-source verifies. If Debian moves on, update both lines.
SQLITE_DEB_VERSION=3.40.1-2+deb12u2
SQLITE_DSC_SHA256=ee3459ae9d00939741c7708fc1b8ce1bde12d8c3fb1dfa005bbbc8651d884e23

dl=${1:?usage: sqlite.sh DL_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dl"
dl=$(cd "$dl" && pwd)
dir=$dl/sqlite3
dsc=sqlite3_$SQLITE_DEB_VERSION.dsc

say() { echo "sqlite: $*" >&2; }

if [ "$(cat "$dir/.version" 2>/dev/null)" = "$SQLITE_DEB_VERSION" ] && [ -f "$dir/amalg/sqlite3.c" ]; then
	echo "$dir"
	exit 0
fi

# ---- the source, verified and cached ----
if [ ! -f "$dl/$dsc" ]; then
	say "fetching sqlite3 $SQLITE_DEB_VERSION source package into $dl"
	(cd "$dl" && apt-get source --download-only "sqlite3=$SQLITE_DEB_VERSION") >&2 || {
		say "'apt-get source sqlite3=$SQLITE_DEB_VERSION' failed: it needs a deb-src entry"
		say "(make deps adds one) and that version still in the archive; if Debian moved"
		say "on, update SQLITE_DEB_VERSION and SQLITE_DSC_SHA256 in board/common/sqlite.sh."
		exit 1
	}
fi
got=$(sha256sum "$dl/$dsc" | cut -d' ' -f1)
if [ "$got" != "$SQLITE_DSC_SHA256" ]; then
	say "$dl/$dsc has SHA-256 $got, expected $SQLITE_DSC_SHA256 (pinned in sqlite.sh)"
	exit 1
fi

# ---- the amalgamation ----
# Debian's source package is SQLite's source tree, without the amalgamation, and
# libsqlite3-dev ships only headers and libraries. So it is generated the way SQLite's own
# build does it: configure, then `make sqlite3.c`, which builds a few generator tools
# (lemon, mkkeywordhash) with the host's gcc and runs tclsh scripts.
if ! command -v tclsh >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		say "installing the missing build dependencies (tclsh generates sqlite3.c)"
		sh "$here/deps.sh" >&2
	else
		say "needs tclsh to generate sqlite3.c: make deps (or apt-get install tcl)"
		exit 1
	fi
fi
# Built aside and moved into place whole: an interrupted run leaves no half folder, and
# two builds racing for it both end with a complete one.
tmp=$dl/.sqlite3.$$
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp"
mkdir -p "$tmp/amalg"
say "unpacking and generating sqlite3.c $SQLITE_DEB_VERSION (host gcc, tclsh; under a minute)"
dpkg-source -x "$dl/$dsc" "$tmp/src" >"$tmp/unpack.log" 2>&1 || {
	cat "$tmp/unpack.log" >&2
	exit 1
}
# dpkg-source copies the tarballs beside the tree it unpacks: they stay in DL_DIR only.
rm -f "$tmp"/*.tar.*
(cd "$tmp/amalg" && nice ../src/configure --disable-tcl >"$tmp/amalg.log" 2>&1 &&
	nice make sqlite3.c >>"$tmp/amalg.log" 2>&1) || {
	tail -n 30 "$tmp/amalg.log" >&2
	say "generating sqlite3.c failed (the log's end is above)"
	exit 1
}
echo "$SQLITE_DEB_VERSION" >"$tmp/.version"
rm -rf "$dir"
mv -T "$tmp" "$dir" 2>/dev/null || [ "$(cat "$dir/.version" 2>/dev/null)" = "$SQLITE_DEB_VERSION" ]
echo "$dir"
