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

#define TIMED	(1u << 31) /* in own[]: the record has a time */
#define OUTER	0u	   /* the type of frames older than the ring, and of an empty stack */
#define JMPBUFS 16	   /* setjmps whose depth the stack walk remembers */

struct fit {
	struct rb_ring_view v;
	uint64_t base, first; /* the oldest valid slot (physical); the first record's index */
	uint64_t *bits;	      /* bit per forward slot index: a payload */
	uint64_t nrec;
	uint32_t *own;	/* per record: the type owning the gap after it, | TIMED */
	uint32_t *tidx; /* the timed records' indices, oldest first */
	uint32_t *tts;	/* and their ts32 */
	uint64_t ntimed;
	/* Function ids to dense types (1..), open addressing; keys[i] is valid when val[i]. */
	uint64_t *keys;
	uint32_t *val;
	uint64_t cap;
	uint32_t ntypes; /* types so far, "outer" included */
	double *d;	 /* per type: the fitted mean gap, in ticks */
};

/* The physical slot before i, in a ring of n slots. */
static uint64_t before(uint64_t i, uint64_t n)
{
	return (i ? i : n) - 1;
}

static bool untimed_tag(uint64_t tag)
{
	return !rb_two_slots(rb_tag_low(tag)) && rb_tag_ts32(tag) == 0;
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
		p--, i = before(i, nslots);
		f->bits[p >> 6] |= 1ull << (p & 63);
		f->nrec++;
	}
	return untimed;
}

static uint64_t hash(uint64_t key, uint64_t cap)
{
	return (key * 0x9e3779b97f4a7c15ull) >> 32 & (cap - 1);
}

static int grow_types(struct fit *f)
{
	uint64_t cap = f->cap ? 2 * f->cap : 1024;
	uint64_t *keys = malloc(cap * sizeof(*keys));
	uint32_t *val = calloc(cap, sizeof(*val));
	if (!keys || !val) {
		free(keys);
		free(val);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < f->cap; i++) {
		if (!f->val[i])
			continue;
		uint64_t h = hash(f->keys[i], cap);
		while (val[h])
			h = (h + 1) & (cap - 1);
		keys[h] = f->keys[i];
		val[h] = f->val[i];
	}
	free(f->keys);
	free(f->val);
	f->keys = keys;
	f->val = val;
	f->cap = cap;
	return 0;
}

