/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/coll_validate.c - the `jitt.report` schema check, on uploader/json.h's
 * strict reader.
 */
#include "uploader/collector/coll_validate.h"

#include "uploader/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int fail(char *why, size_t whysize, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whysize, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool is_hex(char c, bool upper_too)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (upper_too && c >= 'A' && c <= 'F');
}

/* Every byte a hex digit (lower-case unless upper_too); n may be 0. */
static bool all_hex(const char *s, size_t n, bool upper_too)
{
	for (size_t i = 0; i < n; i++)
		if (!is_hex(s[i], upper_too))
			return false;
	return true;
}

/* 8-4-4-4-12 hex digits (RFC 9562 §4); either case, as the RFC allows on input. */
static bool is_uuid(const char *s, size_t n)
{
	if (n != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !is_hex(s[i], true))
			return false;
	}
	return true;
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int num2(const char *s)
{
	return (s[0] - '0') * 10 + (s[1] - '0');
}

/* "YYYY-MM-DDTHH": UTC to the hour, nothing finer. */
static bool is_hour(const char *s, size_t n)
{
	if (n != 13 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || !digits(s, 4) ||
	    !digits(s + 5, 2) || !digits(s + 8, 2) || !digits(s + 11, 2))
		return false;
	int mon = num2(s + 5), day = num2(s + 8), hour = num2(s + 11);
	return mon >= 1 && mon <= 12 && day >= 1 && day <= 31 && hour <= 23;
}

/* A string member, or NULL (why says which). */
static const char *str_member(const struct json_doc *d, uint32_t obj, const char *name,
			      size_t *n)
{
	uint32_t v = json_get(d, obj, name);
	if (json_type(d, v) != JSON_STRING)
		return NULL;
	const char *s = json_str(d, v, n);
	/* An embedded NUL (\u0000) would cut the string short where it is used as C text. */
	if (s && memchr(s, 0, *n))
		return NULL;
	return s;
}

/* Each member name of obj once, and only those in allowed (NULL-terminated). */
static int check_members(const struct json_doc *d, uint32_t obj, const char *const *allowed,
			 const char *what, char *why, size_t whysize)
{
	uint32_t seen = 0;
	for (uint32_t m = json_first(d, obj); m != JSON_NONE; m = json_next(d, m)) {
		const char *name = d->strings + d->v[m].key;
		int k = 0;
		while (allowed[k] && strcmp(allowed[k], name) != 0)
			k++;
		if (!allowed[k])
			return fail(why, whysize, "%s: unknown member", what);
		if (seen & (1u << k))
			return fail(why, whysize, "%s: member \"%s\" repeated", what, allowed[k]);
		seen |= 1u << k;
	}
	for (int k = 0; allowed[k]; k++)
		if (!(seen & (1u << k)))
			return fail(why, whysize, "%s: member \"%s\" missing", what, allowed[k]);
	return 0;
}

/* The n-th element of an array (JSON_NONE past its end). */
static uint32_t nth(const struct json_doc *d, uint32_t arr, uint32_t n)
{
	uint32_t e = json_first(d, arr);
	while (e != JSON_NONE && n--)
		e = json_next(d, e);
	return e;
}

static bool is_int(const struct json_doc *d, uint32_t v, int64_t *out)
{
	return json_int(d, v, out) == 0;
}

/* summary.modules: [[hex build-id, file name], ...] */
static int check_modules(const struct json_doc *d, uint32_t mods, char *why, size_t whysize)
{
	uint32_t i = 0;
	for (uint32_t e = json_first(d, mods); e != JSON_NONE; e = json_next(d, e), i++) {
		size_t n;
		const char *s;
		if (json_type(d, e) != JSON_ARRAY || json_len(d, e) != 2)
			return fail(why, whysize, "summary.modules[%u]: not [build-id, name]", i);
		uint32_t b = json_first(d, e), f = json_next(d, b);
		if (json_type(d, b) != JSON_STRING || !(s = json_str(d, b, &n)) || !all_hex(s, n, false))
			return fail(why, whysize, "summary.modules[%u]: build-id not hex", i);
		if (json_type(d, f) != JSON_STRING)
			return fail(why, whysize, "summary.modules[%u]: name not a string", i);
	}
	return 0;
}

