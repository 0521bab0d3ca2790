#!/bin/sh
# The reference collector (uploader/collector/) end to end, over real TLS on 127.0.0.1, seen
# by clients we did not write: curl, openssl s_client and python3. A valid report is stored
# once (201, then 200 for the same key); bad bodies, bad heads and bad framing get a 4xx and
# the collector goes on; keep-alive and pipelining; TLS 1.2 with ECDHE and an AEAD cipher
# only; every fault flag (--fail-first, --status-first, --stall-first, --reset-first,
# --slow-read) and the certificate faults; random bytes and cut TLS handshakes crash
# nothing; --plain, --dump, --conn-file, SIGTERM and `collector stats`.
# On the build machine only (BOARD=host: curl, openssl and python3 from board/common/deps.sh).
#
# usage: collector-check.sh BIN_DIR   prints "ok what" / "FAIL what", then "N passed, N failed"
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: collector-check.sh BIN_DIR}
bin=$(cd "$bin" && pwd)
coll=$bin/collector
sample=$here/data/report-sample.json
sample2=$here/data/report-sample-v2.json # version 2: from a version 3 summary (scheduling)
key2=7a2d3e4f-5b6c-4d7e-8f90-a1b2c3d4e5f6
key=6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21
cpid=

. "$here/check-lib.sh"

tmp=$(mktemp -d)
trap 'stop >/dev/null 2>&1; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
certs=$tmp/certs
if ! sh "$here/certs.sh" "$certs" >"$tmp/certs.log" 2>&1; then
	cat "$tmp/certs.log"
	fail "test certificates (tests/certs.sh)"
	echo "$passed passed, $failed failed"
	exit 1
fi
[ -x "$coll" ] || { fail "$coll is built"; echo "$passed passed, $failed failed"; exit 1; }

# start NAME [FLAGS...]: a collector on its own folder $tmp/NAME, TLS with the test server
# certificate unless FLAGS say otherwise; waits for its port file. Sets d, port, url.
start() {
	d=$tmp/$1
	shift
	mkdir -p "$d"
	tls="--cert $certs/server.pem --key $certs/server.key"
	case " $* " in *" --plain "* | *" --cert "*) tls= ;; esac
	"$coll" serve --port 0 --port-file "$d/port" --db "$d/db" --conn-file "$d/conns" \
		--dump "$d/dump" $tls "$@" 2>>"$d/log" &
	cpid=$!
	if ! wait_for 10 test -s "$d/port"; then
		fail "collector started ($*)" "$(cat "$d/log")"
		return 1
	fi
	port=$(cat "$d/port")
	url=https://localhost:$port/v1/reports
	case " $* " in *" --plain "*) url=http://localhost:$port/v1/reports ;; esac
}
stop() { # SIGTERM; the collector's exit status
	[ -n "$cpid" ] || return 0
	kill -TERM "$cpid" 2>/dev/null
	wait "$cpid"
	s=$?
	cpid=
	return $s
}
alive() { kill -0 "$cpid" 2>/dev/null; }
conns() { cat "$d/conns" 2>/dev/null; }
stored() { "$coll" stats --db "$d/db" | sed -n 's/^reports stored: //p'; }

