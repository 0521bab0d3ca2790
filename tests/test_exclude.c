/* SPDX-License-Identifier: MIT */
/*
 * `jitt exclude`'s selection (agent/analysis/exclude.h) on a synthetic trace with exactly
 * known calls and times: the estimate of a trace point's cost, the order of the picks, the
 * budget, the kept top, GCC's substring matching (an entry that would exclude a kept
 * function is not listed; one that excludes others takes them along), unnamed functions,
 * where the excluded time goes, several traces, and the option file's form.
 */
#include "harness.h"
#include "synth.h"
#include "agent/analysis/exclude.h"
#include "agent/analysis/loops.h"
#include "agent/analysis/symbols.h"
#include "hal/timer.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Functions of this program, so ids resolve to names. "excl_tiny" is part of
 * "excl_tiny_twin", "excl_mid" of "excl_mid_heavy" and "excl_small" of
 * "excl_small_unseen", which the trace never calls: GCC's list matches substrings. */
static volatile int sink;
#define FN(name, v)                                            \
	__attribute__((noinline, used)) static void name(void) \
	{                                                      \
		sink = v;                                      \
	}
FN(excl_top, 1)
FN(excl_mid_heavy, 2)
FN(excl_tiny, 3)
FN(excl_small, 4)
FN(excl_mid, 5)
FN(excl_tiny_twin, 6)
FN(excl_small_unseen, 7)
/* Referenced, or the linker's --gc-sections drops it from the symbol table. */
static void (*volatile unseen_ref)(void) = excl_small_unseen;

#define ITER	2000
#define UNNAMED 0x10 /* no function's address: shown by module and offset, never listable */

/* One call of fn lasting d ticks, a unit u after *t: the caller's step from the last
 * record to the call (a trace point's end, the call, the next one's start). */
static void call(struct synth_thread *th, uint64_t *t, uint64_t u, uint64_t id, uint64_t d)
{
	*t += u;
	synth_entry(th, *t, id);
	*t += d;
	synth_exit(th, *t);
}

/*
 * excl_top calls, `iter` times: excl_mid_heavy (100 units), excl_tiny (1), excl_small (4),
 * excl_mid (20), the unnamed function (1), every 4th time excl_tiny_twin (30), each a unit
 * after the previous record, then works 10 units itself: 141 units a time, 31 more every
 * 4th. A unit is about 10 ns, whole ticks, so any timer gives exact ratios.
 */
static int write_trace(int iter, uint64_t u, char *path, size_t size)
{
	struct synth_thread th;
	uint64_t t = 1000;
	synth_init(&th, "main", 1, 0, t);
	synth_entry(&th, t, synth_id(excl_top));
	for (int i = 0; i < iter; i++) {
		call(&th, &t, u, synth_id(excl_mid_heavy), 100 * u);
		call(&th, &t, u, synth_id(excl_tiny), 1 * u);
		call(&th, &t, u, synth_id(excl_small), 4 * u);
		call(&th, &t, u, synth_id(excl_mid), 20 * u);
		call(&th, &t, u, UNNAMED, 1 * u);
		if (i % 4 == 0)
			call(&th, &t, u, synth_id(excl_tiny_twin), 30 * u);
		t += 10 * u;
	}
	synth_exit(&th, t);
	int e = synth_write(&th, 1, "exclude", path, size);
	synth_free(&th);
	return e;
}

static uint64_t unit(void)
{
	uint64_t u = hal_timer_freq() / 100000000u; /* ticks in 10 ns */
	return u ? u : 1;
}

static int load(struct exclude_set *s, const char *path)
{
	struct rb_trace t;
	char err[256];
	if (!CHECK(rb_trace_open(path, &t, err, sizeof(err)) == 0))
		return -EINVAL;
	struct agent_symbols syms;
	int e = agent_symbols_open(&syms, &t);
	if (!e) {
		e = exclude_add_trace(s, &t, &syms);
		agent_symbols_close(&syms);
	}
	rb_trace_close(&t);
	return e;
}

static const struct exclude_func *find(const struct exclude_set *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->f[i].name, name) == 0)
			return &s->f[i];
	static const struct exclude_func none = { .by = EXCLUDE_NONE, .clash = EXCLUDE_NONE };
	test_fail(__FILE__, __LINE__, "no function %s", name);
	return &none;
}

static uint32_t index_of(const struct exclude_set *s, const char *name)
{
	const struct exclude_func *f = find(s, name);
	return f >= s->f && f < s->f + s->n ? (uint32_t)(f - s->f) : EXCLUDE_NONE;
}

static int near(double a, double b)
{
	return fabs(a - b) <= 0.01 * fabs(b) + 1;
}

