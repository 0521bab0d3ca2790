#!/bin/sh
# The uploader's transport against a real TLS server (Debian's nginx, TLS 1.2 only), through
# up-post: a report is stored (201) with the test CA, with the right pin, and with an RSA
# certificate; a wrong pin, a self-signed, an expired and a wrong-host certificate are
# refused with a certificate error and nginx's access log shows no request (not a byte of
# the report left); a server that accepts and never answers gives -ETIMEDOUT, an abort
# -ECANCELED, both in time. On the build machine (nginx, python3, openssl); QEMU runs a
# cross-built up-post under qemu-user. Ends with "N passed, N failed".
# usage: tls-check.sh BIN_DIR [QEMU]
set -u
bin=$(cd "$1" && pwd)
qemu=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
patience=${JITT_TEST_PATIENCE:-6}
tmp=$(mktemp -d)
passed=0 failed=0
nginx_pid= silent_pid=

ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

stop_nginx() {
	[ -n "$nginx_pid" ] || return 0
	kill "$nginx_pid" 2>/dev/null
	# Bounded: the master exits once its workers have.
	i=0
	while kill -0 "$nginx_pid" 2>/dev/null && [ $i -lt $((patience * 50)) ]; do
		sleep 0.02
		i=$((i + 1))
	done
	kill -9 "$nginx_pid" 2>/dev/null
	wait "$nginx_pid" 2>/dev/null
	nginx_pid=
}
cleanup() {
	stop_nginx
	[ -z "$silent_pid" ] || kill "$silent_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# Waits (bounded) until something listens on 127.0.0.1:$1.
wait_listen() {
	python3 - "$1" "$patience" <<'PY'
import socket, sys, time
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.02)
sys.exit(1)
PY
}

# start_nginx CERT KEY: nginx in the foreground of a background job, on a free port
# ($port), with a fresh access log. Retries on another port when the one picked was taken.
start_nginx() {
	stop_nginx
	mkdir -p "$tmp/nginx/logs"
	: >"$tmp/nginx/logs/access.log"
	for try in 1 2 3 4 5; do
		port=$(free_port)
		cat >"$tmp/nginx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/logs/error.log info;
events { worker_connections 32; }
http {
	access_log $tmp/nginx/logs/access.log;
	client_body_temp_path $tmp/nginx/body;
	proxy_temp_path $tmp/nginx/proxy;
	fastcgi_temp_path $tmp/nginx/fastcgi;
	uwsgi_temp_path $tmp/nginx/uwsgi;
	scgi_temp_path $tmp/nginx/scgi;
	server {
		listen 127.0.0.1:$port ssl;
		ssl_certificate $1;
		ssl_certificate_key $2;
		ssl_protocols TLSv1.2;
		location /v1/reports { return 201 '{"stored":true}'; }
	}
}
EOF
		/usr/sbin/nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/logs/error.log" &
		nginx_pid=$!
		if wait_listen "$port" && kill -0 "$nginx_pid" 2>/dev/null; then
			return 0
		fi
		stop_nginx
	done
	echo "nginx would not start:"
	tail -n 5 "$tmp/nginx/logs/error.log"
	return 1
}

requests() { wc -l <"$tmp/nginx/logs/access.log"; }

c=$tmp/certs
sh "$here/certs.sh" "$c" >/dev/null 2>&1 || { bad "tests/certs.sh made the test certificates"; echo "$passed passed, $failed failed"; exit 1; }
# An RSA server certificate as an OEM's collector may have, signed by the same test CA.
(cd "$c" && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa.key 2>/dev/null &&
	openssl req -new -config ca.cnf -key rsa.key -subj "/CN=127.0.0.1" \
		-addext "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1" -out rsa.csr &&
	openssl ca -batch -config ca.cnf -extensions leaf -cert ca.pem -keyfile ca.key -days 30 \
		-notext -in rsa.csr -out rsa.pem 2>/dev/null)
printf '{"schema":1,"report":"test"}' >"$tmp/report.json"
pin=$(cat "$c/server.pin")
wrong_pin=$(printf '%s' "$pin" | tr '0-9a-f' '1-9a-f0')

# post WHAT WANT ARGS...: runs up-post; its output must contain WANT.
post() {
	what=$1 want=$2
	shift 2
	out=$($qemu "$bin/up-post" "$@" 2>&1)
	case $out in
	*"$want"*) ok "$what: $out" ;;
	*) bad "$what: wanted '$want', got: $out" ;;
	esac
}
url() { echo "https://$1:$port/v1/reports"; }

