# shellcheck shell=sh disable=SC2154,SC2034 # the caller's variables, and those set for it
# SPDX-License-Identifier: MIT
# tests/real-lib.sh - what tests/real-programs.sh and tests/bench-real-programs.sh share,
# sourced by both: the SDK installed as an image has it and found through pkg-config
# (docs/oem.md), Debian's source tarballs, and the real programs' builds by their own build
# systems. POSIX sh. The caller sets:
#   src   the source tree      work  a scratch folder, removed by the caller
#   dl    the download cache (build/dl): sources in $dl/src, builds in $dl/real
#   bin   the build's bin folder (its ../ is the O= of the build installed)

# real_sdk: `make install` into $work/image; sets PKG_CONFIG_PATH (exported), cc (the
# compiler the SDK was built for) and sdk_hash (12 hex digits of what an app links and
# compiles with: a build cached under it is rebuilt when the SDK changes). On failure the
# status is 1 and the log is $work/install.log.
real_sdk() {
	dest=$work/image
	make -C "$src" --no-print-directory install DESTDIR="$dest" O="$bin/.." \
		>"$work/install.log" 2>&1 || return 1
	PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig
	export PKG_CONFIG_PATH
	cc=$(pc --variable=compiler jitt)
	sdk_hash=$(cat "$dest/usr/lib/jitt/libjitt-glibc.a" "$dest/usr/lib/jitt/libjitt-glibc.ldflags" \
		"$dest/usr/lib/jitt/libjitt.cflags" $(ls "$dest/usr/lib/jitt/libjitt-sampled.a" \
		"$dest/usr/lib/jitt/libjitt-sleds.a" 2>/dev/null) "$dest"/usr/lib/pkgconfig/jitt*.pc |
		md5sum | cut -c1-12)
}
pc() { pkg-config --define-prefix "$@"; }
# The SDK a jitt build links: jitt (each record timed), or jitt-sampled when the caller sets
# sampled=1 (about one record in 32 timed, docs/untimed.md; speedtest1, linked without
# pkg-config, then adds libjitt-sampled.a before libjitt.a).
# With sleds=1, jitt-sleds (x86_64, glibc: trace points patched in at start-up where the
# compiler kept a function, ringbuf/sleds.h), its flags too; speedtest1 then has the same
# flags with libjitt-sleds.a before libjitt.a.
sampled= sleds=
sdk_pc() {
	if [ "$sleds" = 1 ]; then echo jitt-sleds
	elif [ "$sampled" = 1 ]; then echo jitt-sampled
	else echo jitt; fi
}
sdk_cflags() { pc --cflags "$(if [ "$sleds" = 1 ]; then echo jitt-sleds; else echo jitt; fi)"; }

# fetch PKG: the upstream tarball of Debian's source package, downloaded once.
fetch() {
	mkdir -p "$dl/src"
	_rl_f=$(ls "$dl/src/$1"_*.orig.tar.* 2>/dev/null | head -n 1)
	if [ -z "$_rl_f" ]; then
		(cd "$dl/src" && apt-get source --download-only "$1" >/dev/null 2>&1)
		_rl_f=$(ls "$dl/src/$1"_*.orig.tar.* 2>/dev/null | head -n 1)
	fi
	[ -n "$_rl_f" ] && echo "$_rl_f"
}
# unpack TARBALL DIR: the tree, its timestamps kept (autotools must not want to rerun)
unpack() {
	rm -rf "$2.tmp" && mkdir -p "$2.tmp" && tar -xf "$1" -C "$2.tmp" --strip-components=1 &&
		rm -rf "$2" && mv "$2.tmp" "$2"
}

# build_duktape TARBALL DIR LOG [jitt [EXTRA]]: duktape's command-line interpreter, DIR/duk,
# by its own Makefile.cmdline (its CCOPTS: -Os), kept while DIR/duk exists. With "jitt", the
# OEM's build: the SDK's flags in the Makefile's own variables (CFLAGS, CCLIBS), and EXTRA
# (compile options, a GCC @file) after them. Without, plain: the Makefile as it comes.
build_duktape() {
	[ -x "$2/duk" ] && return 0
	if [ "${4:-}" = jitt ]; then
		set -- "$1" "$2" "$3" CFLAGS="$(sdk_cflags)${5:+ $5}" CCLIBS="-lm $(pc --libs "$(sdk_pc)")"
	else
		set -- "$1" "$2" "$3"
	fi
	_rl_tar=$1 _rl_dir=$2 _rl_log=$3
	shift 3
	unpack "$_rl_tar" "$_rl_dir" &&
		(cd "$_rl_dir" && nice make -f Makefile.cmdline duk CC="$cc" "$@") >"$_rl_log" 2>&1 ||
		{ rm -f "$_rl_dir/duk"; return 1; }
}