TEST(exclude_model_order_budget_keep_and_substrings)
{
	uint64_t u = unit();
	double un = (double)hal_ticks_to_ns(u, hal_timer_freq()); /* one unit in ns */
	char path[512];
	if (!CHECK(write_trace(ITER, u, path, sizeof(path)) == 0))
		return;
	struct exclude_set s;
	exclude_init(&s);
	if (!CHECK(load(&s, path) == 0))
		goto out;
	/* The trace's figures: calls of every function, the unnamed one included, and the
	 * running time (the top call spans it). */
	CHECK_EQ_U64(s.calls, 5 * ITER + ITER / 4 + 1);
	CHECK(near(s.traced_ns, (141.0 * ITER + 31.0 * ITER / 4) * un));
	CHECK_EQ_U64(find(&s, "excl_tiny")->calls, ITER);
	CHECK(near(find(&s, "excl_small")->self_ns, 4.0 * ITER * un));
	size_t unnamed = 0;
	for (size_t i = 0; i < s.n; i++)
		unnamed += (s.f[i].flags & (EXCLUDE_TRACED | EXCLUDE_LISTABLE)) == EXCLUDE_TRACED;
	CHECK_EQ_U64(unnamed, 1);
	CHECK(find(&s, "excl_tiny")->flags & EXCLUDE_LISTABLE);
	/* Known from the symbol table though never called: the substring check needs it. */
	CHECK(unseen_ref != NULL);
	CHECK(!(find(&s, "excl_small_unseen")->flags & EXCLUDE_TRACED));

	/* C estimated from the call cycle's halves: excl_tiny's one unit from entry to exit
	 * (the unnamed function is as short, but cannot be listed and is not used), and one
	 * unit from an exit to the next entry. */
	struct exclude_opts o = { .budget_pct = 1, .keep = 1, .min_calls = 100 };
	struct exclude_result r;
	if (!CHECK(exclude_select(&s, &o, &r) == 0))
		goto out;
	CHECK_EQ_U64(r.cost_from[0], index_of(&s, "excl_tiny"));
	CHECK(r.cost_from[1] != EXCLUDE_NONE && r.cost_from[1] != index_of(&s, "excl_mid_heavy"));
	CHECK(near(r.half_ns[1], un));
	CHECK(near(r.cost_ns, un));
	/* W = T - 2C x calls; the overhead now is 2C x calls / W. */
	double calls = 5.0 * ITER + ITER / 4 + 1,
	       w = (141.0 * ITER + 31.0 * ITER / 4 - 2 * calls) * un;
	CHECK(near(r.work_ns, w));
	CHECK(near(r.before * 1e4, 2 * calls * un / w * 1e4));
	/* Least self per call first: excl_tiny (taking excl_tiny_twin along), excl_small
	 * (taking the unseen excl_small_unseen along); excl_mid is part of the kept
	 * excl_mid_heavy's name: skipped. The 1% cannot be reached. */
	CHECK_EQ_U64(r.nlist, 2);
	if (r.nlist == 2) {
		CHECK_STR(s.f[r.list[0]].name, "excl_tiny");
		CHECK_STR(s.f[r.list[1]].name, "excl_small");
	}
	CHECK(find(&s, "excl_mid_heavy")->flags & EXCLUDE_KEPT);
	CHECK_EQ_U64(find(&s, "excl_tiny_twin")->by, index_of(&s, "excl_tiny"));
	CHECK_EQ_U64(find(&s, "excl_small_unseen")->by, index_of(&s, "excl_small"));
	CHECK_EQ_U64(find(&s, "excl_mid")->clash, index_of(&s, "excl_mid_heavy"));
	CHECK(!(find(&s, "excl_mid")->flags & EXCLUDE_EXCLUDED));
	CHECK_EQ_U64(r.skip_kept, 1);
	CHECK_EQ_U64(r.unseen, 1);
	CHECK_EQ_U64(r.excluded, 4);
	CHECK_EQ_U64(r.calls_saved, 2 * ITER + ITER / 4);
	CHECK_EQ_U64(r.unlistable, 1);
	CHECK_EQ_U64(r.unlistable_calls, ITER);
	CHECK(!r.reached);
	CHECK(near(r.after * 1e4, 2 * (calls - 2 * ITER - ITER / 4) * un / w * 1e4));
	/* The excluded time goes to the caller (its own: 15 units a time, 16 every 4th),
	 * less two trace points a call: excl_tiny's (1 unit) is all trace points, the twin
	 * leaves 28 units a call, excl_small 2. */
	CHECK(near(find(&s, "excl_top")->after_ns,
		   (15.0 * ITER + 29.0 * ITER / 4 + 2.0 * ITER) * un));
	CHECK(near(find(&s, "excl_mid_heavy")->after_ns, 100.0 * ITER * un));
	CHECK_EQ_U64((uint64_t)find(&s, "excl_tiny")->after_ns, 0);

	/* As GCC options, for `gcc @FILE`. */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (CHECK(f != NULL)) {
		CHECK(exclude_write_flags(f, &s, &r) == 0);
		fclose(f);
		CHECK_STR(text,
			  "-finstrument-functions-exclude-function-list=excl_tiny,excl_small\n");
		free(text);
	}
	exclude_result_free(&r);

	/* A budget the first pick meets stops there. */
	o.budget_pct = 7;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK(r.reached);
		CHECK_EQ_U64(r.nlist, 1);
		CHECK(!(find(&s, "excl_small")->flags & EXCLUDE_EXCLUDED));
		exclude_result_free(&r);
	}
	/* Nothing kept: excl_mid is listed, and takes excl_mid_heavy along. */
	o.budget_pct = 1;
	o.keep = 0;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK_EQ_U64(find(&s, "excl_mid_heavy")->by, index_of(&s, "excl_mid"));
		exclude_result_free(&r);
	}
	/* A budget met at once (the trace points are 14% of W): with the code's loops known,
	 * excl_tiny is short (2C = 2 units over 50% of its 1-unit calls) and goes, taking
	 * excl_tiny_twin along; with a loop in the twin, it stays: a short entry takes no
	 * loop along by substring. */
	o.budget_pct = 50;
	o.keep = 1;
	s.loop_files = 1;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK(r.reached);
		CHECK(find(&s, "excl_tiny")->flags & EXCLUDE_LISTED);
		CHECK_EQ_U64(find(&s, "excl_tiny_twin")->by, index_of(&s, "excl_tiny"));
		CHECK_EQ_U64(r.shorts, r.nlist);
		exclude_result_free(&r);
	}
	((struct exclude_func *)find(&s, "excl_tiny_twin"))->flags |= EXCLUDE_LOOP;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK(!(find(&s, "excl_tiny")->flags & EXCLUDE_EXCLUDED));
		CHECK(!(find(&s, "excl_tiny_twin")->flags & EXCLUDE_EXCLUDED));
		exclude_result_free(&r);
	}
	((struct exclude_func *)find(&s, "excl_tiny_twin"))->flags &= ~EXCLUDE_LOOP;
	s.loop_files = 0;
	o.budget_pct = 1;
	o.keep = 0;
	/* A given cost; one too large for the trace is refused. */
	o.cost_ns = 2 * un;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK_EQ_U64(r.cost_from[0], EXCLUDE_NONE);
		CHECK(near(r.cost_ns, 2 * un));
		exclude_result_free(&r);
	}
	o.cost_ns = 1e6;
	CHECK_EQ_INT(exclude_select(&s, &o, &r), -ERANGE);

	/* A second trace adds up: twice the calls and time, the same picks. */
	if (CHECK(load(&s, path) == 0)) {
		CHECK_EQ_U64(s.traces, 2);
		CHECK_EQ_U64(find(&s, "excl_tiny")->calls, 2 * ITER);
		o = (struct exclude_opts){ .budget_pct = 1, .keep = 1, .min_calls = 100 };
		if (CHECK(exclude_select(&s, &o, &r) == 0)) {
			CHECK_EQ_U64(r.nlist, 2);
			CHECK(near(r.after * 1e4,
				   2 * (calls - 2 * ITER - ITER / 4) * un / w * 1e4));
			exclude_result_free(&r);
		}
	}
