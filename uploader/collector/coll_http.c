/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/coll_http.c - HTTP/1.1 request heads (RFC 9112), parsed strictly.
 */
#include "uploader/collector/coll_http.h"

#include <stdio.h>
#include <string.h>

size_t coll_http_head_end(const char *buf, size_t len)
{
	for (size_t i = 3; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

/* RFC 9110 tchar: what a method and a field name are made of. */
static bool is_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int bad(char *why, size_t whysize, int status, const char *msg)
{
	snprintf(why, whysize, "%s", msg);
	return status;
}

/* The request line line[0..n) (no CRLF): "METHOD SP target SP HTTP/1.x". */
static int parse_line(const char *line, size_t n, struct coll_request *req, char *why,
		      size_t whysize)
{
	size_t i = 0, m = 0;
	while (i < n && is_tchar((unsigned char)line[i]))
		i++;
	if (i == 0 || i >= sizeof(req->method) || i >= n || line[i] != ' ')
		return bad(why, whysize, 400, "bad request line: method");
	memcpy(req->method, line, i);
	req->method[i] = 0;
	m = ++i;
	/* The target: visible ASCII only (no controls, no spaces, no 8-bit bytes). */
	while (i < n && line[i] > 0x20 && line[i] < 0x7f)
		i++;
	if (i == m || i >= n || line[i] != ' ')
		return bad(why, whysize, 400, "bad request line: target");
	if (i - m >= sizeof(req->target))
		return bad(why, whysize, 414, "bad request line: target too long");
	memcpy(req->target, line + m, i - m);
	req->target[i - m] = 0;
	i++;
	if (n - i != 8 || memcmp(line + i, "HTTP/1.", 7) != 0 || line[i + 7] < '0' ||
	    line[i + 7] > '9') {
		if (n - i == 8 && memcmp(line + i, "HTTP/", 5) == 0)
			return bad(why, whysize, 505, "HTTP version not supported");
		return bad(why, whysize, 400, "bad request line: version");
	}
	req->minor = line[i + 7] - '0';
	req->close = req->minor == 0; /* HTTP/1.0: close unless it asks to keep alive */
	return 0;
}

int coll_http_check_line(const char *buf, size_t len, char *why, size_t whysize)
{
	const char *nl = memchr(buf, '\n', len);
	struct coll_request req;
	if (!nl)
		return 0;
	size_t n = (size_t)(nl - buf);
	if (n == 0 || buf[n - 1] != '\r')
		return bad(why, whysize, 400, "bad request line: no CRLF");
	memset(&req, 0, sizeof(req));
	return parse_line(buf, n - 1, &req, why, whysize);
}

/* Case-insensitive comparison of a field name a[0..n) with the lower-case b. */
static bool name_is(const char *a, size_t n, const char *b)
{
	if (strlen(b) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = a[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != b[i])
			return false;
	}
	return true;
}

/* Whether the comma-separated list v[0..n) holds the token t (case-insensitive). */
static bool list_has(const char *v, size_t n, const char *t)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < n && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
			i++;
		if (i > s && name_is(v + s, i - s, t))
			return true;
		while (i < n && v[i] != ',')
			i++;
	}
	return false;
}

int coll_http_parse(const char *buf, size_t len, struct coll_request *req, char *why,
		    size_t whysize)
{
	memset(req, 0, sizeof(*req));
	req->content_length = -1;
	const char *nl = memchr(buf, '\n', len);
	if (!nl || nl == buf || nl[-1] != '\r')
		return bad(why, whysize, 400, "bad request line: no CRLF");
	int rc = parse_line(buf, (size_t)(nl - buf) - 1, req, why, whysize);
	if (rc)
		return rc;
	size_t i = (size_t)(nl - buf) + 1;
	bool keep_alive = false, saw_close = false;
	/* One field per line, up to the blank line that ends the head. */
	while (i + 2 <= len && !(buf[i] == '\r' && buf[i + 1] == '\n')) {
		const char *line = buf + i;
		const char *end = memchr(line, '\n', len - i);
		if (!end || end == line || end[-1] != '\r')
			return bad(why, whysize, 400, "bad header field: no CRLF");
		size_t n = (size_t)(end - line) - 1, c = 0;
		i += n + 2;
		/* No obsolete line folding, no whitespace before the colon (RFC 9112 §5.1). */
		while (c < n && is_tchar((unsigned char)line[c]))
			c++;
		if (c == 0 || c >= n || line[c] != ':')
			return bad(why, whysize, 400, "bad header field name");
		size_t vs = c + 1, ve = n;
		while (vs < ve && (line[vs] == ' ' || line[vs] == '\t'))
			vs++;
		while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
			ve--;
		const char *v = line + vs;
		size_t vn = ve - vs;
		for (size_t k = 0; k < vn; k++)
			if ((unsigned char)v[k] < 0x20 && v[k] != '\t')
				return bad(why, whysize, 400, "bad header field value: control byte");
		if (name_is(line, c, "content-length")) {
			/* Digits only; a repeat must say the same (RFC 9112 §6.3 item 5). */
			int64_t cl = 0;
			if (vn == 0 || vn > 18)
				return bad(why, whysize, 400, "bad Content-Length");
			for (size_t k = 0; k < vn; k++) {
				if (v[k] < '0' || v[k] > '9')
					return bad(why, whysize, 400, "bad Content-Length");
				cl = cl * 10 + (v[k] - '0');
			}
			if (req->content_length >= 0 && req->content_length != cl)
				return bad(why, whysize, 400, "conflicting Content-Length");
			req->content_length = cl;
		} else if (name_is(line, c, "transfer-encoding")) {
			req->chunked = true;
		} else if (name_is(line, c, "connection")) {
			if (list_has(v, vn, "close"))
				req->close = saw_close = true;
			if (list_has(v, vn, "keep-alive"))
				keep_alive = true;
		} else if (name_is(line, c, "expect")) {
			if (!name_is(v, vn, "100-continue"))
				return bad(why, whysize, 417, "unsupported Expect");
			req->expect_continue = true;
		} else if (name_is(line, c, "idempotency-key")) {
			if (req->has_key)
				return bad(why, whysize, 400, "Idempotency-Key given twice");
			if (vn > COLL_KEY_MAX)
				return bad(why, whysize, 400, "Idempotency-Key too long");
			memcpy(req->key, v, vn);
			req->key[vn] = 0;
			req->has_key = true;
		}
	}
	if (i + 2 != len)
		return bad(why, whysize, 400, "bad request head");
	/* HTTP/1.0 closes after each answer unless it asked for keep-alive (and not close). */
	if (req->minor == 0 && keep_alive && !saw_close)
		req->close = false;
	/* Bodies are framed by Content-Length only: a chunked upload is refused (RFC 9110
	 * §15.5.12), and so is Transfer-Encoding together with Content-Length (smuggling). */
	if (req->chunked)
		return bad(why, whysize, 411, "Transfer-Encoding not accepted: send Content-Length");
	if (req->content_length > COLL_BODY_MAX)
		return bad(why, whysize, 413, "body over 64 KiB");
	return 0;
}

const char *coll_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 417: return "Expectation Failed";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	default: return "Status";
	}
}
