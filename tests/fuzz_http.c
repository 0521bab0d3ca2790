/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the uploader's HTTP answer parser (uploader/http.h): the bytes a
 * collector, or whatever answers in its place, sends back.
 *
 * Each input is fed whole, then again in pieces whose sizes come from the input's bytes
 * (1 to 64), then one byte at a time: the three must agree on the outcome (complete, error
 * or still waiting), on the status, Retry-After, reusability and the number of bytes used,
 * because the network may cut an answer anywhere. A complete answer has a status in
 * 100..599 (never 1xx: those are skipped), and never uses more than it was given. The end of
 * the connection after the input must also be decided without a crash. Built with
 *   clang -fsanitize=fuzzer,address,undefined (the fuzz targets of the Makefile).
 */
#include "uploader/http.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct outcome {
	int r;
	int status;
	long retry;
	int reusable;
	size_t used;
};

/* Feeds data in pieces of sizes from sizes[] (cycled; 0 = all at once). */
static struct outcome run(const uint8_t *data, size_t n, const uint8_t *sizes, size_t nsizes)
{
	struct up_http_parser p;
	struct outcome o = { 0, 0, -1, 0, 0 };
	up_http_parser_init(&p);
	size_t off = 0, k = 0;
	while (off < n) {
		size_t piece = nsizes ? (size_t)(sizes[k++ % nsizes] % 64) + 1 : n;
		if (piece > n - off)
			piece = n - off;
		size_t used = 0;
		int r = up_http_feed(&p, data + off, piece, &used);
		if (r != 0 && r != 1 && r != -EBADMSG)
			abort();
		if (used > piece)
			abort();
		if (r == 1) {
			o.used = off + used;
			o.r = 1;
			break;
		}
		if (r < 0) {
			o.r = r;
			if (!p.why)
				abort();
			break;
		}
		if (used != piece)
			abort(); /* still waiting means everything was taken */
		off += piece;
	}
	if (o.r == 1) {
		if (p.status < 200 || p.status > 599)
			abort();
		o.status = p.status;
		o.retry = p.retry_after_s;
		o.reusable = p.reusable;
		if (o.used > n)
			abort();
	}
	if (o.r == 0) {
		int e = up_http_eof(&p);
		if (e != 1 && e != -EBADMSG && e != -ECONNRESET)
			abort();
		if (e == -ECONNRESET && n != 0)
			abort();
	}
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t one[] = { 0 };
	struct outcome whole = run(data, size, NULL, 0);
	struct outcome pieces = run(data, size, data, size < 16 ? size : 16);
	struct outcome bytes = run(data, size, one, 1);
	if (memcmp(&whole, &pieces, sizeof(whole)) != 0 ||
	    memcmp(&whole, &bytes, sizeof(whole)) != 0)
		abort();
	return 0;
}