out:
	exclude_free(&s);
}

TEST(exclude_needs_a_cost_when_no_leaf_has_enough_calls)
{
	uint64_t u = unit();
	char path[512];
	if (!CHECK(write_trace(10, u, path, sizeof(path)) == 0))
		return;
	struct exclude_set s;
	exclude_init(&s);
	if (CHECK(load(&s, path) == 0)) {
		struct exclude_opts o = { .budget_pct = 10, .keep = 1, .min_calls = 1 };
		struct exclude_result r;
		CHECK_EQ_INT(exclude_select(&s, &o, &r), -ERANGE);
		o.cost_ns = 1;
		if (CHECK(exclude_select(&s, &o, &r) == 0))
			exclude_result_free(&r);
	}
	exclude_free(&s);
}

TEST(exclude_option_lines_hold_at_most_32_names)
{
	struct exclude_func f[33];
	uint32_t list[33];
	char names[33][8];
	for (int i = 0; i < 33; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		f[i] = (struct exclude_func){ .name = names[i] };
		list[i] = (uint32_t)i;
	}
	struct exclude_set s = { .f = f, .n = 33 };
	struct exclude_result r = { .list = list, .nlist = 33 };
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	if (!CHECK(out != NULL))
		return;
	CHECK(exclude_write_flags(out, &s, &r) == 0);
	fclose(out);
	/* Two options: GCC adds up repeated ones. */
	const char *second = text ? strchr(text, '\n') : NULL;
	CHECK(text &&
	      strncmp(text, "-finstrument-functions-exclude-function-list=f0,f1,", 51) == 0);
	CHECK(second &&
	      strcmp(second, "\n-finstrument-functions-exclude-function-list=f32\n") == 0);
	free(text);
	/* An empty list is an empty file: `gcc @FILE` then adds nothing. */
	r.nlist = 0;
	text = NULL;
	out = open_memstream(&text, &len);
	if (CHECK(out != NULL)) {
		exclude_write_flags(out, &s, &r);
		fclose(out);
		CHECK_EQ_U64(len, 0);
		free(text);
	}
}

