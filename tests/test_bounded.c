/* SPDX-License-Identifier: MIT */
/*
 * Hostile traces against the analysis (bounded work on hostile input): crafted, CRC-valid
 * traces thousands of calls deep, names full of terminal escapes, contexts sharing a leaf
 * by the thousand. What is asserted is the size of what comes out and the work counted,
 * never a time: output linear in the input, the summary's JSON within 4 KiB for every
 * trace, no control byte from a trace in any output.
 */
#include "harness.h"
#include "synth.h"
#include "agent/marks.h"
#include "agent/analysis/diff.h"
#include "agent/analysis/export.h"
#include "uploader/json.h"
#include "agent/analysis/summary.h"
#include "agent/analysis/summary_out.h"
#include "agent/analysis/symbols.h"
#include "hal/timer.h"
#include "ringbuf/tracefile.h"

#include <stdlib.h>
#include <string.h>

static volatile int sink;
#define FN(name, v)                                            \
	__attribute__((noinline, used)) static void name(void) \
	{                                                      \
		sink = v;                                      \
	}
FN(bd_main, 1)
FN(bd_a, 2)
FN(bd_b, 3)
FN(bd_c, 4)
FN(bd_leaf, 5)

#define ID(fn) synth_id(fn)

/* A call path `depth` deep (functions taking turns), each frame 10 ticks of its own, under
 * an anomaly mark: a chain, a context and a folded stack that deep. In a frame, after an
 * empty one: the baseline the summary ranks contexts against. */
