/* SPDX-License-Identifier: MIT */
/*
 * uploader/report.c - the report (docs/report-format.md) from a summary's JSON.
 *
 * Nothing is copied through: every member written is one this file names, built from a
 * value of the expected type (integers as integers, flags as true/false), and every string
 * is either a fixed word, a rewrite (thread-N, object-N, a reason on the allow-list), a
 * build-id checked to be hex, or a function or module name re-escaped as plain ASCII and
 * capped. A summary member this file does not know cannot reach the output, whatever it
 * holds. The report is rendered into a fixed buffer, and when it does not fit in
 * UP_REPORT_MAX the lowest-ranked parts go first and are counted (as the summary's own
 * writer does, Hubble section 7: the longest chain says most and stays longest).
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "uploader/report.h"
#include "uploader/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A summary is at most 4 KiB (docs/summary-format.md); a much bigger input is not one, and
 * bounding it bounds the work of the renderings below. */
#define REPORT_INPUT_MAX (64 * 1024)
/* At most this many entries of a list are considered (SUMMARY_MAX_K is 100), and this many
 * hops of "blocked on" (SUMMARY_MAX_HOPS); more are counted as left out. */
#define REPORT_LIST_MAX 100
#define REPORT_HOPS_MAX 16
/* A function or module name longer than this is cut, and ends with "..." to say so. */
#define REPORT_NAME_MAX 64
/* An allow-list word is at most this long; longer ones never match. */
#define REPORT_WORD_MAX 32
/* The whole trace's top list is cut to this many entries before any context goes (the
 * summary's writer keeps 3; the report's envelope takes 300 bytes more). */
#define REPORT_TOP_TRACE_KEEP 0
/* Then the chains down to the three longest, before any context (the summary's order:
 * agent/analysis/summary_out.c says why). */
#define REPORT_CHAINS_KEEP 3
#define REPORT_THREADS_MAX (1 + 2 * REPORT_HOPS_MAX)
/* A report names at most this many functions (each takes at least 8 bytes of the 4 KiB),
 * and a summary lists at most this many modules (each named by a function it lists). */
#define REPORT_FUNCS_MAX 512
#define REPORT_MODULES_MAX 1024

/* Output into a fixed buffer; past its end only the length counts on. */
struct wbuf {
	char *p;
	size_t n, cap;
};

static void put(struct wbuf *w, const char *s, size_t len)
{
	if (w->n < w->cap) {
		size_t k = w->cap - w->n < len ? w->cap - w->n : len;
		memcpy(w->p + w->n, s, k);
	}
	w->n += len;
}

static void puts_(struct wbuf *w, const char *s)
{
	put(w, s, strlen(s));
}

