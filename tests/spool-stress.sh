#!/bin/sh
# The spool under load and faults (docs/oem.md, "The spool's caps"): tens of traced apps
# under several uids persist bursts of traces while jittd runs, is starved (SIGSTOP), is
# stopped, is killed with -9, and while a small tmpfs is full. A sampler in the background
# reads spool/ and traces/ all along. Checks:
# - at every sample, the raw traces (spool/*.jtr, writers' temporaries, traces/*.jtr and
#   jittd's temporaries there) are within max_traces files and max_trace_mb bytes, and the
#   slots claimed number at most max_traces;
# - every trace an app reported persisted is summarised exactly once (one summary in the
#   outbox, one "summarised" line in jittd's logs), or named in a log as dropped by the caps;
# - every trigger an app answered "not written" is counted in the apps' dropped_full;
# - at the end no temporary is left (writers', jittd's) and the spool is empty.
# Apps under four uids, jittd under a fifth (no capability), as on a phone; without root
# (uids, a tmpfs) all under one uid and without the full disk, said in one "skip" line.
# Waits are for events (check-lib.sh); the sampler's period is a sampling rate, not a wait.
# POSIX sh.
#
# usage: spool-stress.sh BIN_DIR [APPS]   prints "ok what" / "FAIL what" / "skip what",
#                                         then "N passed, N failed"
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=${1:?usage: spool-stress.sh BIN_DIR [APPS]}
napps=${2:-40}
. "$here/check-lib.sh"

J=61100			       # jittd
uids="61101 61102 61103 61104" # apps
# as UID COMMAND...: exec the command under that uid and its own group; without root (or
# setpriv) everything runs under ours, and the parts that need root are skipped, said once.
if [ "$(id -u)" = 0 ] && setpriv --reuid=61101 --regid=61101 --clear-groups true 2>/dev/null; then
	as() {
		u=$1
		shift
		exec setpriv --reuid="$u" --regid="$u" --clear-groups "$@"
	}
	root=1
else
	echo "skip several uids and a small full disk: not root, or no setpriv (one uid, no tmpfs)"
	as() {
		shift
		exec "$@"
	}
	J=$(id -u)
	uids=$J
	root=
fi
max_traces=8
max_trace_mb=1

tmp=$(mktemp -d /tmp/jitt-stress.XXXXXX)
chmod 0755 "$tmp"
apids=
jpid=
spid=
data=$tmp/data
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null
	for p in $apids $jpid; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	for p in $apids $jpid $spid; do wait "$p" 2>/dev/null; done
	umount "$data" 2>/dev/null
	[ -n "${JITT_STRESS_KEEP:-}" ] && cp -r "$tmp" "$JITT_STRESS_KEEP"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir "$tmp/bin" "$data" "$tmp/run"
cp "$src/jitt" "$src/jittd" "$src/jank-sim" "$tmp/bin/"
chmod 0755 "$tmp/bin" "$tmp/bin"/*
bin=$tmp/bin
# A small disk of its own: filled and freed below.
if [ -n "$root" ] && ! mount -t tmpfs -o size=8m,mode=0711,uid=$J,gid=$J tmpfs "$data"; then
	echo "skip a small full disk: cannot mount a tmpfs"
	root=
fi
mkdir "$data/spool"
chown $J:$J "$data" "$data/spool" "$tmp/run"
chmod 0711 "$data"
chmod 3733 "$data/spool"
chmod 1733 "$tmp/run"
conf=$tmp/jitt.conf
cat >"$conf" <<EOF
data_dir = $data
run_dir = $tmp/run
keep_traces = 1
max_traces = $max_traces
max_trace_mb = $max_trace_mb
cooldown_ms = 0
# Rings of 128 KiB, three threads an app: a trace is up to ~400 KiB, so both caps bind.
ring_kb = 128
max_threads = 4
# Only the triggers persist: no detector adds traces of its own on a loaded machine.
frame_budget_us = 10000000
jank_frames = 1000
hang_ms = 60000
log_level = info
EOF
chmod 0644 "$conf"

# ---- the sampler: the raw traces' files and bytes, and the slots, every 10 ms ----
sample() {
	while :; do
		# Size and blocks of each file; the raw traces' counted, the slots' blocks too. A
		# folder read while a file in it is renamed may list it under both names: in one
		# folder a slot's trace (-s<K>) is one file, its temporary or itself.
		list=$(find "$data/spool" "$data/traces" -maxdepth 1 -type f -printf '%h/%f %s %b\n' \
			2>/dev/null)
		printf '%s\n' "$list" |
			awk '{ f = $1; sub(/.*\//, "", f); dir = $1; sub(/\/[^\/]*$/, "", dir) }
			     f ~ /^\.slot-/ { s++; d += $3 * 512; next }
			     f !~ /\.jtr$|^\.tmp-trace-|^\.jittd-.*\.jtr\.tmp$/ { next }
			     { k = f; if (match(f, /-s[0-9]+(\.jtr|\.jtr\.tmp)?$/)) {
				       k = dir substr(f, RSTART); sub(/\.jtr.*/, "", k) }
			       if (!(k in seen)) { seen[k] = 1; n++; b += $2; d += $3 * 512 } }
			     END { print n + 0, b + 0, s + 0, d + 0 }' | tee "$tmp/last-sample"
		# The listing of a sample over the caps, kept for the report.
		if ! [ -s "$tmp/over-listing" ] && awk -v f=$max_traces -v b=$((max_trace_mb << 20)) \
			-v d=$(((max_trace_mb << 20) + max_traces * 8192)) \
			'$1 > f || $2 > b || $3 > f || $4 > d { x = 1 } END { exit !x }' "$tmp/last-sample"; then
			printf '%s\n' "$list" >"$tmp/over-listing"
		fi
		sleep 0.01
	done
}
sample >"$tmp/samples" &
spid=$!