static void deep(struct synth_thread *t, const char *name, unsigned depth)
{
	void (*fns[])(void) = { bd_a, bd_b, bd_c };
	synth_init(t, name, 7, 0, 0);
	synth_special(t, 1, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_special(t, 3, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(t, 5, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	uint64_t ts = 10;
	synth_entry(t, ts, ID(bd_main));
	for (unsigned i = 0; i < depth; i++)
		synth_entry(t, ts += 10, ID(fns[i % 3]));
	synth_entry(t, ts += 10, ID(bd_leaf));
	synth_exit(t, ts += 1000);
	for (unsigned i = 0; i <= depth; i++)
		synth_exit(t, ts += 10);
	synth_special(t, ts + 1, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_HANG);
}

struct out {
	char *buf;
	size_t size;
	FILE *f;
};

static FILE *out_open(struct out *o)
{
	memset(o, 0, sizeof(*o));
	o->f = open_memstream(&o->buf, &o->size);
	return o->f;
}

static void out_close(struct out *o)
{
	if (o->f)
		fclose(o->f);
	o->f = NULL;
}

/* Writes the trace at path, summarises it, and fills text and JSON. 0 or -1. */
static int summarise(const char *path, unsigned k, struct out *text, struct out *json,
		     struct summary *s)
{
	struct rb_trace t;
	struct agent_symbols syms;
	char err[256];
	if (!CHECK(rb_trace_open(path, &t, err, sizeof(err)) == 0))
		return -1;
	int e = -1;
	if (CHECK(agent_symbols_open(&syms, &t) == 0)) {
		if (CHECK(summary_build(s, &t, k) == 0)) {
			if (CHECK(out_open(text) && out_open(json))) {
				CHECK_EQ_INT(summary_write_text(text->f, s, &syms), 0);
				CHECK_EQ_INT(summary_write_json(json->f, s, &syms), 0);
				e = 0;
			}
			out_close(text);
			out_close(json);
			/* the trace goes: keep what the tests look at, not its pointers */
			s->trace = NULL;
			if (e)
				summary_free(s);
		}
		agent_symbols_close(&syms);
	}
	rb_trace_close(&t);
	return e;
}

/* The JSON is strict, plain ASCII, one line, at most 4 KiB. */
static void check_json(const char *what, const char *buf, size_t size)
{
	if (size > SUMMARY_JSON_MAX)
		test_fail(__FILE__, __LINE__, "%s: %zu bytes of JSON, over %d", what, size,
			  SUMMARY_JSON_MAX);
	for (size_t i = 0; i + 1 < size; i++)
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f) {
			test_fail(__FILE__, __LINE__, "%s: byte 0x%02x at %zu of the JSON", what,
				  (unsigned char)buf[i], i);
			break;
		}
	struct json_doc d;
	char err[128] = "";
	if (json_parse(&d, buf, size, err, sizeof(err)) != 0)
		test_fail(__FILE__, __LINE__, "%s: the JSON does not parse: %s", what, err);
	else
		json_free(&d);
}

/* Item 6: a chain 10,000 and 100,000 calls deep is kept with its middle elided, the text
 * stays linear (it indented every link: 101 MB at 10,000 deep) and the JSON within 4 KiB
 * (3.4 MB at 100,000 deep). */
TEST(bounded_deep_chains_are_elided_and_the_summary_stays_small)
{
	static const unsigned depths[] = { 100, 10000, 100000 };
	for (size_t n = 0; n < sizeof(depths) / sizeof(depths[0]); n++) {
		unsigned d = depths[n];
		struct synth_thread t;
		char path[512], what[64];
		deep(&t, "deep", d);
		snprintf(what, sizeof(what), "%u deep", d);
		CHECK(synth_write(&t, 1, what, path, sizeof(path)) == 0);
		synth_free(&t);
		struct out text, json;
		struct summary s;
		if (summarise(path, 10, &text, &json, &s) != 0)
			continue;
		printf("    %u calls deep: text %zu bytes, JSON %zu bytes\n", d, text.size,
		       json.size);
		check_json(what, json.buf, json.size);
		/* Whatever the depth: a few lines per kept link and list entry. */
		CHECK(text.size < 40000);
		size_t calls = d + 2; /* main, the d frames, the leaf */
		if (CHECK(s.nchains == 1)) {
			const struct summary_chain *c = &s.chains[0];
			size_t kept = calls < SUMMARY_MAX_DEPTH ? calls : SUMMARY_MAX_DEPTH;
			CHECK_EQ_U64(c->n, kept);
			CHECK_EQ_U64(c->elided, calls - kept);
			CHECK_EQ_U64(c->f[0].key >> 48, 1);	 /* main, outermost, kept */
			CHECK_EQ_U64(c->f[c->n - 1].self, 1000); /* the leaf, where the time went */
		}
		if (CHECK(s.ncontexts == 1)) {
			const struct summary_context *x = &s.contexts[0];
			CHECK_EQ_U64(x->n + x->elided, calls);
			CHECK(x->n <= SUMMARY_MAX_DEPTH);
			CHECK_EQ_U64(x->self[x->n - 1], 1000);
		}
		if (calls > SUMMARY_MAX_DEPTH) {
			char line[64];
			snprintf(line, sizeof(line), " calls elided ...\n");
			CHECK(strstr(text.buf, line) != NULL);
			CHECK(strstr(json.buf, "\"chains_elided\":[[0,16,") != NULL);
			CHECK(strstr(json.buf, "\"elided_at\":16") != NULL);
		}
		summary_free(&s);
		free(text.buf);
		free(json.buf);
	}
}

/* A small xorshift: the same hostile traces on every run. */
static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Item 6: the 4 KiB promise for every trace: a reason of 3,000 escapes, thread names of
 * control bytes, many threads, random trees deep and wide, K up to the maximum. */
TEST(bounded_summary_json_fits_4_kib_for_hostile_traces)
{
	static const char evil[] = "\x1b[2J\r\n\xc2\x9b\xe2\x80\xae\x7f\xff";
	char *reason = malloc(3000 * (sizeof(evil) - 1) + 1);
	if (!CHECK(reason != NULL))
		return;
	for (int i = 0; i < 3000; i++)
		memcpy(reason + i * (sizeof(evil) - 1), evil, sizeof(evil) - 1);
	reason[3000 * (sizeof(evil) - 1)] = '\0';
	void (*fns[])(void) = { bd_main, bd_a, bd_b, bd_c, bd_leaf };
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t largest = 0;
	for (int round = 0; round < 12; round++) {
		enum { THREADS = 6 };
		struct synth_thread th[THREADS];
		for (int i = 0; i < THREADS; i++) {
			synth_init(&th[i], "\x1b]0;pwn\x07\r\n\xc2\x9b\xe2\x80\xae", 10 + i, 0, 0);
			uint64_t ts = 1, depth = 0, maxdepth = 50 + rnd(&x) % 300;
			for (int ev = 0; ev < 3000; ev++) {
				uint64_t r = rnd(&x) % 16;
				if (r < 8 && depth < maxdepth) {
					/* wide ids too: many distinct functions, many contexts */
					uint64_t id = r < 4 ? ID(fns[rnd(&x) % 5])
							    : ID(bd_main) + 16 * (rnd(&x) % 500);
					synth_entry(&th[i], ts, id);
					depth++;
				} else if (r < 15 && depth) {
					synth_exit(&th[i], ts);
					depth--;
				} else {
					synth_special(&th[i], ts, RB_MARK,
						      r & 1 ? AGENT_MARK_FRAME_BEGIN
							    : AGENT_MARK_FRAME_END);
				}
				ts += 1 + rnd(&x) % 1000;
			}
			if (i == round % THREADS)
				synth_special(&th[i], ts, RB_MARK,
					      AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
		}
		char path[512];
		CHECK(synth_write(th, THREADS, round % 2 ? reason : evil, path, sizeof(path)) == 0);
		for (int i = 0; i < THREADS; i++)
			synth_free(&th[i]);
		struct out text, json;
		struct summary s;
		if (summarise(path, round % 3 ? SUMMARY_MAX_K : 10, &text, &json, &s) != 0)
			continue;
		char what[32];
		snprintf(what, sizeof(what), "round %d", round);
		check_json(what, json.buf, json.size);
		largest = json.size > largest ? json.size : largest;
		/* Nothing of the names reaches the text raw either. */
		CHECK(memchr(text.buf, '\x1b', text.size) == NULL);
		CHECK(memchr(text.buf, '\r', text.size) == NULL);
		CHECK(memchr(text.buf, '\x07', text.size) == NULL);
		CHECK(strstr(text.buf, "\xc2\x9b") == NULL);
		CHECK(strstr(text.buf, "\xe2\x80\xae") == NULL);
		summary_free(&s);
		free(text.buf);
		free(json.buf);
	}
	printf("    the largest JSON of 12 hostile traces: %zu bytes\n", largest);
	free(reason);
}

typedef int (*export_fn)(FILE *, const struct rb_trace *, struct agent_symbols *);

static char *export_of(const char *path, export_fn fn, size_t *size)
{
	struct rb_trace t;
	struct agent_symbols syms;
	char err[256];
	struct out o;
	if (!CHECK(rb_trace_open(path, &t, err, sizeof(err)) == 0))
		return NULL;
	if (!CHECK(agent_symbols_open(&syms, &t) == 0 && out_open(&o))) {
		rb_trace_close(&t);
		return NULL;
	}
	CHECK_EQ_INT(fn(o.f, &t, &syms), 0);
	out_close(&o);
	agent_symbols_close(&syms);
	rb_trace_close(&t);
	*size = o.size;
	return o.buf;
}

/* Item 8: names with ESC [2J, CR LF, a C1 CSI, a bidi override and an OSC reach no output
 * raw: not the folded stacks (where a ';' or a line break would also forge frames and
 * lines), not the Chrome JSON. */
TEST(bounded_names_with_escapes_reach_no_export_raw)
{
	struct synth_thread th[2];
	synth_init(&th[0], "a;b\r\nc 1\x1b[2J", 1, 0, 0);
	synth_init(&th[1], "\xc2\x9b\xe2\x80\xae\x1b]0;x\x07", 2, 0, 0);
	for (int i = 0; i < 2; i++) {
		synth_entry(&th[i], 10, ID(bd_main));
		synth_entry(&th[i], 20, ID(bd_a));
		synth_exit(&th[i], 50);
		synth_exit(&th[i], 90);
	}
	char path[512];
	CHECK(synth_write(th, 2, "\x1b[2Jreason\r\n", path, sizeof(path)) == 0);
	synth_free(&th[0]);
	synth_free(&th[1]);
	size_t n;
	char *folded = export_of(path, agent_export_folded, &n);
	if (folded) {
		int lines = 0;
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)folded[i];
			lines += c == '\n';
			if ((c < 0x20 && c != '\n') || c == 0x7f)
				test_fail(__FILE__, __LINE__, "byte 0x%02x in the folded stacks",
					  c);
		}
		CHECK(strstr(folded, "\xc2\x9b") == NULL && strstr(folded, "\xe2\x80\xae") == NULL);
		/* three lines a thread (its time outside calls, main's, a's): the ';' and the
		 * line break of the name made neither a frame nor a line */
		CHECK_EQ_INT(lines, 6);
		static const char first[] = "a\\x3bb\\x0d\\x0ac 1\\x1b[2J-1 ";
		CHECK(strncmp(folded, first, sizeof(first) - 1) == 0);
		CHECK(strstr(folded,
			     "\n\\xc2\\x9b\\xe2\\x80\\xae\\x1b]0\\x3bx\\x07-2;bd_main;bd_a ") !=
		      NULL);
		free(folded);
	}
	char *chrome = export_of(path, agent_export_chrome, &n);
	if (chrome) {
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)chrome[i];
			if ((c < 0x20 && c != '\n') || c >= 0x7f) {
				test_fail(__FILE__, __LINE__,
					  "byte 0x%02x at %zu of the Chrome JSON", c, i);
				break;
			}
		}
		struct json_doc d;
		char err[128] = "";
		if (!CHECK(json_parse(&d, chrome, n, err, sizeof(err)) == 0))
			printf("    %s\n", err);
		else
			json_free(&d);
		free(chrome);
	}
}

