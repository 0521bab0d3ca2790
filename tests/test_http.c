/* SPDX-License-Identifier: MIT */
/*
 * uploader/http.c: the request's exact bytes, and the answer parser fed whole, split at
 * every byte boundary, and fed every kind of garbage and every cap plus one.
 */
#include "harness.h"

#include "uploader/http.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

TEST(http_request_format)
{
	char buf[512];
	int n = up_http_request(buf, sizeof(buf), "collector.example", "443", "/v1/reports",
				"0f8e2a4c-1b2d-4e5f-9a6b-7c8d9e0f1a2b", 17);
	CHECK_STR(buf, "POST /v1/reports HTTP/1.1\r\n"
		       "Host: collector.example\r\n"
		       "User-Agent: jitt/1\r\n"
		       "Content-Type: application/json\r\n"
		       "Content-Length: 17\r\n"
		       "Idempotency-Key: 0f8e2a4c-1b2d-4e5f-9a6b-7c8d9e0f1a2b\r\n"
		       "\r\n");
	CHECK_EQ_INT(n, (int)strlen(buf));

	/* Another port goes into Host; an IPv6 literal back into its brackets. */
	up_http_request(buf, sizeof(buf), "127.0.0.1", "8443", "/r", "k", 0);
	CHECK(strstr(buf, "\r\nHost: 127.0.0.1:8443\r\n") != NULL);
	up_http_request(buf, sizeof(buf), "::1", "8443", "/r", "k", 0);
	CHECK(strstr(buf, "\r\nHost: [::1]:8443\r\n") != NULL);
}

TEST(http_request_refuses_header_injection_and_small_buffers)
{
	char buf[512];
	CHECK_EQ_INT(up_http_request(buf, sizeof(buf), "a\r\nX-Evil: 1", "443", "/", "k", 1),
		     -EINVAL);
	CHECK_EQ_INT(up_http_request(buf, sizeof(buf), "a", "443", "/x y", "k", 1), -EINVAL);
	CHECK_EQ_INT(up_http_request(buf, sizeof(buf), "a", "443", "nopath", "k", 1), -EINVAL);
	CHECK_EQ_INT(up_http_request(buf, sizeof(buf), "a", "443", "/", "k\n", 1), -EINVAL);
	CHECK_EQ_INT(up_http_request(buf, sizeof(buf), "", "443", "/", "k", 1), -EINVAL);
	CHECK_EQ_INT(up_http_request(buf, 40, "a", "443", "/", "k", 1), -ENOSPC);
}

/* Feeds the whole text at once; returns what up_http_feed (then up_http_eof, when asked
 * and the answer was not complete) said, and how many bytes it used. */
static int parse(struct up_http_parser *p, const char *text, size_t len, bool eof, size_t *used)
{
	up_http_parser_init(p);
	size_t u = 0;
	int r = up_http_feed(p, text, len, &u);
	if (used)
		*used = u;
	if (r == 0 && eof)
		r = up_http_eof(p);
	return r;
}

/* The same answer split into two pieces at every boundary, and fed one byte at a time,
 * must read the same as fed whole. */
static void check_every_split(const char *text, bool eof, int want_r, int want_status,
			      long want_retry, bool want_reusable)
{
	size_t len = strlen(text);
	struct up_http_parser p;
	for (size_t cut = 0; cut <= len; cut++) {
		up_http_parser_init(&p);
		size_t u1 = 0, u2 = 0;
		int r = up_http_feed(&p, text, cut, &u1);
		if (r == 0)
			r = up_http_feed(&p, text + cut, len - cut, &u2);
		if (r == 0 && eof)
			r = up_http_eof(&p);
		if (r != want_r ||
		    (r == 1 && (p.status != want_status || p.retry_after_s != want_retry ||
				p.reusable != want_reusable))) {
			test_fail(__FILE__, __LINE__,
				  "cut at %zu: r=%d status=%d retry=%ld reusable=%d", cut, r,
				  p.status, p.retry_after_s, p.reusable);
			return;
		}
	}
	up_http_parser_init(&p);
	int r = 0;
	for (size_t i = 0; i < len && r == 0; i++)
		r = up_http_feed(&p, text + i, 1, NULL);
	if (r == 0 && eof)
		r = up_http_eof(&p);
	CHECK_EQ_INT(r, want_r);
	if (want_r == 1) {
		CHECK_EQ_INT(p.status, want_status);
		CHECK_EQ_INT(p.reusable, want_reusable);
	}
}

