#!/bin/sh
# A jittd killed with -9 under load, restarted at once the way the init files start it: the
# new one comes up serving and summarises what the killed one left. A killed jittd is not
# gone at once: its threads, at SCHED_IDLE, must still get a CPU to exit, and on busy CPUs
# they wait (here 0.1 to 1.4 s beside CPU hogs); until then it holds its socket, accepting
# connections it never answers. A jittd started then used to exit 1 ("another jittd is
# listening there"); it now waits for the old one's lock (agent/daemon/jittd.c, take_lock).
#
# The command line is the init files' (board/common/init/: jittd.service's ExecStart,
# jittd.rc's service line), with the settings given by $JITT_CONFIG as an OEM's image could;
# their restart settings must restart a jittd killed by a signal. Two restarts per init
# file: as soon as kill(2) returns (a supervisor that does not wait, a watchdog, a script),
# and as soon as the old one is reaped (what systemd and Android init wait for, before
# their RestartSec / restart_period). The load: twice as many CPU hogs as CPUs, and traces
# arriving in the spool while jittd is killed.
#
# usage: restart-check.sh SRC_DIR BIN_DIR   prints "ok what" / "FAIL what", then
#                                           "N passed, N failed"
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:?usage: restart-check.sh SRC_DIR BIN_DIR}" && pwd)
bin=$(cd "${2:?usage: restart-check.sh SRC_DIR BIN_DIR}" && pwd)
golden=$here/golden/decode-synthetic.jtr
init=$src/board/common/init
. "$here/check-lib.sh"

tmp=$(mktemp -d)
hogs= jpid=
cleanup() {
	[ -n "$hogs" ] && kill $hogs 2>/dev/null
	[ -n "$jpid" ] && kill -9 "$jpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# ---- the init files' restart settings
restart=$(sed -n 's/^Restart=//p' "$init/jittd.service")
case $restart in
on-failure | on-abnormal | always) ok "jittd.service: Restart=$restart restarts a jittd killed by a signal" ;;
*) fail "jittd.service: Restart=$restart does not restart a jittd killed with -9" ;;
esac
# An Android service is restarted when it dies unless it is a oneshot.
rc_block=$(sed -n '/^service jittd /,/^$/p' "$init/jittd.rc")
check "jittd.rc: the service is restarted when it dies (not a oneshot)" \
	sh -c '! printf "%s\n" "$1" | grep -q "^ *oneshot"' - "$rc_block"

# The command line each init runs, @BINDIR@ made ours.
cmd_systemd=$(sed -n 's/^ExecStart=//p' "$init/jittd.service" | sed "s|@BINDIR@|$bin|")
cmd_rc=$(printf '%s\n' "$rc_block" | sed -n 's/^service jittd //p' | sed "s|@BINDIR@|$bin|")
check "the init files start jittd in the foreground" \
	is "$cmd_systemd|$cmd_rc" "$bin/jittd -f|$bin/jittd -f"

# ---- kill -9 at load, restarted at once
d=$tmp/d
mkdir -p "$d/data" "$d/run"
cat >"$d/conf" <<EOF
data_dir = $d/data
run_dir = $d/run
max_traces = 1000
max_trace_mb = 1000
log_level = info
EOF
export JITT_CONFIG=$d/conf

serving() { # the jittd of pid $1 answers
	"$bin/jitt" status 2>/dev/null | grep -q "^pid $1\$"
}
up_or_gone() { # it serves, or it exited (a wait would be in vain)
	serving "$1" || ! kill -0 "$1" 2>/dev/null
}
# Started as the init would (its command line, our settings); its pid in $jpid.
launch() { # command line
	$1 >>"$d/log" 2>&1 &
	jpid=$!
}
summarised_all() { # every trace dropped so far has its summary, and the spool is empty
	[ "$(ls "$d/data/spool" | grep -c '\.jtr$')" -eq 0 ] &&
		[ "$(ls "$d/data/outbox" | grep -c '\.json$')" -eq "$dropped" ]
}
dropped=0
drop() { # N traces, as the runtime writes them: a temporary, then a rename
	k=0
	while [ $k -lt "$1" ]; do
		dropped=$((dropped + 1))
		cp "$golden" "$d/data/spool/.tmp-$dropped" &&
			mv "$d/data/spool/.tmp-$dropped" "$d/data/spool/trace-$dropped.jtr"
		k=$((k + 1))
	done
}

# A lock file planted in the run folder (any app may create files there: 1733) is replaced.
mkfifo "$d/run/jittd.lock"
launch "$cmd_systemd"
check "jittd starts and serves (a FIFO planted as its lock file replaced)" \
	wait_for 30 serving "$jpid"
# Load while it is killed and restarted: CPU hogs (SCHED_IDLE threads wait for them), and
# traces arriving. The hogs stop once the new jittd serves, or the summaries would wait.
load() {
	for c in $(seq 1 $((2 * $(nproc)))); do
		sh -c 'while :; do :; done' &
		hogs="$hogs $!"
	done
}
unload() {
	kill $hogs 2>/dev/null
	hogs=
}

round() { # name, command, "now" or "reaped"
	load
	drop 10
	old=$jpid
	t0=$(date +%s%N)
	kill -9 "$old"
	[ "$3" = reaped ] && wait "$old" 2>/dev/null
	launch "$2"
	if wait_for 60 up_or_gone "$jpid" && serving "$jpid"; then
		t1=$(date +%s%N)
		ok "$1: restarted $3 after kill -9 at load, the new jittd serves ($(((t1 - t0) / 1000000)) ms)"
	else
		fail "$1: restarted $3 after kill -9 at load, the new jittd serves" \
			"$(kill -0 "$jpid" 2>/dev/null && echo running || echo exited): $(tail -n 1 "$d/log")"
		# The init's next try, once the old one is gone: the rounds go on.
		unload
		wait "$old" 2>/dev/null
		launch "$2"
		wait_for 30 serving "$jpid"
	fi
	unload
	wait "$old" 2>/dev/null
	check "$1 ($3): what the killed one left is summarised, each trace once" \
		wait_for 60 summarised_all
}
round jittd.service "$cmd_systemd" now
round jittd.rc "$cmd_rc" now
round jittd.service "$cmd_systemd" reaped
round jittd.rc "$cmd_rc" reaped
waited=$(grep -c "waiting up to .* for jittd .* to exit" "$d/log")
echo "    the new jittd waited for the old one in $waited of 4 restarts"
check "no temporaries left in the spool or the outbox" \
	is "$(ls -A "$d/data/spool" "$d/data/outbox" | grep '^\.')" ""
kill -TERM "$jpid"
wait "$jpid"
check "the last jittd stops cleanly on SIGTERM" is "$? $(ls "$d/run")" "0 jittd.lock"
jpid=

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