/* Item 6: folded stacks keep at most --max-stack frames (perf's 127): a trace 10,000 deep
 * made 969 MB, each line repeating its whole path. The cut lines are counted and the
 * self time still adds up. */
TEST(bounded_folded_stacks_keep_max_stack_frames)
{
	enum { D = 10000 };
	struct synth_thread t;
	char path[512];
	deep(&t, "deep", D);
	CHECK(synth_write(&t, 1, "deep folded", path, sizeof(path)) == 0);
	synth_free(&t);
	struct rb_trace tr;
	struct agent_symbols syms;
	char err[256];
	if (!CHECK(rb_trace_open(path, &tr, err, sizeof(err)) == 0))
		return;
	if (!CHECK(agent_symbols_open(&syms, &tr) == 0)) {
		rb_trace_close(&tr);
		return;
	}
	static const unsigned caps[] = { AGENT_FOLDED_MAX_STACK, 1, 500 };
	for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
		struct out o;
		uint64_t cut = 0;
		if (!CHECK(out_open(&o)))
			break;
		CHECK_EQ_INT(agent_export_folded_max(o.f, &tr, &syms, caps[k], &cut), 0);
		out_close(&o);
		uint64_t lines = 0, sum = 0, most = 0, marked = 0;
		char *save = NULL;
		for (char *l = strtok_r(o.buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char *sp = strrchr(l, ' ');
			if (!CHECK(sp != NULL))
				break;
			sum += strtoull(sp + 1, NULL, 10);
			*sp = '\0';
			uint64_t frames = 1;
			for (char *p = l; *p; p++)
				frames += *p == ';';
			most = frames > most ? frames : most;
			marked += strstr(l, ";(outer frames cut);") != NULL;
			lines++;
		}
		printf("    --max-stack %u: %llu lines, %zu bytes, %llu cut\n", caps[k],
		       (unsigned long long)lines, o.size, (unsigned long long)cut);
		CHECK_EQ_U64(lines, D + 3);	    /* every frame has self time, and the root */
		CHECK(most <= caps[k] + 2);	    /* the label and the cut besides */
		CHECK_EQ_U64(cut, D + 2 - caps[k]); /* main is at depth 1 */
		CHECK_EQ_U64(marked, cut);
		/* from the sync record at 0 to the anomaly mark (deep()) */
		CHECK_EQ_U64(sum, hal_ticks_to_ns(1031 + 20 * (uint64_t)D, tr.timer_hz));
		CHECK(o.size < (uint64_t)(D + 2) * (caps[k] + 2) * 64);
		free(o.buf);
	}
	agent_symbols_close(&syms);
	rb_trace_close(&tr);
}

