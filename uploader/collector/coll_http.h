/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/coll_http.h - the reference collector's HTTP/1.1 request head parser.
 *
 * The head (request line and header fields, up to the blank line) is parsed from one bounded
 * buffer; the body is framed by Content-Length only. Everything is treated as hostile: no
 * read past `len`, every field bounded, anything unexpected is a 4xx with a reason.
 */
#ifndef JITT_COLL_HTTP_H
#define JITT_COLL_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COLL_HEAD_MAX 8192	   /* request line + header fields; 431 beyond */
#define COLL_BODY_MAX (64 * 1024) /* a report; 413 beyond */
#define COLL_KEY_MAX 64		   /* Idempotency-Key: a UUID is 36 */

struct coll_request {
	char method[16];
	char target[128];
	int minor;		/* HTTP/1.minor */
	int64_t content_length; /* -1: none given */
	bool chunked;		/* any Transfer-Encoding (we frame by Content-Length only) */
	bool close;		/* Connection: close, or HTTP/1.0 without keep-alive */
	bool expect_continue;
	bool has_key;
	char key[COLL_KEY_MAX + 1]; /* Idempotency-Key, when has_key */
};

/*
 * Where the head ends in buf[0..len): the offset just past the blank line, or 0 while it
 * is not all there.
 */
size_t coll_http_head_end(const char *buf, size_t len);

/*
 * Parse the head buf[0..len) (len from coll_http_head_end). Returns 0, or an HTTP status
 * (400, 411, 413, 505) with a one-line reason in why.
 */
int coll_http_parse(const char *buf, size_t len, struct coll_request *req, char *why,
		    size_t whysize);

/*
 * A request line already known to be bad before the head is complete (buf holds at least
 * its first line): 400 and a reason, else 0. Lets garbage be answered at once.
 */
int coll_http_check_line(const char *buf, size_t len, char *why, size_t whysize);

/* The reason phrase of a status this collector sends. */
const char *coll_http_reason(int status);

#endif
