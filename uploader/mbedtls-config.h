/* SPDX-License-Identifier: MIT */
/*
 * uploader/mbedtls-config.h - mbedtls 2.28 cut down to what jitt uses
 * (CONFIG_UPLOADER_MBEDTLS_TRIM): board/common/mbedtls.sh installs it as mbedtls'
 * include/mbedtls/config.h before building, so the library and every file that includes
 * its headers see the same configuration (structure layouts depend on it).
 *
 * What must work: the client side of TLS 1.2 with ECDHE-ECDSA and ECDHE-RSA, AES-GCM and
 * ChaCha20-Poly1305 (uploader/transport.c); X.509 chains of ECDSA P-256/P-384 and RSA
 * (PKCS#1 v1.5 and PSS) certificates, from a PEM bundle, with validity dates, key usage and
 * the host name checked; SHA-256 and HMAC-SHA256 through mbedtls_md (the pseudonym);
 * CTR_DRBG seeded from getrandom() (uploader/random.c); tests/test_tls.c's checks.
 * What is gone: the server side, TLS 1.0/1.1, DTLS, CBC and every non-AEAD suite, static
 * RSA key exchange, DES, 3DES, ARC4, MD5, SHA-1, Camellia, ARIA, renegotiation, session
 * tickets, CRLs, key writing and generation, self tests, mbedtls' own socket and entropy
 * code. Every name below is documented in mbedtls' stock include/mbedtls/config.h; its
 * check_config.h (included at the end) refuses a combination that cannot build.
 */
#ifndef MBEDTLS_CONFIG_H
#define MBEDTLS_CONFIG_H

/* ---- system ---- */
#define MBEDTLS_HAVE_ASM
#define MBEDTLS_HAVE_TIME
/* Certificates' validity dates are checked against the clock (gmtime_r). */
#define MBEDTLS_HAVE_TIME_DATE
#define MBEDTLS_PLATFORM_C
/* The only seed is getrandom(), added by uploader/random.c as a strong source. */
#define MBEDTLS_NO_PLATFORM_ENTROPY
/* mbedtls_x509_crt_parse_file for the CA bundle. */
#define MBEDTLS_FS_IO

/* ---- symmetric ciphers and hashes ---- */
#define MBEDTLS_AES_C
/* AES tables in read-only data (no 8 KiB built at run time), one table instead of four. */
#define MBEDTLS_AES_ROM_TABLES
#define MBEDTLS_AES_FEWER_TABLES
#define MBEDTLS_GCM_C
#define MBEDTLS_CHACHA20_C
#define MBEDTLS_POLY1305_C
#define MBEDTLS_CHACHAPOLY_C
#define MBEDTLS_CIPHER_C
#define MBEDTLS_MD_C
#define MBEDTLS_SHA256_C
/* SHA-384: the *_SHA384 suites and certificates signed with it. */
#define MBEDTLS_SHA512_C

/* ---- random numbers ---- */
#define MBEDTLS_ENTROPY_C
#define MBEDTLS_CTR_DRBG_C

/* ---- public keys ---- */
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_ECP_C
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED
#define MBEDTLS_ECP_DP_SECP384R1_ENABLED
/* X25519 for the key exchange: what most servers pick first, and cheap. */
#define MBEDTLS_ECP_DP_CURVE25519_ENABLED
/* Faster NIST reductions: the handshake's verify and ECDH on a slow armv7 core. */
#define MBEDTLS_ECP_NIST_OPTIM
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECDSA_C
#define MBEDTLS_RSA_C
#define MBEDTLS_PKCS1_V15
#define MBEDTLS_PKCS1_V21
#define MBEDTLS_PK_C
#define MBEDTLS_PK_PARSE_C
#define MBEDTLS_ASN1_PARSE_C
/* ECDSA's signature format is written with it (check_config.h asks for it). */
#define MBEDTLS_ASN1_WRITE_C
#define MBEDTLS_OID_C

/* ---- certificates ---- */
#define MBEDTLS_BASE64_C
#define MBEDTLS_PEM_PARSE_C
#define MBEDTLS_X509_USE_C
#define MBEDTLS_X509_CRT_PARSE_C
#define MBEDTLS_X509_RSASSA_PSS_SUPPORT
#define MBEDTLS_X509_CHECK_KEY_USAGE
#define MBEDTLS_X509_CHECK_EXTENDED_KEY_USAGE

/* ---- TLS: the client side of 1.2 only ---- */
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_SSL_PROTO_TLS1_2
#define MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
#define MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED
#define MBEDTLS_SSL_SERVER_NAME_INDICATION
#define MBEDTLS_SSL_EXTENDED_MASTER_SECRET
/* The suites compiled in: transport.c's list, nothing else. */
#define MBEDTLS_SSL_CIPHERSUITES                                                      \
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,                              \
		MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,                        \
		MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,                \
		MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,                  \
		MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,                      \
		MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
/* A server may send records of the full 16 KiB (nginx does; the max_fragment_length
 * extension is not something to count on), so the input buffer keeps its size; we send
 * in 4 KiB records, which halves the output buffer. */
#define MBEDTLS_SSL_IN_CONTENT_LEN 16384
#define MBEDTLS_SSL_OUT_CONTENT_LEN 4096

/* ---- what the tests and the log use ---- */
#define MBEDTLS_ERROR_C
#define MBEDTLS_VERSION_C

#include "mbedtls/check_config.h"

#endif
