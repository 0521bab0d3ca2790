/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for what `jitt diff` reads: the JSON reader (uploader/json.h) on
 * arbitrary bytes, and the summary reader and matcher (agent/analysis/diff.h). One input is
 * two summaries, A and B, split at its first NUL byte (a NUL is never in JSON text, so
 * the split cannot fall inside a valid summary); with no NUL, A and B are the same text.
 * Checked besides the sanitizers:
 *   - agent_json_fput of the input parses back as one string, equal to the input when the
 *     input is ASCII (what jitt writes, its reader reads);
 *   - every walk of a parsed document agrees with its counts (json_len, json_first/next);
 *   - diff_match puts every context of A and of B in the result exactly once, exact
 *     matches have equal paths, relaxed ones are within alpha, a text diffed against itself
 *     matches exactly everywhere, and diff_rank orders by impact;
 *   - a version 3 window read adds up (running + preempted + blocked is ns, unless ns was
 *     cut at INT64_MAX), diff_funcs lists each function of the two top lists once, and a
 *     summary against itself changes nothing there and keeps its window's state.
 */
#include "agent/analysis/diff.h"
#include "uploader/json.h"
#include "agent/escape.h"
#include "tests/fuzz_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned walk(const struct json_doc *doc, uint32_t v, unsigned depth)
{
	FUZZ_CHECK(depth <= JSON_MAX_DEPTH + 1);
	unsigned n = 1;
	int type = json_type(doc, v);
	FUZZ_CHECK(type >= JSON_NULL && type <= JSON_OBJECT);
	if (type == JSON_STRING) {
		size_t len;
		const char *s = json_str(doc, v, &len);
		FUZZ_CHECK(s && s[len] == '\0');
	} else if (type == JSON_NUMBER) {
		int64_t i;
		int e = json_int(doc, v, &i);
		FUZZ_CHECK(e == 0 || e == -EINVAL || e == -ERANGE);
	} else if (type == JSON_ARRAY || type == JSON_OBJECT) {
		uint32_t count = 0;
		for (uint32_t c = json_first(doc, v); c != JSON_NONE; c = json_next(doc, c)) {
			count++;
			n += walk(doc, c, depth + 1);
			if (type == JSON_OBJECT) {
				/* json_get finds the first member of that name: one at or
				 * before this one (none when the name holds a NUL, which a C
				 * string cannot say). */
				const char *key = doc->strings + doc->v[c].key;
				uint32_t g = json_get(doc, v, key);
				FUZZ_CHECK(g == JSON_NONE || g <= c);
			}
		}
		FUZZ_CHECK(count == json_len(doc, v));
	} else {
		FUZZ_CHECK(json_first(doc, v) == JSON_NONE && json_len(doc, v) == 0);
	}
	return n;
}

static void fuzz_json(const uint8_t *data, size_t size)
{
	struct json_doc doc;
	char err[256];
	if (json_parse(&doc, (const char *)data, size, err, sizeof(err)) == 0)
		FUZZ_CHECK(walk(&doc, 0, 0) == doc.n);
	json_free(&doc);

	/* Escaping: any bytes make one JSON string. */
	struct fuzz_sink out;
	FILE *f = fuzz_sink_open(&out, 6 * size + 16);
	if (!f)
		return;
	agent_json_fput(f, (const char *)data, size);
	FUZZ_CHECK(fclose(f) == 0 && !out.truncated);
	int e = json_parse(&doc, out.data, out.len, err, sizeof(err));
	if (e == -EINVAL)
		fprintf(stderr, "agent_json_fput wrote what json_parse refuses: %s\n", err);
	FUZZ_CHECK(e != -EINVAL);
	if (e == 0) {
		size_t len;
		const char *s = json_str(&doc, 0, &len);
		FUZZ_CHECK(s != NULL);
		bool ascii = true;
		for (size_t i = 0; i < size && ascii; i++)
			ascii = data[i] < 0x80;
		if (ascii)
			FUZZ_CHECK(len == size && memcmp(s, data, size) == 0);
	}
	json_free(&doc);
	fuzz_sink_free(&out);
}

static void check_paths(const struct diff_side *a, const struct diff_side *b,
			const struct diff_entry *e, unsigned alpha)
{
	uint32_t *pa = malloc((a->maxdepth + 1) * sizeof(*pa));
	uint32_t *pb = malloc((b->maxdepth + 1) * sizeof(*pb));
	if (pa && pb) {
		uint32_t na = diff_path(a, e->a, pa, a->maxdepth + 1);
		uint32_t nb = diff_path(b, e->b, pb, b->maxdepth + 1);
		FUZZ_CHECK(na == a->node[e->a].depth && nb == b->node[e->b].depth);
		if (e->status == DIFF_EXACT)
			FUZZ_CHECK(na == nb && memcmp(pa, pb, na * sizeof(*pa)) == 0);
		else
			FUZZ_CHECK(e->distance > 0 && e->distance <= alpha &&
				   diff_path_distance(pa, na, pb, nb, alpha) <= alpha);
	}
	free(pa);
	free(pb);
}

