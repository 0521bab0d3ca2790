#!/bin/sh
# Runs libFuzzer targets one after another (make fuzz, fuzz-short, fuzz-long) and says, per
# target, what it did and found:
#   ok   fuzz-NAME: RUNS runs in S s (N/s), cov: C ft: F, corpus: N inputs (SIZE)
#   FAIL fuzz-NAME: crash|leak|timeout|out-of-memory|exit N, input: FILE
#        reproduce: FUZZER FILE
# usage: fuzz-run.sh --dir FUZZ_DIR --time SECONDS --timeout SECONDS --rss-mb MB
#                    [--dicts DIR] --result FILE NAME:SEED_DIR[ SEED_DIR...][:DICT] ...
# FUZZ_DIR holds the programs (fuzz-NAME); each target works in FUZZ_DIR/NAME/: corpus/ starts
# as a copy of its seed folders and keeps what the fuzzer adds (the committed seeds are never
# written), log is the fuzzer's output, and crash, leak and timeout inputs are saved there.
# A hang (an input slower than --timeout), a leak and going over --rss-mb are failures, as a
# crash is. With --dicts, DIR/DICT.dict (DICT is NAME when not given) is the fuzzer's
# dictionary (-dict) when there is one. The result file gets "fuzz N passed, N failed", one test
# per target, then what each failure was (for tests/total.sh).
set -u
dir= time= timeout=10 rss=2048 result= dicts=
while [ $# -gt 0 ]; do
	case $1 in
	--dir) dir=$2; shift 2 ;;
	--time) time=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--rss-mb) rss=$2; shift 2 ;;
	--result) result=$2; shift 2 ;;
	--dicts) dicts=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "fuzz-run.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ -z "$dir" ] || [ -z "$time" ] || [ $# -eq 0 ]; then
	echo "usage: fuzz-run.sh --dir DIR --time S [--timeout S] [--rss-mb MB] [--result FILE] NAME:SEEDS..." >&2
	exit 2
fi
passed=0 failed=0
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT

for spec in "$@"; do
	name=${spec%%:*}
	seeds=${spec#*:}
	dict=$name
	case $seeds in *:*) dict=${seeds##*:}; seeds=${seeds%:*} ;; esac
	dictopt=
	if [ -n "$dicts" ] && [ -f "$dicts/$dict.dict" ]; then
		dictopt=-dict=$dicts/$dict.dict
	fi
	fuzzer=$dir/fuzz-$name
	work=$dir/$name
	mkdir -p "$work/corpus"
	for s in $seeds; do
		cp "$s"/* "$work/corpus/"
	done
	rm -f "$work/log"
	# -detect_leaks=1 is libFuzzer's default under ASan; said here so it stays on.
	"$fuzzer" -max_total_time="$time" -timeout="$timeout" -rss_limit_mb="$rss" \
		-detect_leaks=1 -print_final_stats=1 -artifact_prefix="$work/" ${dictopt:+"$dictopt"} \
		"$work/corpus" >"$work/log" 2>&1
	status=$?
	# The last status line: "#RUNS <what> cov: C ft: F corp: N/SIZE ... exec/s: E ..."
	stats=$(grep -E '^#[0-9]+.*cov: ' "$work/log" | tail -n 1)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
	[ -n "$runs" ] || runs=$(printf '%s\n' "$stats" | sed -n 's/^#\([0-9]*\).*/\1/p')
	secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$work/log" | tail -n 1)
	cov=$(printf '%s\n' "$stats" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(printf '%s\n' "$stats" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(printf '%s\n' "$stats" | sed -n 's/.* corp: \([0-9]*\)\/\([0-9a-zA-Z]*\).*/\1 inputs (\2)/p')
	speed=$(printf '%s\n' "$stats" | sed -n 's/.* exec\/s: \([0-9]*\).*/\1/p')
	if [ $status -eq 0 ]; then
		echo "ok   fuzz-$name: ${runs:-?} runs in ${secs:-$time} s (${speed:-?}/s), cov: ${cov:-?} ft: ${ft:-?}, corpus: ${corp:-?}"
		passed=$((passed + 1))
		continue
	fi
	if grep -q 'ERROR: libFuzzer: timeout' "$work/log"; then
		what=timeout
	elif grep -q 'ERROR: LeakSanitizer' "$work/log"; then
		what=leak
	elif grep -q 'ERROR: libFuzzer: out-of-memory' "$work/log"; then
		what=out-of-memory
	elif grep -qE 'ERROR: (AddressSanitizer|libFuzzer: deadly signal)|runtime error:|check failed:' "$work/log"; then
		what=crash
	else
		what="exit $status"
	fi
	input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$work/log" | tail -n 1)
	tail -n 40 "$work/log"
	echo "FAIL fuzz-$name: $what after ${runs:-?} runs, input: ${input:-none saved} (log: $work/log)"
	# The strict checks are read from the environment: a replay needs them too.
	env=
	for v in FUZZ_STRICT_4K FUZZ_STRICT_TEXT; do
		eval "x=\${$v:-0}"
		[ "$x" = 0 ] || env="$env$v=$x "
	done
	[ -n "$input" ] && echo "     reproduce: $env$fuzzer $input"
	# For the total at the end of make test: what failed, the sanitizer's words and the
	# first frames of its stack, and the input itself when it is small enough to quote.
	{
		echo "FAIL fuzz-$name: $what after ${runs:-?} runs"
		grep -m 3 -E 'ERROR: |runtime error:|check failed:|SUMMARY: ' "$work/log"
		grep -m 8 -E '^ *#[0-9]+ 0x' "$work/log"
		if [ -n "$input" ] && [ -f "$input" ] && [ "$(wc -c <"$input")" -le 512 ]; then
			echo "input (base64): $(base64 -w 0 "$input")"
		fi
	} >>"$failures"
	failed=$((failed + 1))
done

[ -n "$result" ] && { echo "fuzz $passed passed, $failed failed"; cat "$failures"; } >"$result"
[ "$failed" -eq 0 ]