/* The dense type of a function id (1..), added when new; 0 when memory ran out. */
static uint32_t type_of(struct fit *f, uint64_t id)
{
	if (2 * (uint64_t)f->ntypes >= f->cap && grow_types(f) != 0)
		return 0;
	uint64_t h = hash(id, f->cap);
	while (f->val[h]) {
		if (f->keys[h] == id)
			return f->val[h];
		h = (h + 1) & (f->cap - 1);
	}
	f->keys[h] = id;
	f->val[h] = f->ntypes++;
	return f->val[h];
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

/*
 * Oldest to newest: the owner of each gap, the innermost frame open after the record that
 * begins it (entries push, exits pop; special records other than setjmp and longjmp leave
 * the stack alone), and the timed records.
 */
static int walk(struct fit *f)
{
	const uint64_t *slots = f->v.slots, nslots = f->v.nslots, valid = f->v.valid;
	struct stack s = { 0 };
	uint64_t p = f->first, k = 0, i = f->base + p;
	i -= i >= nslots ? nslots : 0;
	int err = 0;
	f->ntypes = 1; /* OUTER */
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
		uint32_t low = rb_tag_low(tag);
		if (low == RB_EXIT) {
			s.n -= s.n > 0;
		} else if (low >= RB_FIRST_ID || low == RB_WIDE) {
			uint32_t t = type_of(f, low == RB_WIDE ? payload : low);
			err = t ? push(&s, t) : -ENOMEM;
		} else if (low == RB_SETJMP || low == RB_LONGJMP) {
			nonlocal(&s, low, (uint32_t)payload);
		}
		bool timed = !untimed_tag(tag);
		f->own[k] = (s.n ? s.t[s.n - 1] : OUTER) | (timed ? TIMED : 0);
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
	double delta;
	uint64_t off, n, gaps;
};

/*
 * The fit (untimed.h): d[type], the mean gap of each type. A window of one type gives it
 * its delta whatever the means (pin); the others are split in proportion to the means,
 * round after round, until the means move by less than 1e-4 of themselves. Types seen in
 * no window (only before the first or after the last timed record) get the mean of all.
 */
static int fit_means(struct fit *f, unsigned rounds, struct rb_untimed_stats *st)
{
	uint32_t nt = f->ntypes;
	double *pin = calloc(nt, sizeof(*pin)), *acc = malloc(nt * sizeof(*acc));
	double *count = calloc(nt, sizeof(*count));
	uint32_t *stamp = calloc(nt, sizeof(*stamp)), *at = malloc(nt * sizeof(*at));
	uint32_t *ptype = malloc((f->nrec + 1) * sizeof(*ptype));
	uint32_t *pcount = malloc((f->nrec + 1) * sizeof(*pcount));
	struct window *win = malloc((f->ntimed + 1) * sizeof(*win));
	f->d = malloc(nt * sizeof(*f->d));
	int err = -ENOMEM;
	if (!pin || !acc || !count || !stamp || !at || !ptype || !pcount || !win || !f->d)
		goto out;
	uint64_t nwin = 0, npairs = 0;
	double total = 0, gaps = 0;
	for (uint64_t j = 0; j + 1 < f->ntimed; j++) {
		uint64_t a = f->tidx[j], b = f->tidx[j + 1];
		double delta = (uint32_t)(f->tts[j + 1] - f->tts[j]);
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
		st->windows += b - a > 1;
		total += delta;
		gaps += (double)(b - a);
		if (npairs - off == 1) {
			pin[ptype[off]] += delta;
			npairs = off;
		} else {
			win[nwin++] = (struct window){ delta, off, npairs - off, b - a };
		}
	}
	double mean = gaps ? total / gaps : 0;
	for (uint32_t t = 0; t < nt; t++)
		f->d[t] = rounds ? 1 : mean; /* 0 rounds: the equal split, for comparisons */
	for (st->rounds = 0; st->rounds < rounds;) {
		memcpy(acc, pin, nt * sizeof(*acc));
		for (uint64_t w = 0; w < nwin; w++) {
			const struct window *x = &win[w];
			double sum = 0;
			for (uint64_t i = x->off; i < x->off + x->n; i++)
				sum += pcount[i] * f->d[ptype[i]];
			/* All its types' means 0 (every other window of theirs had delta 0): an
			 * equal split. */
			bool equal = !(sum > 0);
			double q = x->delta / (equal ? (double)x->gaps : sum);
			for (uint64_t i = x->off; i < x->off + x->n; i++)
				acc[ptype[i]] += q * pcount[i] * (equal ? 1 : f->d[ptype[i]]);
		}
		bool settled = true;
		for (uint32_t t = 0; t < nt; t++) {
			double d = count[t] ? acc[t] / count[t] : mean;
			double moved = d > f->d[t] ? d - f->d[t] : f->d[t] - d;
			settled &= moved <= 1e-4 * d + 1e-9;
			f->d[t] = d;
		}
		st->rounds++;
		if (settled)
			break;
	}
	err = 0;
out:
	free(pin);
	free(acc);
	free(count);
	free(stamp);
	free(at);
	free(ptype);
	free(pcount);
	free(win);
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
 * window, its timed start plus the window's delta times the share of the means of the gaps
 * before it (so the estimates never decrease and stay between the two timed records);
 * before the first timed record, stepped back from it by the means; after the last,
 * stepped forward, scaled down when needed so as not to pass the reference.
 */
static void fill(struct fit *f, uint64_t *copy, uint32_t ref32)
{
	const uint64_t nslots = f->v.nslots, valid = f->v.valid;
	const double *d = f->d;
	uint64_t p = f->first, i = f->base + p, j = 0, a = 0; /* j: the next timed record */
	i -= i >= nslots ? nslots : 0;
	double head = 0, cum = 0, sum = 0, scale = 1;
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
		if (k)
			cum += d[f->own[k - 1] & ~TIMED];
		if (j < f->ntimed && k == f->tidx[j]) { /* a window, or the tail, begins */
			a = k;
			ts = f->tts[j++];
			cum = sum = prev = 0;
			uint64_t b = j < f->ntimed ? f->tidx[j] : f->nrec - 1;
			for (uint64_t g = k; g < b; g++)
				sum += d[f->own[g] & ~TIMED];
			delta = j < f->ntimed ? f->tts[j] - ts : ref32 - ts;
			scale = sum <= delta ? 1 : delta / sum; /* for the tail */
			/* A window whose means are all 0 (each of its types had windows of delta
			 * 0 only, a safety net): an equal split. */
			equal = j < f->ntimed && !(sum > 0);
			if (equal)
				sum = (double)(b - a);
			continue;
		}
		uint32_t est;
		if (k < f->tidx[0]) {
			est = ts - ticks(head - cum);
		} else if (j < f->ntimed) {
			uint32_t off = ticks((double)delta * (equal ? (double)(k - a) : cum) / sum);
			off = off > delta ? delta : off < prev ? prev : off;
			prev = off;
			est = ts + off;
		} else {
			est = ts + ticks(cum * scale);
		}
		copy[at] = (uint64_t)est << 32 | rb_tag_low(copy[at]);
	}
}

static void fit_free(struct fit *f)
{
	free(f->bits);
	free(f->own);
	free(f->tidx);
	free(f->tts);
	free(f->keys);
	free(f->val);
	free(f->d);
}

int rb_untimed_fill(const struct rb_ring_view *v, uint64_t ref_ticks, unsigned rounds,
		    uint64_t **filled, struct rb_untimed_stats *stats)
{
	*filled = NULL;
	memset(stats, 0, sizeof(*stats));
	if (!rb_ring_view_ok(v))
		return -EINVAL;
	if (!rb_untimed_any(v))
		return 0;
	struct fit f = { .v = *v };
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
	stats->types = f.ntypes;
	if (!f.ntimed) { /* nothing to estimate from: all at one time */
		stats->unknown = stats->untimed;
		goto done;
	}
	stats->outside = f.tidx[0] + (f.nrec - 1 - f.tidx[f.ntimed - 1]);
	if (fit_means(&f, rounds, stats) != 0 || !(*filled = malloc(v->stored * sizeof(**filled))))
		goto out;
	memcpy(*filled, v->slots, v->stored * sizeof(**filled));
	fill(&f, *filled, (uint32_t)ref_ticks);
done:
	err = 0;
out:
	fit_free(&f);
	return err;
}
