/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/untimed.c - estimated times for records written without one (untimed.h,
 * docs/untimed.md).
 *
 * Four passes over the ring's records, each O(records): backwards, which slots are
 * payloads (as rb_decoder_init, Hubble 5.1.1: a record's length is known only from its
 * tag, read from the end); forwards, which function owns the gap after each record; the
 * fit, over the windows only; forwards again, the estimates written into a copy.
 */
#include "untimed.h"
#include "record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TIMED	      (1u << 31) /* in own[]: the record has a time */
#define OUTER	      0u	 /* the type of frames older than the ring, and of an empty stack */
#define JMPBUFS	      16	 /* setjmps whose depth the stack walk remembers */
#define ROUNDS	      2u	 /* of the fit after the least squares (solve) */
#define MIN_PATH_GAPS 4		 /* a path seen in fewer gaps keeps its owner's mean (fit_means) */
#define CG_STEPS      20	 /* of the least squares, at most (as good from 16) */
#define FEW_GAPS      64	 /* an owner of fewer gaps than this, */
#define FEW_TIMES     4		 /* its mean this many times the mean of all: FEW_NOTE */

/* Keys of two words to dense values 1.., open addressing (val 0: a free entry). */
struct table {
	uint64_t *a, *b;
	uint32_t *val;
	uint64_t cap;
	uint32_t n;
};

static uint64_t hash(uint64_t a, uint64_t b, uint64_t cap)
{
	return ((a ^ b * 0xff51afd7ed558ccdull) * 0x9e3779b97f4a7c15ull) >> 32 & (cap - 1);
}

static int grow(struct table *t)
{
	uint64_t cap = t->cap ? 2 * t->cap : 1024;
	uint64_t *a = malloc(cap * sizeof(*a)), *b = malloc(cap * sizeof(*b));
	uint32_t *val = calloc(cap, sizeof(*val));
	if (!a || !b || !val) {
		free(a);
		free(b);
		free(val);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < t->cap; i++) {
		if (!t->val[i])
			continue;
		uint64_t h = hash(t->a[i], t->b[i], cap);
		while (val[h])
			h = (h + 1) & (cap - 1);
		a[h] = t->a[i];
		b[h] = t->b[i];
		val[h] = t->val[i];
	}
	free(t->a);
	free(t->b);
	free(t->val);
	t->a = a;
	t->b = b;
	t->val = val;
	t->cap = cap;
	return 0;
}

/* The dense value of a key (1..), added when new; 0 when memory ran out. */
static uint32_t lookup(struct table *t, uint64_t a, uint64_t b)
{
	if (2 * ((uint64_t)t->n + 1) >= t->cap && grow(t) != 0)
		return 0;
	uint64_t h = hash(a, b, t->cap);
	while (t->val[h]) {
		if (t->a[h] == a && t->b[h] == b)
			return t->val[h];
		h = (h + 1) & (t->cap - 1);
	}
	t->a[h] = a;
	t->b[h] = b;
	return t->val[h] = ++t->n;
}

/* The dense value of a key, 0 when it has none. */
static uint32_t find(const struct table *t, uint64_t a, uint64_t b)
{
	if (!t->cap)
		return 0;
	for (uint64_t h = hash(a, b, t->cap); t->val[h]; h = (h + 1) & (t->cap - 1))
		if (t->a[h] == a && t->b[h] == b)
			return t->val[h];
	return 0;
}

static void table_free(struct table *t)
{
	free(t->a);
	free(t->b);
	free(t->val);
}

struct fit {
	struct rb_ring_view v;
	enum rb_untimed_model model;
	uint64_t base, first; /* the oldest valid slot (physical); the first record's index */
	uint64_t *bits;	      /* bit per forward slot index: a payload */
	uint64_t nrec;
	uint32_t *own;	/* per record: the type of the gap after it, | TIMED */
	uint32_t *known; /* per record: ticks known to lie in the gap after it (a counted
			  * call's measured mean, record.h RB_CALLED); NULL without any */
	uint32_t *tidx; /* the timed records' indices, oldest first */
	uint32_t *tts;	/* and their ts32 */
	uint64_t ntimed;
	struct table fn;    /* function ids to dense functions 1.. (OUTER: 0) */
	struct table types; /* gap keys to dense types 1.. (0: the last record's, none) */
	double *d;	    /* per type: the fitted mean gap, in ticks */
	double fixed;	    /* what each window holds besides its gaps (fit_means) */
};

/* The physical slot before i, in a ring of n slots. */
static uint64_t before(uint64_t i, uint64_t n)
{
	return (i ? i : n) - 1;
}

/* A one-slot record or a counted call (record.h), written without its time. */
static bool untimed_tag(uint64_t tag)
{
	uint32_t low = rb_tag_low(tag);
	return (!rb_two_slots(low) || low == RB_CALLED) && rb_tag_ts32(tag) == 0;
}

