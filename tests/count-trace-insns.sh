#!/bin/sh
# Counts the instructions a trace point executes, from the disassembly of an instrumented
# empty function (traced_empty) and its uninstrumented twin (untraced_empty). Both hold one
# NOP between where the entry and the exit trace points go (tests/traced.c), which splits
# the count.
#   on:  tracing on, no wrap, no stop: every conditional branch falls through (but x86_64's
#        jne to its on path, laid out after the body), every
#        conditionally executed instruction is counted (ARM's STRCC, POPEQ...) and a
#        conditional return is not taken
#   off: tracing off: the branch (or conditional return) on the zero test of pos is taken
#   frame: instructions on the on path that touch the stack pointer (push, pop, stp/ldp
#        with sp, sub/add of sp, mov x29, sp): what the traced function's frame costs
# The differences from the plain function are what instrumentation costs; the listing shows
# the instructions.
#
# usage: count-trace-insns.sh BINARY OBJDUMP [ENTRY_MAX EXIT_MAX]
# With ENTRY_MAX and EXIT_MAX (the board's TRACE_INSNS_MAX, board.mk), exits 1 when the on
# path's entry or exit trace point has more instructions, or when the traced function's
# frame has more stack instructions than the plain one.
set -eu
bin=$1 objdump=$2 entry_max=${3:-} exit_max=${4:-}

# The disassembly, once: a trace point may jump out of its function (the sampled-time hooks'
# on path is in a section of its own, ringbuf/trace_x86_64.h), so the walk may need any of it.
dis=$(mktemp)
trap 'rm -f "$dis"' EXIT
$objdump -d --no-show-raw-insn "$bin" >"$dis"
# listing FUNCTION [all]: its "address<TAB>mnemonic<TAB>operands" lines; with "all", then
# every instruction of the binary (the walk starts at the first line, jumps anywhere)
listing() {
	set -- "$1" "$dis" ${2:+"$dis"}
	awk -v f="<$1>:" '
		FNR == 1 { pass++ }
		pass == 1 && $2 == f { on = 1; next }
		pass == 1 && on && /^$/ { on = 0 }
		(on || pass == 2) && /^ +[0-9a-f]+:/ {
		     sub(/^ +/, ""); split($0, a, "\t"); addr = a[1]; sub(/:$/, "", addr)
		     # x86 objdump separates mnemonic and operands with spaces, ARM with a tab
		     rest = a[2] (a[3] == "" ? "" : "\t" a[3]); sub(/^ +/, "", rest)
		     op = rest; sub(/[ \t].*/, "", op); args = substr(rest, length(op) + 1)
		     sub(/^[ \t]+/, "", args)
		     print addr "\t" op "\t" args }' "$2" ${3:+"$3"}
}

# Walk the function from its first instruction; prints "entry exit frame": the executed
# instructions before the NOP, after it (up to and with the return), and how many of them
# touch the stack pointer.
walk() { # mode(on|off) < listing
	awk -F'\t' -v mode="$1" '
		{ addr[NR] = $1; op[NR] = $2; arg[NR] = $3; at[$1] = NR }
		END {
			i = 1; n[0] = n[1] = 0; part = 0; frame = 0; steps = 0
			while (i >= 1 && i <= NR && steps++ < 500) {
				o = op[i]; gsub(/ /, "", o)
				if (o == "nop" && part == 0) { part = 1; i++; continue }
				n[part]++
				if (o ~ /^(push|pop)/ || arg[i] ~ /(^|[^a-z0-9])(sp|%rsp)([^a-z0-9]|$)/)
					frame++
				# returns: ret, bx lr, pop {..., pc}, with an ARM condition suffix
				# when conditional (popeq: the return of the off test)
				ret = o ~ /^(ret|retq)$/ || (o ~ /^bx/ && arg[i] ~ /lr/) ||
				      (o ~ /^pop/ && arg[i] ~ /pc/)
				condret = ret && o ~ /(eq|ne|cs|cc|hs|lo|mi|pl|hi|ls|ge|lt|gt|le)$/ &&
					  o !~ /^(pop|bx)$/
				if (ret && !condret) break
				if (condret) {
					if (mode == "off" && o ~ /eq$/) break
					i++; continue
				}
				target = ""
				if (match(arg[i], /[0-9a-f]+ </))
					target = substr(arg[i], RSTART, RLENGTH - 2)
				uncond = o ~ /^(b|jmp|jmpq)$/
				zero = o ~ /^(cbz|beq|je|b\.eq)$/
				# x86_64 lays the on path out of line (ringbuf/trace_arch.h, RB_OFF):
				# the jne after the test of pos is taken when tracing is on
				on_jump = o == "jne" && prev ~ /^test/
				prev = o
				cond = o ~ /^(cbz|cbnz|tbz|tbnz|b\.[a-z]+|b(eq|ne|cs|cc|hs|lo|mi|pl|hi|ls|ge|lt|gt|le)|j[a-z]+)$/ && !uncond
				if (uncond || (cond && mode == "off" && zero) || (mode == "on" && on_jump)) {
					if (!(target in at)) { print "unknown target " target > "/dev/stderr"; break }
					i = at[target]; continue
				}
				i++
			}
			print n[0], n[1], frame
		}'
}

set -- $(listing untraced_empty all | walk on)
plain_entry=$1 plain_exit=$2 plain_frame=$3
set -- $(listing traced_empty all | walk on)
on_entry=$(($1 - plain_entry)) on_exit=$(($2 - plain_exit)) on_frame=$3
set -- $(listing traced_empty all | walk off)
off_entry=$(($1 - plain_entry)) off_exit=$(($2 - plain_exit))
echo "trace point instructions in $(basename "$bin") ($($objdump -f "$bin" | sed -n 's/^architecture: \([^,]*\).*/\1/p')):"
echo "  on:  entry $on_entry, exit $on_exit, per function +$((on_entry + on_exit))" \
	"(frame: $on_frame stack instructions, $plain_frame uninstrumented)"
echo "  off: entry $off_entry, exit $off_exit, per function +$((off_entry + off_exit))"
status=0
if [ -n "$entry_max" ]; then
	verdict=ok
	if [ "$on_entry" -gt "$entry_max" ] || [ "$on_exit" -gt "$exit_max" ] ||
		[ "$on_frame" -gt "$plain_frame" ]; then
		verdict=FAIL status=1
	fi
	echo "  $verdict: at most $entry_max entry, $exit_max exit, no frame beyond the plain one's"
fi
echo "  disassembly of traced_empty:"
listing traced_empty | awk -F'\t' '{ printf "    %-10s %-8s %s\n", $1, $2, $3 }'
exit $status
