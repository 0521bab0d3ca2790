/* SPDX-License-Identifier: MIT */
#include "agent/analysis/cct.h"
#include "ringbuf/record.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * (parent, func) -> node, open addressing. Each slot holds its key, so a probe never
 * touches the nodes: the tree of a big trace does not fit in the cache, and every entry
 * event is a lookup.
 */
static uint64_t hash_of(uint32_t parent, uint64_t func)
{
	return (func ^ ((uint64_t)parent << 32 | parent)) * 0x9E3779B97F4A7C15ull;
}

static int grow_hash(struct cct *c)
{
	uint32_t cap = c->hcap ? c->hcap * 2 : 1024;
	struct cct_slot *h = malloc(cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, cap * sizeof(*h));
	for (uint32_t i = 1; i < c->n; i++) {
		const struct cct_node *nd = &c->node[i];
		uint32_t s = (uint32_t)(hash_of(nd->parent, nd->func) >> 32) & (cap - 1);
		while (h[s].node != CCT_NONE)
			s = (s + 1) & (cap - 1);
		h[s] = (struct cct_slot){ nd->func, nd->parent, i };
	}
	free(c->hash);
	c->hash = h;
	c->hcap = cap;
	return 0;
}

/* The child of parent for func, created when new. CCT_NONE when out of memory. */
static uint32_t child(struct cct *c, uint32_t parent, uint64_t func)
{
	if ((uint64_t)c->n * 2 >= c->hcap && grow_hash(c) != 0)
		return CCT_NONE;
	uint32_t s = (uint32_t)(hash_of(parent, func) >> 32) & (c->hcap - 1);
	for (; c->hash[s].node != CCT_NONE; s = (s + 1) & (c->hcap - 1))
		if (c->hash[s].func == func && c->hash[s].parent == parent)
			return c->hash[s].node;
	if (c->n == c->cap) {
		uint32_t cap = c->cap * 2;
		struct cct_node *nn = realloc(c->node, cap * sizeof(*nn));
		if (!nn)
			return CCT_NONE;
		c->node = nn;
		struct cct_next *nx = realloc(c->next, cap * sizeof(*nx));
		if (!nx)
			return CCT_NONE;
		c->next = nx;
		c->cap = cap;
	}
	uint32_t i = c->n++;
	struct cct_node *nd = &c->node[i];
	memset(nd, 0, sizeof(*nd));
	nd->func = func;
	nd->parent = parent;
	nd->depth = c->node[parent].depth + 1;
	nd->first_child = CCT_NONE;
	nd->next_sibling = c->node[parent].first_child;
	c->node[parent].first_child = i;
	c->hash[s] = (struct cct_slot){ func, parent, i };
	c->next[i] = (struct cct_next){ func, { CCT_NONE, CCT_NONE } };
	return i;
}

/* ---- spans: what a lane counts ---- */

int cct_span_set(struct cct_span *s, const uint64_t *start, const uint64_t *end, size_t n)
{
	memset(s, 0, sizeof(*s));
	s->start = malloc((n ? n : 1) * sizeof(uint64_t));
	s->end = malloc((n ? n : 1) * sizeof(uint64_t));
	s->before = malloc((n ? n : 1) * sizeof(uint64_t));
	if (!s->start || !s->end || !s->before) {
		cct_span_free(s);
		return -ENOMEM;
	}
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (end[i] <= start[i])
			continue;
		s->start[s->n] = start[i];
		s->end[s->n] = end[i];
		s->before[s->n++] = total;
		total += end[i] - start[i];
	}
	return 0;
}

void cct_span_free(struct cct_span *s)
{
	free(s->start);
	free(s->end);
	free(s->before);
	memset(s, 0, sizeof(*s));
}