# post FILE [KEY [CURL ARGS...]]: POST a body; prints the status (000 when none came).
# The answer's body is in $tmp/answer, its head in $tmp/head.
post() {
	f=$1 k=${2:-$key}
	shift
	[ $# -gt 0 ] && shift
	curl -sS --cacert "$certs/ca.pem" -m $((10 * patience)) -o "$tmp/answer" -D "$tmp/head" \
		-w '%{http_code}' -H "Idempotency-Key: $k" -H 'Content-Type: application/json' \
		--data-binary @"$f" "$@" "$url" 2>"$tmp/curl.err"
}
# A variant of the sample report: sed expressions applied to it. Sets v.
variant() {
	v=$tmp/variant.json
	sed "$@" "$sample" >"$v"
}
# A new key into the sample: a second report. Sets v.
with_key() { variant -e "s/$key/$1/"; }
# One raw exchange over TLS (openssl s_client, a client we did not write): the bytes of $1
# sent as they are, the answer's first line printed.
raw_tls() {
	printf "$1" | openssl s_client -quiet -connect "127.0.0.1:$port" -servername localhost \
		-CAfile "$certs/ca.pem" 2>/dev/null | head -n 1 | tr -d '\r'
}

# ---- a valid report: 201, then 200 for the same key, stored once ----
start main || exit 1
check "port file written, connections file says 0" is "$(conns)" 0
check "a valid report: 201" is "$(post "$sample")" 201
check "... the receipt names the key" matches "$(cat "$tmp/answer")" "\"stored\":true,\"key\":\"$key\""
check "... the log line says 201 and the key" wait_for 5 grep -q "201 Created key=$key" "$d/log"
check "the same report again: 200 (already stored)" is "$(post "$sample")" 200
check "... the receipt says duplicate" matches "$(cat "$tmp/answer")" '"duplicate":true'
check "... stored once (stats: 1 report)" is "$(stored)" 1
check "every connection counted (conn file: 2)" is "$(conns)" 2
check "--dump holds the request's head and body" \
	sh -c "grep -q 'Idempotency-Key: $key' '$d/dump' && grep -q '\"schema\":\"jitt.report\"' '$d/dump'"

# ---- bad bodies: 400 with a reason, nothing stored ----
bad_body() { # what, then sed expressions on the sample
	what=$1
	shift
	variant "$@"
	st=$(post "$v")
	if [ "$st" = 400 ] && grep -q '"error":' "$tmp/answer"; then ok "bad body, $what: 400"
	else fail "bad body, $what: 400" "got $st: $(cat "$tmp/answer" "$tmp/curl.err")"; fi
}
printf 'this is not JSON' >"$tmp/notjson"
check "bad body, not JSON: 400" is "$(post "$tmp/notjson")" 400
head -c 300 "$sample" >"$tmp/cut"
check "bad body, cut short: 400" is "$(post "$tmp/cut")" 400
printf '' >"$tmp/empty"
check "bad body, empty: 400" is "$(post "$tmp/empty")" 400
bad_body "wrong schema" -e 's/"jitt.report"/"jitt.summary"/'
bad_body "version 3" -e 's/"version":1/"version":3/'
bad_body "version 0" -e 's/"version":1/"version":0/'
bad_body "key not a UUID" -e "s/$key/not-a-uuid/"
bad_body "id upper-case" -e 's/"id":"3b8e/"id":"3B8E/'
bad_body "id too short" -e 's/"id":"3b8e/"id":"/'
bad_body "hour with minutes" -e 's/2026-11-23T11/2026-11-23T11:05/'
bad_body "hour 24" -e 's/2026-11-23T11/2026-11-23T24/'
bad_body "period a string" -e 's/"period":683/"period":"683"/'
bad_body "build_id not hex" -e 's/"build_id":"9f2c/"build_id":"zz2c/'
bad_body "app.name with a folder" -e 's|"name":"jank-sim"}|"name":"/home/alice/jank-sim"}|'
bad_body "detector not on the list" -e 's/"detector":"jank"/"detector":"slow"/'
bad_body "an unknown envelope member" -e 's/"version":1,/"version":1,"hostname":"alice-phone",/'
bad_body "a repeated envelope member" -e 's/"version":1,/"version":1,"version":1,/'
bad_body "summary not an object" -e 's/"summary":{/"summary":[{/' -e 's/"thread":"ui"}}/"thread":"ui"}]}/'
bad_body "functions entry not [int,int,string]" -e 's/\[0,4096,"main"\]/[0,"4096","main"]/'
bad_body "modules entry not hex" -e 's/\[\["9f2c4d1e/[["xx2c4d1e/'
bad_body "top_window index out of range" -e 's/"top_window":\[\[2,/"top_window":[[3,/'
bad_body "top_trace index negative" -e 's/"top_trace":\[\[2,/"top_trace":[[-1,/'
check "bad body, Idempotency-Key differs from the key: 400" \
	is "$(post "$sample" 11111111-2222-3333-4444-555555555555)" 400
check "... the reason says so" matches "$(cat "$tmp/answer")" "Idempotency-Key differs"
st=$(curl -sS --cacert "$certs/ca.pem" -m $((10 * patience)) -o "$tmp/answer" -w '%{http_code}' \
	--data-binary @"$sample" "$url" 2>&1)
check "no Idempotency-Key header: 400" is "$st" 400
check "still 1 report stored after the bad ones" is "$(stored)" 1

# ---- bad framing and heads: a 4xx, the connection closed ----
head -c 70000 /dev/zero | tr '\0' ' ' >"$tmp/huge"
check "a body over 64 KiB: 413" is "$(post "$tmp/huge")" 413
check "a head over 8 KiB: 431" is "$(post "$sample" "$key" -H "X-Pad: $(head -c 9000 /dev/zero | tr '\0' a)")" 431
check "a chunked body: 411" is "$(post "$sample" "$key" -H 'Transfer-Encoding: chunked')" 411
check "another path: 404" is "$(curl -sS --cacert "$certs/ca.pem" -o /dev/null -w '%{http_code}' \
	--data-binary @"$sample" "${url%/v1/reports}/v1/other")" 404
check "GET: 405" is "$(curl -sS --cacert "$certs/ca.pem" -o /dev/null -w '%{http_code}' "$url")" 405
check "Expect: 100-continue: 200 (the body sent after 100)" \
	is "$(post "$sample" "$key" -H 'Expect: 100-continue')" 200
check "a garbage request line: 400" is "$(raw_tls 'GARBAGE\r\n\r\n')" "HTTP/1.1 400 Bad Request"
check "a request line with no CRLF, then more: 400" is "$(raw_tls 'POST /v1/reports HTTP/1.1\nHost: x\n\n')" \
	"HTTP/1.1 400 Bad Request"
check "HTTP/2.0 in the request line: 505" is "$(raw_tls 'POST /v1/reports HTTP/2.0\r\n\r\n')" \
	"HTTP/1.1 505 HTTP Version Not Supported"
check "two different Content-Lengths: 400" \
	is "$(raw_tls 'POST /v1/reports HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello')" \
	"HTTP/1.1 400 Bad Request"
check "a bad Content-Length: 400" \
	is "$(raw_tls 'POST /v1/reports HTTP/1.1\r\nContent-Length: -5\r\n\r\n')" "HTTP/1.1 400 Bad Request"
with_key 0a1b2c3d-0000-4000-8000-000000000002
check "after all that, the collector still serves: a new report 201" is "$(post "$v" 0a1b2c3d-0000-4000-8000-000000000002)" 201
check "stats: 2 reports" is "$(stored)" 2

# ---- keep-alive: several requests on one connection ----
before=$(conns)
out=$(curl -sS --cacert "$certs/ca.pem" -m $((10 * patience)) -o /dev/null -o /dev/null -o /dev/null \
	-w '%{http_code} %{num_connects}\n' -H "Idempotency-Key: $key" --data-binary @"$sample" \
	"$url" "$url" "$url" 2>&1 | tr '\n' ' ')
check "keep-alive: 3 requests, 200 each, on 1 connection" is "$out" "200 1 200 0 200 0 "
check "... the conn file counts 1 more" is "$(conns)" $((before + 1))

# ---- TLS: 1.2, ECDHE, AEAD; nothing else offered ----
tls=$(openssl s_client -connect "127.0.0.1:$port" -servername localhost -CAfile "$certs/ca.pem" \
	</dev/null 2>/dev/null)
check "TLS: version 1.2" matches "$tls" "Protocol *: TLSv1.2"
check "TLS: an ECDHE cipher with an AEAD (GCM or ChaCha20-Poly1305)" \
	matches "$tls" "Cipher *: ECDHE-[A-Z]*-\(AES[0-9]*-GCM-SHA[0-9]*\|CHACHA20-POLY1305\)"
check "TLS: the chain verifies against the test CA" matches "$tls" "Verify return code: 0 (ok)"
check "TLS 1.3 only: refused" sh -c "! openssl s_client -tls1_3 -connect 127.0.0.1:$port </dev/null >/dev/null 2>&1"
check "TLS 1.1 only: refused" sh -c "! openssl s_client -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' -connect 127.0.0.1:$port </dev/null >/dev/null 2>&1"
check "a key exchange without ECDHE (plain RSA, AES-GCM): refused" \
	sh -c "! openssl s_client -tls1_2 -cipher AES128-GCM-SHA256 -connect 127.0.0.1:$port </dev/null >/dev/null 2>&1"
check "a CBC cipher: refused" \
	sh -c "! openssl s_client -tls1_2 -cipher ECDHE-ECDSA-AES128-SHA256 -connect 127.0.0.1:$port </dev/null >/dev/null 2>&1"

# ---- garbage: random bytes, cut handshakes, a stalled handshake; nothing crashes ----
python3 - "$port" >"$tmp/garbage.out" 2>&1 <<'PY'
import os, socket, struct, sys
port = int(sys.argv[1])
def send(data, linger_rst=False):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        s.sendall(data)
        if linger_rst:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            s.shutdown(socket.SHUT_WR)
            try:
                while s.recv(4096):
                    pass
            except OSError:
                pass
    except OSError:
        pass
    finally:
        s.close()
# A ClientHello-looking record header, cut after a few bytes of its body.
hello = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]) + os.urandom(20)
for i in range(20):
    send(os.urandom(1 + i * 997))
