/* SPDX-License-Identifier: MIT */
/*
 * uploader/http.h - the HTTP/1.1 of one upload: the POST request written into a buffer, and
 * the answer read by an incremental parser fed bytes as they arrive. The collector, or
 * whatever answers in its place, is hostile input (docs/security.md): the parser's state is
 * fixed-size (no allocation), every count is capped, and anything it cannot read exactly is
 * -EBADMSG, never a guess. The body is read and thrown away: only the status, Retry-After
 * and whether the connection can carry another request matter to the uploader.
 * Plain C, no TLS: also built into the fuzz target tests/fuzz_http.c.
 */
#ifndef JITT_UPLOADER_HTTP_H
#define JITT_UPLOADER_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/* Caps. A line (status line, a header, a chunk-size line; its CRLF included) beyond
 * UP_HTTP_LINE_MAX bytes, a header section (all interim 1xx answers included) beyond
 * UP_HTTP_HEADERS_MAX bytes or UP_HTTP_FIELDS_MAX fields is -EBADMSG. Chunk framing and
 * trailers count as body. A body beyond UP_HTTP_BODY_MAX is not an error:
 * reading stops there and the connection is not reused. */
#define UP_HTTP_LINE_MAX    1024
#define UP_HTTP_HEADERS_MAX 8192
#define UP_HTTP_FIELDS_MAX  64
#define UP_HTTP_BODY_MAX    65536
/* At most this many interim (1xx) answers before the final one. */
#define UP_HTTP_INTERIM_MAX 8

/*
 * Writes "POST path HTTP/1.1" and its headers (Host, User-Agent: jitt/1, Content-Type:
 * application/json, Content-Length, Idempotency-Key) into buf, ending with the empty line;
 * the body follows it on the wire. Nothing names the device. Host carries the port unless
 * it is 443. Returns the length (no NUL counted; buf is NUL-terminated), -EINVAL when host,
 * port, path or key holds a byte that could split a header (control bytes, spaces; the
 * path must start with '/'), or -ENOSPC.
 */
int up_http_request(char *buf, size_t size, const char *host, const char *port, const char *path,
		    const char *idempotency_key, size_t body_len);
/* "GET path HTTP/1.1" with Host (its port unless it is default_port), User-Agent: jitt/1 and
 * Connection: close, ending with the empty line. The same returns as up_http_request. */
int up_http_get_request(char *buf, size_t size, const char *host, const char *port,
			const char *default_port, const char *path);

struct up_http_parser {
	/* Optional, set after up_http_parser_init (the debuginfod client keeps a body, the
	 * uploader does not): each piece of the final answer's body, chunk framing taken off,
	 * is given to sink, and the body may then take body_max bytes (framing counted)
	 * instead of UP_HTTP_BODY_MAX; past that, or when sink returns nonzero, the answer is
	 * -EBADMSG: a kept body is never silently cut. */
	int (*sink)(void *arg, const void *data, size_t n);
	void *sink_arg;
	unsigned long long body_max;
	int state;
	int status;	    /* the final answer's status, 100..599 */
	long retry_after_s; /* -1 when absent or unreadable */
	bool reusable;	    /* valid once complete */
	const char *why;    /* a short reason, for the log, after -EBADMSG */
	/* private */
	bool http10, close, keep_alive, chunked, have_length, seen_te, any_byte;
	unsigned interim; /* 1xx answers skipped */
	unsigned fields;  /* header fields in this section */
	unsigned long header_bytes;
	unsigned long long length;    /* Content-Length */
	unsigned long long remaining; /* of the body or of the chunk */
	unsigned long long body_bytes; /* read so far, at most UP_HTTP_BODY_MAX or body_max */
	unsigned line_len;
	char line[UP_HTTP_LINE_MAX];
};

void up_http_parser_init(struct up_http_parser *p);

/*
 * Feeds n bytes of the answer. Returns 0 (more needed), 1 (the final answer is complete;
 * *used, when not NULL, tells how many of these bytes it took: any left over were sent
 * unasked, and the connection should not be reused), or -EBADMSG (p->why says why; the
 * connection must be closed). After 1 or an error, further calls return the same.
 */
int up_http_feed(struct up_http_parser *p, const void *data, size_t n, size_t *used);

/*
 * The peer closed the connection. 1 when that completes the answer (a body that runs until
 * the close), -ECONNRESET when it closed before the first byte (a kept-alive connection
 * the server had dropped: the request may be sent again on a new one), else -EBADMSG.
 */
int up_http_eof(struct up_http_parser *p);

#endif
