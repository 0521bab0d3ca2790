/* SPDX-License-Identifier: MIT */
/*
 * The summary on synthetic traces written through the ring library (tests/synth.h), with
 * exactly known times: windows, top self time, chains, differential ranking, frame
 * statistics, blocked-on with wake-ups followed, and the edge cases of a ring: empty, one
 * record, only exits, a wide record cut by the wrap, recursion 10,000 deep, a window with no
 * calls.
 */
#include "harness.h"
#include "synth.h"
#include "agent/marks.h"
#include "agent/analysis/outer.h"
#include "agent/analysis/summary.h"
#include "agent/analysis/summary_out.h"
#include "agent/analysis/symbols.h"
#include "hal/sched.h"
#include "hal/timer.h"
#include "ringbuf/tracefile.h"

#include <stdlib.h>
#include <string.h>

/* Functions of this program, so ids resolve to names; distinct bodies, so the compiler
 * cannot fold them into one. */
static volatile int sink;
#define FN(name, v)                                            \
	__attribute__((noinline, used)) static void name(void) \
	{                                                      \
		sink = v;                                      \
	}
FN(fn_main, 1)
FN(fn_loop, 2)
FN(fn_frame, 3)
FN(fn_layout, 4)
FN(fn_draw, 5)
FN(fn_culprit, 6)
FN(fn_wait_result, 7)
FN(fn_worker, 8)
FN(fn_slow_task, 9)
FN(fn_io, 10)
FN(fn_recurse, 11)

static uint64_t key(void (*fn)(void))
{
	return (uint64_t)1 << 48 | synth_id(fn); /* module 0: this program */
}

#define ID(fn) synth_id(fn)

struct fixture {
	struct rb_trace t;
	struct summary s;
	int ok;
};

static int summarise(struct synth_thread *th, int n, const char *reason, unsigned k,
		     struct fixture *fx)
{
	char path[512];
	char err[256];
	memset(fx, 0, sizeof(*fx));
	if (!CHECK(synth_write(th, n, reason, path, sizeof(path)) == 0))
		return 0;
	/* JITT_SUMMARY_KEEP=dir keeps the traces, to look at with `jitt summarize`. */
	const char *keep = getenv("JITT_SUMMARY_KEEP");
	if (keep) {
		char cmd[1200];
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s/%s.jtr'", path, keep, reason);
		if (system(cmd) != 0)
			printf("    could not keep %s\n", path);
	}
	if (!CHECK(rb_trace_open(path, &fx->t, err, sizeof(err)) == 0))
		return 0;
	int e = summary_build(&fx->s, &fx->t, k);
	if (!CHECK(e == 0)) {
		rb_trace_close(&fx->t);
		return 0;
	}
	fx->ok = 1;
	return 1;
}

static void release(struct fixture *fx)
{
	if (fx->ok) {
		summary_free(&fx->s);
		rb_trace_close(&fx->t);
	}
}

/* The fixture's summary as JSON, in a malloc'd buffer (NULL on failure), its size in *size. */
static char *json_of(struct fixture *fx, size_t *size)
{
	struct agent_symbols syms;
	char *buf = NULL;
	*size = 0;
	FILE *m = open_memstream(&buf, size);
	if (!CHECK(m && agent_symbols_open(&syms, &fx->t) == 0)) {
		if (m)
			fclose(m);
		free(buf);
		return NULL;
	}
	CHECK_EQ_INT(summary_write_json(m, &fx->s, &syms), 0);
	fclose(m);
	agent_symbols_close(&syms);
	return buf;
}