for cut in (1, 3, 5, 9, len(hello)):
    send(hello[:cut])
    send(hello[:cut], linger_rst=True)
send(bytes([0x16, 0x03, 0x03, 0xff, 0xff]) + os.urandom(4000))   # a record over the maximum
send(b"\x80\x2e\x01\x03\x01" + os.urandom(60))                     # an SSLv2-style hello
send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")                        # plain HTTP to the TLS port
print("sent")
PY
check "garbage sent (random bytes, cut ClientHellos, resets)" grep -q '^sent$' "$tmp/garbage.out"
check "... the collector is alive" alive
with_key 0a1b2c3d-0000-4000-8000-000000000003
check "... and serves: a new report 201" is "$(post "$v" 0a1b2c3d-0000-4000-8000-000000000003)" 201

# ---- stats ----
st=$("$coll" stats --db "$d/db")
check "stats: 3 reports stored" matches "$st" "^reports stored: 3$"
check "stats: connections accepted, as the conn file says" \
	matches "$st" "^connections accepted: $(conns)$"
check "stats: 3 reports for the sample's build-id" \
	matches "$st" "^ *3  9f2c4d1e0a7b3c5d6e8f9a0b1c2d3e4f5a6b7c8d  jank-sim$"
check "stats: top function decode_image, 3 x 41 ms" \
	is "$(printf '%s\n' "$st" | sed -n '/^top functions/{n;p}' | tr -s ' ')" " 123000000 - decode_image"
