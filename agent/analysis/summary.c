/* SPDX-License-Identifier: MIT */
#include "agent/analysis/summary.h"
#include "agent/analysis/sched.h"
#include "agent/marks.h"
#include "agent/analysis/symbols.h"
#include "hal/timer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 4096

struct mark {
	uint64_t ts;
	uint32_t arg;
};

struct wake {
	uint64_t ts;
	uint32_t key;
};

/* Per thread: its decoder (kept for every pass), and its special records in time order. */
struct thread {
	struct rb_decoder dec;
	struct mark *marks;
	struct wake *wakes;
	struct sched_sample *stats; /* schedstat samples (the fallback source) */
	size_t nmarks, nwakes, capm, capw, nstats, caps;
	int failed;
};

struct wait {
	uint64_t begin, end;
	uint32_t key;
	bool open;
	uint64_t waiter;
};

/* One decoding pass over a thread: its tree in the lanes asked for, and its waits that
 * touch [keep_from, keep_to]. */
struct pass {
	struct cct c;
	uint64_t open_end[SUMMARY_MAX_DEPTH]; /* summary.h */
	size_t nopen;
	struct wait *waits;
	size_t nwaits, cap;
	uint64_t keep_from, keep_to;
	int failed;
};

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 64;
	void *q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* The decoder hands special records newest first; they are reversed afterwards. */
static void on_special(void *ctx, const struct rb_event *e)
{
	struct thread *t = ctx;
	if (e->kind == RB_EV_MARK) {
		if (grow((void **)&t->marks, &t->capm, t->nmarks, sizeof(*t->marks)))
			t->failed = -ENOMEM;
		else
			t->marks[t->nmarks++] = (struct mark){ e->ts, e->arg };
	} else if (e->kind == RB_EV_WAKE) {
		if (grow((void **)&t->wakes, &t->capw, t->nwakes, sizeof(*t->wakes)))
			t->failed = -ENOMEM;
		else
			t->wakes[t->nwakes++] = (struct wake){ e->ts, e->arg };
	} else if (e->kind == RB_EV_SCHEDSTAT) {
		if (grow((void **)&t->stats, &t->caps, t->nstats, sizeof(*t->stats)))
			t->failed = -ENOMEM;
		else
			t->stats[t->nstats++] = (struct sched_sample){ e->ts, e->arg, e->raw };
	}
}

static void reverse(void *base, size_t n, size_t size)
{
	char tmp[32], *a = base;
	for (size_t i = 0; i < n / 2; i++) {
		memcpy(tmp, a + i * size, size);
		memcpy(a + i * size, a + (n - 1 - i) * size, size);
		memcpy(a + (n - 1 - i) * size, tmp, size);
	}
}

static uint64_t key_of(void *ctx, const struct rb_event *e)
{
	return agent_func_key(ctx, e);
}

static uint64_t overlap(uint64_t a, uint64_t b, uint64_t lo, uint64_t hi)
{
	uint64_t x = a > lo ? a : lo, y = b < hi ? b : hi;
	return y > x ? y - x : 0;
}

static void pass_free(struct pass *p)
{
	cct_free(&p->c);
	free(p->waits);
	memset(p, 0, sizeof(*p));
}

/* A wait as the tree counted it (cct_opts.on_wait): kept when it touches the interval. The
 * waits and the blocked time come from the same walk, so "blocked on" names a wait the
 * header counted. */
static void on_wait(void *ctx, const struct cct_wait *w)
{
	struct pass *p = ctx;
	if (w->end < p->keep_from || w->begin > p->keep_to || p->failed)
		return;
	if (grow((void **)&p->waits, &p->cap, p->nwaits, sizeof(*p->waits))) {
		p->failed = -ENOMEM;
		return;
	}
	p->waits[p->nwaits++] = (struct wait){ .begin = w->begin,
					       .end = w->end,
					       .key = w->key,
					       .open = w->open,
					       .waiter = p->c.node[w->node].func };
}

/* The tree's options for thread i: blocked is its time asleep where the trace has its
 * switch records (cct.h), from the first of them on where some were lost (a ring that
 * lapped: agent/runtime/sched.c). */
static struct cct_opts pass_opts(const struct rb_trace *t, int i, unsigned chains)
{
	return (struct cct_opts){ .key = key_of,
				  .ctx = (void *)t,
				  .chains = chains,
				  .switches = t->threads[i].sched_on,
				  .switches_from = rb_thread_switches_from(&t->threads[i]),
				  .on_wait = on_wait };
}

