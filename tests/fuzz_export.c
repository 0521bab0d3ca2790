/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the exports (agent/analysis/export.h, perfetto.h): a decoded trace (its
 * CRC made to match) as Chrome JSON, folded stacks and Perfetto protobuf, each written to a
 * stream that keeps a bounded prefix. When an export says it succeeded, what it wrote must
 * be what a viewer can read:
 *   - chrome: one valid JSON document (uploader/json.h, strict RFC 8259);
 *   - folded: lines "frame;...;frame COUNT", COUNT a positive decimal after the last space,
 *     no control byte in the frames (a line break in a name would forge a line);
 *   - perfetto: a Trace message, nothing but `packet` fields (1, length-delimited) whose
 *     lengths add up to the file exactly.
 */
#include "agent/analysis/export.h"
#include "uploader/json.h"
#include "agent/analysis/perfetto.h"
#include "tests/fuzz_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Kept for checking; a deep trace's folded export is quadratic in its depth, and only its
 * size is counted past this. */
#define KEEP (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_chrome(const struct fuzz_sink *out)
{
	if (out->truncated)
		return;
	struct json_doc doc;
	char err[256];
	int e = json_parse(&doc, out->data, out->len, err, sizeof(err));
	if (e == -EINVAL)
		fprintf(stderr, "chrome export is not JSON: %s\n", err);
	FUZZ_CHECK(e != -EINVAL);
	if (e == 0)
		FUZZ_CHECK(json_type(&doc, 0) == JSON_OBJECT &&
			   json_type(&doc, json_get(&doc, 0, "traceEvents")) == JSON_ARRAY);
	json_free(&doc);
}

/* Whole lines only: a truncated sink ends inside one. */
static void check_folded(const struct fuzz_sink *out)
{
	const char *p = out->data, *end = out->data + out->len;
	for (;;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;
		const char *sp = nl;
		while (sp > p && sp[-1] >= '0' && sp[-1] <= '9')
			sp--;
		FUZZ_CHECK(sp < nl && sp[0] != '0');	 /* a positive count, no leading zero */
		FUZZ_CHECK(sp - 1 > p && sp[-1] == ' '); /* after a space, after a frame */
		for (const char *c = p; c < sp - 1; c++)
			FUZZ_CHECK((unsigned char)*c >= 0x20);
		p = nl + 1;
	}
	if (!out->truncated)
		FUZZ_CHECK(p == end);
}

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static void check_perfetto(const struct fuzz_sink *out)
{
	if (out->truncated)
		return;
	const uint8_t *p = (const uint8_t *)out->data, *end = p + out->len;
	while (p < end) {
		uint64_t tag, len;
		FUZZ_CHECK(varint(&p, end, &tag) && tag == (1u << 3 | AGENT_PB_LEN));
		FUZZ_CHECK(varint(&p, end, &len) && len <= (uint64_t)(end - p));
		p += len;
	}
}

typedef int (*export_fn)(FILE *, const struct rb_trace *, struct agent_symbols *);
typedef void (*check_fn)(const struct fuzz_sink *);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const export_fn fns[] = { agent_export_chrome, agent_export_folded,
					 agent_export_perfetto };
	static const check_fn checks[] = { check_chrome, check_folded, check_perfetto };
	struct fuzz_trace ft;
	if (fuzz_trace_open(&ft, data, size, true) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		struct fuzz_sink out;
		FILE *f = fuzz_sink_open(&out, KEEP);
		if (!f)
			continue;
		int e = fns[i](f, &ft.t, &ft.syms);
		FUZZ_CHECK(fclose(f) == 0);
		FUZZ_CHECK(e == 0 || e == -EINVAL || e == -ENOMEM);
		if (e == 0)
			checks[i](&out);
		fuzz_sink_free(&out);
	}
	fuzz_trace_close(&ft);
	return 0;
}