if start_nginx "$c/server.pem" "$c/server.key"; then
	post "good certificate, by IP" "status 201" "$(url 127.0.0.1)" "$c/ca.pem" "$tmp/report.json"
	post "good certificate, by name" "status 201" "$(url localhost)" "$c/ca.pem" "$tmp/report.json" \
		--key 6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b
	if grep -q '"POST /v1/reports HTTP/1.1" 201' "$tmp/nginx/logs/access.log"; then
		ok "nginx logged the POSTs"
	else
		bad "nginx logged the POSTs: $(cat "$tmp/nginx/logs/access.log")"
	fi
	# Peak memory of one whole upload (connect, handshake, POST, answer), for the record.
	if [ -x /usr/bin/time ]; then
		kb=$(/usr/bin/time -f %M $qemu "$bin/up-post" "$(url 127.0.0.1)" "$c/ca.pem" \
			"$tmp/report.json" 2>&1 >/dev/null | tail -n 1)
		ok "peak RSS of one upload: $kb KiB"
	fi
	n0=$(requests)
	post "right pin" "status 201" "$(url 127.0.0.1)" "$c/ca.pem" "$tmp/report.json" --pin "$pin"
	# nginx logs a request once it has answered it: the line may come after the client has
	# its answer (a loaded machine), and must be in before the refused ones are counted.
	i=0
	while [ "$(requests)" -le "$n0" ] && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	before=$(requests)
	post "wrong pin refused" "EACCES" "$(url 127.0.0.1)" "$c/ca.pem" "$tmp/report.json" \
		--pin "$wrong_pin"
	post "another CA refused" "EACCES" "$(url 127.0.0.1)" "$c/other-ca.pem" "$tmp/report.json"
	[ "$(requests)" = "$before" ] && ok "wrong pin, other CA: no request reached nginx" ||
		bad "wrong pin, other CA: nginx saw a request"
fi

for cert in self-signed expired wrong-host; do
	start_nginx "$c/$cert.pem" "$c/$cert.key" || { bad "nginx with $cert"; continue; }
	post "$cert certificate refused" "EACCES" "$(url 127.0.0.1)" "$c/ca.pem" "$tmp/report.json"
	if [ "$(requests)" -eq 0 ]; then
		ok "$cert: nginx's access log shows no request"
	else
		bad "$cert: nginx's access log shows: $(cat "$tmp/nginx/logs/access.log")"
	fi
done

if [ -s "$c/rsa.pem" ] && start_nginx "$c/rsa.pem" "$c/rsa.key"; then
	post "RSA certificate (ECDHE-RSA)" "status 201" "$(url 127.0.0.1)" "$c/ca.pem" "$tmp/report.json"
else
	bad "an RSA certificate and nginx with it"
fi
stop_nginx

# Nothing listens: refused at once.
port=$(free_port)
post "closed port" "ECONNREFUSED" "$(url 127.0.0.1)" "$c/ca.pem" "$tmp/report.json"

# A server that accepts and never says a word: the handshake waits for its answer.
python3 -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept()[0])
' >"$tmp/silent.port" &
silent_pid=$!
i=0
while [ ! -s "$tmp/silent.port" ] && [ $i -lt $((patience * 50)) ]; do
	sleep 0.02
	i=$((i + 1))
done
port=$(cat "$tmp/silent.port")
t0=$(date +%s%N)
post "silent server: timeout" "ETIMEDOUT" "$(url 127.0.0.1)" "$c/ca.pem" "$tmp/report.json" --timeout 300
ms=$((($(date +%s%N) - t0) / 1000000))
# 300 ms asked; the bound only catches a hang (the program's start is in it too).
[ "$ms" -lt $((300 + patience * 500)) ] && ok "the timeout took $ms ms (300 asked)" ||
	bad "the timeout took $ms ms (300 asked)"
out=$($qemu "$bin/up-post" "$(url 127.0.0.1)" "$c/ca.pem" "$tmp/report.json" --abort-after 200 2>&1)
case $out in
*ECANCELED*) ok "abort while waiting: $(echo "$out" | tr '\n' ' ')" ;;
*) bad "abort while waiting: $out" ;;
esac
stopped=$(echo "$out" | sed -n 's/.*stopped \([0-9]*\) ms after.*/\1/p')
[ -n "$stopped" ] && [ "$stopped" -le 150 ] && ok "stopped within 150 ms of the abort ($stopped ms)" ||
	bad "stopped within 150 ms of the abort (${stopped:-?} ms)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