TEST(exclude_estimate_ignores_a_preempted_call)
{
	/* 2000 calls of excl_tiny, one unit each, but one of them preempted for 10 ms: the
	 * estimate of C stays one unit, and the silence counts neither as running time nor
	 * as the function's self time. */
	uint64_t u = unit();
	double un = (double)hal_ticks_to_ns(u, hal_timer_freq());
	struct synth_thread th;
	uint64_t t = 1000;
	synth_init(&th, "main", 1, 0, t);
	synth_entry(&th, t, synth_id(excl_top));
	for (int i = 0; i < ITER; i++) {
		call(&th, &t, u, synth_id(excl_tiny), i == 7 ? 1000000 * u : u);
		call(&th, &t, u, synth_id(excl_small), 20 * u);
	}
	synth_exit(&th, t);
	char path[512];
	int e = synth_write(&th, 1, "exclude", path, sizeof(path));
	synth_free(&th);
	if (!CHECK(e == 0))
		return;
	struct exclude_set s;
	exclude_init(&s);
	struct exclude_opts o = { .budget_pct = 10, .keep = 1, .min_calls = 100 };
	struct exclude_result r;
	if (CHECK(load(&s, path) == 0) && CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK_EQ_U64(r.cost_from[0], index_of(&s, "excl_tiny"));
		CHECK(near(r.cost_ns, un));
		CHECK_EQ_U64(find(&s, "excl_tiny")->halves[0], ITER - 1);
		CHECK(near(find(&s, "excl_tiny")->self_ns, (ITER - 1) * un));
		CHECK_EQ_U64(s.silences, 1);
		CHECK(near(s.silent_ns, 1000000 * un));
		CHECK(near(s.traced_ns, (23.0 * ITER - 1) * un));
		exclude_result_free(&r);
	}
	exclude_free(&s);
}

/*
 * An interpreter's shape, C = 4 units (given): excl_mid_heavy is the bytecode loop, 60
 * units of its own work a call; excl_small calls the helper excl_tiny 20 times, each call
 * 1 unit of work inside its 4-unit trace point. excl_top works `top` units itself.
 * Traced self time per iteration: excl_tiny 100 (20 x 5), excl_small 84 (its 21 steps),
 * excl_mid_heavy 64; without the trace points: excl_mid_heavy 60, excl_tiny 20,
 * excl_small 0. The helper looks heaviest only because of its trace points.
 */
static int write_interpreter(uint64_t u, uint64_t top, char *path, size_t size)
{
	struct synth_thread th;
	uint64_t t = 1000;
	synth_init(&th, "main", 1, 0, t);
	synth_entry(&th, t, synth_id(excl_top));
	for (int i = 0; i < ITER; i++) {
		call(&th, &t, 4 * u, synth_id(excl_mid_heavy), 64 * u);
		t += 4 * u;
		synth_entry(&th, t, synth_id(excl_small));
		for (int k = 0; k < 20; k++)
			call(&th, &t, 4 * u, synth_id(excl_tiny), 5 * u);
		t += 4 * u;
		synth_exit(&th, t);
		t += top * u;
	}
	synth_exit(&th, t);
	int e = synth_write(&th, 1, "exclude", path, size);
	synth_free(&th);
	return e;
}

