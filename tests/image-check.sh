#!/bin/sh
# The installed image, booted: what an OEM's device does with what `make install` laid out
# (docs/oem.md). Run as root by the /init of an image that board/common/boot-root.sh built;
# the folder of this script holds check-lib.sh, uids-check.sh, the test programs (bin/),
# the collector's certificates (certs/) and a collector built for the board (collector).
#   1. the installed init script starts jittd as its own user; it makes the folders with
#      their owners and modes;
#   2. the image's settings: Wi-Fi (the network file, as a connectivity service writes it),
#      the collector's CA where jitt.conf says, consent granted with `jitt consent grant`;
#   3. a traced app (jank-sim, its injected jank) under an app uid: the anomaly is detected,
#      persisted to the spool under the app's uid, summarised by jittd and uploaded over TLS
#      to the collector on the guest's own loopback (stored once, with the culprit);
#   4. from /proc: jittd's threads and the app's jitt-control thread may run only on the
#      LITTLE CPUs (the lowest cpu_capacity in sysfs: on a board of one class, all of them);
#   5. the many-uids rules (uids-check.sh) on this kernel and this BusyBox;
#   6. the init script stops jittd.
# Waits are for events (check-lib.sh), never fixed sleeps. POSIX sh (BusyBox).
#
# usage: image-check.sh        prints "ok what" / "FAIL what", then "N passed, N failed"
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/check-lib.sh"
# A booted board under TCG on a loaded machine is slow: the waits (check-lib.sh's patience
# times their seconds) only catch a hang.
conf=/etc/jitt.conf
jitt=/usr/bin/jitt
app_user=app_a
# The folders and files, as this build's jitt.conf says (its defaults are commented lines).
setting() { sed -n "s/^#* *$1 = //p" "$conf" | head -n 1; }
data=$(setting data_dir)
run=$(setting run_dir)
ca=$(setting upload_ca_file)
url=$(setting upload_url)
port=$(echo "$url" | sed -n 's|^https://localhost:\([0-9]*\)/.*|\1|p')
coll=/tmp/collector
apid= cpid=
cleanup() {
	for p in $apid $cpid; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT

# ---- 1. jittd from the installed init script ----
check "the init script starts jittd" /etc/init.d/jittd start
jpid=$(cat /var/run/jittd.pid 2>/dev/null)
check "jittd runs as user jitt" is "$(stat -c %U "/proc/$jpid" 2>/dev/null)" jitt
answers() { "$jitt" status >/dev/null 2>&1; }
check "jittd answers on its socket" wait_for 10 answers
check "data folder $data: 711 jitt:jitt" is "$(stat -c '%a %U:%G' "$data")" "711 jitt:jitt"
check "spool: 3733 jitt:jitt" is "$(stat -c '%a %U:%G' "$data/spool")" "3733 jitt:jitt"
check "run folder $run: 1733 jitt:jitt" is "$(stat -c '%a %U:%G' "$run")" "1733 jitt:jitt"

# ---- 2. the device's settings: Wi-Fi, the collector, consent ----
echo wifi >"$run/network"
check "the HAL sees Wi-Fi (the connectivity service's file)" \
	sh -c "'$jitt' hal | grep -q '^network: wifi'"
mkdir -p "$coll"
"$here/collector" serve --port "$port" --port-file "$coll/port" --cert "$here/certs/server.pem" \
	--key "$here/certs/server.key" --db "$coll/db" --dump "$coll/dump" 2>"$coll/log" &
cpid=$!
check "the collector listens on localhost:$port" wait_for 10 test -s "$coll/port"
check "the collector's CA is where jitt.conf says ($ca)" test -s "$ca"
check "jitt consent grant" "$jitt" consent grant
check "consent is granted" sh -c "'$jitt' consent status | grep -q granted"

# ---- 3. a traced app under an app uid, its anomaly summarised and uploaded ----
# BusyBox's su takes options anywhere before "--": the user and the command after it.
(exec su -s /bin/sh -c 'exec "$@"' -- "$app_user" app "$here/bin/jank-sim" --scenario=compute) \
	>/tmp/app.log 2>&1 &
apid=$!

# ---- 4. (while the app runs) CPUs from /proc ----
# expand "0-1,3" -> "0 1 3"
expand() {
	echo "$1" | tr ',' '\n' | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done | tr '\n' ' '
}
little=''
min=''
for c in /sys/devices/system/cpu/cpu[0-9]*; do
	cap=$(cat "$c/cpu_capacity" 2>/dev/null || echo 1024)
	if [ -z "$min" ] || [ "$cap" -lt "$min" ]; then min=$cap; fi
done
for c in /sys/devices/system/cpu/cpu[0-9]*; do
	cap=$(cat "$c/cpu_capacity" 2>/dev/null || echo 1024)
	[ "$cap" = "$min" ] && little="$little ${c##*cpu}"
done
little=$(echo $little | tr ' ' '\n' | sort -n | tr '\n' ' ')
echo "     LITTLE CPUs by sysfs cpu_capacity: $little(capacity $min)"
allowed_list() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$1/status"; } # task folder
allowed() { expand "$(allowed_list "$1")"; }
for t in /proc/"$jpid"/task/*; do
	echo "     jittd thread $(cat "$t/comm"): Cpus_allowed_list $(allowed_list "$t")"
	check "jittd thread $(cat "$t/comm") may run only on the LITTLE CPUs" is "$(allowed "$t")" "$little"
done
control_thread() {
	for t in /proc/"$apid"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = jitt-control ] && { echo "$t"; return 0; }
	done
	return 1
}
found_or_gone() { control_thread >/dev/null || ! kill -0 "$apid" 2>/dev/null; }
wait_for 20 found_or_gone
if control_thread >/dev/null; then
	t=$(control_thread)
	# It pins itself as it starts: waited for (a bound that only catches a hang).
	pinned() { [ "$(allowed "$t")" = "$little" ]; }
	wait_for 10 pinned
	echo "     app $(cat "/proc/$apid/comm") (uid $(stat -c %u "/proc/$apid")) thread jitt-control: Cpus_allowed_list $(allowed_list "$t")"
	check "the app's jitt-control thread may run only on the LITTLE CPUs" pinned
else
	fail "the app's jitt-control thread: not found"
	sed 's/^/     app: /' /tmp/app.log
fi
check "the app runs under uid $app_user" is "$(stat -c %U "/proc/$apid")" "$app_user"

app_done() { ! kill -0 "$apid" 2>/dev/null; }
check "the app ran its frames and exited" wait_for 120 app_done
wait "$apid"
st=$?
check "the app exited 0" is $st 0
[ $st = 0 ] || sed 's/^/     app: /' /tmp/app.log
apid=
summarised() { [ "$("$jitt" status | awk '$1 == "summarised" { print $2 }')" -ge 1 ]; }
check "jittd summarised the app's anomaly" wait_for 60 summarised
uploaded() { [ "$("$jitt" status | awk '$1 == "uploaded" { print $2 }')" -ge 1 ]; }
if wait_for 60 uploaded; then
	ok "jittd uploaded its report over TLS"
else
	fail "jittd uploaded its report over TLS"
	"$jitt" status | grep -E '^upload_' | sed 's/^/     /'
fi
check "the collector stored it" \
	sh -c "'$here/collector' stats --db '$coll/db' | grep -q '^reports stored: [1-9]'"
received=$coll/dump # every byte the collector received, headers included
check "the stored report names the culprit sim_culprit_compute" \
	grep -q sim_culprit_compute "$received"
check "the stored report's reason is jank" grep -q '"reason":"jank"' "$received"
"$jitt" status | grep -E '^(summarised|uploaded|upload_|consent)' | sed 's/^/     /'
echo "     what the collector received (the first 600 bytes of the body):"
sed -n '/^{/,$p' "$received" | head -c 600 | sed 's/^/     /'
echo
# Summaries stay on the device for a developer to read, consent or not.
set -- "$data"/outbox/*.json
check "the summary stays in the outbox, jittd's, 0600" is "$(stat -c '%a %U' "$1")" "600 jitt"

# ---- 5. many apps, many uids, on this kernel and BusyBox ----
add_part "$(sh "$here/uids-check.sh" "$here/bin" 2>&1)"

# ---- 6. stop ----
check "the init script stops jittd" /etc/init.d/jittd stop
check "jittd is gone" sh -c "! kill -0 $jpid 2>/dev/null"
kill "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
cpid=
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