check "stats: 3 reports that say no scheduling source (version 1)" \
	matches "$st" "^reports by scheduling source: perf 0, schedstat 0, none 0, not said (version 1) 3$"
stop
check "SIGTERM: exit status 0" is "$?" 0

# ---- version 2 reports (from a version 3 summary): stored beside version 1 ----
start v2 || exit 1
check "a version 2 report: 201" is "$(post "$sample2" "$key2")" 201
check "a version 1 report beside it: 201" is "$(post "$sample")" 201
# A variant of the version 2 sample, posted under its key: 400 with a reason saying what.
bad_v2() { # what, what the reason says, then sed expressions on the version 2 sample
	what=$1 says=$2
	shift 2
	v=$tmp/variant2.json
	sed "$@" "$sample2" >"$v"
	st=$(post "$v" "$key2")
	if [ "$st" = 400 ] && grep -q "\"error\":.*$says" "$tmp/answer"; then ok "bad version 2 body, $what: 400"
	else fail "bad version 2 body, $what: 400 saying $says" "got $st: $(cat "$tmp/answer" "$tmp/curl.err")"; fi
}
bad_v2 "a sched source not on the list" "sched.source" -e 's/"source":"perf"/"source":"cfs"/'
bad_v2 "no sched" "sched" -e 's/"sched":{/"scheduling":{/'
bad_v2 "preempted_ns negative" "preempted_ns" -e 's/"preempted_ns":18000000/"preempted_ns":-18000000/'
bad_v2 "running_ns not an integer" "running_ns" -e 's/"running_ns":30000000/"running_ns":3.5/'
bad_v2 "a top_window entry without preempted_ns" "top_window\[0\]" \
	-e 's/\[2,25000000,3,0,0,16000000\]/[2,25000000,3,0,0]/'
bad_v2 "a top_trace entry's preempted_ns negative" "top_trace\[0\]" \
	-e 's/\[2,36000000,9,0,0,16000000\]/[2,36000000,9,0,0,-1]/'
bad_v2 "a top_trace entry of 5 elements, as in version 1" \
	"top_trace\[1\]" -e 's/\[1,28000000,7,0,0,2000000\]/[1,28000000,7,0,0]/'
check "the bad ones stored nothing: 2 reports" is "$(stored)" 2
st=$("$coll" stats --db "$d/db")
check "stats: a perf report and one that does not say" \
	matches "$st" "^reports by scheduling source: perf 1, schedstat 0, none 0, not said (version 1) 1$"
check "stats: decode_image's self time over both, its preempted time from the version 2 one" \
	is "$(printf '%s\n' "$st" | sed -n '/^top functions/{n;p}' | tr -s ' ')" " 66000000 16000000 decode_image"
stop
check "SIGTERM: exit status 0" is "$?" 0
check "... the log says it stopped" grep -q "collector: stopped after" "$d/log"

