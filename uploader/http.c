/* SPDX-License-Identifier: MIT */
/*
 * uploader/http.c - the POST request and the incremental answer parser (see http.h).
 *
 * The parser reads RFC 9112's message syntax strictly where leniency would let two readers
 * disagree about where an answer ends (Content-Length, Transfer-Encoding, chunk sizes,
 * folded lines, stray CRs), and leniently where it cannot (a bare LF ends a line, a reason
 * phrase may be missing). Each byte is looked at once; a line is kept only until its LF.
 */
#include "uploader/http.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

enum {
	ST_STATUS,     /* the status line */
	ST_HEADER,     /* header fields, until the empty line */
	ST_BODY_LEN,   /* Content-Length bytes */
	ST_BODY_CLOSE, /* everything until the peer closes */
	ST_CHUNK_SIZE, /* a chunk-size line, extensions and all */
	ST_CHUNK_DATA, /* the chunk's bytes */
	ST_CHUNK_END,  /* the CRLF after them */
	ST_TRAILER,    /* trailer fields after the last chunk, until the empty line */
	ST_DONE,
	ST_ERROR,
};

/* Content-Length and chunk sizes beyond this are refused (no collector answers a terabyte;
 * the bound keeps every sum far from overflow). */
#define HTTP_NUMBER_MAX 0xffffffffffULL

static bool printable(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return false;
	return true;
}

int up_http_request(char *buf, size_t size, const char *host, const char *port, const char *path,
		    const char *idempotency_key, size_t body_len)
{
	if (!buf || !host || !port || !path || !printable(host) || !printable(port) ||
	    !printable(path) || path[0] != '/' || (idempotency_key && !printable(idempotency_key)))
		return -EINVAL;
	/* An IPv6 literal goes back into its brackets in Host (RFC 3986's IP-literal). */
	bool v6 = strchr(host, ':') != NULL;
	bool default_port = strcmp(port, "443") == 0;
	int n = snprintf(buf, size,
			 "POST %s HTTP/1.1\r\n"
			 "Host: %s%s%s%s%s\r\n"
			 "User-Agent: jitt/1\r\n"
			 "Content-Type: application/json\r\n"
			 "Content-Length: %zu\r\n"
			 "%s%s%s"
			 "\r\n",
			 path, v6 ? "[" : "", host, v6 ? "]" : "", default_port ? "" : ":",
			 default_port ? "" : port, body_len,
			 idempotency_key ? "Idempotency-Key: " : "",
			 idempotency_key ? idempotency_key : "", idempotency_key ? "\r\n" : "");
	if (n < 0 || (size_t)n >= size)
		return -ENOSPC;
	return n;
}

int up_http_get_request(char *buf, size_t size, const char *host, const char *port,
			const char *default_port, const char *path)
{
	if (!buf || !host || !port || !default_port || !path || !printable(host) ||
	    !printable(port) || !printable(path) || path[0] != '/')
		return -EINVAL;
	bool v6 = strchr(host, ':') != NULL;
	bool dflt = strcmp(port, default_port) == 0;
	int n = snprintf(buf, size,
			 "GET %s HTTP/1.1\r\n"
			 "Host: %s%s%s%s%s\r\n"
			 "User-Agent: jitt/1\r\n"
			 "Connection: close\r\n"
			 "\r\n",
			 path, v6 ? "[" : "", host, v6 ? "]" : "", dflt ? "" : ":", dflt ? "" : port);
	if (n < 0 || (size_t)n >= size)
		return -ENOSPC;
	return n;
}

void up_http_parser_init(struct up_http_parser *p)
{
	memset(p, 0, sizeof(*p));
	p->state = ST_STATUS;
	p->retry_after_s = -1;
}

static int fail(struct up_http_parser *p, const char *why)
{
	p->state = ST_ERROR;
	p->why = why;
	p->reusable = false;
	return -EBADMSG;
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* s[0..n) equals the lowercase word w, ignoring case. */
static bool word_is(const char *s, size_t n, const char *w)
{
	if (strlen(w) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower(s[i]) != w[i])
			return false;
	return true;
}

/* RFC 9110's tchar: the bytes a field name may hold. */
static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Trims optional white space from both ends of s[0..*n). */
static const char *trim(const char *s, size_t *n)
{
	while (*n && ows(s[0]))
		s++, (*n)--;
	while (*n && ows(s[*n - 1]))
		(*n)--;
	return s;
}

/* Decimal digits only, at most HTTP_NUMBER_MAX; -1 otherwise (a sign, a space inside, an
 * empty string and an overflow are all unreadable). */
static long long decimal(const char *s, size_t n)
{
	unsigned long long v = 0;
	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long long)(s[i] - '0');
		if (v > HTTP_NUMBER_MAX)
			return -1;
	}
	return (long long)v;
}

/*
 * Calls fn for each element of a comma-separated list (RFC 9110 section 5.6.1), trimmed;
 * empty elements are skipped, as the RFC asks. Stops at and returns fn's first nonzero.
 */
