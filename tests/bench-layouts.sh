#!/bin/sh
# shellcheck disable=SC2034,SC2154 # real-lib.sh reads bin and sleds, and sets cc and sdk_hash
# SPDX-License-Identifier: MIT
#
# bench-layouts.sh SRCTREE BIN_DIR - what instrumented-off costs the interpreter, told from
# the draw of its code's layout (docs/trace-points.md, "The interpreter's off cost"). On
# duktape (-Os), one build's CPU time moves by up to 5% when its code moves by 16 bytes, plain
# builds as much as sleds builds, so `make bench-real`'s one off row per program is one
# draw. Here each of PADS (bytes) is a layout: the plain build and the sleds build (sleds =
# off, no thread traced) both linked after a pad of that many bytes of code, which moves
# all of duktape's code by as much; rounds interleaved, process CPU time, each build's
# fastest. It prints, for each workload, each layout's off/plain ratio (fastest, and the
# median of the rounds' pairs) and their median over the layouts: the cost of the sleds
# at a like draw. Builds are cached in build/dl/real/duktape-pad<N>-plain and
# duktape-pad<N>-<SDK hash>-sleds. A measurement, not a test: `make bench-real` runs it.
# Environment: REPS (3), PADS ("0 16 32 48").
set -eu
src=$(cd "${1:?usage: bench-layouts.sh SRCTREE BIN_DIR}" && pwd)
bin=$(cd "${2:?usage: bench-layouts.sh SRCTREE BIN_DIR}" && pwd)
dl=${DL_DIR:-$src/build/dl}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$src/tests/real-lib.sh"
reps=${REPS:-3}
pads=${PADS:-0 16 32 48}
say() { echo "  bench-layouts: $*" >&2; }
real_sdk || { tail -n 5 "$work/install.log"; exit 1; }
mkdir -p "$dl/real"
tar=$(fetch duktape) || { echo "bench-layouts: no duktape source (make deps: deb-src)"; exit 1; }

# build PAD KIND: duktape by its Makefile.cmdline with a pad of PAD bytes of code linked
# first (its source first on the compiler's line: its code before duktape's), plain or
# with the SDK's sleds (KIND sleds: jitt-sleds.pc's flags, as real-lib.sh's build_duktape);
# prints the binary's path.
build() {
	case $2 in
	plain) d=$dl/real/duktape-pad$1-plain ;;
	*) d=$dl/real/duktape-pad$1-$sdk_hash-sleds ;;
	esac
	if [ ! -x "$d/duk" ]; then
		say "building $(basename "$d")"
		unpack "$tar" "$d" || return 1
		# In .text.unlikely, which the linker places first: .text.hot (the bytecode
		# loop's) and .text after it move by as much
		printf '/* %s bytes of cold code before the program'"'"'s own */\n__asm__(".section .text.unlikely,\\"ax\\",@progbits\\n.skip %s, 0x90\\n.text\\n");\n' \
			"$1" "$1" >"$d/layout_pad.c"
		if [ "$2" = plain ]; then
			set -- DUKTAPE_SOURCES="layout_pad.c src/duktape.c"
		else
			sleds=1
			set -- DUKTAPE_SOURCES="layout_pad.c src/duktape.c" CFLAGS="$(sdk_cflags)" \
				CCLIBS="-lm $(pc --libs jitt-sleds)"
		fi
		(cd "$d" && nice make -f Makefile.cmdline duk CC="$cc" "$@") >"$work/build.log" 2>&1 ||
			{ tail -n 5 "$work/build.log" >&2; rm -f "$d/duk"; return 1; }
	fi
	echo "$d/duk"
}

cat >"$work/fib.js" <<JS
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
print(fib(31));
JS
cat >"$work/deep.js" <<JS
function deep(n) { if (n === 0) throw new Error('deep'); return deep(n - 1) + 1; }
var caught = 0;
for (var i = 0; i < 100000; i++) { try { deep(100); } catch (e) { caught++; } }
print(caught);
JS
printf 'sleds = off\ntrace_main = 0\nlog_level = warn\ndata_dir = %s\nrun_dir = %s\n' \
	"$work/data" "$work/run" >"$work/off.conf"
mkdir -p "$work/data/spool" "$work/run"
: >"$work/builds"
for p in $pads; do
	pl=$(build "$p" plain) && off=$(build "$p" sleds) || exit 1
	printf '%s\t%s\t%s\n' "$p" "$pl" "$off" >>"$work/builds"
done

echo
echo "$(basename "$tar" | sed 's/_/ /;s/\.orig.*//'), its Makefile.cmdline (-Os): instrumented-off (sleds = off, no thread traced) over plain, at $(echo "$pads" | wc -w) layouts (a pad of N bytes of code before the program's; process CPU time, fastest of $reps rounds interleaved)"
python3 - "$work/builds" "$work/off.conf" "$reps" "$work/fib.js" "$work/deep.js" <<'PY'
import os, statistics, subprocess, sys
builds = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
conf, reps, scripts = sys.argv[2], int(sys.argv[3]), sys.argv[4:]

def cpu(exe, script, env):
    p = subprocess.Popen([exe, script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=env)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status or not out.strip():
        sys.exit("bench-layouts: %s %s failed (status %d)" % (exe, script, status))
    return ru.ru_utime + ru.ru_stime, out

plain_env = {k: v for k, v in os.environ.items() if k != "JITT_CONFIG"}
off_env = dict(plain_env, JITT_CONFIG=conf)
for script in scripts:
    t = {(pad, k): [] for pad, _, _ in builds for k in ("plain", "off")}
    for r in range(reps):
        for pad, pl, off in builds:
            a, out_a = cpu(pl, script, plain_env)
            b, out_b = cpu(off, script, off_env)
            if out_a != out_b:
                sys.exit("bench-layouts: pad %s: plain and off print different results" % pad)
            t[(pad, "plain")].append(a)
            t[(pad, "off")].append(b)
    name = os.path.basename(script)[:-3]
    base = min(t[(builds[0][0], "plain")])
    print("  %-6s %5s  %9s %9s  %8s %8s  %s" % ("script", "pad", "plain", "off", "off/pl",
                                                  "pair", "plain/pad 0"))
    fast, pair = [], []
    for pad, _, _ in builds:
        p, o = t[(pad, "plain")], t[(pad, "off")]
        fast.append(min(o) / min(p))
        pair.append(statistics.median(b / a for a, b in zip(p, o)))
        print("  %-6s %5s  %8.3fs %8.3fs  %7.3fx %7.3fx  %10.3fx" % (
            name, pad, min(p), min(o), fast[-1], pair[-1], min(p) / base))
    print("  %-6s %5s  %9s %9s  %7.3fx %7.3fx  (median over the layouts; from %.3fx to %.3fx)" % (
        name, "all", "", "", statistics.median(fast), statistics.median(pair), min(fast),
        max(fast)))
PY