# ---- jittd under its own uid ----
jittd_start() {
	(as $J "$bin/jittd" -f -c "$conf") >>"$tmp/jittd.log" 2>&1 &
	jpid=$!
	wait_for 10 "$bin/jitt" status -c "$conf" >/dev/null 2>&1
}
jittd_gone() { # wait until the one started last is gone (reaped), whatever it was sent
	wait "$jpid" 2>/dev/null
	jpid=
}
check "jittd starts (uid $J)" jittd_start

# ---- the apps, spread over the uids ----
i=0
while [ $i -lt "$napps" ]; do
	set -- $uids
	shift $((i % $#))
	(as "$1" env JITT_CONFIG="$conf" \
		"$bin/jank-sim" --scenario=none --frames 0 --fps 30 --work-us 200) \
		>"$tmp/app-$i.log" 2>&1 &
	apids="$apids $!"
	i=$((i + 1))
done
sockets() { [ "$(find "$tmp/run" -name 'jitt-*.sock' | wc -l)" -eq "$napps" ]; }
check "$napps apps under $(echo $uids | wc -w) uids make their control sockets" wait_for 30 sockets
# An app has nothing to persist until its threads are registered: asked until it has.
traced() { "$bin/jitt" status -c "$conf" "$1" 2>/dev/null | grep -q '^thread '; }
for p in $apids; do wait_for 10 traced "$p" || fail "app $p traces a thread"; done

# trigger NAME PID: one trace asked of an app, asked again while it is busy writing the
# last one; the reply's first line after NAME and PID.
trigger() {
	n=0
	while :; do
		r=$("$bin/jitt" trigger -c "$conf" "$2" "$1" 2>&1)
		case $r in
		*"busy: "*) n=$((n + 1)) ;;
		*) break ;;
		esac
		[ $n -lt 1000 ] || break
		sleep 0.005
	done
	printf '%s %s %s\n' "$1" "$2" "$(printf '%s\n' "$r" | head -n 1)"
}
# burst NAME: every app asked for six traces, all apps at once; the replies in
# $tmp/replies-PID.
burst() {
	tp=
	for p in $apids; do
		(for k in 1 2 3 4 5 6; do trigger "$1" "$p"; done) >>"$tmp/replies-$p" &
		tp="$tp $!"
	done
	for p in $tp; do wait "$p"; done
}

burst running
kill -STOP "$jpid"
burst starved
kill -CONT "$jpid"
kill -TERM "$jpid"
jittd_gone
burst stopped
check "jittd restarts after a stop" jittd_start
# Killed during a burst: the apps write on, the next jittd finishes what it left.
(burst killed) &
bp=$!
wait_for 10 grep -q '^killed' "$tmp"/replies-*
killed_jpid=$jpid
kill -9 "$jpid"
jittd_gone
wait "$bp"
check "jittd restarts after kill -9" jittd_start
# The disk full but 256 KiB: writes fail, copies are skipped, summaries go on.
if [ -n "$root" ]; then
	avail=$(df -k --output=avail "$data" | tail -n 1)
	dd if=/dev/zero of="$data/filler" bs=1k count=$((avail - 256)) 2>/dev/null
	burst full
	rm -f "$data/filler"
	burst freed
fi

drained() {
	[ "$(find "$data/spool" -name '*.jtr' | wc -l)" -eq 0 ] &&
		[ "$("$bin/jitt" status -c "$conf" | awk '$1 == "worker" { print $2 }')" = idle ]
}
check "the spool drains" wait_for 60 drained
kill "$spid"
wait "$spid" 2>/dev/null
spid=