# build_memcached TARBALL DIR LOG [jitt [EXTRA]]: memcached by configure && make, DIR/memcached
# (and its tools sizes and timedrun), kept while DIR/memcached exists. With "jitt", what an
# OEM adds (docs/oem.md "An event loop"): the worker thread traced before its event loop and
# each event handled as a frame, and only the server instrumented (memcached_CPPFLAGS, not
# CFLAGS: its tools stay plain), EXTRA (compile options, a GCC @file) after the SDK's flags.
# Without, plain: the sources and the Makefile as they come.
build_memcached() {
	[ -x "$2/memcached" ] && return 0
	unpack "$1" "$2" || return 1
	if [ "${4:-}" = jitt ]; then
		(cd "$2" &&
			awk '/^    event_base_loop\(me->base, 0\);$/ && !d {
				print "    jitt_thread_name(\"mc-worker\"); jitt_trace_thread(true);"; d = 1 }
				{ print }' thread.c >.jitt-edit && mv .jitt-edit thread.c &&
			awk '/^    drive_machine\(c\);$/ && !d { print "    jitt_frame_begin();"; print;
				print "    jitt_frame_end();"; d = 1; next } { print }' memcached.c \
				>.jitt-edit && mv .jitt-edit memcached.c &&
			sed -i '0,/^#include "memcached.h"$/s//&\n#include <jitt\/jitt.h>/' thread.c \
				memcached.c &&
			./configure -q && nice make -j2 memcached sizes timedrun \
				memcached_CPPFLAGS="-DNDEBUG $(sdk_cflags)${5:+ $5}" \
				memcached_LDADD="$(pc --libs "$(sdk_pc)")") >"$3" 2>&1
	else
		(cd "$2" && ./configure -q && nice make -j2 memcached sizes timedrun) >"$3" 2>&1
	fi || { rm -f "$2/memcached"; return 1; }
}

# build_speedtest1 SQLITE_DIR DIR LOG [jitt [EXTRA]]: SQLite's speedtest1, DIR/speedtest1, as
# tests/speedtest1.sh builds it (static with musl, its amalgamation from
# board/common/sqlite.sh's SQLITE_DIR), kept while DIR/speedtest1 exists. With "jitt": the
# build's own libjitt.cflags, EXTRA (compile options, a GCC @file), libjitt.a and
# libjitt.ldflags, and tests/speedtest1_shim.c (it traces the main thread unless
# SPEEDTEST1_TRACE=0). LTO compiles all of SQLite again at the link: a minute or two.
build_speedtest1() {
	[ -x "$2/speedtest1" ] && return 0
	mkdir -p "$2"
	_rl_lib=$bin/../lib _rl_out=$2/speedtest1 _rl_log=$3 _rl_how=${4:-} _rl_extra=${5:-}
	set -- -static -O2 -DSQLITE_OMIT_LOAD_EXTENSION -I"$1/amalg" "$1/src/test/speedtest1.c" \
		"$1/amalg/sqlite3.c"
	if [ "$_rl_how" = jitt ]; then
		# shellcheck disable=SC2046,SC2086 # the flags files and EXTRA are lists of words
		_rl_flags=$(cat "$_rl_lib/libjitt.cflags")
		[ "$sleds" = 1 ] && _rl_flags=$(cat "$_rl_lib/libjitt-sleds.cflags")
		nice ${CC_MUSL:-musl-gcc} "$@" $_rl_flags $_rl_extra -I"$src" \
			"$src/tests/speedtest1_shim.c" \
			${sampled:+"$_rl_lib/libjitt-sampled.a"} \
			${sleds:+"$_rl_lib/libjitt-sleds.a" $(cat "$_rl_lib/libjitt-sleds.ldflags")} \
			"$_rl_lib/libjitt.a" \
			$(cat "$_rl_lib/libjitt.ldflags") -o "$_rl_out"
	else
		# shellcheck disable=SC2086 # CC_MUSL may be a command and its options
		nice ${CC_MUSL:-musl-gcc} "$@" -o "$_rl_out"
	fi >"$_rl_log" 2>&1 || { rm -f "$_rl_out"; return 1; }
}