TEST(exclude_ranks_by_self_time_without_the_trace_points)
{
	uint64_t u = unit();
	double un = (double)hal_ticks_to_ns(u, hal_timer_freq());
	char path[512];
	if (!CHECK(write_interpreter(u, 10, path, sizeof(path)) == 0))
		return;
	struct exclude_set s;
	exclude_init(&s);
	struct exclude_opts o = { .cost_ns = 4 * un, .budget_pct = 10, .keep = 1,
				  .min_calls = 100 };
	struct exclude_result r;
	if (!CHECK(load(&s, path) == 0) || !CHECK(exclude_select(&s, &o, &r) == 0))
		goto out;
	const struct exclude_func *tiny = find(&s, "excl_tiny"), *heavy = find(&s, "excl_mid_heavy"),
				  *small = find(&s, "excl_small");
	/* Traced, the helper is first... */
	CHECK(tiny->self_ns > small->self_ns && small->self_ns > heavy->self_ns);
	CHECK(near(tiny->self_ns, 100.0 * ITER * un));
	/* ...without the trace points (its own calls' C, and C for each call it makes), the
	 * loop is, and it is the one kept. */
	CHECK_EQ_U64(small->callees, 20 * ITER);
	CHECK(near(heavy->plain_ns, 60.0 * ITER * un));
	CHECK(near(tiny->plain_ns, 20.0 * ITER * un));
	CHECK(small->plain_ns <= 0.01 * ITER * un);
	CHECK(heavy->flags & EXCLUDE_KEPT);
	CHECK(!(tiny->flags & EXCLUDE_KEPT));
	/* Per call: excl_small's inclusive time is its helpers' work, 20 units. */
	CHECK(near(exclude_self_per_call(tiny), un));
	CHECK(near(exclude_incl_per_call(small), 20 * un));
	CHECK(near(exclude_incl_per_call(heavy), 60 * un));
	/* W is the plain times' sum: 60 + 20 + 10 (excl_top's own) a time. */
	CHECK(near(r.work_ns, 90.0 * ITER * un));
	/* The helper is excluded (least self per call), and the saving, its trace points,
	 * is predicted traced and off: D = 5% of C by default. */
	CHECK(tiny->flags & EXCLUDE_EXCLUDED);
	CHECK(!(heavy->flags & EXCLUDE_EXCLUDED));
	CHECK(near(r.off_ns, 0.2 * un));
	CHECK(near(r.off_before * 1e4, r.before * 0.05 * 1e4));
	CHECK(near(r.off_after * 1e4, r.after * 0.05 * 1e4));
	exclude_result_free(&r);
	o.off_ns = un;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK(near(r.off_before * 1e4, r.before / 4 * 1e4));
		exclude_result_free(&r);
	}
	/* The top 3 are the loop, the helper and excl_top; the helper's trace points (8
	 * units a call) cost more than its own time (1): it is not kept for being there. */
	o.keep = 3;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK(heavy->flags & EXCLUDE_KEPT);
		CHECK(find(&s, "excl_top")->flags & EXCLUDE_KEPT);
		CHECK(!(tiny->flags & EXCLUDE_KEPT));
		CHECK(tiny->flags & EXCLUDE_COSTLY);
		CHECK_EQ_U64(r.costly, 1);
		exclude_result_free(&r);
	}
	/* A budget met at once (200%: the trace points are 196% of W) lists nothing, but
	 * for short calls once the code's loops are known (exclude.h): the helper's 8 units
	 * of trace points are over 200% of its 1-unit calls, and it goes (excl_small's 20
	 * units and the loop's 60 are not short); with a loop it would stay. */
	o.keep = 1;
	o.budget_pct = 200;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK_EQ_U64(r.nlist, 0);
		exclude_result_free(&r);
	}
	s.loop_files = 1;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK(tiny->flags & EXCLUDE_LISTED);
		CHECK(!(heavy->flags & EXCLUDE_EXCLUDED));
		CHECK(!(small->flags & EXCLUDE_EXCLUDED));
		CHECK_EQ_U64(r.shorts, 1);
		CHECK_EQ_U64(r.nlist, 1);
		exclude_result_free(&r);
	}
	((struct exclude_func *)tiny)->flags |= EXCLUDE_LOOP;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK(!(tiny->flags & EXCLUDE_EXCLUDED));
		exclude_result_free(&r);
	}
	((struct exclude_func *)tiny)->flags &= ~EXCLUDE_LOOP;
	s.loop_files = 0;
	/* A measured ratio fits C: T = 266 units a time, W = T / R. */
	o = (struct exclude_opts){ .ratio = 266.0 / 90, .budget_pct = 10, .min_calls = 100 };
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK_EQ_U64(r.cost_from[0], EXCLUDE_NONE);
		CHECK(near(r.cost_ns * 100, 4 * un * 100));
		CHECK(near(r.work_ns, 90.0 * ITER * un));
		exclude_result_free(&r);
	}
out:
	exclude_free(&s);
}

TEST(exclude_never_drops_what_a_profile_puts_on_top)
{
	/* excl_top works 200 units a time: W = 280 a time, excl_top 71% of it, the loop 21%,
	 * the helper 7%. */
	uint64_t u = unit();
	double un = (double)hal_ticks_to_ns(u, hal_timer_freq());
	char path[512];
	if (!CHECK(write_interpreter(u, 200, path, sizeof(path)) == 0))
		return;
	struct exclude_set s;
	exclude_init(&s);
	struct exclude_opts o = { .cost_ns = 4 * un, .budget_pct = 0, .keep = 0,
				  .min_calls = 1 };
	struct exclude_result r;
	if (!CHECK(load(&s, path) == 0))
		goto out;
	/* Nothing kept nor protected: the loop goes too (what --keep 0 used to do). */
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK(find(&s, "excl_mid_heavy")->flags & EXCLUDE_EXCLUDED);
		exclude_result_free(&r);
	}
	/* Protected from 10%: the loop and excl_top stay whatever --keep is; the helper (7%)
	 * and excl_small go. */
	o.protect_pct = 10;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK_EQ_U64(r.protected, 2);
		CHECK(find(&s, "excl_mid_heavy")->flags & EXCLUDE_PROTECTED);
		CHECK(find(&s, "excl_top")->flags & EXCLUDE_PROTECTED);
		CHECK(!(find(&s, "excl_mid_heavy")->flags & EXCLUDE_EXCLUDED));
		CHECK(find(&s, "excl_tiny")->flags & EXCLUDE_EXCLUDED);
		CHECK(find(&s, "excl_small")->flags & EXCLUDE_EXCLUDED);
		/* What keeping them costs: their trace points, 2C a call. */
		CHECK(near(r.kept_ns, 2 * 4 * un * (ITER + 1.0)));
		exclude_result_free(&r);
	}
	/* excl_small's own time is 0, its inclusive time 20 units a time, 7% of W: with a
	 * loop, it is a step to 7% of the time that an estimate of its own share could miss
	 * (exclude.h), and protected at 5%; loop-free, its time per call is bounded by its
	 * length, and it goes. */
	o.protect_pct = 5;
	struct exclude_func *small = (struct exclude_func *)find(&s, "excl_small");
	small->flags |= EXCLUDE_LOOP;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK_EQ_U64(r.protected_loops, 1);
		CHECK(small->flags & EXCLUDE_PROTECTED);
		CHECK(!(small->flags & EXCLUDE_EXCLUDED));
		exclude_result_free(&r);
	}
	small->flags &= ~EXCLUDE_LOOP;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK_EQ_U64(r.protected_loops, 0);
		CHECK(small->flags & EXCLUDE_EXCLUDED);
		exclude_result_free(&r);
	}
	o.protect_pct = 10;
	/* Calls of 30 units or more are not candidates: the loop's 60 (were it not
	 * protected) and excl_top's; excl_small's 20 and the helper's 1 are. */
	o.protect_pct = 0;
	o.min_incl_ns = 30 * un;
	if (CHECK(exclude_select(&s, &o, &r) == 0)) {
		CHECK_EQ_U64(r.skip_long, 2);
		CHECK(!(find(&s, "excl_mid_heavy")->flags & EXCLUDE_EXCLUDED));
		CHECK(find(&s, "excl_tiny")->flags & EXCLUDE_EXCLUDED);
		CHECK(find(&s, "excl_small")->flags & EXCLUDE_EXCLUDED);
		exclude_result_free(&r);
	}