# ---- the caps at every sample ----
cat "$tmp"/replies-* >"$tmp/replies"
set -- $(awk '$1 > f { f = $1 } $2 > b { b = $2 } $3 > s { s = $3 } $4 > d { d = $4 }
	END { print f + 0, b + 0, s + 0, d + 0 }' "$tmp/samples")
nsamples=$(wc -l <"$tmp/samples")
# On the disk: the traces rounded up to a page each, and a page of each slot (its pid; the
# rest is sparse).
over=$(awk -v f=$max_traces -v b=$((max_trace_mb << 20)) -v d=$(((max_trace_mb << 20) + max_traces * 8192)) \
	'$1 > f || $2 > b || $3 > f || $4 > d' "$tmp/samples" | wc -l)
echo "     $nsamples samples; peak: $1 files, $2 bytes, $3 slots, $4 bytes on the disk (caps: $max_traces files, $((max_trace_mb << 20)) bytes)"
if [ "$over" -eq 0 ]; then
	ok "the caps hold at every sample (0 of $nsamples over)"
else
	fail "the caps hold at every sample ($over of $nsamples over)" "$(awk -v f=$max_traces \
		-v b=$((max_trace_mb << 20)) -v d=$(((max_trace_mb << 20) + max_traces * 8192)) \
		'$1 > f || $2 > b || $3 > f || $4 > d { print "files bytes slots disk:", $0 }' \
		"$tmp/samples" | head -n 3; cat "$tmp/over-listing" 2>/dev/null)"
fi

# ---- every persisted trace summarised once, or counted as dropped ----
grep '^[a-z]* [0-9]* trace /' "$tmp/replies" | sed 's,.* trace .*/\([^/]*\)\.jtr$,\1,' | sort >"$tmp/persisted"
npersisted=$(wc -l <"$tmp/persisted")
nrefused=$(grep -c ' persist failed' "$tmp/replies")
missing=0 twice=0 dropped=0
while read -r t; do
	s=$(grep -c "$t.jtr: summarised into" "$tmp/jittd.log")
	# Its summary in the outbox, logged once; or not logged by a jittd killed with -9
	# between the summary's rename and its log line, and then found by the next one
	# ("already summarised": worker.c, step 2; CI met it once in 49).
	if [ -f "$data/outbox/$t.json" ] && { [ "$s" -eq 1 ] || { [ "$s" -eq 0 ] &&
		grep -q "$t.jtr: already summarised into" "$tmp/jittd.log"; }; }; then
		continue
	fi
	if grep -q "$t.jtr: dropped by the caps" "$tmp/jittd.log"; then
		dropped=$((dropped + 1))
	elif [ "$s" -gt 1 ]; then
		twice=$((twice + 1))
	else
		missing=$((missing + 1))
	fi
done <"$tmp/persisted"
sum_status() { # key: summed over the apps' `jitt status`
	for p in $apids; do "$bin/jitt" status -c "$conf" "$p" 2>/dev/null; done |
		awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }'
}
dropped_full=$(sum_status dropped_full)
failed_full=$(grep -c ' persist failed: .*spool is full' "$tmp/replies")
echo "     $npersisted persisted, $(ls "$data/outbox" | grep -c '\.json$') summaries, $dropped dropped by jittd's caps, $nrefused triggers not written ($failed_full at the caps; the apps' dropped_full $dropped_full)"
check "every persisted trace summarised once or counted as dropped ($missing missing, $twice twice)" \
	is "$missing $twice" "0 0"
check "every trace not written at the caps is counted in the apps' dropped_full" \
	is "$dropped_full" "$failed_full"
check "the apps' persisted counts the traces they reported" is "$(sum_status persisted)" "$npersisted"
check "no temporary is left (writers', jittd's)" \
	is "$(find "$data" -name '.tmp-*' -o -name '.jittd-*' | wc -l)" 0
# A slot the killed jittd held for a copy it was making stays until the grace for a gone
# claimant has passed (agent/spool.h): not counted here. Waited for (bounded), not read
# once: the drain is seen from outside, and a slot's release follows its file's removal
# (CI once found one slot more than the copies, its app alive; 3 runs here did not).
slots_match_copies() {
	held=0 orphaned=0
	for f in "$data/spool"/.slot-*; do
		[ -f "$f" ] || continue
		if [ "$(head -n 1 "$f")" = "$killed_jpid" ]; then
			orphaned=$((orphaned + 1))
		else
			held=$((held + 1))
		fi
	done
	kept=$(find "$data/traces" -name '*.jtr' | wc -l)
	[ "$held" -eq "$kept" ]
}
if wait_for 30 slots_match_copies; then
	ok "every slot is released once its trace is gone (kept copies hold theirs; $orphaned of the killed jittd's)"
else
	fail "$held slots held for $kept kept copies" "$(for f in "$data/spool"/.slot-*; do
		p=$(head -n 1 "$f"); printf '%s: pid %s%s\n' "${f##*/}" "$p" \
			"$(kill -0 "$p" 2>/dev/null && echo ' (alive)')"; done; ls -l "$data/spool" "$data/traces")"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
