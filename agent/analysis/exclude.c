/* SPDX-License-Identifier: MIT */
#include "agent/analysis/exclude.h"
#include "agent/analysis/cct.h"
#include "agent/analysis/debugfile.h"
#include "agent/analysis/loops.h"
#include "agent/analysis/outer.h"
#include "hal/timer.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BATCH	       4096
#define EXCLUDE_SYMBOL 64u /* the name is a symbol's (not how an unnamed one is shown) */

void exclude_init(struct exclude_set *s)
{
	memset(s, 0, sizeof(*s));
}

void exclude_free(struct exclude_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->f[i].name);
	free(s->f);
	free(s->node);
	free(s->hash);
	memset(s, 0, sizeof(*s));
}

/* A C identifier, as GCC's list can hold it and a shell, make or `gcc @FILE` pass it
 * untouched: no ',' (the list's separator), no '$' (make would expand it), no space or
 * quote. A C++ symbol is mangled (_Z...) while GCC matches the demangled form. */
bool exclude_listable(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n >= EXCLUDE_NAME_MAX || (name[0] >= '0' && name[0] <= '9') ||
	    strncmp(name, "_Z", 2) == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

static uint64_t hash_of(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	return h;
}

static int rehash(struct exclude_set *s)
{
	size_t cap = s->hcap ? s->hcap * 2 : 1024;
	uint32_t *h = malloc(cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, cap * sizeof(*h));
	for (size_t i = 0; i < s->n; i++) {
		size_t k = hash_of(s->f[i].name, strlen(s->f[i].name)) & (cap - 1);
		while (h[k] != EXCLUDE_NONE)
			k = (k + 1) & (cap - 1);
		h[k] = (uint32_t)i;
	}
	free(s->hash);
	s->hash = h;
	s->hcap = cap;
	return 0;
}

/* The function named by the first len bytes of name: found, or added with no calls.
 * Its index, or -ENOMEM. */
static long find_or_add(struct exclude_set *s, const char *name, size_t len, bool symbol)
{
	if (2 * (s->n + 1) > s->hcap && rehash(s))
		return -ENOMEM;
	size_t k = hash_of(name, len) & (s->hcap - 1);
	for (; s->hash[k] != EXCLUDE_NONE; k = (k + 1) & (s->hcap - 1)) {
		const char *o = s->f[s->hash[k]].name;
		if (strncmp(o, name, len) == 0 && o[len] == '\0')
			return s->hash[k];
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct exclude_func *f = realloc(s->f, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		s->f = f;
		s->cap = cap;
	}
	char *copy = strndup(name, len);
	if (!copy)
		return -ENOMEM;
	struct exclude_func *f = &s->f[s->n];
	*f = (struct exclude_func){ .name = copy, .by = EXCLUDE_NONE, .clash = EXCLUDE_NONE };
	if (symbol)
		f->flags = EXCLUDE_SYMBOL | (exclude_listable(copy) ? EXCLUDE_LISTABLE : 0);
	s->hash[k] = (uint32_t)s->n;
	return (long)s->n++;
}

/* A symbol's source name: up to its first '.', since GCC names its clones "foo.isra.0",
 * "foo.constprop.0", "foo.part.0", "foo.cold", and LTO its statics "foo.lto_priv.0", all
 * made after the instrumentation was decided by the source name "foo". */
static long add_symbol(struct exclude_set *s, const char *name)
{
	const char *dot = strchr(name, '.');
	return find_or_add(s, name, dot && dot > name ? (size_t)(dot - name) : strlen(name), true);
}

/* The entry of a function key of trace t. */
static long entry_of(struct exclude_set *s, const struct rb_trace *t, struct agent_symbols *syms,
		     uint64_t key)
{
	int m = AGENT_KEY_MODULE(key);
	if (key != CCT_UNKNOWN && key != CCT_ROOT && m >= 0 && (uint32_t)m < t->nmodules &&
	    agent_symbols_ready(syms, m)) {
		const struct rb_symbol *sym = rb_elf_lookup(&syms->elf[m], AGENT_KEY_VADDR(key));
		/* A wrapper as the library function it stands for (__wrap_memcpy as memcpy):
		 * sleds_exclude matches a name as a substring, as GCC's lists do */
		if (sym && sym->addr == AGENT_KEY_VADDR(key))
			return add_symbol(s, rb_elf_shown_name(sym->name));
	}
	/* Unnamed here (no symbols, or an address inside a function): shown as the summary
	 * shows it, and never listed. */
	char name[512];
	agent_key_name(syms, key, name, sizeof(name));
	return find_or_add(s, name, strlen(name), false);
}

struct keymap {
	uint64_t key;
	uint32_t fn;
};

static int by_key(const void *a, const void *b)
{
	const struct keymap *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

/* Per function key of one thread, the two halves of a call's cycle, each when it lasted
 * at most `max` ticks: [LEAF] from the entry's timer read to the exit's, for a call of
 * nothing traced; [STEP] from the previous exit's read to this entry's (exclude.h). */
enum { LEAF, STEP };
struct leaf {
	uint64_t key, ticks[2], n[2];
	bool used;
};
struct leaves {
	struct leaf *l;
	size_t n, cap;
	uint64_t max;
};

static size_t leaf_slot(const struct leaf *l, size_t cap, uint64_t key)
{
	size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
	while (l[h].used && l[h].key != key)
		h = (h + 1) & (cap - 1);
	return h;
}

static int leaf_add(struct leaves *v, uint64_t key, int half, uint64_t ticks)
{
	if (2 * (v->n + 1) > v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 256;
		struct leaf *l = calloc(cap, sizeof(*l));
		if (!l)
			return -ENOMEM;
		for (size_t i = 0; i < v->cap; i++)
			if (v->l[i].used)
				l[leaf_slot(l, cap, v->l[i].key)] = v->l[i];
		free(v->l);
		v->l = l;
		v->cap = cap;
	}
	struct leaf *x = &v->l[leaf_slot(v->l, v->cap, key)];
	if (!x->used) {
		x->key = key;
		x->used = true;
		v->n++;
	}
	x->ticks[half] += ticks;
	x->n[half]++;
	return 0;
}

/* Per function of one thread's tree (its nodes at s->node[base...], their fn set): the
 * calls it made (callees), and the running time and calls of its outermost frames and
 * below them (exclude.h), a recursive function's inner frames being inside its outer ones.
 * Parents come before their children, so sums over subtrees are one pass backwards; the
 * outermost frames are found depth first, counting each function's open frames. */
static int add_inclusive(struct exclude_set *s, const struct cct *c, uint32_t base)
{
	const struct exclude_node *nd = &s->node[base];
	double *time = malloc((c->n ? c->n : 1) * sizeof(*time));
	uint64_t *calls = malloc((c->n ? c->n : 1) * sizeof(*calls));
	uint32_t *open = calloc(s->n ? s->n : 1, sizeof(*open));
	if (!time || !calls || !open) {
		free(time);
		free(calls);
		free(open);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < c->n; i++) {
		time[i] = nd[i].self_ns;
		calls[i] = nd[i].calls;
	}
	for (uint32_t i = c->n; i-- > 1;) {
		uint32_t p = c->node[i].parent;
		time[p] += time[i];
		calls[p] += calls[i];
		if (nd[p].fn != EXCLUDE_NONE)
			s->f[nd[p].fn].callees += nd[i].calls;
		else
			s->outside_callees += nd[i].calls;
	}
	/* Depth first through first_child / next_sibling, without a stack. */
	uint32_t x = c->n ? c->node[0].first_child : CCT_NONE;
	while (x != CCT_NONE) {
		uint32_t fn = nd[x].fn;
		if (fn != EXCLUDE_NONE) {
			if (!open[fn] && nd[x].calls) {
				struct exclude_func *f = &s->f[fn];
				f->incl_ns += time[x];
				f->outer += nd[x].calls;
				f->below += calls[x] - nd[x].calls;
			}
			open[fn]++;
		}
		if (c->node[x].first_child != CCT_NONE) {
			x = c->node[x].first_child;
			continue;
		}
		/* Leave x, and its ancestors while they have no next sibling. */
		for (;;) {
			if (nd[x].fn != EXCLUDE_NONE)
				open[nd[x].fn]--;
			if (c->node[x].next_sibling != CCT_NONE) {
				x = c->node[x].next_sibling;
				break;
			}
			x = c->node[x].parent;
			if (x == 0) {
				x = CCT_NONE;
				break;
			}
		}
	}
	free(time);
	free(calls);
	free(open);
	return 0;
}

/* One thread's tree into the set: per function its calls, self time and short leaf
 * calls, and the nodes. */
static int add_tree(struct exclude_set *s, const struct rb_trace *t, struct agent_symbols *syms,
		    const struct cct *c, const struct leaves *lv)
{
	struct cct_func *fs = NULL;
	size_t nf = 0;
	int err = cct_functions(c, CCT_WHOLE, &fs, &nf);
	if (err)
		return err;
	struct keymap *map = malloc((nf ? nf : 1) * sizeof(*map));
	if (!map) {
		free(fs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nf && !err; i++) {
		long e = entry_of(s, t, syms, fs[i].func);
		if (e < 0)
			err = (int)e;
		else
			map[i] = (struct keymap){ fs[i].func, (uint32_t)e };
	}
	free(fs);
	qsort(map, nf, sizeof(*map), by_key);
	if (!err && (c->n > UINT32_MAX - 1 - s->nnodes))
		err = -ENOMEM;
	if (!err && s->nnodes + c->n > s->capnodes) {
		size_t cap = s->capnodes ? s->capnodes : 1024;
		while (cap < s->nnodes + c->n)
			cap *= 2;
		struct exclude_node *nd = realloc(s->node, cap * sizeof(*nd));
		if (!nd)
			err = -ENOMEM;
		else {
			s->node = nd;
			s->capnodes = cap;
		}
	}
	uint64_t off = 0; /* blocked or preempted: not running */
	uint32_t base = (uint32_t)s->nnodes;
	for (uint32_t i = 0; i < c->n && !err; i++) {
		const struct cct_node *n = &c->node[i];
		const struct cct_stat *st = &n->s[CCT_WHOLE];
		off += st->blocked + st->preempted;
		struct exclude_node *x = &s->node[base + i];
		*x = (struct exclude_node){ .parent = i ? base + n->parent : EXCLUDE_NONE,
					    .fn = EXCLUDE_NONE,
					    .calls = st->calls,
					    .self_ns = (double)hal_ticks_to_ns(st->self,
									       t->timer_hz) };
		/* The root, and the calls the ring began inside (their function unknown):
		 * time outside every call seen whole. */
		if (i == 0 || n->func == CCT_UNKNOWN) {
			s->outside_ns += x->self_ns;
			s->calls += i ? st->calls : 0;
			continue;
		}
		if (!st->calls)
			continue;
		struct keymap want = { n->func, 0 };
		const struct keymap *k = bsearch(&want, map, nf, sizeof(*map), by_key);
		if (!k)
			continue; /* cct_functions lists every function called */
		struct exclude_func *f = &s->f[k->fn];
		x->fn = k->fn;
		f->calls += st->calls;
		f->self_ns += x->self_ns;
		f->flags |= EXCLUDE_TRACED;
		s->calls += st->calls;
	}
	for (size_t i = 0; i < lv->cap && !err; i++) {
		struct keymap want = { lv->l[i].key, 0 };
		const struct keymap *k =
			lv->l[i].used ? bsearch(&want, map, nf, sizeof(*map), by_key) : NULL;
		for (int h = LEAF; k && h <= STEP; h++) {
			s->f[k->fn].half_ns[h] +=
				(double)hal_ticks_to_ns(lv->l[i].ticks[h], t->timer_hz);
			s->f[k->fn].halves[h] += lv->l[i].n[h];
		}
	}
	free(map);
	if (!err)
		err = add_inclusive(s, c, base);
	if (err)
		return err;
	s->nnodes += c->n;
	/* The root's inclusive time is the thread's span; its waits, and the time other tasks
	 * had its CPU (known from the scheduling records), are not running time: neither is
	 * any function's self time. */
	uint64_t span = c->n ? c->node[0].s[CCT_WHOLE].incl : 0;
	s->traced_ns += (double)hal_ticks_to_ns(span > off ? span - off : 0, t->timer_hz);
	return 0;
}

/* The functions of the thread's outer frames at its freeze (agent/analysis/outer.h): the
 * calls the ring began inside and were still running are among them. The innermost one
 * not seen called in the thread is kept for the report, and the one just outside the calls
 * open at the freeze (open[nopen], cct_open_calls), which names the root's time. 0 or
 * -ENOMEM. */
static int add_outer(struct exclude_set *s, const struct rb_trace *t, struct agent_symbols *syms,
		     const struct rb_file_thread *th, const struct cct *c, const uint64_t *open,
		     size_t nopen)
{
	struct agent_outer *o = malloc(sizeof(*o));
	struct agent_root_calls *rc = malloc(sizeof(*rc));
	if (!o || !rc) {
		free(o);
		free(rc);
		return -ENOMEM;
	}
	agent_root_calls(c, rc);
	agent_outer_frames(syms, th, o);
	int err = 0;
	long shown = -1;
	for (size_t k = 0; k < o->n && !err; k++) {
		long e = entry_of(s, t, syms, o->key[k]);
		if (e < 0)
			err = (int)e;
		else
			s->f[e].flags |= EXCLUDE_OUTER;
		if (e >= 0 && (s->f[e].flags & (EXCLUDE_SYMBOL | EXCLUDE_TRACED)) == EXCLUDE_SYMBOL)
			shown = (long)k;
	}
	if (shown >= 0)
		snprintf(s->outer_shown, sizeof(s->outer_shown), "%s", o->name[shown]);
	uint64_t root = agent_outer_root_of(syms, o, open, nopen, rc);
	for (size_t k = 0; root && k < o->n; k++)
		if (o->key[k] == root) {
			snprintf(s->outer_root, sizeof(s->outer_root), "%s", o->name[k]);
			break;
		}
	free(o);
	free(rc);
	return err;
}

static int mark_loop(void *ctx, const char *name)
{
	struct exclude_set *s = ctx;
	long i = add_symbol(s, name);
	if (i < 0)
		return (int)i;
	if (!(s->f[i].flags & EXCLUDE_LOOP))
		s->loop_funcs++;
	s->f[i].flags |= EXCLUDE_LOOP;
	return 0;
}

int exclude_add_code(struct exclude_set *s, const char *path, const char *objdump)
{
	struct stat st;
	int fd = agent_open_regular(path, (uid_t)-1, &st);
	if (fd < 0)
		return fd;
	/* Read through this descriptor only: an ELF file (checked), then disassembled. */
	struct rb_elf elf;
	memset(&elf, 0, sizeof(elf));
	int err = rb_elf_read(fd, (uint64_t)st.st_size, SIZE_MAX, &elf);
	rb_elf_free(&elf);
	if (!err)
		err = agent_loops(fd, objdump, mark_loop, s);
	close(fd);
	s->loop_files += !err;
	return err;
}

static uint64_t key_of(void *ctx, const struct rb_event *e)
{
	return agent_func_key(ctx, e);
}

int exclude_add_trace(struct exclude_set *s, const struct rb_trace *t, struct agent_symbols *syms)
{
	int err = 0;
	/* Every function of the modules here, called or not: what an entry matches by
	 * substring is counted and shown, the functions the traces never saw included. */
	for (uint32_t m = 0; m < t->nmodules && !err; m++) {
		if (!agent_symbols_ready(syms, (int)m))
			continue;
		for (size_t i = 0; i < syms->elf[m].nsyms && !err; i++)
			if (add_symbol(s, syms->elf[m].syms[i].name) < 0)
				err = -ENOMEM;
	}
	struct rb_event *ev = err ? NULL : malloc(BATCH * sizeof(*ev));
	if (!err && !ev)
		err = -ENOMEM;
	uint64_t max = hal_muldiv_u64(EXCLUDE_EST_MAX_NS, t->timer_hz, 1000000000u);
	uint64_t quiet = hal_muldiv_u64(EXCLUDE_SILENCE_NS, t->timer_hz, 1000000000u);
	uint64_t records = 0, untimed = 0; /* the trace's: how its point cost is weighed */
	for (uint32_t i = 0; i < t->nthreads && !err; i++) {
		struct rb_decoder dec;
		memset(&dec, 0, sizeof(dec));
		err = rb_decoder_init(&dec, &t->threads[i].view, t->ref_ticks, NULL, NULL);
		records += err ? 0 : dec.stats.records;
		untimed += err ? 0 : dec.stats.untimed;
		struct cct c;
		/* As the summary counts: with the thread's switch records, blocked is its
		 * time asleep, and preempted time is no function's (cct.h). */
		struct cct_opts o = { .key = key_of,
				      .ctx = (void *)t,
				      .switches = t->threads[i].sched_on,
				      .switches_from = rb_thread_switches_from(&t->threads[i]) };
		if (!err)
			err = cct_init(&c, &o, dec.open_at_start);
		else
			memset(&c, 0, sizeof(c));
		struct leaves lv = { .max = max };
		struct rb_event prev = { .kind = RB_EV_SYNC };
		uint64_t last = 0, cut = 0, silent = 0; /* ticks */
		size_t n;
		while (!err && (n = rb_decoder_read(&dec, ev, BATCH)) > 0) {
			for (size_t j = 0; j < n && !err; j++) {
				uint64_t ts = ev[j].ts;
				/* An entry followed at once by its exit (a call of nothing
				 * traced), an exit at once by an entry: the halves of a call's
				 * cycle, timed before any silence is cut from them. */
				if (ev[j].kind == RB_EV_EXIT && prev.kind == RB_EV_ENTRY &&
				    ts - prev.ts <= lv.max)
					err = leaf_add(&lv, key_of((void *)t, &prev), LEAF,
						       ts - prev.ts);
				else if (ev[j].kind == RB_EV_ENTRY && prev.kind == RB_EV_EXIT &&
					 ts - prev.ts <= lv.max)
					err = leaf_add(&lv, key_of((void *)t, &ev[j]), STEP,
						       ts - prev.ts);
				prev = ev[j];
				/* Silences (exclude.h) are cut out of the thread's time: later
				 * records move back by what was cut before them. */
				uint64_t before = last - cut; /* the last record, moved */
				if (last && ts > last + quiet) {
					cut += ts - last;
					silent += ts - last;
					s->silences++;
				}
				last = ts > last ? ts : last;
				ev[j].ts = ts - cut;
				/* A switch record's start moves too; within a silence it is
				 * the silence's start, where the cut leaves nothing. */
				if (ev[j].kind == RB_EV_OFF_CPU) {
					uint64_t id = ev[j].id > cut ? ev[j].id - cut : 0;
					ev[j].id = id > before ? id : before;
				}
			}
			if (!err)
				err = cct_add_n(&c, ev, n);
		}
		/* A copied ring ends at its freeze, maybe long after its last record. */
		uint64_t end = dec.end_ts;
		if (last && end > last + quiet) {
			silent += end - last;
			s->silences++;
			end = last;
		}
		s->silent_ns += (double)hal_ticks_to_ns(silent, t->timer_hz);
		uint64_t open[AGENT_OUTER_MAX];
		size_t nopen = err ? 0 : cct_open_calls(&c, open, AGENT_OUTER_MAX);
		if (!err)
			err = cct_finish(&c, end > cut ? end - cut : 0);
		if (!err && c.events) {
			err = add_tree(s, t, syms, &c, &lv);
			s->threads++;
		}
		if (!err)
			err = add_outer(s, t, syms, &t->threads[i], &c, open, nopen);
		free(lv.l);
		cct_free(&c);
		rb_decoder_free(&dec);
	}
	free(ev);
	if (!err) {
		s->traces++;
		if (t->point_ps) {
			s->point_ns += rb_trace_point_ps(t, records, untimed) / 1000.0;
			s->point_traces++;
		}
	}
	return err;
}

/* ---- the selection ---- */

struct rank {
	double v;
	uint64_t calls;
	uint32_t i;
	const char *name;
	bool last; /* a candidate taken after every other (a loop: EXCLUDE_LOOPS_LAST) */
};

/* Least self time per call first; then more calls (a larger saving), then by name, so
 * the same traces always give the same list. */
static int by_cheapest(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;
	if (x->last != y->last)
		return x->last ? 1 : -1;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Most self time first, then by name. */
static int by_self(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;
	if (x->v != y->v)
		return x->v > y->v ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The function of least mean time in one half of the call cycle (exclude.h). */
static uint32_t shortest(const struct exclude_set *s, int half, double *mean)
{
	uint32_t best = EXCLUDE_NONE;
	for (size_t i = 0; i < s->n; i++) {
		const struct exclude_func *f = &s->f[i];
		if (!(f->flags & EXCLUDE_LISTABLE) || f->halves[half] < EXCLUDE_EST_MIN_CALLS ||
		    f->half_ns[half] <= 0)
			continue;
		double v = f->half_ns[half] / (double)f->halves[half];
		if (best == EXCLUDE_NONE || v < *mean) {
			best = (uint32_t)i;
			*mean = v;
		}
	}
	return best;
}

/* Which functions entry e would exclude besides itself, their indices in out: -1 when one
 * of them is kept (counted in r), else how many. */
static long matches(struct exclude_set *s, uint32_t e, uint32_t *out, struct exclude_result *r)
{
	long n = 0;
	const char *name = s->f[e].name;
	for (size_t j = 0; j < s->n; j++) {
		const struct exclude_func *g = &s->f[j];
		if (j == e || (g->flags & EXCLUDE_EXCLUDED) || !(g->flags & EXCLUDE_SYMBOL) ||
		    !strstr(g->name, name))
			continue;
		if (g->flags & EXCLUDE_KEPT) {
			r->skip_kept++;
			s->f[e].clash = (uint32_t)j;
			return -1;
		}
		out[n++] = (uint32_t)j;
	}
	return n;
}

/* Where the self time of excluded functions goes: to the nearest caller that keeps its
 * trace points, less the two trace points per call that no longer run (half of them was
 * in the function's own time, half in its caller's). Parents come before their children
 * in the tree, so one pass finds each node's nearest kept ancestor. */
static int predict_after(struct exclude_set *s, double cost)
{
	for (size_t i = 0; i < s->n; i++)
		s->f[i].after_ns = 0;
	uint32_t *to = malloc((s->nnodes ? s->nnodes : 1) * sizeof(*to));
	if (!to)
		return -ENOMEM;
	for (size_t i = 0; i < s->nnodes; i++) {
		const struct exclude_node *x = &s->node[i];
		bool gone = x->fn != EXCLUDE_NONE && (s->f[x->fn].flags & EXCLUDE_EXCLUDED);
		to[i] = gone && x->parent != EXCLUDE_NONE ? to[x->parent] : (uint32_t)i;
		uint32_t fn = s->node[to[i]].fn;
		if (fn == EXCLUDE_NONE || (gone && to[i] == i))
			continue; /* outside any traced function (the root) */
		double v = gone ? x->self_ns - 2 * cost * (double)x->calls : x->self_ns;
		s->f[fn].after_ns += v > 0 ? v : 0;
	}
	free(to);
	return 0;
}

double exclude_self_per_call(const struct exclude_func *f)
{
	return f->calls ? f->plain_ns / (double)f->calls : 0;
}

double exclude_incl_per_call(const struct exclude_func *f)
{
	return f->outer ? f->plain_incl_ns / (double)f->outer : 0;
}

/* Self and inclusive time without the trace points (exclude.h), at cost C. */
static void plain_times(struct exclude_set *s, double cost)
{
	for (size_t i = 0; i < s->n; i++) {
		struct exclude_func *f = &s->f[i];
		double v = f->self_ns - cost * (double)(f->calls + f->callees);
		double w = f->incl_ns - cost * (double)f->outer - 2 * cost * (double)f->below;
		f->plain_ns = v > 0 ? v : 0;
		f->plain_incl_ns = w > 0 ? w : 0;
	}
}

int exclude_select(struct exclude_set *s, const struct exclude_opts *o, struct exclude_result *r)
{
	memset(r, 0, sizeof(*r));
	r->cost_from[0] = r->cost_from[1] = EXCLUDE_NONE;
	for (size_t i = 0; i < s->n; i++) {
		s->f[i].flags &= ~(EXCLUDE_KEPT | EXCLUDE_PROTECTED | EXCLUDE_COSTLY |
				   EXCLUDE_EXCLUDED | EXCLUDE_LISTED);
		s->f[i].by = s->f[i].clash = EXCLUDE_NONE;
	}
	r->cost_ns = o->cost_ns;
	if (r->cost_ns <= 0 && o->ratio > 1 && s->calls)
		r->cost_ns = (s->traced_ns - s->traced_ns / o->ratio) / (2 * (double)s->calls);
	if (r->cost_ns <= 0 && s->point_traces && s->point_traces == s->traces) {
		r->cost_ns = s->point_ns / s->point_traces;
		r->measured = true;
	}
	if (r->cost_ns <= 0) {
		r->cost_from[0] = shortest(s, LEAF, &r->half_ns[0]);
		r->cost_from[1] = shortest(s, STEP, &r->half_ns[1]);
		if (r->cost_from[0] == EXCLUDE_NONE || r->cost_from[1] == EXCLUDE_NONE) {
			r->cost_from[0] = r->cost_from[1] = EXCLUDE_NONE;
			return -ERANGE;
		}
		r->cost_ns = (r->half_ns[0] + r->half_ns[1]) / 2;
	}
	double tp = 2 * r->cost_ns * (double)s->calls; /* ns of trace points in the traces */
	r->work_ns = s->traced_ns - tp;
	if (r->work_ns <= 0)
		return -ERANGE;
	r->before = tp / r->work_ns;
	r->off_ns = o->off_ns > 0 ? o->off_ns : EXCLUDE_OFF_SHARE * r->cost_ns;
	plain_times(s, r->cost_ns);
	r->outside_ns = s->outside_ns - r->cost_ns * (double)s->outside_callees;
	if (r->outside_ns < 0)
		r->outside_ns = 0;

	struct rank *rk = malloc((s->n ? s->n : 1) * sizeof(*rk));
	uint32_t *m = malloc((s->n ? s->n : 1) * sizeof(*m));
	r->list = malloc((s->n ? s->n : 1) * sizeof(*r->list));
	if (!rk || !m || !r->list) {
		free(rk);
		free(m);
		exclude_result_free(r);
		return -ENOMEM;
	}
	/* The top of the summary stays: the `keep` functions of most plain self time, and
	 * every function of at least protect_pct of W, what perf would put on top. */
	size_t nr = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->f[i].flags & EXCLUDE_TRACED)
			rk[nr++] = (struct rank){ s->f[i].plain_ns, s->f[i].calls, (uint32_t)i,
						  s->f[i].name, false };
	qsort(rk, nr, sizeof(*rk), by_self);
	/* Of those, the ones whose trace points cost more than their own time are not kept
	 * (exclude.h): they are candidates like any other, unless protected. */
	for (size_t i = 0; i < nr && i < o->keep; i++) {
		struct exclude_func *f = &s->f[rk[i].i];
		if (f->plain_ns >= 2 * r->cost_ns * (double)f->calls)
			f->flags |= EXCLUDE_KEPT;
		else
			f->flags |= EXCLUDE_COSTLY;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct exclude_func *f = &s->f[i];
		/* A caller the rings lost the entry of, never seen called: its time is
		 * outside_ns, it cannot be a candidate, and no entry may take it along. */
		if ((f->flags & (EXCLUDE_OUTER | EXCLUDE_TRACED)) == EXCLUDE_OUTER)
			f->flags |= EXCLUDE_KEPT;
		if (!(f->flags & EXCLUDE_TRACED))
			continue;
		if (o->protect_pct > 0 && f->plain_ns >= o->protect_pct / 100 * r->work_ns) {
			f->flags |= EXCLUDE_KEPT | EXCLUDE_PROTECTED;
			r->protected++;
		}
		/* A loop that holds protect_pct of W, itself and below (exclude.h): its own
		 * share may be what an estimate says it is not. */
		if (o->protect_pct > 0 && (f->flags & EXCLUDE_LOOP) &&
		    !(f->flags & EXCLUDE_PROTECTED) &&
		    f->plain_incl_ns >= o->protect_pct / 100 * r->work_ns) {
			f->flags |= EXCLUDE_KEPT | EXCLUDE_PROTECTED;
			r->protected_loops++;
		}
		/* Its time per call is its input's (loops.h): cheap here says less of the
		 * workload the list will meet. Kept, or taken last. */
		if ((f->flags & EXCLUDE_LOOP) && o->loops == EXCLUDE_LOOPS_KEEP) {
			r->looped += !(f->flags & EXCLUDE_KEPT);
			f->flags |= EXCLUDE_KEPT;
		}
		if ((f->flags & (EXCLUDE_COSTLY | EXCLUDE_KEPT)) == EXCLUDE_COSTLY)
			r->costly++;
		if (f->flags & EXCLUDE_KEPT)
			r->kept_ns += 2 * r->cost_ns * (double)f->calls;
		if (!(f->flags & EXCLUDE_LISTABLE)) {
			r->unlistable++;
			r->unlistable_calls += f->calls;
		}
	}

	/* The candidates: short calls, cheapest plain self time per call first. */
	nr = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct exclude_func *f = &s->f[i];
		if ((f->flags & (EXCLUDE_LISTABLE | EXCLUDE_TRACED | EXCLUDE_KEPT)) !=
			    (EXCLUDE_LISTABLE | EXCLUDE_TRACED) ||
		    f->calls < o->min_calls || !f->calls)
			continue;
		if (o->min_incl_ns > 0 &&
		    (!f->outer || exclude_incl_per_call(f) >= o->min_incl_ns)) {
			r->skip_long++;
			continue;
		}
		rk[nr++] = (struct rank){ exclude_self_per_call(f), f->calls, (uint32_t)i,
					  f->name, (f->flags & EXCLUDE_LOOP) != 0 };
	}
	qsort(rk, nr, sizeof(*rk), by_cheapest);
	double target = o->budget_pct / 100 * r->work_ns, left = tp;
	for (size_t i = 0; i < nr; i++) {
		uint32_t e = rk[i].i;
		if (s->f[e].flags & EXCLUDE_EXCLUDED)
			continue; /* an earlier entry's substring took it */
		/* Past the budget, a loop-free function still goes when its own trace points
		 * cost more than the budget of its calls' time (exclude.h: short). */
		bool over = left > target;
		bool short_call = s->loop_files && !(s->f[e].flags & EXCLUDE_LOOP) &&
				  2 * r->cost_ns >= o->budget_pct / 100 * exclude_incl_per_call(&s->f[e]);
		if (!over && !short_call)
			continue;
		long n = matches(s, e, m, r);
		if (n < 0)
			continue;
		/* A short entry takes nothing with a loop along by substring. */
		bool loop_along = false;
		for (long j = 0; j < n && !over; j++)
			loop_along |= (s->f[m[j]].flags & EXCLUDE_LOOP) != 0;
		if (loop_along)
			continue;
		m[n] = e;
		for (long j = 0; j <= n; j++) {
			struct exclude_func *g = &s->f[m[j]];
			r->unseen += !(g->flags & EXCLUDE_TRACED);
			g->flags |= EXCLUDE_EXCLUDED;
			g->by = e;
			left -= 2 * r->cost_ns * (double)g->calls;
			r->calls_saved += g->calls;
			r->moved_ns += g->plain_ns;
			r->excluded++;
			if (o->loops == EXCLUDE_LOOPS_LAST && (g->flags & EXCLUDE_LOOP))
				r->looped++;
		}
		r->shorts += !over;
		s->f[e].flags |= EXCLUDE_LISTED;
		r->list[r->nlist++] = e;
	}
	free(rk);
	free(m);
	r->after = (left > 0 ? left : 0) / r->work_ns;
	/* Off, every trace point left costs D where tracing costs C. */
	r->off_before = r->before * r->off_ns / r->cost_ns;
	r->off_after = r->after * r->off_ns / r->cost_ns;
	r->reached = r->after <= o->budget_pct / 100;
	int err = predict_after(s, r->cost_ns);
	if (err)
		exclude_result_free(r);
	return err;
}

void exclude_result_free(struct exclude_result *r)
{
	free(r->list);
	r->list = NULL;
	r->nlist = 0;
}

int exclude_write_names(FILE *out, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i % EXCLUDE_PER_LINE == 0)
			fputs(i ? "\n-finstrument-functions-exclude-function-list="
				: "-finstrument-functions-exclude-function-list=",
			      out);
		else
			fputc(',', out);
		fputs(names[i], out);
	}
	if (n)
		fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}

int exclude_write_flags(FILE *out, const struct exclude_set *s, const struct exclude_result *r)
{
	const char **names = malloc((r->nlist ? r->nlist : 1) * sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < r->nlist; i++)
		names[i] = s->f[r->list[i]].name;
	int e = exclude_write_names(out, names, r->nlist);
	free(names);
	return e;
}