/* Item 7: two runs whose thousands of contexts share one leaf (and the thread), none
 * equal: every pair was a candidate at alpha 1, quadratic in time and memory. The work is
 * now at most DIFF_CANDIDATES_MAX comparisons per context and round, and still most
 * contexts find a partner. */
TEST(bounded_diff_of_contexts_sharing_a_leaf_is_linear)
{
	enum { N = 3000 };
	struct diff_names names;
	struct diff_side a, b;
	if (!CHECK(diff_names_init(&names) == 0))
		return;
	CHECK(diff_side_init(&a, &names) == 0 && diff_side_init(&b, &names) == 0);
	uint32_t ui, leaf, thr_a, thr_b;
	CHECK(diff_intern(&names, "ui", &ui) == 0 && diff_intern(&names, "leaf", &leaf) == 0);
	CHECK(diff_side_child(&a, 0, ui, &thr_a, NULL) == 0);
	CHECK(diff_side_child(&b, 0, ui, &thr_b, NULL) == 0);
	for (int i = 0; i < N; i++) {
		char fa[32], fb[32];
		uint32_t la, lb, va, vb, wa, wb;
		snprintf(fa, sizeof(fa), "a%d", i);
		snprintf(fb, sizeof(fb), "b%d", i);
		CHECK(diff_intern(&names, fa, &la) == 0 && diff_intern(&names, fb, &lb) == 0);
		CHECK(diff_side_child(&a, thr_a, la, &va, NULL) == 0);
		CHECK(diff_side_child(&a, va, leaf, &wa, NULL) == 0);
		CHECK(diff_side_child(&b, thr_b, lb, &vb, NULL) == 0);
		CHECK(diff_side_child(&b, vb, leaf, &wb, NULL) == 0);
		a.node[wa].cost_ns = 5;
		b.node[wb].cost_ns = 7;
	}
	struct diff_result r;
	if (CHECK(diff_match(&a, &b, 1, &r) == 0)) {
		printf("    %d contexts a side sharing a leaf: %zu compared, %zu relaxed, "
		       "%zu new\n",
		       2 * N, r.compared, r.relaxed, r.added);
		CHECK(r.compared <= (size_t)DIFF_CANDIDATES_MAX * (2 * N + 1));
		CHECK_EQ_U64(r.n, r.exact + r.relaxed + r.gone + r.added);
		CHECK(r.relaxed >= N); /* most of the 2N unmatched contexts found one */
		diff_result_free(&r);
	}
	diff_side_free(&a);
	diff_side_free(&b);
	diff_names_free(&names);
}

