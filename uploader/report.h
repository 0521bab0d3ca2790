/* SPDX-License-Identifier: MIT */
/*
 * uploader/report.h - the report (docs/report-format.md): built from a summary's JSON by
 * copying only the members on an allow-list, with the names that could say who or where
 * rewritten (threads not on the allow-list as thread-N, objects as object-N, modules by
 * basename). Pure: no I/O, no randomness (the caller gives the key, id and hour), so the
 * same input always gives the same bytes, and a fuzzer can check every promise.
 */
#ifndef JITT_UPLOADER_REPORT_H
#define JITT_UPLOADER_REPORT_H

#include <stddef.h>
#include <stdint.h>

#define UP_REPORT_MAX 4096 /* bytes: every report fits (AppInsight sends about 3.8 KB) */

struct up_report_params {
	const char *key;	  /* the idempotency key, a UUID */
	const char *id;		  /* the pseudonym, 64 hex (up_pseudonym) */
	int64_t period;		  /* the pseudonym's rotation period */
	int64_t unix_s;		  /* now: only its hour is written */
	const char *thread_names; /* allow-list, space-separated */
	const char *reasons;	  /* allow-list, space-separated */
};

/*
 * The report for summary[0..len) into out (at most UP_REPORT_MAX bytes, no NUL counted in
 * *outlen). 0, or -EINVAL with *err saying what in the summary is wrong (not a jitt.summary,
 * no app build-id, ...).
 */
int up_report_build(const char *summary, size_t len, const struct up_report_params *p,
		    char *out, size_t outsize, size_t *outlen, char *err, size_t errsize);

/* The app's build-id (hex, as the summary gives it) of summary[0..len), for the pseudonym
 * and the budget's campaign list. 0 or -EINVAL. */
int up_report_app(const char *summary, size_t len, char *build_id, size_t bsize, char *name,
		  size_t nsize);

#endif
