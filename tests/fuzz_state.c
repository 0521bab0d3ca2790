/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the uploader's state files (uploader/state.h) and its queue's file
 * names (uploader/queue.h): the consent line an OEM's settings app writes, the budget file
 * that survives reboots, and names found in the uploads folder. Promises, for every input:
 *   - consent: 0 only for exactly "granted" or "revoked" (one newline allowed);
 *   - budget: an accepted file has its entries sorted, formats back to text that parses to
 *     the same entries, and up_budget_left never allows more than the count;
 *   - a queue name that parses is made again, byte for byte, from what was parsed.
 * Built with clang -fsanitize=fuzzer,address,undefined (the fuzz targets of the Makefile).
 */
#include "uploader/queue.h"
#include "uploader/state.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct up_budget b, back;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	bool granted;
	if (up_consent_parse(text, size, &granted) == 0) {
		size_t n = size && text[size - 1] == '\n' ? size - 1 : size;
		if (n != 7 || memcmp(text, granted ? "granted" : "revoked", 7))
			abort();
	}

	char err[128], out[UP_BUDGET_MAX * 28 + 32];
	if (up_budget_parse(text, size, &b, err, sizeof(err)) == 0) {
		for (size_t i = 1; i < b.n; i++)
			if (b.sent[i - 1] > b.sent[i])
				abort();
		int n = up_budget_format(&b, out, sizeof(out));
		if (n < 0 || up_budget_parse(out, (size_t)n, &back, err, sizeof(err)) != 0 ||
		    back.n != b.n || memcmp(back.sent, b.sent, b.n * sizeof(b.sent[0])))
			abort();
		int64_t reopens, now = b.n ? b.sent[b.n / 2] : 0;
		for (unsigned count = 0; count < 5; count++)
			if (up_budget_left(&b, now, 7 * 86400, count, &reopens) > count)
				abort();
	}

	char name[128];
	size_t n = size < sizeof(name) - 1 ? size : sizeof(name) - 1;
	memcpy(name, data, n);
	name[n] = 0;
	struct up_queued q;
	if (up_queue_parse_name(name, &q) == 0) {
		char again[128];
		snprintf(again, sizeof(again), "r-%" PRId64 "-%" PRIu64 "-%s-%u.json", q.queued_s,
			 q.severity_us, q.key, q.attempts);
		if (strcmp(again, name))
			abort();
	}
	return 0;
}
