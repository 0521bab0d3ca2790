#!/bin/sh
# Reads a booted board's console (boot-root.sh's /init): shows what it printed between
# `jitt hal` and MARKER but the "ok" lines, and writes the suite's result line to RESULT
# ("-": the boot ran no suite) and the image checks' to IMAGE_RESULT, as tests/total.sh
# reads them. A part that printed no result counts as one failure.
#
# usage: boot-results.sh NAME CONSOLE_LOG MARKER RESULT IMAGE_RESULT
set -u
name=$1 log=$2 marker=$3 result=$4 image_result=$5
sed -n "/^== jitt hal/,/^$marker\$/p" "$log" | grep -av '^ok ' || true
status=0
# part PREFIX FILE LABEL: the line after PREFIX, when it is a result line, into FILE.
part() {
	line=$(grep -a "^$1: " "$log" | tail -n 1 | sed "s/^$1: //")
	if printf '%s\n' "$line" | grep -qE '^[0-9]+ passed, [0-9]+ failed$'; then
		echo "$3 $line" >"$2"
		case $line in *" 0 failed") ;; *) status=1 ;; esac
	else
		echo "$3 0 passed, 1 failed" >"$2"
		status=1
		echo "boot: $3 printed no result" >&2
	fi
}
[ "$result" = - ] || part jitt-boot-suite "$result" "$name"
part jitt-boot-image "$image_result" "$name-image"
if ! grep -aqx "$marker" "$log"; then
	echo "boot: $name did not reach its end; the last lines of $log:" >&2
	tail -n 20 "$log" >&2
	status=1
fi
exit $status