TEST(http_answer_content_length_every_split)
{
	check_every_split(
		"HTTP/1.1 201 Created\r\nServer: nginx\r\nContent-Type: application/json\r\n"
		"Content-Length: 15\r\n\r\n{\"stored\":true}",
		false, 1, 201, -1, true);
	/* Bare LFs, no reason phrase, HTTP/1.0 (closes unless kept alive). */
	check_every_split("HTTP/1.1 200\nContent-Length: 2\n\nok", false, 1, 200, -1, true);
	check_every_split("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false, 1, 200, -1,
			  false);
	check_every_split(
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", false,
		1, 200, -1, true);
	check_every_split("HTTP/1.1 201 Created\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n",
			  false, 1, 201, -1, false);
	/* Repeated Content-Length that agrees, in a list and in two fields. */
	check_every_split("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\ncontent-length: 3\r\n\r\nabc",
			  false, 1, 200, -1, true);
}

TEST(http_answer_chunked_every_split)
{
	check_every_split("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			  "5;name=value\r\nhello\r\nA \r\n0123456789\r\n0\r\n"
			  "X-Trailer: yes\r\n\r\n",
			  false, 1, 200, -1, true);
	/* gzip, then chunked: still chunked framing (the body is thrown away anyway). */
	check_every_split("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
			  "1\r\nx\r\n0\r\n\r\n",
			  false, 1, 200, -1, true);
	/* Chunked together with Content-Length: chunked wins, never reused. */
	check_every_split(
		"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
		"1\r\nx\r\n0\r\n\r\n",
		false, 1, 200, -1, false);
}

TEST(http_answer_until_close_every_split)
{
	check_every_split("HTTP/1.1 200 OK\r\n\r\nbody until the close", true, 1, 200, -1, false);
	/* A coding that is not chunked last: until the close too. */
	check_every_split("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nxyz", true, 1,
			  200, -1, false);
	/* No body at all for 204 and 304, whatever Content-Length says. */
	check_every_split("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", false, 1, 204, -1,
			  true);
}

TEST(http_answer_interim_skipped)
{
	check_every_split(
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
		"HTTP/1.1 503 Busy\r\nRetry-After: 120\r\nContent-Length: 0\r\n\r\n",
		false, 1, 503, 120, true);
	/* An interim answer's Retry-After is not the final one's. */
	check_every_split("HTTP/1.1 100 Continue\r\nRetry-After: 5\r\n\r\n"
			  "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
			  false, 1, 201, -1, true);
	struct up_http_parser p;
	const char *up = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n";
	CHECK_EQ_INT(parse(&p, up, strlen(up), false, NULL), -EBADMSG);
	char many[2048] = "";
	for (int i = 0; i <= UP_HTTP_INTERIM_MAX; i++)
		strcat(many, "HTTP/1.1 100 Continue\r\n\r\n");
	CHECK_EQ_INT(parse(&p, many, strlen(many), false, NULL), -EBADMSG);
}

