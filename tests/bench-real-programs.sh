#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench-real-programs.sh SRCTREE BIN_DIR - the call-heavy cost on real programs nobody here
# wrote (issue 25), each built by its own build system (tests/real-lib.sh), one table each:
#   duktape    a JavaScript interpreter: fib(31), and 100,000 errors thrown 100 calls deep
#   memcached  an event-loop server (-t 1: one worker, the thread that does the work and the
#              one jitt traces): pipelined requests from tests/bench_mc_client.py over
#              loopback TCP, mixed gets and sets, and multigets; the worker thread's CPU
#              time
#   speedtest1 SQLite's, on a file and with --memdb (static with musl, as speedtest1.sh)
# Every program runs the rows of rows= below on each of its two workloads, in interleaved
# rounds, by process CPU time (tests/bench_real_programs.py), and for the traced rows the
# trace points a second and the ms a MiB of ring holds; then perf's top 5 on the plain
# build next to the traced summaries' top 5. The list of a traced+list row is `jitt exclude
# -o`'s, trained on the program's OTHER workload (traces collected with a trigger every
# quarter second of CPU time): what a list made from one scenario does to another.
# Builds are cached in build/dl/real/<program>-<SDK hash>[-<hash of the extra options>],
# the plain ones in <program>-plain. A measurement, not a test: `make bench-real` runs it.
# Environment: REPS (5), QUICK=1 (2 rounds, smaller workloads), PROGRAMS (all three),
# ROWS (the row names to run, "traced off": all of rows= below), KEEP=DIR (the lists,
# traces and exclude reports are left in DIR, for looking into a row).
set -eu
src=$(cd "${1:?usage: bench-real-programs.sh SRCTREE BIN_DIR}" && pwd)
bin=$(cd "${2:?usage: bench-real-programs.sh SRCTREE BIN_DIR}" && pwd)
dl=${DL_DIR:-$src/build/dl}
if [ -n "${KEEP:-}" ]; then
	mkdir -p "$KEEP" && work=$(cd "$KEEP" && pwd)
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi
. "$src/tests/real-lib.sh"
# Learning's memory across runs: none but the +mem row's (every other learnt run is a
# program's first, as it always was here)
export XDG_CACHE_HOME="$work/cache"
unset CACHE_DIRECTORY
quick=${QUICK:-0}
if [ "$quick" = 1 ]; then reps=${REPS:-2}; else reps=${REPS:-5}; fi
programs=${PROGRAMS:-duktape memcached speedtest1}

# Every list is made with --code PLAIN (the plain build's loops are excluded last,
# docs/exclude.md).
# The rows of every table, one a line: the row's name, how it runs (plain: the build
# without the SDK; off: instrumented, no thread traced; on: a thread traced, a `jitt
# trigger` a quarter second of CPU time in), and its method: the compile options added to the SDK's
# defaults (a GCC @file; "-" none; @LIST the `jitt exclude -o` list trained on the other
# workload, with `--ratio` the defaults build's traced/plain ratio measured there; @KEPT `jitt inlined`'s list of what the plain build inlined everywhere, made
# from the plain and the SDK-defaults builds, docs/trace-points.md; @KEPT+LIST both, the
# list then trained on the KEPT build's traces of the other workload, with `--ratio` its
# traced/plain ratio measured there). A method is built once per program and cached by
# the options' contents; a new row is one line here, say "traced+x on @$src/tests/x.opt".
# A method "sampled:M" is M linked with sampled time (jitt-sampled.pc: about one record in
# 16 timed, docs/untimed.md); @KEPT+SLIST is @KEPT+LIST trained on the sampled kept build.
# A method "sleds:M" is M built with jitt-sleds.pc (x86_64: NOPs where GCC kept a
# function, patched at start-up, docs/trace-points.md "Sleds"), its records sampled (the
# setting's default); its @SLIST is not compiled in but given at start-up (sleds_exclude:
# @KEPT+SLIST's list without @KEPT, which sleds need not: they are where GCC kept a
# function). Its off rows leave the NOPs (sleds = off); untraced+sleds patches them and
# traces no thread (what the threads jitt does not trace pay); traced+sleds is the
# every function the compiler kept traced (sleds_learn_ns = 0), and traced+sleds+learn
# learns what to leave out at run time (sleds_learn_ns = 250; traced+sleds+learnN: N), as
# the program's first run, traced+sleds+learn+mem from the memory a run of the other
# workload left (sleds_memory).
rows="plain plain -
off off -
traced on -
traced+list on @LIST
off+kept+list off @KEPT+LIST
traced+kept on @KEPT
traced+kept+list on @KEPT+LIST
traced+sampled on sampled:-
traced+kept+list+sampled on sampled:@KEPT+LIST
off+kept+slist+sampled off sampled:@KEPT+SLIST
traced+kept+slist+sampled on sampled:@KEPT+SLIST
off+sleds off sleds:-
untraced+sleds off sleds:-
traced+sleds on sleds:-
traced+sleds+learn on sleds:-
traced+sleds+learn1000 on sleds:-
traced+sleds+learn+mem on sleds:-
traced+sleds+slist on sleds:@SLIST"
if [ -n "${ROWS:-}" ]; then
	rows=$(printf '%s\n' "$rows" | awk -v want=" $ROWS " 'index(want, " " $1 " ")')
