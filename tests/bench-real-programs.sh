#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench-real-programs.sh SRCTREE BIN_DIR - the call-heavy cost on duktape, a JavaScript
# interpreter from Debian's source package (the baseline of issue "call-heavy cost"):
# plain, instrumented with tracing off, and traced, on call-heavy scripts, by process CPU
# time in interleaved rounds (tests/bench_real_programs.py). The instrumented build is
# real-programs.sh's (its own Makefile, the SDK through pkg-config, cached in
# build/dl/real/duktape-<SDK hash>); the plain one is the same Makefile without jitt
# (build/dl/real/duktape-plain). A measurement, not a test: `make bench-real` runs it.
# Environment: REPS (5).
set -eu
src=$(cd "${1:?usage: bench-real-programs.sh SRCTREE BIN_DIR}" && pwd)
bin=$(cd "${2:?usage: bench-real-programs.sh SRCTREE BIN_DIR}" && pwd)
dl=${DL_DIR:-$src/build/dl}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The SDK installed as an image has it (as real-programs.sh does).
dest=$work/image
make -C "$src" --no-print-directory install DESTDIR="$dest" O="$bin/.." >"$work/install.log" 2>&1 ||
	{ tail -n 5 "$work/install.log"; exit 1; }
PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig
export PKG_CONFIG_PATH
pc() { pkg-config --define-prefix "$@"; }
cc=$(pc --variable=compiler jitt)
sdk_hash=$(cat "$dest/usr/lib/jitt/libjitt-glibc.a" "$dest/usr/lib/jitt/libjitt-glibc.ldflags" \
	"$dest/usr/lib/jitt/libjitt.cflags" | md5sum | cut -c1-12)

mkdir -p "$dl/src" "$dl/real"
tar=$(ls "$dl/src/duktape"_*.orig.tar.* 2>/dev/null | head -n 1) || true
if [ -z "$tar" ]; then
	(cd "$dl/src" && apt-get source --download-only duktape >/dev/null 2>&1) || true
	tar=$(ls "$dl/src/duktape"_*.orig.tar.* 2>/dev/null | head -n 1) || true
fi
[ -n "$tar" ] || { echo "bench-real-programs: no duktape source (make deps: deb-src)"; exit 1; }
# build DIR [MAKE VARIABLES...]: duktape's cmdline interpreter by its own Makefile
build() {
	d=$1
	shift
	[ -x "$d/duk" ] && return 0
	echo "  bench-real-programs: building $(basename "$d")"
	rm -rf "$d.tmp" && mkdir -p "$d.tmp" && tar -xf "$tar" -C "$d.tmp" --strip-components=1 &&
		rm -rf "$d" && mv "$d.tmp" "$d" &&
		(cd "$d" && nice make -f Makefile.cmdline duk CC="$cc" "$@") >"$work/build.log" 2>&1 ||
		{ tail -n 5 "$work/build.log"; exit 1; }
}
build "$dl/real/duktape-plain"
build "$dl/real/duktape-$sdk_hash" CFLAGS="$(pc --cflags jitt)" CCLIBS="-lm $(pc --libs jitt)"

cat >"$work/fib.js" <<'JS'
// Calls and little else: the interpreter's call path, its helpers' every call.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
print(fib(29));
JS
cat >"$work/deep.js" <<'JS'
// Errors thrown from deep in a recursion and caught (real-programs.sh's slow moment).
function deep(n) { if (n === 0) throw new Error('deep'); return deep(n - 1) + 1; }
var caught = 0;
for (var i = 0; i < 30000; i++) { try { deep(100); } catch (e) { caught++; } }
print(caught);
JS
echo "  $(basename "$tar" | sed "s/_/ /;s/\.orig.*//"), built by its Makefile.cmdline (-Os)"
python3 "$src/tests/bench_real_programs.py" --run "$work" --jitt "$bin/jitt" \
	--plain "$dl/real/duktape-plain/duk" --traced "$dl/real/duktape-$sdk_hash/duk" \
	--label duktape --reps "${REPS:-5}" "fib=$work/fib.js" "throw=$work/deep.js"
