/* SPDX-License-Identifier: MIT */
#include "coroutines.h"
#include "record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bounds: a chain of active contexts deeper than this nests no further (the next one runs
 * as part of the top one); the suspended contexts remembered are the most recently left;
 * a context's saved frames beyond the outermost RB_CO_FRAMES are dropped (its exits of
 * those then count as unmatched). */
#define RB_CO_NEST 32
#define RB_CO_SAVED 256
#define RB_CO_FRAMES 4096

struct co_frame {
	uint64_t id;
	uint8_t wide;
};

struct co_active {
	uint32_t key; /* 0: not known yet (the thread's own stack, until it first switches) */
	bool made;    /* by makecontext: its function returns to uc_link */
	int64_t base; /* the call depth it started at */
};

struct co_saved {
	uint32_t key; /* 0: a free entry */
	bool made;
	uint64_t left_at; /* for evicting the least recently left */
	struct co_frame *frames;
	size_t n;
};

struct rb_coroutines {
	/* The frames entered in the ring and still open, outermost first. */
	struct co_frame *open;
	size_t nopen, capopen;
	struct co_active nest[RB_CO_NEST];
	unsigned nnest;
	struct co_saved saved[RB_CO_SAVED];
	uint64_t switches;
	uint32_t swap_from; /* the context a CTX_SWAP named, for the CTX_SET after it */
	bool swap_pending;
	struct rb_event *owed;
	size_t nowed, owed_i, capowed;
};

static void saved_clear(struct co_saved *s)
{
	free(s->frames);
	*s = (struct co_saved){ 0 };
}

void rb_co_reset(struct rb_coroutines *c)
{
	for (unsigned i = 0; i < RB_CO_SAVED; i++)
		saved_clear(&c->saved[i]);
	c->nopen = 0;
	c->nnest = 1;
	c->nest[0] = (struct co_active){ .key = 0, .base = INT64_MIN };
	c->switches = 0;
	c->swap_pending = false;
	c->nowed = c->owed_i = 0;
}

struct rb_coroutines *rb_co_new(void)
{
	struct rb_coroutines *c = calloc(1, sizeof(*c));
	if (c)
		rb_co_reset(c);
	return c;
}