static int each_element(const char *v, size_t n,
			int (*fn)(struct up_http_parser *, const char *, size_t),
			struct up_http_parser *p)
{
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && v[i] != ',')
			continue;
		size_t len = i - start;
		const char *e = trim(v + start, &len);
		if (len) {
			int r = fn(p, e, len);
			if (r)
				return r;
		}
		start = i + 1;
	}
	return 0;
}

static int content_length(struct up_http_parser *p, const char *e, size_t n)
{
	long long v = decimal(e, n);
	if (v < 0)
		return fail(p, "unreadable Content-Length");
	/* Repeats are allowed only when they agree (RFC 9112 section 6.3, item 5). */
	if (p->have_length && p->length != (unsigned long long)v)
		return fail(p, "conflicting Content-Length");
	p->have_length = true;
	p->length = (unsigned long long)v;
	return 0;
}

static int transfer_coding(struct up_http_parser *p, const char *e, size_t n)
{
	/* Only the last coding decides the framing: chunked must be last and only once. A
	 * coding after chunked means the body runs until the close (section 6.3, item 4). */
	if (p->chunked && word_is(e, n, "chunked"))
		return fail(p, "chunked applied twice");
	p->chunked = word_is(e, n, "chunked");
	return 0;
}

static int connection_option(struct up_http_parser *p, const char *e, size_t n)
{
	if (word_is(e, n, "close"))
		p->close = true;
	else if (word_is(e, n, "keep-alive"))
		p->keep_alive = true;
	return 0;
}

/* A header or trailer line: "name: value". Trailers are checked but never obeyed (they
 * come after the framing is decided). */
static int field(struct up_http_parser *p, const char *s, size_t n, bool trailer)
{
	if (++p->fields > UP_HTTP_FIELDS_MAX)
		return fail(p, "too many header fields");
	if (ows(s[0]))
		return fail(p, "folded header line");
	size_t name = 0;
	while (name < n && tchar(s[name]))
		name++;
	if (name == 0 || name == n || s[name] != ':')
		return fail(p, "malformed header field");
	size_t vn = n - name - 1;
	const char *v = trim(s + name + 1, &vn);
	if (trailer)
		return 0;
	if (word_is(s, name, "content-length"))
		return each_element(v, vn, content_length, p);
	if (word_is(s, name, "transfer-encoding")) {
		p->seen_te = true;
		return each_element(v, vn, transfer_coding, p);
	}
	if (word_is(s, name, "connection"))
		return each_element(v, vn, connection_option, p);
	if (word_is(s, name, "retry-after")) {
		/* delta-seconds only; an HTTP-date (or anything else) is unreadable: -1. Values
		 * beyond ten years are too. */
		long long secs = decimal(v, vn);
		p->retry_after_s = secs >= 0 && secs <= 10LL * 366 * 86400 ? (long)secs : -1;
	}
	return 0;
}

static int status_line(struct up_http_parser *p, const char *s, size_t n)
{
	/* HTTP-version SP 3DIGIT [SP reason-phrase] */
	if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' ')
		return fail(p, "not an HTTP/1.x status line");
	if (s[9] < '1' || s[9] > '5' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9' ||
	    (n > 12 && s[12] != ' '))
		return fail(p, "bad status code");
	p->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	p->http10 = s[7] == '0';
	/* Each answer (an interim one included) has its own header fields. */
	p->fields = 0;
	p->close = p->keep_alive = p->chunked = p->have_length = p->seen_te = false;
	p->length = 0;
	p->retry_after_s = -1;
	p->state = ST_HEADER;
	return 0;
}

static int finish(struct up_http_parser *p, bool reusable)
{
	p->state = ST_DONE;
	p->reusable = reusable;
	return 1;
}

/* The empty line after the header fields: decides how the body is framed. */
static int end_of_headers(struct up_http_parser *p)
{
	if (p->status < 200) {
		/* 101 would switch protocols we never asked for. */
		if (p->status == 101 || ++p->interim > UP_HTTP_INTERIM_MAX)
			return fail(p, p->status == 101 ? "unasked protocol switch"
							: "too many interim answers");
		p->state = ST_STATUS;
		return 0;
	}
	bool persistent = !p->close && (!p->http10 || p->keep_alive);
	if (p->status == 204 || p->status == 304)
		return finish(p, persistent);
	if (p->seen_te) {
		/* Both framings present is a smuggling pattern: read as chunked, never reuse. */
		if (p->have_length)
			persistent = false;
		if (p->chunked) {
			p->reusable = persistent;
			p->state = ST_CHUNK_SIZE;
			return 0;
		}
		p->state = ST_BODY_CLOSE;
		return 0;
	}
	if (p->have_length) {
		/* A kept body's announced length is held against its cap before a byte of it. */
		if (p->sink && p->length > p->body_max)
			return fail(p, "body too large");
		if (p->length == 0)
			return finish(p, persistent);
		p->reusable = persistent;
		p->remaining = p->length;
		p->state = ST_BODY_LEN;
		return 0;
	}
	p->state = ST_BODY_CLOSE;
	return 0;
}

