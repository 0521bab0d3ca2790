# tests/check-lib.sh - what the integration scripts (jittd-check, collector-check,
# upload-check) share, sourced by each: results as "ok what" / "FAIL what[: why]", counted in
# $passed and $failed, and waits that poll for an event. A wait's bound (SECONDS times
# JITT_TEST_PATIENCE, 6 by default) only turns a hang into a failure; it measures nothing.
# POSIX sh.
passed=0 failed=0
patience=${JITT_TEST_PATIENCE:-6}

ok() {
	echo "ok   $1"
	passed=$((passed + 1))
}
fail() {
	echo "FAIL $1${2:+: $2}"
	failed=$((failed + 1))
}
check() { # what, then a command that must succeed
	what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
is() { [ "$1" = "$2" ]; }
matches() { printf '%s\n' "$1" | grep -q -- "$2"; } # text, pattern

# jitt_expect SUBCOMMAND WHAT STATUS TEXT ARGS...: `$bin/jitt SUBCOMMAND ARGS...` exits with
# STATUS and says TEXT on stderr (bad input: a clear error, never a crash).
jitt_expect() {
	_je_cmd=$1 _je_what=$2 _je_want=$3 _je_text=$4
	shift 4
	_je_err=$("$bin/jitt" "$_je_cmd" "$@" 2>&1 >/dev/null)
	_je_got=$?
	if [ "$_je_got" -eq "$_je_want" ] && printf '%s' "$_je_err" | grep -qF -- "$_je_text"; then
		ok "jitt $_je_cmd: $_je_what"
	else
		fail "jitt $_je_cmd: $_je_what" "status $_je_got (wanted $_je_want), said: $_je_err"
	fi
}

# wait_for SECONDS COMMAND...: polls every 20 ms until COMMAND succeeds.
wait_for() {
	limit=$(($1 * 50 * patience))
	shift
	i=0
	while [ $i -lt $limit ]; do
		"$@" && return 0
		sleep 0.02
		i=$((i + 1))
	done
	return 1
}

# add_part OUTPUT: a part run apart (in a namespace of its own, say) printed, and its
# "N passed, N failed" line added to ours.
add_part() {
	echo "$1" | grep -v ' passed, .* failed$'
	line=$(echo "$1" | tail -n 1)
	case $line in
	*" passed, "*" failed")
		passed=$((passed + ${line%% passed*}))
		f=${line#*passed, }
		failed=$((failed + ${f%% failed*}))
		;;
	*) fail "a part ended without a result line" ;;
	esac
}
