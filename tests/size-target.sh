#!/bin/sh
# The uploader's size target: jittd, with TLS linked in, static and stripped, at most LIMIT
# bytes (600 KiB on aarch64). usage: size-target.sh PROGRAM STRIP LIMIT
set -eu
prog=$1 strip=$2 limit=$3
[ -f "$prog" ] || { echo "size: $prog is not built (make SIZE_BOARDS=qemu-virt-aarch64 size)"; exit 1; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$strip" -o "$tmp" "$prog"
bytes=$(wc -c <"$tmp")
if grep -q mbedtls_ssl_handshake "$prog.map" 2>/dev/null; then tls="with TLS"; else tls="WITHOUT TLS"; fi
printf 'size target: %s (%s), stripped: %d bytes = %d KiB, limit %d KiB: %s\n' "$prog" "$tls" \
	"$bytes" $((bytes / 1024)) $((limit / 1024)) "$([ "$bytes" -le "$limit" ] && echo ok || echo OVER)"
[ "$bytes" -le "$limit" ]
