#!/bin/sh
# Adds up the result files that tests/run.sh wrote for each board; prints one line per board
# and, last, "N passed, N failed". Fails when a board has no result or any test failed.
# A result file's first line is "NAME N passed, N failed"; the lines after it, when a part
# failed, say what failed (its FAIL lines, a sanitizer's report), and are printed under the
# part's line: the end of make test's output is what a truncated CI log keeps.
set -u
passed=0 failed=0
for f in "$@"; do
	if [ ! -f "$f" ]; then
		echo "  $f: no result (the board's tests did not run)"
		failed=$((failed + 1))
		continue
	fi
	read -r board p _ f2 _ <"$f"
	echo "  $board: $p passed, $f2 failed"
	sed -n '2,40s/^/      /p' "$f"
	passed=$((passed + p)) failed=$((failed + f2))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