fi

say() { echo "  bench-real-programs: $*" >&2; }
real_sdk || { tail -n 5 "$work/install.log"; exit 1; }
mkdir -p "$dl/real"

# binary PROGRAM MODE EXTRA: the program's binary for a row (built if missing; prints its
# path), cached under $key (instrumented) or $plain_key. The instrumented builds without
# extra options are real-programs.sh's.
binary() {
	case $2 in
	plain) d=$dl/real/$1-plain$plain_key ;;
	*) d=$dl/real/$1-$key ;;
	esac
	case $3 in
	@*) d=$d-$(md5sum <"${3#@}" | cut -c1-8) ;;
	esac
	[ "$sampled" = 1 ] && d=$d-sampled
	[ "$sleds" = 1 ] && d=$d-sleds
	if [ ! -x "$d/$exe" ]; then
		case $3 in -) o= ;; *) o=" with @${3##*/}" ;; esac
		say "building $(basename "$d")$o"
		if [ "$2" = plain ]; then
			"build_$1" "$tar" "$d" "$work/build.log"
		else
			"build_$1" "$tar" "$d" "$work/build.log" jitt "${3#-}"
		fi || { tail -n 5 "$work/build.log" >&2; return 1; }
	fi
	echo "$d/$exe"
}
# entries FILE: how many names a list of GCC options holds
entries() { sed 's/^[^=]*=//' "$1" | tr ',' '\n' | grep -c . || true; }
# method MODE EXTRA: how a row's binary was built, for the table
method() {
	case $1/$2 in
	plain/*) echo "its own build, no SDK" ;;
	*/-) echo "SDK defaults" ;;
	*) echo "SDK defaults + @${2##*/}" ;;
	esac
}
# sampled_method EXTRA: sets sampled (1 for "sampled:M", else empty) and sleds (1 for
# "sleds:M") and prints M
sampled_method() {
	sampled= sleds=
	case $1 in
	sampled:*) sampled=1 && echo "${1#sampled:}" ;;
	sleds:*) sleds=1 && echo "${1#sleds:}" ;;
	*) echo "$1" ;;
	esac
}

# collect_and_ratios BINARY DIR [bench_real_programs.py's options]: traces of the traced
# BINARY on each workload into DIR/W, and the ratio a list is fitted to (jitt exclude
# --ratio, docs/exclude.md): BINARY's median traced/plain on the workload it learns from,
# one round, into $work/$prog.ratios. Without it the trace point's cost is the one the
# program measured back to back, a few % over what dense trace points cost in the run: on
# duktape's traces that left no time without them, and exclude refused to make a list.
collect_and_ratios() {
	b=$1 dir=$2
	shift 2
	printf '%s\ttraced\ton\t%s\t-\n' "$w1" "$b" "$w2" "$b" >"$work/collect.variants"
	rm -rf "$dir"
	python3 "$src/tests/bench_real_programs.py" --run "$work" --jitt "$bin/jitt" \
		--label "$label" --variants "$work/collect.variants" \
		--collect "$dir" --collect-runs "$([ "$quick" = 1 ] && echo 1 || echo 2)" \
		"$@" >&2 || return 1
	pl=$(sampled= binary "$prog" plain -) || return 1
	printf '%s\tplain\tplain\t%s\t-\n%s\ttraced\ton\t%s\t-\n' "$w1" "$pl" "$w1" "$b" \
		"$w2" "$pl" "$w2" "$b" >"$work/ratio.variants"
	rm -f "$work/$prog.ratios"
	python3 "$src/tests/bench_real_programs.py" --run "$work" --jitt "$bin/jitt" \
		--label "$label" --variants "$work/ratio.variants" --reps 1 \
		--ratios "$work/$prog.ratios" "$@" >&2
}