out:
	exclude_free(&s);
}

TEST(exclude_inclusive_time_counts_a_recursive_function_once)
{
	/* excl_mid calls itself, which calls excl_tiny; C = 4 units. The outer excl_mid
	 * works 7 units, the inner 3, excl_tiny 1 inside its trace point: one outermost
	 * call of 11 units without the trace points, and two calls of 10 units of self. */
	uint64_t u = unit();
	double un = (double)hal_ticks_to_ns(u, hal_timer_freq());
	struct synth_thread th;
	uint64_t t = 1000;
	synth_init(&th, "main", 1, 0, t);
	synth_entry(&th, t, synth_id(excl_top));
	for (int i = 0; i < ITER; i++) {
		t += 4 * u;
		synth_entry(&th, t, synth_id(excl_mid));
		t += 4 * u;
		synth_entry(&th, t, synth_id(excl_mid));
		call(&th, &t, 4 * u, synth_id(excl_tiny), 5 * u);
		t += 7 * u;
		synth_exit(&th, t);
		t += 11 * u;
		synth_exit(&th, t);
		t += 10 * u;
	}
	synth_exit(&th, t);
	char path[512];
	int e = synth_write(&th, 1, "exclude", path, sizeof(path));
	synth_free(&th);
	if (!CHECK(e == 0))
		return;
	struct exclude_set s;
	exclude_init(&s);
	struct exclude_opts o = { .cost_ns = 4 * un, .budget_pct = 10, .keep = 1,
				  .min_calls = 100 };
	struct exclude_result r;
	if (CHECK(load(&s, path) == 0) && CHECK(exclude_select(&s, &o, &r) == 0)) {
		const struct exclude_func *mid = find(&s, "excl_mid");
		CHECK_EQ_U64(mid->calls, 2 * ITER);
		CHECK_EQ_U64(mid->outer, ITER);
		CHECK_EQ_U64(mid->below, 2 * ITER);
		CHECK(near(mid->plain_ns, 10.0 * ITER * un));
		CHECK(near(exclude_incl_per_call(mid), 11 * un));
		exclude_result_free(&r);
	}
	exclude_free(&s);
}

TEST(exclude_counts_the_calls_a_ring_began_inside_as_outside)
{
	/* excl_top calls excl_tiny 2000 times in a ring of 1024 slots: excl_top's entry is
	 * overwritten, so its frame is no function's; its time is outside, 20 units a call
	 * of excl_tiny traced, 16 without the caller's half of that call's trace points
	 * (C = 4 units). */
	uint64_t u = unit();
	double un = (double)hal_ticks_to_ns(u, hal_timer_freq());
	struct synth_thread th;
	uint64_t t = 1000;
	synth_init(&th, "main", 1, 1024, t);
	synth_entry(&th, t, synth_id(excl_top));
	for (int i = 0; i < ITER; i++) {
		call(&th, &t, 4 * u, synth_id(excl_tiny), 5 * u);
		t += 16 * u;
	}
	synth_exit(&th, t);
	char path[512];
	int e = synth_write(&th, 1, "exclude", path, sizeof(path));
	synth_free(&th);
	if (!CHECK(e == 0))
		return;
	struct exclude_set s;
	exclude_init(&s);
	struct exclude_opts o = { .cost_ns = 4 * un, .budget_pct = 10, .keep = 1,
				  .min_calls = 100 };
	struct exclude_result r;
	if (CHECK(load(&s, path) == 0) && CHECK(exclude_select(&s, &o, &r) == 0)) {
		uint64_t k = find(&s, "excl_tiny")->calls;
		CHECK(k > 100 && k < ITER);
		CHECK(!(find(&s, "excl_top")->flags & EXCLUDE_TRACED));
		CHECK_EQ_U64(r.unlistable, 0);
		CHECK(fabs(r.outside_ns - 16.0 * (double)k * un) <= 40 * un);
		CHECK(fabs(s.outside_ns - 20.0 * (double)k * un) <= 40 * un);
		exclude_result_free(&r);
	}
	exclude_free(&s);
}

