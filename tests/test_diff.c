/* SPDX-License-Identifier: MIT */
/*
 * jitt diff: two synthetic runs written as real trace files, the same runs as hand-written
 * summaries, the relaxed path condition against a brute-force reference, and the JSON
 * reader against valid, truncated, mutated and hostile input.
 */
#include "harness.h"
#include "synth.h"
#include "agent/analysis/diff.h"
#include "uploader/json.h"
#include "agent/escape.h"
#include "agent/analysis/symbols.h"
#include "hal/timer.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The functions the synthetic runs call: distinct bodies, so no two are folded into one. */
static volatile int sink;
static void fn_main(void)
{
	sink = 1;
}
static void fn_a(void)
{
	sink = 2;
}
static void fn_b(void)
{
	sink = 3;
}
static void fn_c(void)
{
	sink = 4;
}
static void fn_d(void)
{
	sink = 5;
}
static void fn_e(void)
{
	sink = 6;
}
static void fn_wrap(void)
{
	sink = 7;
}
static void fn_x(void)
{
	sink = 8;
}
static void fn_leaf(void)
{
	sink = 9;
}

#define U 1000 /* ticks per time unit of the scenarios */

static void call(struct synth_thread *t, uint64_t t0, uint64_t from, uint64_t to, void (*fn)(void))
{
	synth_entry(t, t0 + from * U, synth_id(fn));
	synth_exit(t, t0 + to * U);
}

/* One iteration of run A's loop: main [0, 1000) calls a [100, 300), which calls b
 * [150, 250), then c [400, 500). Self: main 700, a 100, b 100, c 100. */
static uint64_t frame_a(struct synth_thread *t, uint64_t t0)
{
	synth_entry(t, t0, synth_id(fn_main));
	synth_entry(t, t0 + 100 * U, synth_id(fn_a));
	call(t, t0, 150, 250, fn_b);
	synth_exit(t, t0 + 300 * U);
	call(t, t0, 400, 500, fn_c);
	synth_exit(t, t0 + 1000 * U);
	return t0 + 1000 * U;
}

/* Run B's: b takes 300 instead of 100 (a's own part unchanged), and main calls e, new, for
 * 50; main is longer by exactly that, so its own 700 are unchanged. */
static uint64_t frame_b(struct synth_thread *t, uint64_t t0)
{
	synth_entry(t, t0, synth_id(fn_main));
	synth_entry(t, t0 + 100 * U, synth_id(fn_a));
	call(t, t0, 150, 450, fn_b);
	synth_exit(t, t0 + 500 * U);
	call(t, t0, 500, 600, fn_c);
	call(t, t0, 700, 750, fn_e);
	synth_exit(t, t0 + 1250 * U);
	return t0 + 1250 * U;
}

struct run {
	char path[512];
	uint64_t hz;
};

static int write_run(struct synth_thread *th, int n, struct run *r)
{
	int e = synth_write(th, n, "test", r->path, sizeof(r->path));
	for (int i = 0; i < n; i++)
		synth_free(&th[i]);
	if (e)
		return e;
	struct rb_trace t;
	char err[128];
	if (rb_trace_open(r->path, &t, err, sizeof(err)) != 0)
		return -EINVAL;
	r->hz = t.timer_hz;
	rb_trace_close(&t);
	return 0;
}

/* A function's name as the diff sees it (agent_key_name through the trace's modules). */
static void name_of(const char *trace, void (*fn)(void), char *out, size_t size)
{
	struct rb_trace t;
	struct agent_symbols s;
	char err[128];
	snprintf(out, size, "?");
	if (rb_trace_open(trace, &t, err, sizeof(err)) != 0)
		return;
	if (agent_symbols_open(&s, &t) == 0) {
		struct rb_event e = { .kind = RB_EV_ENTRY,
				      .id = synth_id(fn),
				      .wide = sizeof(void *) == 4 };
		agent_key_name(&s, agent_func_key(&t, &e), out, size);
		agent_symbols_close(&s);
	}
	rb_trace_close(&t);
}

/* The entry of the context named by path (names, thread first) on side s (0: A, 1: B). */
static const struct diff_entry *entry_of(const struct diff_result *r, const struct diff_side *s,
					 int b, const char *const *path, uint32_t n)
{
	uint32_t labels[16];
	for (uint32_t i = 0; i < n && i < 16; i++)
		if (diff_intern(s->names, path[i], &labels[i]) != 0)
			return NULL;
	uint32_t v = diff_side_find(s, labels, n);
	if (v == DIFF_NONE)
		return NULL;
	for (size_t i = 0; i < r->n; i++)
		if ((b ? r->e[i].b : r->e[i].a) == v)
			return &r->e[i];
	return NULL;
}

static bool is_path(const struct diff_side *s, uint32_t v, const char *const *path, uint32_t n)
{
	uint32_t got[16];
	if (v == DIFF_NONE || diff_path(s, v, got, 16) != n)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(diff_name(s->names, got[i]), path[i]) != 0)
			return false;
	return true;
}

static uint64_t ns(uint64_t ticks, uint64_t hz)
{
	return hal_ticks_to_ns(ticks, hz);
}

TEST(diff_traces_slower_and_new_paths_rank_first)
{
	struct synth_thread a[2], b[3];
	struct run ra, rb;
	/* A: two iterations of frame_a; a worker thread runs d for 10 units. */
	synth_init(&a[0], "ui", 101, 0, 5000);
	frame_a(&a[0], frame_a(&a[0], 5000));
	synth_init(&a[1], "worker", 102, 0, 5000);
	call(&a[1], 5000, 0, 10, fn_d);
	/* B: two iterations of frame_b; two threads named worker run d for 5 units each:
	 * same-named threads are summed. */
	synth_init(&b[0], "ui", 201, 0, 9000);
	frame_b(&b[0], frame_b(&b[0], 9000));
	synth_init(&b[1], "worker", 202, 0, 9000);
	call(&b[1], 9000, 0, 5, fn_d);
	synth_init(&b[2], "worker", 203, 0, 9000);
	call(&b[2], 9000, 0, 5, fn_d);
	if (!CHECK(write_run(a, 2, &ra) == 0) || !CHECK(write_run(b, 3, &rb) == 0))
		return;

	char m[256], fa[256], fb[256], fc[256], fd[256], fe[256];
	name_of(ra.path, fn_main, m, sizeof(m));
	name_of(ra.path, fn_a, fa, sizeof(fa));
	name_of(ra.path, fn_b, fb, sizeof(fb));
	name_of(ra.path, fn_c, fc, sizeof(fc));
	name_of(ra.path, fn_d, fd, sizeof(fd));
	name_of(ra.path, fn_e, fe, sizeof(fe));

	struct diff_names names;
	struct diff_side sa, sb;
	char err[256] = "";
	CHECK_EQ_INT(diff_names_init(&names), 0);
	CHECK_EQ_INT(diff_side_init(&sa, &names), 0);
	CHECK_EQ_INT(diff_side_init(&sb, &names), 0);
	CHECK_EQ_INT(diff_side_load(&sa, ra.path, err, sizeof(err)), 0);
	CHECK_EQ_INT(diff_side_load(&sb, rb.path, err, sizeof(err)), 0);
	CHECK_EQ_INT(sa.kind, DIFF_TRACE);
	CHECK_EQ_U64(sa.threads, 2);
	CHECK_EQ_U64(sb.threads, 3);

	struct diff_result r;
	CHECK_EQ_INT(diff_match(&sa, &sb, 1, &r), 0);
	diff_rank(&r);
	/* ui, main, a, b, c, worker, d in both; e new in B. */
	CHECK_EQ_U64(r.exact, 7);
	CHECK_EQ_U64(r.relaxed, 0);
	CHECK_EQ_U64(r.added, 1);
	CHECK_EQ_U64(r.gone, 0);
	if (!CHECK(r.n == 8)) {
		diff_result_free(&r);
		goto out;
	}
	const char *pb[] = { "ui", m, fa, fb }, *pe[] = { "ui", m, fe };
	/* First: b, 100 -> 300 per iteration, two iterations. */
	CHECK(is_path(&sb, r.e[0].b, pb, 4));
	CHECK_EQ_INT(r.e[0].status, DIFF_EXACT);
	CHECK_EQ_U64(r.e[0].a_ns, ns(200 * U, ra.hz));
	CHECK_EQ_U64(r.e[0].b_ns, ns(600 * U, rb.hz));
	CHECK_EQ_INT(r.e[0].delta_ns, (int64_t)ns(600 * U, rb.hz) - (int64_t)ns(200 * U, ra.hz));
	/* Second: e, new, 50 per iteration. */
	CHECK(is_path(&sb, r.e[1].b, pe, 3));
	CHECK_EQ_INT(r.e[1].status, DIFF_NEW);
	CHECK_EQ_U64(r.e[1].a, DIFF_NONE);
	CHECK_EQ_INT(r.e[1].delta_ns, (int64_t)ns(100 * U, rb.hz));
	/* Unchanged: exactly zero. */
	const char *pm[] = { "ui", m }, *pa[] = { "ui", m, fa }, *pc[] = { "ui", m, fc };
	const char *const *same[] = { pm, pa, pc };
	uint32_t len[] = { 2, 3, 3 };
	for (int i = 0; i < 3; i++) {
		const struct diff_entry *x = entry_of(&r, &sa, 0, same[i], len[i]);
		if (!CHECK(x != NULL))
			continue;
		CHECK_EQ_INT(x->status, DIFF_EXACT);
		CHECK_EQ_INT(x->delta_ns, 0);
		CHECK(x->a_ns > 0);
	}
	/* The two worker threads of B are one context; A's one thread ran as long. */
	const char *pd[] = { "worker", fd };
	const struct diff_entry *d = entry_of(&r, &sb, 1, pd, 2);
	if (CHECK(d != NULL)) {
		CHECK_EQ_U64(d->b_ns, 2 * ns(5 * U, rb.hz));
		CHECK_EQ_INT(d->delta_ns,
			     (int64_t)(2 * ns(5 * U, rb.hz)) - (int64_t)ns(10 * U, ra.hz));
	}
	/* Every context once. */
	for (size_t i = 1; i < r.n; i++)
		CHECK(diff_impact(&r.e[i - 1]) >= diff_impact(&r.e[i]));
	diff_result_free(&r);
out:
	diff_side_free(&sa);
	diff_side_free(&sb);
	diff_names_free(&names);
}