/* The summary's elided deep paths read back by `jitt diff`: the elided middle is one frame
 * of its own, so the deep paths of two runs (10,000 and 10,003 deep) still match exactly. */
TEST(bounded_diff_reads_elided_paths_of_summaries)
{
	static const unsigned depths[2] = { 10000, 10003 };
	struct diff_names names;
	struct diff_side side[2];
	if (!CHECK(diff_names_init(&names) == 0))
		return;
	for (int k = 0; k < 2; k++) {
		struct synth_thread t;
		char path[512], err[256] = "";
		deep(&t, "deep", depths[k]);
		CHECK(synth_write(&t, 1, "deep diff", path, sizeof(path)) == 0);
		synth_free(&t);
		struct out text, json;
		struct summary s;
		CHECK(diff_side_init(&side[k], &names) == 0);
		if (summarise(path, 10, &text, &json, &s) != 0)
			continue;
		if (!CHECK(diff_side_add_summary(&side[k], json.buf, json.size, err, sizeof(err)) ==
			   0))
			printf("    %s\n", err);
		summary_free(&s);
		free(text.buf);
		free(json.buf);
	}
	/* thread, the 64 frames kept and the one for the elided middle */
	CHECK_EQ_U64(side[0].maxdepth, 1 + SUMMARY_MAX_DEPTH + 1);
	uint32_t label;
	CHECK(diff_intern(&names, DIFF_ELIDED_FRAMES, &label) == 0);
	struct diff_result r;
	if (CHECK(diff_match(&side[0], &side[1], 0, &r) == 0)) {
		CHECK_EQ_U64(r.exact, side[0].n - 1);
		CHECK_EQ_U64(r.added + r.gone, 0);
		diff_result_free(&r);
	}
	diff_side_free(&side[0]);
	diff_side_free(&side[1]);
	diff_names_free(&names);
}