static int chunk_size(struct up_http_parser *p, const char *s, size_t n)
{
	unsigned long long v = 0;
	size_t i = 0;
	for (; i < n; i++) {
		char c = lower(s[i]);
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			break;
		v = v * 16 + (unsigned)d;
		if (v > HTTP_NUMBER_MAX)
			return fail(p, "chunk size overflows");
	}
	if (i == 0)
		return fail(p, "bad chunk size");
	/* What may follow: BWS and a chunk extension, whose contents we ignore. */
	while (i < n && ows(s[i]))
		i++;
	if (i < n && s[i] != ';')
		return fail(p, "bad chunk size");
	if (v == 0) {
		p->fields = 0;
		p->state = ST_TRAILER;
		return 0;
	}
	p->remaining = v;
	p->state = ST_CHUNK_DATA;
	return 0;
}

/* One complete line (its CRLF or LF taken off) in a line state. */
static int line_done(struct up_http_parser *p, const char *s, size_t n)
{
	switch (p->state) {
	case ST_STATUS:
		return status_line(p, s, n);
	case ST_HEADER:
		return n == 0 ? end_of_headers(p) : field(p, s, n, false);
	case ST_TRAILER:
		return n == 0 ? finish(p, p->reusable) : field(p, s, n, true);
	case ST_CHUNK_SIZE:
		return chunk_size(p, s, n);
	case ST_CHUNK_END:
		if (n != 0)
			return fail(p, "chunk longer than its size");
		p->state = ST_CHUNK_SIZE;
		return 0;
	}
	return fail(p, "internal state");
}

int up_http_feed(struct up_http_parser *p, const void *data, size_t n, size_t *used)
{
	const unsigned char *b = data;
	size_t i = 0;
	int r = 0;

	if (p->state == ST_ERROR)
		return -EBADMSG;
	if (n)
		p->any_byte = true;
	while (i < n && p->state != ST_DONE && p->state != ST_ERROR) {
		bool in_header = p->state == ST_STATUS || p->state == ST_HEADER;
		bool in_body = !in_header;
		unsigned long long body_max = p->sink ? p->body_max : UP_HTTP_BODY_MAX;
		if (in_body && p->body_bytes >= body_max) {
			if (p->sink) {
				r = fail(p, "body too large");
				break;
			}
			/* Enough: what follows is not read, so the connection cannot be reused. */
			r = finish(p, false);
			break;
		}
		if (p->state == ST_BODY_LEN || p->state == ST_BODY_CLOSE ||
		    p->state == ST_CHUNK_DATA) {
			size_t take = n - i;
			unsigned long long room = body_max - p->body_bytes;
			if (take > room)
				take = (size_t)room;
			if (p->state != ST_BODY_CLOSE && take > p->remaining)
				take = (size_t)p->remaining;
			if (p->sink && p->sink(p->sink_arg, b + i, take) != 0) {
				r = fail(p, "the body could not be kept");
				break;
			}
			i += take;
			p->body_bytes += take;
			if (p->state == ST_BODY_CLOSE)
				continue;
			p->remaining -= take;
			if (p->remaining == 0) {
				if (p->state == ST_BODY_LEN)
					r = finish(p, p->reusable);
				else
					p->state = ST_CHUNK_END;
			}
			continue;
		}

		/* A line state: one byte at a time into the line. */
		unsigned char c = b[i++];
		if (in_header && ++p->header_bytes > UP_HTTP_HEADERS_MAX) {
			r = fail(p, "header section too large");
			break;
		}
		if (in_body)
			p->body_bytes++;
		if (c == '\n') {
			size_t len = p->line_len;
			if (len && p->line[len - 1] == '\r')
				len--;
			p->line_len = 0;
			r = line_done(p, p->line, len);
			if (r < 0)
				break;
			continue;
		}
		/* A CR is kept only to be taken off before the LF; anywhere else it, a NUL, DEL
		 * or another control byte (HTAB aside) is not HTTP. */
		if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f ||
		    (p->line_len && p->line[p->line_len - 1] == '\r')) {
			r = fail(p, "control byte in a line");
			break;
		}
		if (p->line_len >= sizeof(p->line) - 1) {
			r = fail(p, "line too long");
			break;
		}
		p->line[p->line_len++] = (char)c;
	}
	if (p->state == ST_DONE) {
		if (used)
			*used = i;
		return 1;
	}
	if (p->state == ST_ERROR)
		return -EBADMSG;
	if (used)
		*used = i;
	return r < 0 ? r : 0;
}

int up_http_eof(struct up_http_parser *p)
{
	if (p->state == ST_DONE)
		return 1;
	if (p->state == ST_BODY_CLOSE)
		return finish(p, false);
	if (p->state == ST_ERROR)
		return -EBADMSG;
	if (!p->any_byte)
		return -ECONNRESET;
	fail(p, "closed in the middle of the answer");
	return -EBADMSG;
}