static void check_result(const struct diff_side *a, const struct diff_side *b,
			 const struct diff_result *r, unsigned alpha, bool same)
{
	uint8_t *seen_a = calloc(a->n, 1), *seen_b = calloc(b->n, 1);
	if (!seen_a || !seen_b)
		goto out;
	FUZZ_CHECK(r->exact + r->relaxed + r->added + r->gone == r->n);
	for (size_t i = 0; i < r->n; i++) {
		const struct diff_entry *e = &r->e[i];
		if (e->a != DIFF_NONE) {
			FUZZ_CHECK(e->a > 0 && e->a < a->n && !seen_a[e->a]);
			seen_a[e->a] = 1;
		}
		if (e->b != DIFF_NONE) {
			FUZZ_CHECK(e->b > 0 && e->b < b->n && !seen_b[e->b]);
			seen_b[e->b] = 1;
		}
		FUZZ_CHECK(e->delta_ns == (int64_t)(e->b_ns - e->a_ns) || e->a_ns > INT64_MAX ||
			   e->b_ns > INT64_MAX);
		if (same)
			FUZZ_CHECK(e->status == DIFF_EXACT && e->delta_ns == 0);
		if (e->status == DIFF_EXACT || e->status == DIFF_RELAXED)
			check_paths(a, b, e, alpha);
		else
			FUZZ_CHECK((e->status == DIFF_NEW) == (e->a == DIFF_NONE) &&
				   (e->status == DIFF_GONE) == (e->b == DIFF_NONE));
		if (i)
			FUZZ_CHECK(diff_impact(&r->e[i - 1]) >= diff_impact(e));
	}
	for (uint32_t v = 1; v < a->n; v++)
		FUZZ_CHECK(seen_a[v]);
	for (uint32_t w = 1; w < b->n; w++)
		FUZZ_CHECK(seen_b[w]);
out:
	free(seen_a);
	free(seen_b);
}

static void check_sched(const struct diff_side *a, const struct diff_side *b, bool same)
{
	for (int k = 0; k < 2; k++) {
		const struct diff_window *w = k ? &b->window : &a->window;
		if (w->known && w->ns != INT64_MAX)
			FUZZ_CHECK(w->running_ns + w->preempted_ns + w->blocked_ns == w->ns);
	}
	struct diff_sched_cmp c;
	diff_sched_compare(&a->window, &b->window, &c);
	if (same && c.verdict)
		FUZZ_CHECK(c.a_state == c.b_state && c.same_source);
	struct diff_func_change *f;
	size_t n;
	if (diff_funcs(a, b, &f, &n) != 0)
		return;
	FUZZ_CHECK(n <= (size_t)a->nfunc + b->nfunc && n >= a->nfunc && n >= b->nfunc);
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(f[i].in_a || f[i].in_b);
		for (size_t j = i + 1; j < n && j < i + 64; j++)
			FUZZ_CHECK(f[i].label != f[j].label);
		if (same)
			FUZZ_CHECK(f[i].in_a && f[i].in_b && !f[i].self_delta &&
				   !f[i].preempted_delta);
	}
	free(f);
}

static void fuzz_diff(const char *ta, size_t la, const char *tb, size_t lb, bool same)
{
	struct diff_names names;
	struct diff_side a, b;
	char err[256];
	if (diff_names_init(&names) != 0)
		return;
	if (diff_side_init(&a, &names) != 0) {
		diff_names_free(&names);
		return;
	}
	if (diff_side_init(&b, &names) != 0) {
		diff_side_free(&a);
		diff_names_free(&names);
		return;
	}
	if (diff_side_add_summary(&a, ta, la, err, sizeof(err)) == 0 &&
	    diff_side_add_summary(&b, tb, lb, err, sizeof(err)) == 0) {
		const unsigned alpha = CONFIG_AGENT_DIFF_ALPHA;
		struct diff_result r;
		if (diff_match(&a, &b, alpha, &r) == 0) {
			diff_rank(&r);
			check_result(&a, &b, &r, alpha, same);
		}
		check_sched(&a, &b, same);
		diff_result_free(&r);
	}
	diff_side_free(&a);
	diff_side_free(&b);
	diff_names_free(&names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_json(data, size);
	const char *text = (const char *)data;
	const char *nul = memchr(text, '\0', size);
	if (nul)
		fuzz_diff(text, (size_t)(nul - text), nul + 1, size - (size_t)(nul - text) - 1,
			  false);
	else
		fuzz_diff(text, size, text, size, true);
	return 0;
}