void rb_co_free(struct rb_coroutines *c)
{
	if (!c)
		return;
	rb_co_reset(c);
	free(c->open);
	free(c->owed);
	free(c);
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

int rb_co_entry(struct rb_coroutines *c, const struct rb_event *e)
{
	if (grow((void **)&c->open, &c->capopen, c->nopen + 1, sizeof(*c->open)))
		return -ENOMEM;
	c->open[c->nopen++] = (struct co_frame){ e->id, e->wide };
	return 0;
}

void rb_co_pop(struct rb_coroutines *c)
{
	if (c->nopen)
		c->nopen--;
}

bool rb_co_exit(struct rb_coroutines *c, int64_t depth, struct rb_decode_stats *st)
{
	/* An exit below where the running context started: a made context's function has
	 * returned and this is its resumer's (uc_link's) frame closing; any other context's
	 * frames below are calls whose entries the ring lost. */
	while (c->nnest > 1 && depth <= c->nest[c->nnest - 1].base) {
		if (!c->nest[c->nnest - 1].made) {
			if (st)
				st->unmatched++;
			return false;
		}
		c->nnest--;
	}
	rb_co_pop(c);
	return true;
}

int64_t rb_co_base(const struct rb_coroutines *c)
{
	return c->nnest > 1 ? c->nest[c->nnest - 1].base : 0;
}

static int find_active(const struct rb_coroutines *c, uint32_t key)
{
	for (int i = (int)c->nnest - 1; i >= 0; i--)
		if (c->nest[i].key == key)
			return i;
	return -1;
}

static struct co_saved *find_saved(struct rb_coroutines *c, uint32_t key)
{
	for (unsigned i = 0; i < RB_CO_SAVED; i++)
		if (c->saved[i].key == key)
			return &c->saved[i];
	return NULL;
}

/* The entry for key: its own, a free one, or the least recently left one's. */
static struct co_saved *saved_slot(struct rb_coroutines *c, uint32_t key)
{
	struct co_saved *s = find_saved(c, key), *oldest = &c->saved[0];
	for (unsigned i = 0; !s && i < RB_CO_SAVED; i++) {
		if (!c->saved[i].key)
			s = &c->saved[i];
		else if (c->saved[i].left_at < oldest->left_at)
			oldest = &c->saved[i];
	}
	s = s ? s : oldest;
	saved_clear(s);
	s->key = key;
	s->left_at = ++c->switches;
	return s;
}

static int owe(struct rb_coroutines *c, struct rb_event e)
{
	if (grow((void **)&c->owed, &c->capowed, c->nowed + 1, sizeof(*c->owed)))
		return -ENOMEM;
	c->owed[c->nowed++] = e;
	return 0;
}

/* The top active context is left: an exit for each of its frames, innermost first, and
 * (when it can be resumed) the frames saved under its key. */
static int leave_top(struct rb_coroutines *c, bool save, uint64_t ts, int64_t *depth,
		     struct rb_decode_stats *st)
{
	struct co_active *a = &c->nest[c->nnest - 1];
	int64_t n = *depth - a->base;
	if (n < 0 || (uint64_t)n > c->nopen) /* cannot happen: its frames are all in the ring */
		n = 0;
	if (save && a->key) {
		struct co_saved *s = saved_slot(c, a->key);
		size_t keep = (size_t)n < RB_CO_FRAMES ? (size_t)n : RB_CO_FRAMES;
		s->made = a->made && keep == (size_t)n; /* a cut stack's end is not its function's */
		if (keep) {
			s->frames = malloc(keep * sizeof(*s->frames));
			if (!s->frames)
				return -ENOMEM;
			memcpy(s->frames, c->open + c->nopen - (size_t)n, keep * sizeof(*s->frames));
			s->n = keep;
		}
	}
	for (int64_t i = 0; i < n; i++)
		if (owe(c, (struct rb_event){ .ts = ts, .kind = RB_EV_EXIT, .raw = RB_CTX_SET }))
			return -ENOMEM;
	c->nopen -= (size_t)n;
	*depth -= n;
	if (st)
		st->suspended += (uint64_t)n;
	c->nnest--;
	return 0;
}

/* Context key resumed on top of the running one, with its saved frames if any. */
static int resume(struct rb_coroutines *c, uint32_t key, uint64_t ts, int64_t *depth,
		  struct rb_decode_stats *st)
{
	if (c->nnest == RB_CO_NEST)
		return 0; /* runs as part of the top context */
	struct co_saved *s = find_saved(c, key);
	c->nest[c->nnest++] = (struct co_active){ key, s && s->made, *depth };
	if (!s)
		return 0; /* left before the ring started: its frames are not known */
	for (size_t i = 0; i < s->n; i++) {
		struct rb_event e = { .ts = ts,
				      .id = s->frames[i].id,
				      .kind = RB_EV_ENTRY,
				      .wide = s->frames[i].wide,
				      .raw = RB_CTX_SET };
		if (owe(c, e) || rb_co_entry(c, &e))
			return -ENOMEM;
	}
	*depth += (int64_t)s->n;
	if (st)
		st->resumed += s->n;
	saved_clear(s);
	return 0;
}

int rb_co_record(struct rb_coroutines *c, const struct rb_event *e, int64_t *depth,
		 struct rb_decode_stats *st)
{
	uint32_t key = e->arg;
	if (e->kind == RB_EV_CTX_MADE) {
		/* A fresh context: no frames yet; its function will return to uc_link. */
		saved_slot(c, key)->made = true;
		return 0;
	}
	if (e->kind == RB_EV_CTX_SWAP) {
		c->swap_from = key;
		c->swap_pending = true;
		return 0;
	}
	uint32_t from = c->swap_pending ? c->swap_from : 0; /* 0: setcontext */
	c->swap_pending = false;
	if (from) {
		int i = find_active(c, from);
		if (i >= 0)
			/* The contexts above it ended without a record (a made context's function
			 * returned to uc_link): their frames have all exited already. */
			c->nnest = (unsigned)i + 1;
		else
			c->nest[c->nnest - 1].key = from; /* the running context's name, learnt */
	}
	int j = find_active(c, key);
	if (j >= 0) {
		/* Back down the chain: the contexts above it are suspended, the running one
		 * first, saved unless setcontext abandoned it. */
		for (bool running = true; c->nnest > (unsigned)j + 1; running = false) {
			int err = leave_top(c, from || !running, e->ts, depth, st);
			if (err)
				return err;
		}
		return 0;
	}
	if (!from && c->nnest > 1) { /* setcontext abandons the running context */
		int err = leave_top(c, false, e->ts, depth, st);
		if (err)
			return err;
	}
	return resume(c, key, e->ts, depth, st);
}

bool rb_co_owed(struct rb_coroutines *c, struct rb_event *out)
{
	if (c->owed_i == c->nowed) {
		c->owed_i = c->nowed = 0;
		return false;
	}
	*out = c->owed[c->owed_i++];
	return true;
}
