/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/diff.c - two runs' calling contexts, matched (DiffProf section 3.4) and ranked by
 * impact (IntroPerf section 3.4.2). See diff.h for what a context and its cost are.
 */
#include "agent/analysis/diff.h"
#include "agent/analysis/cct.h"
#include "uploader/json.h"
#include "agent/analysis/symbols.h"
#include "hal/fs.h"
#include "hal/timer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void say(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *err, size_t size, const char *fmt, ...)
{
	if (!err || !size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
}

static uint32_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return (uint32_t)x;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* ---- names ---- */

int diff_names_init(struct diff_names *nm)
{
	memset(nm, 0, sizeof(*nm));
	nm->hcap = 1024;
	nm->hash = calloc(nm->hcap, sizeof(*nm->hash));
	return nm->hash ? 0 : -ENOMEM;
}

void diff_names_free(struct diff_names *nm)
{
	free(nm->buf);
	free(nm->off);
	free(nm->hash);
	memset(nm, 0, sizeof(*nm));
}

const char *diff_name(const struct diff_names *nm, uint32_t label)
{
	return label < nm->n ? nm->buf + nm->off[label] : "?";
}

static uint32_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return mix(h);
}

static int names_grow(struct diff_names *nm)
{
	uint32_t cap = nm->hcap * 2;
	uint32_t *h = calloc(cap, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (uint32_t l = 0; l < nm->n; l++) {
		uint32_t i = hash_str(nm->buf + nm->off[l]) & (cap - 1);
		while (h[i])
			i = (i + 1) & (cap - 1);
		h[i] = l + 1;
	}
	free(nm->hash);
	nm->hash = h;
	nm->hcap = cap;
	return 0;
}

int diff_intern(struct diff_names *nm, const char *s, uint32_t *label)
{
	uint32_t i = hash_str(s) & (nm->hcap - 1);
	for (; nm->hash[i]; i = (i + 1) & (nm->hcap - 1)) {
		if (strcmp(nm->buf + nm->off[nm->hash[i] - 1], s) == 0) {
			*label = nm->hash[i] - 1;
			return 0;
		}
	}
	size_t len = strlen(s) + 1;
	if (nm->n >= UINT32_MAX / 2 || nm->len + len > UINT32_MAX)
		return -ENOMEM;
	if (nm->len + len > nm->cap) {
		size_t cap = nm->cap ? nm->cap : 4096;
		while (nm->len + len > cap)
			cap *= 2;
		char *b = realloc(nm->buf, cap);
		if (!b)
			return -ENOMEM;
		nm->buf = b;
		nm->cap = cap;
	}
	if (nm->n == nm->ncap) {
		uint32_t cap = nm->ncap ? 2 * nm->ncap : 256;
		uint32_t *o = realloc(nm->off, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		nm->off = o;
		nm->ncap = cap;
	}
	memcpy(nm->buf + nm->len, s, len);
	nm->off[nm->n] = (uint32_t)nm->len;
	nm->len += len;
	nm->hash[i] = nm->n + 1;
	*label = nm->n++;
	/* Keep the table at most half full. */
	if (2 * nm->n > nm->hcap)
		return names_grow(nm);
	return 0;
}

/* ---- a side: the tree of contexts ---- */

static uint32_t hash_child(uint32_t parent, uint32_t label)
{
	return mix((uint64_t)parent << 32 | label);
}

int diff_side_init(struct diff_side *s, struct diff_names *names)
{
	memset(s, 0, sizeof(*s));
	s->names = names;
	s->cap = 1024;
	s->hcap = 2048;
	s->node = malloc(s->cap * sizeof(*s->node));
	s->hash = calloc(s->hcap, sizeof(*s->hash));
	if (!s->node || !s->hash) {
		diff_side_free(s);
		return -ENOMEM;
	}
	s->node[0] = (struct diff_node){ .label = DIFF_NONE,
					 .parent = DIFF_NONE,
					 .first_child = DIFF_NONE,
					 .next_sibling = DIFF_NONE };
	s->n = 1;
	return 0;
}

void diff_side_free(struct diff_side *s)
{
	free(s->func);
	free(s->node);
	free(s->hash);
	memset(s, 0, sizeof(*s));
}

static uint32_t lookup(const struct diff_side *s, uint32_t parent, uint32_t label)
{
	uint32_t i = hash_child(parent, label) & (s->hcap - 1);
	for (; s->hash[i]; i = (i + 1) & (s->hcap - 1)) {
		const struct diff_node *x = &s->node[s->hash[i] - 1];
		if (x->parent == parent && x->label == label)
			return s->hash[i] - 1;
	}
	return DIFF_NONE;
}

static int side_grow_hash(struct diff_side *s)
{
	uint32_t cap = s->hcap * 2;
	uint32_t *h = calloc(cap, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (uint32_t v = 1; v < s->n; v++) {
		uint32_t i = hash_child(s->node[v].parent, s->node[v].label) & (cap - 1);
		while (h[i])
			i = (i + 1) & (cap - 1);
		h[i] = v + 1;
	}
	free(s->hash);
	s->hash = h;
	s->hcap = cap;
	return 0;
}

int diff_side_child(struct diff_side *s, uint32_t parent, uint32_t label, uint32_t *child,
		    bool *made)
{
	uint32_t v = lookup(s, parent, label);
	if (made)
		*made = v == DIFF_NONE;
	if (v != DIFF_NONE) {
		*child = v;
		return 0;
	}
	if (s->n >= UINT32_MAX / 4)
		return -ENOMEM;
	if (s->n == s->cap) {
		struct diff_node *n = realloc(s->node, 2 * (size_t)s->cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->node = n;
		s->cap *= 2;
	}
	if (2 * (s->n + 1) > s->hcap && side_grow_hash(s) != 0)
		return -ENOMEM;
	v = s->n++;
	struct diff_node *p = &s->node[parent];
	s->node[v] = (struct diff_node){ .label = label,
					 .parent = parent,
					 .first_child = DIFF_NONE,
					 .next_sibling = p->first_child,
					 .depth = p->depth + 1 };
	p->first_child = v;
	if (s->node[v].depth > s->maxdepth)
		s->maxdepth = s->node[v].depth;
	uint32_t i = hash_child(parent, label) & (s->hcap - 1);
	while (s->hash[i])
		i = (i + 1) & (s->hcap - 1);
	s->hash[i] = v + 1;
	*child = v;
	return 0;
}

uint32_t diff_side_find(const struct diff_side *s, const uint32_t *path, uint32_t n)
{
	uint32_t v = 0;
	for (uint32_t i = 0; i < n && v != DIFF_NONE; i++)
		v = lookup(s, v, path[i]);
	return v;
}

uint32_t diff_path(const struct diff_side *s, uint32_t v, uint32_t *out, uint32_t max)
{
	uint32_t d = s->node[v].depth;
	for (uint32_t x = v; x != 0 && x != DIFF_NONE; x = s->node[x].parent) {
		uint32_t at = s->node[x].depth - 1;
		if (at < max)
			out[at] = s->node[x].label;
	}
	return d;
}

/* ---- from a trace ---- */

static uint64_t key_of(void *ctx, const struct rb_event *e)
{
	return agent_func_key(ctx, e);
}

static int thread_node(struct diff_side *s, const char *name, uint32_t *node)
{
	uint32_t label;
	int e = diff_intern(s->names, name[0] ? name : DIFF_UNNAMED_THREAD, &label);
	if (!e)
		e = diff_side_child(s, 0, label, node, NULL);
	if (!e)
		s->threads++;
	return e;
}

/* The thread's tree into the side: cct node i becomes the side's map[i], merged by name
 * (two keys with the same name are one function to a diff). */
static int merge_cct(struct diff_side *s, struct agent_symbols *sym, const struct cct *c,
		     uint32_t top, uint64_t hz)
{
	uint32_t *map = malloc(c->n * sizeof(*map));
	if (!map)
		return -ENOMEM;
	map[0] = top;
	s->node[top].cost_ns =
		sat_add(s->node[top].cost_ns, hal_ticks_to_ns(c->node[0].s[CCT_WHOLE].self, hz));
	int e = 0;
	for (uint32_t i = 1; i < c->n && !e; i++) {
		const struct cct_node *x = &c->node[i];
		char name[256];
		uint32_t label;
		agent_key_name(sym, x->func, name, sizeof(name));
		e = diff_intern(s->names, name, &label);
		if (!e)
			e = diff_side_child(s, map[x->parent], label, &map[i], NULL);
		if (!e)
			s->node[map[i]].cost_ns = sat_add(
				s->node[map[i]].cost_ns, hal_ticks_to_ns(x->s[CCT_WHOLE].self, hz));
	}
	free(map);
	return e;
}

int diff_side_add_trace(struct diff_side *s, const struct rb_trace *t, char *err, size_t errsize)
{
	enum { BATCH = 4096 };
	struct agent_symbols sym;
	struct rb_event *buf = malloc(BATCH * sizeof(*buf));
	if (!buf || agent_symbols_open(&sym, t) != 0) {
		free(buf);
		say(err, errsize, "out of memory");
		return -ENOMEM;
	}
	int e = 0;
	for (uint32_t k = 0; k < t->nthreads && !e; k++) {
		const struct rb_file_thread *th = &t->threads[k];
		uint32_t top;
		if ((e = thread_node(s, th->name, &top)) != 0)
			break;
		/* Streamed: one batch of events at a time, never the ring's whole history. */
		struct rb_decoder d;
		if ((e = rb_decoder_init(&d, &th->view, t->ref_ticks, NULL, NULL)) != 0) {
			if (e == -EINVAL)
				say(err, errsize, "thread %u \"%s\": its ring cannot be decoded",
				    th->tid, th->name);
			break;
		}
		struct cct c;
		struct cct_opts o = { .key = key_of, .ctx = (void *)t };
		if ((e = cct_init(&c, &o, d.open_at_start)) == 0) {
			size_t n;
			while (!e && (n = rb_decoder_read(&d, buf, BATCH)) > 0)
				for (size_t i = 0; i < n && !e; i++)
					e = cct_add(&c, &buf[i]);
			if (!e)
				e = cct_finish(&c, 0);
			if (!e)
				e = merge_cct(s, &sym, &c, top, t->timer_hz);
			cct_free(&c);
		}
		rb_decoder_free(&d);
	}
	agent_symbols_close(&sym);
	free(buf);
	if (e == -ENOMEM)
		say(err, errsize, "out of memory");
	if (!e && s->kind == DIFF_EMPTY)
		s->kind = DIFF_TRACE;
	return e;
}

/* ---- from a summary ---- */

struct summary {
	struct json_doc doc;
	char *err;
	size_t errsize;
};

static int bad(struct summary *m, uint32_t v, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(struct summary *m, uint32_t v, const char *fmt, ...)
{
	if (m->err && m->errsize) {
		int n = snprintf(m->err, m->errsize, "offset %zu: ", json_offset(&m->doc, v));
		if (n >= 0 && (size_t)n < m->errsize) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(m->err + n, m->errsize - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EINVAL;
}

/* The member `name` of obj, of the given type. */
static int member(struct summary *m, uint32_t obj, const char *name, enum json_type type,
		  uint32_t *out)
{
	static const char *const kinds[] = { "null",	 "false",    "true",	 "a number",
					     "a string", "an array", "an object" };
	*out = json_get(&m->doc, obj, name);
	if (*out == JSON_NONE)
		return bad(m, obj, "no \"%s\" here", name);
	if (json_type(&m->doc, *out) != (int)type)
		return bad(m, *out, "\"%s\" should be %s", name, kinds[type]);
	return 0;
}

/* A string without NUL bytes (names are C strings). */
static const char *cstring(struct summary *m, uint32_t v, const char *what)
{
	size_t len;
	const char *s = json_str(&m->doc, v, &len);
	if (!s) {
		bad(m, v, "%s should be a string", what);
		return NULL;
	}
	if (strlen(s) != len) {
		bad(m, v, "%s contains a NUL character", what);
		return NULL;
	}
	return s;
}

static int integer(struct summary *m, uint32_t v, int64_t lo, int64_t hi, const char *what,
		   int64_t *out)
{
	int r = json_int(&m->doc, v, out);
	if (r == -EINVAL)
		return bad(m, v, "%s should be an integer", what);
	if (r || *out < lo || *out > hi)
		return bad(m, v, "%s out of range (%lld to %lld)", what, (long long)lo,
			   (long long)hi);
	return 0;
}

/* Each module's name prefix: its build-id's first 16 hex digits, as agent_symbol_name
 * prints an unsymbolised function. */
static int read_modules(struct summary *m, uint32_t mods, char (**prefix)[17], uint32_t *n)
{
	*n = json_len(&m->doc, mods);
	*prefix = calloc(*n ? *n : 1, sizeof(**prefix));
	if (!*prefix)
		return -ENOMEM;
	uint32_t i = 0;
	for (uint32_t x = json_first(&m->doc, mods); x != JSON_NONE; x = json_next(&m->doc, x)) {
		if (json_type(&m->doc, x) != JSON_ARRAY || json_len(&m->doc, x) < 1)
			return bad(m, x, "module %u should be [\"build-id\", \"file\"]", i);
		const char *id = cstring(m, json_first(&m->doc, x), "a build-id");
		if (!id)
			return -EINVAL;
		size_t k = 0;
		for (; id[k] && k < 16; k++) {
			char c = id[k];
			if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
			      (c >= 'A' && c <= 'F')))
				return bad(m, json_first(&m->doc, x),
					   "module %u: the build-id is not hex", i);
			(*prefix)[i][k] = (char)(c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c);
		}
		if (k == 0)
			snprintf((*prefix)[i], sizeof((*prefix)[i]), "no-build-id");
		i++;
	}
	return 0;
}

/* Each function's label: its name, or "<build-id>+0xoffset" when it has none. */
static int read_functions(struct summary *m, struct diff_side *s, uint32_t funcs,
			  char (*prefix)[17], uint32_t nmods, uint32_t **labels, uint32_t *n)
{
	*n = json_len(&m->doc, funcs);
	*labels = malloc((*n ? *n : 1) * sizeof(**labels));
	if (!*labels)
		return -ENOMEM;
	uint32_t i = 0;
	for (uint32_t x = json_first(&m->doc, funcs); x != JSON_NONE;
	     x = json_next(&m->doc, x), i++) {
		uint32_t e0 = json_first(&m->doc, x);
		if (json_type(&m->doc, x) != JSON_ARRAY || json_len(&m->doc, x) != 3)
			return bad(m, x, "function %u should be [module, offset, \"name\"]", i);
		uint32_t e1 = json_next(&m->doc, e0), e2 = json_next(&m->doc, e1);
		int64_t mod, off;
		/* Module -1: no module held it ("?0x..." in agent_symbol_name). */
		if (integer(m, e0, -1, (int64_t)nmods - 1, "the module index", &mod) ||
		    integer(m, e1, 0, INT64_MAX, "the offset", &off))
			return -EINVAL;
		const char *name = cstring(m, e2, "the function name");
		if (!name)
			return -EINVAL;
		char buf[64];
		if (!name[0]) {
			if (mod < 0)
				snprintf(buf, sizeof(buf), "?0x%llx", (unsigned long long)off);
			else
				snprintf(buf, sizeof(buf), "%s+0x%llx", prefix[mod],
					 (unsigned long long)off);
			name = buf;
		}
		if (diff_intern(s->names, name, &(*labels)[i]) != 0)
			return -ENOMEM;
	}
	return 0;
}

/* Where each context of a version 2 summary ended, for the later ones that start like it
 * ("from":[j,n], docs/summary-format.md): its leaf's node, its full path's length and
 * where its elided middle was (its length when none). */
struct ctx_end {
	uint32_t leaf, len, at;
};

/* A version 2 path, rebuilt, is at most this many frames: the summary writes at most
 * SUMMARY_MAX_DEPTH (64). Bounded, finding a shared prefix's node (a walk up from the
 * earlier context's leaf) stays linear in the summary whatever a crafted one says. */
#define SUMMARY_V2_MAX_PATH 1024

static int read_contexts(struct summary *m, struct diff_side *s, uint32_t top, uint32_t ctxs,
			 const uint32_t *labels, uint32_t nfuncs, int64_t version)
{
	uint32_t i = 0, nctx = json_len(&m->doc, ctxs);
	struct ctx_end *end = NULL;
	if (version >= 2 && !(end = malloc((nctx ? nctx : 1) * sizeof(*end))))
		return -ENOMEM;
	int e = 0;
	for (uint32_t c = json_first(&m->doc, ctxs); c != JSON_NONE && !e;
	     c = json_next(&m->doc, c), i++) {
		uint32_t path, self, from;
		if (json_type(&m->doc, c) != JSON_OBJECT) {
			e = bad(m, c, "context %u should be an object", i);
			break;
		}
		if ((e = member(m, c, "path", JSON_ARRAY, &path)) != 0 ||
		    (e = member(m, c, "self_ns", JSON_ARRAY, &self)) != 0)
			break;
		if (json_len(&m->doc, path) != json_len(&m->doc, self)) {
			e = bad(m, self, "context %u: self_ns and path differ in length", i);
			break;
		}
		/* Version 2: the first n frames are context j's (an earlier one), and are the
		 * same nodes: found up from j's leaf, before j's elided middle. */
		uint32_t v = top, pos = 0;
		if (version >= 2 && (from = json_get(&m->doc, c, "from")) != JSON_NONE) {
			int64_t j, n;
			uint32_t x = json_first(&m->doc, from);
			if (json_type(&m->doc, from) != JSON_ARRAY || json_len(&m->doc, from) != 2) {
				e = bad(m, from, "context %u: \"from\" should be [context, frames]", i);
				break;
			}
			if ((e = integer(m, x, 0, (int64_t)i - 1, "from's context", &j)) != 0)
				break;
			if ((e = integer(m, json_next(&m->doc, x), 0, end[j].at, "from's frames",
					 &n)) != 0)
				break;
			v = end[j].leaf;
			while (s->node[v].depth > s->node[top].depth + (uint32_t)n)
				v = s->node[v].parent;
			pos = (uint32_t)n;
		}
		uint32_t len = pos + json_len(&m->doc, path);
		if (version >= 2 && len > SUMMARY_V2_MAX_PATH) {
			e = bad(m, path, "context %u: a path of more than %d frames", i,
				SUMMARY_V2_MAX_PATH);
			break;
		}
		/* A path deeper than the summary keeps has its middle elided (summary.h): one
		 * frame of its own stands for it, so that two runs' deep paths still align. */
		int64_t at = -1, count;
		uint32_t el = json_get(&m->doc, c, "elided"), el_at;
		if (el != JSON_NONE) {
			if ((e = integer(m, el, 1, INT64_MAX, "elided", &count)) != 0 ||
			    (e = member(m, c, "elided_at", JSON_NUMBER, &el_at)) != 0 ||
			    (e = integer(m, el_at, pos, len, "elided_at", &at)) != 0)
				break;
		}
		for (uint32_t p = json_first(&m->doc, path), q = json_first(&m->doc, self);;
		     p = json_next(&m->doc, p), q = json_next(&m->doc, q), pos++) {
			int64_t f, ns;
			bool made;
			if (pos == at) {
				uint32_t label;
				if (diff_intern(s->names, DIFF_ELIDED_FRAMES, &label) != 0 ||
				    diff_side_child(s, v, label, &v, NULL) != 0) {
					e = -ENOMEM;
					break;
				}
			}
			if (p == JSON_NONE)
				break;
			if ((e = integer(m, p, 0, (int64_t)nfuncs - 1, "a function index", &f)) != 0 ||
			    (e = integer(m, q, 0, INT64_MAX, "self_ns", &ns)) != 0)
				break;
			if (diff_side_child(s, v, labels[f], &v, &made) != 0) {
				e = -ENOMEM;
				break;
			}
			/* A prefix shared by several paths is one context: counted once. */
			if (made)
				s->node[v].cost_ns = (uint64_t)ns;
		}
		if (end)
			end[i] = (struct ctx_end){ v, len, at >= 0 ? (uint32_t)at : len };
	}
	free(end);
	return e;
}

/* ---- a summary's window, top list and chains (what the thread was doing) ---- */

static int window_int(struct summary *m, uint32_t win, const char *name, bool need, uint64_t *out)
{
	uint32_t x = json_get(&m->doc, win, name);
	char what[48];
	int64_t v;
	if (x == JSON_NONE && !need)
		return 0;
	if (x == JSON_NONE)
		return bad(m, win, "the window has no \"%s\"", name);
	snprintf(what, sizeof(what), "the window's %s", name);
	if (integer(m, x, 0, INT64_MAX, what, &v))
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

/* window.sched of version 3: its source, and with perf the migrations and the running time
 * per CPU class. Absent: no source. Members it does not know are ignored (as everywhere). */
static int read_sched(struct summary *m, uint32_t win, struct diff_window *w)
{
	static const char *const classes[HAL_CPU_NCLASSES] = { "little", "middle", "big" };
	uint32_t sch, src, x;
	if (json_get(&m->doc, win, "sched") == JSON_NONE)
		return 0;
	if (member(m, win, "sched", JSON_OBJECT, &sch) || member(m, sch, "source", JSON_STRING, &src))
		return -EINVAL;
	const char *s = cstring(m, src, "the scheduling source");
	if (!s)
		return -EINVAL;
	if (strcmp(s, "perf") == 0)
		w->source = DIFF_SCHED_PERF;
	else if (strcmp(s, "schedstat") == 0)
		w->source = DIFF_SCHED_SCHEDSTAT;
	else if (strcmp(s, "none") == 0)
		w->source = DIFF_SCHED_NONE;
	else
		return bad(m, src, "the scheduling source should be \"perf\", \"schedstat\" or "
				   "\"none\"");
	if ((x = json_get(&m->doc, sch, "migrations")) != JSON_NONE) {
		int64_t v;
		if (integer(m, x, 0, INT64_MAX, "migrations", &v))
			return -EINVAL;
		w->has_migrations = true;
		w->migrations = (uint64_t)v;
	}
	if (json_get(&m->doc, sch, "cpu_ns") != JSON_NONE) {
		uint32_t cpu;
		if (member(m, sch, "cpu_ns", JSON_OBJECT, &cpu))
			return -EINVAL;
		for (int c = 0; c < HAL_CPU_NCLASSES; c++) {
			int64_t v;
			char what[32];
			if ((x = json_get(&m->doc, cpu, classes[c])) == JSON_NONE)
				continue;
			snprintf(what, sizeof(what), "cpu_ns.%s", classes[c]);
			if (integer(m, x, 0, INT64_MAX, what, &v))
				return -EINVAL;
			w->cpu_ns[c] = (uint64_t)v;
		}
		w->has_cpu = true;
	}
	return 0;
}

/*
 * The window: version 3 splits ns into running, preempted and blocked (all four required,
 * adding up) and says its scheduling source; versions 1 and 2 give ns and blocked_ns, so
 * running is the rest (none when blocked_ns says more than ns) and preempted unknown (inside
 * running). A version 1 or 2 summary without a window, or without its ns, has no window to
 * compare (known stays false).
 */
static int read_window(struct summary *m, int64_t version, struct diff_window *w)
{
	uint32_t win;
	memset(w, 0, sizeof(*w));
	if (version < 3) {
		if (json_get(&m->doc, 0, "window") == JSON_NONE)
			return 0;
		if (member(m, 0, "window", JSON_OBJECT, &win))
			return -EINVAL;
		if (json_get(&m->doc, win, "ns") == JSON_NONE)
			return 0;
		if (window_int(m, win, "ns", true, &w->ns) ||
		    window_int(m, win, "blocked_ns", false, &w->blocked_ns))
			return -EINVAL;
		/* A version 2 writer could say more blocked time than the window on a crafted
		 * trace (the fuzzer's find): read as all blocked, so the parts add up. */
		if (w->blocked_ns > w->ns)
			w->blocked_ns = w->ns;
		w->running_ns = w->ns - w->blocked_ns;
		w->known = true;
		return 0;
	}
	if (member(m, 0, "window", JSON_OBJECT, &win) || window_int(m, win, "ns", true, &w->ns) ||
	    window_int(m, win, "running_ns", true, &w->running_ns) ||
	    window_int(m, win, "preempted_ns", true, &w->preempted_ns) ||
	    window_int(m, win, "blocked_ns", true, &w->blocked_ns))
		return -EINVAL;
	/* Durations past INT64_MAX are written as INT64_MAX (summary_out.c): a whole of
	 * INT64_MAX may have been cut, so then its parts need not add up to it. */
	uint64_t sum = sat_add(sat_add(w->running_ns, w->preempted_ns), w->blocked_ns);
	if (w->ns != INT64_MAX && sum != w->ns)
		return bad(m, win,
			   "the window's running_ns + preempted_ns + blocked_ns (%llu) is not its "
			   "ns (%llu)",
			   (unsigned long long)sum, (unsigned long long)w->ns);
	if (read_sched(m, win, w))
		return -EINVAL;
	w->known = true;
	return 0;
}

/*
 * A top-list entry, [f, self_ns, calls, blocked_ns, cut] and in version 3 preempted_ns after
 * them, or a chain link, [f, incl_ns, self_ns, blocked_ns, cut] (+ preempted_ns in version
 * 3), whose last link may add calls ("many short calls": index 5 before version 3, 6 since).
 * v[6] is those calls (0 otherwise); v[5] the preempted time (0 before version 3).
 */
static int read_entry(struct summary *m, uint32_t x, int64_t version, bool link, bool last,
		      uint32_t nfuncs, const char *where, int64_t v[7])
{
	static const char *const top[] = { "f", "self_ns", "calls", "blocked_ns", "cut",
					   "preempted_ns" };
	static const char *const chain[] = { "f",   "incl_ns",	    "self_ns", "blocked_ns",
					     "cut", "preempted_ns", "calls" };
	const uint32_t base = version >= 3 ? 6 : 5, n = json_len(&m->doc, x);
	if (json_type(&m->doc, x) != JSON_ARRAY || !(n == base || (link && last && n == base + 1))) {
		if (!link)
			return bad(m, x, "%s should be [f, self_ns, calls, blocked_ns, cut%s]", where,
				   version >= 3 ? ", preempted_ns" : "");
		return bad(m, x, "%s should be [f, incl_ns, self_ns, blocked_ns, cut%s]%s", where,
			   version >= 3 ? ", preempted_ns" : "",
			   last ? ", or with calls after them" : "");
	}
	memset(v, 0, 7 * sizeof(*v));
	uint32_t i = 0;
	for (uint32_t y = json_first(&m->doc, x); y != JSON_NONE; y = json_next(&m->doc, y), i++) {
		/* Element i's meaning: before version 3 a link's 6th element is its calls. */
		uint32_t k = link && i == 5 && version < 3 ? 6 : i;
		char what[96];
		snprintf(what, sizeof(what), "%s: %s", where, link ? chain[k] : top[k]);
		int64_t lo = 0, hi = k == 0 ? (int64_t)nfuncs - 1 : k == 4 ? 1 : INT64_MAX;
		if (integer(m, y, lo, hi, what, &v[k]))
			return -EINVAL;
	}
	return 0;
}

static int func_cmp(const void *pa, const void *pb)
{
	const struct diff_func *a = pa, *b = pb;
	return a->label < b->label ? -1 : a->label > b->label;
}

/* top_window (absent when a hostile trace's summary left its lists out): its functions, by
 * label, one entry per name (two functions of one name, in two modules, add up). */
static int read_top(struct summary *m, struct diff_side *s, int64_t version,
		    const uint32_t *labels, uint32_t nfuncs, bool keep)
{
	uint32_t list, i = 0;
	if (json_get(&m->doc, 0, "top_window") == JSON_NONE)
		return 0;
	if (member(m, 0, "top_window", JSON_ARRAY, &list))
		return -EINVAL;
	uint32_t n = json_len(&m->doc, list);
	struct diff_func *f = keep ? malloc((n ? n : 1) * sizeof(*f)) : NULL;
	if (keep && !f)
		return -ENOMEM;
	for (uint32_t x = json_first(&m->doc, list); x != JSON_NONE;
	     x = json_next(&m->doc, x), i++) {
		int64_t v[7];
		char where[40];
		snprintf(where, sizeof(where), "top_window entry %u", i);
		if (read_entry(m, x, version, false, false, nfuncs, where, v)) {
			free(f);
			return -EINVAL;
		}
		if (f)
			f[i] = (struct diff_func){ .label = labels[v[0]],
						   .self_ns = (uint64_t)v[1],
						   .calls = (uint64_t)v[2],
						   .blocked_ns = (uint64_t)v[3],
						   .preempted_ns = (uint64_t)v[5] };
	}
	if (!f)
		return 0;
	qsort(f, n, sizeof(*f), func_cmp);
	uint32_t out = 0;
	for (i = 0; i < n; i++) {
		if (out && f[out - 1].label == f[i].label) {
			struct diff_func *p = &f[out - 1];
			p->self_ns = sat_add(p->self_ns, f[i].self_ns);
			p->preempted_ns = sat_add(p->preempted_ns, f[i].preempted_ns);
			p->blocked_ns = sat_add(p->blocked_ns, f[i].blocked_ns);
			p->calls = sat_add(p->calls, f[i].calls);
		} else {
			f[out++] = f[i];
		}
	}
	s->func = f;
	s->nfunc = out;
	return 0;
}

/* Every chain's links checked; the first chain's innermost link kept (where the time went). */
static int read_chains(struct summary *m, struct diff_side *s, int64_t version,
		       const uint32_t *labels, uint32_t nfuncs, bool keep)
{
	uint32_t list, i = 0;
	if (json_get(&m->doc, 0, "chains") == JSON_NONE)
		return 0;
	if (member(m, 0, "chains", JSON_ARRAY, &list))
		return -EINVAL;
	for (uint32_t c = json_first(&m->doc, list); c != JSON_NONE;
	     c = json_next(&m->doc, c), i++) {
		if (json_type(&m->doc, c) != JSON_ARRAY)
			return bad(m, c, "chain %u should be an array of links", i);
		uint32_t j = 0, n = json_len(&m->doc, c);
		for (uint32_t x = json_first(&m->doc, c); x != JSON_NONE;
		     x = json_next(&m->doc, x), j++) {
			int64_t v[7];
			char where[40];
			snprintf(where, sizeof(where), "chain %u, link %u", i, j);
			if (read_entry(m, x, version, true, j + 1 == n, nfuncs, where, v))
				return -EINVAL;
			if (keep && i == 0 && j + 1 == n)
				s->where = (struct diff_link){ .known = true,
							       .label = labels[v[0]],
							       .incl_ns = (uint64_t)v[1],
							       .self_ns = (uint64_t)v[2],
							       .blocked_ns = (uint64_t)v[3],
							       .preempted_ns = (uint64_t)v[5],
							       .calls = (uint64_t)v[6] };
		}
	}
	return 0;
}

int diff_side_add_summary(struct diff_side *s, const char *text, size_t len, char *err,
			  size_t errsize)
{
	struct summary m = { .err = err, .errsize = errsize };
	char(*prefix)[17] = NULL;
	uint32_t *labels = NULL, nmods = 0, nfuncs = 0;
	/* The window, top list and chain of the first summary only (a side is one summary). */
	bool first = s->kind == DIFF_EMPTY;
	int e = json_parse(&m.doc, text, len, err, errsize);
	if (e)
		goto out;
	uint32_t v, thread, name, mods, funcs, ctxs;
	int64_t version;
	const char *str;
	e = -EINVAL;
	if (json_type(&m.doc, 0) != JSON_OBJECT) {
		bad(&m, 0, "not a jitt summary (not a JSON object)");
		goto out;
	}
	if (member(&m, 0, "schema", JSON_STRING, &v))
		goto out;
	if (!(str = cstring(&m, v, "schema")) || strcmp(str, "jitt.summary") != 0) {
		bad(&m, v, "not a jitt summary (schema is not \"jitt.summary\")");
		goto out;
	}
	if (member(&m, 0, "version", JSON_NUMBER, &v) ||
	    integer(&m, v, 0, INT64_MAX, "version", &version))
		goto out;
	/* Version 2 (compact paths, the app) reads as version 1 where they agree; version 3
	 * as version 2 but for the window, the top lists and the chains (the scheduling
	 * times: read_window, read_entry). */
	if (version < 1 || version > 3) {
		bad(&m, v, "summary version %lld; this jitt reads versions 1 to 3",
		    (long long)version);
		goto out;
	}
	/* The thread: its name, or an object with its name (and tid, not needed here). */
	thread = json_get(&m.doc, 0, "thread");
	if (json_type(&m.doc, thread) == JSON_STRING)
		name = thread;
	else if (member(&m, 0, "thread", JSON_OBJECT, &thread) ||
		 member(&m, thread, "name", JSON_STRING, &name))
		goto out;
	if (member(&m, 0, "modules", JSON_ARRAY, &mods) ||
	    member(&m, 0, "functions", JSON_ARRAY, &funcs) ||
	    member(&m, 0, "contexts", JSON_ARRAY, &ctxs))
		goto out;
	if (!(str = cstring(&m, name, "the thread's name")))
		goto out;
	uint32_t top;
	struct diff_window w;
	if ((e = read_modules(&m, mods, &prefix, &nmods)) != 0 ||
	    (e = read_functions(&m, s, funcs, prefix, nmods, &labels, &nfuncs)) != 0 ||
	    (e = read_window(&m, version, &w)) != 0 ||
	    (e = read_top(&m, s, version, labels, nfuncs, first)) != 0 ||
	    (e = read_chains(&m, s, version, labels, nfuncs, first)) != 0 ||
	    (e = thread_node(s, str, &top)) != 0 ||
	    (e = read_contexts(&m, s, top, ctxs, labels, nfuncs, version)) != 0)
		goto out;
	if (first)
		s->window = w;
	if (s->kind == DIFF_EMPTY)
		s->kind = DIFF_SUMMARY;
out:
	if (e == -ENOMEM)
		say(err, errsize, "out of memory");
	if (e && first) {
		free(s->func);
		s->func = NULL;
		s->nfunc = 0;
		memset(&s->where, 0, sizeof(s->where));
	}
	free(prefix);
	free(labels);
	json_free(&m.doc);
	return e;
}

/* ---- from a file ---- */

static int read_all(int fd, char **out, size_t *len, char *err, size_t errsize)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		say(err, errsize, "%s", strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		say(err, errsize, "not a regular file");
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > DIFF_SUMMARY_MAX_SIZE) {
		say(err, errsize, "%lld bytes: too large for a summary", (long long)st.st_size);
		return -EINVAL;
	}
	size_t cap = (size_t)st.st_size + 1, n = 0;
	char *b = malloc(cap);
	if (!b) {
		say(err, errsize, "out of memory");
		return -ENOMEM;
	}
	/* Up to the size fstat saw; a file that grows meanwhile is cut there. */
	while (n < cap - 1) {
		ssize_t r = pread(fd, b + n, cap - 1 - n, (off_t)n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(b);
			say(err, errsize, "%s", strerror(e));
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = b;
	*len = n;
	return 0;
}

int diff_side_load(struct diff_side *s, const char *path, char *err, size_t errsize)
{
	/* Once, never waiting (a FIFO named as A or B hung the command), regular files only,
	 * named by what they are otherwise (hal/fs.h); symlinks followed: the user's own. */
	struct stat st;
	int fd = hal_open_file(AT_FDCWD, path, true, &st);
	if (fd < 0) {
		if (fd != -EISDIR && fd != -EINVAL) {
			say(err, errsize, "%s", strerror(-fd));
			return fd;
		}
		say(err, errsize, "%s, not a trace file or a summary", hal_file_kind(st.st_mode));
		return -EINVAL; /* as for any file that is neither */
	}
	char head[8];
	ssize_t got;
	while ((got = pread(fd, head, sizeof(head), 0)) < 0 && errno == EINTR)
		;
	if (got == (ssize_t)sizeof(head) && memcmp(head, RB_FILE_MAGIC, 8) == 0) {
		/* A trace is read through its own mapping, however large. */
		close(fd);
		struct rb_trace t;
		int e = rb_trace_open(path, &t, err, errsize);
		if (e) {
			if (e != -EINVAL)
				say(err, errsize, "%s", strerror(-e));
			return e;
		}
		e = diff_side_add_trace(s, &t, err, errsize);
		rb_trace_close(&t);
		return e;
	}
	char *text = NULL;
	size_t len = 0, i = 0;
	int e = read_all(fd, &text, &len, err, errsize);
	close(fd);
	if (e)
		return e;
	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
		i++;
	if (i < len && text[i] == '{') {
		e = diff_side_add_summary(s, text, len, err, errsize);
	} else {
		say(err, errsize, "neither a trace file (\"%s\") nor a JSON summary ('{')",
		    RB_FILE_MAGIC);
		e = -EINVAL;
	}
	free(text);
	return e;
}

/* ---- matching ---- */

/* Path edit distance within a band (Ukkonen): only cells with |i - j| <= bound can lead to a
 * distance <= bound, so each row holds 2 bound + 1 cells. */
unsigned diff_path_distance(const uint32_t *x, size_t n, const uint32_t *y, size_t m,
			    unsigned bound)
{
	if (bound > DIFF_ALPHA_MAX)
		bound = DIFF_ALPHA_MAX;
	const unsigned inf = bound + 1, w = 2 * bound + 1;
	/* A common prefix or suffix costs nothing in some optimal alignment. */
	while (n && m && x[0] == y[0]) {
		x++, y++;
		n--, m--;
	}
	while (n && m && x[n - 1] == y[m - 1])
		n--, m--;
	if ((n > m ? n - m : m - n) > bound)
		return inf;
	if (!n || !m)
		return (unsigned)(n + m);
	unsigned a[2 * DIFF_ALPHA_MAX + 1], b[2 * DIFF_ALPHA_MAX + 1], *q = a, *r = b;
	/* Row i, cell t is D[i][j] with j = i + t - bound. */
	for (unsigned t = 0; t < w; t++)
		q[t] = t >= bound && t - bound <= m ? t - bound : inf;
	for (size_t i = 1; i <= n; i++) {
		unsigned best = inf;
		for (unsigned t = 0; t < w; t++) {
			long long j = (long long)i + t - bound;
			unsigned v = inf;
			if (j == 0) {
				v = i <= bound ? (unsigned)i : inf;
			} else if (j > 0 && (size_t)j <= m) {
				v = q[t] + (x[i - 1] != y[j - 1]); /* replace or keep */
				if (t + 1 < w && q[t + 1] + 1 < v)
					v = q[t + 1] + 1; /* delete x[i-1] */
				if (t > 0 && r[t - 1] + 1 < v)
					v = r[t - 1] + 1; /* insert y[j-1] */
				if (v > inf)
					v = inf;
			}
			r[t] = v;
			if (v < best)
				best = v;
		}
		if (best > bound)
			return inf;
		unsigned *tmp = q;
		q = r;
		r = tmp;
	}
	return q[m - n + bound];
}

/* Where a label sits in an unmatched B context: `label` at position j from the root and k
 * from the leaf (0 is the leaf), in the thread `thread`. */
struct spot {
	uint32_t thread, label, j, k, w;
};

static int spot_cmp(const void *pa, const void *pb)
{
	const struct spot *a = pa, *b = pb;
	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	if (a->label != b->label)
		return a->label < b->label ? -1 : 1;
	if (a->j != b->j)
		return a->j < b->j ? -1 : 1;
	if (a->k != b->k)
		return a->k < b->k ? -1 : 1;
	return a->w < b->w ? -1 : a->w > b->w;
}

/* The first spot of (thread, label) at position j or later. */
static size_t spot_find(const struct spot *s, size_t n, uint32_t thread, uint32_t label, uint32_t j)
{
	struct spot key = { thread, label, j, 0, 0 };
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (spot_cmp(&s[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct cand {
	uint32_t v, w;
	uint8_t dist, leaf_differs;
	uint32_t ddepth;
};

/* Closest first; among equally close, the one keeping the same function at the leaf (the
 * function whose self time is compared), then the one of the nearer depth. */
static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->dist != b->dist)
		return a->dist < b->dist ? -1 : 1;
	if (a->leaf_differs != b->leaf_differs)
		return a->leaf_differs < b->leaf_differs ? -1 : 1;
	if (a->ddepth != b->ddepth)
		return a->ddepth < b->ddepth ? -1 : 1;
	if (a->v != b->v)
		return a->v < b->v ? -1 : 1;
	return a->w < b->w ? -1 : a->w > b->w;
}

static int push_cand(struct cand **c, size_t *n, size_t *cap, struct cand x)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 256;
		struct cand *p = realloc(*c, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*c = p;
		*cap = nc;
	}
	(*c)[(*n)++] = x;
	return 0;
}

/* The label of each node's thread (its depth-1 ancestor). */
static uint32_t *thread_labels(const struct diff_side *s)
{
	uint32_t *t = malloc(s->n * sizeof(*t));
	if (!t)
		return NULL;
	t[0] = DIFF_NONE;
	for (uint32_t v = 1; v < s->n; v++)
		t[v] = s->node[v].depth == 1 ? s->node[v].label : t[s->node[v].parent];
	return t;
}

/* The state of relaxed matching, kept across its rounds. */
struct relax {
	uint32_t *ma, *mb; /* partners so far */
	uint8_t *dist;
	uint32_t *ta, *tb; /* thread labels per node */
	uint32_t *pa, *pb; /* a path of each side */
	uint32_t *mark, query;
	struct spot *sp;
	struct cand *cand;
	size_t ccap;
	size_t compared; /* paths whose distance was computed */
	size_t frames;	 /* frames of the paths read */
};

/*
 * DiffProf's Relaxed Path Condition (section 3.4, eq. 4): w is a candidate for v when
 * rho(s(v), s(w)) <= alpha, rho being the unit-cost edit distance of the two paths as
 * strings of labels. DiffProf's candidate set does not require the same leaf function (its
 * example puts c in C_1(b) by replacing b with c), and neither do we; the same leaf only
 * wins a tie between equally close candidates. Two things differ from DiffProf, because we
 * compare each context's own cost rather than search for a maximal subtree overlap (its
 * mu_alpha): the pairs are chosen greedily, closest first, one to one, and the Ancestor and
 * Structure Respecting conditions (eqs. 2, 3) are not imposed. The thread (position 0) must
 * be the same: threads never mix.
 *
 * Closest first is done in rounds d = 1..alpha: after round d no two contexts left
 * unmatched are d or less apart (a pair found both free is taken), so round d + 1 looks
 * only for distance d + 1 among what is left, with a smaller index and a tighter band. The
 * result is the same as sorting every pair within alpha at once (the test compares with
 * that), and much cheaper: on two 40,000-context trees with a wrapper inserted under each
 * thread, alpha 4 took 7.2 s in one pass and 0.3 s in rounds (x86-64 host, -O2), because
 * round 1 takes most contexts out.
 *
 * Candidates come from an index instead of all pairs. If rho(s(v), s(w)) <= d, an optimal
 * alignment edits at most d of v's last d + 1 positions, so one of them, at i (k from the
 * leaf), is kept, equal to w's position j (k' from the leaf); the parts before and after
 * it are aligned on their own, so |i - j| + |k - k'| <= d, and k' <= 2d. (When v is
 * shorter than d + 1, position 0, the thread, is the kept one: equal first labels can
 * always be aligned.) So every unmatched w is indexed by the labels of its last 2d + 1
 * positions with (j, k'), each v looks up its last d + 1 labels at j within i +- d, and
 * only the w found there pay for an edit distance. DiffProf bounds its candidate sets at
 * O(N1 D2^(alpha+2)); here the work follows the unmatched contexts that actually share a
 * label near the leaf.
 */
static int relaxed_round(const struct diff_side *a, const struct diff_side *b, unsigned d,
			 struct relax *x)
{
	size_t nsp = 0, ncand = 0;
	for (uint32_t w = 1; w < b->n; w++) {
		if (x->mb[w] != DIFF_NONE || b->node[w].depth > DIFF_RELAXED_MAX_DEPTH)
			continue;
		uint32_t y = w;
		for (uint32_t k = 0; k <= 2 * d && y != 0; k++, y = b->node[y].parent)
			x->sp[nsp++] = (struct spot){ x->tb[w], b->node[y].label,
						      b->node[y].depth - 1, k, w };
	}
	if (!nsp)
		return 0;
	qsort(x->sp, nsp, sizeof(*x->sp), spot_cmp);

	/* Spots looked at per context and round (DIFF_CANDIDATES_MAX, diff.h): each
	 * unmatched w has at most 2d + 1 of them. */
	const size_t budget = (size_t)DIFF_CANDIDATES_MAX * (2 * d + 1);
	for (uint32_t v = 1; v < a->n; v++) {
		if (x->ma[v] != DIFF_NONE || a->node[v].depth > DIFF_RELAXED_MAX_DEPTH)
			continue;
		uint32_t lv = diff_path(a, v, x->pa, a->maxdepth + 1);
		x->frames += lv;
		x->query++; /* a new mark: each w is verified once per v and round */
		size_t seen = 0, found = 0;
		for (uint32_t k = 0;
		     k <= d && k < lv && seen < budget && found < DIFF_CANDIDATES_MAX; k++) {
			uint32_t i = lv - 1 - k, lab = x->pa[i];
			size_t lo = spot_find(x->sp, nsp, x->ta[v], lab, i > d ? i - d : 0);
			size_t hi = spot_find(x->sp, nsp, x->ta[v], lab, i + d + 1);
			/* More spots than the budget (thousands of contexts sharing this label
			 * here): a slice of them, starting at a place that depends on v, so that
			 * the contexts asking spread over those that answer. */
			size_t start = 0;
			if (hi - lo > budget - seen)
				start = (size_t)(mix(v) % (hi - lo));
			for (size_t step = 0;
			     step < hi - lo && seen < budget && found < DIFF_CANDIDATES_MAX;
			     step++, seen++) {
				size_t at = lo + (start + step) % (hi - lo);
				const struct spot *p = &x->sp[at];
				uint32_t dj = p->j > i ? p->j - i : i - p->j;
				uint32_t dk = p->k > k ? p->k - k : k - p->k;
				if (dj + dk > d || x->mark[p->w] == x->query)
					continue;
				x->mark[p->w] = x->query;
				found++;
				x->compared++;
				uint32_t lw = diff_path(b, p->w, x->pb, b->maxdepth + 1);
				x->frames += lw;
				unsigned dist = diff_path_distance(x->pa, lv, x->pb, lw, d);
				if (dist > d)
					continue;
				struct cand c = { .v = v,
						  .w = p->w,
						  .dist = (uint8_t)dist,
						  .leaf_differs = x->pa[lv - 1] != x->pb[lw - 1],
						  .ddepth = lv > lw ? lv - lw : lw - lv };
				if (push_cand(&x->cand, &ncand, &x->ccap, c) != 0)
					return -ENOMEM;
			}
		}
	}
	if (ncand)
		qsort(x->cand, ncand, sizeof(*x->cand), cand_cmp);
	for (size_t i = 0; i < ncand; i++) {
		const struct cand *c = &x->cand[i];
		if (x->ma[c->v] == DIFF_NONE && x->mb[c->w] == DIFF_NONE) {
			x->ma[c->v] = c->w;
			x->mb[c->w] = c->v;
			x->dist[c->v] = c->dist;
		}
	}
	return 0;
}

static int match_relaxed(const struct diff_side *a, const struct diff_side *b, unsigned alpha,
			 uint32_t *ma, uint32_t *mb, uint8_t *dist, struct diff_result *r)
{
	struct relax x = { .ma = ma, .mb = mb, .dist = dist };
	int e = -ENOMEM;
	x.ta = thread_labels(a);
	x.tb = thread_labels(b);
	x.pa = malloc(((size_t)a->maxdepth + 1) * sizeof(*x.pa));
	x.pb = malloc(((size_t)b->maxdepth + 1) * sizeof(*x.pb));
	x.mark = calloc(b->n, sizeof(*x.mark));
	size_t cap = 0;
	for (uint32_t w = 1; w < b->n; w++)
		if (mb[w] == DIFF_NONE)
			cap += b->node[w].depth < 2 * alpha + 1 ? b->node[w].depth : 2 * alpha + 1;
	x.sp = malloc((cap ? cap : 1) * sizeof(*x.sp));
	if (!x.ta || !x.tb || !x.pa || !x.pb || !x.mark || !x.sp)
		goto out;
	for (unsigned d = 1; d <= alpha; d++)
		if ((e = relaxed_round(a, b, d, &x)) != 0)
			goto out;
	e = 0;
out:
	r->compared = x.compared;
	r->frames = x.frames;
	free(x.ta);
	free(x.tb);
	free(x.pa);
	free(x.pb);
	free(x.mark);
	free(x.sp);
	free(x.cand);
	return e;
}

static int64_t delta_of(uint64_t a, uint64_t b)
{
	/* Costs beyond 2^63 ns (292 years) only come from a broken summary: saturate. */
	if (a > INT64_MAX)
		a = INT64_MAX;
	if (b > INT64_MAX)
		b = INT64_MAX;
	return (int64_t)b - (int64_t)a;
}

int diff_match(const struct diff_side *a, const struct diff_side *b, unsigned alpha,
	       struct diff_result *r)
{
	memset(r, 0, sizeof(*r));
	if (a->names != b->names)
		return -EINVAL;
	if (alpha > DIFF_ALPHA_MAX)
		alpha = DIFF_ALPHA_MAX;
	int e = -ENOMEM;
	uint32_t *ma = malloc(a->n * sizeof(*ma)), *mb = malloc(b->n * sizeof(*mb));
	uint8_t *dist = calloc(a->n, 1);
	if (!ma || !mb || !dist)
		goto out;
	for (uint32_t v = 0; v < a->n; v++)
		ma[v] = DIFF_NONE;
	for (uint32_t w = 0; w < b->n; w++)
		mb[w] = DIFF_NONE;
	/* The Path Condition (DiffProf eq. 1): v matches w when their parents match and their
	 * labels are equal, which for trees of unique paths is equality of the whole paths.
	 * Parents come before children, so one pass in node order does it. */
	ma[0] = 0;
	mb[0] = 0;
	for (uint32_t v = 1; v < a->n; v++) {
		uint32_t p = ma[a->node[v].parent];
		uint32_t w = p == DIFF_NONE ? DIFF_NONE : lookup(b, p, a->node[v].label);
		if (w != DIFF_NONE) {
			ma[v] = w;
			mb[w] = v;
		}
	}
	if (alpha && (e = match_relaxed(a, b, alpha, ma, mb, dist, r)) != 0)
		goto out;
	e = -ENOMEM;
	r->e = malloc(((size_t)a->n + b->n) * sizeof(*r->e));
	if (!r->e)
		goto out;
	for (uint32_t v = 1; v < a->n; v++) {
		struct diff_entry x = { .a = v, .b = ma[v], .a_ns = a->node[v].cost_ns };
		if (ma[v] == DIFF_NONE) {
			x.status = DIFF_GONE;
			r->gone++;
		} else {
			x.b_ns = b->node[ma[v]].cost_ns;
			x.status = dist[v] ? DIFF_RELAXED : DIFF_EXACT;
			x.distance = dist[v];
			if (dist[v])
				r->relaxed++;
			else
				r->exact++;
		}
		x.delta_ns = delta_of(x.a_ns, x.b_ns);
		r->e[r->n++] = x;
	}
	for (uint32_t w = 1; w < b->n; w++) {
		if (mb[w] != DIFF_NONE)
			continue;
		struct diff_entry x = { .a = DIFF_NONE, .b = w, .b_ns = b->node[w].cost_ns };
		x.status = DIFF_NEW;
		x.delta_ns = delta_of(0, x.b_ns);
		r->e[r->n++] = x;
		r->added++;
	}
	e = 0;
out:
	free(ma);
	free(mb);
	free(dist);
	if (e)
		diff_result_free(r);
	return e;
}

uint64_t diff_impact(const struct diff_entry *x)
{
	return x->delta_ns < 0 ? (uint64_t)0 - (uint64_t)x->delta_ns : (uint64_t)x->delta_ns;
}

static int by_impact(const void *pa, const void *pb)
{
	const struct diff_entry *a = pa, *b = pb;
	uint64_t ia = diff_impact(a), ib = diff_impact(b);
	if (ia != ib)
		return ia > ib ? -1 : 1;
	/* Equal impact: the costlier context first, then node order (deterministic). */
	uint64_t ca = a->a_ns > a->b_ns ? a->a_ns : a->b_ns;
	uint64_t cb = b->a_ns > b->b_ns ? b->a_ns : b->b_ns;
	if (ca != cb)
		return ca > cb ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return a->a < b->a ? -1 : a->a > b->a;
}

void diff_rank(struct diff_result *r)
{
	if (r->n)
		qsort(r->e, r->n, sizeof(*r->e), by_impact);
}

void diff_result_free(struct diff_result *r)
{
	free(r->e);
	memset(r, 0, sizeof(*r));
}

const char *diff_status_name(enum diff_status st)
{
	switch (st) {
	case DIFF_EXACT:
		return "matched";
	case DIFF_RELAXED:
		return "relaxed";
	case DIFF_NEW:
		return "new";
	case DIFF_GONE:
		return "gone";
	}
	return "?";
}

/* ---- what the thread was doing ---- */

enum diff_state diff_window_state(const struct diff_window *w)
{
	if (w->preempted_ns > w->running_ns && w->preempted_ns >= w->blocked_ns)
		return DIFF_PREEMPTED;
	if (w->blocked_ns > w->running_ns && w->blocked_ns > w->preempted_ns)
		return DIFF_BLOCKED;
	return DIFF_RUNNING;
}

unsigned diff_permille(uint64_t part, uint64_t whole)
{
	if (!whole)
		return 0;
	if (part >= whole)
		return 1000;
	/* part * 1000 would overflow past 1.8e16 ns (5 hours): scale both down first. */
	while (part > UINT64_MAX / 2000) {
		part >>= 1;
		whole >>= 1;
	}
	return (unsigned)((part * 2000 + whole) / (2 * whole));
}

const char *diff_sched_source_name(enum diff_sched_source src)
{
	switch (src) {
	case DIFF_SCHED_NONE:
		return "none";
	case DIFF_SCHED_PERF:
		return "perf";
	case DIFF_SCHED_SCHEDSTAT:
		return "schedstat";
	}
	return "?";
}

const char *diff_state_name(enum diff_state st)
{
	switch (st) {
	case DIFF_RUNNING:
		return "running";
	case DIFF_PREEMPTED:
		return "preempted";
	case DIFF_BLOCKED:
		return "blocked";
	}
	return "?";
}

/*
 * Two windows compare state for state only when both say where their scheduling times came
 * from: without a source, preempted time hides inside running time, so "mostly running"
 * there may be mostly waiting for a CPU. With two different sources (perf's switches,
 * schedstat's run-queue wait sampled at frame boundaries) the states still compare, but not
 * the nanoseconds one to one; the caller says so.
 */
void diff_sched_compare(const struct diff_window *a, const struct diff_window *b,
			struct diff_sched_cmp *out)
{
	memset(out, 0, sizeof(*out));
	out->known = a->known && b->known;
	if (!out->known)
		return;
	out->a_none = a->source == DIFF_SCHED_NONE;
	out->b_none = b->source == DIFF_SCHED_NONE;
	out->same_source = a->source == b->source;
	out->verdict = !out->a_none && !out->b_none;
	out->a_state = (uint8_t)diff_window_state(a);
	out->b_state = (uint8_t)diff_window_state(b);
}

static uint64_t func_impact(const struct diff_func_change *c)
{
	uint64_t s = c->self_delta < 0 ? (uint64_t)0 - (uint64_t)c->self_delta
				       : (uint64_t)c->self_delta;
	uint64_t p = c->preempted_delta < 0 ? (uint64_t)0 - (uint64_t)c->preempted_delta
					    : (uint64_t)c->preempted_delta;
	return sat_add(s, p);
}

static int by_func_impact(const void *pa, const void *pb)
{
	const struct diff_func_change *a = pa, *b = pb;
	uint64_t ia = func_impact(a), ib = func_impact(b);
	if (ia != ib)
		return ia > ib ? -1 : 1;
	return a->label < b->label ? -1 : a->label > b->label;
}

int diff_funcs(const struct diff_side *a, const struct diff_side *b,
	       struct diff_func_change **out, size_t *n)
{
	size_t cap = (size_t)a->nfunc + b->nfunc, k = 0;
	struct diff_func_change *c = malloc((cap ? cap : 1) * sizeof(*c));
	*out = NULL;
	*n = 0;
	if (!c)
		return -ENOMEM;
	/* Both lists are sorted by label (read_top): one merge. */
	for (uint32_t i = 0, j = 0; i < a->nfunc || j < b->nfunc; k++) {
		struct diff_func_change x = { 0 };
		if (j >= b->nfunc || (i < a->nfunc && a->func[i].label < b->func[j].label)) {
			x.a = a->func[i++];
			x.in_a = true;
		} else if (i >= a->nfunc || b->func[j].label < a->func[i].label) {
			x.b = b->func[j++];
			x.in_b = true;
		} else {
			x.a = a->func[i++];
			x.b = b->func[j++];
			x.in_a = x.in_b = true;
		}
		x.label = x.in_a ? x.a.label : x.b.label;
		x.self_delta = delta_of(x.a.self_ns, x.b.self_ns);
		x.preempted_delta = delta_of(x.a.preempted_ns, x.b.preempted_ns);
		c[k] = x;
	}
	if (k)
		qsort(c, k, sizeof(*c), by_func_impact);
	*out = c;
	*n = k;
	return 0;
}