/* objdump's lines, as agent_loops reads them (loops.h): what each instruction does to the
 * flow of control. A branch into the function (or its cold part) keeps its target; one out
 * of it is a tail call (JUMP -> END) or a branch not taken (-> NEXT); a call goes on. */
TEST(exclude_loops_read_from_objdump_lines)
{
	enum { O = 99 }; /* no instruction: a header or another line */
	static const struct {
		const char *line;
		int flow;
		unsigned long long to;
	} lines[] = {
		{ "  401000:\tjne    400ff0 <walk+0x10>", O, 0 }, /* no function yet */
		{ "0000000000400fe0 <walk>:", O, 0 },
		{ "  400ff8:\tjne    400ff0 <walk+0x10>", AGENT_FLOW_BRANCH, 0x400ff0 },
		{ "  400ff8:\tjmp    400fe0 <walk>", AGENT_FLOW_JUMP, 0x400fe0 },
		{ "  400ff8:\tbnd jmp 400fe0 <walk>", AGENT_FLOW_JUMP, 0x400fe0 },
		{ "  400ff8:\tjne    401008 <walk+0x28>", AGENT_FLOW_BRANCH, 0x401008 },
		{ "  400ff8:\tjne    401008 <walk.cold+0x8>", AGENT_FLOW_BRANCH, 0x401008 },
		{ "  400ff8:\tcall   400fe0 <walk>", AGENT_FLOW_NEXT, 0 },
		{ "  400ff8:\tjmp    400f00 <other+0x4>", AGENT_FLOW_END, 0 },
		{ "  400ff8:\tje     400f00 <walker+0x4>", AGENT_FLOW_NEXT, 0 },
		{ "  400ff8:\tlea    -0x1f(%rip),%rdi        # 400fe0 <walk>", AGENT_FLOW_NEXT, 0 },
		{ "  400ff8:\tnotrack jmp *%rax", AGENT_FLOW_ANY, 0 },
		{ "  400ff8:\tret", AGENT_FLOW_END, 0 },
		{ "  400ff8:\tud2", AGENT_FLOW_END, 0 },
		{ "  400ff8:\t...", AGENT_FLOW_NEXT, 0 },
		{ "0000000000400f00 <walk.cold>:", O, 0 },
		{ "  400f08:\tjmp    400ff0 <walk+0x10>", AGENT_FLOW_JUMP, 0x400ff0 },
		/* aarch64: b.cond, cbz, tbnz; bl is a call, br an indirect jump. */
		{ "0000000000400570 <find.part.0>:", O, 0 },
		{ "  400590:\tb.ne\t400578 <find.part.0+0x8>  // b.any", AGENT_FLOW_BRANCH, 0x400578 },
		{ "  400590:\tcbnz\tx1, 400578 <find.part.0+0x8>", AGENT_FLOW_BRANCH, 0x400578 },
		{ "  400590:\ttbnz\tw0, #3, 400578 <find.part.0+0x8>", AGENT_FLOW_BRANCH, 0x400578 },
		{ "  400590:\tb\t400578 <find.part.0+0x8>", AGENT_FLOW_JUMP, 0x400578 },
		{ "  400590:\tbl\t400570 <find.part.0>", AGENT_FLOW_NEXT, 0 },
		{ "  400590:\tadr\tx0, 400578 <find.part.0+0x8>", AGENT_FLOW_NEXT, 0 },
		{ "  400590:\tbr\tx16", AGENT_FLOW_ANY, 0 },
		{ "  400590:\tret", AGENT_FLOW_END, 0 },
		/* ARM (Thumb): bne.n, b.w; bic and bfi are no branches; returns and jump tables. */
		{ "00010400 <scan>:", O, 0 },
		{ "   1040c:\tbne.n\t10404 <scan+0x4>", AGENT_FLOW_BRANCH, 0x10404 },
		{ "   1040c:\tb.w\t10400 <scan>", AGENT_FLOW_JUMP, 0x10400 },
		{ "   1040c:\tbic\tr0, r0, #10404", AGENT_FLOW_NEXT, 0 },
		{ "   1040c:\tbx\tlr", AGENT_FLOW_END, 0 },
		{ "   1040c:\tbx\tr3", AGENT_FLOW_ANY, 0 },
		{ "   1040c:\tpop\t{r4, r5, pc}", AGENT_FLOW_END, 0 },
		{ "   1040c:\tpop\t{r4, r5}", AGENT_FLOW_NEXT, 0 },
		{ "   1040c:\tldr.w\tpc, [sp], #4", AGENT_FLOW_END, 0 },
		{ "   1040c:\tldr\tpc, [pc, r3, lsl #2]", AGENT_FLOW_ANY, 0 },
		{ "   1040c:\ttbb\t[pc, r3]", AGENT_FLOW_ANY, 0 },
		{ "   1040c:\tbxeq\tlr", AGENT_FLOW_NEXT, 0 }, /* in an IT block: may not return */
		/* Garbage and cut lines. */
		{ "", O, 0 },
		{ "Disassembly of section .text:", O, 0 },
		{ "  1040c:\tbne.n\t10404 <scan", AGENT_FLOW_NEXT, 0 },
		{ "  1040c:\tbne.n\t<scan>", AGENT_FLOW_NEXT, 0 },
		{ "deadbeef <", O, 0 },
	};
	char f[64] = "";
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct agent_insn insn = { .to = 0 };
		enum agent_line_kind k = agent_code_line(lines[i].line, f, f, sizeof(f), &insn);
		int got = k == AGENT_LINE_INSN ? (int)insn.flow : O;
		unsigned long long to = got == AGENT_FLOW_BRANCH || got == AGENT_FLOW_JUMP ? insn.to : 0;
		if (got != lines[i].flow || to != lines[i].to)
			test_fail(__FILE__, __LINE__, "\"%s\" (in %s): flow %d to %llx, wanted %d to %llx",
				  lines[i].line, f, got, to, lines[i].flow, lines[i].to);
		if (i == 1)
			CHECK_STR(f, "walk");
	}
	CHECK_STR(f, "scan");
	CHECK_EQ_U64(agent_code_base("walk.cold"), 4);
	CHECK_EQ_U64(agent_code_base("walk.part.0.cold.3"), 11);
	CHECK_EQ_U64(agent_code_base("walk.colder"), 11);
	CHECK_EQ_U64(agent_code_base("walk"), 4);
}