/* The first interval of the span that starts after t (s->n when none does). */
static size_t span_after(const struct cct_span *s, uint64_t t)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->start[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Ticks of the span before t. */
static uint64_t span_upto(const struct cct_span *s, uint64_t t)
{
	size_t lo = span_after(s, t);
	if (lo == 0)
		return 0;
	size_t i = lo - 1;
	return s->before[i] + (t < s->end[i] ? t : s->end[i]) - s->start[i];
}

uint64_t cct_span_total(const struct cct_span *s)
{
	return s && s->n ? s->before[s->n - 1] + s->end[s->n - 1] - s->start[s->n - 1] : 0;
}

/* ---- the tree ---- */

/* Entering and leaving a call are most of the work on a trace's events: inlined into the
 * loop over them. */
#define CCT_HOT static inline __attribute__((always_inline))

struct frame {
	uint32_t node;
	uint32_t last; /* the child this instance pushed last (CCT_NONE: none yet) */
	bool waiting, cut_start;
	uint32_t wait_key; /* the open wait's object, and when it began (while waiting) */
	uint64_t wait_start;
	uint64_t start;
	uint64_t pos[CCT_LANES];      /* lane_pos at the start */
	uint64_t wait_pos[CCT_LANES]; /* lane_pos when the open wait began (while waiting) */
	uint64_t children[CCT_LANES], blocked[CCT_LANES], preempted[CCT_LANES];
	/* The time of the calls its counted callees' records stood for beyond the one each
	 * placed (record.h, RB_CALLED): this frame's own time held them. */
	uint64_t owed[CCT_LANES];
	uint32_t stands_for; /* the calls this frame stands for: 1, or a counted call's */
	struct cct_link *best; /* the longest child's chain so far, window lane */
};

/*
 * Ticks of lane l's span before t: a call's time in the lane is the difference of two of
 * these. Events come in time order, so a cursor per lane walks forward through the
 * intervals (a search only when time goes backwards, in a corrupt trace). With sorted,
 * disjoint intervals that is span_upto; a corrupt trace can give the summary a baseline of
 * frames out of order, where the answer depends on the cursor's way so far, and results
 * are kept exactly as this walk gives them.
 */
static uint64_t lane_pos(struct cct *c, int l, uint64_t t)
{
	if (l == CCT_WHOLE)
		return t;
	const struct cct_span *s = c->o.span[l];
	if (!s || !s->n)
		return 0;
	size_t i = c->cursor[l];
	if (s->start[i] > t && i > 0)
		return span_upto(s, t);
	while (i + 1 < s->n && s->start[i + 1] <= t)
		i++;
	c->cursor[l] = i;
	if (s->start[i] > t)
		return 0;
	return s->before[i] + (t < s->end[i] ? t : s->end[i]) - s->start[i];
}

/*
 * Every lane's position is an affine function of time between two ends of its intervals:
 * t - start + before inside one, a constant between two. The clock keeps the piece that
 * holds the latest time asked, for all lanes at once, as [lo, hi) and, per lane, a mask
 * and an addend: lane_pos = (t & mask) + add. Events come in time order and the pieces
 * change only at interval ends (a few thousand in a trace of millions of events), so a
 * lane's position is two instructions with no search and no branch per lane; a per-lane
 * cursor finds the next piece (a search only when time goes backwards, in a corrupt
 * trace). Measured on bench-summary (4.0 M records, 3 lanes; callgrind): lane_pos with
 * its cursor and branches at every call was 214 M instructions, the clock 61 M.
 */
static void clock_set(struct cct *c, uint64_t t)
{
	struct cct_clock *k = &c->clock;
	if (c->unsorted) { /* lane_pos's walk for every question: an empty piece */
		k->lo = 1;
		k->hi = 0;
		for (int l = 0; l < CCT_LANES; l++) {
			k->mask[l] = 0;
			k->add[l] = lane_pos(c, l, t);
		}
		return;
	}
	k->lo = 0;
	k->hi = UINT64_MAX;
	for (int l = 0; l < CCT_LANES; l++) {
		const struct cct_span *s = c->o.span[l];
		k->mask[l] = l == CCT_WHOLE ? UINT64_MAX : 0;
		k->add[l] = 0;
		if (l == CCT_WHOLE || !s || !s->n)
			continue;
		size_t i = c->cursor[l];
		if (s->start[i] > t && i > 0) { /* back in time: search */
			size_t lo = span_after(s, t);
			i = lo ? lo - 1 : 0;
		}
		while (i + 1 < s->n && s->start[i + 1] <= t)
			i++;
		c->cursor[l] = i;
		uint64_t lo, hi;
		if (t < s->start[i]) { /* before the first interval: 0 */
			lo = 0, hi = s->start[i];
		} else if (t < s->end[i]) { /* inside interval i */
			lo = s->start[i], hi = s->end[i];
			k->mask[l] = UINT64_MAX;
			k->add[l] = s->before[i] - s->start[i];
		} else { /* after it: all of it */
			lo = s->end[i], hi = i + 1 < s->n ? s->start[i + 1] : UINT64_MAX;
			k->add[l] = s->before[i] + s->end[i] - s->start[i];
		}
		k->lo = lo > k->lo ? lo : k->lo;
		k->hi = hi < k->hi ? hi : k->hi;
	}
}

/* Make the clock tell lane positions at t. */
static inline void clock_at(struct cct *c, uint64_t t)
{
	if (t < c->clock.lo || t >= c->clock.hi)
		clock_set(c, t);
}

static inline uint64_t clock_pos(const struct cct *c, int l, uint64_t t)
{
	return (t & c->clock.mask[l]) + c->clock.add[l];
}

static void release(struct cct_link *l)
{
	while (l) {
		struct cct_link *next = l->next;
		free(l);
		l = next;
	}
}

/* A top-level call's chain: kept when among the K longest. */
static void offer_top(struct cct *c, struct cct_link *l)
{
	unsigned k = c->o.chains, i = c->nchains;
	if (i == k) {
		if (c->chain[k - 1]->incl >= l->incl) {
			release(l);
			return;
		}
		release(c->chain[--i]);
	}
	for (; i > 0 && c->chain[i - 1]->incl < l->incl; i--)
		c->chain[i] = c->chain[i - 1];
	c->chain[i] = l;
	if (c->nchains < k)
		c->nchains++;
}

/* The chain of a call that touched the window. */
static void close_chain(struct cct *c, struct frame *f, struct frame *parent, uint64_t incl,
			bool cut_start, bool running)
{
	struct cct_link *best = f->best;
	f->best = NULL;
	struct cct_link *l = malloc(sizeof(*l));
	if (!l) {
		release(best);
		c->failed = true;
		return;
	}
	*l = (struct cct_link){ .node = f->node,
				.start = f->start,
				.incl = incl,
				.blocked = f->blocked[CCT_WINDOW],
				.preempted = f->preempted[CCT_WINDOW],
				.truncated = cut_start,
				.running = running };
	uint64_t busy = f->children[CCT_WINDOW] + l->blocked + l->preempted;
	l->self = l->incl > busy ? l->incl - busy : 0;
	uint64_t own = l->self > l->blocked ? l->self : l->blocked;
	own = own > l->preempted ? own : l->preempted;
	if (best && best->incl > own)
		l->next = best;
	else
		release(best);
	if (parent == c->stack) {
		offer_top(c, l);
	} else if (!parent->best || l->incl > parent->best->incl) {
		release(parent->best);
		parent->best = l;
	} else {
		release(l);
	}
}

CCT_HOT void lane_close(struct frame *f, struct frame *parent, struct cct_node *nd, int l,
			bool cut_end, uint64_t incl)
{
	struct cct_stat *st = &nd->s[l];
	/* a counted call's record: the calls beyond it */
	uint64_t more = f->stands_for > 1 ? f->stands_for - 1 : 0;
	st->calls++;
	st->more += (uint32_t)more;
	st->incl += incl + more * incl;
	st->blocked += f->blocked[l];
	st->preempted += f->preempted[l];
	uint64_t busy = f->children[l] + f->blocked[l] + f->preempted[l];
	uint64_t self = incl > busy ? incl - busy : 0;
	/* What its counted callees' other calls took of it, here or, where this instance is
	 * too short, from the node's next instances (the node's share over the trace is what
	 * a summary ranks) */
	uint64_t owed = st->owed + f->owed[l], paid = self < owed ? self : owed;
	st->owed = owed - paid;
	st->self += self - paid + more * self;
	st->truncated += f->cut_start;
	st->running += cut_end;
	if (parent) {
		parent->children[l] += incl;
		parent->owed[l] += more * incl;
	}
}

/* Whether f's open wait counts whole as blocked: without switch records, or where it began
 * before the first of them (cct_opts.switches_from). */
static bool wait_whole(const struct cct *c, const struct frame *f)
{
	return !c->o.switches || f->wait_start < c->o.switches_from;
}

/* A wait ended at `end`: tell the caller (cct_opts.on_wait). */
static void wait_done(struct cct *c, const struct frame *f, uint64_t end, bool open)
{
	if (c->o.on_wait)
		c->o.on_wait(c->o.wait_ctx, &(struct cct_wait){ .begin = f->wait_start,
								.end = end,
								.key = f->wait_key,
								.node = f->node,
								.open = open });
}

CCT_HOT void close_frame(struct cct *c, struct frame *f, struct frame *parent, uint64_t end,
			 bool cut_end)
{
	struct cct_node *nd = &c->node[f->node];
	clock_at(c, end);
	/* A wait still open when the frame closes ends with it (its wait-end lost, or the
	 * ring frozen inside it: the root is closed only at the freeze). */
	bool waits_block = f->waiting && wait_whole(c, f);
	if (f->waiting)
		wait_done(c, f, end, cut_end || !parent);
	/* The whole trace: its position is the time, and a call of no length counts. */
	if (waits_block)
		f->blocked[CCT_WHOLE] += end - f->wait_pos[CCT_WHOLE];
	uint64_t incl = end - f->pos[CCT_WHOLE];
	lane_close(f, parent, nd, CCT_WHOLE, cut_end, incl);
	nd->longest = incl > nd->longest ? incl : nd->longest;
	uint64_t window_incl = 0;
	bool window_touched = false;
	for (int l = CCT_WHOLE + 1; l < CCT_LANES; l++) {
		if (!(c->lanes >> l & 1))
			continue;
		uint64_t at_end = clock_pos(c, l, end);
		if (waits_block)
			f->blocked[l] += at_end - f->wait_pos[l];
		incl = at_end - f->pos[l];
		/* A call of no length counts where it happened. */
		if (!incl && (end != f->start || lane_pos(c, l, end + 1) == at_end))
			continue;
		lane_close(f, parent, nd, l, cut_end, incl);
		if (l == CCT_WINDOW)
			window_incl = incl, window_touched = true;
	}
	if (c->o.chains && parent) {
		if (window_touched) {
			close_chain(c, f, parent, window_incl, f->cut_start, cut_end);
		} else if (f->best) { /* outside the window: no chain */
			release(f->best);
			f->best = NULL;
		}
	}
}

/*
 * The node of func called from the frame at the top. A program's calls repeat: what a
 * function calls first, and what it calls after a given callee, is usually what it did
 * the previous time. So each node remembers the child its frames called first (guess[0])
 * and, for each child, the sibling called after it (guess[1]); the guess is checked by
 * its function (a guess is always a child of the right parent). Only a wrong guess probes
 * the hash table, whose slots are spread over a megabyte for a big tree: on bench-summary
 * 94.6% of 1.9 M calls are guessed right.
 */
CCT_HOT uint32_t callee(struct cct *c, struct frame *top, uint64_t func)
{
	/* Whether the frame called something yet is as hard to predict as the calls: the
	 * guess is picked with no branch. */
	bool after = top->last != CCT_NONE;
	uint32_t from = after ? top->last : top->node;
	uint32_t nd = c->next[from].guess[after];
	if (nd == CCT_NONE || c->next[nd].func != func) {
		nd = child(c, top->node, func);
		if (nd == CCT_NONE)
			return CCT_NONE;
		c->next[from].guess[after] = nd; /* child() may have moved the array */
	}
	top->last = nd;
	return nd;
}

CCT_HOT int push(struct cct *c, uint64_t func, uint64_t ts, bool cut)
{
	if (c->sp == c->stack_cap) {
		size_t cap = c->stack_cap * 2;
		struct frame *s = realloc(c->stack, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		c->stack = s;
		c->stack_cap = cap;
	}
	uint32_t nd = callee(c, &c->stack[c->sp - 1], func);
	if (nd == CCT_NONE)
		return -ENOMEM;
	/* The call's close updates the node's figures: fetch them now */
	__builtin_prefetch(&c->node[nd], 1);
	__builtin_prefetch((const char *)&c->node[nd] + 64, 1);
	struct frame *f = &c->stack[c->sp++];
	f->node = nd;
	f->last = CCT_NONE;
	f->waiting = false;
	f->cut_start = cut;
	f->start = ts;
	f->best = NULL;
	clock_at(c, ts);
	for (int l = 0; l < CCT_LANES; l++) {
		f->pos[l] = clock_pos(c, l, ts);
		f->children[l] = 0;
		f->blocked[l] = 0;
		f->preempted[l] = 0;
		f->owed[l] = 0;
	}
	f->stands_for = 1;
	return 0;
}

int cct_init(struct cct *c, const struct cct_opts *o, uint64_t open_at_start)
{
	memset(c, 0, sizeof(*c));
	if (o)
		c->o = *o;
	c->open_at_start = open_at_start;
	c->cap = 1024;
	c->stack_cap = 64;
	c->node = calloc(c->cap, sizeof(*c->node));
	c->next = malloc(c->cap * sizeof(*c->next));
	c->stack = malloc(c->stack_cap * sizeof(*c->stack));
	c->chain = calloc(c->o.chains + 1, sizeof(*c->chain));
	if (!c->node || !c->next || !c->stack || !c->chain || grow_hash(c) != 0) {
		cct_free(c);
		return -ENOMEM;
	}
	c->n = 1;
	c->node[0] = (struct cct_node){ .func = CCT_ROOT,
					.parent = CCT_NONE,
					.first_child = CCT_NONE,
					.next_sibling = CCT_NONE };
	c->next[0] = (struct cct_next){ CCT_ROOT, { CCT_NONE, CCT_NONE } };
	c->sp = 1;
	c->stack[0] = (struct frame){ .node = 0, .last = CCT_NONE, .stands_for = 1 };
	c->lanes = 1u << CCT_WHOLE;
	for (int l = 0; l < CCT_LANES; l++) {
		c->cursor[l] = 0;
		const struct cct_span *sp = c->o.span[l];
		if (l == CCT_WHOLE || !sp || !sp->n)
			continue;
		c->lanes |= 1u << l;
		for (size_t i = 0; i + 1 < sp->n; i++)
			c->unsorted |= sp->end[i] > sp->start[i + 1];
	}
	c->clock.lo = 1; /* an empty piece: the first event sets the clock */
	c->clock.hi = 0;
	return 0;
}

/* The first event: the tree's start, and the calls the ring begins inside. 0 or -ENOMEM. */
static int first_event(struct cct *c, const struct rb_event *e)
{
	c->t0 = c->stack[0].start = e->ts;
	clock_at(c, e->ts);
	for (int l = 0; l < CCT_LANES; l++)
		c->stack[0].pos[l] = clock_pos(c, l, e->ts);
	/* The calls the ring begins inside: unknown functions, open since the first event. */
	for (uint64_t k = 0; k < c->open_at_start; k++)
		if (push(c, CCT_UNKNOWN, e->ts, true) != 0)
			return -ENOMEM;
	return 0;
}

CCT_HOT int add_event(struct cct *c, const struct rb_event *e)
{
	uint64_t prev = c->events ? c->t1 : e->ts; /* the thread's previous event */
	if (c->events++ == 0 && first_event(c, e) != 0)
		goto nomem;
	c->t1 = e->ts;
	struct frame *top = &c->stack[c->sp - 1];
	/* A record the runtime wrote for the running frame after the last exit (a wait's, a
	 * mark's, a jump's): the ring did not stop at that exit (cct_last_exit). */
	if (e->kind != RB_EV_EXIT && e->kind != RB_EV_OFF_CPU && e->kind != RB_EV_SYNC &&
	    e->kind != RB_EV_SCHEDSTAT)
		c->last_exit = 0;
	switch (e->kind) {
	case RB_EV_ENTRY:
		if (push(c, c->o.key ? c->o.key(c->o.ctx, e) : e->id, e->ts, false) != 0)
			goto nomem;
		break;
	case RB_EV_EXIT:
		if (c->sp > 1) {
			/* A counted call's exit is the decoder's (its mean after its entry):
			 * the stop was answered at its entry, in its thunk, before the
			 * function ran, so the frame that called it is the one running. */
			c->last_exit = e->raw == RB_CALLED ? 0 : top->node;
			if (e->raw == RB_CALLED)
				top->stands_for = rb_called_calls(e->arg);
			close_frame(c, top, top - 1, e->ts, false);
			c->sp--;
		}
		break;
	case RB_EV_WAIT_BEGIN:
		/* A wait still open (its wait-end lost) ends where the next begins. */
		if (top->waiting)
			wait_done(c, top, e->ts, false);
		clock_at(c, e->ts);
		for (int l = 0; l < CCT_LANES; l++) {
			uint64_t now = clock_pos(c, l, e->ts);
			if (top->waiting && wait_whole(c, top))
				top->blocked[l] += now - top->wait_pos[l];
			top->wait_pos[l] = now;
		}
		top->waiting = true;
		top->wait_key = e->arg;
		top->wait_start = e->ts;
		break;
	case RB_EV_WAIT_END:
		/* With no wait-begin seen (the ring starts inside the wait), the wait's known
		 * part is since the thread's previous event: nothing after it can overlap the
		 * wait. The exports' wait slice is the same (export.c, walk_event). */
		if (!top->waiting) {
			clock_at(c, prev);
			for (int l = 0; l < CCT_LANES; l++)
				top->wait_pos[l] = clock_pos(c, l, prev);
			top->wait_key = e->arg;
			top->wait_start = prev;
		}
		wait_done(c, top, e->ts, false);
		top->waiting = false;
		/* With the switch records, the wait's time off the CPU came as RB_EV_OFF_CPU
		 * events; the rest of it the thread ran, in the call. */
		if (!wait_whole(c, top))
			break;
		clock_at(c, e->ts);
		for (int l = 0; l < CCT_LANES; l++)
			top->blocked[l] += clock_pos(c, l, e->ts) - top->wait_pos[l];
		break;
	case RB_EV_OFF_CPU: {
		/* Off its CPU from id to ts (between two records: the same frame throughout).
		 * Inside a wrapped wait: without cct_opts.switches the wait counts its whole
		 * time already; with it, this is what of the wait was blocked (asleep) or
		 * preempted. */
		if ((top->waiting && wait_whole(c, top)) || e->id > e->ts)
			break;
		uint64_t *to = e->raw == RB_OFF_PREEMPTED ? top->preempted : top->blocked;
		uint64_t from[CCT_LANES];
		clock_at(c, e->id);
		for (int l = 0; l < CCT_LANES; l++)
			from[l] = clock_pos(c, l, e->id);
		clock_at(c, e->ts);
		for (int l = 0; l < CCT_LANES; l++)
			to[l] += clock_pos(c, l, e->ts) - from[l];
		break;
	}
	default:
		break;
	}
	return c->failed ? -ENOMEM : 0;
nomem:
	c->failed = true;
	return -ENOMEM;
}

int cct_add(struct cct *c, const struct rb_event *e)
{
	return c->failed ? -ENOMEM : add_event(c, e);
}

void cct_lane_offcpu(const struct cct *c, enum cct_lane lane, uint64_t *blocked,
		     uint64_t *preempted)
{
	*blocked = *preempted = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		*blocked += c->node[i].s[lane].blocked;
		*preempted += c->node[i].s[lane].preempted;
	}
}

int cct_add_n(struct cct *c, const struct rb_event *ev, size_t n)
{
	int err = c->failed ? -ENOMEM : 0;
	for (size_t i = 0; i < n && !err; i++)
		err = add_event(c, &ev[i]);
	return err;
}

/*
 * What a node still owes its counted callees at the end (cct_stat.owed) is time their means
 * gave them that the node never had: a mean above what the calls took in this stretch of
 * the run (means are the run's, calls' lengths are the moment's). Taken back from those
 * callees, each in proportion to what its records' extra calls were given, so that no
 * self time is counted twice: duktape's summaries had their window's top 10 add up to
 * 121-137% of the window where a counted function's mean ran high (b66).
 */
/* The self time a counted node's records' extra calls were given */
static uint64_t extra_given(const struct cct_stat *st)
{
	return st->more ? st->self / (st->calls + st->more) * st->more : 0;
}

static void settle_owed(struct cct *c)
{
	for (int l = 0; l < CCT_LANES; l++)
		for (uint32_t p = 0; p < c->n; p++) {
			uint64_t owed = c->node[p].s[l].owed, given = 0;
			if (!owed)
				continue;
			for (uint32_t k = c->node[p].first_child; k != CCT_NONE;
			     k = c->node[k].next_sibling)
				given += extra_given(&c->node[k].s[l]);
			for (uint32_t k = c->node[p].first_child; given && k != CCT_NONE;
			     k = c->node[k].next_sibling) {
				struct cct_stat *st = &c->node[k].s[l];
				uint64_t mine = extra_given(st);
				uint64_t back = owed >= given ? mine : (uint64_t)((double)owed * mine / given);
				st->self -= back;
				st->incl -= back < st->incl ? back : st->incl;
			}
			c->node[p].s[l].owed = 0;
		}
}

int cct_finish(struct cct *c, uint64_t end)
{
	if (c->failed)
		return -ENOMEM;
	if (end > c->t1)
		c->t1 = end;
	/* Calls still running when the ring was frozen: their known part, up to the end. */
	for (; c->sp > 1; c->sp--)
		close_frame(c, &c->stack[c->sp - 1], &c->stack[c->sp - 2], c->t1, true);
	if (c->events)
		close_frame(c, &c->stack[0], NULL, c->t1, false);
	settle_owed(c);
	return c->failed ? -ENOMEM : 0;
}

uint32_t cct_top(const struct cct *c)
{
	return c->sp ? c->stack[c->sp - 1].node : 0;
}

uint32_t cct_last_exit(const struct cct *c)
{
	return c->last_exit;
}

size_t cct_open_calls(const struct cct *c, uint64_t *funcs, size_t max)
{
	size_t n = 0;
	if (c->last_exit) {
		if (n == max)
			return SIZE_MAX;
		funcs[n++] = c->node[c->last_exit].func;
	}
	for (uint32_t nd = cct_top(c); nd; nd = c->node[nd].parent) {
		if (n == max)
			return SIZE_MAX;
		funcs[n++] = c->node[nd].func;
	}
	return n;
}

int cct_build(struct cct *c, const struct rb_event *ev, size_t n, cct_key_fn key, void *ctx)
{
	/* How deep the ring starts: the most exits over entries of any prefix. */
	uint64_t missing = 0, depth = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == RB_EV_ENTRY)
			depth++;
		else if (ev[i].kind == RB_EV_EXIT && depth > 0)
			depth--;
		else if (ev[i].kind == RB_EV_EXIT)
			missing++;
	}
	struct cct_opts o = { .key = key, .ctx = ctx };
	int err = cct_init(c, &o, missing);
	for (size_t i = 0; i < n && !err; i++)
		err = cct_add(c, &ev[i]);
	if (!err)
		err = cct_finish(c, 0);
	if (err)
		cct_free(c);
	return err;
}