static int run_pass(struct thread *th, struct cct_opts *o, uint64_t keep_from, uint64_t keep_to,
		    struct pass *p)
{
	memset(p, 0, sizeof(*p));
	p->keep_from = keep_from;
	p->keep_to = keep_to;
	o->wait_ctx = p;
	int err = cct_init(&p->c, o, th->dec.open_at_start);
	if (err)
		return err;
	struct rb_event *ev = malloc(BATCH * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	rb_decoder_rewind(&th->dec);
	size_t n;
	while (!err && (n = rb_decoder_read(&th->dec, ev, BATCH)) > 0)
		err = cct_add_n(&p->c, ev, n);
	free(ev);
	/* The calls open at the freeze, innermost first, before cct_finish closes them; first
	 * the one whose exit the ring ends with, if it does: the stop was answered in its exit
	 * trace point, so it is still on the stack. */
	if (!err)
		p->nopen = cct_open_calls(&p->c, p->open_end, SUMMARY_MAX_DEPTH);
	if (!err)
		err = cct_finish(&p->c, th->dec.end_ts);
	return err ? err : p->failed;
}

/* ---- the window and the frames ---- */

struct frame_span {
	uint64_t begin, end;
	bool complete;
	size_t begin_mark; /* index of its begin mark in the thread's marks */
};

static int frames_of(const struct thread *th, struct frame_span **out, size_t *count)
{
	struct frame_span *f = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < th->nmarks; i++) {
		const struct mark *m = &th->marks[i];
		if (m->arg != AGENT_MARK_FRAME_BEGIN && m->arg != AGENT_MARK_FRAME_END)
			continue;
		if (n && !f[n - 1].complete) { /* a begin ends the previous frame (jitt_frame) */
			f[n - 1].end = m->ts;
			f[n - 1].complete = true;
		}
		if (m->arg == AGENT_MARK_FRAME_BEGIN) {
			if (grow((void **)&f, &cap, n, sizeof(*f))) {
				free(f);
				return -ENOMEM;
			}
			f[n++] = (struct frame_span){ .begin = m->ts, .begin_mark = i };
		}
	}
	*out = f;
	*count = n;
	return 0;
}

/* The k-th smallest of v[0..n) (0-based), moving values around: quickselect, linear on
 * average, where sorting tens of thousands of frame times would cost more than the rest. */