# ratio_of W: the ratio collect_and_ratios measured on workload W, empty when it is 1 or
# less (a round too short to tell fits nothing: C is then the traces' own).
ratio_of() {
	awk -v w="$1" '$1 == w && $2 == "traced" && $3 > 1 { print $3 }' "$work/$prog.ratios"
}

# train_kept_list TAG [bench_real_programs.py's options]: the list of @KEPT+LIST (TAG "") or,
# with sampled=1, of @KEPT+SLIST (TAG s): traces of the kept build (with sampled time for
# s) on each workload, its traced/plain ratio there, and `jitt exclude --ratio` of them,
# into $work/$prog-kept+${TAG}list-from-W.opt with the kept list itself. A list made for
# sampled time fits the cheaper trace point: it leaves more functions traced for the
# same budget.
train_kept_list() {
	tag=$1
	shift
	k=$(binary "$prog" on "@$work/$prog-kept.opt") || return 1
	collect_and_ratios "$k" "$work/$prog-kept-traces" "$@" || return 1
	pl=$(sampled= binary "$prog" plain -) || return 1
	for w in "$w1" "$w2"; do
		r=$(ratio_of "$w")
		# No list when it cannot make one (its message is shown): the row then
		# measures the kept build alone, and says 0 entries.
		"$bin/jitt" exclude "$work/$prog-kept-traces/$w"/*.jtr ${r:+--ratio "$r"} \
			--code "$pl" -o "$work/kept-${tag}list-from-$w.opt" \
			>"$work/$prog-$w.kept-${tag}exclude" 2>&1 ||
			{ cat "$work/$prog-$w.kept-${tag}exclude" >&2; : >"$work/kept-${tag}list-from-$w.opt"; }
		cat "$work/$prog-kept.opt" "$work/kept-${tag}list-from-$w.opt" \
			>"$work/$prog-kept+${tag}list-from-$w.opt"
	done
}

# program NAME LABEL W1 W2 [bench_real_programs.py's options]: the table of program NAME
# ($tar and $exe set) on its workloads W1 and W2 (their --workload options among the rest).
program() {
	prog=$1 label=$2 w1=$3 w2=$4
	shift 4
	echo
	# The lists, if a row asks for one: traces of each workload, and `jitt exclude`.
	if printf '%s\n' "$rows" | grep -q ' @LIST$'; then
		t=$(binary "$prog" on -) && pl=$(binary "$prog" plain -) || return 1
		collect_and_ratios "$t" "$work/$prog-traces" "$@" || return 1
		for w in "$w1" "$w2"; do
			r=$(ratio_of "$w")
			"$bin/jitt" exclude "$work/$prog-traces/$w"/*.jtr ${r:+--ratio "$r"} --code "$pl" \
				-o "$work/list-from-$w.opt" \
				>"$work/$prog-$w.exclude" || { cat "$work/$prog-$w.exclude"; return 1; }
		done
	fi
	# What the compiler kept (@KEPT), and the list trained on that build (@KEPT+LIST).
	if printf '%s\n' "$rows" | grep -q '@KEPT'; then
		pl=$(binary "$prog" plain -) && t=$(binary "$prog" on -) || return 1
		"$bin/jitt" inlined "$pl" "$t" -o "$work/$prog-kept.opt" >"$work/$prog.inlined" ||
			{ cat "$work/$prog.inlined"; return 1; }
	fi
	if printf '%s\n' "$rows" | grep -q ':*@KEPT+LIST$'; then
		train_kept_list "" "$@" || return 1
	fi
	if printf '%s\n' "$rows" | grep -q ':@KEPT+SLIST$\|:@SLIST$'; then
		sampled=1 && train_kept_list s "$@" || return 1
		sampled=
	fi
	# A learning memory (agent/runtime/learn_memory.c) for +mem: a run of the learnt row on
	# each workload, its memory the other's start.
	if printf '%s\n' "$rows" | grep -q '^traced+sleds+learn+mem '; then
		sleds=1 && s=$(binary "$prog" on -) || return 1
		sleds=
		: >"$work/mem.variants"
		for w in "$w1" "$w2"; do
			rm -rf "$work/mem-from-$w.trained"
			printf '%s\ttraced\ton\t%s\t-\tsleds_learn_ns = 250;sleds_memory = %s\n' \
				"$w" "$s" "$work/mem-from-$w.trained" >>"$work/mem.variants"
		done
		say "training the learning memories"
		python3 "$src/tests/bench_real_programs.py" --run "$work" --jitt "$bin/jitt" \
			--label "$label" --variants "$work/mem.variants" --reps 1 "$@" >&2 || return 1
	fi
	: >"$work/$prog.variants"
	for w in "$w1" "$w2"; do
		other=$w2
		[ "$w" = "$w1" ] || other=$w1
		printf '%s\n' "$rows" | while read -r row mode extra; do
			sampled_method "$extra" >"$work/method" && extra=$(cat "$work/method")
			settings=
			if [ "$sleds" = 1 ]; then
				[ "$row" = off+sleds ] && settings="sleds = off"
				[ "$row" = traced+sleds ] && settings="sleds_learn_ns = 0"
				case $row in
				traced+sleds+learn) settings="sleds_learn_ns = 250;sleds_memory = off" ;;
				traced+sleds+learn+mem)
					settings="sleds_learn_ns = 250;sleds_memory = $work/mem-from-$other" ;;
				traced+sleds+learn*)
					settings="sleds_learn_ns = ${row#traced+sleds+learn};sleds_memory = off" ;;
				esac
				[ "$extra" = @SLIST ] && extra=- &&
					settings="sleds_exclude = $work/kept-slist-from-$other.opt"
			fi
			[ "$extra" = @LIST ] && extra=@$work/list-from-$other.opt
			[ "$extra" = @KEPT ] && extra=@$work/$prog-kept.opt
			[ "$extra" = @KEPT+LIST ] && extra=@$work/$prog-kept+list-from-$other.opt
			[ "$extra" = @KEPT+SLIST ] && extra=@$work/$prog-kept+slist-from-$other.opt
			b=$(binary "$prog" "$mode" "$extra") || exit 1
			m=$(method "$mode" "$extra")
			case $extra in
			@"$work"/list-from-*)
				m="SDK defaults + @list of $other ($(grep -o '[^,=]*' "${extra#@}" |
					grep -cv '^-finstrument') entries)"
				;;
			@"$work/$prog"-kept.opt)
				m="SDK defaults + @kept ($(entries "${extra#@}") entries)"
				;;
			@"$work/$prog"-kept+list-from-*)
				m="SDK + @kept + @list of $other ($(entries "$work/kept-list-from-$other.opt"))"
				;;
			@"$work/$prog"-kept+slist-from-*)
				m="SDK + @kept + @slist of $other ($(entries "$work/kept-slist-from-$other.opt"))"
				;;
			esac
			[ "$sampled" = 1 ] && m="$m, sampled time"
			if [ "$sleds" = 1 ]; then
				m="SDK sleds, sampled time"
				[ "$mode" = on ] && m="$m, every function"
				case $settings in
				"sleds = off") m="SDK sleds, left as NOPs (sleds = off)" ;;
				"sleds_learn_ns = 0") m="$m (sleds_learn_ns = 0)" ;;
				*"sleds_memory = off"*) m="SDK sleds, sampled time, learnt at run time (250 ns), a first run" ;;
				*sleds_memory*) m="SDK sleds, sampled time, learnt at run time (250 ns), starting from a run of $other" ;;
				sleds_learn_ns*) n=${settings#sleds_learn_ns = } &&
					m="SDK sleds, sampled time, learnt at run time (${n%%;*} ns)" ;;
				sleds_exclude*) m="SDK sleds, sampled time + slist of $other ($(entries "$work/kept-slist-from-$other.opt")) at start-up" ;;
				esac
			fi
			sampled= sleds=
			printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$row" "$mode" "$b" "$m" "$settings" \
				>>"$work/$prog.variants"
		done || return 1
	done
	python3 "$src/tests/bench_real_programs.py" --run "$work" --jitt "$bin/jitt" \
		--label "$label" --variants "$work/$prog.variants" --reps "$reps" --perf "$@" || return 1
	for w in "$w1" "$w2"; do
		[ -f "$work/$prog-$w.kept-exclude" ] || continue
		echo "  jitt exclude on the kept build's $w traces (the list for the other):" \
			"$(sed -n 's/^predicted: *//p' "$work/$prog-$w.kept-exclude")"
		[ -f "$work/$prog-$w.kept-sexclude" ] || continue
		echo "  ... on the sampled kept build's (the slist):" \
			"$(sed -n 's/^predicted: *//p' "$work/$prog-$w.kept-sexclude")"
	done
	[ -f "$work/$prog.inlined" ] && echo "  jitt inlined:" \
		"$(sed -n 's/^inlined: *//p;s/^list: *//p' "$work/$prog.inlined" | tr '\n' ';')"
	for w in "$w1" "$w2"; do
		[ -f "$work/$prog-$w.exclude" ] || continue
		echo "  jitt exclude on $w's traces (the list for $( [ "$w" = "$w1" ] && echo "$w2" || echo "$w1")):" \
			"$(sed -n 's/^overhead: *//p' "$work/$prog-$w.exclude")"
	done
}