TEST(diff_traces_inserted_wrapper_matches_relaxed_with_alpha_1_only)
{
	/* A: main [0, 1000) > x [100, 900) > leaf [200, 800).
	 * B: main [0, 1000) > wrap [50, 950) > x [100, 900) > leaf [200, 800). */
	struct synth_thread a, b;
	struct run ra, rb;
	synth_init(&a, "ui", 1, 0, 100);
	synth_entry(&a, 100, synth_id(fn_main));
	synth_entry(&a, 100 + 100 * U, synth_id(fn_x));
	call(&a, 100, 200, 800, fn_leaf);
	synth_exit(&a, 100 + 900 * U);
	synth_exit(&a, 100 + 1000 * U);
	synth_init(&b, "ui", 2, 0, 100);
	synth_entry(&b, 100, synth_id(fn_main));
	synth_entry(&b, 100 + 50 * U, synth_id(fn_wrap));
	synth_entry(&b, 100 + 100 * U, synth_id(fn_x));
	call(&b, 100, 200, 800, fn_leaf);
	synth_exit(&b, 100 + 900 * U);
	synth_exit(&b, 100 + 950 * U);
	synth_exit(&b, 100 + 1000 * U);
	if (!CHECK(write_run(&a, 1, &ra) == 0) || !CHECK(write_run(&b, 1, &rb) == 0))
		return;
	char m[256], w[256], x[256], l[256];
	name_of(ra.path, fn_main, m, sizeof(m));
	name_of(ra.path, fn_wrap, w, sizeof(w));
	name_of(ra.path, fn_x, x, sizeof(x));
	name_of(ra.path, fn_leaf, l, sizeof(l));

	struct diff_names names;
	struct diff_side sa, sb;
	char err[256] = "";
	CHECK_EQ_INT(diff_names_init(&names), 0);
	CHECK_EQ_INT(diff_side_init(&sa, &names), 0);
	CHECK_EQ_INT(diff_side_init(&sb, &names), 0);
	CHECK_EQ_INT(diff_side_load(&sa, ra.path, err, sizeof(err)), 0);
	CHECK_EQ_INT(diff_side_load(&sb, rb.path, err, sizeof(err)), 0);

	const char *al[] = { "ui", m, x, l }, *bl[] = { "ui", m, w, x, l };
	const char *ax[] = { "ui", m, x }, *bx[] = { "ui", m, w, x }, *bw[] = { "ui", m, w };
	struct diff_result r;
	CHECK_EQ_INT(diff_match(&sa, &sb, 1, &r), 0);
	CHECK_EQ_U64(r.relaxed, 2);
	CHECK_EQ_U64(r.added, 1);
	CHECK_EQ_U64(r.gone, 0);
	const struct diff_entry *e = entry_of(&r, &sa, 0, al, 4);
	if (CHECK(e != NULL)) {
		CHECK_EQ_INT(e->status, DIFF_RELAXED);
		CHECK_EQ_INT(e->distance, 1);
		CHECK(is_path(&sb, e->b, bl, 5));
		CHECK_EQ_INT(e->delta_ns, 0);
	}
	/* x goes to wrap > x (the same function at the leaf), not to wrap, as close. */
	e = entry_of(&r, &sa, 0, ax, 3);
	if (CHECK(e != NULL)) {
		CHECK_EQ_INT(e->status, DIFF_RELAXED);
		CHECK(is_path(&sb, e->b, bx, 4));
		CHECK_EQ_INT(e->delta_ns, 0);
	}
	e = entry_of(&r, &sb, 1, bw, 3);
	if (CHECK(e != NULL)) {
		CHECK_EQ_INT(e->status, DIFF_NEW);
		CHECK_EQ_U64(e->b_ns, ns(100 * U, rb.hz));
	}
	diff_result_free(&r);

	CHECK_EQ_INT(diff_match(&sa, &sb, 0, &r), 0);
	CHECK_EQ_U64(r.relaxed, 0);
	CHECK_EQ_U64(r.exact, 2); /* ui, main */
	CHECK_EQ_U64(r.gone, 2);
	CHECK_EQ_U64(r.added, 3);
	e = entry_of(&r, &sa, 0, al, 4);
	if (CHECK(e != NULL))
		CHECK_EQ_INT(e->status, DIFF_GONE);
	diff_result_free(&r);
	diff_side_free(&sa);
	diff_side_free(&sb);
	diff_names_free(&names);
}

/* The same runs as summaries (jitt.summary version 1), in nanoseconds; A names its thread
 * with an object, B with a string, as jitt summarize writes it. B lists its
 * functions in another order: identity is the name, not the index. c has no name: it is
 * "<first 16 hex of the build-id>+0xoffset" on both sides. */
static const char summary_a[] =
	"{\"schema\":\"jitt.summary\",\"version\":1,\"reason\":\"test\",\n"
	" \"thread\":{\"name\":\"ui\",\"tid\":12},\"window\":{\"start_ns\":0,\"end_ns\":9},\n"
	" \"modules\":[[\"0123456789abcdef0123456789abcdef01234567\",\"app\"]],\n"
	" \"functions\":[[0,4096,\"main\"],[0,4200,\"a\"],[0,4300,\"b\"],[0,17408,\"\"]],\n"
	" \"top\":[{\"function\":0,\"self_ns\":700}],\n"
	" \"contexts\":[{\"cost_ns\":900,\"path\":[0,1,2],\"self_ns\":[700,100,100],"
	"\"base_ns\":[0,0,0]},\n"
	"  {\"cost_ns\":800,\"path\":[0,3],\"self_ns\":[700,100],\"base_ns\":[0,0]}],\n"
	" \"extra\":[null,true,false,-1.5e-3,\"\\u00e9\\ud83d\\ude00\"]}";

static const char summary_b[] =
	"{\"schema\":\"jitt.summary\",\"version\":1,\"thread\":\"ui\",\n"
	" \"modules\":[[\"0123456789ABCDEF0123456789abcdef01234567\",\"app\"]],\n"
	" \"functions\":[[0,4300,\"b\"],[0,4500,\"e\"],[0,4096,\"main\"],[0,4200,\"a\"],"
	"[0,17408,\"\"]],\n"
	" \"contexts\":[{\"cost_ns\":1100,\"path\":[2,3,0],\"self_ns\":[700,100,300],"
	"\"base_ns\":[0,0,0]},\n"
	"  {\"cost_ns\":800,\"path\":[2,4],\"self_ns\":[700,100],\"base_ns\":[0,0]},\n"
	"  {\"cost_ns\":750,\"path\":[2,1],\"self_ns\":[700,50],\"base_ns\":[0,0]}]}";

