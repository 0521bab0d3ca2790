/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the summariser: summary_build on a decoded trace (its CRC made to
 * match, so mutations reach the rings), then summary_write_json and summary_write_text, as
 * jittd and `jitt summarize` do. What it checks besides the sanitizers:
 *   - the JSON is one valid JSON object of schema jitt.summary (uploader/json.h), and
 *     `jitt diff` reads it back (diff_side_add_summary): what jitt writes, jitt reads;
 *   - with FUZZ_STRICT_4K set (the environment, or -DFUZZ_STRICT_4K), the JSON is within
 *     SUMMARY_JSON_MAX bytes for every trace that summarises (hostile traces, nested
 *     thousands deep: the 4 KiB promise holds for every input; make fuzz sets it);
 *   - with FUZZ_STRICT_TEXT set, the text has no control byte but newline and tab (hostile
 *     names: names from a trace cannot drive a terminal; make fuzz sets it too).
 */
#include "agent/analysis/diff.h"
#include "uploader/json.h"
#include "agent/analysis/summary.h"
#include "agent/analysis/summary_out.h"
#include "tests/fuzz_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef FUZZ_STRICT_4K
#define STRICT_4K_BUILT 1
#else
#define STRICT_4K_BUILT 0
#endif

/* Kept for checking; past this the output is only counted (before deep nesting was bounded,
 * a deep trace made megabytes of it). */
#define KEEP (4u << 20)

static bool strict_4k, strict_text;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	strict_4k = STRICT_4K_BUILT || fuzz_env("FUZZ_STRICT_4K");
	strict_text = fuzz_env("FUZZ_STRICT_TEXT");
	return 0;
}

static void check_json(const struct fuzz_sink *out)
{
	if (strict_4k)
		FUZZ_CHECK(out->total <= SUMMARY_JSON_MAX);
	if (out->truncated)
		return;
	struct json_doc doc;
	char err[256];
	FUZZ_CHECK(json_parse(&doc, out->data, out->len, err, sizeof(err)) == 0);
	FUZZ_CHECK(json_type(&doc, 0) == JSON_OBJECT);
	const char *schema = json_str(&doc, json_get(&doc, 0, "schema"), NULL);
	FUZZ_CHECK(schema && strcmp(schema, SUMMARY_SCHEMA) == 0);
	json_free(&doc);

	struct diff_names names;
	struct diff_side side;
	if (diff_names_init(&names) != 0)
		return;
	if (diff_side_init(&side, &names) == 0) {
		int e = diff_side_add_summary(&side, out->data, out->len, err, sizeof(err));
		if (e != 0 && e != -ENOMEM) {
			fprintf(stderr, "diff cannot read the summary back: %s\n", err);
			FUZZ_CHECK(e == 0);
		}
		diff_side_free(&side);
	}
	diff_names_free(&names);
}

static void check_text(const struct fuzz_sink *out)
{
	if (!strict_text)
		return;
	for (size_t i = 0; i < out->len; i++) {
		unsigned char c = (unsigned char)out->data[i];
		FUZZ_CHECK(!(c < 0x20 && c != '\n' && c != '\t') && c != 0x7f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_trace ft;
	if (fuzz_trace_open(&ft, data, size, true) != 0)
		return 0;
	struct summary s;
	if (summary_build(&s, &ft.t, CONFIG_AGENT_SUMMARY_K) == 0) {
		struct fuzz_sink out;
		FILE *f = fuzz_sink_open(&out, KEEP);
		if (f) {
			int e = summary_write_json(f, &s, &ft.syms);
			FUZZ_CHECK(fclose(f) == 0);
			if (e == 0)
				check_json(&out);
			fuzz_sink_free(&out);
		}
		f = fuzz_sink_open(&out, KEEP);
		if (f) {
			int e = summary_write_text(f, &s, &ft.syms);
			FUZZ_CHECK(fclose(f) == 0);
			if (e == 0)
				check_text(&out);
			fuzz_sink_free(&out);
		}
		summary_free(&s);
	}
	fuzz_trace_close(&ft);
	return 0;
}