TEST(http_retry_after)
{
	static const struct {
		const char *value;
		long want;
	} cases[] = {
		{ "0", 0 },
		{ "3600", 3600 },
		{ " 42 ", 42 },
		{ "-5", -1 },
		{ "+5", -1 },
		{ "1.5", -1 },
		{ "", -1 },
		{ "99999999999999999999999999", -1 },
		{ "Wed, 21 Oct 2015 07:28:00 GMT", -1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[256];
		snprintf(text, sizeof(text),
			 "HTTP/1.1 429 Too Many\r\nRetry-After:%s\r\nContent-Length: 0\r\n\r\n",
			 cases[i].value);
		struct up_http_parser p;
		CHECK_EQ_INT(parse(&p, text, strlen(text), false, NULL), 1);
		if (p.retry_after_s != cases[i].want)
			test_fail(__FILE__, __LINE__, "Retry-After:%s read as %ld, wanted %ld",
				  cases[i].value, p.retry_after_s, cases[i].want);
	}
}

TEST(http_leftover_bytes_are_reported)
{
	struct up_http_parser p;
	const char *t = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA";
	size_t used = 0;
	CHECK_EQ_INT(parse(&p, t, strlen(t), false, &used), 1);
	CHECK_EQ_INT(used, strlen(t) - 5);
	/* Done stays done. */
	CHECK_EQ_INT(up_http_feed(&p, "x", 1, &used), 1);
	CHECK_EQ_INT(used, 0);
}

TEST(http_eof_cases)
{
	struct up_http_parser p;
	up_http_parser_init(&p);
	CHECK_EQ_INT(up_http_eof(&p), -ECONNRESET);
	const char *half = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
	CHECK_EQ_INT(parse(&p, half, strlen(half), true, NULL), -EBADMSG);
	const char *head = "HTTP/1.1 200 OK\r\nServ";
	CHECK_EQ_INT(parse(&p, head, strlen(head), true, NULL), -EBADMSG);
	const char *chunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab";
	CHECK_EQ_INT(parse(&p, chunk, strlen(chunk), true, NULL), -EBADMSG);
}

TEST(http_garbage_is_ebadmsg)
{
	static const char *const bad[] = {
		"garbage\r\n",
		"HTTP/2 200\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 099 Low\r\n\r\n",
		"HTTP/1.1 600 High\r\n\r\n",
		"HTTP/1.1 20x OK\r\n\r\n",
		"HTTP/1.1 200OK\r\n\r\n",
		"http/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
		"HTTP/1.1 200 OK\r\nName : space before colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\n: no name\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: b\r\n folded: line\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: nul\0byte\r\n\r\n",
		"HTTP/1.1 200 OK\r\nA: esc\033byte\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551617\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1 x\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct up_http_parser p;
		/* The NUL case's length is taken up to its end. */
		size_t len = strlen(bad[i]);
		if (strstr(bad[i], "nul"))
			len += 1 + strlen(bad[i] + len + 1);
		int r = parse(&p, bad[i], len, false, NULL);
		if (r != -EBADMSG)
			test_fail(__FILE__, __LINE__, "case %zu read as %d (status %d): %s", i, r,
				  p.status, bad[i]);
		else if (!p.why)
			test_fail(__FILE__, __LINE__, "case %zu gave no reason", i);
		/* An error sticks. */
		CHECK_EQ_INT(up_http_feed(&p, "HTTP/1.1 200 OK\r\n\r\n", 19, NULL), -EBADMSG);
	}
}

TEST(http_caps)
{
	struct up_http_parser p;
	size_t big = 200000;
	char *t = malloc(big);
	CHECK(t != NULL);
	if (!t)
		return;

	/* A line (its CRLF included) at the cap is fine; one byte more is not. */
	strcpy(t, "HTTP/1.1 200 OK\r\nX: ");
	size_t pre = strlen(t);
	memset(t + pre, 'a', UP_HTTP_LINE_MAX - 2 - 3);
	strcpy(t + pre + UP_HTTP_LINE_MAX - 2 - 3, "\r\nContent-Length: 0\r\n\r\n");
	CHECK_EQ_INT(parse(&p, t, strlen(t), false, NULL), 1);
	memset(t + pre, 'a', UP_HTTP_LINE_MAX - 1 - 3);
	strcpy(t + pre + UP_HTTP_LINE_MAX - 1 - 3, "\r\n\r\n");
	CHECK_EQ_INT(parse(&p, t, strlen(t), false, NULL), -EBADMSG);

	/* An endless line never ends: it fails at the cap, not at the end of memory. */
	memset(t, 'H', big);
	CHECK_EQ_INT(parse(&p, t, big, false, NULL), -EBADMSG);

	/* Too many fields; too large a header section made of short lines. */
	strcpy(t, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i <= UP_HTTP_FIELDS_MAX; i++)
		strcat(t, "A: b\r\n");
	strcat(t, "\r\n");
	CHECK_EQ_INT(parse(&p, t, strlen(t), false, NULL), -EBADMSG);
	strcpy(t, "HTTP/1.1 200 OK\r\n");
	char *w = t + strlen(t);
	for (int i = 0; i < UP_HTTP_FIELDS_MAX; i++) {
		memcpy(w, "X: ", 3);
		memset(w + 3, 'v', 200);
		memcpy(w + 203, "\r\n", 3);
		w += 205;
	}
	strcat(t, "\r\n");
	CHECK_EQ_INT(parse(&p, t, strlen(t), false, NULL), -EBADMSG);
	CHECK_STR(p.why, "header section too large");

	/* A body past the cap: the answer is taken as complete there, never reused. */
	strcpy(t, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
	pre = strlen(t);
	memset(t + pre, 'b', 100000);
	size_t used = 0;
	CHECK_EQ_INT(parse(&p, t, pre + 100000, false, &used), 1);
	CHECK_EQ_INT(used, pre + UP_HTTP_BODY_MAX);
	CHECK(!p.reusable);
	/* The same until the close (an endless body), and chunked in tiny chunks. */
	strcpy(t, "HTTP/1.1 200 OK\r\n\r\n");
	pre = strlen(t);
	memset(t + pre, 'b', 100000);
	CHECK_EQ_INT(parse(&p, t, pre + 100000, false, NULL), 1);
	CHECK(!p.reusable);
	strcpy(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	w = t + strlen(t);
	while (w < t + big - 100) {
		memcpy(w, "1;e=x\r\nz\r\n", 11);
		w += 10;
	}
	CHECK_EQ_INT(parse(&p, t, strlen(t), false, NULL), 1);
	CHECK(!p.reusable);
	free(t);
}
