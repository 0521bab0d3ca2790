#!/bin/sh
# The uploader end to end: jittd summarises real traces of the sim app, queues their
# reports and sends them over TLS to the reference collector on 127.0.0.1, started and
# stopped here. Checked:
#   - consent off, and on cellular, ethernet (not allowed) or an unknown network: the
#     collector sees zero connections;
#   - on Wi-Fi every report is stored exactly once despite 5xx answers, resets, stalls past
#     the timeout, and jittd killed with -9 twenty times in the middle of requests;
#   - 4xx (but 408/429) drops a report; a revoke in the middle of an upload stops it (the
#     report is never stored, not even after a new grant) and the outbox, the traces, the
#     queue and the secret are gone when `jitt consent revoke` returns; an OEM's settings app
#     writing the consent file is obeyed without a restart;
#   - the budget: the fourth report in a week waits, also after a restart of jittd;
#   - planted identifiers (a hostname, a user name in the app's path and a thread's name, a
#     MAC-looking thread name, an e-mail in an anomaly reason, a serial number in the
#     environment): not one of them in the bytes the collector received, headers included;
#   - Debian's nginx as the TLS endpoint in front of the collector.
# Host only (the collector, nginx and python3 are the build machine's). POSIX sh.
#
# usage: upload-check.sh BIN_DIR   prints "ok what" / "FAIL what", then "N passed, N failed"
set -u
here=$(cd "$(dirname "$0")" && pwd)
self=$here/upload-check.sh
bin=$(cd "${1:?usage: upload-check.sh BIN_DIR}" && pwd)
jittd=$bin/jittd
jitt=$bin/jitt
collector=$bin/collector
traces=$here/fuzz-corpus/traces
. "$here/check-lib.sh"
tmp=$(mktemp -d /tmp/jitt-upload.XXXXXX)
jpid= cpid= npid= spid=