TEST(diff_summaries_rank_like_traces)
{
	struct diff_names names;
	struct diff_side sa, sb;
	char err[256] = "";
	CHECK_EQ_INT(diff_names_init(&names), 0);
	CHECK_EQ_INT(diff_side_init(&sa, &names), 0);
	CHECK_EQ_INT(diff_side_init(&sb, &names), 0);
	CHECK_EQ_INT(diff_side_add_summary(&sa, summary_a, strlen(summary_a), err, sizeof(err)), 0);
	CHECK_EQ_INT(diff_side_add_summary(&sb, summary_b, strlen(summary_b), err, sizeof(err)), 0);
	CHECK_EQ_INT(sa.kind, DIFF_SUMMARY);
	CHECK_EQ_U64(sa.n, 1 + 5); /* root, ui, main, a, b, c: main once though in two paths */
	struct diff_result r;
	CHECK_EQ_INT(diff_match(&sa, &sb, 1, &r), 0);
	diff_rank(&r);
	CHECK_EQ_U64(r.exact, 5);
	CHECK_EQ_U64(r.added, 1);
	if (CHECK(r.n == 6)) {
		const char *pb[] = { "ui", "main", "a", "b" }, *pe[] = { "ui", "main", "e" };
		CHECK(is_path(&sb, r.e[0].b, pb, 4));
		CHECK_EQ_INT(r.e[0].delta_ns, 200);
		CHECK_EQ_U64(r.e[0].a_ns, 100);
		CHECK_EQ_U64(r.e[0].b_ns, 300);
		CHECK(is_path(&sb, r.e[1].b, pe, 3));
		CHECK_EQ_INT(r.e[1].status, DIFF_NEW);
		CHECK_EQ_INT(r.e[1].delta_ns, 50);
		for (size_t i = 2; i < r.n; i++)
			CHECK_EQ_INT(r.e[i].delta_ns, 0);
		const char *pm[] = { "ui", "main" },
			   *pc[] = { "ui", "main", "0123456789abcdef+0x4400" };
		const struct diff_entry *x = entry_of(&r, &sa, 0, pm, 2);
		if (CHECK(x != NULL))
			CHECK_EQ_U64(x->a_ns, 700); /* shared by two paths, counted once */
		x = entry_of(&r, &sa, 0, pc, 3);
		if (CHECK(x != NULL)) {
			CHECK_EQ_INT(x->status, DIFF_EXACT);
			CHECK_EQ_U64(x->b_ns, 100);
		}
	}
	diff_result_free(&r);
	diff_side_free(&sa);
	diff_side_free(&sb);
	diff_names_free(&names);
}

/* summary_b in version 2's compact form: the second and third contexts say their first
 * frame is the first context's ("from":[0,1]) and write only the rest. */
static const char summary_b2[] =
	"{\"schema\":\"jitt.summary\",\"version\":2,\"thread\":\"ui\",\n"
	" \"app\":{\"build_id\":\"0123456789abcdef0123456789abcdef01234567\",\"name\":\"app\"},\n"
	" \"modules\":[[\"0123456789ABCDEF0123456789abcdef01234567\",\"app\"]],\n"
	" \"functions\":[[0,4300,\"b\"],[0,4500,\"e\"],[0,4096,\"main\"],[0,4200,\"a\"],"
	"[0,17408,\"\"]],\n"
	" \"contexts\":[{\"cost_ns\":1100,\"path\":[2,3,0],\"self_ns\":[700,100,300],"
	"\"base_ns\":[0,0,0]},\n"
	"  {\"cost_ns\":800,\"from\":[0,1],\"path\":[4],\"self_ns\":[100],\"base_ns\":[0]},\n"
	"  {\"cost_ns\":750,\"from\":[1,1],\"path\":[1],\"self_ns\":[50],\"base_ns\":[0]}]}";

/* Version 2 reads as the same contexts as version 1 written whole. */
TEST(diff_summary_v2_shared_prefixes_read_as_v1)
{
	struct diff_names names;
	struct diff_side sb, sb2;
	char err[256] = "";
	CHECK_EQ_INT(diff_names_init(&names), 0);
	CHECK_EQ_INT(diff_side_init(&sb, &names), 0);
	CHECK_EQ_INT(diff_side_init(&sb2, &names), 0);
	CHECK_EQ_INT(diff_side_add_summary(&sb, summary_b, strlen(summary_b), err, sizeof(err)), 0);
	CHECK_EQ_INT(diff_side_add_summary(&sb2, summary_b2, strlen(summary_b2), err,
					   sizeof(err)), 0);
	CHECK_EQ_U64(sb2.n, sb.n);
	struct diff_result r;
	CHECK_EQ_INT(diff_match(&sb, &sb2, 1, &r), 0);
	CHECK_EQ_U64(r.exact, sb.n - 1); /* every context but the root above the threads */
	CHECK_EQ_U64(r.added, 0);
	CHECK_EQ_U64(r.gone, 0);
	for (size_t i = 0; i < r.n; i++)
		CHECK_EQ_INT(r.e[i].delta_ns, 0);
	diff_result_free(&r);
	diff_side_free(&sb);
	diff_side_free(&sb2);
	diff_names_free(&names);
}

TEST(diff_bad_summaries_are_refused_with_the_offset)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
		{ "[]", "not a JSON object" },
		{ "{}", "no \"schema\"" },
		{ "{\"schema\":\"other\"}", "not a jitt summary" },
		{ "{\"schema\":\"jitt.summary\",\"version\":4}", "version 4" },
		{ "{\"schema\":\"jitt.summary\",\"version\":2,\"thread\":\"ui\",\"modules\":[],"
		  "\"functions\":[[-1,1,\"f\"]],\"contexts\":[{\"from\":[0,1],\"path\":[0],"
		  "\"self_ns\":[1]}]}",
		  "from's context out of range" },
		{ "{\"schema\":\"jitt.summary\",\"version\":2,\"thread\":\"ui\",\"modules\":[],"
		  "\"functions\":[[-1,1,\"f\"]],\"contexts\":[{\"path\":[0],\"self_ns\":[1]},"
		  "{\"from\":[0,2],\"path\":[],\"self_ns\":[]}]}",
		  "from's frames out of range" },
		{ "{\"schema\":\"jitt.summary\",\"version\":2,\"thread\":\"ui\",\"modules\":[],"
		  "\"functions\":[[-1,1,\"f\"]],\"contexts\":[{\"path\":[0],\"self_ns\":[1]},"
		  "{\"from\":[0],\"path\":[],\"self_ns\":[]}]}",
		  "should be [context, frames]" },
		{ "{\"schema\":\"jitt.summary\",\"version\":1}", "no \"thread\"" },
		{ "{\"schema\":\"jitt.summary\",\"version\":1,\"thread\":{\"name\":\"ui\"},"
		  "\"modules\":[],\"functions\":[[0,1,\"f\"]],\"contexts\":[]}",
		  "module index out of range" },
		{ "{\"schema\":\"jitt.summary\",\"version\":1,\"thread\":{\"name\":\"ui\"},"
		  "\"modules\":[[\"zz\",\"m\"]],\"functions\":[],\"contexts\":[]}",
		  "not hex" },
		{ "{\"schema\":\"jitt.summary\",\"version\":1,\"thread\":{\"name\":\"ui\"},"
		  "\"modules\":[],\"functions\":[[-1,1,\"f\"]],"
		  "\"contexts\":[{\"path\":[1],\"self_ns\":[1]}]}",
		  "function index out of range" },
		{ "{\"schema\":\"jitt.summary\",\"version\":1,\"thread\":{\"name\":\"ui\"},"
		  "\"modules\":[],\"functions\":[[-1,1,\"f\"]],"
		  "\"contexts\":[{\"path\":[0],\"self_ns\":[-5]}]}",
		  "self_ns out of range" },
		{ "{\"schema\":\"jitt.summary\",\"version\":1,\"thread\":{\"name\":\"ui\"},"
		  "\"modules\":[],\"functions\":[[-1,1,\"f\"]],"
		  "\"contexts\":[{\"path\":[0],\"self_ns\":[]}]}",
		  "differ in length" },
		{ "{\"schema\":\"jitt.summary\",\"version\":1,\"thread\":{\"name\":\"u\\u0000i\"},"
		  "\"modules\":[],\"functions\":[],\"contexts\":[]}",
		  "NUL" },
		{ "{\"schema\":\"jitt.summary\",\"version\":1,\"thread\":{\"name\":\"ui\"},"
		  "\"modules\":[],\"functions\":[[-1,1.5,\"f\"]],\"contexts\":[]}",
		  "should be an integer" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct diff_names names;
		struct diff_side s;
		char err[256] = "";
		CHECK_EQ_INT(diff_names_init(&names), 0);
		CHECK_EQ_INT(diff_side_init(&s, &names), 0);
		int e = diff_side_add_summary(&s, bad[i].text, strlen(bad[i].text), err,
					      sizeof(err));
		if (e != -EINVAL || strncmp(err, "offset ", 7) != 0 || !strstr(err, bad[i].says))
			test_fail(__FILE__, __LINE__, "case %zu: %d \"%s\"", i, e, err);
		diff_side_free(&s);
		diff_names_free(&names);
	}
}