/* Functions as graphs (loops.h): a cycle is a loop, a branch back alone is not (an exit
 * block placed first), a loop through the cold part is, and where the code cannot say (an
 * indirect jump, a target between instructions) it is one. */
TEST(exclude_loops_are_cycles_not_branches_back)
{
#define N AGENT_FLOW_NEXT
#define B AGENT_FLOW_BRANCH
#define J AGENT_FLOW_JUMP
#define E AGENT_FLOW_END
#define A AGENT_FLOW_ANY
	static const struct {
		const char *what;
		bool loop;
		size_t n;
		struct agent_insn insn[6];
	} cases[] = {
		{ "straight", false, 3, { { 0, 0, N, 0 }, { 1, 0, N, 0 }, { 2, 0, E, 0 } } },
		{ "exit block first, branched back to", false, 4,
		  { { 0, 0, N, 0 }, { 1, 0, E, 0 }, { 2, 1, B, 0 }, { 3, 0, E, 0 } } },
		{ "a loop", true, 4,
		  { { 0, 0, N, 0 }, { 1, 0, N, 0 }, { 2, 1, B, 0 }, { 3, 0, E, 0 } } },
		{ "a jump back, reached by a forward branch", true, 5,
		  { { 0, 3, B, 0 }, { 1, 0, N, 0 }, { 2, 4, B, 0 }, { 3, 1, J, 0 }, { 4, 0, E, 0 } } },
		{ "through the cold part", true, 5,
		  { { 0, 0, N, 1 }, { 1, 3, J, 1 }, { 2, 0, N, 0 }, { 3, 5, B, 0 }, { 5, 0, J, 0 } } },
		{ "into the cold part and out", false, 5,
		  { { 0, 0, N, 1 }, { 1, 4, J, 1 }, { 2, 0, N, 0 }, { 3, 0, B, 0 }, { 4, 0, E, 0 } } },
		{ "no fall-through across parts", false, 3,
		  { { 0, 0, N, 1 }, { 1, 0, B, 0 }, { 2, 0, E, 0 } } },
		{ "a jump table", true, 2, { { 0, 0, A, 0 }, { 1, 0, E, 0 } } },
		{ "a target between instructions", true, 2, { { 0, 3, B, 0 }, { 4, 0, E, 0 } } },
		{ "a jump to itself", true, 1, { { 0, 0, J, 0 } } },
	};
	unsigned char seen[6];
	size_t stack[6];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (agent_code_loops(cases[i].insn, cases[i].n, seen, stack) != cases[i].loop)
			test_fail(__FILE__, __LINE__, "%s: loop %d, wanted %d", cases[i].what,
				  !cases[i].loop, cases[i].loop);
#undef N
#undef B
#undef J
#undef E
#undef A
}

/* Lines of garbage (a hostile binary's symbol names reach objdump's output): no crash, and
 * a name never longer than its buffer. */
TEST(exclude_loops_garbage_lines)
{
	static const char alphabet[] = "0123456789abcdef <>+:\t.xjbne#/";
	unsigned seed = 1;
	char line[200], f[16] = "";
	int insns = 0;
	for (int i = 0; i < 200000; i++) {
		size_t n = (seed = seed * 1103515245u + 12345u) % sizeof(line);
		for (size_t k = 0; k < n; k++)
			line[k] = alphabet[((seed = seed * 1103515245u + 12345u) >> 16) %
					   (sizeof(alphabet) - 1)];
		line[n] = '\0';
		struct agent_insn insn;
		insns += agent_code_line(line, f, f, sizeof(f), &insn) == AGENT_LINE_INSN;
		CHECK(strlen(f) < sizeof(f));
	}
	printf("    %d of 200000 garbage lines read as instructions\n", insns);
}