/* One normal frame at t: frame { layout 100; draw 200 }, 400 ticks in all. */
static void normal_frame(struct synth_thread *ui, uint64_t t)
{
	synth_special(ui, t, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_entry(ui, t + 10, ID(fn_frame));
	synth_entry(ui, t + 20, ID(fn_layout));
	synth_exit(ui, t + 120);
	synth_entry(ui, t + 130, ID(fn_draw));
	synth_exit(ui, t + 330);
	synth_exit(ui, t + 390);
}

/* A frame with no calls at t, 4 ticks long: a baseline where nothing ran. */
static void empty_frame(struct synth_thread *ui, uint64_t t)
{
	synth_special(ui, t, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_special(ui, t + 4, RB_MARK, AGENT_MARK_FRAME_END);
}

/* The slow frames below last this long: over any budget at any timer rate up to 6 GHz. */
#define SLOW 100000000ull

TEST(summary_slow_frame_culprit_chain_ranking_and_frame_stats)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	synth_entry(&ui, 1, ID(fn_main));
	synth_entry(&ui, 2, ID(fn_loop));
	uint64_t t = 1000;
	for (int i = 0; i < 10; i++, t += 1000)
		normal_frame(&ui, t);
	/* The slow frame: layout as usual, draw calls the culprit for SLOW ticks. */
	uint64_t w0 = t;
	synth_special(&ui, t, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_entry(&ui, t + 10, ID(fn_frame));
	synth_entry(&ui, t + 20, ID(fn_layout));
	synth_exit(&ui, t + 120);
	synth_entry(&ui, t + 130, ID(fn_draw));
	synth_entry(&ui, t + 140, ID(fn_culprit));
	synth_exit(&ui, t + 140 + SLOW);
	synth_exit(&ui, t + 330 + SLOW);
	synth_exit(&ui, t + 390 + SLOW);
	uint64_t w1 = t + 400 + SLOW;
	synth_special(&ui, w1, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
	normal_frame(&ui, w1);

	struct fixture fx;
	if (!summarise(&ui, 1, "jank", 10, &fx))
		return;
	struct summary *s = &fx.s;
	CHECK(s->anomaly_marked);
	CHECK_EQ_INT(s->anomaly_arg, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
	CHECK_EQ_INT(s->window_kind, SUMMARY_WINDOW_FRAME);
	CHECK_EQ_U64(s->w0, w0);
	CHECK_EQ_U64(s->w1, w1);
	CHECK_EQ_U64(s->window_blocked, 0);
	CHECK_EQ_INT(s->nhops, 0);

	/* Top self time in the window: the culprit, exactly; then draw (200 - 10 = 190). */
	if (CHECK(s->ntop_window >= 4)) {
		CHECK_EQ_U64(s->top_window[0].key, key(fn_culprit));
		CHECK_EQ_U64(s->top_window[0].self, SLOW);
		CHECK_EQ_U64(s->top_window[0].calls, 1);
		CHECK_EQ_U64(s->top_window[1].key, key(fn_draw));
		CHECK_EQ_U64(s->top_window[1].self, 200);
	}
	/* The one top-level call (main, still running at the freeze: not cut by the ring, its
	 * entry is there) leads down to the culprit. */
	if (CHECK(s->nchains == 1)) {
		const struct summary_chain *c = &s->chains[0];
		if (CHECK(c->n == 5)) {
			CHECK_EQ_U64(c->f[0].key, key(fn_main));
			CHECK_EQ_U64(c->f[0].incl, w1 - w0);
			CHECK(c->f[0].running && !c->f[0].truncated);
			CHECK_EQ_U64(c->f[2].key, key(fn_frame));
			CHECK_EQ_U64(c->f[2].incl, 380 + SLOW);
			CHECK_EQ_U64(c->f[3].key, key(fn_draw));
			CHECK_EQ_U64(c->f[3].incl, 200 + SLOW);
			CHECK_EQ_U64(c->f[3].self, 200);
			CHECK_EQ_U64(c->f[4].key, key(fn_culprit));
			CHECK_EQ_U64(c->f[4].incl, SLOW);
			CHECK_EQ_U64(c->f[4].self, SLOW);
		}
	}
	/* Against the ten normal frames: the culprit's path rises, costed exactly: main,
	 * loop and frame have the same self time as in a normal frame (0, 0 and 10 + 10 +
	 * 60: the frame's own 80), draw 200 against 200, the culprit SLOW against 0. */
	CHECK_EQ_U64(s->base_frames, 10);
	if (CHECK(s->ncontexts >= 2)) {
		const struct summary_context *c = &s->contexts[0];
		if (CHECK(c->n == 5)) {
			CHECK_EQ_U64(c->key[4], key(fn_culprit));
			CHECK_EQ_U64(c->self[4], SLOW);
			CHECK_EQ_U64(c->base[4], 0);
			CHECK_EQ_U64(c->self[3], c->base[3]); /* draw: unchanged */
			/* main and loop own the gaps between frames in the baseline, 610 per
			 * frame; in the window only the 10 ticks before frame() and 10 after. */
			CHECK_EQ_INT(c->cost, (int64_t)SLOW + (int64_t)(c->self[0] + c->self[1]) -
						      (int64_t)(c->base[0] + c->base[1]));
		}
		/* The layout path is unchanged: it scores what its ancestors score, no more. */
		const struct summary_context *l = &s->contexts[1];
		CHECK_EQ_U64(l->key[l->n - 1], key(fn_layout));
		CHECK_EQ_U64(l->self[l->n - 1], l->base[l->n - 1]);
	}
	/* Frames: eleven complete (ten normal and the slow one; the last, begun at the
	 * anomaly, never ended); median 1000, p99 the slow one. */
	const struct summary_frames *fr = &s->frames;
	CHECK_EQ_U64(fr->count, 11);
	CHECK_EQ_U64(fr->median, 1000);
	CHECK_EQ_U64(fr->p99, w1 - w0);
	CHECK_EQ_U64(fr->over_budget, 1);
	CHECK_EQ_U64(fr->this_frame, w1 - w0);
	CHECK(fr->outlier);
	CHECK_EQ_U64(fr->mean, 1000);
	CHECK_EQ_U64(fr->sigma, 0);

	/* The names come from this program's own symbols. */
	struct agent_symbols syms;
	if (CHECK(agent_symbols_open(&syms, &fx.t) == 0)) {
		char name[64];
		agent_key_name(&syms, s->top_window[0].key, name, sizeof(name));
		CHECK_STR(name, "fn_culprit");
		agent_symbols_close(&syms);
	}
	release(&fx);
	synth_free(&ui);
}

TEST(summary_blocked_frame_names_the_waker_and_its_work_transitively)
{
	struct synth_thread th[3];
	synth_init(&th[0], "ui", 100, 0, 0);
	synth_init(&th[1], "worker", 101, 0, 0);
	synth_init(&th[2], "io", 102, 0, 0);
	struct synth_thread *ui = &th[0], *wk = &th[1], *io = &th[2];
	normal_frame(ui, 1000);
	normal_frame(ui, 2000);
	normal_frame(ui, 3000);
	/* Slow frame [4000, ...): the UI waits on 0x77 in fn_wait_result. */
	uint64_t t = 4000, wake = t + 100 + SLOW;
	synth_special(ui, t, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_entry(ui, t + 10, ID(fn_frame));
	synth_entry(ui, t + 20, ID(fn_wait_result));
	synth_special(ui, t + 30, RB_WAIT_BEGIN, 0x77);
	synth_special(ui, wake + 5, RB_WAIT_END, 0x77);
	synth_exit(ui, wake + 10);
	synth_exit(ui, wake + 20);
	synth_special(ui, wake + 30, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_EXPLICIT);
	/* The worker: slow_task from t + 50 for SLOW / 4, then waits on 0x88 until io
	 * wakes it (most of the UI's wait), a little more work, then wakes 0x77. */
	synth_entry(wk, t + 40, ID(fn_worker));
	synth_entry(wk, t + 50, ID(fn_slow_task));
	synth_exit(wk, t + 50 + SLOW / 4);
	synth_special(wk, t + 60 + SLOW / 4, RB_WAIT_BEGIN, 0x88);
	synth_special(wk, wake - 40, RB_WAIT_END, 0x88);
	synth_special(wk, wake, RB_WAKE, 0x77);
	synth_exit(wk, wake + 1);
	/* io: fn_io for most of the worker's wait, then wakes 0x88. */
	synth_entry(io, t + 70 + SLOW / 4, ID(fn_io));
	synth_exit(io, wake - 60);
	synth_special(io, wake - 50, RB_WAKE, 0x88);

	struct fixture fx;
	if (!summarise(th, 3, "explicit", 10, &fx))
		return;
	struct summary *s = &fx.s;
	CHECK_EQ_INT(s->thread, 0);
	CHECK_EQ_U64(s->w0, t);
	CHECK_EQ_U64(s->w1, wake + 30);
	CHECK_EQ_U64(s->window_blocked, wake + 5 - (t + 30));
	if (CHECK(s->nhops == 2)) {
		const struct summary_hop *h = &s->hops[0];
		CHECK_EQ_INT(h->thread, 0);
		CHECK_EQ_U64(h->object, 0x77);
		CHECK_EQ_U64(h->waiter, key(fn_wait_result));
		CHECK_EQ_U64(h->wait_begin, t + 30);
		CHECK_EQ_U64(h->wait_end, wake + 5);
		CHECK(!h->still_waiting);
		CHECK_EQ_INT(h->waker, 1);
		CHECK_EQ_U64(h->wake_ts, wake);
		/* The worker meanwhile: slow_task, exactly a quarter of SLOW, first. */
		if (CHECK(h->ntop >= 1)) {
			CHECK_EQ_U64(h->top[0].key, key(fn_slow_task));
			CHECK_EQ_U64(h->top[0].self, SLOW / 4);
		}
		/* Its longest chain: worker, which waited longer than slow_task ran. */
		if (CHECK(h->chain.n >= 1)) {
			CHECK_EQ_U64(h->chain.f[0].key, key(fn_worker));
			CHECK_EQ_U64(h->chain.f[0].blocked, wake - 40 - (t + 60 + SLOW / 4));
		}
		/* Then the worker itself was mostly blocked, on 0x88, woken by io. */
		const struct summary_hop *g = &s->hops[1];
		CHECK_EQ_INT(g->thread, 1);
		CHECK_EQ_U64(g->object, 0x88);
		CHECK_EQ_U64(g->waiter, key(fn_worker));
		CHECK_EQ_INT(g->waker, 2);
		CHECK_EQ_U64(g->wake_ts, wake - 50);
		if (CHECK(g->ntop >= 1)) {
			CHECK_EQ_U64(g->top[0].key, key(fn_io));
			CHECK_EQ_U64(g->top[0].self, wake - 60 - (t + 70 + SLOW / 4));
		}
	}
	release(&fx);
	for (int i = 0; i < 3; i++)
		synth_free(&th[i]);
}

TEST(summary_without_frame_marks_uses_the_span_before_the_anomaly)
{
	struct synth_thread w;
	synth_init(&w, "worker", 7, 0, 0);
	/* Before the window: fn_io in a loop (always expensive, no change); in the window
	 * (the last CONFIG_AGENT_WINDOW_MS), fn_io as before plus fn_culprit, new. */
	struct fixture fx0;
	uint64_t hz = 0;
	{
		/* The window's length in ticks depends on this machine's timer rate. */
		struct synth_thread probe;
		synth_init(&probe, "p", 1, 0, 0);
		if (!summarise(&probe, 1, "probe", 1, &fx0))
			return;
		hz = fx0.t.timer_hz;
		release(&fx0);
		synth_free(&probe);
	}
	uint64_t span = (uint64_t)CONFIG_AGENT_WINDOW_MS * hz / 1000;
	uint64_t end = 4 * span, t = 0, step = span / 8;
	synth_entry(&w, 1, ID(fn_worker));
	for (t = 10; t + step <= end - step; t += step) {
		synth_entry(&w, t, ID(fn_io));
		synth_exit(&w, t + step * 3 / 4);
	}
	synth_entry(&w, t, ID(fn_culprit));
	synth_exit(&w, t + 3);
	synth_special(&w, end, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_EXTERNAL);
	synth_exit(&w, end + 1);

	struct fixture fx;
	if (!summarise(&w, 1, "external", 10, &fx))
		return;
	struct summary *s = &fx.s;
	CHECK_EQ_INT(s->window_kind, SUMMARY_WINDOW_SPAN);
	CHECK_EQ_U64(s->w1, end);
	CHECK_EQ_U64(s->w0, end - span);
	CHECK_EQ_U64(s->base_frames, 0);
	CHECK_EQ_U64(s->frames.count, 0);
	/* The culprit is new: its path comes first although fn_io ran far longer. */
	if (CHECK(s->ncontexts >= 2)) {
		const struct summary_context *c = &s->contexts[0];
		CHECK_EQ_U64(c->key[c->n - 1], key(fn_culprit));
		CHECK_EQ_U64(c->self[c->n - 1], 3);
		CHECK_EQ_U64(c->base[c->n - 1], 0);
	}
	if (CHECK(s->ntop_window >= 1))
		CHECK_EQ_U64(s->top_window[0].key, key(fn_io));
	release(&fx);
	synth_free(&w);
}

TEST(summary_edge_cases)
{
	struct fixture fx;
	struct synth_thread a;

	/* An empty ring: only the sync record rb_start writes. */
	synth_init(&a, "empty", 1, 0, 500);
	if (summarise(&a, 1, "empty", 10, &fx)) {
		CHECK_EQ_U64(fx.s.ntop_window + fx.s.ntop_trace + fx.s.nchains + fx.s.ncontexts, 0);
		CHECK_EQ_U64(fx.s.w1, 500);
		release(&fx);
	}
	synth_free(&a);

	/* One record: a ring of two slots holding one exit (and the sync's tag, whose
	 * payload the exit overwrote). */
	synth_init(&a, "one", 1, 2, 500);
	synth_exit(&a, 600);
	if (summarise(&a, 1, "one", 10, &fx)) {
		CHECK_EQ_U64(fx.s.records, 1);
		CHECK_EQ_U64(fx.s.ntop_trace, 1); /* the call it ended, unknown and cut */
		if (fx.s.ntop_trace)
			CHECK(fx.s.top_trace[0].truncated);
		release(&fx);
	}
	synth_free(&a);

	/* Only exits: a ring that wrapped inside 64 nested calls, as deep as they go. */
	synth_init(&a, "exits", 1, 64, 0);
	for (int i = 0; i < 200; i++)
		synth_entry(&a, 10 + (uint64_t)i, ID(fn_recurse));
	for (int i = 0; i < 64; i++)
		synth_exit(&a, 1000 + 10 * (uint64_t)i);
	if (summarise(&a, 1, "exits", 10, &fx)) {
		CHECK_EQ_U64(fx.s.records, 64);
		CHECK_EQ_U64(fx.s.span, 630);
		/* One chain through the unknown calls, each cut, each with 10 ticks of its
		 * own: it descends while the child outlasts that, to the 62nd (incl 20). */
		if (CHECK(fx.s.nchains == 1)) {
			CHECK_EQ_U64(fx.s.chains[0].n, 62);
			CHECK_EQ_U64(fx.s.chains[0].f[61].incl, 20);
			CHECK(fx.s.chains[0].f[61].truncated);
		}
		release(&fx);
	}
	synth_free(&a);

	/* A wide id cut by the wrap: its payload slot overwritten, the record dropped. */
	synth_init(&a, "wide", 1, 8, 0);
	synth_entry(&a, 10, ID(fn_main));
	synth_entry(&a, 20, 0x7f0012345678ull); /* two slots */
	synth_entry(&a, 30, ID(fn_draw));
	synth_exit(&a, 40);
	synth_exit(&a, 50);
	synth_exit(&a, 60);
	synth_exit(&a, 70);
	/* 2 (sync) + 1 + 2 + 1 + 4 + 2 = 12 slots written; the ring keeps the last 8:
	 * the wide entry's tag without its payload, which the wrap overwrote. */
	synth_exit(&a, 80);
	synth_exit(&a, 90);
	if (summarise(&a, 1, "wide", 10, &fx)) {
		CHECK_EQ_U64(fx.s.records, 7); /* fn_draw and six exits; the wide tag dropped */
		for (size_t i = 0; i < fx.s.ntop_trace; i++)
			CHECK(AGENT_KEY_MODULE(fx.s.top_trace[i].key) >= 0 ||
			      fx.s.top_trace[i].key == CCT_UNKNOWN);
		release(&fx);
	}
	synth_free(&a);

	/* Recursion 10,000 deep in the slow frame: the chain follows it all the way, and
	 * keeps its outermost and innermost links with the middle elided and counted. */
	enum { D = 10000 };
	synth_init(&a, "deep", 1, 0, 0);
	synth_special(&a, 5, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	for (int i = 0; i < D; i++)
		synth_entry(&a, 10 + (uint64_t)i, ID(fn_recurse));
	for (int i = 0; i < D; i++)
		synth_exit(&a, 100000 + (uint64_t)i);
	synth_special(&a, 200000, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_HANG);
	if (summarise(&a, 1, "deep", 10, &fx)) {
		if (CHECK(fx.s.nchains == 1)) {
			const struct summary_chain *c = &fx.s.chains[0];
			CHECK_EQ_U64(c->n, SUMMARY_MAX_DEPTH);
			CHECK_EQ_U64(c->elided, D - SUMMARY_MAX_DEPTH);
			CHECK_EQ_U64(c->at, SUMMARY_KEEP_OUTER);
			CHECK_EQ_U64(c->f[0].incl, 100000 + D - 1 - 10);
			CHECK_EQ_U64(c->f[c->n - 1].self, 100000 - (10 + D - 1));
		}
		/* the recursion, and the frame's time outside it: 5 ticks before, and from
		 * the last exit to the anomaly */
		if (CHECK(fx.s.ntop_window == 2)) {
			CHECK_EQ_U64(fx.s.top_window[0].calls, D);
			CHECK_EQ_U64(fx.s.top_window[1].key, CCT_ROOT);
			CHECK_EQ_U64(fx.s.top_window[1].self, (200000 - 5) - (100000 + D - 1 - 10));
		}
		release(&fx);
	}
	synth_free(&a);

	/* A window with no calls at all: the frame began, nothing ran, the anomaly came. */
	synth_init(&a, "idle", 1, 0, 0);
	synth_entry(&a, 10, ID(fn_draw));
	synth_exit(&a, 20);
	synth_special(&a, 100, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_special(&a, 200, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_HANG);
	if (summarise(&a, 1, "idle", 10, &fx)) {
		CHECK_EQ_U64(fx.s.w1 - fx.s.w0, 100);
		CHECK_EQ_U64(fx.s.nchains + fx.s.ncontexts, 0);
		/* its whole time is outside any traced function, and says so */
		if (CHECK(fx.s.ntop_window == 1)) {
			CHECK_EQ_U64(fx.s.top_window[0].key, CCT_ROOT);
			CHECK_EQ_U64(fx.s.top_window[0].self, 100);
		}
		CHECK_EQ_U64(fx.s.ntop_trace, 2);
		release(&fx);
	}
	synth_free(&a);
}

/* The fixture's summary as text, in a malloc'd buffer (NULL on failure). */
static char *text_of(struct fixture *fx)
{
	struct agent_symbols syms;
	char *buf = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&buf, &size);
	if (!CHECK(m && agent_symbols_open(&syms, &fx->t) == 0)) {
		if (m)
			fclose(m);
		free(buf);
		return NULL;
	}
	CHECK_EQ_INT(summary_write_text(m, &fx->s, &syms), 0);
	fclose(m);
	agent_symbols_close(&syms);
	return buf;
}

/* The detectors that cannot write a mark (external: the control thread cannot write into
 * another thread's ring; hang: the hung thread cannot) are named by the reason the runtime
 * gave the trace. Before, `jitt trigger` traces said "detector": null. */
TEST(summary_detector_without_a_mark_comes_from_the_reason)
{
	static const struct {
		const char *reason, *json, *text;
	} cases[] = {
		{ "external", "\"detector\":\"external\"", "(detector: external;" },
		{ "external: from a test", "\"detector\":\"external\"", "(detector: external;" },
		{ "hang: a frame still running after 402 ms", "\"detector\":\"hang\"",
		  "(detector: hang;" },
		{ "externally", "\"detector\":null", "(no anomaly mark:" },
		{ "golden test", "\"detector\":null", "(no anomaly mark:" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct synth_thread ui;
		synth_init(&ui, "ui", 100, 0, 0);
		normal_frame(&ui, 100);
		struct fixture fx;
		if (!summarise(&ui, 1, cases[i].reason, 10, &fx)) {
			synth_free(&ui);
			continue;
		}
		size_t size;
		char *json = json_of(&fx, &size), *text = text_of(&fx);
		if (!json || !strstr(json, cases[i].json))
			test_fail(__FILE__, __LINE__, "reason \"%s\": no %s in %.200s", cases[i].reason,
				  cases[i].json, json ? json : "(none)");
		if (!text || !strstr(text, cases[i].text))
			test_fail(__FILE__, __LINE__, "reason \"%s\": no \"%s\" in %.200s",
				  cases[i].reason, cases[i].text, text ? text : "(none)");
		free(json);
		free(text);
		release(&fx);
		synth_free(&ui);
	}
}

/* The JSON form stays small: K = 10 of everything in well under 4 KiB. */
TEST(summary_json_is_small)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	void (*fns[])(void) = { fn_layout, fn_draw, fn_culprit, fn_io, fn_slow_task, fn_recurse };
	synth_entry(&ui, 1, ID(fn_main));
	uint64_t t = 100;
	for (int f = 0; f < 30; f++) {
		synth_special(&ui, t, RB_MARK, AGENT_MARK_FRAME_BEGIN);
		synth_entry(&ui, t + 1, ID(fn_frame));
		uint64_t u = t + 2;
		for (int i = 0; i < 12; i++) {
			synth_entry(&ui, u, ID(fns[i % 6]));
			synth_entry(&ui, u + 1, ID(fns[(i + f) % 6]));
			u += 10 + (uint64_t)(f == 29 ? 1000 * i : i);
			synth_exit(&ui, u);
			synth_exit(&ui, ++u);
		}
		synth_exit(&ui, ++u);
		t = u + 10;
	}
	synth_special(&ui, t, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
	struct fixture fx;
	if (!summarise(&ui, 1, "jank", 10, &fx))
		return;
	size_t size;
	char *buf = json_of(&fx, &size);
	if (buf) {
		printf("    JSON summary, K = 10: %zu bytes\n", size);
		CHECK(size <= 4096);
		CHECK(strncmp(buf, "{\"schema\":\"jitt.summary\",\"version\":3,", 37) == 0);
	}
	free(buf);
	release(&fx);
	synth_free(&ui);
}

/* Many short calls that add up, no single long one (Hubble section 3's first case): the
 * chain goes on into them as one link, counted, exact to the tick. */
TEST(summary_many_short_calls_end_the_chain_as_one_link)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	uint64_t t = 1000;
	for (int f = 0; f < 5; f++, t += 1000)
		normal_frame(&ui, t);
	synth_special(&ui, t, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_entry(&ui, t + 10, ID(fn_frame));
	synth_entry(&ui, t + 20, ID(fn_draw));
	uint64_t u = t + 30;
	for (int i = 0; i < 1000; i++, u += 110) { /* 1000 calls of 100 ticks, 10 apart */
		synth_entry(&ui, u, ID(fn_culprit));
		synth_exit(&ui, u + 100);
	}
	synth_exit(&ui, u);
	synth_exit(&ui, u + 10);
	synth_special(&ui, u + 20, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(&ui, u + 21, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
	struct fixture fx;
	if (!summarise(&ui, 1, "many-short", 3, &fx))
		return;
	if (CHECK(fx.s.nchains >= 1)) {
		const struct summary_chain *c = &fx.s.chains[0];
		CHECK_EQ_INT(c->n, 3); /* frame > draw > 1000 x culprit */
		if (c->n == 3) {
			CHECK_EQ_U64(c->f[1].key, key(fn_draw));
			CHECK_EQ_U64(c->f[1].self, 10 + 999 * 10 + 10);
			CHECK_EQ_U64(c->f[2].key, key(fn_culprit));
			CHECK_EQ_U64(c->f[2].calls, 1000);
			CHECK_EQ_U64(c->f[2].incl, 100000);
			CHECK_EQ_U64(c->f[2].self, 100000);
		}
	}
	release(&fx);
	synth_free(&ui);
}

/* Deep call paths: the ranked contexts, then the shorter chains, are left out until the
 * JSON fits in SUMMARY_JSON_MAX, and the summary says how many went. */
TEST(summary_json_leaves_out_contexts_to_stay_within_4_kib)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	void (*fns[])(void) = { fn_layout, fn_draw, fn_culprit, fn_io, fn_slow_task,
				fn_recurse, fn_worker, fn_loop };
	empty_frame(&ui, 1); /* a baseline to rank the contexts against */
	synth_special(&ui, 10, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	uint64_t t = 100;
	for (int path = 0; path < 10; path++) { /* 10 distinct paths, 40 deep */
		for (int d = 0; d < 40; d++)
			synth_entry(&ui, t++, ID(fns[(d * (path + 1) + path) % 8]));
		t += 1000000 + 12345 * (uint64_t)path;
		for (int d = 0; d < 40; d++)
			synth_exit(&ui, t++);
	}
	synth_special(&ui, t, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(&ui, t + 1, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_EXPLICIT);
	struct fixture fx;
	if (!summarise(&ui, 1, "deep", 10, &fx))
		return;
	size_t size;
	char *buf = json_of(&fx, &size);
	if (buf) {
		printf("    JSON summary of 10 contexts 40 deep: %zu bytes\n", size);
		CHECK(size <= SUMMARY_JSON_MAX);
		CHECK(strstr(buf, "\"contexts_left_out\":") != NULL);
		CHECK(strstr(buf, "\"chains_left_out\":") != NULL);
		CHECK(strstr(buf, "\"chains\":[[[") != NULL); /* the longest chain stays */
	}
	free(buf);
	release(&fx);
	synth_free(&ui);
}

/* A deep interpreter's shape: ten hot leaves under one trunk 40 calls deep. Version 2
 * writes the trunk once ("from":[j,n], docs/summary-format.md), so all 10 contexts fit in
 * 4 KiB (2,971 bytes; 3,168 since the fixture has a baseline frame to rank against), where
 * written whole (version 1) 3 of them had to go. */
TEST(summary_json_shares_path_prefixes_so_deep_contexts_fit)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	void (*fns[])(void) = { fn_layout, fn_draw, fn_culprit, fn_io, fn_slow_task,
				fn_recurse, fn_worker, fn_loop };
	empty_frame(&ui, 1); /* a baseline to rank the contexts against */
	synth_special(&ui, 10, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	uint64_t t = 100;
	for (int d = 0; d < 40; d++)
		synth_entry(&ui, t++, ID(fns[d % 8]));
	for (int leaf = 0; leaf < 10; leaf++) { /* 10 distinct tips, 3 calls each */
		synth_entry(&ui, t++, ID(fns[leaf % 8]));
		synth_entry(&ui, t++, ID(fns[(leaf / 8 + 3) % 8]));
		synth_entry(&ui, t++, ID(fns[(leaf + 5) % 8]));
		t += 100000 + 12345 * (uint64_t)leaf;
		for (int d = 0; d < 3; d++)
			synth_exit(&ui, t++);
	}
	for (int d = 0; d < 40; d++)
		synth_exit(&ui, t++);
	synth_special(&ui, t, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(&ui, t + 1, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_EXPLICIT);
	struct fixture fx;
	if (!summarise(&ui, 1, "deep-trunk", 10, &fx))
		return;
	size_t size;
	char *buf = json_of(&fx, &size);
	CHECK_EQ_U64(fx.s.ncontexts, 10);
	if (buf) {
		printf("    JSON summary of 10 contexts 43 deep under one trunk: %zu bytes\n", size);
		CHECK(size <= SUMMARY_JSON_MAX);
		CHECK(strstr(buf, "\"contexts_left_out\":") == NULL);
		/* the second context shares the trunk and the first tip frame's parent */
		CHECK(strstr(buf, "\"from\":[0,40]") != NULL || strstr(buf, "\"from\":[0,41]"));
	}
	free(buf);
	release(&fx);
	synth_free(&ui);
}

/*
 * Scheduling (time other processes took): a frame whose culprit was preempted for most of
 * its call. The trace's context switches are given straight to the parsed trace (as the
 * file's scheduling section gives them): ticks, CPU 0 LITTLE and CPU 1 big.
 *   1000 frame begin; 1010 > frame; 1020 > culprit
 *   1100..5100 off, preempted (CPU 0, back on CPU 1); 5200..5300 off, asleep (unwrapped)
 *   6020 < culprit; 6030 wait-begin; 6040..6540 off, preempted, inside the wait (the
 *   wait's preempted part: the rest of it, 500, the thread ran); 7030 wait-end;
 *   7040 < frame; 7045..7055 off, preempted, outside every call, across the frame end at
 *   7050 (cut there); 7050 frame end (the window: 1000..7050); 7060 anomaly.
 */
static const struct rb_switch preempt_sw[] = {
	{ 1100, 0, HAL_SCHED_OUT_PREEMPTED }, { 5100, 1, HAL_SCHED_IN },
	{ 5200, 1, HAL_SCHED_OUT_SLEEPING },  { 5300, 1, HAL_SCHED_IN },
	{ 6040, 1, HAL_SCHED_OUT_PREEMPTED }, { 6540, 0, HAL_SCHED_IN },
	{ 7045, 0, HAL_SCHED_OUT_PREEMPTED }, { 7055, 0, HAL_SCHED_IN },
};
static const struct rb_offcpu preempt_off[] = {
	{ 1100, 5100, 0, RB_OFF_PREEMPTED },
	{ 5200, 5300, 1, RB_OFF_SLEEPING },
	{ 6040, 6540, 1, RB_OFF_PREEMPTED },
	{ 7045, 7055, 0, RB_OFF_PREEMPTED },
};
static const uint8_t preempt_classes[] = { HAL_CPU_LITTLE, HAL_CPU_BIG };

static void preempted_frame(struct synth_thread *ui)
{
	synth_special(ui, 1000, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_entry(ui, 1010, ID(fn_frame));
	synth_entry(ui, 1020, ID(fn_culprit));
	synth_exit(ui, 6020);
	synth_special(ui, 6030, RB_WAIT_BEGIN, 0x40);
	synth_special(ui, 7030, RB_WAIT_END, 0x40);
	synth_exit(ui, 7040);
	synth_special(ui, 7050, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(ui, 7060, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
}

TEST(summary_preempted_time_is_not_self_time)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	preempted_frame(&ui);
	char path[512], err[256];
	struct rb_trace t;
	if (!CHECK(synth_write(&ui, 1, "jank", path, sizeof(path)) == 0) ||
	    !CHECK(rb_trace_open(path, &t, err, sizeof(err)) == 0)) {
		synth_free(&ui);
		return;
	}
	struct rb_file_thread *th = &t.threads[0];
	th->sw = preempt_sw;
	th->nsw = sizeof(preempt_sw) / sizeof(preempt_sw[0]);
	th->sched_on = true;
	th->view.off = preempt_off;
	th->view.noff = sizeof(preempt_off) / sizeof(preempt_off[0]);
	t.sched = (struct rb_trace_sched){ RB_SCHED_PERF, 2, preempt_classes };

	/* The decoder puts each between the records it fell between, cut at the next one. */
	struct rb_event *ev;
	size_t n;
	CHECK_EQ_INT(rb_decode(&th->view, t.ref_ticks, &ev, &n, NULL), 0);
	uint64_t want[][2] = { { 1100, 5100 }, { 5200, 5300 }, { 6040, 6540 }, { 7045, 7050 } };
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind != RB_EV_OFF_CPU)
			continue;
		if (k < 4) {
			CHECK_EQ_U64(ev[i].id, want[k][0]);
			CHECK_EQ_U64(ev[i].ts, want[k][1]);
			CHECK(i > 0 && ev[i - 1].ts <= ev[i].id);
			CHECK(i + 1 == n || ev[i + 1].ts >= ev[i].ts);
		}
		k++;
	}
	CHECK_EQ_INT((int)k, 4);
	free(ev);

	struct summary s;
	if (!CHECK(summary_build(&s, &t, 10) == 0)) {
		rb_trace_close(&t);
		synth_free(&ui);
		return;
	}
	CHECK_EQ_U64(s.w1 - s.w0, 6050); /* the frame: begin to end */
	/* The culprit's, the wait's and the 5 outside every call (they were lost: 4000) */
	CHECK_EQ_U64(s.window_preempted, 4000 + 500 + 5);
	CHECK_EQ_U64(s.window_blocked, 100); /* asleep: the wait ran on its CPU (was 1100) */
	const struct summary_func *top = &s.top_window[0];
	CHECK_EQ_U64(top->key, key(fn_culprit));
	CHECK_EQ_U64(top->self, 900); /* 5000 - 4000 preempted - 100 asleep */
	CHECK_EQ_U64(top->preempted, 4000);
	CHECK_EQ_U64(top->blocked, 100);
	/* The chain ends in the culprit, its own time mostly preempted. */
	CHECK_EQ_INT((int)s.nchains, 1);
	const struct summary_chain *c = &s.chains[0];
	CHECK_EQ_INT((int)c->n, 2);
	CHECK_EQ_U64(c->f[1].preempted, 4000);
	CHECK_EQ_U64(c->f[0].self, 530); /* 6030 - 5000 culprit - 500 preempted in the wait */
	CHECK_EQ_U64(c->f[0].preempted, 500);
	CHECK_EQ_U64(c->f[0].blocked, 0);
	/* Where it ran in the frame: 1000..1100 and 6540..7045 on CPU 0 (LITTLE), 5100..5200
	 * and 5300..6040 on CPU 1 (big); it came back on another CPU twice. */
	CHECK_EQ_INT((int)s.sched.source, SUMMARY_SCHED_PERF);
	CHECK_EQ_U64(s.sched.on_class[HAL_CPU_LITTLE], 100 + 505);
	CHECK_EQ_U64(s.sched.on_class[HAL_CPU_BIG], 100 + 740);
	CHECK_EQ_INT((int)s.sched.migrations, 2);
	CHECK_EQ_INT((int)s.sched.main_cpu, 1);

	struct fixture fx = { .t = t, .s = s, .ok = 1 };
	size_t size;
	char *json = json_of(&fx, &size), *text = text_of(&fx);
	static const char *const in_json[] = {
		"\"version\":3", "\"sched\":{\"source\":\"perf\",\"blocked_is\":\"asleep\"",
		"\"migrations\":2", "\"cpu_ns\":{\"little\":"
	};
	for (size_t i = 0; i < sizeof(in_json) / sizeof(in_json[0]); i++)
		if (!json || !strstr(json, in_json[i]))
			test_fail(__FILE__, __LINE__, "no %s in %.300s", in_json[i],
				  json ? json : "(none)");
	static const char *const in_text[] = { "preempted", "=> preempted for most of this frame",
					       "preempted here: another task had its CPU",
					       "2 migrations", "big 58%" };
	for (size_t i = 0; i < sizeof(in_text) / sizeof(in_text[0]); i++)
		if (!text || !strstr(text, in_text[i]))
			test_fail(__FILE__, __LINE__, "no \"%s\" in:\n%s", in_text[i],
				  text ? text : "(none)");
	free(json);
	free(text);
	summary_free(&s);
	rb_trace_close(&t);
	synth_free(&ui);
}

/* The schedstat fallback: the run-queue wait between the frame's first and last samples is
 * the window's preempted time; the functions keep it in their self time. */
TEST(summary_schedstat_samples_give_the_frame_its_preempted_time)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	uint64_t hz = hal_timer_freq();
	/* Half of a SLOW frame waiting to run, in whole microseconds. */
	uint32_t wait_us = (uint32_t)((double)SLOW / 2 * 1e6 / (double)hz);
	uint64_t w0 = 1000;
	synth_special(&ui, w0, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_special(&ui, w0 + 1, RB_SCHED_RUN, 100);
	synth_special(&ui, w0 + 2, RB_SCHED_WAIT, 0xfffffff0u); /* wraps: modulo 2^32 */
	synth_entry(&ui, w0 + 10, ID(fn_culprit));
	synth_exit(&ui, w0 + SLOW - 10);
	synth_special(&ui, w0 + SLOW - 5, RB_SCHED_RUN, 200);
	synth_special(&ui, w0 + SLOW - 4, RB_SCHED_WAIT, 0xfffffff0u + wait_us);
	synth_special(&ui, w0 + SLOW - 3, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(&ui, w0 + SLOW, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
	struct fixture fx;
	if (summarise(&ui, 1, "jank", 10, &fx)) {
		CHECK_EQ_INT((int)fx.s.sched.source, SUMMARY_SCHED_SCHEDSTAT);
		uint64_t want = (uint64_t)((double)wait_us * (double)fx.t.timer_hz / 1e6);
		CHECK(fx.s.window_preempted + 2 >= want && fx.s.window_preempted <= want + 2);
		CHECK_EQ_U64(fx.s.top_window[0].self, SLOW - 20); /* no per-function split */
		size_t size;
		char *json = json_of(&fx, &size), *text = text_of(&fx);
		CHECK(json && strstr(json, "\"sched\":{\"source\":\"schedstat\","
					   "\"blocked_is\":\"waits\"}"));
		CHECK(text && strstr(text, "schedstat samples at frame boundaries"));
		CHECK(text && strstr(text, "\nblocked: the whole of every wrapped blocking call, "
					   "assumed asleep"));
		CHECK(text && strstr(text, "=> preempted for most of this frame"));
		free(json);
		free(text);
		release(&fx);
	}
	synth_free(&ui);
}

/* No scheduling records: the summary says preemption cannot be told from work. */
TEST(summary_without_scheduling_records_says_so)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	preempted_frame(&ui);
	struct fixture fx;
	if (summarise(&ui, 1, "jank", 10, &fx)) {
		CHECK_EQ_INT((int)fx.s.sched.source, SUMMARY_SCHED_NONE);
		CHECK_EQ_U64(fx.s.top_window[0].self, 5000);
		size_t size;
		char *json = json_of(&fx, &size), *text = text_of(&fx);
		CHECK(json && strstr(json, "\"preempted_ns\":0,"));
		CHECK(json && strstr(json, "\"sched\":{\"source\":\"none\","
					   "\"blocked_is\":\"waits\"}"));
		CHECK(text && strstr(text, "scheduling: not recorded"));
		CHECK(text && strstr(text, "\nblocked: the whole of every wrapped blocking call, "
					   "assumed asleep"));
		CHECK_EQ_U64(fx.s.window_blocked, 1000); /* the wait, whole */
		free(json);
		free(text);
		release(&fx);
	}
	synth_free(&ui);
}

/* ---- the summary's truth: what it says agrees with what the trace holds ---- */

/* The trace at fx's path with the kernel's switches of its one thread set as the file's
 * scheduling section gives them (perf; every CPU LITTLE), then summarised. */
static uint64_t switched_lost; /* summarise_switched's sched_lost */
static int summarise_switched(struct synth_thread *th, const char *reason, unsigned k,
			      const struct rb_switch *sw, uint32_t nsw, const struct rb_offcpu *off,
			      size_t noff, struct fixture *fx)
{
	static const uint8_t classes[] = { HAL_CPU_LITTLE, HAL_CPU_LITTLE };
	char path[512], err[256];
	memset(fx, 0, sizeof(*fx));
	if (!CHECK(synth_write(th, 1, reason, path, sizeof(path)) == 0) ||
	    !CHECK(rb_trace_open(path, &fx->t, err, sizeof(err)) == 0))
		return 0;
	struct rb_file_thread *ft = &fx->t.threads[0];
	ft->sw = sw;
	ft->nsw = nsw;
	ft->sched_on = true;
	ft->sched_lost = switched_lost;
	ft->view.off = off;
	ft->view.noff = noff;
	fx->t.sched = (struct rb_trace_sched){ RB_SCHED_PERF, 2, classes };
	if (!CHECK(summary_build(&fx->s, &fx->t, k) == 0)) {
		rb_trace_close(&fx->t);
		return 0;
	}
	fx->ok = 1;
	return 1;
}

/* Whether text holds s; says what it holds when not. */
static void want_text(const char *text, const char *s, bool present, int line)
{
	if (!text || (strstr(text, s) != NULL) != present)
		test_fail(__FILE__, line, "\"%s\" %s in:\n%s", s, present ? "not" : "found",
			  text ? text : "(none)");
}
#define HAS(text, s)	 want_text((text), (s), true, __LINE__)
#define HAS_NOT(text, s) want_text((text), (s), false, __LINE__)

/*
 * Time off the CPU outside every known call counts in the window: a summary said "running
 * 99%" where the thread waited for a CPU 68% of the time, between calls whose entries the
 * ring had lost (the tree's root, which the window's sum skipped).
 *   the ring starts inside a call that returns at 1050 (its entry lost); 1000 frame
 *   begin; 1100..3100 preempted, and 3200..3300 asleep, outside every call; 3400 > draw
 *   3500 <; 3600 frame end; 3610 anomaly.
 */
TEST(summary_time_off_the_cpu_outside_every_call_counts_in_the_window)
{
	static const struct rb_switch sw[] = {
		{ 1100, 0, HAL_SCHED_OUT_PREEMPTED },
		{ 3100, 0, HAL_SCHED_IN },
		{ 3200, 0, HAL_SCHED_OUT_SLEEPING },
		{ 3300, 0, HAL_SCHED_IN },
	};
	static const struct rb_offcpu off[] = { { 1100, 3100, 0, RB_OFF_PREEMPTED },
						{ 3200, 3300, 0, RB_OFF_SLEEPING } };
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	synth_special(&ui, 1000, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_exit(&ui, 1050);
	synth_entry(&ui, 3400, ID(fn_draw));
	synth_exit(&ui, 3500);
	synth_special(&ui, 3600, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(&ui, 3610, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
	struct fixture fx;
	if (summarise_switched(&ui, "jank", 10, sw, 4, off, 2, &fx)) {
		CHECK_EQ_U64(fx.s.w1 - fx.s.w0, 2600);
		CHECK_EQ_U64(fx.s.window_preempted, 2000); /* was 0: "running 96%" */
		CHECK_EQ_U64(fx.s.window_blocked, 100);
		char *text = text_of(&fx);
		HAS(text, "(77%), blocked "); /* preempted's share: 2000 of 2600 */
		HAS(text, "(4%)\n");
		HAS(text, "=> preempted for most of this frame");
		free(text);
		release(&fx);
	}
	synth_free(&ui);
}

/*
 * A wrapped read() that returns at once is running, not blocked: where the trace has the
 * thread's switch records, blocked inside a wait is only its time asleep off the CPU (a
 * busy server read "blocked 76%" with 0.36 ms of 4.6 ms in its wrapped calls off the CPU).
 *   1000 frame begin; 1010 > io; 1020..1120 wait on fd 5, on its CPU; 1200..2200 wait on
 *   fd 5, asleep 1300..2100 in it; 2300 < io; 2400 frame end; 2410 anomaly.
 * Without them the waits are blocked whole, and the summary says that is assumed.
 */
static void waits_frame(struct synth_thread *ui)
{
	synth_init(ui, "ui", 100, 0, 0);
	synth_special(ui, 1000, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_entry(ui, 1010, ID(fn_io));
	synth_special(ui, 1020, RB_WAIT_BEGIN, 5 << 2 | 1);
	synth_special(ui, 1120, RB_WAIT_END, 5 << 2 | 1);
	synth_special(ui, 1200, RB_WAIT_BEGIN, 5 << 2 | 1);
	synth_special(ui, 2200, RB_WAIT_END, 5 << 2 | 1);
	synth_exit(ui, 2300);
	synth_special(ui, 2400, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(ui, 2410, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
}

/*
 * A thread's switch records that do not reach back to its ring's start (the kernel's ring
 * lapped: sched_lost): a wait that began before the first of them counts whole, as without
 * them; one after it, only its time asleep. jank-sim's hang scenario had 350 ms of waits
 * counted as time run where its 1,024 records did not reach.
 */
TEST(summary_a_wait_before_the_switch_records_counts_whole)
{
	static const struct rb_switch sw[] = { { 1150, 0, HAL_SCHED_IN },
					       { 1300, 0, HAL_SCHED_OUT_SLEEPING },
					       { 2100, 0, HAL_SCHED_IN } };
	static const struct rb_offcpu off[] = { { 1300, 2100, 0, RB_OFF_SLEEPING } };
	struct synth_thread ui;
	waits_frame(&ui);
	struct fixture fx;
	switched_lost = 1;
	int ok = summarise_switched(&ui, "jank", 10, sw, 3, off, 1, &fx);
	switched_lost = 0;
	if (ok) {
		CHECK_EQ_U64(fx.s.window_blocked, 100 + 800);
		if (CHECK(fx.s.ntop_window >= 1)) {
			CHECK_EQ_U64(fx.s.top_window[0].blocked, 100 + 800);
			CHECK_EQ_U64(fx.s.top_window[0].self, 1290 - 900);
		}
		release(&fx);
	}
	synth_free(&ui);
}

TEST(summary_a_wait_is_blocked_only_while_the_switch_records_say_asleep)
{
	static const struct rb_switch sw[] = { { 1300, 0, HAL_SCHED_OUT_SLEEPING },
					       { 2100, 0, HAL_SCHED_IN } };
	static const struct rb_offcpu off[] = { { 1300, 2100, 0, RB_OFF_SLEEPING } };
	struct synth_thread ui;
	waits_frame(&ui);
	struct fixture fx;
	if (summarise_switched(&ui, "jank", 10, sw, 2, off, 1, &fx)) {
		CHECK_EQ_U64(fx.s.window_blocked, 800); /* was 1100: both waits whole */
		CHECK_EQ_U64(fx.s.window_preempted, 0);
		if (CHECK(fx.s.ntop_window >= 1)) {
			CHECK_EQ_U64(fx.s.top_window[0].blocked, 800);
			CHECK_EQ_U64(fx.s.top_window[0].self, 1290 - 800);
		}
		size_t size;
		char *json = json_of(&fx, &size), *text = text_of(&fx);
		CHECK(json && strstr(json, "\"blocked_ns\":800,") &&
		      strstr(json, "\"blocked_is\":\"asleep\""));
		HAS_NOT(text, "assumed asleep");
		free(json);
		free(text);
		release(&fx);
	}
	synth_free(&ui);

	waits_frame(&ui);
	if (summarise(&ui, 1, "jank", 10, &fx)) {
		CHECK_EQ_U64(fx.s.window_blocked, 1100);
		size_t size;
		char *json = json_of(&fx, &size), *text = text_of(&fx);
		CHECK(json &&
		      strstr(json, "\"sched\":{\"source\":\"none\",\"blocked_is\":\"waits\"}"));
		HAS(text, "\nblocked: the whole of every wrapped blocking call, assumed asleep (no "
			  "switch records say when the thread left its CPU)\n");
		free(json);
		free(text);
		release(&fx);
	}
	synth_free(&ui);
}

/*
 * The header and "blocked on" say the same blocked time: one trace's header said "blocked
 * 19.1 us" and its blocked-on section "blocked 71.666 ms of 80.933 ms". The waits were
 * outside every traced call: the header summed the tree without its root, "blocked on"
 * summed the waits. Both are the tree's now, root included.
 *   1000 frame begin; 1010 > draw 1100 <; 1200..9200 wait on 0x30, outside every call
 *   (with switch records: asleep 1300..9000 of it); 9300 frame end; 9310 anomaly.
 */
TEST(summary_header_and_blocked_on_agree)
{
	static const struct rb_switch sw[] = { { 1300, 0, HAL_SCHED_OUT_SLEEPING },
					       { 9000, 0, HAL_SCHED_IN } };
	static const struct rb_offcpu off[] = { { 1300, 9000, 0, RB_OFF_SLEEPING } };
	for (int switched = 0; switched < 2; switched++) {
		struct synth_thread ui;
		synth_init(&ui, "ui", 100, 0, 0);
		synth_special(&ui, 1000, RB_MARK, AGENT_MARK_FRAME_BEGIN);
		synth_entry(&ui, 1010, ID(fn_draw));
		synth_exit(&ui, 1100);
		synth_special(&ui, 1200, RB_WAIT_BEGIN, 0x30);
		synth_special(&ui, 9200, RB_WAIT_END, 0x30);
		synth_special(&ui, 9300, RB_MARK, AGENT_MARK_FRAME_END);
		synth_special(&ui, 9310, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
		struct fixture fx;
		if (switched ? summarise_switched(&ui, "jank", 10, sw, 2, off, 1, &fx)
			     : summarise(&ui, 1, "jank", 10, &fx)) {
			uint64_t want = switched ? 7700 : 8000;
			CHECK_EQ_U64(fx.s.window_blocked, want); /* was 0 */
			if (CHECK(fx.s.nhops == 1)) {
				CHECK_EQ_U64(fx.s.hops[0].blocked, want);
				CHECK_EQ_U64(fx.s.hops[0].waiter, CCT_ROOT);
				CHECK_EQ_U64(fx.s.hops[0].wait_end - fx.s.hops[0].wait_begin, 8000);
			}
			/* The text's two durations, word for word (with a source the header
			 * says running, preempted and blocked; without one, a share only). */
			char *text = text_of(&fx);
			char head[32] = "", hop[32] = "";
			const char *a = text ? strstr(text, ", blocked ") : NULL;
			const char *b = text ? strstr(text, "\" was blocked ") : NULL;
			if (!switched)
				HAS(text, ", 96% of it blocked\n"); /* 8000 of 8300 */
			else if (CHECK(a && b)) {
				sscanf(a + strlen(", blocked "), "%31[^(]", head);
				sscanf(b + strlen("\" was blocked "), "%31[^o]", hop);
				CHECK_STR(head, hop);
			}
			free(text);
			release(&fx);
		}
		synth_free(&ui);
	}
}

/* Copies of one function: GCC's clones (and `static inline` copies, LTO's) are one name at
 * several addresses. The asm names make them here, in this program's symbol table. */
__attribute__((noinline, used)) static void fn_twin(void)
{
	sink = 20;
}
__attribute__((noinline, used)) static void fn_twin_constprop(void) __asm__("fn_twin.constprop.0");
__attribute__((noinline, used)) static void fn_twin_constprop(void)
{
	sink = 21;
}
__attribute__((noinline, used)) static void fn_twin_part(void) __asm__("fn_twin.part.0");
__attribute__((noinline, used)) static void fn_twin_part(void)
{
	sink = 22;
}

/*
 * Top self time lists a function once: its copies are one line under its name, their
 * times added, ranked by the sum. With k = 2 the copies are the 2nd to 4th alone, and
 * together the first. Chains keep each copy's address, under the same name.
 */
TEST(summary_ranked_lists_merge_the_copies_of_a_function)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	normal_frame(&ui, 100);
	synth_special(&ui, 1000, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_entry(&ui, 1000, ID(fn_draw));
	synth_exit(&ui, 1400);
	synth_entry(&ui, 1500, ID(fn_twin_constprop));
	synth_exit(&ui, 1800);
	synth_entry(&ui, 1900, ID(fn_twin_part));
	synth_exit(&ui, 2100);
	synth_entry(&ui, 2200, ID(fn_twin));
	synth_exit(&ui, 2300);
	synth_special(&ui, 2400, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(&ui, 2410, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
	struct fixture fx;
	if (summarise(&ui, 1, "jank", 2, &fx)) {
		size_t size;
		char *json = json_of(&fx, &size), *text = text_of(&fx);
		const char *top = text ? strstr(text, "\ntop self time in the window:\n") : NULL;
		const char *end = top ? strstr(top + 1, "\n\n") : NULL;
		if (CHECK(top && end)) {
			char *list = strndup(top, (size_t)(end - top));
			HAS(list, "  fn_twin\n"); /* under its name, without the suffix */
			HAS_NOT(list, "constprop");
			HAS_NOT(list, "part");
			const char *first = strstr(list, "function\n");
			CHECK(first && strstr(first, "fn_twin") < strstr(first, "fn_draw"));
			CHECK(strstr(strstr(list, "fn_twin") + 1, "fn_twin") == NULL); /* once */
			free(list);
		}
		/* JSON: the line's function is the copy with the most self time, named plainly */
		CHECK(json && strstr(json, "\"top_window\":[[0,"));
		if (json) {
			char want[64];
			snprintf(want, sizeof(want), "\"functions\":[[0,%llu,\"fn_twin\"]",
				 (unsigned long long)AGENT_KEY_VADDR(key(fn_twin_constprop)));
			HAS(json, want);
		}
		free(json);
		free(text);
		release(&fx);
	}
	synth_free(&ui);
}

/*
 * With the trace point's cost in the trace (the runtime's measurement, tracefile.h), self
 * time is without the trace points: fn_twin's 20 calls of 30 ticks traced (600) hold 20 x
 * 20 ticks of them, and the one call of fn_draw (400) 20: fn_draw first (380 against 200),
 * as a profile of the plain build would rank them. Without the cost, traced self time:
 * fn_twin first; likewise with a cost that would be most of the thread's time (the rest
 * would be a difference of large numbers): left in, and said. The JSON's self times are
 * the recorded ones (the exports' too), with the cost beside them.
 */
TEST(summary_ranks_self_time_without_the_trace_points_when_the_trace_has_their_cost)
{
	for (int k = 0; k < 3; k++) {
		static const double cost[] = { 0, 20, 200 };
		bool with = k == 1;
		struct synth_thread ui;
		synth_init(&ui, "ui", 100, 0, 0);
		normal_frame(&ui, 100);
		synth_special(&ui, 1000, RB_MARK, AGENT_MARK_FRAME_BEGIN);
		synth_entry(&ui, 1000, ID(fn_draw));
		synth_exit(&ui, 1400);
		for (int i = 0; i < 20; i++) {
			synth_entry(&ui, 1500 + 40 * (uint64_t)i, ID(fn_twin));
			synth_exit(&ui, 1530 + 40 * (uint64_t)i);
		}
		synth_special(&ui, 2400, RB_MARK, AGENT_MARK_FRAME_END);
		synth_special(&ui, 2410, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
		rb_trace_set_point_cost(cost[k]);
		struct fixture fx;
		int ok = summarise(&ui, 1, "jank", 2, &fx);
		rb_trace_set_point_cost(0);
		if (ok) {
			char *text = text_of(&fx), *json = json_of(&fx, &(size_t){ 0 });
			const char *top = text ? strstr(text, "\ntop self time in the window:\n") : NULL;
			const char *first = top ? strstr(top, "function\n") : NULL;
			const char *draw = first ? strstr(first, "fn_draw") : NULL,
				   *twin = first ? strstr(first, "fn_twin") : NULL;
			if (CHECK(draw && twin))
				CHECK(with ? draw < twin : twin < draw);
			if (with)
				HAS(text, "self times below are without the trace points");
			else
				HAS_NOT(text, "without the trace points");
			if (k == 2)
				HAS(text, "self times below hold the trace points");
			/* The JSON keeps the recorded times, and the cost for its readers. */
			if (k)
				HAS(json, "\"point_ps\":");
			else
				HAS_NOT(json, "point_ps");
			free(json);
			free(text);
			release(&fx);
		}
		synth_free(&ui);
	}
}

/*
 * With nothing to compare against, "what changed" is not printed: every context read "0 ns
 * normally". The one frame of a thread has no other; a window of no frame marks that
 * starts where the trace does has no time before it. One line says which.
 */
TEST(summary_without_a_baseline_ranks_no_contexts_and_says_why)
{
	static const struct {
		bool frames;
		const char *text, *json;
	} cases[] = {
		{ true,
		  "\nwhat changed: nothing to compare against (no other complete frame), so "
		  "no calling contexts are ranked\n",
		  "\"contexts\":[],\"contexts_absent\":\"no other complete frame\"," },
		{ false,
		  "\nwhat changed: nothing to compare against (no time before the window), "
		  "so no calling contexts are ranked\n",
		  "\"contexts\":[],\"contexts_absent\":\"no time before the window\"," },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct synth_thread ui;
		synth_init(&ui, "ui", 100, 0, 1000);
		if (cases[i].frames)
			synth_special(&ui, 1000, RB_MARK, AGENT_MARK_FRAME_BEGIN);
		synth_entry(&ui, 1010, ID(fn_frame));
		synth_entry(&ui, 1020, ID(fn_culprit));
		synth_exit(&ui, 5000);
		synth_exit(&ui, 5010);
		synth_special(&ui, 5020, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
		struct fixture fx;
		if (summarise(&ui, 1, "jank", 10, &fx)) {
			CHECK_EQ_U64(fx.s.base_len, 0);
			CHECK_EQ_U64(fx.s.ncontexts, 0);
			size_t size;
			char *json = json_of(&fx, &size), *text = text_of(&fx);
			HAS(text, cases[i].text);
			HAS_NOT(text, "normally");
			HAS(json, cases[i].json);
			free(json);
			free(text);
			release(&fx);
		}
		synth_free(&ui);
	}
	/* With a baseline, the section as before. */
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 0);
	normal_frame(&ui, 100);
	normal_frame(&ui, 1000);
	synth_special(&ui, 1400, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
	struct fixture fx;
	if (summarise(&ui, 1, "jank", 10, &fx)) {
		size_t size;
		char *json = json_of(&fx, &size), *text = text_of(&fx);
		HAS(text, "\nwhat changed against the normal frames, per frame");
		HAS_NOT(json, "contexts_absent");
		free(json);
		free(text);
		release(&fx);
	}
	synth_free(&ui);
}

/*
 * "[cut by the ring]" reads as records lost: it is kept for calls whose entry the ring
 * overwrote. A call still running when the rings were frozen lost nothing, and says so,
 * in the top lists and in the chains alike.
 *   the ring starts inside a call that returns at 1050; 2000 > main, still running at
 *   the freeze (the end of the trace at 3000).
 */
TEST(summary_calls_still_running_at_the_freeze_are_not_cut_by_the_ring)
{
	struct synth_thread ui;
	synth_init(&ui, "ui", 100, 0, 1000);
	synth_exit(&ui, 1050);
	synth_entry(&ui, 2000, ID(fn_main));
	synth_special(&ui, 3000, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_HANG);
	struct fixture fx;
	if (summarise(&ui, 1, "hang", 10, &fx)) {
		/* main, the time between the two calls outside any traced function, the call
		 * the ring began inside */
		if (CHECK(fx.s.ntop_trace == 3)) {
			const struct summary_func *m = &fx.s.top_trace[0], *u = &fx.s.top_trace[2];
			CHECK_EQ_U64(fx.s.top_trace[1].key, CCT_ROOT);
			CHECK_EQ_U64(m->key, key(fn_main));
			CHECK(m->running && !m->truncated);
			CHECK_EQ_U64(u->key, CCT_UNKNOWN);
			CHECK(u->truncated && !u->running);
		}
		/* main's chain first; the unknown call's, of no length in the window, next */
		if (CHECK(fx.s.nchains >= 1 && fx.s.chains[0].n == 1)) {
			CHECK_EQ_U64(fx.s.chains[0].f[0].key, key(fn_main));
			CHECK(fx.s.chains[0].f[0].running && !fx.s.chains[0].f[0].truncated);
		}
		size_t size;
		char *json = json_of(&fx, &size), *text = text_of(&fx);
		HAS(text, " self) [still running at the freeze]  <- where the time went\n");
		HAS_NOT(text, "fn_main [cut by the ring]");
		HAS(text, "  fn_main [still running at the freeze]\n");
		HAS(text, "(entered before the ring's oldest record) [cut by the ring]\n");
		HAS_NOT(text, "frozen]");
		/* JSON's cut stays 1 for both: the call's time is a part of it either way */
		HAS(json, ",1,0]]");
		free(json);
		free(text);
		release(&fx);
	}
	synth_free(&ui);
}

/*
 * A hang caught while its frame still runs has no anomaly mark (the hanging thread cannot
 * write one), and its frame's begin may be older than its ring holds: with two threads
 * running frames (an event loop's workers), the summary must take the one the writer names,
 * not the first with frames.
 */
TEST(summary_without_a_mark_takes_the_thread_the_writer_names)
{
	struct synth_thread th[2];
	synth_init(&th[0], "worker-a", 100, 0, 1000);
	synth_special(&th[0], 1100, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_entry(&th[0], 1200, ID(fn_draw));
	synth_exit(&th[0], 1300);
	synth_special(&th[0], 1400, RB_MARK, AGENT_MARK_FRAME_END);
	/* worker-b's ring starts inside its hanging frame: no begin mark left */
	synth_init(&th[1], "worker-b", 101, 0, 1000);
	synth_entry(&th[1], 1050, ID(fn_main));
	synth_entry(&th[1], 1060, ID(fn_draw));
	th[1].anomaly = true;
	struct fixture fx;
	if (summarise(th, 2, "hang: a frame still running after 400 ms", 10, &fx)) {
		CHECK(!fx.s.anomaly_marked);
		CHECK_EQ_INT(fx.s.thread, 1);
		release(&fx);
	}
	synth_free(&th[0]);
	synth_free(&th[1]);
}

/* A trigger from outside (no anomaly mark) that lands as a frame begins: the window is the
 * frame before it, and the summary says how long the open one had run; an open frame as
 * long as the median complete one stays the window, and so does a hang's. */
TEST(summary_a_trigger_as_a_frame_begins_takes_the_frame_before)
{
	for (int variant = 0; variant < 3; variant++) {
		struct synth_thread ui;
		synth_init(&ui, "worker", 100, 0, 1000);
		for (int i = 0; i < 5; i++)
			normal_frame(&ui, 1000 + 1000 * (uint64_t)i);
		/* the last frame: begun at 6000, its draw 100 ticks (0, 1), or 1100 (2: longer
		 * than the median frame, 1000 ticks from one begin to the next) */
		synth_special(&ui, 6000, RB_MARK, AGENT_MARK_FRAME_BEGIN);
		synth_entry(&ui, 6010, ID(fn_draw));
		synth_exit(&ui, variant == 2 ? 7110 : 6110);
		ui.anomaly = variant == 1; /* a hang's thread, named by the writer */
		struct fixture fx;
		if (summarise(&ui, 1, variant == 1 ? "hang: test" : "external: test", 10, &fx)) {
			const struct summary_frames *fr = &fx.s.frames;
			CHECK(!fx.s.anomaly_marked);
			CHECK_EQ_INT((int)fx.s.window_kind, (int)SUMMARY_WINDOW_FRAME);
			if (variant == 0) { /* the frame 5000..6000: normal_frame's */
				CHECK_EQ_U64(fx.s.w0, 5000);
				CHECK_EQ_U64(fx.s.w1, 6000);
				CHECK_EQ_U64(fr->open_skipped, 110);
			} else {
				CHECK_EQ_U64(fx.s.w0, 6000);
				CHECK_EQ_U64(fr->open_skipped, 0);
			}
			size_t size;
			char *json = json_of(&fx, &size);
			CHECK(json && (strstr(json, "\"open_skipped_ns\":") != NULL) == (variant == 0));
			free(json);
			release(&fx);
		}
		synth_free(&ui);
	}
}

/* The time outside every traced call ran in the frame just outside the calls the ring has
 * open at the freeze (agent/analysis/outer.h), past the innermost frame when its trace
 * point answered at its exit (its call is whole in the ring), and is not named when the
 * stack does not hold the open calls or nothing lies outside them. */
TEST(summary_root_named_by_the_stack_outside_the_open_calls)
{
	enum { START = 1, MAIN, LOOP, F, G, H };
	struct agent_outer o = { 0 };
	const uint64_t stack[] = { START, MAIN, LOOP, F, G, H };
	for (size_t i = 0; i < sizeof(stack) / sizeof(stack[0]); i++)
		o.key[o.n++] = stack[i];
	const uint64_t open_hgf[] = { H, G, F }; /* innermost first: H answered at an entry */
	CHECK_EQ_U64(agent_outer_root(&o, open_hgf, 3), LOOP);
	const uint64_t open_gf[] = { G, F }; /* H answered at its exit */
	CHECK_EQ_U64(agent_outer_root(&o, open_gf, 2), LOOP);
	const uint64_t open_g[] = { G };
	CHECK_EQ_U64(agent_outer_root(&o, open_g, 1), F);
	/* At depth 0, the frame around the one that answered. */
	CHECK_EQ_U64(agent_outer_root(&o, NULL, 0), G);
	/* Blocked in a wrapped wait: H called the wait, it answered nothing. */
	o.waiting = true;
	CHECK_EQ_U64(agent_outer_root(&o, NULL, 0), H);
	CHECK_EQ_U64(agent_outer_root(&o, open_gf, 2), LOOP); /* H called no traced function */
	o.waiting = false;
	/* Ended by an entry to I, answered by its sled's thunk: I has no frame yet, and H,
	 * which called it, is running. A recursion's I further out is not the entered one. */
	o.entered = true;
	const uint64_t open_ihgf[] = { 99, G, F };
	CHECK_EQ_U64(agent_outer_root(&o, open_ihgf, 3), LOOP);
	const uint64_t open_main[] = { MAIN };
	CHECK_EQ_U64(agent_outer_root(&o, open_main, 1), H);
	CHECK_EQ_U64(agent_outer_root(&o, open_hgf, 3), LOOP); /* H entered, its frame made */
	o.entered = false;
	CHECK_EQ_U64(agent_outer_root(&o, open_main, 1), START);
	/* F jumped to G (a tail call): F has no frame, the loop's call of F stands for it */
	struct agent_outer tail = { 0 };
	const uint64_t tail_stack[] = { START, MAIN, LOOP, G, H };
	for (size_t i = 0; i < 5; i++)
		tail.key[tail.n++] = tail_stack[i];
	CHECK_EQ_U64(agent_outer_root(&tail, open_hgf, 3), 0); /* F not found: not named */
	tail.callee[2] = F;
	CHECK_EQ_U64(agent_outer_root(&tail, open_hgf, 3), LOOP);
	const uint64_t missing[] = { G, 99 };
	CHECK_EQ_U64(agent_outer_root(&o, missing, 2), 0);
	const uint64_t all[] = { H, G, F, LOOP, MAIN, START };
	CHECK_EQ_U64(agent_outer_root(&o, all, 6), 0);
	CHECK_EQ_U64(agent_outer_root(&o, open_gf, SIZE_MAX), 0);
	o.n = 0;
	CHECK_EQ_U64(agent_outer_root(&o, open_gf, 2), 0);
}