/* summary.functions: [[module, offset, "name"], ...], module -1 or an index in modules. */
static int check_functions(const struct json_doc *d, uint32_t fns, uint32_t nmods, char *why,
			   size_t whysize)
{
	uint32_t i = 0;
	for (uint32_t e = json_first(d, fns); e != JSON_NONE; e = json_next(d, e), i++) {
		int64_t m, off;
		if (json_type(d, e) != JSON_ARRAY || json_len(d, e) != 3 ||
		    !is_int(d, nth(d, e, 0), &m) || !is_int(d, nth(d, e, 1), &off) ||
		    json_type(d, nth(d, e, 2)) != JSON_STRING)
			return fail(why, whysize, "summary.functions[%u]: not [int, int, string]", i);
		if (m < -1 || m >= (int64_t)nmods)
			return fail(why, whysize, "summary.functions[%u]: module %lld out of range", i,
				    (long long)m);
	}
	return 0;
}

/* summary.top_window / top_trace: [[f, self_ns, ...integers], ...], f in functions; in a
 * version 2 report [f, self_ns, calls, blocked_ns, cut, preempted_ns, ...], preempted_ns not
 * negative (`collector stats` sums it). */
static int check_top(const struct json_doc *d, uint32_t top, const char *what, uint32_t nfns,
		     int64_t version, char *why, size_t whysize)
{
	uint32_t i = 0;
	for (uint32_t e = json_first(d, top); e != JSON_NONE; e = json_next(d, e), i++) {
		int64_t f, x;
		if (json_type(d, e) != JSON_ARRAY || json_len(d, e) < 2)
			return fail(why, whysize, "summary.%s[%u]: not [f, self_ns, ...]", what, i);
		if (version >= 2 && (json_len(d, e) < 6 || !is_int(d, nth(d, e, 5), &x) || x < 0))
			return fail(why, whysize,
				    "summary.%s[%u]: not [f, self_ns, calls, blocked_ns, cut, "
				    "preempted_ns] (preempted_ns a non-negative integer)",
				    what, i);
		for (uint32_t k = json_first(d, e); k != JSON_NONE; k = json_next(d, k))
			if (!is_int(d, k, &x))
				return fail(why, whysize, "summary.%s[%u]: not integers", what, i);
		is_int(d, json_first(d, e), &f);
		if (f < 0 || f >= (int64_t)nfns)
			return fail(why, whysize, "summary.%s[%u]: function %lld out of range", what,
				    i, (long long)f);
	}
	return 0;
}

/* A version 2 report's summary.window: running_ns and preempted_ns non-negative integers,
 * sched.source one of the three words (`collector stats` counts reports by it). */
static int check_window(const struct json_doc *d, uint32_t sum, char *why, size_t whysize)
{
	static const char *const sources[] = { "perf", "schedstat", "none" };
	static const char *const parts[] = { "running_ns", "preempted_ns" };
	uint32_t win = json_get(d, sum, "window");
	int64_t x;
	size_t n;
	if (json_type(d, win) != JSON_OBJECT)
		return fail(why, whysize, "summary.window: not an object");
	for (int k = 0; k < 2; k++)
		if (!is_int(d, json_get(d, win, parts[k]), &x) || x < 0)
			return fail(why, whysize, "summary.window.%s: not a non-negative integer",
				    parts[k]);
	uint32_t sch = json_get(d, win, "sched");
	if (json_type(d, sch) != JSON_OBJECT)
		return fail(why, whysize, "summary.window.sched: not an object");
	const char *s = str_member(d, sch, "source", &n);
	int k = 0;
	while (s && k < 3 && strcmp(s, sources[k]) != 0)
		k++;
	if (!s || k == 3)
		return fail(why, whysize,
			    "summary.window.sched.source: not \"perf\", \"schedstat\" or \"none\"");
	return 0;
}

static int check_summary(const struct json_doc *d, uint32_t sum, int64_t version, char *why,
			 size_t whysize)
{
	uint32_t mods = json_get(d, sum, "modules"), fns = json_get(d, sum, "functions");
	uint32_t nmods = 0, nfns = 0;
	int rc;
	if (mods != JSON_NONE) {
		if (json_type(d, mods) != JSON_ARRAY)
			return fail(why, whysize, "summary.modules: not an array");
		if ((rc = check_modules(d, mods, why, whysize)))
			return rc;
		nmods = json_len(d, mods);
	}
	if (fns != JSON_NONE) {
		if (json_type(d, fns) != JSON_ARRAY)
			return fail(why, whysize, "summary.functions: not an array");
		if ((rc = check_functions(d, fns, nmods, why, whysize)))
			return rc;
		nfns = json_len(d, fns);
	}
	static const char *const tops[] = { "top_window", "top_trace" };
	for (int t = 0; t < 2; t++) {
		uint32_t top = json_get(d, sum, tops[t]);
		if (top == JSON_NONE)
			continue;
		if (json_type(d, top) != JSON_ARRAY)
			return fail(why, whysize, "summary.%s: not an array", tops[t]);
		if ((rc = check_top(d, top, tops[t], nfns, version, why, whysize)))
			return rc;
	}
	return version >= 2 ? check_window(d, sum, why, whysize) : 0;
}

