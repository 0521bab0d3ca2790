/* SPDX-License-Identifier: MIT */
/* The uploader's state files (uploader/state.h). */
#include "uploader/state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int up_consent_parse(const char *text, size_t len, bool *granted)
{
	if (len > 0 && text[len - 1] == '\n')
		len--;
	if (len == 7 && !memcmp(text, "granted", 7)) {
		*granted = true;
		return 0;
	}
	if (len == 7 && !memcmp(text, "revoked", 7)) {
		*granted = false;
		return 0;
	}
	return -EINVAL;
}

const char *up_consent_text(bool granted)
{
	return granted ? "granted\n" : "revoked\n";
}

/* A decimal in [0, 2^62) from s[0..len): strict, no sign, no leading zero but "0". */
static int parse_seconds(const char *s, size_t len, int64_t *out)
{
	if (len == 0 || len > 18 || (len > 1 && s[0] == '0'))
		return -EINVAL;
	int64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static const char budget_header[] = "jitt.budget 1";

int up_budget_parse(const char *text, size_t len, struct up_budget *b, char *err,
		    size_t errsize)
{
	b->n = 0;
	if (len > UP_STATE_FILE_MAX) {
		snprintf(err, errsize, "%zu bytes, more than %d", len, UP_STATE_FILE_MAX);
		return -EINVAL;
	}
	size_t at = 0;
	for (unsigned line = 1; at < len; line++) {
		const char *nl = memchr(text + at, '\n', len - at);
		if (!nl) {
			snprintf(err, errsize, "line %u: no newline at the end", line);
			return -EINVAL;
		}
		const char *s = text + at;
		size_t n = (size_t)(nl - s);
		at += n + 1;
		if (line == 1) {
			if (n != sizeof(budget_header) - 1 || memcmp(s, budget_header, n)) {
				snprintf(err, errsize, "line 1: not \"%s\"", budget_header);
				return -EINVAL;
			}
			continue;
		}
		int64_t t;
		if (n < 6 || memcmp(s, "sent ", 5) || parse_seconds(s + 5, n - 5, &t)) {
			snprintf(err, errsize, "line %u: not \"sent SECONDS\"", line);
			return -EINVAL;
		}
		if (b->n == UP_BUDGET_MAX) {
			snprintf(err, errsize, "line %u: more than %d entries", line, UP_BUDGET_MAX);
			return -EINVAL;
		}
		/* Kept sorted (insertion: the file is ours and already sorted, so this is
		 * linear unless someone shuffled it, and it is at most 1000 entries). */
		size_t i = b->n++;
		while (i > 0 && b->sent[i - 1] > t) {
			b->sent[i] = b->sent[i - 1];
			i--;
		}
		b->sent[i] = t;
	}
	if (len == 0) {
		snprintf(err, errsize, "empty");
		return -EINVAL;
	}
	return 0;
}

int up_budget_format(const struct up_budget *b, char *buf, size_t size)
{
	size_t at = 0;
	int n = snprintf(buf, size, "%s\n", budget_header);
	for (size_t i = 0;; i++) {
		if (n < 0 || (size_t)n >= size - at)
			return -ENOSPC;
		at += (size_t)n;
		if (i == b->n)
			return (int)at;
		n = snprintf(buf + at, size - at, "sent %" PRId64 "\n", b->sent[i]);
	}
}

void up_budget_prune(struct up_budget *b, int64_t now, int64_t period_s)
{
	size_t drop = 0;
	while (drop < b->n && b->sent[drop] <= now - period_s)
		drop++;
	memmove(b->sent, b->sent + drop, (b->n - drop) * sizeof(b->sent[0]));
	b->n -= drop;
}

unsigned up_budget_left(const struct up_budget *b, int64_t now, int64_t period_s,
			unsigned count, int64_t *reopens)
{
	/* An upload "in the future" (the clock went back) still counts: the budget must hold
	 * even when the clock is wrong. */
	size_t first = 0, used;
	while (first < b->n && b->sent[first] <= now - period_s)
		first++;
	used = b->n - first;
	*reopens = 0;
	if (used < count)
		return count - (unsigned)used;
	/* Full: it reopens when the oldest of the last `count` uploads leaves the period. */
	if (count > 0)
		*reopens = b->sent[b->n - count] + period_s;
	else
		*reopens = INT64_MAX;
	return 0;
}

void up_budget_add(struct up_budget *b, int64_t now)
{
	if (b->n == UP_BUDGET_MAX) {
		memmove(b->sent, b->sent + 1, (b->n - 1) * sizeof(b->sent[0]));
		b->n--;
	}
	size_t i = b->n++;
	while (i > 0 && b->sent[i - 1] > now) {
		b->sent[i] = b->sent[i - 1];
		i--;
	}
	b->sent[i] = now;
}