/* Two traces of one call path 3,000 deep, nothing equal below the top: relaxed matching
 * read every candidate's whole path, the depth times the contexts. Contexts deeper than
 * DIFF_RELAXED_MAX_DEPTH are now matched exactly only, so the work is bounded. */
TEST(bounded_diff_of_deep_traces_compares_only_shallow_contexts)
{
	enum { D = 3000 };
	struct diff_names names;
	struct diff_side side[2];
	char err[256] = "";
	if (!CHECK(diff_names_init(&names) == 0))
		return;
	for (int k = 0; k < 2; k++) {
		struct synth_thread t;
		char path[512];
		synth_init(&t, "deep", 7, 0, 0);
		uint64_t ts = 10;
		for (unsigned i = 0; i < D; i++)
			synth_entry(&t, ts += 10, k ? ID(bd_a) : ID(i % 2 ? bd_b : bd_c));
		for (unsigned i = 0; i < D; i++)
			synth_exit(&t, ts += 10);
		CHECK(synth_write(&t, 1, "deep diff", path, sizeof(path)) == 0);
		synth_free(&t);
		struct rb_trace tr;
		CHECK(diff_side_init(&side[k], &names) == 0);
		if (CHECK(rb_trace_open(path, &tr, err, sizeof(err)) == 0)) {
			CHECK(diff_side_add_trace(&side[k], &tr, err, sizeof(err)) == 0);
			rb_trace_close(&tr);
		}
	}
	struct diff_result r;
	if (CHECK(diff_match(&side[0], &side[1], 2, &r) == 0)) {
		printf("    %u deep: %zu frames read, %zu compared, %zu relaxed, %zu gone, %zu "
		       "new\n",
		       D, r.frames, r.compared, r.relaxed, r.gone, r.added);
		/* each of 2 rounds reads the paths of the contexts at most 128 deep (128 of
		 * them here) and of their candidates; all of them were 9 M frames */
		CHECK_EQ_INT(DIFF_RELAXED_MAX_DEPTH, 128);
		CHECK(r.frames <= (size_t)2 * (DIFF_CANDIDATES_MAX + 1) * 128 * 128);
		CHECK_EQ_U64(r.n, r.exact + r.relaxed + r.gone + r.added);
		diff_result_free(&r);
	}
	diff_side_free(&side[0]);
	diff_side_free(&side[1]);
	diff_names_free(&names);
}
