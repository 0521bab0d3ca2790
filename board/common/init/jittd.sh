#!/bin/sh
# /etc/init.d/jittd: jittd, the summariser and uploader of jitt, for BusyBox and SysV init
# (docs/oem.md). Installed by `make install` from board/common/init/jittd.sh.
#   start    make the folders with their owner and mode, start jittd as @USER@
#   stop     stop it (SIGTERM: the trace being summarised is finished first)
#   restart  stop, then start
#   status   0 when it runs, 3 when not (LSB)
# Traced apps never make the folders, and jittd only checks them:
#   @DATA_DIR@        0711  jittd's; others may pass through it to the spool, list nothing
#   @DATA_DIR@/spool  3733  every traced app deposits its traces; sticky: none removes
#                           another's, none may list it; set-group-id: each trace takes
#                           the group @GROUP@ and is 0640: jittd reads it, no other app
#   @RUN_DIR@         1733  jittd's control socket and one per traced app (sticky as well)
# The user @USER@ (and group @GROUP@) must exist: the image makes it (/etc/passwd).
### BEGIN INIT INFO
# Provides:          jittd
# Required-Start:    $local_fs
# Required-Stop:     $local_fs
# Default-Start:     2 3 4 5
# Default-Stop:      0 1 6
# Short-Description: jitt flight recorder daemon
### END INIT INFO

DAEMON=@BINDIR@/jittd
USER=@USER@
GROUP=@GROUP@
DATA_DIR=@DATA_DIR@
RUN_DIR=@RUN_DIR@
PIDFILE=/var/run/jittd.pid

# dir MODE PATH: made if missing, then given its owner and mode (an existing one too: the
# image says what they are).
dir() {
	mkdir -p "$2" && chown "$USER:$GROUP" "$2" && chmod "$1" "$2"
}

running() {
	[ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

start() {
	if running; then
		echo "jittd: already running"
		return 0
	fi
	if ! id "$USER" >/dev/null 2>&1; then
		echo "jittd: no user $USER (the image makes it)" >&2
		return 1
	fi
	dir 0711 "$DATA_DIR" && dir 3733 "$DATA_DIR/spool" && dir 1733 "$RUN_DIR" || return 1
	echo "jittd: starting as $USER"
	# In the foreground for start-stop-daemon, which keeps its pid; the log to syslog.
	start-stop-daemon -S -b -m -p "$PIDFILE" -c "$USER:$GROUP" -x "$DAEMON" -- -f --syslog
}

stop() {
	if ! running; then
		echo "jittd: not running"
		rm -f "$PIDFILE"
		return 0
	fi
	echo "jittd: stopping"
	pid=$(cat "$PIDFILE")
	kill -TERM "$pid" || return 1
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "jittd: still running after 10 s" >&2
		return 1
	fi
	rm -f "$PIDFILE"
}

case ${1:-} in
start) start ;;
stop) stop ;;
restart) stop && start ;;
status)
	if running; then
		echo "jittd is running (pid $(cat "$PIDFILE"))"
	else
		echo "jittd is not running"
		exit 3
	fi
	;;
*)
	echo "usage: $0 start|stop|restart|status" >&2
	exit 2
	;;
esac
