#!/bin/sh
# Prints the stripped size of every program of every board: sizes.sh board=bindir ...
# Stripped, because musl's libc.a carries debug info that no device ships.
set -eu
printf '%-20s %-12s %10s  %s\n' board program bytes file
for arg in "$@"; do
	board=${arg%%=*} dir=${arg#*=}
	prefix=$(sed -n 's/^CROSS_COMPILE *:= *//p' "board/$board/board.mk")
	for prog in "$dir"/*; do
		case $prog in *.map) continue ;; esac
		[ -x "$prog" ] || continue
		tmp=$(mktemp)
		"${prefix}strip" -o "$tmp" "$prog"
		bytes=$(wc -c <"$tmp")
		kind=$(file -b "$prog" | cut -d, -f1-2,4)
		printf '%-20s %-12s %10s  %s\n' "$board" "${prog##*/}" "$bytes" "$kind"
		rm -f "$tmp"
	done
done
