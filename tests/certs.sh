#!/bin/sh
# Test certificates for the uploader's TLS tests, made fresh into one folder (never shipped):
#   ca.pem ca.key               the test CA the client trusts
#   server.pem server.key       signed by it, for 127.0.0.1 and localhost, valid for ten years
#                               (127.0.0.1 also as a DNS name: mbedtls 2.28 matches no IP SAN)
#   wrong-host.pem wrong-host.key   signed by it, for wrong.example only
#   expired.pem expired.key     signed by it, for 127.0.0.1, valid in 2020 only
#   self-signed.pem self-signed.key  for 127.0.0.1, signed by itself (no CA vouches for it)
#   other-ca.pem                another CA, that vouches for nothing here
#   server.pin                  the SHA-256 of server.pem's public key (SPKI DER), 64 hex
# All keys are ECDSA P-256. Usage: certs.sh DIR (made when missing; existing files are kept,
# so a test run makes them once).
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
[ -f server.pin ] && exit 0

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# A CA database for `openssl ca`, the one command that sets any validity dates (expired.pem).
cat >ca.cnf <<'CNF'
[ca]
default_ca = test_ca
[test_ca]
dir = .
database = ./ca.index
new_certs_dir = ./ca.new
serial = ./ca.serial
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
[req]
distinguished_name = dn
prompt = no
[dn]
CN = jitt test
[v3_ca]
basicConstraints = critical,CA:true
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[leaf]
basicConstraints = CA:false
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
CNF
: >ca.index
echo 1000 >ca.serial
mkdir -p ca.new

key ca.key
openssl req -new -x509 -config ca.cnf -extensions v3_ca -key ca.key -subj "/CN=jitt test CA" \
	-days 3650 -out ca.pem
key other-ca.key
openssl req -new -x509 -config ca.cnf -extensions v3_ca -key other-ca.key \
	-subj "/CN=jitt other CA" -days 3650 -out other-ca.pem

# leaf NAME CN SAN START END: a certificate signed by the test CA.
leaf() {
	key "$1.key"
	openssl req -new -config ca.cnf -key "$1.key" -subj "/CN=$2" -addext "subjectAltName=$3" \
		-out "$1.csr"
	openssl ca -batch -config ca.cnf -extensions leaf -cert ca.pem -keyfile ca.key \
		-startdate "$4" -enddate "$5" -notext -in "$1.csr" -out "$1.pem" 2>/dev/null
	rm -f "$1.csr"
}
now=$(date -u +%Y%m%d%H%M%SZ)
later=$(date -u -d '+10 years' +%Y%m%d%H%M%SZ)
leaf server 127.0.0.1 "IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1" "$now" "$later"
leaf wrong-host wrong.example "DNS:wrong.example,IP:10.9.9.9" "$now" "$later"
leaf expired 127.0.0.1 "IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1" 20200101000000Z 20210101000000Z

key self-signed.key
openssl req -new -x509 -config ca.cnf -extensions leaf -key self-signed.key -subj "/CN=127.0.0.1" \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1" -days 3650 -out self-signed.pem 2>/dev/null ||
	openssl req -new -x509 -key self-signed.key -subj "/CN=127.0.0.1" \
		-addext "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:127.0.0.1" -days 3650 -out self-signed.pem

openssl x509 -in server.pem -noout -pubkey | openssl pkey -pubin -outform DER |
	openssl dgst -sha256 -r | cut -d' ' -f1 >server.pin.tmp
mv server.pin.tmp server.pin