static int check_envelope(const struct json_doc *d, struct coll_report *out, char *why,
			  size_t whysize)
{
	static const char *const envelope[] = { "schema", "version", "key",    "id",
						"period", "hour",    "app",    "detector",
						"reason", "summary", NULL };
	static const char *const app_members[] = { "build_id", "name", NULL };
	static const char *const detectors[] = { "hang", "jank", "explicit", "external",
						 "unknown", NULL };
	const char *s;
	size_t n;
	int64_t i, version;
	int rc;

	if (json_type(d, 0) != JSON_OBJECT)
		return fail(why, whysize, "not a JSON object");
	if ((rc = check_members(d, 0, envelope, "envelope", why, whysize)))
		return rc;
	if (!(s = str_member(d, 0, "schema", &n)) || strcmp(s, "jitt.report") != 0)
		return fail(why, whysize, "schema is not \"jitt.report\"");
	/* 1: from a version 2 summary (still sent from the queues of devices not yet
	 * updated); 2: from a version 3 summary, with the scheduling figures. */
	if (!is_int(d, json_get(d, 0, "version"), &version) || version < 1 || version > 2)
		return fail(why, whysize, "version is not 1 or 2");
	out->version = (int)version;
	if (!(s = str_member(d, 0, "key", &n)) || !is_uuid(s, n))
		return fail(why, whysize, "key is not a UUID");
	memcpy(out->key, s, 36);
	out->key[36] = 0;
	if (!(s = str_member(d, 0, "id", &n)) || n != 64 || !all_hex(s, n, false))
		return fail(why, whysize, "id is not 64 lower-case hex digits");
	if (!is_int(d, json_get(d, 0, "period"), &i) || i < 0)
		return fail(why, whysize, "period is not a non-negative integer");
	if (!(s = str_member(d, 0, "hour", &n)) || !is_hour(s, n))
		return fail(why, whysize, "hour is not YYYY-MM-DDTHH");

	uint32_t app = json_get(d, 0, "app");
	if (json_type(d, app) != JSON_OBJECT)
		return fail(why, whysize, "app is not an object");
	if ((rc = check_members(d, app, app_members, "app", why, whysize)))
		return rc;
	if (!(s = str_member(d, app, "build_id", &n)) || n == 0 || n > COLL_BUILD_ID_MAX ||
	    !all_hex(s, n, false))
		return fail(why, whysize, "app.build_id is not lower-case hex (1 to %d digits)",
			    COLL_BUILD_ID_MAX);
	memcpy(out->build_id, s, n + 1);
	/* A file's basename: a folder could name a person (docs/report-format.md). */
	if (!(s = str_member(d, app, "name", &n)) || n == 0 || n > COLL_NAME_MAX ||
	    memchr(s, '/', n))
		return fail(why, whysize, "app.name is not a file name (1 to %d bytes, no '/')",
			    COLL_NAME_MAX);
	memcpy(out->name, s, n + 1);

	uint32_t det = json_get(d, 0, "detector");
	if (json_type(d, det) != JSON_NULL) {
		int k = 0;
		if ((s = str_member(d, 0, "detector", &n)))
			while (detectors[k] && strcmp(detectors[k], s) != 0)
				k++;
		if (!s || !detectors[k])
			return fail(why, whysize,
				    "detector is not hang, jank, explicit, external, unknown or null");
	}
	if (!(s = str_member(d, 0, "reason", &n)) || n == 0 || n > 64)
		return fail(why, whysize, "reason is not a string of 1 to 64 bytes");
	uint32_t sum = json_get(d, 0, "summary");
	if (json_type(d, sum) != JSON_OBJECT)
		return fail(why, whysize, "summary is not an object");
	return check_summary(d, sum, version, why, whysize);
}

int coll_validate(const char *body, size_t len, struct coll_report *out, char *why,
		  size_t whysize)
{
	struct json_doc doc;
	char err[160];
	memset(out, 0, sizeof(*out));
	int rc = json_parse(&doc, body, len, err, sizeof(err));
	if (rc == -ENOMEM) {
		snprintf(why, whysize, "out of memory");
	} else if (rc) {
		snprintf(why, whysize, "not JSON: %s", err);
	} else {
		rc = check_envelope(&doc, out, why, whysize);
	}
	json_free(&doc);
	return rc;
}
