#!/bin/sh
# Many apps, many uids (docs/oem.md): the folders as the image's init makes them (the data
# folder 0711, the spool 3733 and the run folder 1733, all owned by jittd's uid and group),
# two traced apps under uids of their own, jittd under a third, and a system uid. Checks:
# - app A persists a trace (0640, owner A, jittd's group, by rename) and makes its socket
#   under uid A;
# - app B cannot list the spool or the run folder, cannot read A's trace, cannot rename,
#   delete, replace or write it, cannot remove A's socket, and its trigger of A is refused;
# - root, the system uid and A itself may trigger A;
# - jittd under its own uid (no capability) reads and summarises both apps' traces, and
#   removes them from the spool.
# Numeric uids through setpriv (no user is added to the machine), or su where the image
# names them (the booted image: board/common/qemu-boot.sh). Needs root: otherwise one
# "skip" line. Waits are for events (check-lib.sh), never fixed sleeps. POSIX sh.
#
# usage: uids-check.sh BIN_DIR     prints "ok what" / "FAIL what" / "skip what",
#                                  then "N passed, N failed"
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=${1:?usage: uids-check.sh BIN_DIR}
. "$here/check-lib.sh"

if [ "$(id -u)" != 0 ]; then
	echo "skip many apps, many uids: not root (needs to switch uids)"
	echo "0 passed, 0 failed"
	exit 0
fi

not() { ! "$@" 2>/dev/null; } # a command that must fail (its complaint not shown)

J=61001  # jittd
A=61002  # app A
B=61003  # app B
S=61004  # the system uid (system_uid)
# How to become a uid: util-linux's setpriv takes numbers; BusyBox's setpriv cannot switch
# uids, so in a booted BusyBox image su does it, by the names its /etc/passwd gives those uids.
name_of() { awk -F: -v u="$1" '$3 == u { print $1; exit }' /etc/passwd 2>/dev/null; }
if setpriv --reuid=$A --regid=$A --clear-groups true 2>/dev/null; then
	switcher=setpriv
elif [ -n "$(name_of $A)" ] && su -s /bin/sh -c true -- "$(name_of $A)" 2>/dev/null; then
	switcher=su
else
	echo "skip many apps, many uids: neither setpriv nor su can switch uids here"
	echo "0 passed, 0 failed"
	exit 0
fi
echo "     uids switched by $switcher"
# as_exec uid command...: becomes that uid and its own group only, then the command (in a
# subshell: `(as_exec ...) &` makes $! the command's pid); as: the same, waited for.
as_exec() {
	u=$1
	shift
	case $switcher in
	setpriv) exec setpriv --reuid="$u" --regid="$u" --clear-groups "$@" ;;
	# BusyBox's su takes options anywhere before "--": the user and the command after it.
	*) exec su -s /bin/sh -c 'exec "$@"' -- "$(name_of "$u")" as "$@" ;;
	esac
}
as() { (as_exec "$@"); }

