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
