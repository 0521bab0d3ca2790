/* SPDX-License-Identifier: MIT */
#include "cct.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint32_t hash_of(uint32_t parent, uint64_t func)
{
	uint64_t h = (func ^ ((uint64_t)parent << 32 | parent)) * 0x9E3779B97F4A7C15ull;
	return (uint32_t)(h >> 32);
}

static int grow_hash(struct cct *c)
{
	uint32_t cap = c->hcap ? c->hcap * 2 : 1024;
	uint32_t *h = malloc(cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, cap * sizeof(*h));
	for (uint32_t i = 1; i < c->n; i++) {
		uint32_t s = hash_of(c->node[i].parent, c->node[i].func) & (cap - 1);
		while (h[s] != CCT_NONE)
			s = (s + 1) & (cap - 1);
		h[s] = i;
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
	uint32_t s = hash_of(parent, func) & (c->hcap - 1);
	for (; c->hash[s] != CCT_NONE; s = (s + 1) & (c->hcap - 1)) {
		const struct cct_node *nd = &c->node[c->hash[s]];
		if (nd->parent == parent && nd->func == func)
			return c->hash[s];
	}
	if (c->n == c->cap) {
		uint32_t cap = c->cap * 2;
		struct cct_node *nn = realloc(c->node, cap * sizeof(*nn));
		if (!nn)
			return CCT_NONE;
		c->node = nn;
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
	c->hash[s] = i;
	return i;
}

struct frame {
	uint32_t node;
	uint64_t start, children, blocked, wait_since;
	bool waiting, cut_start;
};

static void close_frame(struct cct *c, struct frame *f, struct frame *parent, uint64_t end,
			bool cut_end)
{
	if (f->waiting) /* a wait still open when the frame closes: blocked until then */
		f->blocked += end - f->wait_since;
	uint64_t incl = end - f->start;
	struct cct_node *nd = &c->node[f->node];
	nd->calls++;
	nd->incl += incl;
	nd->blocked += f->blocked;
	uint64_t busy = f->children + f->blocked;
	nd->self += incl > busy ? incl - busy : 0;
	if (incl > nd->longest)
		nd->longest = incl;
	nd->truncated += f->cut_start || cut_end;
	if (parent)
		parent->children += incl;
}

int cct_build(struct cct *c, const struct rb_event *ev, size_t n, cct_key_fn key, void *ctx)
{
	memset(c, 0, sizeof(*c));
	c->cap = 1024;
	c->node = calloc(c->cap, sizeof(*c->node));
	if (!c->node || grow_hash(c) != 0) {
		cct_free(c);
		return -ENOMEM;
	}
	c->n = 1;
	c->node[0] = (struct cct_node){ .func = CCT_ROOT, .parent = CCT_NONE,
					.first_child = CCT_NONE, .next_sibling = CCT_NONE };
	if (n == 0)
		return 0;
	c->t0 = ev[0].ts;
	c->t1 = ev[n - 1].ts;

	/* How deep the ring starts: exits beyond the entries seen so far. */
	size_t missing = 0, depth = 0, max_depth = 0;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == RB_EV_ENTRY) {
			depth++;
		} else if (ev[i].kind == RB_EV_EXIT) {
			if (depth)
				depth--;
			else
				missing++;
		}
		if (depth + missing > max_depth)
			max_depth = depth + missing;
	}
	struct frame *stack = malloc((max_depth + 2) * sizeof(*stack));
	if (!stack) {
		cct_free(c);
		return -ENOMEM;
	}
	size_t sp = 0;
	stack[sp++] = (struct frame){ .node = 0, .start = c->t0 };
	/* The calls the ring begins inside: unknown functions, open since the first event. */
	for (size_t k = 0; k < missing; k++) {
		uint32_t nd = child(c, stack[sp - 1].node, CCT_UNKNOWN);
		if (nd == CCT_NONE)
			goto nomem;
		stack[sp++] = (struct frame){ .node = nd, .start = c->t0, .cut_start = true };
	}

	for (size_t i = 0; i < n; i++) {
		const struct rb_event *e = &ev[i];
		struct frame *top = &stack[sp - 1];
		switch (e->kind) {
		case RB_EV_ENTRY: {
			uint32_t nd = child(c, top->node, key ? key(ctx, e) : e->id);
			if (nd == CCT_NONE)
				goto nomem;
			stack[sp++] = (struct frame){ .node = nd, .start = e->ts };
			break;
		}
		case RB_EV_EXIT:
			if (sp > 1) {
				close_frame(c, top, &stack[sp - 2], e->ts, false);
				sp--;
			}
			break;
		case RB_EV_WAIT_BEGIN:
			top->waiting = true;
			top->wait_since = e->ts;
			break;
		case RB_EV_WAIT_END:
			/* With no wait-begin seen, the wait began before this frame's known part. */
			top->blocked += e->ts - (top->waiting ? top->wait_since : top->start);
			top->waiting = false;
			break;
		default:
			break;
		}
	}
	/* Calls still running when the ring was frozen: their known part, up to the end. */
	while (sp > 1) {
		close_frame(c, &stack[sp - 1], &stack[sp - 2], c->t1, true);
		sp--;
	}
	close_frame(c, &stack[0], NULL, c->t1, false);
	free(stack);
	return 0;
nomem:
	free(stack);
	cct_free(c);
	return -ENOMEM;
}

void cct_free(struct cct *c)
{
	free(c->node);
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

static int by_func(const void *a, const void *b)
{
	const struct cct_func *x = a, *y = b;
	return x->func < y->func ? -1 : x->func > y->func;
}

int cct_functions(const struct cct *c, struct cct_func **out, size_t *count)
{
	struct cct_func *f = malloc((c->n ? c->n : 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	size_t n = 0;
	for (uint32_t i = 1; i < c->n; i++) {
		const struct cct_node *nd = &c->node[i];
		f[n++] = (struct cct_func){ nd->func, nd->calls, nd->self, nd->blocked, nd->truncated };
	}
	/* Merge the contexts of each function. */
	qsort(f, n, sizeof(*f), by_func);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && f[m - 1].func == f[i].func) {
			f[m - 1].calls += f[i].calls;
			f[m - 1].self += f[i].self;
			f[m - 1].blocked += f[i].blocked;
			f[m - 1].truncated += f[i].truncated;
		} else {
			f[m++] = f[i];
		}
	}
	qsort(f, m, sizeof(*f), by_self);
	*out = f;
	*count = m;
	return 0;
}
