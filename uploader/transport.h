/* SPDX-License-Identifier: MIT */
/*
 * uploader/transport.h - one HTTPS connection to the collector: TLS 1.2 on mbedtls (ECDHE,
 * AEAD only), the chain verified against a CA bundle and the name against the URL's host,
 * an optional public-key pin, a time limit on every step, and an abort that is checked
 * before every byte sent and at least every 100 ms while waiting, so a revoke of consent
 * or a switch to cellular stops the upload within a second, with no byte more sent.
 */
#ifndef JITT_UPLOADER_TRANSPORT_H
#define JITT_UPLOADER_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>

/* https://host[:port]/path: nothing else is accepted (no userinfo, no query, no fragment). */
struct up_url {
	char host[256];
	char port[8];  /* "443" when the URL gives none */
	char path[256];
};
/* 0, or -EINVAL (not an https URL of that form). */
int up_url_parse(const char *url, struct up_url *u);

struct up_tls_settings {
	const char *ca_file;	   /* PEM bundle; required */
	const unsigned char *pin;  /* NULL, or 32 bytes: SHA-256 of the server's SPKI DER */
	int timeout_ms;		   /* connect, handshake, and each wait for a read or write */
	/* Asked before every write and at least every 100 ms while waiting: false aborts the
	 * connection at once (the socket is closed; not even a TLS alert is sent). */
	bool (*keep_going)(void *arg);
	void *arg;
};

/* What the server answered to one POST. */
struct up_http_result {
	int status;	     /* 100..599 */
	long retry_after_s;  /* Retry-After in seconds; -1 when absent or unreadable */
	bool reusable;	     /* the connection may carry another request */
};

struct up_conn;

/*
 * Connects and completes the handshake. 0, or: -ETIMEDOUT, -ECONNREFUSED (and other socket
 * errors), -ECANCELED (keep_going said stop), -EACCES (the certificate did not verify, the
 * name did not match, or the pin differed: retrying will not help), -EPROTO (any other TLS
 * failure), -ENOMEM. *err (when errsize) says what happened, for the log.
 */
int up_conn_open(struct up_conn **c, const struct up_url *u, const struct up_tls_settings *s,
		 char *err, size_t errsize);

/*
 * POSTs body (Content-Type: application/json) to u->path with the Idempotency-Key header,
 * and reads the whole answer (its body bounded and discarded). 0 with *res filled, or a
 * negative errno as up_conn_open's, -ECONNRESET, or -EBADMSG (the answer was not HTTP/1.1
 * as we read it). After an error the connection must be closed.
 */
int up_conn_post(struct up_conn *c, const struct up_url *u, const char *idempotency_key,
		 const void *body, size_t len, struct up_http_result *res, char *err,
		 size_t errsize);

/* Closes (NULL is fine). */
void up_conn_close(struct up_conn *c);

#endif