static uint64_t kth(uint64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n; /* k is in [lo, hi) */
	while (hi - lo > 1) {
		uint64_t pivot = v[lo + (hi - lo) / 2], t;
		/* Three ways: [lo, lt) below the pivot, [lt, i) equal, [gt, hi) above. */
		size_t lt = lo, i = lo, gt = hi;
		while (i < gt) {
			if (v[i] < pivot)
				t = v[lt], v[lt++] = v[i], v[i++] = t;
			else if (v[i] > pivot)
				t = v[--gt], v[gt] = v[i], v[i] = t;
			else
				i++;
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return pivot;
	}
	return v[lo];
}

/* Nearest rank: the smallest value with at least p% of the values at or below it. */
static uint64_t percentile(uint64_t *v, size_t n, unsigned p)
{
	size_t rank = (n * p + 99) / 100;
	return kth(v, n, rank ? rank - 1 : 0);
}

static void frame_stats(struct summary *s, const struct frame_span *f, size_t n, size_t slow)
{
	struct summary_frames *st = &s->frames;
	st->budget = (uint64_t)CONFIG_AGENT_FRAME_BUDGET_US * s->trace->timer_hz / 1000000;
	uint64_t *len = malloc((n ? n : 1) * sizeof(*len));
	if (!len)
		return;
	size_t m = 0;
	double sum = 0, sum2 = 0;
	size_t others = 0;
	for (size_t i = 0; i < n; i++) {
		if (!f[i].complete)
			continue;
		uint64_t d = f[i].end - f[i].begin;
		len[m++] = d;
		st->over_budget += d > st->budget;
		if (i != slow) {
			sum += (double)d;
			sum2 += (double)d * (double)d;
			others++;
		}
	}
	st->count = m;
	if (m) {
		st->median = percentile(len, m, 50);
		st->p99 = percentile(len, m, 99);
	}
	if (others) {
		double mean = sum / (double)others;
		double var = sum2 / (double)others - mean * mean;
		double sigma = sqrt(var > 0 ? var : 0);
		st->mean = (uint64_t)mean;
		st->sigma = (uint64_t)sigma;
		/* With fewer than two others there is no spread to be an outlier of. */
		st->outlier =
			st->have_this && others >= 2 && (double)st->this_frame > mean + 3 * sigma;
	}
	free(len);
}

/*
 * The window (summary.h) and the baseline: frames of the window's thread other than the
 * slow one and within budget (all other complete frames when none is), or the trace
 * before the window when the thread has no frame marks.
 */
static int find_window(struct summary *s, struct thread *ths, struct cct_span *base)
{
	const struct rb_trace *t = s->trace;
	size_t anomaly_mark = SIZE_MAX;
	s->thread = -1;
	for (uint32_t i = 0; i < t->nthreads; i++)
		for (size_t j = 0; j < ths[i].nmarks; j++)
			if (agent_mark_is_anomaly(ths[i].marks[j].arg) &&
			    (s->thread < 0 || ths[i].marks[j].ts > s->anomaly_ts)) {
				s->thread = (int)i;
				s->anomaly_ts = ths[i].marks[j].ts;
				s->anomaly_arg = ths[i].marks[j].arg;
				anomaly_mark = j;
			}
	s->anomaly_marked = s->thread >= 0;
	if (!s->anomaly_marked) {
		s->thread = -1;
		/* The thread the writer names (a hang's: still in its frame, it could not mark
		 * its own ring), else the first with frames, else the first. */
		for (uint32_t i = 0; i < t->nthreads && s->thread < 0; i++)
			if (t->threads[i].anomaly)
				s->thread = (int)i;
		for (uint32_t i = 0; i < t->nthreads && s->thread < 0; i++) {
			struct frame_span *f;
			size_t n;
			if (frames_of(&ths[i], &f, &n) == 0 && n) {
				free(f);
				s->thread = (int)i;
				break;
			}
		}
		if (s->thread < 0)
			s->thread = 0;
		s->anomaly_ts = ths[s->thread].dec.end_ts;
	}
	struct thread *th = &ths[s->thread];

	struct frame_span *f;
	size_t n, slow = SIZE_MAX;
	int err = frames_of(th, &f, &n);
	if (err)
		return err;
	/* The slow frame: the last one begun before the anomaly (in ring order when the
	 * anomaly mark is on the same thread: a detector marks before the next frame begins). */
	for (size_t i = 0; i < n; i++) {
		bool before = anomaly_mark != SIZE_MAX ? f[i].begin_mark < anomaly_mark
						       : f[i].begin <= s->anomaly_ts;
		if (before)
			slow = i;
	}
	uint64_t *bs = malloc((n ? n : 1) * sizeof(*bs)), *be = malloc((n ? n : 1) * sizeof(*be));
	if (!bs || !be) {
		err = -ENOMEM;
		goto out;
	}
	/* Without an anomaly mark (`jitt trigger`), the frame open at the freeze is the window
	 * unless it had only begun: a trigger that lands as an event loop takes its next event
	 * gave a window of a few us and an empty summary (memcached's worker: "the slow frame
	 * took 0 ns", no call in it). Then the window is the frame before, the last one the
	 * sender of the trigger saw whole. A frame open for as long as the median complete one
	 * stays the window, and so does a hang's (the writer names its thread). */
	if (!s->anomaly_marked && !t->threads[s->thread].anomaly && slow != SIZE_MAX && slow > 0 &&
	    !f[slow].complete && f[slow - 1].complete) {
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (f[i].complete)
				bs[m++] = f[i].end - f[i].begin;
		uint64_t sofar = s->anomaly_ts - f[slow].begin;
		if (m && sofar < percentile(bs, m, 50)) {
			s->frames.open_skipped = sofar ? sofar : 1;
			slow--;
		}
	}
	size_t nb = 0;
	if (slow != SIZE_MAX) {
		s->window_kind = SUMMARY_WINDOW_FRAME;
		s->w0 = f[slow].begin;
		s->w1 = f[slow].complete && f[slow].end <= s->anomaly_ts ? f[slow].end
									 : s->anomaly_ts;
		s->frames.have_this = true;
		s->frames.this_frame = s->w1 - s->w0;
		frame_stats(s, f, n, slow);
		for (int pass = 0; pass < 2 && nb == 0; pass++)
			for (size_t i = 0; i < n; i++)
				if (i != slow && f[i].complete &&
				    (pass == 1 || f[i].end - f[i].begin <= s->frames.budget)) {
					bs[nb] = f[i].begin;
					be[nb++] = f[i].end;
				}
		s->base_frames = nb;
	} else {
		uint64_t span = (uint64_t)CONFIG_AGENT_WINDOW_MS * t->timer_hz / 1000;
		s->window_kind = SUMMARY_WINDOW_SPAN;
		s->w1 = s->anomaly_ts;
		s->w0 = s->w1 - th->dec.start_ts > span ? s->w1 - span : th->dec.start_ts;
		if (s->w0 > s->w1)
			s->w0 = s->w1;
		frame_stats(s, f, n, SIZE_MAX);
		bs[0] = th->dec.start_ts;
		be[0] = s->w0;
		nb = 1;
	}
	s->ring_cut = t->threads[s->thread].laps > 0 && s->w0 <= th->dec.start_ts;
	err = cct_span_set(base, bs, be, nb);
out:
	free(bs);
	free(be);
	free(f);
	return err;
}

/* ---- the report's lists ---- */

/* The functions whose time the untimed fit guessed in a thread (decode.h, few), by key. */
static void guessed_add(struct summary *s, const struct rb_trace *t,
			const struct rb_decode_stats *st)
{
	for (unsigned k = 0; k < st->nfew && s->nguessed < SUMMARY_GUESSED_MAX; k++) {
		struct rb_event e = { .id = st->few[k],
				      .kind = RB_EV_ENTRY,
				      .wide = st->few_wide[k] };
		uint64_t key = agent_func_key(t, &e);
		bool seen = false;
		for (size_t i = 0; i < s->nguessed && !seen; i++)
			seen = s->guessed[i] == key;
		if (!seen)
			s->guessed[s->nguessed++] = key;
	}
}

/* Every function of a lane, by self time. All of them, not the first k: the writers merge
 * the copies of a function by name (summary_out.c), and copies ranked below k each can add
 * up to more than one above. */
static int top_functions(const struct cct *c, enum cct_lane lane, struct summary_func **out,
			 size_t *n)
{
	struct cct_func *f;
	size_t nf;
	int err = cct_functions(c, lane, &f, &nf);
	if (err)
		return err;
	*out = calloc(nf ? nf : 1, sizeof(**out));
	if (!*out) {
		free(f);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nf; i++)
		(*out)[i] = (struct summary_func){ .key = f[i].func,
						   .calls = f[i].calls,
						   .self = f[i].self,
						   .blocked = f[i].blocked,
						   .truncated = f[i].truncated > 0,
						   .preempted = f[i].preempted,
						   .running = f[i].running > 0,
						   .callees = f[i].callees,
						   .more = f[i].more };
	*n = nf;
	free(f);
	return 0;
}

/*
 * With the trace point's cost in the trace (its header's point_ps: what the program
 * measured at its start), the text's self time is without the trace points
 * (summary_write_text; the JSON keeps the recorded times, the exports' too, and point_ps
 * for its readers), as a profile of the plain build would rank it (exclude.h: a
 * function's traced self time holds one point for each of its calls and one for each call
 * it makes). Ranked by traced self time, an interpreter's helpers, a few ns of their own
 * and 17 of trace points a call, come before its bytecode loop. Only where the trace
 * points are at most SUMMARY_POINTS_OUT of the thread's running time over the trace: the
 * rest is a difference, and 1% off in the cost moves it by share / (1 - share) %. The cost
 * measured back to back was 7% over what duktape's traced run implies (8.82 ns against
 * 8.23), where the points are 99% of the time: taken out, every function was left with
 * noise.
 */
#define SUMMARY_POINTS_OUT 0.5

static void points_out(struct summary *s)
{
	s->point_ps = rb_trace_point_ps(s->trace, s->records, s->untimed);
	double point = s->point_ps * (double)s->trace->timer_hz / 1e12;
	if (point <= 0)
		return;
	double points = 0, total = 0;
	for (size_t i = 0; i < s->ntop_trace; i++) {
		points += point * (double)(s->top_trace[i].calls + s->top_trace[i].callees);
		total += (double)s->top_trace[i].self;
	}
	s->points_share = total > 0 ? points / total : 0;
	s->points_out = s->points_share > 0 && s->points_share <= SUMMARY_POINTS_OUT;
}

void summary_take_out_points(const struct summary *s, struct summary_func *f, size_t n)
{
	double point = s->point_ps * (double)s->trace->timer_hz / 1e12;
	for (size_t i = 0; i < n; i++) {
		double points = point * (double)(f[i].calls + f[i].callees);
		f[i].self = points >= (double)f[i].self ? 0 : f[i].self - (uint64_t)points;
	}
}

/* The heaviest calling context of a function in the window (summary.h). */
static void heaviest_path(const struct cct *c, uint64_t func, struct summary_path *out)
{
	uint32_t best = CCT_NONE;
	for (uint32_t i = 1; i < c->n; i++)
		if (c->node[i].func == func &&
		    (best == CCT_NONE ||
		     c->node[i].s[CCT_WINDOW].self > c->node[best].s[CCT_WINDOW].self))
			best = i;
	*out = (struct summary_path){ .key = func };
	if (best == CCT_NONE)
		return;
	out->self = c->node[best].s[CCT_WINDOW].self;
	size_t depth = c->node[best].depth, n = depth < SUMMARY_PATH_MAX ? depth : SUMMARY_PATH_MAX;
	out->n = n;
	out->elided = depth > n;
	uint32_t at = best;
	for (size_t k = n; k-- > 0 && at != 0; at = c->node[at].parent)
		out->path[k] = c->node[at].func;
}

/* The paths of the window's first functions, the tree's pseudo-functions left out. */
static void top_paths(struct summary *s, const struct cct *c)
{
	s->npaths = 0;
	for (size_t i = 0; i < s->ntop_window && s->npaths < SUMMARY_NPATHS; i++) {
		uint64_t key = s->top_window[i].key;
		if (key == CCT_ROOT || key == CCT_UNKNOWN || !s->top_window[i].self)
			continue;
		heaviest_path(c, key, &s->paths[s->npaths]);
		s->npaths += s->paths[s->npaths].n > 0;
	}
}

/*
 * Where a chain ends, the frame's own time outlasted each of its children. But many short
 * calls of one child can add up to more than that own time, with no single long one
 * (Hubble section 3's first case): then the chain goes on into that child's calls, all of
 * them as one link, so it ends where the time went. The child's calls come from its node
 * in the window; only when they fit inside this one instance (else they belong to other
 * instances of the frame too, and the link would claim too much).
 */
static bool many_calls(const struct cct *c, const struct cct_link *last,
		       struct summary_frame *out)
{
	const struct cct_stat *best = NULL;
	uint64_t func = 0;
	for (uint32_t ch = c->node[last->node].first_child; ch != CCT_NONE;
	     ch = c->node[ch].next_sibling) {
		const struct cct_stat *st = &c->node[ch].s[CCT_WINDOW];
		if (!best || st->incl > best->incl) {
			best = st;
			func = c->node[ch].func;
		}
	}
	if (!best || best->calls < 2 ||
	    best->incl <= last->self + last->blocked + last->preempted || best->incl > last->incl)
		return false;
	*out = (struct summary_frame){ .key = func,
				       .incl = best->incl,
				       .self = best->self,
				       .blocked = best->blocked,
				       .truncated = best->truncated > 0,
				       .running = best->running > 0,
				       .calls = best->calls,
				       .preempted = best->preempted };
	return true;
}

/* Which of n frames a chain or path keeps: the first SUMMARY_KEEP_OUTER and the last
 * ones, SUMMARY_MAX_DEPTH in all (summary.h). Sets *kept, *at and *elided. */
static void elide(size_t n, size_t *kept, size_t *at, size_t *elided)
{
	if (n <= SUMMARY_MAX_DEPTH) {
		*kept = *at = n;
		*elided = 0;
		return;
	}
	*kept = SUMMARY_MAX_DEPTH;
	*at = SUMMARY_KEEP_OUTER;
	*elided = n - SUMMARY_MAX_DEPTH;
}

/* The chain from link l on, its middle elided when deep: linear in its links. */
static int chain_of(const struct cct *c, const struct cct_link *l, struct summary_chain *out)
{
	size_t n = 0;
	const struct cct_link *last = NULL;
	for (const struct cct_link *x = l; x; last = x, x = x->next)
		n++;
	struct summary_frame extra;
	bool more = last && many_calls(c, last, &extra);
	size_t total = n + more, kept, at, elided;
	elide(total, &kept, &at, &elided);
	out->f = calloc(kept ? kept : 1, sizeof(*out->f));
	if (!out->f)
		return -ENOMEM;
	out->n = kept;
	out->at = at;
	out->elided = elided;
	size_t o = 0, i = 0;
	for (; l; l = l->next, i++)
		if (i < at || i >= at + elided)
			out->f[o++] = (struct summary_frame){ c->node[l->node].func,
							      l->incl,
							      l->self,
							      l->blocked,
							      l->truncated,
							      l->running,
							      0,
							      l->preempted };
	if (more)
		out->f[o++] = extra;
	return 0;
}

struct leaf {
	uint32_t node;
	int64_t cost;
};

static int by_cost(const void *a, const void *b)
{
	const struct leaf *x = a, *y = b;
	if (x->cost != y->cost)
		return x->cost < y->cost ? 1 : -1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/* The baseline's self time of a node, per frame or scaled to the window's length. */
static uint64_t base_of(const struct summary *s, const struct cct_node *nd, double scale)
{
	uint64_t b = nd->s[CCT_BASE].self;
	if (s->base_frames)
		return b / s->base_frames;
	double v = (double)b * scale, most = (double)(s->w1 - s->w0);
	return (uint64_t)(v < most ? v : most); /* more than the window: only a torn trace */
}

/* One frame's part of a path's cost. Times beyond 2^52 ticks (52 days at 1 GHz) come only
 * from torn traces; clamping them keeps the sums exact for every real one, and defined. */
static int64_t frame_cost(uint64_t self, uint64_t base)
{
	const uint64_t most = (uint64_t)1 << 52;
	return (int64_t)(self < most ? self : most) - (int64_t)(base < most ? base : most);
}

/* A path's cost, summed exactly whatever its depth: each frame adds at most 2^52 either way
 * (frame_cost) and a tree has at most 2^32 nodes, so a sum needs 85 bits. 32-bit ARM has no
 * __int128: the sum is kept as hi * 2^32 + lo, lo in [0, 2^32), hi within 2^53. */
struct path_sum {
	int64_t hi;
	int64_t lo;
};

static struct path_sum path_add(struct path_sum p, int64_t cost)
{
	/* cost = (cost >> 32) * 2^32 + (cost & 0xffffffff), the shift arithmetic (gcc's
	 * documented behaviour for signed right shifts) */
	p.hi += cost >> 32;
	p.lo += cost & 0xffffffff;
	p.hi += p.lo >> 32;
	p.lo &= 0xffffffff;
	return p;
}

static int64_t path_clamp(struct path_sum p)
{
	if (p.hi >= (int64_t)1 << 31)
		return INT64_MAX;
	if (p.hi < -((int64_t)1 << 31))
		return INT64_MIN;
	return (int64_t)((uint64_t)p.hi << 32 | (uint64_t)p.lo);
}

/* IntroPerf Alg. 3, DiffRankPaths: every root-to-leaf path of the window, costed by the
 * sum of its frames' self time minus the baseline's; the K costliest. Linear in the tree:
 * a node's path cost is its parent's plus its own (parents come before their children),
 * summed exactly (struct path_sum) and clamped once, where walking each leaf's path up to the
 * root was quadratic on a deep trace (a path of a million calls with a leaf at each). */
static int rank_contexts(struct summary *s, const struct cct *c, double scale)
{
	struct leaf *leaves = malloc((c->n ? c->n : 1) * sizeof(*leaves));
	struct path_sum *sum = malloc((c->n ? c->n : 1) * sizeof(*sum));
	uint32_t *outer = malloc((c->n ? c->n : 1) * sizeof(*outer));
	if (!leaves || !sum || !outer) {
		free(leaves);
		free(sum);
		free(outer);
		return -ENOMEM;
	}
	size_t nl = 0;
	sum[0] = (struct path_sum){ 0, 0 };
	outer[0] = 0;
	for (uint32_t i = 1; i < c->n; i++) {
		const struct cct_node *nd = &c->node[i];
		sum[i] = path_add(sum[nd->parent],
				  frame_cost(nd->s[CCT_WINDOW].self, base_of(s, nd, scale)));
		/* The path's last frame kept on the outer side: its ancestor at that depth. */
		outer[i] = nd->depth <= SUMMARY_KEEP_OUTER ? i : outer[nd->parent];
	}
	for (uint32_t i = 1; i < c->n; i++) {
		if (!c->node[i].s[CCT_WINDOW].calls)
			continue;
		bool leaf = true;
		for (uint32_t ch = c->node[i].first_child; ch != CCT_NONE && leaf;
		     ch = c->node[ch].next_sibling)
			leaf = c->node[ch].s[CCT_WINDOW].calls == 0;
		if (!leaf)
			continue;
		leaves[nl++] = (struct leaf){ i, path_clamp(sum[i]) };
	}
	free(sum);
	qsort(leaves, nl, sizeof(*leaves), by_cost);
	size_t m = nl < s->k ? nl : s->k;
	s->contexts = calloc(m ? m : 1, sizeof(*s->contexts));
	int err = s->contexts ? 0 : -ENOMEM;
	for (size_t i = 0; i < m && !err; i++) {
		struct summary_context *x = &s->contexts[i];
		uint32_t leaf = leaves[i].node;
		x->cost = leaves[i].cost;
		elide(c->node[leaf].depth, &x->n, &x->at, &x->elided);
		x->key = malloc(x->n * sizeof(*x->key));
		x->self = malloc(x->n * sizeof(*x->self));
		x->base = malloc(x->n * sizeof(*x->base));
		s->ncontexts++;
		if (!x->key || !x->self || !x->base) {
			err = -ENOMEM;
			break;
		}
		/* The inner frames up from the leaf, then, when the middle is elided, the outer
		 * ones up from the ancestor kept last on that side: never the middle. */
		size_t j = x->n;
		uint32_t nd = leaf;
		for (size_t k = x->elided ? x->n - x->at : x->n; k > 0; k--) {
			j--;
			x->key[j] = c->node[nd].func;
			x->self[j] = c->node[nd].s[CCT_WINDOW].self;
			x->base[j] = base_of(s, &c->node[nd], scale);
			nd = c->node[nd].parent;
		}
		for (nd = outer[leaf]; j > 0; nd = c->node[nd].parent) {
			j--;
			x->key[j] = c->node[nd].func;
			x->self[j] = c->node[nd].s[CCT_WINDOW].self;
			x->base[j] = base_of(s, &c->node[nd], scale);
		}
	}
	free(outer);
	free(leaves);
	return err;
}

/* ---- blocked on: wait and wake-up edges ---- */

/* The thread whose wake-up of `key` ended a wait: the latest wake in [from, to] of
 * another thread. */
static int find_waker(const struct summary *s, const struct thread *ths, int self, uint32_t key,
		      uint64_t from, uint64_t to, uint64_t *when)
{
	int who = -1;
	for (uint32_t i = 0; i < s->trace->nthreads; i++) {
		if ((int)i == self)
			continue;
		for (size_t j = 0; j < ths[i].nwakes; j++) {
			const struct wake *w = &ths[i].wakes[j];
			if (w->key == key && w->ts >= from && w->ts <= to &&
			    (who < 0 || w->ts > *when)) {
				who = (int)i;
				*when = w->ts;
			}
		}
	}
	return who;
}

/*
 * Starting from the window's own waits: when the thread spent most of the interval
 * blocked, name the longest wait, its waker and what the waker did until the wake-up;
 * then ask the same of the waker over that span, up to CONFIG_AGENT_BLOCKED_DEPTH hops.
 * How long a thread was blocked in an interval is its tree's, in the lane of that interval
 * (cct_lane_offcpu): the window's is the header's, so the two agree.
 */
static int follow_wakeups(struct summary *s, struct thread *ths, const struct wait *waits,
			  size_t nwaits)
{
	int thread = s->thread, err = 0;
	uint64_t from = s->w0, to = s->w1, blocked = s->window_blocked;
	struct wait *owned = NULL; /* the waits of the latest waker's pass */
	while (s->nhops < CONFIG_AGENT_BLOCKED_DEPTH && s->nhops < SUMMARY_MAX_HOPS) {
		uint64_t longest = 0;
		const struct wait *w = NULL;
		for (size_t i = 0; i < nwaits; i++) {
			uint64_t o = overlap(waits[i].begin, waits[i].end, from, to);
			if (o > longest)
				longest = o, w = &waits[i];
		}
		if (!w || 2 * blocked < to - from)
			break; /* not mostly blocked: the thread's own work is the story */
		struct summary_hop *h = &s->hops[s->nhops++];
		*h = (struct summary_hop){ .thread = thread,
					   .from = from,
					   .to = to,
					   .blocked = blocked,
					   .object = w->key,
					   .waiter = w->waiter,
					   .wait_begin = w->begin,
					   .wait_end = w->end,
					   .still_waiting = w->open || w->end > to,
					   .waker = -1 };
		if (!h->still_waiting)
			h->waker =
				find_waker(s, ths, thread, w->key, w->begin, w->end, &h->wake_ts);
		if (h->waker < 0)
			break;
		bool seen = h->waker == s->thread;
		for (size_t i = 0; i + 1 < s->nhops; i++)
			seen |= s->hops[i].thread == h->waker;

		/* What the waker did from the start of the wait (inside the interval) on. */
		uint64_t a = w->begin > from ? w->begin : from, b = h->wake_ts;
		struct cct_span span;
		struct pass next;
		err = cct_span_set(&span, &a, &b, 1);
		if (err)
			break;
		struct cct_opts o = pass_opts(s->trace, h->waker, 1);
		o.span[CCT_WINDOW] = &span;
		err = run_pass(&ths[h->waker], &o, a, b, &next);
		uint64_t preempted;
		if (!err)
			cct_lane_offcpu(&next.c, CCT_WINDOW, &blocked, &preempted);
		if (!err)
			err = top_functions(&next.c, CCT_WINDOW, &h->top, &h->ntop);
		if (!err && next.c.nchains)
			err = chain_of(&next.c, next.c.chain[0], &h->chain);
		cct_span_free(&span);
		free(owned);
		owned = next.waits;
		waits = next.waits;
		nwaits = next.nwaits;
		next.waits = NULL;
		pass_free(&next);
		if (err || seen)
			break;
		thread = h->waker;
		from = a;
		to = b;
	}
	free(owned);
	return err;
}

/* Where the window's thread ran, and with schedstat its preempted time (sched.h). */
static void window_sched(struct summary *s, const struct thread *th)
{
	const struct rb_file_thread *ft = &s->trace->threads[s->thread];
	uint64_t pre;
	if (ft->sched_on) {
		sched_window_perf(s->trace, ft, s->w0, s->w1, &s->sched);
	} else if (sched_window_stat(th->stats, th->nstats, s->w0, s->w1, s->trace->timer_hz,
				     &pre)) {
		s->sched.source = SUMMARY_SCHED_SCHEDSTAT;
		s->window_preempted = pre; /* what the blocked time leaves: window_split */
	}
}

int summary_build(struct summary *s, const struct rb_trace *t, unsigned k)
{
	memset(s, 0, sizeof(*s));
	s->trace = t;
	s->k = k < 1 ? 1 : k > SUMMARY_MAX_K ? SUMMARY_MAX_K : k;
	if (t->nthreads == 0)
		return -EINVAL;
	struct thread *ths = calloc(t->nthreads, sizeof(*ths));
	if (!ths)
		return -ENOMEM;
	int err = 0;
	for (uint32_t i = 0; i < t->nthreads && !err; i++) {
		err = rb_decoder_init(&ths[i].dec, &t->threads[i].view, t->ref_ticks, on_special,
				      &ths[i]);
		if (!err)
			err = ths[i].failed;
		reverse(ths[i].marks, ths[i].nmarks, sizeof(*ths[i].marks));
		reverse(ths[i].wakes, ths[i].nwakes, sizeof(*ths[i].wakes));
		reverse(ths[i].stats, ths[i].nstats, sizeof(*ths[i].stats));
		s->records += ths[i].dec.stats.records;
		s->untimed += ths[i].dec.stats.untimed;
		s->untimed_windows += ths[i].dec.stats.windows;
		if (ths[i].dec.stats.measured > s->untimed_measured)
			s->untimed_measured = ths[i].dec.stats.measured;
		guessed_add(s, t, &ths[i].dec.stats);
		s->called += ths[i].dec.stats.called;
		s->called_calls += ths[i].dec.stats.called_calls;
	}
	struct cct_span window = { 0 }, base = { 0 };
	struct pass p = { 0 };
	if (!err)
		err = find_window(s, ths, &base);
	if (!err)
		err = cct_span_set(&window, &s->w0, &s->w1, 1);
	if (!err) {
		struct cct_opts o = pass_opts(t, s->thread, s->k);
		o.span[CCT_WINDOW] = &window;
		o.span[CCT_BASE] = &base;
		err = run_pass(&ths[s->thread], &o, s->w0, s->w1, &p);
	}
	if (!err) {
		memcpy(s->open_end, p.open_end, sizeof(s->open_end));
		s->nopen = p.nopen;
		agent_root_calls(&p.c, &s->root_calls);
		s->span = p.c.t1 - p.c.t0;
		s->ncontexts_tree = p.c.n - 1;
		cct_lane_offcpu(&p.c, CCT_WINDOW, &s->window_blocked, &s->window_preempted);
		window_sched(s, &ths[s->thread]);
		err = top_functions(&p.c, CCT_WINDOW, &s->top_window, &s->ntop_window);
	}
	if (!err)
		err = top_functions(&p.c, CCT_WHOLE, &s->top_trace, &s->ntop_trace);
	if (!err) {
		s->chains = calloc(p.c.nchains + 1, sizeof(*s->chains));
		err = s->chains ? 0 : -ENOMEM;
		for (unsigned i = 0; i < p.c.nchains && !err; i++, s->nchains++)
			err = chain_of(&p.c, p.c.chain[i], &s->chains[i]);
	}
	/* With no baseline every path would be ranked against nothing ("0 ns normally"):
	 * then no contexts, and the writers say why. */
	s->base_len = cct_span_total(&base);
	if (!err && s->base_len)
		err = rank_contexts(s, &p.c, (double)(s->w1 - s->w0) / (double)s->base_len);
	if (!err)
		err = follow_wakeups(s, ths, p.waits, p.nwaits);
	if (!err) {
		points_out(s);
		top_paths(s, &p.c);
	}
	pass_free(&p);
	cct_span_free(&window);
	cct_span_free(&base);
	for (uint32_t i = 0; i < t->nthreads; i++) {
		rb_decoder_free(&ths[i].dec);
		free(ths[i].marks);
		free(ths[i].wakes);
		free(ths[i].stats);
	}
	free(ths);
	if (err)
		summary_free(s);
	return err;
}

void summary_free(struct summary *s)
{
	free(s->top_window);
	free(s->top_trace);
	for (size_t i = 0; i < s->nchains; i++)
		free(s->chains[i].f);
	free(s->chains);
	for (size_t i = 0; i < s->ncontexts; i++) {
		free(s->contexts[i].key);
		free(s->contexts[i].self);
		free(s->contexts[i].base);
	}
	free(s->contexts);
	for (size_t i = 0; i < s->nhops; i++) {
		free(s->hops[i].top);
		free(s->hops[i].chain.f);
	}
	const struct rb_trace *t = s->trace;
	memset(s, 0, sizeof(*s));
	s->trace = t;
}

const char *summary_detector(const struct summary *s)
{
	if (s->anomaly_marked)
		return agent_detector_name(s->anomaly_arg);
	/* The runtime's reasons are "<detector>" or "<detector>: <more>". */
	const char *r = s->trace->reason;
	for (uint32_t d = AGENT_DETECT_HANG; d <= AGENT_DETECT_EXTERNAL; d++) {
		const char *name = agent_detector_name(d);
		size_t n = strlen(name);
		if (!strncmp(r, name, n) && (r[n] == 0 || r[n] == ':'))
			return name;
	}
	return NULL;
}

const char *agent_detector_name(uint32_t arg)
{
	switch (arg & 0xff) {
	case AGENT_DETECT_HANG:
		return "hang";
	case AGENT_DETECT_JANK:
		return "jank";
	case AGENT_DETECT_EXPLICIT:
		return "explicit";
	case AGENT_DETECT_EXTERNAL:
		return "external";
	default:
		return "unknown";
	}
}
