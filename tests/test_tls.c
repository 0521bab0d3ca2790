/* SPDX-License-Identifier: MIT */
/*
 * The static TLS link, proven on every architecture: mbedtls (Debian's source, built with
 * the board's musl toolchain) hashes, parses an X.509 PEM certificate and checks its ECDSA
 * P-256 self-signature. The uploader issue builds the TLS client on this.
 */
#include "harness.h"

#include <mbedtls/md.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#include <mbedtls/version.h>
#include <mbedtls/x509_crt.h>
#include <string.h>

/* A self-signed P-256 certificate made for this test (openssl req -x509, 100 years). */
static const char cert_pem[] = "-----BEGIN CERTIFICATE-----\n"
			       "MIIBsTCCAVegAwIBAgIUFDDzduflTTemaAqdF5NVHJUxKtMwCgYIKoZIzj0EAwIw\n"
			       "LTENMAsGA1UECgwEaml0dDEcMBoGA1UEAwwTaml0dCB0bHMgc2VsZi1jaGVjazAg\n"
			       "Fw0yNjExMjIxNjQ5MjVaGA8yMTI2MTAyOTE2NDkyNVowLTENMAsGA1UECgwEaml0\n"
			       "dDEcMBoGA1UEAwwTaml0dCB0bHMgc2VsZi1jaGVjazBZMBMGByqGSM49AgEGCCqG\n"
			       "SM49AwEHA0IABAlsPIG8NIcr829gr1q8c8dK4KVaMRjBJnQ8bcZaO1KlTqzokNY1\n"
			       "eJCTDE+qoB7T60kcMK4fazA4Q+BA0xAZ+lijUzBRMB0GA1UdDgQWBBT7dUYB2GIs\n"
			       "Ai+6mmtOGb87HGM80TAfBgNVHSMEGDAWgBT7dUYB2GIsAi+6mmtOGb87HGM80TAP\n"
			       "BgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIFPIeUFMW8vScB9Yu3aO\n"
			       "8yHs9JRe71juMgt43p9RdANgAiEAnSPkAaMZRlEfFDNZWbahRKz82F8RkbjVNcJz\n"
			       "uykDfi4=\n"
			       "-----END CERTIFICATE-----\n";

/* openssl x509 -noout -fingerprint -sha256: the SHA-256 of the certificate's DER. */
static const unsigned char cert_sha256[32] = {
	0x03, 0xA4, 0xD6, 0xDF, 0x69, 0x0B, 0x3C, 0xEB, 0xF5, 0xE5, 0x0F,
	0xEE, 0x74, 0xC9, 0x24, 0xC6, 0x82, 0x98, 0x0A, 0xAE, 0x74, 0x38,
	0x17, 0x5E, 0xEC, 0x98, 0x6D, 0xAD, 0x51, 0x7A, 0x76, 0x2F,
};

TEST(tls_mbedtls_version_is_the_pinned_one)
{
	char v[18];
	mbedtls_version_get_string(v);
	CHECK_STR(v, "2.28.3");
}

TEST(tls_sha256_known_answer)
{
	/* FIPS 180-2, appendix B.1: SHA-256("abc") */
	static const unsigned char want[32] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
		0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
		0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
	};
	unsigned char got[32];
	CHECK_EQ_INT(mbedtls_sha256_ret((const unsigned char *)"abc", 3, got, 0), 0);
	CHECK(memcmp(got, want, sizeof(got)) == 0);
}

TEST(tls_x509_pem_parse_and_self_signature)
{
	mbedtls_x509_crt crt;
	mbedtls_x509_crt_init(&crt);
	CHECK_EQ_INT(
		mbedtls_x509_crt_parse(&crt, (const unsigned char *)cert_pem, sizeof(cert_pem)), 0);

	char subject[128];
	CHECK(mbedtls_x509_dn_gets(subject, sizeof(subject), &crt.subject) > 0);
	CHECK_STR(subject, "O=jitt, CN=jitt tls self-check");

	unsigned char digest[32];
	CHECK_EQ_INT(mbedtls_sha256_ret(crt.raw.p, crt.raw.len, digest, 0), 0);
	CHECK(memcmp(digest, cert_sha256, sizeof(digest)) == 0);

	/* Trusted as its own CA (mbedtls trusts a self-signed certificate found in the trust
	 * list as it is). A test machine's clock may lag the certificate's start (made on
	 * 2026-11-22), so "not yet valid" alone is forgiven. */
	uint32_t flags = 0;
	int err = mbedtls_x509_crt_verify(&crt, &crt, NULL, NULL, &flags, NULL, NULL);
	CHECK(err == 0 || (flags & ~(uint32_t)MBEDTLS_X509_BADCERT_FUTURE) == 0);

	/* The ECDSA P-256 signature over the to-be-signed part, checked explicitly: the
	 * bignum and elliptic-curve code must work on this architecture. */
	unsigned char hash[32];
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(crt.sig_md);
	CHECK(md != NULL && mbedtls_md_get_size(md) == sizeof(hash));
	CHECK_EQ_INT(mbedtls_md(md, crt.tbs.p, crt.tbs.len, hash), 0);
	CHECK_EQ_INT(
		mbedtls_pk_verify(&crt.pk, crt.sig_md, hash, sizeof(hash), crt.sig.p, crt.sig.len),
		0);
	hash[0] ^= 0x01;
	CHECK(mbedtls_pk_verify(&crt.pk, crt.sig_md, hash, sizeof(hash), crt.sig.p, crt.sig.len) !=
	      0);
	mbedtls_x509_crt_free(&crt);
}