/* ---- version 3: what the thread was doing (running, preempted, blocked) ---- */

/* A version 3 summary of one window; the window, top_window and chains are the %s. */
#define SUMMARY_V3                                                                                 \
	"{\"schema\":\"jitt.summary\",\"version\":3,\"thread\":\"ui\",\n"                            \
	" \"modules\":[[\"0123456789abcdef0123456789abcdef01234567\",\"app\"]],\n"                   \
	" \"functions\":[[0,4096,\"main\"],[0,4200,\"draw\"],[0,4300,\"layout\"]],\n"               \
	" \"window\":%s,\n \"top_window\":%s,\n \"chains\":%s,\n"                                    \
	" \"contexts\":[{\"cost_ns\":9000,\"path\":[0,1,2],\"self_ns\":[0,9000,5000],"               \
	"\"base_ns\":[0,0,0]}]}"

/* A: a 20 ms frame mostly running (on the big cores), its code the slow part. */
static const char v3_win_a[] =
	"{\"kind\":\"frame\",\"ns\":20000000,\"running_ns\":17000000,\"preempted_ns\":1000000,"
	"\"blocked_ns\":2000000,\"anomaly_marked\":true,\"sched\":{\"source\":\"perf\","
	"\"migrations\":1,\"cpu_ns\":{\"little\":2000000,\"big\":15000000}}}";
static const char v3_top_a[] = "[[1,9000000,40,0,0,500000],[2,5000000,12,0,0,300000]]";
static const char v3_chains_a[] =
	"[[[0,20000000,0,0,0,0],[1,14000000,9000000,0,0,500000],[2,5300000,5000000,0,0,300000]]]";

/* B: a 60 ms frame mostly preempted, moved to the LITTLE cores; its chain ends in many short
 * calls of layout (calls at index 6 in version 3). */
static const char v3_win_b[] =
	"{\"kind\":\"frame\",\"ns\":60000000,\"running_ns\":16000000,\"preempted_ns\":42000000,"
	"\"blocked_ns\":2000000,\"anomaly_marked\":true,\"sched\":{\"source\":\"perf\","
	"\"migrations\":23,\"cpu_ns\":{\"little\":13000000,\"big\":3000000},\"later\":[1]}}";
static const char v3_top_b[] = "[[2,4500000,12,0,0,11000000],[1,8500000,40,0,0,30000000]]";
static const char v3_chains_b[] =
	"[[[0,60000000,0,0,0,0],[1,54000000,8500000,0,0,30000000],"
	"[2,15500000,4500000,0,0,11000000,12]]]";

static char *v3_text(const char *win, const char *top, const char *chains)
{
	size_t n = sizeof(SUMMARY_V3) + strlen(win) + strlen(top) + strlen(chains);
	char *s = malloc(n);
	if (s)
		snprintf(s, n, SUMMARY_V3, win, top, chains);
	return s;
}

static int add_text(struct diff_side *s, const char *text, char *err, size_t errsize)
{
	return text ? diff_side_add_summary(s, text, strlen(text), err, errsize) : -ENOMEM;
}

TEST(diff_summary_v3_reads_the_window_split_and_preempted_time)
{
	struct diff_names names;
	struct diff_side sa, sb;
	char err[256] = "";
	char *ta = v3_text(v3_win_a, v3_top_a, v3_chains_a);
	char *tb = v3_text(v3_win_b, v3_top_b, v3_chains_b);
	CHECK_EQ_INT(diff_names_init(&names), 0);
	CHECK_EQ_INT(diff_side_init(&sa, &names), 0);
	CHECK_EQ_INT(diff_side_init(&sb, &names), 0);
	CHECK_EQ_INT(add_text(&sa, ta, err, sizeof(err)), 0);
	CHECK_EQ_INT(add_text(&sb, tb, err, sizeof(err)), 0);
	CHECK_STR(err, "");

	const struct diff_window *wa = &sa.window, *wb = &sb.window;
	CHECK(wa->known && wb->known);
	CHECK_EQ_U64(wb->ns, 60000000);
	CHECK_EQ_U64(wb->running_ns, 16000000);
	CHECK_EQ_U64(wb->preempted_ns, 42000000);
	CHECK_EQ_U64(wb->blocked_ns, 2000000);
	CHECK_EQ_INT(wb->source, DIFF_SCHED_PERF);
	CHECK(wb->has_migrations && wb->migrations == 23);
	CHECK(wb->has_cpu);
	CHECK_EQ_U64(wb->cpu_ns[HAL_CPU_LITTLE], 13000000);
	CHECK_EQ_U64(wb->cpu_ns[HAL_CPU_MIDDLE], 0);
	CHECK_EQ_U64(wb->cpu_ns[HAL_CPU_BIG], 3000000);
	CHECK_EQ_INT(diff_window_state(wa), DIFF_RUNNING);
	CHECK_EQ_INT(diff_window_state(wb), DIFF_PREEMPTED);
	CHECK_EQ_INT(diff_permille(wb->preempted_ns, wb->ns), 700);
	CHECK_EQ_INT(diff_permille(wa->running_ns, wa->ns), 850);

	/* The verdict: both have perf, A was running, B preempted. */
	struct diff_sched_cmp c;
	diff_sched_compare(wa, wb, &c);
	CHECK(c.known && c.same_source && c.verdict && !c.a_none && !c.b_none);
	CHECK_EQ_INT(c.a_state, DIFF_RUNNING);
	CHECK_EQ_INT(c.b_state, DIFF_PREEMPTED);

	/* The chain's innermost link: many short calls of layout, preempted 11 ms. */
	CHECK(sb.where.known);
	CHECK_STR(diff_name(&names, sb.where.label), "layout");
	CHECK_EQ_U64(sb.where.calls, 12);
	CHECK_EQ_U64(sb.where.preempted_ns, 11000000);
	CHECK_EQ_U64(sb.where.self_ns, 4500000);
	CHECK(sa.where.known && sa.where.calls == 0 && sa.where.preempted_ns == 300000);

	/* The functions: draw's preempted time grew most (+29.5 ms against -0.5 ms self). */
	struct diff_func_change *f = NULL;
	size_t n = 0;
	CHECK_EQ_INT(diff_funcs(&sa, &sb, &f, &n), 0);
	if (CHECK(n == 2)) {
		CHECK_STR(diff_name(&names, f[0].label), "draw");
		CHECK(f[0].in_a && f[0].in_b);
		CHECK_EQ_INT(f[0].self_delta, -500000);
		CHECK_EQ_INT(f[0].preempted_delta, 29500000);
		CHECK_EQ_U64(f[0].a.calls, 40);
		CHECK_STR(diff_name(&names, f[1].label), "layout");
		CHECK_EQ_INT(f[1].preempted_delta, 10700000);
	}
	free(f);

	/* The contexts read as before. */
	struct diff_result r;
	CHECK_EQ_INT(diff_match(&sa, &sb, 1, &r), 0);
	CHECK_EQ_U64(r.exact, 4);
	diff_result_free(&r);
	diff_side_free(&sa);
	diff_side_free(&sb);
	diff_names_free(&names);
	free(ta);
	free(tb);
}

/* Version 2 (and 1): no preempted time, no source; a chain's many-calls link has its calls at
 * index 5; running is the window less its blocked time. */
