/* SPDX-License-Identifier: MIT */
/*
 * uploader/state.h - the uploader's two small state files, read and written as text:
 *
 *   consent   one line, "granted" or "revoked" (an OEM's settings app may write it, so it
 *             is parsed strictly: anything else is an error, and an error means revoked);
 *   budget    "jitt.budget 1", then one line "sent UNIX_SECONDS" per report uploaded within
 *             the budget period (Hubble section 9: at most three traces a week), so the
 *             count survives a reboot.
 *
 * Pure functions (no I/O): the fuzzer feeds them anything.
 */
#ifndef JITT_UPLOADER_STATE_H
#define JITT_UPLOADER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes: bigger is not one of ours (a full budget, 1000 lines of "sent " and 12 digits,
 * is under 18 KiB). */
#define UP_STATE_FILE_MAX 20480
#define UP_BUDGET_MAX	  1000 /* entries: CONFIG_UPLOADER_BUDGET_COUNT's range */

/* text[0..len): "granted" or "revoked", one trailing newline allowed. 0 with *granted, or
 * -EINVAL. */
int up_consent_parse(const char *text, size_t len, bool *granted);
/* "granted\n" or "revoked\n". */
const char *up_consent_text(bool granted);

struct up_budget {
	int64_t sent[UP_BUDGET_MAX]; /* unix seconds of the uploads kept, oldest first */
	size_t n;
};

/* 0, or -EINVAL with err naming the line. Entries are sorted; duplicates kept. */
int up_budget_parse(const char *text, size_t len, struct up_budget *b, char *err,
		    size_t errsize);
/* The file's text into buf; its length, or -ENOSPC when buf is too small. */
int up_budget_format(const struct up_budget *b, char *buf, size_t size);
/* Forget the uploads older than the period before now. */
void up_budget_prune(struct up_budget *b, int64_t now, int64_t period_s);
/* How many more uploads the budget allows now (0 when full), and when full the time the
 * oldest leaves the period (*reopens; 0 when not full). */
unsigned up_budget_left(const struct up_budget *b, int64_t now, int64_t period_s,
			unsigned count, int64_t *reopens);
/* One upload at now (the oldest is forgotten when the array is full). */
void up_budget_add(struct up_budget *b, int64_t now);

#endif