# ---- fault flags ----
start fail --fail-first 1 || exit 1
check "--fail-first 1: 503 first" is "$(post "$sample")" 503
check "... with Retry-After: 1" grep -qi '^Retry-After: 1' "$tmp/head"
check "... nothing stored" is "$(stored)" 0
check "... then 201" is "$(post "$sample")" 201
stop

start status --status-first 2:429 || exit 1
check "--status-first 2:429: 429, 429, then 201" \
	is "$(post "$sample") $(post "$sample") $(post "$sample")" "429 429 201"
stop
start status400 --status-first 1:400 || exit 1
check "--status-first 1:400: 400, then 201" is "$(post "$sample") $(post "$sample")" "400 201"
stop

start stall --stall-first 1 || exit 1
curl -sS --cacert "$certs/ca.pem" -m $((10 * patience)) -o /dev/null -w '%{http_code}' \
	-H "Idempotency-Key: $key" --data-binary @"$sample" "$url" >"$tmp/stalled" 2>/dev/null &
spid=$!
check "--stall-first 1: the first request is read and left unanswered" \
	wait_for 10 grep -q "request 1: stalled" "$d/log"
check "... while it hangs, another connection is served: 201" is "$(post "$sample")" 201
check "... the stalled client is still waiting" kill -0 "$spid"
# The client gives up (killed here: a timeout would make the test wait for a clock).
kill -TERM "$spid"
{ wait "$spid"; } 2>/dev/null
check "... until it gives up: no status came" is "$(cat "$tmp/stalled")" ""
with_key 0a1b2c3d-0000-4000-8000-000000000004
check "... and the collector serves on: 201" is "$(post "$v" 0a1b2c3d-0000-4000-8000-000000000004)" 201
stop

start reset --reset-first 1 || exit 1
st=$(post "$sample")
s=$?
check "--reset-first 1: the connection is reset mid-body (curl fails, no status)" \
	is "$([ $s -ne 0 ] && echo failed) $st" "failed 000"
check "... the log says reset after half the body" grep -q "request 1: reset after" "$d/log"
check "... nothing stored" is "$(stored)" 0
check "... then 201" is "$(post "$sample")" 201
stop

start slow --slow-read || exit 1
head -c 30000 /dev/zero | tr '\0' ' ' >"$tmp/padded"
cat "$sample" >>"$tmp/padded"
check "--slow-read: a 32 KiB report, read a few bytes at a time: 201" is "$(post "$tmp/padded")" 201
check "... stored whole" is "$(stored)" 1
stop

for c in self-signed expired wrong-host; do
	start "cert-$c" --cert "$certs/$c.pem" --key "$certs/$c.key" || continue
	st=$(post "$sample")
	s=$?
	check "certificate $c: curl refuses it (exit $s), nothing sent" \
		is "$([ $s -ne 0 ] && echo refused) $st $(stored)" "refused 000 0"
	check "... the connection was counted" is "$(conns)" 1
	stop
done
check "a key that is not the certificate's: the collector will not start" \
	sh -c "! '$coll' serve --port 0 --db '$tmp/mismatch.db' --cert '$certs/server.pem' \
		--key '$certs/other-ca.key' 2>'$tmp/mismatch.log'"

# ---- plain HTTP (behind a TLS-terminating proxy), pipelining ----
start plain --plain || exit 1
check "--plain: a report over HTTP: 201" is "$(post "$sample")" 201
python3 - "$port" "$sample" "$key" >"$tmp/pipe.out" 2>&1 <<'PY'
import re, socket, sys
port, sample, key = int(sys.argv[1]), open(sys.argv[2], "rb").read(), sys.argv[3]
req = (b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + key.encode() +
       b"\r\nContent-Length: " + str(len(sample)).encode() + b"\r\n\r\n" + sample)
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.sendall(req + req + b"NOT HTTP\r\n\r\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print(" ".join(m.decode() for m in re.findall(rb"HTTP/1\.1 (\d{3}) ", data)))
PY
check "--plain: two pipelined requests then garbage: 200 200 400" is "$(cat "$tmp/pipe.out")" "200 200 400"
python3 -c '
import os, socket, sys
for i in range(10):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
    s.sendall(os.urandom(100 + i * 3001))
    s.close()
' "$port"
check "--plain: random bytes, then still serving" is "$(alive && post "$sample")" 200
kill -INT "$cpid"
wait "$cpid"
check "SIGINT: exit status 0" is "$?" 0
cpid=

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