tmp=$(mktemp -d /tmp/jitt-uids.XXXXXX)
apids=
jpid=
cleanup() {
	for p in $apids $jpid; do kill "$p" 2>/dev/null; done
	for p in $apids $jpid; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
chmod 0755 "$tmp"
# The programs where every uid may run them (the build tree may not be reachable).
mkdir "$tmp/bin"
cp "$src/jitt" "$src/jittd" "$src/jank-sim" "$tmp/bin/"
chmod 0755 "$tmp/bin" "$tmp/bin"/*
bin=$tmp/bin

# The folders as board/common/init/ makes them (tmpfiles.conf, jittd.sh, jittd.rc).
mkdir "$tmp/data" "$tmp/data/spool" "$tmp/run"
chown $J:$J "$tmp/data" "$tmp/data/spool" "$tmp/run"
chmod 0711 "$tmp/data"
chmod 3733 "$tmp/data/spool"
chmod 1733 "$tmp/run"
conf=$tmp/jitt.conf
cat >"$conf" <<EOF
data_dir = $tmp/data
run_dir = $tmp/run
system_uid = $S
keep_traces = 0
cooldown_ms = 0
# Only the triggers below persist: no detector may add a trace of its own on a loaded
# machine (frames of 10 s, a hang of a minute).
frame_budget_us = 10000000
jank_frames = 1000
hang_ms = 60000
max_threads = 8
log_level = info
EOF
chmod 0644 "$conf"
spool=$tmp/data/spool

# ---- two apps, each under its own uid ----
app() { # uid: start a traced app under it, idle until killed; its pid in $app
	(as_exec "$1" env JITT_CONFIG="$conf" "$bin/jank-sim" --scenario=none --frames 0) \
		>"$tmp/app-$1.log" 2>&1 &
	app=$!
	apids="$apids $app"
}
app $A
pa=$app
app $B
pb=$app
check "app A makes its control socket under uid A" \
	wait_for 10 test -S "$tmp/run/jitt-$pa.sock"
check "app B makes its control socket under uid B" \
	wait_for 10 test -S "$tmp/run/jitt-$pb.sock"
check "A's socket is owned by uid A" is "$(stat -c %u "$tmp/run/jitt-$pa.sock")" $A

# ---- A persists a trace under uid A ----
# Until its threads are registered the app has nothing to persist (ENODATA): asked again
# until it has, an event waited for.
a_trigger() {
	out=$(as $A "$bin/jitt" trigger -c "$conf" "$pa" "by A" 2>&1)
	matches "$out" "^trace $spool/trace-$pa-"
}
check "A triggers itself" wait_for 10 a_trigger
echo "     ($out)"
set -- "$spool"/trace-"$pa"-*.jtr
ta=$1
check "A's trace is in the spool" test -f "$ta"
check "A's trace: owner A, jittd's group, 0640 (the spool is set-group-id)" \
	is "$(stat -c '%u %g %a' "$ta")" "$A $J 640"
check "no temporary of A is left (written by rename)" \
	is "$(find "$spool" -name '.tmp-*' | wc -l)" 0
sum_a=$(md5sum <"$ta")

# ---- B against A's trace and socket ----
check "B cannot list the spool" not as $B ls "$spool"
check "B cannot list the run folder" not as $B ls "$tmp/run"
check "B cannot read A's trace" not as $B cat "$ta"
check "B cannot open A's trace for writing" not as $B sh -c ": >>'$ta'"
check "B cannot delete A's trace" not as $B rm -f "$ta"
check "B cannot rename A's trace" not as $B mv -f "$ta" "$spool/stolen.jtr"
as $B sh -c "echo forged >'$spool/.tmp-forged'" 2>/dev/null
check "B cannot replace A's trace (rename over it)" \
	not as $B mv -f "$spool/.tmp-forged" "$ta"
check "B cannot remove A's socket" not as $B rm -f "$tmp/run/jitt-$pa.sock"
out=$(as $B "$bin/jitt" trigger -c "$conf" "$pa" "by B" 2>&1)
st=$?
check "B's trigger of A is refused: $out" \
	sh -c "[ $st -ne 0 ] && printf '%s\n' '$out' | grep -q 'permission denied\|may not trigger'"
check "A counts B's refusal, persisted nothing for it" \
	sh -c "'$bin/jitt' status -c '$conf' $pa | grep -q '^refused 1\$' &&
		'$bin/jitt' status -c '$conf' $pa | grep -q '^persisted 1\$'"
check "A's trace is as A wrote it, where A put it" is "$(md5sum <"$ta")" "$sum_a"
check "A's trace is still A's, 0640" is "$(stat -c '%u %g %a' "$ta")" "$A $J 640"
check "A's socket is still there" test -S "$tmp/run/jitt-$pa.sock"
rm -f "$spool/.tmp-forged"

# ---- who may trigger A: root, the system uid, A ----
out=$("$bin/jitt" trigger -c "$conf" "$pa" "by root" 2>&1)
check "root triggers A: $out" matches "$out" "^trace $spool/trace-$pa-"
out=$(as $S "$bin/jitt" trigger -c "$conf" "$pa" "by system" 2>&1)
check "the system uid triggers A: $out" matches "$out" "^trace $spool/trace-$pa-"
out=$(as $B "$bin/jitt" trigger -c "$conf" "$pb" "by B" 2>&1)
check "B triggers itself: $out" matches "$out" "^trace $spool/trace-$pb-"
set -- "$spool"/trace-"$pb"-*.jtr
tb=$1
check "A cannot read B's trace" not as $A cat "$tb"
check "the system uid cannot read B's trace" not as $S cat "$tb"
check "four traces in the spool, each its app's, 0640 with jittd's group" \
	is "$(find "$spool" -name 'trace-*.jtr' -perm 0640 -group $J \
		\( -user $A -o -user $B \) | wc -l)" 4

# ---- the caps with no jittd to trim: A may not list the spool, so it cannot trim it ----
# Eight more of A's: 12 against max_traces 8 (the default). Each slot is claimed by name
# (agent/spool.h), so the ninth and later are not written, and A counts them.
for i in 1 2 3 4 5 6 7 8; do as $A "$bin/jitt" trigger -c "$conf" "$pa" "burst $i" >/dev/null 2>&1; done
check "no jittd: 12 persists leave max_traces 8 traces in the spool, not more" \
	is "$(find "$spool" -name 'trace-*.jtr' | wc -l)" 8
check "no jittd: A counts the 4 it could not write (dropped_full)" \
	sh -c "'$bin/jitt' status -c '$conf' $pa | grep -q '^dropped_full 4\$'"

# ---- jittd under its own uid reads and summarises them all ----
(as_exec $J "$bin/jittd" -f -c "$conf") >"$tmp/jittd.log" 2>&1 &
jpid=$!
summarised() { [ "$("$bin/jitt" status -c "$conf" 2>/dev/null |
	awk '$1 == "summarised" { print $2 }')" = 8 ]; }
spool_empty() { [ "$(find "$spool" -name '*.jtr' | wc -l)" -eq 0 ]; }
check "jittd (uid $J, no capability) summarises the eight traces of both apps" \
	wait_for 30 summarised
check "jittd removed them from the spool" wait_for 10 spool_empty
for f in "$tmp"/data/quarantine/*.why; do [ -f "$f" ] && echo "     quarantined: $(cat "$f")"; done
check "nothing was quarantined" \
	is "$(find "$tmp/data/quarantine" -type f 2>/dev/null | wc -l)" 0
check "eight summaries in the outbox, jittd's own files" \
	is "$(find "$tmp/data/outbox" -name '*.json' -user $J | wc -l)" 8
for who in "A" "root" "system" "B"; do
	check "a summary of the trace triggered by $who" \
		grep -q "\"reason\":\"external: by $who\"" "$tmp"/data/outbox/*.json
done
check "jittd's log names no unreadable trace" not grep -qi 'cannot open\|permission denied' "$tmp/jittd.log"

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