static void printf_(struct wbuf *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void printf_(struct wbuf *w, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(w, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* One code point from valid UTF-8 (json.h checked it); *k advanced. */
static unsigned utf8_next(const unsigned char *s, size_t len, size_t *k)
{
	unsigned c = s[*k], n = c < 0x80 ? 0 : c < 0xe0 ? 1 : c < 0xf0 ? 2 : 3;
	unsigned cp = n == 0 ? c : n == 1 ? c & 0x1f : n == 2 ? c & 0x0f : c & 0x07;
	(*k)++;
	for (unsigned i = 0; i < n && *k < len; i++, (*k)++)
		cp = cp << 6 | (s[*k] & 0x3f);
	return cp;
}

/* A JSON string of plain ASCII: printable ASCII as is (but " and \), everything else
 * \uXXXX (a surrogate pair above U+FFFF). At most `max` code points, then "...". */
static void put_string(struct wbuf *w, const char *s, size_t len, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	put(w, "\"", 1);
	size_t k = 0, count = 0;
	while (k < len) {
		if (count++ == max) {
			puts_(w, "...");
			break;
		}
		unsigned cp = utf8_next(u, len, &k);
		if (cp == '"' || cp == '\\') {
			char e[2] = { '\\', (char)cp };
			put(w, e, 2);
		} else if (cp >= 0x20 && cp < 0x7f) {
			char c = (char)cp;
			put(w, &c, 1);
		} else if (cp > 0xffff) {
			cp -= 0x10000;
			printf_(w, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
		} else {
			printf_(w, "\\u%04x", cp);
		}
	}
	put(w, "\"", 1);
}

/* How much of the summary one rendering keeps. */
struct keep {
	size_t ctx, ch, tt, tw, hops;
	bool names;
};

struct rep {
	const struct json_doc *d;
	const struct up_report_params *p;
	uint32_t funcs, mods;
	uint32_t nfuncs, nmods;
	uint32_t *fmap; /* per function of the summary: its index in the report + 1, 0 unused */
	uint32_t *forder, nused;
	uint32_t *fval;			      /* each function's value in the document */
	uint32_t mval[REPORT_MODULES_MAX];    /* each module's */
	const char *threads[REPORT_THREADS_MAX]; /* not on the allow-list, by first appearance */
	unsigned nthreads;
	const char *objects[REPORT_HOPS_MAX];
	unsigned nobjects;
	char *err;
	size_t errsize;
	int e;		 /* the first error of this rendering */
	int64_t version; /* the summary's: 2, or 3 with the scheduling figures (preempted time) */
};

/* An entry's elements past f: a top-list entry [f, self_ns, calls, blocked_ns, cut] and a
 * chain link the same with incl_ns first (a many-calls link + calls); version 3 adds
 * preempted_ns after cut (and moves calls after it). */
static unsigned top_len(const struct rep *r)
{
	return r->version >= 3 ? 6 : 5;
}

static int bad(struct rep *r, uint32_t v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(struct rep *r, uint32_t v, const char *fmt, ...)
{
	if (!r->e && r->err && r->errsize) {
		int n = snprintf(r->err, r->errsize, "offset %zu: ", json_offset(r->d, v));
		if (n >= 0 && (size_t)n < r->errsize) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(r->err + n, r->errsize - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	if (!r->e)
		r->e = -EINVAL;
	return -EINVAL;
}

static bool is_int(const struct rep *r, uint32_t v, int64_t lo, int64_t hi, int64_t *out)
{
	int64_t x;
	if (json_int(r->d, v, &x) != 0 || x < lo || x > hi)
		return false;
	if (out)
		*out = x;
	return true;
}

/* Does word[0..len) appear in the space-separated list? */
static bool on_list(const char *list, const char *word, size_t len)
{
	if (!list || len == 0 || len > REPORT_WORD_MAX)
		return false;
	for (const char *s = list; *s;) {
		while (*s == ' ')
			s++;
		size_t n = strcspn(s, " ");
		if (n == len && memcmp(s, word, len) == 0)
			return true;
		s += n;
	}
	return false;
}

/* A thread's name: itself when on the allow-list, else thread-N, N by first appearance. */
static void put_thread(struct wbuf *w, struct rep *r, uint32_t v)
{
	size_t len;
	const char *s = json_str(r->d, v, &len);
	if (!s) {
		bad(r, v, "a thread name should be a string");
		return;
	}
	if (strlen(s) == len && on_list(r->p->thread_names, s, len)) {
		put_string(w, s, len, REPORT_WORD_MAX);
		return;
	}
	unsigned i = 0;
	while (i < r->nthreads && strcmp(r->threads[i], s) != 0)
		i++;
	if (i == r->nthreads && r->nthreads < REPORT_THREADS_MAX)
		r->threads[r->nthreads++] = s;
	printf_(w, "\"thread-%u\"", i + 1);
}

/* An object waited on: object-N, N by first appearance; never the pointer. */
static void put_object(struct wbuf *w, struct rep *r, uint32_t v)
{
	const char *s = json_str(r->d, v, NULL);
	if (!s) {
		bad(r, v, "an object should be a string");
		return;
	}
	unsigned i = 0;
	while (i < r->nobjects && strcmp(r->objects[i], s) != 0)
		i++;
	if (i == r->nobjects && r->nobjects < REPORT_HOPS_MAX)
		r->objects[r->nobjects++] = s;
	printf_(w, "\"object-%u\"", i + 1);
}

/* A function index of the summary, renumbered in the order the report uses them. */
static void put_func(struct wbuf *w, struct rep *r, uint32_t v)
{
	int64_t f;
	if (!is_int(r, v, 0, (int64_t)r->nfuncs - 1, &f)) {
		bad(r, v, "a function index out of range");
		return;
	}
	if (!r->fmap[f]) {
		r->forder[r->nused++] = (uint32_t)f;
		r->fmap[f] = r->nused;
	}
	printf_(w, "%u", r->fmap[f] - 1);
}

/* [f, n, n, ...]: a function and integers (durations, counts, flags), `min` to `max`
 * elements in all. Version 3's own elements (preempted_ns, index 5, and a many-calls link's
 * calls, index 6) are written by a writer of unsigned figures: negative ones are refused. */
static void put_entry(struct wbuf *w, struct rep *r, uint32_t v, unsigned min, unsigned max)
{
	uint32_t n = json_len(r->d, v);
	if (json_type(r->d, v) != JSON_ARRAY || n < min || n > max) {
		bad(r, v, "an entry should be an array of %u to %u numbers", min, max);
		return;
	}
	put(w, "[", 1);
	uint32_t x = json_first(r->d, v);
	put_func(w, r, x);
	unsigned at = 1;
	for (x = json_next(r->d, x); x != JSON_NONE; x = json_next(r->d, x), at++) {
		int64_t i = 0;
		if (r->version >= 3 && at >= 5) {
			if (!is_int(r, x, 0, INT64_MAX, &i)) {
				bad(r, x, "an entry's %s should be a non-negative integer",
				    at == 5 ? "preempted_ns" : "calls");
				return;
			}
		} else if (!is_int(r, x, INT64_MIN, INT64_MAX, &i)) {
			bad(r, x, "an entry's value should be an integer");
			return;
		}
		printf_(w, ",%lld", (long long)i);
	}
	put(w, "]", 1);
}

/* A list of entries, the first `keep`. */
static void put_entries(struct wbuf *w, struct rep *r, uint32_t v, size_t keep, unsigned min,
			unsigned max)
{
	if (json_type(r->d, v) != JSON_ARRAY) {
		bad(r, v, "a list of entries should be an array");
		return;
	}
	put(w, "[", 1);
	size_t i = 0;
	for (uint32_t x = json_first(r->d, v); x != JSON_NONE && i < keep;
	     x = json_next(r->d, x), i++) {
		if (i)
			put(w, ",", 1);
		put_entry(w, r, x, min, max);
	}
	put(w, "]", 1);
}

/* An array of integers, copied. */
static void put_ints(struct wbuf *w, struct rep *r, uint32_t v, int64_t lo)
{
	if (json_type(r->d, v) != JSON_ARRAY) {
		bad(r, v, "should be an array of integers");
		return;
	}
	put(w, "[", 1);
	for (uint32_t x = json_first(r->d, v); x != JSON_NONE; x = json_next(r->d, x)) {
		int64_t i = 0;
		if (!is_int(r, x, lo, INT64_MAX, &i)) {
			bad(r, x, "should be an integer");
			return;
		}
		printf_(w, "%s%lld", x == json_first(r->d, v) ? "" : ",", (long long)i);
	}
	put(w, "]", 1);
}

/* The members of object v named in `names`, each an integer, in that order; one missing
 * is an error. A name after '?' is a flag (true or false), after '+' a non-negative
 * integer. */
static void put_int_members(struct wbuf *w, struct rep *r, uint32_t v, const char *const *names,
			    const char *lead)
{
	if (json_type(r->d, v) != JSON_OBJECT) {
		bad(r, v, "should be an object");
		return;
	}
	put(w, "{", 1);
	puts_(w, lead);
	for (unsigned i = 0; names[i]; i++) {
		uint32_t x = json_get(r->d, v, names[i]);
		int64_t n = 0;
		if (names[i][0] == '?') { /* a flag */
			int t = json_type(r->d, x = json_get(r->d, v, names[i] + 1));
			if (t != JSON_TRUE && t != JSON_FALSE) {
				bad(r, v, "\"%s\" should be true or false", names[i] + 1);
				return;
			}
			printf_(w, "%s\"%s\":%s", i || *lead ? "," : "", names[i] + 1,
				t == JSON_TRUE ? "true" : "false");
			continue;
		}
		if (names[i][0] == '~') { /* an optional count: copied when present */
			x = json_get(r->d, v, names[i] + 1);
			if (x == JSON_NONE)
				continue;
			if (!is_int(r, x, 0, INT64_MAX, &n)) {
				bad(r, v, "\"%s\" should be a non-negative integer", names[i] + 1);
				return;
			}
			printf_(w, "%s\"%s\":%lld", i || *lead ? "," : "", names[i] + 1,
				(long long)n);
			continue;
		}
		if (names[i][0] == '+') {
			if (!is_int(r, x = json_get(r->d, v, names[i] + 1), 0, INT64_MAX, &n)) {
				bad(r, v, "\"%s\" should be a non-negative integer", names[i] + 1);
				return;
			}
			printf_(w, "%s\"%s\":%lld", i || *lead ? "," : "", names[i] + 1,
				(long long)n);
			continue;
		}
		if (!is_int(r, x, INT64_MIN, INT64_MAX, &n)) {
			bad(r, v, "\"%s\" should be an integer", names[i]);
			return;
		}
		printf_(w, "%s\"%s\":%lld", i || *lead ? "," : "", names[i], (long long)n);
	}
	put(w, "}", 1);
}

/*
 * Version 3's window.sched: how the thread's scheduling was seen, to tell time preempted by
 * other processes from time working. The source is one of three fixed words, written as
 * this file's own; migrations a count; cpu_ns the running time per CPU class, only the
 * classes little, middle and big, each at most once, written in that order. None of it says
 * who or which device: a count of CPU moves and a split over core sizes every phone of a
 * kind shares. Other members are never written.
 */
static void put_sched(struct wbuf *w, struct rep *r, uint32_t v)
{
	static const char *const sources[] = { "perf", "schedstat", "none" };
	static const char *const classes[] = { "little", "middle", "big" };
	if (json_type(r->d, v) != JSON_OBJECT) {
		bad(r, v, "the window's \"sched\" should be an object");
		return;
	}
	uint32_t x = json_get(r->d, v, "source");
	size_t len = 0;
	const char *s = json_str(r->d, x, &len);
	unsigned k = 0;
	while (s && k < 3 && !(strlen(sources[k]) == len && !strcmp(s, sources[k])))
		k++;
	if (!s || k == 3) {
		bad(r, x == JSON_NONE ? v : x,
		    "the scheduling source should be \"perf\", \"schedstat\" or \"none\"");
		return;
	}
	printf_(w, ",\"sched\":{\"source\":\"%s\"", sources[k]);
	int64_t n = 0;
	if ((x = json_get(r->d, v, "migrations")) != JSON_NONE) {
		if (!is_int(r, x, 0, INT64_MAX, &n)) {
			bad(r, x, "\"migrations\" should be a non-negative integer");
			return;
		}
		printf_(w, ",\"migrations\":%lld", (long long)n);
	}
	if ((x = json_get(r->d, v, "cpu_ns")) != JSON_NONE) {
		if (json_type(r->d, x) != JSON_OBJECT) {
			bad(r, x, "\"cpu_ns\" should be an object");
			return;
		}
		unsigned seen = 0;
		for (uint32_t m = json_first(r->d, x); m != JSON_NONE; m = json_next(r->d, m)) {
			const char *name = r->d->strings + r->d->v[m].key;
			unsigned c = 0;
			while (c < 3 && strcmp(name, classes[c]))
				c++;
			if (c == 3 || (seen & 1u << c)) {
				bad(r, m, "\"cpu_ns\" should name only little, middle and big, each once");
				return;
			}
			seen |= 1u << c;
			if (!is_int(r, m, 0, INT64_MAX, NULL)) {
				bad(r, m, "cpu_ns.%s should be a non-negative integer", classes[c]);
				return;
			}
		}
		puts_(w, ",\"cpu_ns\":{");
		for (unsigned c = 0, o = 0; c < 3; c++) {
			if (!(seen & 1u << c))
				continue;
			is_int(r, json_get(r->d, x, classes[c]), 0, INT64_MAX, &n);
			printf_(w, "%s\"%s\":%lld", o++ ? "," : "", classes[c], (long long)n);
		}
		put(w, "}", 1);
	}
	put(w, "}", 1);
}

/* A member's integer value when it is there, else 0 (the "left out" counters). */
static int64_t count_of(struct rep *r, uint32_t obj, const char *name)
{
	uint32_t v = json_get(r->d, obj, name);
	int64_t n = 0;
	if (v != JSON_NONE && !is_int(r, v, 0, INT32_MAX, &n))
		bad(r, v, "\"%s\" should be a count", name);
	return n;
}

static void put_count(struct wbuf *w, const char *name, int64_t n)
{
	if (n > 0)
		printf_(w, ",\"%s\":%lld", name, (long long)n);
}

static bool is_hex(const char *s, size_t len, size_t max)
{
	if (len > max || strlen(s) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return true;
}

/* A build-id as hex, lowercase. */
static void put_build_id(struct wbuf *w, struct rep *r, uint32_t v)
{
	size_t len;
	const char *s = json_str(r->d, v, &len);
	if (!s || !is_hex(s, len, 128)) {
		bad(r, v, "a build-id should be hex");
		return;
	}
	put(w, "\"", 1);
	for (size_t i = 0; i < len; i++) {
		char c = s[i] >= 'A' && s[i] <= 'F' ? (char)(s[i] - 'A' + 'a') : s[i];
		put(w, &c, 1);
	}
	put(w, "\"", 1);
}

/* A file's name without its folders: "/home/alice/app/libfoo.so" is "libfoo.so". */
static void put_basename(struct wbuf *w, struct rep *r, uint32_t v)
{
	size_t len;
	const char *s = json_str(r->d, v, &len);
	if (!s) {
		bad(r, v, "a file name should be a string");
		return;
	}
	const char *b = s;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '/' || s[i] == '\\')
			b = s + i + 1;
	put_string(w, b, len - (size_t)(b - s), REPORT_NAME_MAX);
}

/* The chain's frames: [f, incl, self, blocked, cut(, preempted in version 3)(, calls)]. */
static void put_chain(struct wbuf *w, struct rep *r, uint32_t v)
{
	put_entries(w, r, v, SIZE_MAX, top_len(r), top_len(r) + 1);
}

static void put_contexts(struct wbuf *w, struct rep *r, uint32_t v, size_t keep)
{
	static const char *const arrays[] = { "path", "self_ns", "base_ns" };
	if (json_type(r->d, v) != JSON_ARRAY) {
		bad(r, v, "\"contexts\" should be an array");
		return;
	}
	put(w, "[", 1);
	size_t i = 0;
	for (uint32_t c = json_first(r->d, v); c != JSON_NONE && i < keep;
	     c = json_next(r->d, c), i++) {
		uint32_t x;
		int64_t n = 0;
		if (json_type(r->d, c) != JSON_OBJECT) {
			bad(r, c, "a context should be an object");
			return;
		}
		if (!is_int(r, x = json_get(r->d, c, "cost_ns"), INT64_MIN, INT64_MAX, &n)) {
			bad(r, c, "a context's cost_ns should be an integer");
			return;
		}
		printf_(w, "%s{\"cost_ns\":%lld", i ? "," : "", (long long)n);
		/* The earlier context it starts like: contexts go from the end only, so j
		 * stays in the report. */
		if ((x = json_get(r->d, c, "from")) != JSON_NONE) {
			int64_t j, k;
			uint32_t y = json_first(r->d, x);
			if (json_type(r->d, x) != JSON_ARRAY || json_len(r->d, x) != 2 ||
			    !is_int(r, y, 0, (int64_t)i - 1, &j) ||
			    !is_int(r, json_next(r->d, y), 0, 1024, &k)) {
				bad(r, x, "\"from\" should be [an earlier context, frames]");
				return;
			}
			printf_(w, ",\"from\":[%lld,%lld]", (long long)j, (long long)k);
		}
		uint32_t path = json_get(r->d, c, "path");
		for (unsigned a = 0; a < 3; a++) {
			x = json_get(r->d, c, arrays[a]);
			if (json_len(r->d, x) != json_len(r->d, path) ||
			    json_type(r->d, x) != JSON_ARRAY) {
				bad(r, c, "a context's %s should be an array as long as its path",
				    arrays[a]);
				return;
			}
			printf_(w, ",\"%s\":", arrays[a]);
			if (a == 0) {
				put(w, "[", 1);
				for (uint32_t f = json_first(r->d, x); f != JSON_NONE;
				     f = json_next(r->d, f)) {
					if (f != json_first(r->d, x))
						put(w, ",", 1);
					put_func(w, r, f);
				}
				put(w, "]", 1);
			} else {
				put_ints(w, r, x, 0);
			}
		}
		if ((x = json_get(r->d, c, "elided")) != JSON_NONE) {
			int64_t at;
			if (!is_int(r, x, 1, INT64_MAX, &n) ||
			    !is_int(r, json_get(r->d, c, "elided_at"), 0, INT32_MAX, &at)) {
				bad(r, x, "\"elided\" and \"elided_at\" should be counts");
				return;
			}
			printf_(w, ",\"elided\":%lld,\"elided_at\":%lld", (long long)n, (long long)at);
		}
		put(w, "}", 1);
	}
	put(w, "]", 1);
}

static void put_hops(struct wbuf *w, struct rep *r, uint32_t v, const struct keep *k)
{
	if (json_type(r->d, v) != JSON_ARRAY) {
		bad(r, v, "\"blocked_on\" should be an array");
		return;
	}
	put(w, "[", 1);
	size_t i = 0;
	for (uint32_t h = json_first(r->d, v); h != JSON_NONE && i < k->hops;
	     h = json_next(r->d, h), i++) {
		uint32_t x;
		int64_t n = 0;
		if (json_type(r->d, h) != JSON_OBJECT) {
			bad(r, h, "a hop should be an object");
			return;
		}
		puts_(w, i ? ",{\"thread\":" : "{\"thread\":");
		put_thread(w, r, json_get(r->d, h, "thread"));
		if (!is_int(r, json_get(r->d, h, "blocked_ns"), 0, INT64_MAX, &n))
			bad(r, h, "\"blocked_ns\" should be an integer");
		printf_(w, ",\"blocked_ns\":%lld,\"object\":", (long long)n);
		put_object(w, r, json_get(r->d, h, "object"));
		puts_(w, ",\"waiter\":");
		put_func(w, r, json_get(r->d, h, "waiter"));
		if (!is_int(r, json_get(r->d, h, "wait_ns"), 0, INT64_MAX, &n))
			bad(r, h, "\"wait_ns\" should be an integer");
		int t = json_type(r->d, json_get(r->d, h, "still_waiting"));
		if (t != JSON_TRUE && t != JSON_FALSE)
			bad(r, h, "\"still_waiting\" should be true or false");
		printf_(w, ",\"wait_ns\":%lld,\"still_waiting\":%s,\"woken_by\":", (long long)n,
			t == JSON_TRUE ? "true" : "false");
		x = json_get(r->d, h, "woken_by");
		if (json_type(r->d, x) == JSON_NULL)
			puts_(w, "null");
		else
			put_thread(w, r, x);
		puts_(w, ",\"top\":");
		put_entries(w, r, json_get(r->d, h, "top"), REPORT_LIST_MAX, top_len(r), top_len(r));
		puts_(w, ",\"chain\":");
		put_chain(w, r, json_get(r->d, h, "chain"));
		if ((x = json_get(r->d, h, "chain_elided")) != JSON_NONE) {
			puts_(w, ",\"chain_elided\":");
			put_ints(w, r, x, 0);
		}
		put(w, "}", 1);
	}
	put(w, "]", 1);
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* One rendering of the report with what `k` keeps, into w. */
static void render(struct wbuf *w, struct rep *r, const struct keep *k, const char *hour,
		   const char *reason, const char *detector, uint32_t app)
{
	/* untimed: how many records' times are estimates (sampled time, docs/untimed.md). */
	static const char *const trace_members[] = { "threads", "records", "contexts", "ns",
						     "~untimed", NULL };
	static const char *const window_members[] = { "ns", "blocked_ns", "?anomaly_marked", NULL };
	static const char *const window_v3[] = { "ns", "+running_ns", "+preempted_ns", "+blocked_ns",
						 "?anomaly_marked", NULL };
	static const char *const frames_members[] = { "count",	 "median_ns", "p99_ns",
						       "budget_ns", "over_budget", "mean_ns",
						       "sigma_ns",  "this_ns",	   "?outlier",
						       NULL };
	const struct json_doc *d = r->d;
	uint32_t x;
	r->e = 0;
	r->nused = r->nthreads = r->nobjects = 0;
	memset(r->fmap, 0, (r->nfuncs ? r->nfuncs : 1) * sizeof(*r->fmap));

	/* The window's thread first: it is thread-1 when not on the allow-list. */
	char threadbuf[256]; /* a word of the allow-list: at most 32 code points, 6 bytes each */
	struct wbuf tb = { threadbuf, 0, sizeof(threadbuf) };
	put_thread(&tb, r, json_get(d, 0, "thread"));
	/* The body next: it decides which functions (and so which modules) are named. */
	char bodybuf[2 * UP_REPORT_MAX];
	struct wbuf b = { bodybuf, 0, sizeof(bodybuf) };
	puts_(&b, ",\"trace\":");
	put_int_members(&b, r, json_get(d, 0, "trace"), trace_members, "");
	x = json_get(d, 0, "window");
	size_t klen;
	const char *kind = json_str(d, json_get(d, x, "kind"), &klen);
	if (!kind || (strcmp(kind, "frame") && strcmp(kind, "span")))
		bad(r, x, "the window's kind should be \"frame\" or \"span\"");
	puts_(&b, ",\"window\":");
	put_int_members(&b, r, x, r->version >= 3 ? window_v3 : window_members,
			kind && !strcmp(kind, "span") ? "\"kind\":\"span\"" : "\"kind\":\"frame\"");
	if (r->version >= 3 && json_type(d, x) == JSON_OBJECT && !r->e) {
		b.n--; /* the window's closing brace: sched goes inside */
		put_sched(&b, r, json_get(d, x, "sched"));
		put(&b, "}", 1);
	}
	puts_(&b, ",\"frames\":");
	put_int_members(&b, r, json_get(d, 0, "frames"), frames_members, "");
	puts_(&b, ",\"top_window\":");
	put_entries(&b, r, json_get(d, 0, "top_window"), k->tw, top_len(r), top_len(r));
	puts_(&b, ",\"top_trace\":");
	put_entries(&b, r, json_get(d, 0, "top_trace"), k->tt, top_len(r), top_len(r));
	puts_(&b, ",\"chains\":[");
	x = json_get(d, 0, "chains");
	if (json_type(d, x) != JSON_ARRAY)
		bad(r, x, "\"chains\" should be an array");
	size_t i = 0;
	for (uint32_t c = json_first(d, x); c != JSON_NONE && i < k->ch; c = json_next(d, c), i++) {
		if (i)
			put(&b, ",", 1);
		put_chain(&b, r, c);
	}
	puts_(&b, "],\"contexts\":");
	put_contexts(&b, r, json_get(d, 0, "contexts"), k->ctx);
	puts_(&b, ",\"blocked_on\":");
	put_hops(&b, r, json_get(d, 0, "blocked_on"), k);
	/* Where the kept chains were elided: [chain, position, count], chain < k->ch. */
	x = json_get(d, 0, "chains_elided");
	if (x != JSON_NONE) {
		if (json_type(d, x) != JSON_ARRAY)
			bad(r, x, "\"chains_elided\" should be an array");
		size_t n = 0;
		for (uint32_t e = json_first(d, x); e != JSON_NONE; e = json_next(d, e)) {
			uint32_t y = json_first(d, e);
			int64_t c, at, cnt;
			if (json_type(d, e) != JSON_ARRAY || json_len(d, e) != 3 ||
			    !is_int(r, y, 0, INT32_MAX, &c) ||
			    !is_int(r, y = json_next(d, y), 0, INT32_MAX, &at) ||
			    !is_int(r, json_next(d, y), 1, INT64_MAX, &cnt)) {
				bad(r, e, "\"chains_elided\" entries should be [chain, at, count]");
				break;
			}
			if ((size_t)c >= k->ch)
				continue;
			printf_(&b, "%s[%lld,%lld,%lld]", n++ ? "," : ",\"chains_elided\":[",
				(long long)c, (long long)at, (long long)cnt);
		}
		if (n)
			put(&b, "]", 1);
	}
	/* What the summary left out, and what the report left out besides. */
	size_t nctx = json_len(d, json_get(d, 0, "contexts")),
	       nch = json_len(d, json_get(d, 0, "chains")),
	       ntt = json_len(d, json_get(d, 0, "top_trace")),
	       ntw = json_len(d, json_get(d, 0, "top_window")),
	       nhops = json_len(d, json_get(d, 0, "blocked_on"));
	put_count(&b, "top_window_left_out", (int64_t)(ntw - min_size(ntw, k->tw)));
	put_count(&b, "top_trace_left_out",
		  count_of(r, 0, "top_trace_left_out") + (int64_t)(ntt - min_size(ntt, k->tt)));
	put_count(&b, "contexts_left_out",
		  count_of(r, 0, "contexts_left_out") + (int64_t)(nctx - min_size(nctx, k->ctx)));
	put_count(&b, "chains_left_out",
		  count_of(r, 0, "chains_left_out") + (int64_t)(nch - min_size(nch, k->ch)));
	put_count(&b, "blocked_on_left_out",
		  count_of(r, 0, "blocked_on_left_out") +
			  (int64_t)(nhops - min_size(nhops, k->hops)));
	x = json_get(d, 0, "shortened");
	if (json_type(d, x) == JSON_TRUE || !k->names)
		puts_(&b, ",\"shortened\":true");
	puts_(&b, "}}");

	/* The envelope, then the modules and functions the body named. */
	/* Version 2 of the report carries version 3's scheduling figures; a version 2
	 * summary still gives the version 1 report, byte for byte as before. */
	printf_(w, "{\"schema\":\"jitt.report\",\"version\":%d,\"key\":\"%s\",\"id\":\"%s\","
		   "\"period\":%lld,\"hour\":\"%s\",\"app\":{\"build_id\":",
		r->version >= 3 ? 2 : 1, r->p->key, r->p->id, (long long)r->p->period, hour);
	put_build_id(w, r, json_get(d, app, "build_id"));
	puts_(w, ",\"name\":");
	put_basename(w, r, json_get(d, app, "name"));
	printf_(w, "},\"detector\":%s%s%s,\"reason\":\"%s\",\"summary\":{\"thread\":",
		detector ? "\"" : "", detector ? detector : "null", detector ? "\"" : "", reason);
	put(w, tb.p, min_size(tb.n, tb.cap));
	/* Modules: only those the named functions are in, renumbered in order of use. */
	int32_t mmap[REPORT_MODULES_MAX];
	uint32_t mused[REPORT_MODULES_MAX], nm = 0;
	int64_t fmod[REPORT_FUNCS_MAX], foff[REPORT_FUNCS_MAX];
	uint32_t fname[REPORT_FUNCS_MAX];
	if (r->nused > REPORT_FUNCS_MAX) {
		w->n = w->cap + 1; /* cannot fit: left out until it does */
		return;
	}
	for (uint32_t m = 0; m < r->nmods; m++)
		mmap[m] = -1;
	for (uint32_t f = 0; f < r->nused; f++) {
		uint32_t e = r->fval[r->forder[f]], y;
		y = json_first(d, e);
		if (json_type(d, e) != JSON_ARRAY || json_len(d, e) != 3 ||
		    !is_int(r, y, -1, (int64_t)r->nmods - 1, &fmod[f]) ||
		    !is_int(r, json_next(d, y), 0, INT64_MAX, &foff[f]) ||
		    json_type(d, fname[f] = json_next(d, json_next(d, y))) != JSON_STRING) {
			bad(r, e, "a function should be [module, offset, \"name\"]");
			return;
		}
		if (fmod[f] >= 0 && mmap[fmod[f]] < 0) {
			mmap[fmod[f]] = (int32_t)nm;
			mused[nm++] = (uint32_t)fmod[f];
		}
	}
	puts_(w, ",\"modules\":[");
	for (uint32_t m = 0; m < nm; m++) {
		uint32_t e = r->mval[mused[m]];
		if (json_type(d, e) != JSON_ARRAY || json_len(d, e) != 2) {
			bad(r, e, "a module should be [\"build-id\", \"file\"]");
			return;
		}
		puts_(w, m ? ",[" : "[");
		put_build_id(w, r, json_first(d, e));
		put(w, ",", 1);
		put_basename(w, r, json_next(d, json_first(d, e)));
		put(w, "]", 1);
	}
	puts_(w, "],\"functions\":[");
	for (uint32_t f = 0; f < r->nused; f++) {
		size_t len = 0;
		const char *name = json_str(d, fname[f], &len);
		/* Module -1 at an offset is a function outside every module the trace named:
		 * its offset is where it sat in the process's memory, and its name ("?0x...")
		 * says the same. Both tell the device's address-space layout (ASLR), and no
		 * server can name either: 0 and no name. The tree's two pseudo-functions
		 * (module -1, offset 0) keep their names. A module's function is always its
		 * build-id's index and an offset inside that file, never an address. */
		bool unplaced = fmod[f] < 0 && foff[f] != 0;
		printf_(w, "%s[%d,%lld,", f ? "," : "", fmod[f] >= 0 ? mmap[fmod[f]] : -1,
			unplaced ? 0ll : (long long)foff[f]);
		put_string(w, name, k->names && !unplaced ? len : 0, REPORT_NAME_MAX);
		put(w, "]", 1);
	}
	put(w, "]", 1);
	put(w, b.p, min_size(b.n, b.cap));
	if (b.n > b.cap)
		w->n += b.n - b.cap; /* too big: this rendering is thrown away */
}

static bool is_uuid(const char *s)
{
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	}
	return s[36] == '\0';
}

static bool is_id(const char *s)
{
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[64] == '\0';
}

static int say(char *err, size_t errsize, const char *msg)
{
	if (err && errsize)
		snprintf(err, errsize, "%s", msg);
	return -EINVAL;
}

/* The summary's root checks, shared by up_report_build and up_report_app: a jitt.summary
 * of version 2 or 3 with an app (*version says which). Version 1 is refused: it does not
 * name the app, and a report without it could not carry the per-app pseudonym (AppInsight
 * section 6). */
static int check_summary(struct json_doc *d, const char *summary, size_t len, uint32_t *app,
			 int64_t *version, char *err, size_t errsize)
{
	memset(d, 0, sizeof(*d));
	if (!summary || len > REPORT_INPUT_MAX)
		return say(err, errsize, "not a jitt summary (larger than 64 KiB)");
	int e = json_parse(d, summary, len, err, errsize);
	if (e)
		return e;
	size_t n;
	const char *schema = json_str(d, json_get(d, 0, "schema"), &n);
	if (json_type(d, 0) != JSON_OBJECT || !schema || strcmp(schema, "jitt.summary") != 0)
		return say(err, errsize, "not a jitt summary (schema is not \"jitt.summary\")");
	if (json_int(d, json_get(d, 0, "version"), version) != 0 || *version < 2 || *version > 3)
		return say(err, errsize,
			   "summary version is not 2 or 3 (version 1 names no app; a later one is "
			   "not known here)");
	*app = json_get(d, 0, "app");
	if (json_type(d, *app) != JSON_OBJECT ||
	    json_type(d, json_get(d, *app, "build_id")) != JSON_STRING ||
	    json_type(d, json_get(d, *app, "name")) != JSON_STRING)
		return say(err, errsize, "the summary names no app (no \"app\" with a build-id)");
	const char *id = json_str(d, json_get(d, *app, "build_id"), &n);
	if (n == 0 || !is_hex(id, n, 128))
		return say(err, errsize, "the app's build-id is not hex");
	return 0;
}

int up_report_build(const char *summary, size_t len, const struct up_report_params *p,
		    char *out, size_t outsize, size_t *outlen, char *err, size_t errsize)
{
	if (outlen)
		*outlen = 0;
	if (!p || !out || !outlen || !p->key || !p->id || !is_uuid(p->key) || !is_id(p->id))
		return say(err, errsize, "the key must be a UUID and the id 64 lowercase hex digits");
	struct tm tm;
	time_t now = (time_t)p->unix_s;
	char hour[32];
	if (p->unix_s < 0 || (int64_t)now != p->unix_s || !gmtime_r(&now, &tm) ||
	    tm.tm_year + 1900 > 9999)
		return say(err, errsize, "the time is out of range");
	snprintf(hour, sizeof(hour), "%04d-%02d-%02dT%02d", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour);
	if (p->period < 0)
		return say(err, errsize, "the period is negative");

	struct json_doc d;
	uint32_t app;
	int64_t version;
	int e = check_summary(&d, summary, len, &app, &version, err, errsize);
	if (e) {
		json_free(&d);
		return e;
	}
	struct rep r = { .d = &d, .p = p, .err = err, .errsize = errsize, .version = version };
	r.funcs = json_get(&d, 0, "functions");
	r.mods = json_get(&d, 0, "modules");
	r.nfuncs = json_len(&d, r.funcs);
	r.nmods = json_len(&d, r.mods);
	if (json_type(&d, r.funcs) != JSON_ARRAY || json_type(&d, r.mods) != JSON_ARRAY ||
	    r.nmods > REPORT_MODULES_MAX) {
		json_free(&d);
		return say(err, errsize, "the summary's modules or functions are not lists");
	}
	r.fmap = calloc(r.nfuncs ? r.nfuncs : 1, sizeof(*r.fmap));
	r.forder = calloc(r.nfuncs ? r.nfuncs : 1, sizeof(*r.forder));
	r.fval = calloc(r.nfuncs ? r.nfuncs : 1, sizeof(*r.fval));
	if (!r.fmap || !r.forder || !r.fval) {
		free(r.fmap);
		free(r.forder);
		free(r.fval);
		json_free(&d);
		return -ENOMEM;
	}
	uint32_t q = 0;
	for (uint32_t v = json_first(&d, r.funcs); v != JSON_NONE; v = json_next(&d, v))
		r.fval[q++] = v;
	q = 0;
	for (uint32_t v = json_first(&d, r.mods); v != JSON_NONE; v = json_next(&d, v))
		r.mval[q++] = v;

	/* The reason: its name (the words before a ':', as the detectors write "jank: 3
	 * frames over ...") when it is on the allow-list, else "explicit": the rest is the
	 * app's free text. The detector: one of the fixed names, else "unknown". */
	size_t rlen = 0;
	const char *rs = json_str(&d, json_get(&d, 0, "reason"), &rlen);
	const char *reason = "explicit";
	char word[REPORT_WORD_MAX + 1];
	if (rs) {
		size_t n = strcspn(rs, ":");
		if (n <= REPORT_WORD_MAX && on_list(p->reasons, rs, n)) {
			memcpy(word, rs, n);
			word[n] = '\0';
			reason = word;
		}
	}
	static const char *const detectors[] = { "hang", "jank", "explicit", "external", "unknown" };
	const char *detector = "unknown";
	uint32_t dv = json_get(&d, 0, "detector");
	if (json_type(&d, dv) == JSON_NULL) {
		detector = NULL;
	} else {
		const char *ds = json_str(&d, dv, NULL);
		for (unsigned i = 0; ds && i < sizeof(detectors) / sizeof(*detectors); i++)
			if (!strcmp(ds, detectors[i]))
				detector = detectors[i];
	}

	/* Render with everything, then leave out, lowest-ranked first, until it fits: the
	 * whole trace's top list from its last entry (it says least about the anomaly, and
	 * on the sim app's compute jank it was what kept the 10th context out), the chains
	 * but the three longest, the contexts from the last, the chains but the longest, the whole trace's top list, the
	 * hops of "blocked on" from the last, the window's top list, the last chain, and at
	 * the end the function names. That last form holds only fixed members, the app, one
	 * word per string and no list: it always fits (under 1.5 KiB), so the loop ends. */
	struct keep k = { REPORT_LIST_MAX, REPORT_LIST_MAX, REPORT_LIST_MAX, REPORT_LIST_MAX,
			  REPORT_HOPS_MAX, true };
	size_t cap = min_size(outsize, UP_REPORT_MAX);
	size_t nctx = json_len(&d, json_get(&d, 0, "contexts")),
	       nch = json_len(&d, json_get(&d, 0, "chains")),
	       ntt = json_len(&d, json_get(&d, 0, "top_trace")),
	       ntw = json_len(&d, json_get(&d, 0, "top_window")),
	       nhops = json_len(&d, json_get(&d, 0, "blocked_on"));
	k.ctx = min_size(k.ctx, nctx);
	k.ch = min_size(k.ch, nch);
	k.tt = min_size(k.tt, ntt);
	k.tw = min_size(k.tw, ntw);
	k.hops = min_size(k.hops, nhops);
	for (;;) {
		struct wbuf w = { out, 0, cap };
		render(&w, &r, &k, hour, reason, detector, app);
		if (r.e) {
			e = r.e;
			break;
		}
		if (w.n <= cap) {
			*outlen = w.n;
			e = 0;
			break;
		}
		if (k.tt > REPORT_TOP_TRACE_KEEP)
			k.tt--;
		else if (k.ch > REPORT_CHAINS_KEEP)
			k.ch--;
		else if (k.ctx)
			k.ctx--;
		else if (k.ch > 1)
			k.ch--;
		else if (k.tt)
			k.tt--;
		else if (k.hops)
			k.hops--;
		else if (k.tw)
			k.tw--;
		else if (k.ch)
			k.ch--;
		else if (k.names)
			k.names = false;
		else {
			e = say(err, errsize, "the report does not fit in the output buffer");
			break;
		}
	}
	free(r.fmap);
	free(r.forder);
	free(r.fval);
	json_free(&d);
	return e;
}

int up_report_app(const char *summary, size_t len, char *build_id, size_t bsize, char *name,
		  size_t nsize)
{
	struct json_doc d;
	uint32_t app;
	int64_t version;
	int e = check_summary(&d, summary, len, &app, &version, NULL, 0);
	if (!e) {
		size_t n = 0, m = 0;
		const char *id = json_str(&d, json_get(&d, app, "build_id"), &n);
		const char *nm = json_str(&d, json_get(&d, app, "name"), &m);
		const char *base = strrchr(nm, '/');
		base = base ? base + 1 : nm;
		if (!build_id || n >= bsize || !name || strlen(base) >= nsize ||
		    strlen(nm) != m) {
			e = -EINVAL;
		} else {
			for (size_t i = 0; i <= n; i++)
				build_id[i] = id[i] >= 'A' && id[i] <= 'F' ? (char)(id[i] - 'A' + 'a')
									     : id[i];
			memcpy(name, base, strlen(base) + 1);
		}
	}
	json_free(&d);
	return e;
}
