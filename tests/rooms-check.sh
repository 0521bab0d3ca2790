#!/bin/sh
# The rooms' include rules (README's "Where things are"), checked on the sources: a room
# that starts including one it must not know fails here, not in review.
#   hal/ includes libc only; ringbuf/ only hal/; agent/analysis/ never cli/, daemon/ or
#   runtime/; agent/runtime/ (linked into every traced app) only hal/, ringbuf/ and the
#   shared pieces directly in agent/; nothing but programs and tests includes agent/cli/.
# usage: rooms-check.sh SRCTREE. Ends with "N passed, N failed".
set -u
cd "${1:-.}" || exit 2
passed=0 failed=0
# rule NAME FILES... -- FORBIDDEN-REGEX: no #include "..." in FILES may match.
rule() {
	name=$1
	shift
	files=
	while [ "$1" != -- ]; do files="$files $1"; shift; done
	bad=$(grep -Hn '^#include "' $files /dev/null | grep -E "#include \"($2)" )
	if [ -z "$bad" ]; then
		echo "ok   rooms: $name"
		passed=$((passed + 1))
	else
		echo "FAIL rooms: $name:"
		echo "$bad"
		failed=$((failed + 1))
	fi
}
rule "hal/ includes no other room" hal/*.[ch] -- 'ringbuf/|agent/|uploader/'
rule "ringbuf/ includes only hal/" ringbuf/*.[ch] -- 'agent/|uploader/'
rule "uploader/ includes only hal/ (and mbedtls)" uploader/*.[ch] uploader/*/*.[ch] -- 'ringbuf/|agent/'
rule "agent/analysis/ never includes cli/, daemon/ or runtime/" agent/analysis/*.[ch] -- \
	'agent/(cli|daemon|runtime)/'
rule "agent/runtime/ includes only hal/, ringbuf/ and agent/'s shared pieces" \
	agent/runtime/*.[ch] -- 'agent/(analysis|cli|daemon)/|uploader/'
rule "agent/'s shared pieces include no room below them" agent/*.[ch] -- \
	'agent/(analysis|cli|daemon|runtime)/'
rule "only the command includes agent/cli/" hal/*.[ch] ringbuf/*.[ch] agent/*.[ch] \
	agent/analysis/*.[ch] agent/runtime/*.[ch] agent/daemon/*.[ch] -- 'agent/cli/'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