status=0
for prog in $programs; do
	case $prog in
	duktape)
		tar=$(fetch duktape) || { echo "bench-real-programs: no duktape source (make deps: deb-src)"; exit 1; }
		exe=duk key=$sdk_hash plain_key=
		# Each run uses well over the quarter second of CPU time before the trigger, plain too.
		n=31 throws=100000
		[ "$quick" = 1 ] && n=30 throws=40000
		cat >"$work/fib.js" <<JS
// Calls and little else: the interpreter's call path, its helpers' every call.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
print(fib($n));
JS
		cat >"$work/deep.js" <<JS
// Errors thrown from deep in a recursion and caught (real-programs.sh's slow moment).
function deep(n) { if (n === 0) throw new Error('deep'); return deep(n - 1) + 1; }
var caught = 0;
for (var i = 0; i < $throws; i++) { try { deep(100); } catch (e) { caught++; } }
print(caught);
JS
		program duktape "$(basename "$tar" | sed "s/_/ /;s/\.orig.*//"), its Makefile.cmdline (-Os), main thread traced" \
			fib throw --workload "fib=$work/fib.js" --workload "throw=$work/deep.js" \
			--on-conf "trace_main = 1" --off-conf "trace_main = 0" || status=1
		;;
	memcached)
		tar=$(fetch memcached) || { echo "bench-real-programs: no memcached source"; exit 1; }
		exe=memcached key=$sdk_hash plain_key=
		n=200000 keys=1000000
		[ "$quick" = 1 ] && n=50000 keys=600000
		# -A: the client ends the run with `shutdown`. Off is `enabled = 0`: the
		# worker's jitt_trace_thread(true) is in the source (real-lib.sh), so the runtime
		# is not started and every trace point runs its off check. Timed by the worker's
		# own CPU time, which the client reads when its answers are in: the process's
		# holds the LRU maintainer's spinning, a third of it in every build.
		args="-u $(id -un) -l 127.0.0.1 -p {port} -t 1 -m 512 -U 0 -A"
		program memcached "$(basename "$tar" | sed "s/_/ /;s/\.orig.*//"), configure && make, -t 1, worker thread traced" \
			mixed multiget --workload "mixed=$args" --workload "multiget=$args" \
			--client "mixed=python3 $src/tests/bench_mc_client.py {port} mixed $n {pid}" \
			--client "multiget=python3 $src/tests/bench_mc_client.py {port} multiget $keys {pid}" \
			--thread mc-worker --off-conf "enabled = 0" || status=1
		;;
	speedtest1)
		tar=$(sh "$src/board/common/sqlite.sh" "$dl") || exit 1
		# Built from the build's lib/ (as speedtest1.sh), not the SDK image: its own key.
		exe=speedtest1 plain_key=-$(md5sum <"$tar/.version" | cut -c1-8)
		key=$(cat "$bin/../lib/libjitt.a" "$bin/../lib/libjitt.cflags" "$bin/../lib/libjitt.ldflags" \
			$(ls "$bin/../lib/libjitt-sleds.a" 2>/dev/null) \
			"$src/tests/speedtest1_shim.c" "$tar/.version" | md5sum | cut -c1-12)
		size=50
		[ "$quick" = 1 ] && size=20
		# --verify prints a hash of every result (the timings are taken out of the
		# comparison), --nosync leaves fsync's disk waits out of the work.
		program speedtest1 "SQLite $(cat "$tar/.version") speedtest1 --size $size, static musl, main thread traced" \
			file memdb --workload "file=--size $size --verify --nosync {db}" \
			--workload "memdb=--size $size --verify --memdb" \
			--off-env SPEEDTEST1_TRACE=0 --ignore '\s+[0-9.]+s$' || status=1
		;;
	*) echo "bench-real-programs: no program $prog"; exit 2 ;;
	esac
done
exit $status