bool rb_untimed_any(const struct rb_ring_view *v)
{
	if (!rb_ring_view_ok(v) || !v->valid)
		return false;
	uint64_t base = v->end + v->nslots - v->valid;
	base -= base >= v->nslots ? v->nslots : 0;
	/* The valid range is [base, base + valid), wrapping once: at most two runs. Each block
	 * ORs its tests without a branch, which the compiler vectorises. */
	uint64_t from[2] = { base, 0 }, to[2] = { base + v->valid, 0 };
	if (to[0] > v->nslots)
		to[1] = to[0] - v->nslots, to[0] = v->nslots;
	for (int r = 0; r < 2; r++)
		for (uint64_t i = from[r]; i < to[r];) {
			uint64_t stop = to[r] - i > 256 ? i + 256 : to[r];
			unsigned zero = 0;
			for (; i < stop; i++)
				zero |= (uint32_t)(v->slots[i] >> 32) == 0;
			if (zero)
				return true;
		}
	return false;
}

/* Newest to oldest, as rb_decoder_init: which slots are payloads, how many records, and
 * how many of them are untimed. A two-slot record whose payload the wrap overwrote is left
 * out, as the decoder leaves it. */
static uint64_t parse_back(struct fit *f)
{
	const uint64_t *slots = f->v.slots, nslots = f->v.nslots;
	uint64_t p = f->v.valid, i = f->v.end, untimed = 0;
	while (p > 0) {
		p--, i = before(i, nslots);
		uint64_t tag = slots[i];
		if (!rb_two_slots(rb_tag_low(tag))) {
			f->nrec++;
			untimed += rb_tag_ts32(tag) == 0;
			continue;
		}
		if (p == 0) {
			f->first = 1;
			break;
		}
		untimed += untimed_tag(tag);
		p--, i = before(i, nslots);
		f->bits[p >> 6] |= 1ull << (p & 63);
		f->nrec++;
	}
	return untimed;
}

struct stack {
	uint32_t *t;
	uint64_t n, cap;
	struct {
		uint32_t key;
		uint64_t depth;
	} jb[JMPBUFS];
	unsigned njb, jb_next;
};