void cct_free(struct cct *c)
{
	if (c->stack)
		for (size_t i = 0; i < c->sp; i++)
			release(c->stack[i].best);
	if (c->chain)
		for (unsigned i = 0; i < c->nchains; i++)
			release(c->chain[i]);
	free(c->chain);
	free(c->stack);
	free(c->node);
	free(c->next);
	free(c->hash);
	memset(c, 0, sizeof(*c));
}

static int by_self(const void *a, const void *b)
{
	const struct cct_func *x = a, *y = b;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return x->func < y->func ? -1 : x->func > y->func;
}

int cct_functions(const struct cct *c, enum cct_lane lane, struct cct_func **out, size_t *count)
{
	/* Merge the contexts of each function through a table keyed by function: the tree
	 * can have a hundred thousand nodes for a few hundred functions. */
	uint32_t cap = 64;
	while (cap < 2 * c->n)
		cap *= 2;
	uint32_t *slot = malloc(cap * sizeof(*slot));
	struct cct_func *f = malloc((c->n ? c->n : 1) * sizeof(*f));
	if (!slot || !f) {
		free(slot);
		free(f);
		return -ENOMEM;
	}
	memset(slot, 0xff, cap * sizeof(*slot));
	size_t m = 0;
	/* The root too: its own time is the thread's time outside any traced function (in
	 * an untraced library, or between calls whose entries the ring lost), which a
	 * profile of the same moment puts somewhere: left out, the ranked list would hide
	 * it without a word. It has no calls. */
	for (uint32_t i = 0; i < c->n; i++) {
		const struct cct_stat *st = &c->node[i].s[lane];
		if (i ? !st->calls : !(st->self | st->blocked | st->preempted))
			continue;
		uint64_t func = c->node[i].func;
		uint32_t h = (uint32_t)((func * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
		while (slot[h] != CCT_NONE && f[slot[h]].func != func)
			h = (h + 1) & (cap - 1);
		if (slot[h] == CCT_NONE) {
			slot[h] = (uint32_t)m;
			f[m++] = (struct cct_func){ .func = func };
		}
		struct cct_func *x = &f[slot[h]];
		x->calls += st->calls;
		x->more += st->more;
		x->self += st->self;
		x->blocked += st->blocked;
		x->preempted += st->preempted;
		x->truncated += st->truncated;
		x->running += st->running;
	}
	/* The calls each made: its nodes' children's (parents come before their children). */
	for (uint32_t i = 1; i < c->n; i++) {
		uint64_t calls = c->node[i].s[lane].calls;
		if (!calls)
			continue;
		uint64_t func = c->node[c->node[i].parent].func;
		uint32_t h = (uint32_t)((func * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
		while (slot[h] != CCT_NONE && f[slot[h]].func != func)
			h = (h + 1) & (cap - 1);
		if (slot[h] != CCT_NONE)
			f[slot[h]].callees += calls;
	}
	free(slot);
	qsort(f, m, sizeof(*f), by_self);
	*out = f;
	*count = m;
	return 0;
}
