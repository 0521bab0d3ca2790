/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the report builder (uploader/report.h): for any input, either
 * -EINVAL, or a strict JSON document (uploader/json.h) of at most UP_REPORT_MAX bytes,
 * plain ASCII, schema jitt.report, whose top-level members are exactly the envelope's
 * (docs/report-format.md), in order.
 */
#include "tests/fuzz_common.h"
#include "uploader/json.h"
#include "uploader/report.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const envelope[] = { "schema", "version", "key",    "id",	  "period",
						"hour",	  "app",     "detector", "reason", "summary" };
	struct up_report_params p = {
		.key = "6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21",
		.id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		.period = 683,
		.unix_s = 1795431845,
		.thread_names = "main ui render",
		.reasons = "hang jank slow-frame slow-start",
	};
	char out[UP_REPORT_MAX], err[256];
	size_t n = 0;
	int e = up_report_build((const char *)data, size, &p, out, sizeof(out), &n, err, sizeof(err));
	FUZZ_CHECK(e == 0 || e == -EINVAL || e == -ENOMEM);
	if (e)
		return 0;
	FUZZ_CHECK(n <= UP_REPORT_MAX);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(out[i] >= 0x20 && out[i] < 0x7f);
	struct json_doc d;
	FUZZ_CHECK(json_parse(&d, out, n, err, sizeof(err)) == 0);
	FUZZ_CHECK(json_type(&d, 0) == JSON_OBJECT && json_len(&d, 0) == 10);
	unsigned i = 0;
	for (uint32_t v = json_first(&d, 0); v != JSON_NONE; v = json_next(&d, v), i++)
		FUZZ_CHECK(!strcmp(d.strings + d.v[v].key, envelope[i]));
	const char *schema = json_str(&d, json_get(&d, 0, "schema"), NULL);
	FUZZ_CHECK(schema && !strcmp(schema, "jitt.report"));
	json_free(&d);
	return 0;
}