static int push(struct stack *s, uint32_t type)
{
	if (s->n == s->cap) {
		uint64_t cap = s->cap ? 2 * s->cap : 256;
		uint32_t *t = realloc(s->t, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		s->t = t;
		s->cap = cap;
	}
	s->t[s->n++] = type;
	return 0;
}

/* A setjmp remembers its depth; a longjmp goes back to it (arg 0: pthread_exit, every
 * frame). A longjmp whose setjmp is older than the ring leaves the stack as it is. */
static void nonlocal(struct stack *s, uint32_t low, uint32_t key)
{
	unsigned i = 0;
	while (i < s->njb && s->jb[i].key != key)
		i++;
	if (low == RB_SETJMP) {
		if (i == s->njb)
			i = s->njb < JMPBUFS ? s->njb++ : s->jb_next++ % JMPBUFS;
		s->jb[i].key = key;
		s->jb[i].depth = s->n;
	} else if (key == 0) {
		s->n = 0;
	} else if (i < s->njb && s->jb[i].depth < s->n) {
		s->n = s->jb[i].depth;
	}
}

/* What a record is, for the gap keys: an entry of dense function x, an exit (from: of
 * function x), a special record of kind x, or a counted call of function x (its time lies
 * in the gap after it, which is its caller's: the decoder gives it its measured mean). */
enum { WHAT_ENTRY, WHAT_EXIT, WHAT_SPECIAL, WHAT_CALLED };

/*
 * Oldest to newest: the type of each gap, and the timed records. A gap's owner is the
 * innermost frame open after the record that begins it (entries push, exits pop; special
 * records other than setjmp and longjmp leave the stack alone). RB_UNTIMED_OWNER keys a gap
 * by its owner alone; RB_UNTIMED_PATH by its owner and the records at its two ends (which
 * trace point it runs from and to): f's time before it calls g and after g returns are two
 * types, as different as the code that runs in them.
 */
static int walk(struct fit *f)
{
	const uint64_t *slots = f->v.slots, nslots = f->v.nslots, valid = f->v.valid;
	struct stack s = { 0 };
	uint64_t p = f->first, k = 0, i = f->base + p, prev_a = 0, prev_b = 0;
	i -= i >= nslots ? nslots : 0;
	int err = 0;
	while (p < valid && !err) {
		uint64_t payload = 0;
		if (f->bits[p >> 6] >> (p & 63) & 1) {
			payload = slots[i];
			p++;
			i = i + 1 == nslots ? 0 : i + 1;
		}
		uint64_t tag = slots[i];
		p++;
		i = i + 1 == nslots ? 0 : i + 1;
		uint32_t low = rb_tag_low(tag), what = WHAT_SPECIAL, x = low;
		if (low == RB_EXIT) {
			what = WHAT_EXIT;
			x = s.n ? s.t[--s.n] : OUTER;
		} else if (low >= RB_FIRST_ID || low == RB_WIDE) {
			what = WHAT_ENTRY;
			/* b: 1 for a wide entry's address (few_owners gives it back) */
			x = low == RB_WIDE ? lookup(&f->fn, payload, 1) : lookup(&f->fn, low, 0);
			err = x ? push(&s, x) : -ENOMEM;
		} else if (low == RB_CALLED) {
			what = WHAT_CALLED;
			x = lookup(&f->fn, (uint32_t)payload, 0);
			err = x ? err : -ENOMEM;
			if (!f->known && !(f->known = calloc(f->nrec, sizeof(*f->known))))
				err = -ENOMEM;
			else
				f->known[k] = rb_called_mean((uint32_t)(payload >> 32));
		} else if (low == RB_SETJMP || low == RB_LONGJMP) {
			nonlocal(&s, low, (uint32_t)payload);
		}
		/* The gap before this record ends here: its type, now that both ends are known. */
		bool path = f->model == RB_UNTIMED_PATH;
		if (k) {
			uint64_t b = path ? prev_b | (uint64_t)what << 60 | x : 0;
			uint32_t t = lookup(&f->types, prev_a, b);
			err = t ? err : -ENOMEM;
			f->own[k - 1] |= t;
		}
		uint32_t owner = s.n ? s.t[s.n - 1] : OUTER;
		prev_a = path ? (uint64_t)owner << 32 | x : owner;
		prev_b = (uint64_t)what << 62;
		bool timed = !untimed_tag(tag);
		f->own[k] = timed ? TIMED : 0;
		if (timed) {
			f->tidx[f->ntimed] = (uint32_t)k;
			f->tts[f->ntimed++] = rb_tag_ts32(tag);
		}
		k++;
	}
	free(s.t);
	return err;
}

/* A window holding untimed records whose gaps belong to two types or more: the fit's work.
 * Its gaps as (type, count) pairs, pairs [off, off + n). */
struct window {
	double delta; /* summed over the windows of this composition */
	double mult;  /* how many they are */
	uint64_t off, n, gaps;
};

/* One level of the fit: nt types, the windows to split, and per type what windows of that
 * type alone gave it (pin) and its number of gaps in windows (count). */
struct em {
	uint32_t nt;
	uint64_t nwin;
	const struct window *win;
	const uint32_t *ptype, *pcount;
	const double *pin, *count;
	double *acc;
	double min_count; /* types of fewer gaps keep their mean (least_squares) */
};

/* One round of the fit: each window's delta split in proportion to the means d, and each
 * type's new mean what it was given over its gaps (a type in no window keeps its mean). */
static void em_round(const struct em *e, const double *d, double *out)
{
	double *acc = e->acc;
	memcpy(acc, e->pin, e->nt * sizeof(*acc));
	for (uint64_t w = 0; w < e->nwin; w++) {
		const struct window *x = &e->win[w];
		double sum = 0;
		for (uint64_t i = x->off; i < x->off + x->n; i++)
			sum += e->pcount[i] * d[e->ptype[i]];
		/* All its types' means 0 (every other window of theirs had delta 0): an equal
		 * split. */
		bool equal = !(sum > 0);
		double q = x->delta / (equal ? (double)x->gaps : sum);
		for (uint64_t i = x->off; i < x->off + x->n; i++)
			acc[e->ptype[i]] += q * e->pcount[i] * (equal ? 1 : d[e->ptype[i]]);
	}
	for (uint32_t t = 0; t < e->nt; t++)
		out[t] = e->count[t] && e->count[t] >= e->min_count ? acc[t] / e->count[t] : d[t];
}

/* out = N v, N = A^T W A + diag(pd): A the windows' gap counts, W their weights. */
static void normal_mul(const struct em *e, const double *wt, const double *pd, const double *v,
		       double *out)
{
	for (uint32_t t = 0; t < e->nt; t++)
		out[t] = pd[t] * v[t];
	for (uint64_t k = 0; k < e->nwin; k++) {
		const struct window *x = &e->win[k];
		double s = 0;
		for (uint64_t i = x->off; i < x->off + x->n; i++)
			s += e->pcount[i] * v[e->ptype[i]];
		s *= wt[k];
		for (uint64_t i = x->off; i < x->off + x->n; i++)
			out[e->ptype[i]] += s * e->pcount[i];
	}
}

/*
 * The means that best explain the windows, by weighted least squares: d minimises
 * sum_w (delta_w - sum_t n_wt d_t)^2 / mu_w, mu_w the window's length by the means d came
 * in with (a window's variance grows with its length): the equations the rounds of the fit
 * (em_round) converge to, Poisson's, linearised. Plain rounds crawl where types always come
 * together (a loop's types are in every window in the same proportion, and only the
 * windows' ends tell them apart: on tests/test_untimed.c, 20 rounds left g at 5 times its
 * time, and 1000 were needed); conjugate gradients on the normal equations, preconditioned
 * by their diagonal, settle in about as many steps as there are directions to tell apart,
 * at most CG_STEPS, each costing two rounds. Starting from d, a direction no window tells
 * (types only ever seen together, in one proportion) keeps d's. Means found below 0 (noise,
 * on types of little time) become 0. npin: per type, its gaps in windows of it alone.
 * w: 6 * nt + nwin doubles.
 */
static void least_squares(const struct em *e, const double *npin, double *d, double *w)
{
	uint32_t nt = e->nt;
	double *r = w, *z = w + nt, *p = w + 2 * nt, *q = w + 3 * nt, *diag = w + 4 * nt;
	double *pd = w + 5 * nt, *wt = w + 6 * nt;
	for (uint32_t t = 0; t < nt; t++) { /* the windows of one type, summed */
		double mu = d[t] > 1 ? d[t] : 1;
		pd[t] = diag[t] = npin[t] / mu;
		r[t] = e->pin[t] / mu;
	}
	for (uint64_t k = 0; k < e->nwin; k++) {
		const struct window *x = &e->win[k];
		double mu = 0;
		for (uint64_t i = x->off; i < x->off + x->n; i++)
			mu += e->pcount[i] * d[e->ptype[i]];
		wt[k] = x->mult / (mu > 1 ? mu : 1);
		for (uint64_t i = x->off; i < x->off + x->n; i++) {
			r[e->ptype[i]] += wt[k] / x->mult * x->delta * e->pcount[i];
			diag[e->ptype[i]] += wt[k] * (double)e->pcount[i] * e->pcount[i];
		}
	}
	for (uint32_t t = 0; t < nt; t++)
		diag[t] = e->count[t] >= e->min_count ? diag[t] : 0; /* kept as they are */
	normal_mul(e, wt, pd, d, q);
	double rz = 0;
	for (uint32_t t = 0; t < nt; t++) {
		r[t] -= q[t];
		p[t] = z[t] = diag[t] > 0 ? r[t] / diag[t] : 0;
		rz += r[t] * z[t];
	}
	const double r0 = rz;
	for (int step = 0; step < CG_STEPS && rz > 1e-24 * r0; step++) {
		normal_mul(e, wt, pd, p, q);
		double pq = 0, rz1 = 0;
		for (uint32_t t = 0; t < nt; t++)
			pq += p[t] * q[t];
		if (!(pq > 0))
			break;
		double alpha = rz / pq;
		for (uint32_t t = 0; t < nt; t++) {
			d[t] += alpha * p[t];
			r[t] -= alpha * q[t];
			z[t] = diag[t] > 0 ? r[t] / diag[t] : 0;
			rz1 += r[t] * z[t];
		}
		for (uint32_t t = 0; t < nt; t++)
			p[t] = z[t] + rz1 / rz * p[t];
		rz = rz1;
	}
	for (uint32_t t = 0; t < nt; t++)
		d[t] = d[t] > 0 ? d[t] : 0;
}

/* The fit at one level: least squares from d, then ROUNDS rounds, which keep every mean
 * what its type was given on average (the fill's premise). */
static unsigned solve(const struct em *e, const double *npin, double *d, double *w)
{
	least_squares(e, npin, d, w);
	for (unsigned i = 0; i < ROUNDS; i++) {
		em_round(e, d, w);
		memcpy(d, w, e->nt * sizeof(*d));
	}
	return ROUNDS;
}

/*
 * FIXED_NOTE: a window's fixed part. A timed record costs more than an untimed one (on
 * x86_64 the timer read, 20 ns in a VM, and a call around it in a sleds thunk), and half of
 * that lies in the gap before its time, half in the gap after: every window holds about
 * one such cost besides its gaps, whatever their number. Fitted as gaps, it made the
 * windows of one gap (as many as 1 in 64) look as long as a timer read, and in a learnt
 * interpreter trace, where one short helper's calls alternate with its caller's code, the
 * fit gave the helper 56% of the thread where perf's profile gives it 10%
 * (tests/test_untimed.c's helper loop: 47% to 59% for a true 15.5%). So each window (but
 * with the equal split) holds one more pair, (fixed, 1), and the fit finds its mean with
 * the others': 0 where the windows cannot tell it, and what each window is given of it
 * lies half in its first gap, half in its last (fill).
 *
 * The fit (untimed.h): d[type], the mean gap of each type. A window of one type gives it
 * its delta whatever the means (pin: with the equal split only, since every other window
 * holds its fixed part too); the others are split in proportion to the means.
 * RB_UNTIMED_PATH first fits the owners (RB_UNTIMED_OWNER), and starts each path from its
 * owner's mean: a path that only ever shares windows with the same others (the long call
 * among short ones, whose three gaps are each seen once) cannot be told apart from them,
 * and the fit keeps their starting proportions, which the owners' fit made sensible. Types
 * seen in no window (only before the first or after the last timed record) keep their
 * owner's mean, or the mean of all.
 */
/* The ticks known to lie in the gaps after records [a, b) (counted calls). */
static double known_sum(const struct fit *f, uint64_t a, uint64_t b)
{
	double sum = 0;
	for (uint64_t g = a; f->known && g < b; g++)
		sum += f->known[g];
	return sum;
}

/*
 * FEW_NOTE: a function called a few times in the whole ring, each call in a window shared
 * with others, is given what those windows' other gaps do not explain: the least squares
 * have nothing else to set its mean by. Where that mean is far above a gap's, the time may
 * be its own (the long call the fit must find: tests/test_untimed.c) or its neighbours'
 * (SQLite's dbMallocRawFinish, 8 calls, came out at 10.1 ms, 7.8% of a trace whose perf
 * profile gives it nothing); the windows cannot tell which. Such functions are named in
 * the stats, and a summary says of their time that it is this guess. Owners (dense
 * function indices 1..nfn) of fewer than FEW_GAPS gaps, whose mean is FEW_TIMES the mean
 * of all or more, and whose time the windows of them alone (pin) do not account for half
 * of; the RB_UNTIMED_FEW_MAX with the most time, most first.
 */
static void few_owners(const struct fit *f, uint32_t nfn, const double *count, const double *pin,
		       const double *d, double mean, struct rb_untimed_stats *st)
{
	uint32_t best[RB_UNTIMED_FEW_MAX];
	double time[RB_UNTIMED_FEW_MAX];
	unsigned n = 0;
	for (uint32_t o = 1; o <= nfn; o++) {
		double t = d[o] * count[o];
		if (!count[o] || count[o] >= FEW_GAPS || !(d[o] >= FEW_TIMES * mean) ||
		    pin[o] * 2 >= t)
			continue;
		if (n < RB_UNTIMED_FEW_MAX)
			n++;
		else if (t <= time[n - 1])
			continue;
		unsigned at = n - 1; /* the last place, freed or the least time's */
		for (; at > 0 && time[at - 1] < t; at--)
			best[at] = best[at - 1], time[at] = time[at - 1];
		best[at] = o, time[at] = t;
	}
	for (unsigned k = 0; k < n; k++)
		for (uint64_t i = 0; i < f->fn.cap; i++)
			if (f->fn.val[i] == best[k]) {
				st->few[k] = f->fn.a[i];
				st->few_wide[k] = f->fn.b[i] == 1;
				break;
			}
	st->nfew = n;
}

/*
 * MEASURED_NOTE: the functions' measured calls (rb_ring_view.measured: sleds' learning
 * windows, every record timed). Where a function's calls always come in the same order
 * with its neighbours' (an interpreter's loop, whose turn is about a window long), every
 * window holds its gaps and theirs in one proportion, and nothing tells them apart: on a
 * fib trace of duktape the fit gave `duk__handle_return` 1.46 us a call and the bytecode
 * loop (the ring's outer frame), perf's top, nothing. A measured function adds one window
 * more, made of all its gaps in the ring's windows, whose delta is its calls there times
 * its measured call: as much evidence as the ring's own windows in the rounds, more in
 * the least squares, where its length is the sum of many gaps'. Its calls: the gaps after
 * its entries. Returns 0 or -ENOMEM.
 */
struct by_owner {
	uint32_t owner, type;
};

static int cmp_owner(const void *a, const void *b)
{
	const struct by_owner *x = a, *y = b;
	return x->owner != y->owner ? (x->owner > y->owner ? 1 : -1)
				    : (x->type > y->type) - (x->type < y->type);
}

static int measured_windows(struct fit *f, const uint32_t *owner, double *count,
			    struct window *win, uint64_t *nwin, uint32_t *ptype, uint32_t *pcount,
			    uint64_t *npairs, struct rb_untimed_stats *st)
{
	uint32_t nfn = f->fn.n;
	double *call = calloc(nfn + 1, sizeof(*call)), *calls = calloc(nfn + 1, sizeof(*calls));
	struct by_owner *list = malloc((f->types.n + 1) * sizeof(*list));
	if (!call || !calls || !list) {
		free(call), free(calls), free(list);
		return -ENOMEM;
	}
	for (size_t k = 0; k < f->v.nmeasured; k++) {
		uint32_t o = find(&f->fn, f->v.measured[k].id, 0);
		if (o && o <= nfn && f->v.measured[k].ticks)
			call[o] = f->v.measured[k].ticks;
	}
	size_t n = 0;
	for (uint64_t i = 0; i < f->types.cap; i++) {
		uint32_t t = f->types.val[i], o = t ? owner[t] : 0;
		if (!o || o > nfn || !call[o] || !count[t])
			continue;
		list[n++] = (struct by_owner){ o, t };
		/* after its entry: owner and record its own, the record an entry (WHAT_ENTRY) */
		if ((uint32_t)f->types.a[i] == o && f->types.b[i] >> 62 == WHAT_ENTRY)
			calls[o] += count[t];
	}
	qsort(list, n, sizeof(*list), cmp_owner);
	for (size_t i = 0; i < n;) {
		uint32_t o = list[i].owner;
		uint64_t off = *npairs, gaps = 0;
		for (; i < n && list[i].owner == o; i++) {
			ptype[*npairs] = list[i].type;
			pcount[(*npairs)++] = (uint32_t)count[list[i].type];
			gaps += (uint64_t)count[list[i].type];
		}
		if (!calls[o]) { /* no entry of it in a window: its calls are not known */
			*npairs = off;
			continue;
		}
		win[(*nwin)++] = (struct window){ calls[o] * call[o], 1, off, *npairs - off, gaps };
		st->measured++;
	}
	/* Each type's gaps are now in two windows: the rounds' means are over both. */
	for (size_t i = 0; i < n; i++)
		if (calls[list[i].owner])
			count[list[i].type] *= 2;
	free(call), free(calls), free(list);
	return 0;
}

static int fit_means(struct fit *f, struct rb_untimed_stats *st)
{
	/* The types, then one more at each level: the windows' fixed part (FIXED_NOTE). */
	const uint32_t fixed = f->types.n + 1, fixed1 = f->fn.n + 1;
	uint32_t nt = fixed + 1, no = fixed1 + 1;
	uint32_t big = nt > no ? nt : no;
	double *pin = calloc(nt, sizeof(*pin)), *count = calloc(nt, sizeof(*count));
	double *pin1 = calloc(no, sizeof(*pin1)), *count1 = calloc(no, sizeof(*count1));
	double *acc = malloc(big * sizeof(*acc)), *d1 = malloc(no * sizeof(*d1));
	double *npin = calloc(nt, sizeof(*npin)), *npin1 = calloc(no, sizeof(*npin1));
	double *w = malloc((6 * (size_t)big + f->ntimed + 1) * sizeof(*w));
	uint32_t *stamp = calloc(big, sizeof(*stamp)), *at = malloc(big * sizeof(*at));
	uint32_t *owner = calloc(nt, sizeof(*owner));
	/* a pair per gap and a fixed one a window, and one per type in the measured windows */
	uint64_t maxpairs = f->nrec + f->ntimed + 1 + f->types.n + 1;
	uint64_t maxwin = f->ntimed + 1 + f->fn.n + 1;
	uint32_t *ptype = malloc(maxpairs * sizeof(*ptype));
	uint32_t *ptype1 = malloc(maxpairs * sizeof(*ptype1));
	uint32_t *pcount = malloc(maxpairs * sizeof(*pcount));
	uint32_t *pcount1 = malloc(maxpairs * sizeof(*pcount1));
	struct window *win = malloc(maxwin * sizeof(*win));
	struct window *win1 = malloc(maxwin * sizeof(*win1));
	uint64_t wcap = 1;
	while (wcap < 2 * (f->ntimed + 1))
		wcap *= 2;
	uint32_t *whash = calloc(wcap, sizeof(*whash));
	f->d = malloc(nt * sizeof(*f->d));
	int err = -ENOMEM;
	if (!pin || !count || !pin1 || !count1 || !acc || !d1 || !npin || !npin1 || !w || !stamp ||
	    !at || !owner || !ptype || !ptype1 || !pcount || !pcount1 || !win || !win1 || !whash ||
	    !f->d)
		goto out;
	uint64_t nwin = 0, npairs = 0;
	double total = 0, gaps = 0;
	for (uint64_t j = 0; j + 1 < f->ntimed; j++) {
		uint64_t a = f->tidx[j], b = f->tidx[j + 1];
		double delta = (uint32_t)(f->tts[j + 1] - f->tts[j]), kn = known_sum(f, a, b);
		delta = delta > kn ? delta - kn : 0; /* the counted calls' time is known */
		uint64_t off = npairs;
		for (uint64_t g = a; g < b; g++) {
			uint32_t t = f->own[g] & ~TIMED;
			count[t]++;
			if (stamp[t] != j + 1) {
				stamp[t] = (uint32_t)(j + 1);
				at[t] = (uint32_t)npairs;
				ptype[npairs] = t;
				pcount[npairs++] = 0;
			}
			pcount[at[t]]++;
		}
		if (f->model != RB_UNTIMED_EQUAL) { /* the window's fixed part, FIXED_NOTE */
			ptype[npairs] = fixed;
			pcount[npairs++] = 1;
			count[fixed]++;
		}
		st->windows += b - a > 1;
		total += delta;
		gaps += (double)(b - a);
		if (npairs - off == 1) {
			pin[ptype[off]] += delta;
			npin[ptype[off]] += (double)(b - a);
			npairs = off;
		} else {
			/* Windows of one composition (a loop's, at one phase) are one for the fit:
			 * its rounds split their summed delta as each's, its least squares weigh
			 * them by their number. On tests/test_untimed.c's loops, 927 windows are
			 * 433 compositions; on bench-summary's random call graph, 10515 are 9573.
			 */
			uint64_t h = 0;
			for (uint64_t i = off; i < npairs; i++)
				h = (h ^ ptype[i]) * 0x100000001b3ull ^
				    pcount[i] * 0x9e3779b97f4a7c15ull;
			uint64_t at_w = h & (wcap - 1);
			for (; whash[at_w]; at_w = (at_w + 1) & (wcap - 1)) {
				const struct window *x = &win[whash[at_w] - 1];
				if (x->n == npairs - off &&
				    !memcmp(&ptype[x->off], &ptype[off], x->n * sizeof(*ptype)) &&
				    !memcmp(&pcount[x->off], &pcount[off], x->n * sizeof(*pcount)))
					break;
			}
			if (whash[at_w]) {
				win[whash[at_w] - 1].delta += delta;
				win[whash[at_w] - 1].mult++;
				npairs = off;
			} else {
				win[nwin] = (struct window){ delta, 1, off, npairs - off, b - a };
				whash[at_w] = (uint32_t)++nwin;
			}
		}
	}
	double mean = gaps ? total / gaps : 0;
	for (uint32_t t = 0; t < nt; t++)
		f->d[t] = mean;
	f->d[fixed] = 0; /* 0 where the windows cannot tell it (all of one length) */
	if (f->model == RB_UNTIMED_EQUAL)
		goto done; /* one mean for all: each window split equally */
	/* The owners' level: each type's owner, from its key (walk). */
	for (uint64_t i = 0; i < f->types.cap; i++)
		if (f->types.val[i])
			owner[f->types.val[i]] =
				(uint32_t)(f->types.a[i] >> (f->model == RB_UNTIMED_PATH ? 32 : 0));
	owner[fixed] = fixed1;
	if (f->model == RB_UNTIMED_PATH && f->v.nmeasured) {
		err = measured_windows(f, owner, count, win, &nwin, ptype, pcount, &npairs, st);
		if (err)
			goto out;
		err = -ENOMEM;
	}
	for (uint32_t t = 0; t < nt; t++) {
		pin1[owner[t]] += pin[t];
		npin1[owner[t]] += npin[t];
		count1[owner[t]] += count[t];
	}
	/* The windows by owner: a window's paths of one owner are one pair (half as many on
	 * bench-summary's ring). */
	uint64_t np1 = 0;
	memset(stamp, 0, no * sizeof(*stamp));
	for (uint64_t k = 0; k < nwin; k++) {
		struct window *x = &win[k], *y = &win1[k];
		*y = *x;
		y->off = np1;
		for (uint64_t i = x->off; i < x->off + x->n; i++) {
			uint32_t o = owner[ptype[i]];
			if (stamp[o] != k + 1) {
				stamp[o] = (uint32_t)(k + 1);
				at[o] = (uint32_t)np1;
				ptype1[np1] = o;
				pcount1[np1++] = 0;
			}
			pcount1[at[o]] += pcount[i];
		}
		y->n = np1 - y->off;
	}
	for (uint32_t o = 0; o < no; o++)
		d1[o] = mean;
	d1[fixed1] = 0;
	struct em e1 = { no, nwin, win1, ptype1, pcount1, pin1, count1, acc, 0 };
	st->rounds = solve(&e1, npin1, d1, w);
	few_owners(f, f->fn.n, count1, pin1, d1, mean, st);
	for (uint32_t t = 0; t < nt; t++)
		f->d[t] = d1[owner[t]];
	if (f->model == RB_UNTIMED_PATH) {
		struct em e2 = { nt, nwin, win, ptype, pcount, pin, count, acc, MIN_PATH_GAPS };
		st->rounds += solve(&e2, npin, f->d, w);
	}
	f->fixed = f->d[fixed];
done:
	err = 0;
out:
	free(pin);
	free(count);
	free(pin1);
	free(count1);
	free(acc);
	free(d1);
	free(npin);
	free(npin1);
	free(w);
	free(stamp);
	free(at);
	free(owner);
	free(ptype);
	free(ptype1);
	free(pcount);
	free(pcount1);
	free(win);
	free(win1);
	free(whash);
	return err;
}

/* x rounded, modulo 2^32 (x is below 2^63: each mean is below 2^32, and so many records
 * would take 2^31 slots). */
static uint32_t ticks(double x)
{
	return x > 0 ? (uint32_t)(uint64_t)(x + 0.5) : 0;
}

/*
 * Oldest to newest again, writing each untimed record's estimate into the copy: in a
 * window, its timed start plus the counted calls' known time before it, plus the rest of
 * the window's delta times the share of the means of the gaps before it (so the estimates
 * never decrease and stay between the two timed records; known time that would not fit is
 * scaled down to the delta); before the first timed record, stepped back from it by the
 * means and the known time; after the last, stepped forward, scaled down when needed so as
 * not to pass the reference.
 */
static void fill(struct fit *f, uint64_t *copy, uint32_t ref32)
{
	const uint64_t nslots = f->v.nslots, valid = f->v.valid;
	const double *d = f->d;
	uint64_t p = f->first, i = f->base + p, j = 0, a = 0; /* j: the next timed record */
	i -= i >= nslots ? nslots : 0;
	double head = known_sum(f, 0, f->tidx[0]), cum = 0, kcum = 0, sum = 0, scale = 1;
	double kscale = 1, rest = 0;
	uint32_t ts = f->tts[0], delta = 0, prev = 0;
	bool equal = false;
	for (uint64_t g = 0; g < f->tidx[0]; g++)
		head += d[f->own[g] & ~TIMED];
	for (uint64_t k = 0; p < valid; k++) {
		if (f->bits[p >> 6] >> (p & 63) & 1) {
			p++;
			i = i + 1 == nslots ? 0 : i + 1;
		}
		uint64_t at = i;
		p++;
		i = i + 1 == nslots ? 0 : i + 1;
		if (k) {
			cum += d[f->own[k - 1] & ~TIMED];
			kcum += f->known ? f->known[k - 1] : 0;
		}
		if (j < f->ntimed && k == f->tidx[j]) { /* a window, or the tail, begins */
			a = k;
			ts = f->tts[j++];
			/* A window's fixed part (FIXED_NOTE) lies half in its first gap, half in
			 * its last; the tail has none. */
			double fx = j < f->ntimed ? f->fixed : 0;
			cum = fx / 2, sum = fx, kcum = 0, prev = 0;
			uint64_t b = j < f->ntimed ? f->tidx[j] : f->nrec - 1;
			for (uint64_t g = k; g < b; g++)
				sum += d[f->own[g] & ~TIMED];
			double ksum = known_sum(f, k, b);
			delta = j < f->ntimed ? f->tts[j] - ts : ref32 - ts;
			kscale = ksum <= delta ? 1 : delta / ksum;
			rest = delta - ksum * kscale;
			scale = sum + ksum <= delta ? 1 : delta / (sum + ksum); /* for the tail */
			/* A window whose means are all 0 (each of its types had windows of delta
			 * 0 only, a safety net): an equal split. */
			equal = j < f->ntimed && !(sum > 0);
			if (equal)
				sum = (double)(b - a);
			continue;
		}
		uint32_t est;
		if (k < f->tidx[0]) {
			est = ts - ticks(head - cum - kcum);
		} else if (j < f->ntimed) {
			double x = kcum * kscale + rest * (equal ? (double)(k - a) : cum) / sum;
			uint32_t off = ticks(x);
			off = off > delta ? delta : off < prev ? prev : off;
			prev = off;
			est = ts + off;
		} else {
			est = ts + ticks((cum + kcum) * scale);
		}
		copy[at] = (uint64_t)est << 32 | rb_tag_low(copy[at]);
	}
}

static void fit_free(struct fit *f)
{
	free(f->bits);
	free(f->own);
	free(f->known);
	free(f->tidx);
	free(f->tts);
	table_free(&f->fn);
	table_free(&f->types);
	free(f->d);
}

int rb_untimed_fill(const struct rb_ring_view *v, uint64_t ref_ticks, enum rb_untimed_model model,
		    uint64_t **filled, struct rb_untimed_stats *stats)
{
	*filled = NULL;
	memset(stats, 0, sizeof(*stats));
	if (!rb_ring_view_ok(v))
		return -EINVAL;
	if (!rb_untimed_any(v))
		return 0;
	struct fit f = { .v = *v, .model = model };
	f.base = v->end + v->nslots - v->valid;
	f.base -= f.base >= v->nslots ? v->nslots : 0;
	int err = -ENOMEM;
	if (!(f.bits = calloc(v->valid / 64 + 1, sizeof(*f.bits))))
		goto out;
	stats->untimed = parse_back(&f);
	if (!stats->untimed)
		goto done;   /* the zero upper halves were payloads' */
	if (f.nrec >= TIMED) /* types and indices are 31 bits: a ring of 16 GiB */
		goto out;
	f.own = malloc(f.nrec * sizeof(*f.own));
	f.tidx = malloc(f.nrec * sizeof(*f.tidx));
	f.tts = malloc(f.nrec * sizeof(*f.tts));
	if (!f.own || !f.tidx || !f.tts || walk(&f) != 0)
		goto out;
	stats->timed = f.ntimed;
	stats->types = f.types.n;
	if (!f.ntimed) { /* nothing to estimate from: all at one time */
		stats->unknown = stats->untimed;
		goto done;
	}
	stats->outside = f.tidx[0] + (f.nrec - 1 - f.tidx[f.ntimed - 1]);
	if (fit_means(&f, stats) != 0 || !(*filled = malloc(v->stored * sizeof(**filled))))
		goto out;
	memcpy(*filled, v->slots, v->stored * sizeof(**filled));
	fill(&f, *filled, (uint32_t)ref_ticks);
done:
	err = 0;
out:
	fit_free(&f);
	return err;
}