cleanup() {
	for p in $jpid $cpid $npid $spid; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM


# ---- the collector ----
# coll_start DIR [FLAGS...]: a fresh collector (its own database) on a free port ($cport).
coll_start() {
	cdir=$1
	shift
	mkdir -p "$cdir"
	rm -f "$cdir/port"
	"$collector" serve --port 0 --port-file "$cdir/port" --cert "$tmp/certs/server.pem" \
		--key "$tmp/certs/server.key" --db "$cdir/db" --dump "$cdir/dump" \
		--conn-file "$cdir/conns" "$@" 2>>"$cdir/log" &
	cpid=$!
	wait_for 5 test -s "$cdir/port" || { echo "collector would not start:"; cat "$cdir/log"; return 1; }
	cport=$(cat "$cdir/port")
}
coll_stop() {
	[ -n "$cpid" ] && kill "$cpid" 2>/dev/null && wait "$cpid" 2>/dev/null
	cpid=
}
stored() { "$collector" stats --db "$1/db" 2>/dev/null | sed -n 's/^reports stored: //p'; }
conns() { cat "$1/conns" 2>/dev/null || echo 0; }
stored_is() { [ "$(stored "$1")" = "$2" ]; }
conns_at_least() { [ "$(conns "$1")" -ge "$2" ]; }

# ---- jittd ----
# setup DIR PORT [KEY=VALUE...]: a data folder, a fake HAL root (its network file) and a
# settings file for a jittd that uploads to the collector on PORT.
setup() {
	d=$1 port=$2
	shift 2
	mkdir -p "$d/root/run/jitt"
	{
		echo "data_dir = $d/data"
		echo "run_dir = $d/run"
		echo "log_level = debug"
		echo "max_threads = 3"
		echo "max_traces = 1000"
		echo "upload_url = https://localhost:$port/v1/reports"
		echo "upload_ca_file = $tmp/certs/ca.pem"
		echo "upload_poll_s = 1"
		echo "upload_backoff_ms = 200"
		echo "upload_timeout_ms = 3000"
		echo "upload_budget = 100"
		for kv in "$@"; do echo "$kv"; done
	} >"$d/conf"
}
net() { echo "$2" >"$1/root/run/jitt/network"; }
start() {
	"$jittd" -f -c "$1/conf" --root "$1/root" >>"$1/log" 2>&1 &
	jpid=$!
	wait_for 5 "$jitt" status -c "$1/conf" >/dev/null 2>&1
}
stop() {
	[ -n "$jpid" ] && kill "$jpid" 2>/dev/null && wait "$jpid" 2>/dev/null
	jpid=
}
kill9() {
	kill -9 "$jpid" 2>/dev/null
	wait "$jpid" 2>/dev/null
	jpid=
}
# stat_of DIR KEY: one value of `jitt status`.
stat_of() { "$jitt" status -c "$1/conf" 2>/dev/null | sed -n "s/^$2 //p"; }
stat_is() { [ "$(stat_of "$1" "$2")" = "$3" ]; }
# A trace arriving as the runtime writes one: a temporary name, then a rename.
n_drop=0
drop() { # DIR [SCENARIO]
	n_drop=$((n_drop + 1))
	cp "$traces/sim-${2:-blocked}.jtr" "$1/data/spool/.tmp-t$n_drop" &&
		mv "$1/data/spool/.tmp-t$n_drop" "$1/data/spool/t$n_drop.jtr"
}
grant() { "$jitt" consent grant -c "$1/conf" >/dev/null; }
queued() { ls "$1/data/uploads" 2>/dev/null | grep -c '^r-.*\.json$'; }
queued_is() { [ "$(queued "$1")" = "$2" ]; }

sh "$here/certs.sh" "$tmp/certs" >/dev/null 2>&1 || { fail "tests/certs.sh"; echo "$passed passed, $failed failed"; exit 1; }

# ---- a full disk under the queue, in a mount namespace of its own:
# `UPLOAD_CHECK_DISKFULL=DIR upload-check.sh BIN` ----
if [ -n "${UPLOAD_CHECK_DISKFULL:-}" ]; then
	c=$tmp/c-full d=$UPLOAD_CHECK_DISKFULL
	coll_start "$c" && setup "$d" "$cport" && net "$d" offline
	mkdir -p "$d/data/uploads"
	mount -t tmpfs -o size=64k,mode=0700 tmpfs "$d/data/uploads" || { echo "skip disk full: no tmpfs"; exit 0; }
	start "$d" && grant "$d"
	dd if=/dev/zero of="$d/data/uploads/filler" bs=4096 2>/dev/null
	drop "$d"
	check "disk full: the summary is still written" wait_for 10 stat_is "$d" summarised 1
	check "disk full: the report's loss is counted" wait_for 10 stat_is "$d" upload_dropped_failed 1
	check "disk full: nothing half-written in uploads/" \
		[ -z "$(ls -A "$d/data/uploads" | grep -v '^filler$' | grep -v '^secret$')" ]
	check "disk full: the log says why" grep -q "report not queued: No space" "$d/log"
	rm -f "$d/data/uploads/filler"
	drop "$d"
	check "disk full: once space is back, the next is queued" wait_for 10 queued_is "$d" 1
	net "$d" wifi
	check "disk full: ... and stored" wait_for 20 stored_is "$c" 1
	stop
	coll_stop
	umount "$d/data/uploads"
	echo "$passed passed, $failed failed"
	exit 0
fi
[ -x "$collector" ] || { fail "no collector in $bin"; echo "$passed passed, $failed failed"; exit 1; }

# ---- consent off: summaries on the device, nothing queued, no connection ----
c=$tmp/c-off d=$tmp/off
coll_start "$c" && setup "$d" "$cport" && net "$d" wifi && start "$d"
drop "$d"
check "consent off: the trace is still summarised" wait_for 10 stat_is "$d" summarised 1
check "consent off: jitt consent status says revoked" \
	sh -c "'$jitt' consent status -c '$d/conf' | grep -qx 'consent revoked'"
check "consent off: nothing queued" queued_is "$d" 0
check "consent off: no file in uploads/ at all (no secret)" sh -c "[ -z \"\$(ls '$d/data/uploads')\" ]"
check "consent off: the collector saw no connection" [ "$(conns "$c")" = 0 ]
stop
coll_stop

# ---- the network: only Wi-Fi ----
c=$tmp/c-net d=$tmp/net
coll_start "$c" && setup "$d" "$cport" && net "$d" cellular && start "$d" && grant "$d"
drop "$d" && drop "$d" compute && drop "$d" many-short
check "cellular: the reports are queued" wait_for 10 queued_is "$d" 3
for state in cellular ethernet garbage offline; do
	net "$d" "$state"
	want=$state
	[ "$state" = garbage ] && want=unknown
	"$jitt" status -c "$d/conf" >/dev/null # a poll a second: wait for the uploader's look
	check "$state: the uploader saw $want and waits" wait_for 10 stat_is "$d" upload_network "$want"
done
rm -f "$d/root/run/jitt/network" # no override, no routing table in the fake root: unknown
check "no network file: unknown" wait_for 10 stat_is "$d" upload_network unknown
check "cellular, ethernet (not allowed), unknown, offline: zero connections" [ "$(conns "$c")" = 0 ]
net "$d" wifi
check "wifi: the reports are stored" wait_for 20 stored_is "$c" 3
check "wifi: the queue is empty" wait_for 5 queued_is "$d" 0
check "wifi: the three shared one connection" stat_is "$d" upload_connections 1
check "the request carried the idempotency key as a header" grep -aq '^Idempotency-Key: ' "$c/dump"
stop
coll_stop

# ---- ethernet where the build or the settings allow it ----
c=$tmp/c-eth d=$tmp/eth
coll_start "$c" && setup "$d" "$cport" "upload_allow_ethernet = 1" && net "$d" ethernet && start "$d" &&
	grant "$d"
drop "$d"
check "ethernet, allowed: stored" wait_for 20 stored_is "$c" 1
stop
coll_stop

# ---- which reports use the budget ----
c=$tmp/c-campaign d=$tmp/campaign
coll_start "$c" && setup "$d" "$cport" "upload_pick = campaign" "upload_campaign = other-app 0badc0de" &&
	net "$d" wifi && start "$d" && grant "$d"
drop "$d"
check "campaign: an app not on the list is counted, not queued" wait_for 10 stat_is "$d" upload_dropped_campaign 1
check "campaign: nothing queued, no connection" sh -c "[ \"\$(ls '$d/data/uploads' | grep -c '^r-')\" = 0 ] && [ \"\$(cat '$c/conns')\" = 0 ]"
stop
setup "$d" "$cport" "upload_pick = campaign" "upload_campaign = other-app jank-sim"
start "$d"
drop "$d"
check "campaign: an app on the list is sent" wait_for 20 stored_is "$c" 1
stop
coll_stop

c=$tmp/c-severe d=$tmp/severe
coll_start "$c" && setup "$d" "$cport" "upload_pick = severe" "upload_budget = 1" &&
	net "$d" offline && start "$d" && grant "$d"
# The corpus's traces by window length: many-short (under a millisecond) < compute (about
# 12 ms) < hang (hundreds of ms); what is sent must be the hang, known by its window's
# length, read from its own summary (the seeds are remade when the formats change).
hang_ns=$("$jitt" summarize --json "$traces/sim-hang.jtr" |
	sed -n 's/.*"window":{"kind":"[a-z]*","ns":\([0-9]*\).*/\1/p')
drop "$d" compute
check "severe: the first report waits" wait_for 10 queued_is "$d" 1
drop "$d" hang
check "severe: a longer slow frame takes its place" wait_for 10 stat_is "$d" upload_dropped_budget 1
drop "$d" many-short
check "severe: a shorter one is dropped" wait_for 10 stat_is "$d" upload_dropped_budget 2
check "severe: one report waits" queued_is "$d" 1
net "$d" wifi
check "severe: the most severe is the one sent" wait_for 20 stored_is "$c" 1
check "severe: ... the hang (its window of $hang_ns ns)" grep -aq "\"ns\":$hang_ns," "$c/dump"
stop
coll_stop

# ---- faults: each report stored exactly once ----
# fault NAME EXPECTED-STORED COLLECTOR-FLAGS...
fault() {
	name=$1 want=$2
	shift 2
	c=$tmp/c-$name d=$tmp/f-$name
	coll_start "$c" "$@" && setup "$d" "$cport" "upload_timeout_ms = 1000" && net "$d" wifi &&
		start "$d" && grant "$d"
	drop "$d"
	if [ "$want" = 1 ]; then
		check "$name: stored once after retrying" wait_for 30 stored_is "$c" 1
		check "$name: the queue is empty" wait_for 5 queued_is "$d" 0
		check "$name: retried" [ "$(stat_of "$d" upload_retries)" -ge 1 ]
	else
		check "$name: dropped, counted" wait_for 30 stat_is "$d" upload_refused 1
		check "$name: not stored" stored_is "$c" 0
		check "$name: not queued" queued_is "$d" 0
	fi
	stop
	coll_stop
}
fault 5xx 1 --fail-first 2
fault reset 1 --reset-first 2
fault stall 1 --stall-first 1
fault http-500 1 --status-first 1:500
fault http-429 1 --status-first 1:429
fault http-408 1 --status-first 1:408
fault http-400 0 --status-first 1:400

# ---- kill -9 in the middle of requests, twenty times ----
c=$tmp/c-kill d=$tmp/kill
coll_start "$c" --slow-read && setup "$d" "$cport" && net "$d" offline && start "$d" && grant "$d"
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do drop "$d" compute; done
check "kill -9: twenty reports queued while offline" wait_for 30 queued_is "$d" 20
stop
net "$d" wifi
kills=0
for round in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	before=$(conns "$c")
	start "$d" || break
	# The moment a connection opens, the upload is under way: kill then.
	wait_for 10 conns_at_least "$c" $((before + 1)) && kill9 && kills=$((kills + 1))
	[ -n "$jpid" ] && kill9
done
start "$d"
check "kill -9: $kills kills in the middle of uploads" [ "$kills" -ge 15 ]
check "kill -9: every report stored exactly once" wait_for 60 stored_is "$c" 20
check "kill -9: the queue is empty" wait_for 10 queued_is "$d" 0
stop
coll_stop

# ---- revoke in the middle of an upload ----
# The collector reads the whole request and never answers: the upload is in flight, waiting.
c=$tmp/c-revoke d=$tmp/revoke
coll_start "$c" --stall-first 1000 && setup "$d" "$cport" "upload_timeout_ms = 60000" "keep_traces = 1" &&
	net "$d" wifi && start "$d" && grant "$d"
drop "$d"
check "revoke: an upload in flight (the collector holds its request)" wait_for 10 sh -c "grep -q stalled '$c/log'"
check "revoke: a summary and a kept trace exist" sh -c "ls '$d/data/outbox' | grep -q json && ls '$d/data/traces' | grep -q jtr"
"$jitt" consent revoke -c "$d/conf" >/dev/null
# All done before the command answered: no waiting here.
check "revoke: outbox, traces and the spool are empty when it answers" \
	[ -z "$(ls -A "$d/data/outbox")$(ls -A "$d/data/traces")$(ls -A "$d/data/spool")" ]
check "revoke: the queue is empty when it answers" queued_is "$d" 0
check "revoke: the install secret is gone" [ ! -e "$d/data/uploads/secret" ]
check "revoke: the upload in flight was stopped" wait_for 5 stat_is "$d" upload_aborted 1
grant "$d"
"$jitt" status -c "$d/conf" >/dev/null
check "revoke: after a new grant, the queue stays empty" wait_for 5 queued_is "$d" 0
check "revoke: a new secret after the new grant" test -s "$d/data/uploads/secret"
check "revoke: the report was never sent again (one connection, one request)" \
	sh -c "[ \"\$(cat '$c/conns')\" = 1 ] && [ \"\$(grep -c stalled '$c/log')\" = 1 ]"
# An OEM's settings app writes the file itself.
printf 'revoked\n' >"$d/data/consent.new" && mv "$d/data/consent.new" "$d/data/consent"
check "consent file written by the OEM: revoked without a restart" wait_for 5 sh -c "[ ! -e '$d/data/uploads/secret' ]"
check "consent file: jitt status says revoked" stat_is "$d" consent revoked
printf 'granted\n' >"$d/data/consent.new" && mv "$d/data/consent.new" "$d/data/consent"
check "consent file: granted again without a restart" wait_for 5 stat_is "$d" consent granted
chmod 666 "$d/data/consent"
check "consent file writable by others: not believed" wait_for 5 stat_is "$d" consent revoked
stop
coll_stop

# ---- the budget: three a week ----
c=$tmp/c-budget d=$tmp/budget
coll_start "$c" && setup "$d" "$cport" "upload_budget = 3" && net "$d" wifi && start "$d" && grant "$d"
for i in 1 2 3; do
	drop "$d"
	check "budget: report $i of 3 stored" wait_for 20 stored_is "$c" "$i"
done
drop "$d"
check "budget: the fourth is queued" wait_for 10 queued_is "$d" 1
check "budget: and waits (budget_left 0)" wait_for 10 stat_is "$d" upload_budget_left 0
stop
start "$d"
check "budget: after a restart, still waiting" wait_for 10 stat_is "$d" upload_network wifi
check "budget: after a restart, still 3 stored" stored_is "$c" 3
check "budget: after a restart, the budget is still spent" stat_is "$d" upload_budget_left 0
check "budget: after a restart, the fourth still queued" queued_is "$d" 1
stop
coll_stop

# ---- planted identifiers ----
c=$tmp/c-plant d=$tmp/plant
# The device's name: set in a UTS namespace of the sim app's own when we may (root), so it
# is one nobody else would print; else the machine's, when long enough to be telling.
host=pixel-of-alice-7
uts="unshare --uts"
$uts sh -c "hostname $host" 2>/dev/null || { uts= host=$(hostname); }
coll_start "$c" && setup "$d" "$cport" "upload_budget = 3" && net "$d" wifi && start "$d" && grant "$d"
mkdir -p "$tmp/home/alice.smith/apps"
cp "$bin/jank-sim" "$tmp/home/alice.smith/apps/jank-sim"
JITT_CONFIG=$d/conf SERIAL_NUMBER=R58N91ZXK2Q HOSTNAME=$host \
	$uts sh -c "${uts:+hostname $host;} exec '$tmp/home/alice.smith/apps/jank-sim' --frames 0 \
	--thread-names alice.smith,aa:bb:cc:dd:ee,sn-R58N91ZXK2Q" >/dev/null 2>"$d/sim.log" &
spid=$!
sim_pid=$spid
# Triggered once its threads are traced (a trigger before that is refused: nothing to save).
trigger() { "$jitt" trigger "$spid" "mail bob@corp.example now" -c "$d/conf" >/dev/null 2>&1; }
if wait_for 10 test -S "$d/run/jitt-$spid.sock" && wait_for 10 trigger; then
	ok "planted: the sim app ran and was triggered"
else
	fail "planted: the sim app ran and was triggered" "$(cat "$d/sim.log")"
fi
check "planted: its report was stored" wait_for 30 stored_is "$c" 1
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
spid=
check "planted: the received bytes hold the report" grep -aq '"schema":"jitt.report"' "$c/dump"
check "planted: the summary on the device does name the planted thread" \
	grep -rqa 'alice.smith' "$d/data/outbox"
[ ${#host} -ge 6 ] || host=alice.smith # a short name could be anywhere
for planted in "$host" alice.smith aa:bb:cc:dd:ee bob@corp.example corp.example R58N91ZXK2Q \
	/home/ "$tmp" "jitt-$sim_pid"; do
	check "planted: '$planted' is not in what the collector received" \
		sh -c "! grep -aqF -- '$planted' '$c/dump'"
done
check "planted: the thread is sent as thread-N" grep -aq '"thread-[0-9]' "$c/dump"
stop
coll_stop

# ---- nginx as the TLS endpoint, the collector behind it ----
c=$tmp/c-nginx d=$tmp/nginx
mkdir -p "$c" "$tmp/ngx/logs"
"$collector" serve --plain --port 0 --port-file "$c/port" --db "$c/db" --dump "$c/dump" \
	--conn-file "$c/conns" 2>>"$c/log" &
cpid=$!
if wait_for 5 test -s "$c/port"; then
	back=$(cat "$c/port")
	nport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	cat >"$tmp/ngx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $tmp/ngx/nginx.pid;
error_log $tmp/ngx/logs/error.log info;
events { worker_connections 32; }
http {
	access_log $tmp/ngx/logs/access.log;
	client_body_temp_path $tmp/ngx/body;
	proxy_temp_path $tmp/ngx/proxy;
	fastcgi_temp_path $tmp/ngx/fastcgi;
	uwsgi_temp_path $tmp/ngx/uwsgi;
	scgi_temp_path $tmp/ngx/scgi;
	server {
		listen 127.0.0.1:$nport ssl;
		ssl_certificate $tmp/certs/server.pem;
		ssl_certificate_key $tmp/certs/server.key;
		ssl_protocols TLSv1.2;
		location /v1/reports {
			proxy_pass http://127.0.0.1:$back;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
EOF
	/usr/sbin/nginx -p "$tmp/ngx" -c "$tmp/ngx/nginx.conf" -e "$tmp/ngx/logs/error.log" &
	npid=$!
	setup "$d" "$nport" && net "$d" wifi && start "$d" && grant "$d"
	drop "$d"
	check "nginx in front: the report reached the collector once" wait_for 30 stored_is "$c" 1
	check "nginx in front: nginx logged the POST" grep -q 'POST /v1/reports' "$tmp/ngx/logs/access.log"
	stop
	kill "$npid" 2>/dev/null
	wait "$npid" 2>/dev/null
	npid=
else
	fail "nginx in front: the plain collector started"
fi
coll_stop

# ---- a full disk (the part at the top, in its own mount namespace) ----
d=$tmp/full
mkdir -p "$d"
if [ "$(id -u)" -eq 0 ]; then ns="unshare --mount"; else ns="unshare --user --map-root-user --mount"; fi
if $ns sh -c "mount -t tmpfs -o size=64k tmpfs '$d' && umount '$d'" 2>/dev/null; then
	add_part "$($ns env UPLOAD_CHECK_DISKFULL="$d" sh "$self" "$bin" 2>&1)"
else
	echo "skip disk full: cannot mount a small tmpfs (not root, no user namespaces)"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
