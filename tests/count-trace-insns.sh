#!/bin/sh
# Counts the instructions a trace point executes, from the disassembly of an instrumented
# empty function (traced_empty) and its uninstrumented twin (untraced_empty).
#   on:  tracing on, no wrap, no stop: every conditional branch falls through
#   off: tracing off: the branch that tests pos for zero is taken, nothing else
# The difference between the instrumented and the plain function, divided between its entry
# and exit trace points, is what instrumentation costs; the listing shows the instructions.
#
# usage: count-trace-insns.sh BINARY OBJDUMP
set -eu
bin=$1 objdump=$2

listing() { # function -> "address<TAB>mnemonic<TAB>operands" lines
	$objdump -d --no-show-raw-insn "$bin" | awk -v f="<$1>:" '
		$2 == f { on = 1; next }
		on && /^$/ { exit }
		on { sub(/^ +/, ""); split($0, a, "\t"); addr = a[1]; sub(/:$/, "", addr)
		     # x86 objdump separates mnemonic and operands with spaces, ARM with a tab
		     rest = a[2] (a[3] == "" ? "" : "\t" a[3]); sub(/^ +/, "", rest)
		     op = rest; sub(/[ \t].*/, "", op); args = substr(rest, length(op) + 1)
		     sub(/^[ \t]+/, "", args)
		     print addr "\t" op "\t" args }'
}

# Walk the function from its first instruction; prints the count of executed instructions.
walk() { # mode(on|off|plain) < listing
	awk -F'\t' -v mode="$1" '
		{ addr[NR] = $1; op[NR] = $2; arg[NR] = $3; at[$1] = NR }
		END {
			i = 1; n = 0
			while (i >= 1 && i <= NR && n < 500) {
				o = op[i]; gsub(/ /, "", o); n++
				if (o ~ /^(ret|retq)$/ || (o == "bx" && arg[i] ~ /lr/) ||
				    (o ~ /^pop/ && arg[i] ~ /pc/)) break
				target = ""
				if (match(arg[i], /[0-9a-f]+ </))
					target = substr(arg[i], RSTART, RLENGTH - 2)
				uncond = o ~ /^(b|jmp|jmpq)$/
				zero = o ~ /^(cbz|beq|je|b\.eq)$/
				cond = o ~ /^(cbz|cbnz|tbz|tbnz|b\.[a-z]+|b(eq|ne|cs|cc|hs|lo|mi|pl|hi|ls|ge|lt|gt|le)|j[a-z]+)$/ && !uncond
				if (uncond || (cond && mode == "off" && zero)) {
					if (!(target in at)) { print "unknown target " target > "/dev/stderr"; break }
					i = at[target]; continue
				}
				i++
			}
			print n
		}'
}

plain=$(listing untraced_empty | walk plain)
on=$(listing traced_empty | walk on)
off=$(listing traced_empty | walk off)
echo "trace point instructions in $(basename "$bin") ($($objdump -f "$bin" | sed -n 's/^architecture: \([^,]*\).*/\1/p')):"
echo "  empty function: $plain uninstrumented, $on with tracing on, $off with tracing off"
echo "  per function (entry + exit): on +$((on - plain)), off +$((off - plain))"
echo "  disassembly of traced_empty:"
listing traced_empty | awk -F'\t' '{ printf "    %-10s %-8s %s\n", $1, $2, $3 }'