TEST(diff_summary_v2_window_reads_with_no_scheduling_source)
{
	static const char v2[] =
		"{\"schema\":\"jitt.summary\",\"version\":2,\"thread\":\"ui\",\"modules\":[],"
		"\"functions\":[[-1,1,\"main\"],[-1,2,\"draw\"]],"
		"\"window\":{\"kind\":\"frame\",\"ns\":1000,\"blocked_ns\":300,"
		"\"anomaly_marked\":true},"
		"\"top_window\":[[1,600,3,0,0],[0,100,1,300,1]],"
		"\"chains\":[[[0,1000,100,300,0],[1,600,600,0,0,3]]],"
		"\"contexts\":[{\"cost_ns\":600,\"path\":[0,1],\"self_ns\":[100,600],"
		"\"base_ns\":[0,0]}]}";
	struct diff_names names;
	struct diff_side s, t;
	char err[256] = "";
	char *t3 = v3_text(v3_win_b, v3_top_b, v3_chains_b);
	CHECK_EQ_INT(diff_names_init(&names), 0);
	CHECK_EQ_INT(diff_side_init(&s, &names), 0);
	CHECK_EQ_INT(diff_side_init(&t, &names), 0);
	CHECK_EQ_INT(add_text(&s, v2, err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK(s.window.known);
	CHECK_EQ_U64(s.window.running_ns, 700);
	CHECK_EQ_U64(s.window.preempted_ns, 0);
	CHECK_EQ_U64(s.window.blocked_ns, 300);
	CHECK_EQ_INT(s.window.source, DIFF_SCHED_NONE);
	CHECK(!s.window.has_migrations && !s.window.has_cpu);
	CHECK(s.where.known && s.where.calls == 3 && s.where.preempted_ns == 0);
	CHECK_EQ_U64(s.nfunc, 2);
	/* Against a version 3 summary: no verdict, the source is missing on A's side. */
	CHECK_EQ_INT(add_text(&t, t3, err, sizeof(err)), 0);
	struct diff_sched_cmp c;
	diff_sched_compare(&s.window, &t.window, &c);
	CHECK(c.known && !c.same_source && c.a_none && !c.b_none && !c.verdict);
	/* A version 1 summary without a window has none to compare. */
	struct diff_side u;
	CHECK_EQ_INT(diff_side_init(&u, &names), 0);
	CHECK_EQ_INT(add_text(&u, summary_a, err, sizeof(err)), 0);
	CHECK(!u.window.known);
	diff_sched_compare(&u.window, &t.window, &c);
	CHECK(!c.known && !c.verdict);
	diff_side_free(&u);
	diff_side_free(&s);
	diff_side_free(&t);
	diff_names_free(&names);
	free(t3);
}

TEST(diff_bad_v3_summaries_are_refused_with_the_offset)
{
	static const struct {
		const char *win, *top, *chains, *says;
	} bad[] = {
		/* the window */
		{ "[]", v3_top_a, v3_chains_a, "\"window\" should be an object" },
		{ "{\"ns\":10,\"running_ns\":10,\"blocked_ns\":0}", v3_top_a, v3_chains_a,
		  "the window has no \"preempted_ns\"" },
		{ "{\"ns\":10,\"running_ns\":\"10\",\"preempted_ns\":0,\"blocked_ns\":0}", v3_top_a,
		  v3_chains_a, "the window's running_ns should be an integer" },
		{ "{\"ns\":10,\"running_ns\":12,\"preempted_ns\":-2,\"blocked_ns\":0}", v3_top_a,
		  v3_chains_a, "the window's preempted_ns out of range" },
		{ "{\"ns\":10,\"running_ns\":5,\"preempted_ns\":2,\"blocked_ns\":2}", v3_top_a,
		  v3_chains_a, "(9) is not its ns (10)" },
		{ "{\"ns\":10,\"running_ns\":5.5,\"preempted_ns\":2,\"blocked_ns\":2.5}", v3_top_a,
		  v3_chains_a, "should be an integer" },
		{ "{\"ns\":10,\"running_ns\":10,\"preempted_ns\":0,\"blocked_ns\":0,\"sched\":1}",
		  v3_top_a, v3_chains_a, "\"sched\" should be an object" },
		{ "{\"ns\":10,\"running_ns\":10,\"preempted_ns\":0,\"blocked_ns\":0,\"sched\":{}}",
		  v3_top_a, v3_chains_a, "no \"source\"" },
		{ "{\"ns\":10,\"running_ns\":10,\"preempted_ns\":0,\"blocked_ns\":0,"
		  "\"sched\":{\"source\":\"ftrace\"}}",
		  v3_top_a, v3_chains_a, "should be \"perf\", \"schedstat\" or \"none\"" },
		{ "{\"ns\":10,\"running_ns\":10,\"preempted_ns\":0,\"blocked_ns\":0,"
		  "\"sched\":{\"source\":\"perf\",\"migrations\":-1}}",
		  v3_top_a, v3_chains_a, "migrations out of range" },
		{ "{\"ns\":10,\"running_ns\":10,\"preempted_ns\":0,\"blocked_ns\":0,"
		  "\"sched\":{\"source\":\"perf\",\"cpu_ns\":[1,2]}}",
		  v3_top_a, v3_chains_a, "\"cpu_ns\" should be an object" },
		{ "{\"ns\":10,\"running_ns\":10,\"preempted_ns\":0,\"blocked_ns\":0,"
		  "\"sched\":{\"source\":\"perf\",\"cpu_ns\":{\"big\":-5}}}",
		  v3_top_a, v3_chains_a, "cpu_ns.big out of range" },
		/* the top list: version 3's entries have 6 elements */
		{ v3_win_a, "[[1,9000000,40,0,0]]", v3_chains_a,
		  "top_window entry 0 should be [f, self_ns, calls, blocked_ns, cut, "
		  "preempted_ns]" },
		{ v3_win_a, "[[1,9000000,40,0,0,1],[1,1,1,0,0,-1]]", v3_chains_a,
		  "top_window entry 1: preempted_ns out of range" },
		{ v3_win_a, "[[1,9000000,40,0,2,1]]", v3_chains_a, "top_window entry 0: cut out of range" },
		{ v3_win_a, "[[3,1,1,0,0,1]]", v3_chains_a, "top_window entry 0: f out of range" },
		{ v3_win_a, "{}", v3_chains_a, "\"top_window\" should be an array" },
		/* chains: 6 elements a link, 7 for a last many-calls one */
		{ v3_win_a, v3_top_a, "[[[0,1,1,0,0]]]", "chain 0, link 0 should be [f, incl_ns, " },
		{ v3_win_a, v3_top_a, "[[[0,1,1,0,0,0,5],[1,1,1,0,0,0]]]",
		  "chain 0, link 0 should be" },
		{ v3_win_a, v3_top_a, "[[[0,1,1,0,0,0,5,1]]]", "or with calls after them" },
		{ v3_win_a, v3_top_a, "[[[0,1,1,0,0,\"x\"]]]",
		  "chain 0, link 0: preempted_ns should be an integer" },
		{ v3_win_a, v3_top_a, "[[[0,1,1,0,0,0,-3]]]", "chain 0, link 0: calls out of range" },
		{ v3_win_a, v3_top_a, "[[],{}]", "chain 1 should be an array of links" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct diff_names names;
		struct diff_side s;
		char err[256] = "";
		char *text = v3_text(bad[i].win, bad[i].top, bad[i].chains);
		CHECK_EQ_INT(diff_names_init(&names), 0);
		CHECK_EQ_INT(diff_side_init(&s, &names), 0);
		int e = add_text(&s, text, err, sizeof(err));
		if (e != -EINVAL || strncmp(err, "offset ", 7) != 0 || !strstr(err, bad[i].says))
			test_fail(__FILE__, __LINE__, "case %zu: %d \"%s\"", i, e, err);
		CHECK(s.func == NULL && !s.where.known && s.kind == DIFF_EMPTY);
		diff_side_free(&s);
		diff_names_free(&names);
		free(text);
	}
	/* No window at all; and version 2's entries in a version 3 summary. */
	char *text = v3_text(v3_win_a, v3_top_a, v3_chains_a);
	char *w = text ? strstr(text, "\"window\"") : NULL;
	if (CHECK(w != NULL)) {
		memcpy(w, "\"wind0w\"", 8);
		struct diff_names names;
		struct diff_side s;
		char err[256] = "";
		CHECK_EQ_INT(diff_names_init(&names), 0);
		CHECK_EQ_INT(diff_side_init(&s, &names), 0);
		CHECK_EQ_INT(add_text(&s, text, err, sizeof(err)), -EINVAL);
		CHECK(strstr(err, "no \"window\"") != NULL);
		diff_side_free(&s);
		diff_names_free(&names);
	}
	free(text);
	/* A version 2 top entry of 6 elements, or a link with 7, is refused as well. */
	static const char *const v2bad[] = {
		"{\"schema\":\"jitt.summary\",\"version\":2,\"thread\":\"ui\",\"modules\":[],"
		"\"functions\":[[-1,1,\"f\"]],\"top_window\":[[0,1,1,0,0,1]],\"contexts\":[]}",
		"{\"schema\":\"jitt.summary\",\"version\":2,\"thread\":\"ui\",\"modules\":[],"
		"\"functions\":[[-1,1,\"f\"]],\"chains\":[[[0,1,1,0,0,1,1]]],\"contexts\":[]}",
		"{\"schema\":\"jitt.summary\",\"version\":2,\"thread\":\"ui\",\"modules\":[],"
		"\"functions\":[],\"window\":{\"ns\":5,\"blocked_ns\":-6},\"contexts\":[]}",
	};
	for (size_t i = 0; i < sizeof(v2bad) / sizeof(v2bad[0]); i++) {
		struct diff_names names;
		struct diff_side s;
		char err[256] = "";
		CHECK_EQ_INT(diff_names_init(&names), 0);
		CHECK_EQ_INT(diff_side_init(&s, &names), 0);
		int e = add_text(&s, v2bad[i], err, sizeof(err));
		if (e != -EINVAL || strncmp(err, "offset ", 7) != 0)
			test_fail(__FILE__, __LINE__, "v2 case %zu: %d \"%s\"", i, e, err);
		diff_side_free(&s);
		diff_names_free(&names);
	}
}

TEST(diff_load_refuses_what_is_neither_trace_nor_summary)
{
	char path[600];
	static const char *const bodies[] = { "", "hello", "JITTRAC", "JITTRACE and garbage",
					      "  {\"schema\":" };
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		snprintf(path, sizeof(path), "%s/bad%zu", test_tmpdir(), i);
		FILE *f = fopen(path, "w");
		if (!CHECK(f != NULL))
			return;
		fputs(bodies[i], f);
		fclose(f);
		struct diff_names names;
		struct diff_side s;
		char err[256] = "";
		CHECK_EQ_INT(diff_names_init(&names), 0);
		CHECK_EQ_INT(diff_side_init(&s, &names), 0);
		int e = diff_side_load(&s, path, err, sizeof(err));
		if (e != -EINVAL || !err[0])
			test_fail(__FILE__, __LINE__, "body %zu: %d \"%s\"", i, e, err);
		diff_side_free(&s);
		diff_names_free(&names);
	}
	struct diff_names names;
	struct diff_side s;
	char err[256] = "";
	CHECK_EQ_INT(diff_names_init(&names), 0);
	CHECK_EQ_INT(diff_side_init(&s, &names), 0);
	snprintf(path, sizeof(path), "%s/missing", test_tmpdir());
	CHECK_EQ_INT(diff_side_load(&s, path, err, sizeof(err)), -ENOENT);
	CHECK_EQ_INT(diff_side_load(&s, test_tmpdir(), err, sizeof(err)), -EINVAL);
	diff_side_free(&s);
	diff_names_free(&names);
}

/* ---- the relaxed path condition against brute force ---- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static unsigned full_distance(const uint32_t *x, size_t n, const uint32_t *y, size_t m)
{
	unsigned d[64][64];
	for (size_t i = 0; i <= n; i++)
		for (size_t j = 0; j <= m; j++) {
			if (!i || !j) {
				d[i][j] = (unsigned)(i + j);
				continue;
			}
			unsigned v = d[i - 1][j - 1] + (x[i - 1] != y[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			d[i][j] = v;
		}
	return d[n][m];
}

TEST(diff_path_distance_is_the_edit_distance_within_the_bound)
{
	rng_state = 0x9e3779b97f4a7c15ull;
	for (int it = 0; it < 20000; it++) {
		uint32_t x[20], y[20];
		size_t n = rnd(12), m = rnd(12);
		uint32_t alphabet = 1 + rnd(4);
		for (size_t i = 0; i < n; i++)
			x[i] = rnd(alphabet);
		for (size_t i = 0; i < m; i++)
			y[i] = rnd(alphabet);
		unsigned bound = rnd(6), want = full_distance(x, n, y, m);
		unsigned got = diff_path_distance(x, n, y, m, bound);
		if (want <= bound ? got != want : got != bound + 1) {
			test_fail(__FILE__, __LINE__, "n %zu m %zu bound %u: %u, want %u", n, m,
				  bound, got, want);
			return;
		}
	}
}

/* A random forest: threads t0, t1; functions from a small alphabet, so paths collide. */
static int random_side(struct diff_side *s, int nodes, int alphabet)
{
	char name[16];
	for (int i = 0; i < nodes; i++) {
		uint32_t parent = 0, label, v;
		if (s->n > 1 && rnd(8) != 0)
			parent = 1 + rnd(s->n - 1);
		if (parent == 0)
			snprintf(name, sizeof(name), "t%u", rnd(2));
		else if (s->node[parent].depth >= 12)
			continue;
		else
			snprintf(name, sizeof(name), "f%u", rnd((uint32_t)alphabet));
		if (diff_intern(s->names, name, &label) ||
		    diff_side_child(s, parent, label, &v, NULL))
			return -ENOMEM;
		s->node[v].cost_ns += rnd(1000);
	}
	return 0;
}

struct ref_cand {
	uint32_t v, w, d, leaf, dd;
};

static int ref_cmp(const void *pa, const void *pb)
{
	const struct ref_cand *a = pa, *b = pb;
	if (a->d != b->d)
		return a->d < b->d ? -1 : 1;
	if (a->leaf != b->leaf)
		return a->leaf < b->leaf ? -1 : 1;
	if (a->dd != b->dd)
		return a->dd < b->dd ? -1 : 1;
	if (a->v != b->v)
		return a->v < b->v ? -1 : 1;
	return a->w < b->w ? -1 : a->w > b->w;
}

TEST(diff_relaxed_matching_equals_brute_force)
{
	rng_state = 0x2545f4914f6cdd1dull;
	size_t all_relaxed = 0;
	for (int round = 0; round < 60; round++) {
		struct diff_names names;
		struct diff_side a, b;
		CHECK_EQ_INT(diff_names_init(&names), 0);
		CHECK_EQ_INT(diff_side_init(&a, &names), 0);
		CHECK_EQ_INT(diff_side_init(&b, &names), 0);
		int alphabet = 2 + rnd(6);
		CHECK_EQ_INT(random_side(&a, 50 + (int)rnd(250), alphabet), 0);
		CHECK_EQ_INT(random_side(&b, 50 + (int)rnd(250), alphabet), 0);
		unsigned alpha = rnd(6);
		struct diff_result r;
		CHECK_EQ_INT(diff_match(&a, &b, alpha, &r), 0);

		/* Reference: equal paths, then every pair of the rest compared. */
		uint32_t *ma = malloc(a.n * 4), *mb = malloc(b.n * 4), pa[16], pb[16];
		struct ref_cand *c = malloc((size_t)a.n * b.n * sizeof(*c));
		size_t nc = 0;
		for (uint32_t v = 0; v < a.n; v++)
			ma[v] = DIFF_NONE;
		for (uint32_t w = 0; w < b.n; w++)
			mb[w] = DIFF_NONE;
		for (uint32_t v = 1; v < a.n; v++) {
			uint32_t n = diff_path(&a, v, pa, 16), w = diff_side_find(&b, pa, n);
			if (w != DIFF_NONE) {
				ma[v] = w;
				mb[w] = v;
			}
		}
		for (uint32_t v = 1; v < a.n; v++) {
			if (ma[v] != DIFF_NONE)
				continue;
			uint32_t n = diff_path(&a, v, pa, 16);
			for (uint32_t w = 1; w < b.n && alpha; w++) {
				uint32_t m = diff_path(&b, w, pb, 16);
				if (mb[w] != DIFF_NONE || pa[0] != pb[0])
					continue;
				unsigned d = full_distance(pa, n, pb, m);
				if (d <= alpha)
					c[nc++] =
						(struct ref_cand){ v, w, d, pa[n - 1] != pb[m - 1],
								   n > m ? n - m : m - n };
			}
		}
		qsort(c, nc, sizeof(*c), ref_cmp);
		size_t relaxed = 0;
		for (size_t i = 0; i < nc; i++)
			if (ma[c[i].v] == DIFF_NONE && mb[c[i].w] == DIFF_NONE) {
				ma[c[i].v] = c[i].w;
				mb[c[i].w] = c[i].v;
				relaxed++;
			}
		CHECK_EQ_U64(r.relaxed, relaxed);
		all_relaxed += relaxed;
		CHECK_EQ_U64(r.n, (size_t)a.n - 1 + b.n - 1 - (r.exact + r.relaxed));
		size_t wrong = 0;
		for (size_t i = 0; i < r.n; i++) {
			const struct diff_entry *e = &r.e[i];
			if (e->a != DIFF_NONE ? ma[e->a] != e->b : mb[e->b] != DIFF_NONE)
				wrong++;
		}
		CHECK_EQ_U64(wrong, 0);
		free(ma);
		free(mb);
		free(c);
		diff_result_free(&r);
		diff_side_free(&a);
		diff_side_free(&b);
		diff_names_free(&names);
	}
	CHECK(all_relaxed > 1000); /* the rounds did exercise the relaxed condition */
}

TEST(diff_tens_of_thousands_of_contexts)
{
	/* Two wide and deep trees of 40,000 contexts each, B a perturbed copy of A: some
	 * functions renamed, some wrappers inserted, a recursion 3,000 deep behind one. Every
	 * context must come out once, whatever is matched. */
	rng_state = 0x1234567887654321ull;
	struct diff_names names;
	struct diff_side a, b;
	CHECK_EQ_INT(diff_names_init(&names), 0);
	CHECK_EQ_INT(diff_side_init(&a, &names), 0);
	CHECK_EQ_INT(diff_side_init(&b, &names), 0);
	uint32_t *map = malloc(60000 * sizeof(*map)), lab, wrap;
	char name[32];
	CHECK_EQ_INT(diff_intern(&names, "wrapper", &wrap), 0);
	map[0] = 0;
	for (uint32_t i = 0; i < 40000; i++) {
		uint32_t parent = i < 4 ? 0 : 1 + rnd(a.n - 1), v, w, bp = map[parent];
		snprintf(name, sizeof(name), i < 4 ? "thread%u" : "fn%u", i < 4 ? i : rnd(3000));
		diff_intern(&names, name, &lab);
		if (diff_side_child(&a, parent, lab, &v, NULL) != 0)
			break;
		a.node[v].cost_ns = rnd(1000);
		if (parent && rnd(50) == 0)
			diff_side_child(&b, bp, wrap, &bp, NULL);
		if (parent && rnd(50) == 0) {
			snprintf(name, sizeof(name), "renamed%u", rnd(100));
			diff_intern(&names, name, &lab);
		}
		diff_side_child(&b, bp, lab, &w, NULL);
		b.node[w].cost_ns = rnd(1000);
		map[v] = w;
	}
	uint32_t v = 1, w = 0;
	diff_intern(&names, "recurse", &lab);
	diff_side_child(&b, map[1], wrap, &w, NULL);
	for (int i = 0; i < 3000; i++) {
		diff_side_child(&a, v, lab, &v, NULL);
		diff_side_child(&b, w, lab, &w, NULL);
	}
	struct diff_result r;
	CHECK_EQ_INT(diff_match(&a, &b, 1, &r), 0);
	uint8_t *seen_a = calloc(a.n, 1), *seen_b = calloc(b.n, 1);
	size_t twice = 0;
	for (size_t i = 0; i < r.n; i++) {
		if (r.e[i].a != DIFF_NONE && seen_a[r.e[i].a]++)
			twice++;
		if (r.e[i].b != DIFF_NONE && seen_b[r.e[i].b]++)
			twice++;
	}
	CHECK_EQ_U64(twice, 0);
	CHECK_EQ_U64(r.exact + r.relaxed + r.gone, a.n - 1);
	CHECK_EQ_U64(r.exact + r.relaxed + r.added, b.n - 1);
	CHECK(r.relaxed >= 3000); /* the recursion behind the wrapper, at least */
	free(seen_a);
	free(seen_b);
	free(map);
	diff_result_free(&r);
	diff_side_free(&a);
	diff_side_free(&b);
	diff_names_free(&names);
}

/* ---- the JSON reader ---- */

static int parse(struct json_doc *d, const char *s, char *err, size_t size)
{
	/* An exact-size copy without a terminator: a read past the end is a real overrun. */
	size_t n = strlen(s);
	char *copy = malloc(n ? n : 1);
	memcpy(copy, s, n);
	int e = json_parse(d, copy, n, err, size);
	free(copy);
	return e;
}

TEST(json_reads_valid_documents)
{
	struct json_doc d;
	char err[128];
	const char *doc = " {\"a\":[1,-2,3.5,1e3,true,false,null,\"x\\u00e9\\ud83d\\ude00\\n\\/\"],"
			  "\"b\":{},\"c\":[],\"a\":\"second\",\"big\":-9223372036854775808,"
			  "\"huge\":9223372036854775808,\"z\":-0} \n";
	if (!CHECK(parse(&d, doc, err, sizeof(err)) == 0))
		return;
	CHECK_EQ_INT(json_type(&d, 0), JSON_OBJECT);
	CHECK_EQ_U64(json_len(&d, 0), 7);
	uint32_t a = json_get(&d, 0, "a"), x;
	CHECK_EQ_INT(json_type(&d, a), JSON_ARRAY); /* the first of two "a" */
	CHECK_EQ_U64(json_len(&d, a), 8);
	int64_t v = 0;
	x = json_first(&d, a);
	CHECK_EQ_INT(json_int(&d, x, &v), 0);
	CHECK_EQ_INT(v, 1);
	x = json_next(&d, x);
	CHECK_EQ_INT(json_int(&d, x, &v), 0);
	CHECK_EQ_INT(v, -2);
	x = json_next(&d, x);
	CHECK_EQ_INT(json_int(&d, x, &v), -EINVAL); /* 3.5 */
	CHECK(d.v[x].d == 3.5);
	x = json_next(&d, x);
	CHECK_EQ_INT(json_int(&d, x, &v), 0);
	CHECK_EQ_INT(v, 1000);
	x = json_next(&d, x);
	CHECK_EQ_INT(json_type(&d, x), JSON_TRUE);
	x = json_next(&d, json_next(&d, x));
	CHECK_EQ_INT(json_type(&d, x), JSON_NULL);
	x = json_next(&d, x);
	size_t len = 0;
	const char *s = json_str(&d, x, &len);
	CHECK_STR(s, "x\xc3\xa9\xf0\x9f\x98\x80\n/");
	CHECK_EQ_U64(len, 9);
	CHECK_EQ_U64(json_next(&d, x), JSON_NONE);
	CHECK_EQ_U64(json_len(&d, json_get(&d, 0, "b")), 0);
	CHECK_EQ_U64(json_first(&d, json_get(&d, 0, "c")), JSON_NONE);
	CHECK_EQ_INT(json_int(&d, json_get(&d, 0, "big"), &v), 0);
	CHECK(v == INT64_MIN);
	CHECK_EQ_INT(json_int(&d, json_get(&d, 0, "huge"), &v), -ERANGE);
	CHECK_EQ_INT(json_int(&d, json_get(&d, 0, "z"), &v), 0);
	CHECK_EQ_INT(v, 0);
	CHECK_EQ_U64(json_get(&d, 0, "missing"), JSON_NONE);
	CHECK_EQ_U64(json_get(&d, a, "a"), JSON_NONE); /* not an object */
	CHECK_EQ_INT(json_type(&d, JSON_NONE), -1);
	json_free(&d);

	static const char *const scalars[] = { "1",	 "\"s\"",  " null ",
					       "[[[]]]", "0.5e-3", "\"\\\"\\\\\\b\\f\\r\\t\"" };
	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
		if (parse(&d, scalars[i], err, sizeof(err)) != 0)
			test_fail(__FILE__, __LINE__, "%s: %s", scalars[i], err);
		json_free(&d);
	}
}

TEST(json_refuses_garbage_naming_the_offset)
{
	static const struct {
		const char *text;
		size_t at;
	} bad[] = {
		{ "", 0 },
		{ "  ", 2 },
		{ "{", 1 },
		{ "[1,]", 3 },
		{ "{\"a\":1,}", 7 },
		{ "01", 0 },
		{ "1.", 2 },
		{ "1e", 2 },
		{ "-", 1 },
		{ "+1", 0 },
		{ ".5", 0 },
		{ "tru", 0 },
		{ "nul", 0 },
		{ "NaN", 0 },
		{ "Infinity", 0 },
		{ "\"\\x\"", 1 },
		{ "\"\\u12G4\"", 5 },
		{ "\"\\u12", 3 },
		{ "\"\\ud800\"", 1 },
		{ "\"\\udc00\"", 1 },
		{ "\"\\ud800\\u0041\"", 1 },
		{ "\"a\nb\"", 2 },
		{ "\"\xc0\xaf\"", 1 },
		{ "\"\xed\xa0\x80\"", 1 },
		{ "\"\xf4\x90\x80\x80\"", 1 },
		{ "\"\xe2\x82\"", 1 },
		{ "\"abc", 0 },
		{ "[1]x", 3 },
		{ "{1:2}", 1 },
		{ "{\"a\" 1}", 5 },
		{ "[1 2]", 3 },
		{ "\xef\xbb\xbf{}", 0 },
		{ "/*c*/{}", 0 },
		{ "1e999", 0 },
		{ "-1e400", 0 },
		/* a name with a NUL would answer a lookup of its prefix */
		{ "{\"schema\\u0000x\":1}", 1 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_doc d;
		char err[128] = "", want[32];
		int e = parse(&d, bad[i].text, err, sizeof(err));
		snprintf(want, sizeof(want), "offset %zu: ", bad[i].at);
		if (e != -EINVAL || strncmp(err, want, strlen(want)) != 0)
			test_fail(__FILE__, __LINE__, "case %zu: %d \"%s\"", i, e, err);
		json_free(&d);
	}
}

TEST(json_deep_nesting_and_huge_numbers)
{
	enum { N = 100000 };
	char *s = malloc(2 * N + 1);
	struct json_doc d;
	char err[128];
	memset(s, '[', N);
	memset(s + N, ']', N);
	s[2 * N] = '\0';
	CHECK_EQ_INT(parse(&d, s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "nested deeper than 64") != NULL);
	json_free(&d);
	/* 64 levels are fine, 65 are not. */
	memset(s, '[', 64);
	memset(s + 64, ']', 64);
	s[128] = '\0';
	CHECK_EQ_INT(parse(&d, s, err, sizeof(err)), 0);
	json_free(&d);
	memset(s, '[', 65);
	memset(s + 65, ']', 65);
	s[130] = '\0';
	CHECK_EQ_INT(parse(&d, s, err, sizeof(err)), -EINVAL);
	json_free(&d);
	memset(s, '{', 1);
	for (int i = 0; i < 1000; i++)
		memcpy(s + 1 + 5 * i, "\"a\":{", 5);
	s[5001] = '\0';
	CHECK_EQ_INT(parse(&d, s, err, sizeof(err)), -EINVAL);
	json_free(&d);
	/* 1e300 written out is a finite double but no int64; 1e99999 is out of range. */
	s[0] = '1';
	memset(s + 1, '0', 300);
	s[301] = '\0';
	CHECK_EQ_INT(parse(&d, s, err, sizeof(err)), 0);
	int64_t v;
	CHECK_EQ_INT(json_int(&d, 0, &v), -ERANGE);
	json_free(&d);
	memset(s + 1, '0', N - 1);
	s[N] = '\0';
	CHECK_EQ_INT(parse(&d, s, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "out of range") != NULL);
	json_free(&d);
	memcpy(s, "0.", 2);
	memset(s + 2, '0', N - 3);
	s[N - 1] = '1';
	s[N] = '\0';
	CHECK_EQ_INT(parse(&d, s, err, sizeof(err)), 0);
	json_free(&d);
	free(s);
}

static void check_summary_input(const char *text, size_t n, const char *what, size_t i)
{
	struct json_doc d;
	struct diff_names names;
	struct diff_side s;
	char err[256] = "";
	char *copy = malloc(n ? n : 1);
	memcpy(copy, text, n);
	int e = json_parse(&d, copy, n, err, sizeof(err));
	json_free(&d);
	if (e != 0 && (e != -EINVAL || strncmp(err, "offset ", 7) != 0))
		test_fail(__FILE__, __LINE__, "%s %zu: parse %d \"%s\"", what, i, e, err);
	if (diff_names_init(&names) || diff_side_init(&s, &names)) {
		test_fail(__FILE__, __LINE__, "out of memory");
		free(copy);
		return;
	}
	err[0] = '\0';
	e = diff_side_add_summary(&s, copy, n, err, sizeof(err));
	if (e != 0 && (e != -EINVAL || strncmp(err, "offset ", 7) != 0))
		test_fail(__FILE__, __LINE__, "%s %zu: summary %d \"%s\"", what, i, e, err);
	diff_side_free(&s);
	diff_names_free(&names);
	free(copy);
}

TEST(json_every_truncation_and_mutation_of_a_summary_fails_cleanly)
{
	size_t n = strlen(summary_a);
	/* Every proper prefix is refused (an object is not closed until its last byte). */
	for (size_t k = 0; k < n; k++) {
		struct json_doc d;
		char err[128] = "";
		char *copy = malloc(k ? k : 1);
		memcpy(copy, summary_a, k);
		int e = json_parse(&d, copy, k, err, sizeof(err));
		if (e != -EINVAL || strncmp(err, "offset ", 7) != 0)
			test_fail(__FILE__, __LINE__, "prefix %zu: %d \"%s\"", k, e, err);
		json_free(&d);
		free(copy);
		check_summary_input(summary_a, k, "prefix", k);
	}
	/* Thousands of random byte changes, insertions and deletions. */
	rng_state = 0xdeadbeefcafef00dull;
	char buf[sizeof(summary_a) + 16];
	for (size_t it = 0; it < 5000; it++) {
		size_t len = n;
		memcpy(buf, summary_a, n);
		for (uint32_t m = 1 + rnd(4); m; m--) {
			uint32_t at = rnd((uint32_t)len), op = rnd(3);
			unsigned char c = (unsigned char)rnd(256);
			if (rnd(2)) /* often a byte that means something to JSON */
				c = (unsigned char)"{}[]\",:\\0-9eE.tfnu \x80\xff"[rnd(22)];
			if (op == 0) {
				buf[at] = (char)c;
			} else if (op == 1 && len < sizeof(buf)) {
				memmove(buf + at + 1, buf + at, len - at);
				buf[at] = (char)c;
				len++;
			} else if (len > 1) {
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
			}
		}
		check_summary_input(buf, len, "mutation", it);
	}
}

TEST(json_escapes_what_it_writes)
{
	char out[256] = "";
	FILE *f = fmemopen(out, sizeof(out), "w");
	if (!CHECK(f != NULL))
		return;
	/* plain ASCII out (agent_json_fput): DEL, a C1 control (U+009B, CSI) and a bidi
	 * override (U+202E) escaped like the C0 ones, never raw */
	agent_json_fput(f, "a\"b\\c\n\x01\xc3\xa9\xff\x7f\xc2\x9b\xe2\x80\xae", 16);
	fclose(f);
	CHECK_STR(out, "\"a\\\"b\\\\c\\u000a\\u0001\\u00e9\\ufffd\\u007f\\u009b\\u202e\"");
	struct json_doc d;
	char err[64];
	CHECK_EQ_INT(json_parse(&d, out, strlen(out), err, sizeof(err)), 0);
	json_free(&d);
}

/* The version 3 reader (window, sched, top entries, chain links) against the same mutations:
 * every input is read or refused with an offset, never anything else. */
TEST(json_every_mutation_of_a_v3_summary_fails_cleanly)
{
	char *text = v3_text(v3_win_b, v3_top_b, v3_chains_b);
	if (!CHECK(text != NULL))
		return;
	size_t n = strlen(text);
	check_summary_input(text, n, "v3 whole", 0);
	for (size_t k = 0; k < n; k += 7)
		check_summary_input(text, k, "v3 prefix", k);
	rng_state = 0x0123456789abcdefull;
	char *buf = malloc(n + 16);
	for (size_t it = 0; buf && it < 5000; it++) {
		size_t len = n;
		memcpy(buf, text, n);
		for (uint32_t m = 1 + rnd(3); m; m--) {
			uint32_t at = rnd((uint32_t)len), op = rnd(3);
			unsigned char c = (unsigned char)"{}[]\",:-0123456789.e "[rnd(22)];
			if (op == 0) {
				buf[at] = (char)c;
			} else if (op == 1 && len < n + 16) {
				memmove(buf + at + 1, buf + at, len - at);
				buf[at] = (char)c;
				len++;
			} else if (len > 1) {
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
			}
		}
		check_summary_input(buf, len, "v3 mutation", it);
	}
	free(buf);
	free(text);
}
