/* SPDX-License-Identifier: MIT */
#include "agent/analysis/summary_out.h"
#include "agent/analysis/outer.h"
#include "agent/escape.h"
#include "agent/marks.h"
#include "hal/timer.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Ticks to ns, at most INT64_MAX: more (292 years) comes only from a torn or crafted trace,
 * and every reader of the JSON, `jitt diff` first, takes durations as signed 64-bit. */
static uint64_t ns(const struct summary *s, uint64_t ticks)
{
	uint64_t v = hal_ticks_to_ns(ticks, s->trace->timer_hz);
	return v > INT64_MAX ? INT64_MAX : v;
}

/* The window split into running, preempted and blocked ticks (they add up to its length). */
static void window_split(const struct summary *s, uint64_t *running, uint64_t *preempted,
			 uint64_t *blocked)
{
	uint64_t wlen = s->w1 - s->w0;
	*blocked = s->window_blocked < wlen ? s->window_blocked : wlen;
	*preempted = s->window_preempted < wlen - *blocked ? s->window_preempted : wlen - *blocked;
	*running = wlen - *blocked - *preempted;
}

static const char *const sched_source_name[] = { "none", "perf", "schedstat" };

/* What the window's blocked time is (cct.h): with the kernel's switch records, the time the
 * thread was asleep off its CPU; without them, assumed: the whole of every wrapped wait. */
static bool blocked_is_asleep(const struct summary *s)
{
	return s->sched.source == SUMMARY_SCHED_PERF;
}

/* Why no contexts are ranked, when there is no baseline to rank them against. */
static const char *no_baseline(const struct summary *s)
{
	return s->window_kind == SUMMARY_WINDOW_FRAME ? "no other complete frame"
						      : "no time before the window";
}

/* "[cut by the ring]" only for a call whose entry the ring overwrote; a call the freeze
 * interrupted lost nothing. */
static const char *cut_text(bool truncated, bool running)
{
	return truncated && running ? " [cut by the ring, still running at the freeze]"
	       : truncated	    ? " [cut by the ring]"
	       : running	    ? " [still running at the freeze]"
				    : "";
}

/* What a line says of a function whose time the untimed fit guessed (summary.h, guessed):
 * its few calls lie in windows whose time the fit could not split, and it was given what
 * the other gaps there did not explain; that time may be theirs. */
static const char *guessed_text(const struct summary *s, uint64_t key)
{
	for (size_t i = 0; i < s->nguessed; i++)
		if (s->guessed[i] == key)
			return " [a guess: its few calls lie in long untimed windows]";
	return "";
}

/* ---- one name, one line ---- */

/*
 * A function's name in the summary, as agent_key_name gives it (a compiler's copies,
 * "name.constprop.0" or "name.lto_priv.0", are named "name" there). True when it is a
 * symbol's name (one that copies can share); false for {build-id, offset} and the tree's
 * pseudo-functions.
 */
static bool func_name(struct agent_symbols *syms, uint64_t key, char *buf, size_t size)
{
	agent_key_name(syms, key, buf, size);
	int m = key == CCT_UNKNOWN || key == CCT_ROOT ? -1 : AGENT_KEY_MODULE(key);
	return m >= 0 && agent_symbols_ready(syms, m);
}

struct named {
	uint64_t hash;
	size_t i; /* the entry's rank */
};

static int by_hash(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int by_self(const void *a, const void *b)
{
	const struct summary_func *x = a, *y = b;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * A ranked list as the reader sees it (docs/summary-format.md, "One name, one line"): the
 * copies of one function at several addresses (a `static inline` helper emitted in two
 * translation units, GCC's clones, LTO's copies) are one line under their common name,
 * their calls and times added up; the line's function (its {build-id, offset} in the
 * JSON) is the copy with the most self time. Then the first k. The names are known only
 * here, where the symbols are, so the summary keeps every function (summary.h). Names are
 * compared through a hash, sorted, so the work is n log n however many functions ran.
 * A malloc'd list into *out, its length in *n. 0 or -ENOMEM.
 */
static int merge_copies(const struct summary *s, struct agent_symbols *syms,
			const struct summary_func *f, size_t n, struct summary_func **out,
			size_t *count)
{
	struct named *x = malloc((n ? n : 1) * sizeof(*x));
	size_t *lead = malloc((n ? n : 1) * sizeof(*lead)); /* the rank each merges into */
	size_t *at = malloc((n ? n : 1) * sizeof(*at));	    /* a leader's place in *out */
	struct summary_func *m = malloc((n ? n : 1) * sizeof(*m));
	char a[256], b[256];
	if (!x || !lead || !at || !m) {
		free(x);
		free(lead);
		free(at);
		free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		/* FNV-1a of the name; of the key when it is no symbol's (it merges nothing) */
		uint64_t h = 0xcbf29ce484222325ull;
		if (func_name(syms, f[i].key, a, sizeof(a)))
			for (const char *c = a; *c; c++)
				h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
		else
			h = (h ^ f[i].key) * 0x100000001b3ull;
		x[i] = (struct named){ h, i };
		lead[i] = SIZE_MAX;
	}
	qsort(x, n, sizeof(*x), by_hash);
	/* Within a run of one hash, in rank order: the first of each name leads. */
	for (size_t r = 0, e; r < n; r = e) {
		for (e = r + 1; e < n && x[e].hash == x[r].hash; e++)
			;
		for (size_t j = r; j < e; j++) {
			if (lead[x[j].i] != SIZE_MAX)
				continue;
			lead[x[j].i] = x[j].i;
			bool named = e - r > 1 && func_name(syms, f[x[j].i].key, a, sizeof(a));
			for (size_t l = j + 1; named && l < e; l++)
				if (lead[x[l].i] == SIZE_MAX &&
				    func_name(syms, f[x[l].i].key, b, sizeof(b)) && !strcmp(a, b))
					lead[x[l].i] = x[j].i;
		}
	}
	size_t nm = 0;
	for (size_t i = 0; i < n; i++) { /* a leader ranks before the copies it leads */
		if (lead[i] == i) {
			at[i] = nm;
			m[nm++] = f[i];
			continue;
		}
		struct summary_func *y = &m[at[lead[i]]];
		y->calls += f[i].calls;
		y->self += f[i].self;
		y->blocked += f[i].blocked;
		y->preempted += f[i].preempted;
		y->truncated |= f[i].truncated;
		y->running |= f[i].running;
		y->callees += f[i].callees;
		y->more += f[i].more;
	}
	qsort(m, nm, sizeof(*m), by_self);
	free(x);
	free(lead);
	free(at);
	*out = m;
	*count = nm < s->k ? nm : s->k;
	return 0;
}

/* The summary's ranked lists, merged (merge_copies): the window's, the trace's, and each
 * hop's waker's. */
struct lists {
	struct summary_func *window, *trace, *hop[SUMMARY_MAX_HOPS];
	size_t nwindow, ntrace, nhop[SUMMARY_MAX_HOPS];
};

static void lists_free(struct lists *l)
{
	free(l->window);
	free(l->trace);
	for (size_t i = 0; i < SUMMARY_MAX_HOPS; i++)
		free(l->hop[i]);
	memset(l, 0, sizeof(*l));
}

/* merge_copies, of a copy without the trace points when `plain` (summary.h, points_out). */
static int merge_list(const struct summary *s, struct agent_symbols *syms, bool plain,
		      const struct summary_func *f, size_t n, struct summary_func **out,
		      size_t *count)
{
	if (!plain)
		return merge_copies(s, syms, f, n, out, count);
	struct summary_func *c = malloc((n ? n : 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (n) /* a waker's list can be empty, and NULL */
		memcpy(c, f, n * sizeof(*c));
	summary_take_out_points(s, c, n);
	int err = merge_copies(s, syms, c, n, out, count);
	free(c);
	return err;
}

static int lists_of(const struct summary *s, struct agent_symbols *syms, bool plain,
		    struct lists *l)
{
	memset(l, 0, sizeof(*l));
	int err = merge_list(s, syms, plain, s->top_window, s->ntop_window, &l->window,
			     &l->nwindow);
	if (!err)
		err = merge_list(s, syms, plain, s->top_trace, s->ntop_trace, &l->trace,
				 &l->ntrace);
	for (size_t i = 0; i < s->nhops && !err; i++)
		err = merge_list(s, syms, plain, s->hops[i].top, s->hops[i].ntop, &l->hop[i],
				 &l->nhop[i]);
	if (err)
		lists_free(l);
	return err;
}

static const char *thread_name(const struct summary *s, int i)
{
	const struct rb_file_thread *th = &s->trace->threads[i];
	return th->name[0] ? th->name : "(unnamed)";
}

/* ---- JSON ---- */

/*
 * How much of the summary one rendering writes. The first renderings drop ranked contexts,
 * then the shorter chains; the last ones (level > 0, for hostile traces only) shorten
 * what stays, down to a form whose size is bounded whatever the trace holds (see
 * summary_write_json).
 */
struct jlimit {
	size_t nctx, nch, ntt; /* the first contexts, chains, top_trace entries written */
	unsigned level;	  /* 0: all of it; 1: short lists; 2: the bare minimum */
};

/* The whole trace's top self time says least about the anomaly: its entries past the third
 * go first, before any ranked context (version 2; the sim app's compute jank then keeps all
 * 10 of its contexts). */
#define JSON_TOP_TRACE_KEEP 3
/* Then the shorter chains down to the three longest, still before any ranked context: on a
 * real program (SQLite's speedtest1, every function a trace point) ten chains of repeated
 * 6- to 18-frame paths filled the room and left 0 to 7 of the 10 contexts; the three
 * longest say where the slow moment's time went, the contexts what changed. */
#define JSON_CHAINS_KEEP 3

/* Strings from the trace at level 2 are cut to this many bytes (at most 6 escaped each). */
#define JSON_MIN_STRING 32
/* The longest chain at level 2: its outermost frame and its three innermost. */
#define JSON_MIN_CHAIN 4

static void json_string(FILE *out, const char *v, const struct jlimit *lim)
{
	size_t n = strlen(v);
	if (lim->level >= 2 && n > JSON_MIN_STRING)
		n = JSON_MIN_STRING;
	agent_json_fput(out, v, n);
}

/* The functions a summary names, each once; the JSON refers to them by index. A table
 * keyed by function: a linear search here was most of the time on a deep trace. */
struct ftable {
	uint64_t *key; /* in order of first use */
	uint32_t *slot; /* open addressing: index + 1, 0 empty */
	size_t n, cap, scap;
	bool failed;
};

static size_t fhash(uint64_t key)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32);
}

static int fidx(struct ftable *f, uint64_t key)
{
	if (2 * (f->n + 1) > f->scap) {
		size_t cap = f->scap ? 2 * f->scap : 256;
		uint32_t *slot = calloc(cap, sizeof(*slot));
		if (!slot) {
			f->failed = true;
			return -1;
		}
		for (size_t i = 0; i < f->n; i++) {
			size_t h = fhash(f->key[i]) & (cap - 1);
			while (slot[h])
				h = (h + 1) & (cap - 1);
			slot[h] = (uint32_t)i + 1;
		}
		free(f->slot);
		f->slot = slot;
		f->scap = cap;
	}
	size_t h = fhash(key) & (f->scap - 1);
	for (; f->slot[h]; h = (h + 1) & (f->scap - 1))
		if (f->key[f->slot[h] - 1] == key)
			return (int)f->slot[h] - 1;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		uint64_t *k = realloc(f->key, cap * sizeof(*k));
		if (!k) {
			f->failed = true;
			return -1;
		}
		f->key = k;
		f->cap = cap;
	}
	f->key[f->n] = key;
	f->slot[h] = (uint32_t)f->n + 1;
	return (int)f->n++;
}

static void json_funcs(FILE *out, const struct summary *s, struct ftable *ft,
		       const struct summary_func *f, size_t n)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s[%d,%llu,%llu,%llu,%d,%llu]", i ? "," : "", fidx(ft, f[i].key),
			(unsigned long long)ns(s, f[i].self),
			(unsigned long long)(f[i].calls + f[i].more),
			(unsigned long long)ns(s, f[i].blocked), f[i].truncated || f[i].running,
			(unsigned long long)ns(s, f[i].preempted));
	fputc(']', out);
}

/* A chain's frames; at level 2 only its outermost and its innermost few, the rest added
 * to what is elided (*at, *elided say where and how many, as summary_chain's). */
static void json_chain(FILE *out, const struct summary *s, struct ftable *ft,
		       const struct summary_chain *c, const struct jlimit *lim, size_t *at,
		       size_t *elided)
{
	size_t keep_at = c->elided ? c->at : c->n, skip = 0;
	*elided = c->elided;
	if (lim->level >= 2 && c->n > JSON_MIN_CHAIN) {
		/* frames [1, n - 3) of those kept go too */
		skip = c->n - JSON_MIN_CHAIN;
		keep_at = 1;
		*elided += skip;
	}
	*at = *elided ? keep_at : c->n;
	fputc('[', out);
	for (size_t i = 0, o = 0; i < c->n; i++) {
		if (i >= keep_at && i < keep_at + skip)
			continue;
		fprintf(out, "%s[%d,%llu,%llu,%llu,%d,%llu", o++ ? "," : "", fidx(ft, c->f[i].key),
			(unsigned long long)ns(s, c->f[i].incl),
			(unsigned long long)ns(s, c->f[i].self),
			(unsigned long long)ns(s, c->f[i].blocked),
			c->f[i].truncated || c->f[i].running,
			(unsigned long long)ns(s, c->f[i].preempted));
		if (c->f[i].calls > 1)
			fprintf(out, ",%u", c->f[i].calls);
		fputc(']', out);
	}
	fputc(']', out);
}

/* "sched": the source and what the blocked time is ("asleep" off the CPU, or, with no
 * switch records, the "waits" whole: blocked_is_asleep); with perf the migrations and, on a
 * machine of two or more CPU classes, the running time on each (the scheduling records:
 * docs/summary-format.md). */
static void json_sched(FILE *out, const struct summary *s)
{
	const struct summary_sched *sc = &s->sched;
	fprintf(out, ",\"sched\":{\"source\":\"%s\",\"blocked_is\":\"%s\"",
		sched_source_name[sc->source], blocked_is_asleep(s) ? "asleep" : "waits");
	if (sc->source == SUMMARY_SCHED_PERF) {
		fprintf(out, ",\"migrations\":%u", sc->migrations);
		if (sc->nclasses >= 2) {
			fputs(",\"cpu_ns\":{", out);
			bool first = true;
			for (int c = 0; c < HAL_CPU_NCLASSES; c++) {
				if (!sc->on_class[c])
					continue;
				fprintf(out, "%s\"%s\":%llu", first ? "" : ",",
					c == HAL_CPU_LITTLE ? "little" : c == HAL_CPU_BIG ? "big" : "middle",
					(unsigned long long)ns(s, sc->on_class[c]));
				first = false;
			}
			fputc('}', out);
		}
	}
	fputc('}', out);
}

static void json_u64s(FILE *out, const struct summary *s, const uint64_t *v, size_t n)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%llu", i ? "," : "", (unsigned long long)ns(s, v[i]));
	fputc(']', out);
}

/* Signed ticks to signed ns (a path's cost may be negative), defined for every value. */
static long long sns(const struct summary *s, int64_t ticks)
{
	uint64_t mag = ticks < 0 ? 0 - (uint64_t)ticks : (uint64_t)ticks;
	uint64_t v = ns(s, mag);
	if (v > INT64_MAX)
		v = INT64_MAX;
	return ticks < 0 ? -(long long)v : (long long)v;
}

/* A context's frames before its elided middle (all of them when none is elided): the
 * part that is the same CCT nodes as another context's when the functions agree. */
static size_t outer_frames(const struct summary_context *c)
{
	return c->elided ? c->at : c->n;
}

/*
 * Version 2's compact paths. The K costliest contexts of one window are leaves of one
 * calling-context tree, so they share long prefixes (the sim app's 11-deep paths differ in
 * their last two or three frames), and written whole those prefixes were most of the
 * summary: at 4 KiB the sim app's compute jank kept 7 of its 10 contexts. A context that
 * starts like an earlier one says so ("from":[j,n]: the first n frames are context j's)
 * and writes only the rest. Equal functions from the root are one CCT node (one node per
 * distinct call path, agent/analysis/cct.h), so their window and baseline times are equal
 * too; they are compared anyway, so the encoding is lossless whatever built the contexts.
 * Only the outer frames before an elided middle are shared, so that a reader rebuilding
 * the tree (jitt diff) meets the same nodes. The longest such prefix, at least 2 frames
 * (one costs more to point at than to write), with the earliest context on ties.
 */
static size_t shared_prefix(const struct summary *s, size_t i, size_t *from)
{
	const struct summary_context *c = &s->contexts[i];
	size_t best = 0;
	*from = 0;
	for (size_t j = 0; j < i; j++) {
		const struct summary_context *d = &s->contexts[j];
		size_t most = outer_frames(c) < outer_frames(d) ? outer_frames(c) : outer_frames(d);
		size_t n = 0;
		while (n < most && c->key[n] == d->key[n] && c->self[n] == d->self[n] &&
		       c->base[n] == d->base[n])
			n++;
		if (n > best) {
			best = n;
			*from = j;
		}
	}
	return best >= 2 ? best : 0;
}

/* The functions table last in the writing, first in the file: the body is written to a
 * memory stream, then the header and the table, then the body. Only the modules the
 * functions name are listed (a trace may name a thousand), renumbered in order of use. */
static int write_json(FILE *out, const struct summary *s, struct agent_symbols *syms,
		      const struct lists *ls, const struct jlimit *lim)
{
	char *body = NULL;
	size_t size = 0;
	FILE *b = open_memstream(&body, &size);
	if (!b)
		return -ENOMEM;
	struct ftable ft = { 0 };
	const struct summary_frames *fr = &s->frames;
	size_t ntop = lim->level >= 2 ? 0 : lim->level >= 1 ? 3 : SIZE_MAX;
	size_t nhops = lim->level >= 2 ? 0 : lim->level >= 1 ? 1 : s->nhops;
	uint64_t wlen = s->w1 - s->w0, blocked, preempted, running;
	window_split(s, &running, &preempted, &blocked);
	/* In ns the three add up exactly too: running is what is left (not ns(running)). */
	uint64_t parts = ns(s, preempted) + ns(s, blocked);
	uint64_t running_ns = ns(s, wlen) > parts ? ns(s, wlen) - parts : 0;
	/* Where the window ends, as a distance before the trace file's reference time (its
	 * header: ticks with CLOCK_MONOTONIC), so a reader holding the file can lay the
	 * window on other clocks (tests/real_moment.py on schedstat's). */
	uint64_t ref = s->trace->ref_ticks, to_ref = ref > s->w1 ? ns(s, ref - s->w1) : 0;
	fprintf(b,
		",\"window\":{\"kind\":\"%s\",\"ns\":%llu,\"running_ns\":%llu,\"preempted_ns\":%llu,"
		"\"blocked_ns\":%llu,\"to_ref_ns\":%llu,\"anomaly_marked\":%s",
		s->window_kind == SUMMARY_WINDOW_FRAME ? "frame" : "span",
		(unsigned long long)ns(s, wlen), (unsigned long long)running_ns,
		(unsigned long long)ns(s, preempted), (unsigned long long)ns(s, blocked),
		(unsigned long long)to_ref, s->anomaly_marked ? "true" : "false");
	if (s->ring_cut)
		fputs(",\"ring_cut\":true", b);
	if (fr->open_skipped)
		fprintf(b, ",\"open_skipped_ns\":%llu", (unsigned long long)ns(s, fr->open_skipped));
	json_sched(b, s);
	fputc('}', b);
	fprintf(b,
		",\"frames\":{\"count\":%zu,\"median_ns\":%llu,\"p99_ns\":%llu,\"budget_ns\":%llu,"
		"\"over_budget\":%zu,\"mean_ns\":%llu,\"sigma_ns\":%llu,\"this_ns\":%llu,"
		"\"outlier\":%s}",
		fr->count, (unsigned long long)ns(s, fr->median),
		(unsigned long long)ns(s, fr->p99), (unsigned long long)ns(s, fr->budget),
		fr->over_budget, (unsigned long long)ns(s, fr->mean),
		(unsigned long long)ns(s, fr->sigma), (unsigned long long)ns(s, fr->this_frame),
		fr->outlier ? "true" : "false");
	fputs(",\"top_window\":", b);
	json_funcs(b, s, &ft, ls->window, ls->nwindow < ntop ? ls->nwindow : ntop);
	if (lim->level == 0 && s->npaths) {
		/* [function, self ns, path...]: where each of the first ran most */
		fputs(",\"paths\":[", b);
		for (size_t i = 0; i < s->npaths; i++) {
			const struct summary_path *p = &s->paths[i];
			fprintf(b, "%s[%d,%llu", i ? "," : "", fidx(&ft, p->key),
				(unsigned long long)ns(s, p->self));
			for (size_t k = 0; k < p->n; k++)
				fprintf(b, ",%d", fidx(&ft, p->path[k]));
			fputc(']', b);
		}
		fputc(']', b);
	}
	if (lim->level < 2) {
		/* the outer frames recovered from the stack (outer.h), outermost first */
		static struct agent_outer outer; /* 8 KiB: not on the stack of a small thread */
		agent_outer_frames(syms, &s->trace->threads[s->thread], &outer);
		for (size_t i = 0; i < outer.n; i++)
			fprintf(b, "%s%d", i ? "," : ",\"outer\":[", fidx(&ft, outer.key[i]));
		if (outer.n)
			fputc(']', b);
	}
	fputs(",\"top_trace\":", b);
	size_t ntt = lim->ntt < ntop ? lim->ntt : ntop;
	json_funcs(b, s, &ft, ls->trace, ls->ntrace < ntt ? ls->ntrace : ntt);
	fputs(",\"chains\":[", b);
	/* Where chains were elided: [chain, position, frames left out] each. */
	char *elided = NULL;
	size_t elided_size = 0;
	FILE *e = open_memstream(&elided, &elided_size);
	if (!e) {
		fclose(b);
		free(body);
		return -ENOMEM;
	}
	size_t nel = 0;
	for (size_t i = 0; i < lim->nch; i++) {
		size_t at, gone;
		fputs(i ? "," : "", b);
		json_chain(b, s, &ft, &s->chains[i], lim, &at, &gone);
		if (gone)
			fprintf(e, "%s[%zu,%zu,%zu]", nel++ ? "," : "", i, at, gone);
	}
	if (fclose(e) != 0) {
		fclose(b);
		free(body);
		return -ENOMEM;
	}
	fputs("],\"contexts\":[", b);
	for (size_t i = 0; i < lim->nctx; i++) {
		const struct summary_context *c = &s->contexts[i];
		size_t from, n = shared_prefix(s, i, &from);
		fprintf(b, "%s{\"cost_ns\":%lld,", i ? "," : "", sns(s, c->cost));
		if (n)
			fprintf(b, "\"from\":[%zu,%zu],", from, n);
		fputs("\"path\":[", b);
		for (size_t j = n; j < c->n; j++)
			fprintf(b, "%s%d", j > n ? "," : "", fidx(&ft, c->key[j]));
		fputs("],\"self_ns\":", b);
		json_u64s(b, s, c->self + n, c->n - n);
		fputs(",\"base_ns\":", b);
		json_u64s(b, s, c->base + n, c->n - n);
		if (c->elided)
			fprintf(b, ",\"elided\":%zu,\"elided_at\":%zu", c->elided, c->at);
		fputc('}', b);
	}
	fputc(']', b);
	if (!s->base_len)
		fprintf(b, ",\"contexts_absent\":\"%s\"", no_baseline(s));
	fputs(",\"blocked_on\":[", b);
	for (size_t i = 0; i < nhops; i++) {
		const struct summary_hop *h = &s->hops[i];
		fprintf(b, "%s{\"thread\":", i ? "," : "");
		json_string(b, thread_name(s, h->thread), lim);
		fprintf(b,
			",\"blocked_ns\":%llu,\"object\":\"0x%x\",\"waiter\":%d,\"wait_ns\":%llu,"
			"\"still_waiting\":%s,\"woken_by\":",
			(unsigned long long)ns(s, h->blocked), h->object, fidx(&ft, h->waiter),
			(unsigned long long)ns(s, h->wait_end - h->wait_begin),
			h->still_waiting ? "true" : "false");
		if (h->waker >= 0)
			json_string(b, thread_name(s, h->waker), lim);
		else
			fputs("null", b);
		fputs(",\"top\":", b);
		json_funcs(b, s, &ft, ls->hop[i], ls->nhop[i] < ntop ? ls->nhop[i] : ntop);
		fputs(",\"chain\":", b);
		size_t at, gone;
		json_chain(b, s, &ft, &h->chain, lim, &at, &gone);
		if (gone)
			fprintf(b, ",\"chain_elided\":[%zu,%zu]", at, gone);
		fputc('}', b);
	}
	fputc(']', b);
	if (nel)
		fprintf(b, ",\"chains_elided\":[%s]", elided);
	free(elided);
	if (ntt < ls->ntrace)
		fprintf(b, ",\"top_trace_left_out\":%zu", ls->ntrace - ntt);
	if (lim->nctx < s->ncontexts)
		fprintf(b, ",\"contexts_left_out\":%zu", s->ncontexts - lim->nctx);
	if (lim->nch < s->nchains)
		fprintf(b, ",\"chains_left_out\":%zu", s->nchains - lim->nch);
	if (nhops < s->nhops)
		fprintf(b, ",\"blocked_on_left_out\":%zu", s->nhops - nhops);
	if (lim->level)
		fputs(",\"shortened\":true", b);
	fputs("}\n", b);
	int *mod = NULL; /* per module of the trace: its index in the JSON, or -1 */
	const struct rb_trace *t = s->trace;
	if (fclose(b) != 0 || ft.failed ||
	    !(mod = malloc((t->nmodules ? t->nmodules : 1) * sizeof(*mod)))) {
		free(body);
		free(ft.key);
		free(ft.slot);
		return -ENOMEM;
	}

	fprintf(out, "{\"schema\":\"%s\",\"version\":%d,\"reason\":", SUMMARY_SCHEMA,
		SUMMARY_VERSION);
	json_string(out, t->reason, lim);
	fprintf(out, ",\"detector\":");
	if (summary_detector(s))
		json_string(out, summary_detector(s), lim);
	else
		fputs("null", out);
	fputs(",\"thread\":", out);
	json_string(out, thread_name(s, s->thread), lim);
	/* The traced program: the trace's first module is the executable (the runtime
	 * lists the main program first, ringbuf/tracefile.h). A report names the app by it,
	 * and the pseudonym is per app (AppInsight section 6). */
	fputs(",\"app\":", out);
	if (t->nmodules) {
		char id[2 * RB_BUILD_ID_MAX + 1];
		agent_hex(t->modules[0].build_id, t->modules[0].build_id_len, id);
		const char *file = strrchr(t->modules[0].path, '/');
		fprintf(out, "{\"build_id\":\"%s\",\"name\":", id);
		json_string(out, file ? file + 1 : t->modules[0].path, lim);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	fprintf(out, ",\"trace\":{\"threads\":%u,\"records\":%llu,\"contexts\":%llu,\"ns\":%llu",
		t->nthreads, (unsigned long long)s->records, (unsigned long long)s->ncontexts_tree,
		(unsigned long long)ns(s, s->span));
	if (s->untimed) /* sampled time: how many records' times are estimates */
		fprintf(out, ",\"untimed\":%llu", (unsigned long long)s->untimed);
	if (s->untimed_measured)
		fprintf(out, ",\"untimed_measured\":%u", s->untimed_measured);
	if (t->point_ps) /* the trace point's measured cost: self_ns below hold the points */
		fprintf(out, ",\"point_ps\":%u", t->point_ps);
	if (t->timed_ps) /* a timed record's (a learning window's), and the two weighed */
		fprintf(out, ",\"timed_ps\":%u,\"record_ps\":%.0f", t->timed_ps, s->point_ps);
	fputc('}', out);
	/* Modules by index, in the trace's order; only their build-id and file name (never
	 * the folder). */
	for (uint32_t m = 0; m < t->nmodules; m++)
		mod[m] = -1;
	for (size_t i = 0; i < ft.n; i++) {
		uint64_t k = ft.key[i];
		int m = k == CCT_UNKNOWN || k == CCT_ROOT ? -1 : AGENT_KEY_MODULE(k);
		if (m >= 0 && (uint32_t)m < t->nmodules)
			mod[m] = 0;
	}
	int nmod = 0;
	fputs(",\"modules\":[", out);
	for (uint32_t m = 0; m < t->nmodules; m++) {
		if (mod[m] < 0)
			continue;
		mod[m] = nmod;
		char id[2 * RB_BUILD_ID_MAX + 1];
		agent_hex(t->modules[m].build_id, t->modules[m].build_id_len, id);
		const char *file = strrchr(t->modules[m].path, '/');
		fprintf(out, "%s[\"%s\",", nmod++ ? "," : "", id);
		json_string(out, file ? file + 1 : t->modules[m].path, lim);
		fputc(']', out);
	}
	fputs("],\"functions\":[", out);
	for (size_t i = 0; i < ft.n; i++) {
		char name[256] = "";
		uint64_t k = ft.key[i];
		bool pseudo = k == CCT_UNKNOWN || k == CCT_ROOT;
		int m = pseudo ? -1 : AGENT_KEY_MODULE(k);
		/* A name only when it says more than {build-id, offset} already does. */
		if (lim->level < 2 && (m < 0 || agent_symbols_ready(syms, m)))
			func_name(syms, k, name, sizeof(name));
		fprintf(out, "%s[%d,%llu,", i ? "," : "",
			m >= 0 && (uint32_t)m < t->nmodules ? mod[m] : -1,
			pseudo ? 0ull : (unsigned long long)AGENT_KEY_VADDR(k));
		json_string(out, name, lim);
		fputc(']', out);
	}
	fputc(']', out);
	fwrite(body, 1, size, out);
	free(body);
	free(mod);
	free(ft.key);
	free(ft.slot);
	return ferror(out) ? -EIO : 0;
}

/*
 * The summary is often the only thing that leaves the phone: it stays within
 * SUMMARY_JSON_MAX bytes for every trace. Deep call paths make the ranked contexts and the
 * chains the parts that grow (each at most SUMMARY_MAX_DEPTH frames), so the whole trace's
 * top list past its third entry is left out first, then the shortest chains but the three
 * longest, then the lowest-ranked contexts, then the chains but the longest (which is
 * always kept), each counted, until it fits. Only a hostile trace gets further (long names full of
 * escapes, a thousand modules named): level 1 keeps 3 entries per list and one hop of
 * "blocked on"; level 2 keeps the longest chain's outermost frame and its 3 innermost,
 * no lists, no function names, and strings cut to JSON_MIN_STRING bytes. That last form
 * is bounded: about 700 bytes of fixed members and numbers, 4 strings of at most 192
 * bytes, 4 chain links and their functions and modules of at most 100, 30 and 270
 * bytes: under 3 KiB. The test feeds it hostile traces to hold it to that.
 */
int summary_write_json(FILE *out, const struct summary *s, struct agent_symbols *syms)
{
	struct lists ls;
	int err = lists_of(s, syms, false, &ls);
	if (err)
		return err;
	struct jlimit lim = { s->ncontexts, s->nchains, ls.ntrace, 0 };
	for (;;) {
		char *buf = NULL;
		size_t size = 0;
		FILE *m = open_memstream(&buf, &size);
		if (!m) {
			err = -ENOMEM;
			break;
		}
		err = write_json(m, s, syms, &ls, &lim);
		if (fclose(m) != 0 && !err)
			err = -ENOMEM;
		bool last = lim.nctx == 0 && lim.nch <= 1 && lim.level == 2;
		if (!err && (size <= SUMMARY_JSON_MAX || last)) {
			fwrite(buf, 1, size, out);
			err = ferror(out) ? -EIO : 0;
		}
		free(buf);
		if (err || size <= SUMMARY_JSON_MAX || last)
			break;
		if (lim.ntt > JSON_TOP_TRACE_KEEP)
			lim.ntt--;
		else if (lim.nch > JSON_CHAINS_KEEP)
			lim.nch--;
		else if (lim.nctx)
			lim.nctx--;
		else if (lim.nch > 1)
			lim.nch--;
		else
			lim.level++;
	}
	lists_free(&ls);
	return err;
}

/* ---- text ---- */

/* A duration people read at a glance: "12.345 ms", "45.6 us", "780 ns", "2.003 s", in one
 * of a few rotating buffers, enough for every duration of one printf. */
static const char *human(const struct summary *s, uint64_t ticks)
{
	static char bufs[8][32];
	static unsigned next;
	char *buf = bufs[next++ % 8];
	size_t size = sizeof(bufs[0]);
	uint64_t v = ns(s, ticks);
	if (v >= 1000000000)
		snprintf(buf, size, "%.3f s", (double)v / 1e9);
	else if (v >= 1000000)
		snprintf(buf, size, "%.3f ms", (double)v / 1e6);
	else if (v >= 1000)
		snprintf(buf, size, "%.1f us", (double)v / 1e3);
	else
		snprintf(buf, size, "%llu ns", (unsigned long long)v);
	return buf;
}

#define H(ticks) human(s, (ticks))

/* Names from the trace reach the reader's terminal only escaped (agent/escape.h): a
 * function, thread or module name can carry any byte. Room for a symbol's 255 bytes at up
 * to four each. */
#define NAME_TEXT 1024

static const char *key_text(struct agent_symbols *syms, uint64_t key, char *buf, size_t size)
{
	char raw[256];
	func_name(syms, key, raw, sizeof(raw));
	return agent_escape(buf, size, raw);
}

static const char *thread_text(const struct summary *s, int i, char *buf, size_t size)
{
	return agent_escape(buf, size, thread_name(s, i));
}

/* 9936 as "9,936": elided counts read at a glance. */
static const char *grouped(uint64_t v, char *buf, size_t size)
{
	char d[32];
	int n = snprintf(d, sizeof(d), "%llu", (unsigned long long)v), o = 0;
	for (int i = 0; i < n && (size_t)o + 2 < size; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = d[i];
	}
	buf[o] = '\0';
	return buf;
}

/*
 * The root's line when the stack names where its time ran (outer.h, agent_outer_root): a
 * loop that runs throughout, entered before the ring's oldest record (an interpreter's
 * bytecode loop, an event loop), is otherwise "(outside any traced function)". NULL when
 * the stack does not tell.
 */
static const char *root_text(const struct summary *s, struct agent_symbols *syms,
			     const struct agent_outer *outer, char *buf, size_t size)
{
	uint64_t key = agent_outer_root_of(syms, outer, s->open_end, s->nopen, &s->root_calls);
	if (!key)
		return NULL;
	char name[NAME_TEXT];
	/* A ring that never wrapped holds the thread's tracing from its start: the function
	 * was entered before that (memcached's worker loop, before its jitt_trace_thread) */
	bool wrapped = s->trace->threads[s->thread].laps > 0;
	snprintf(buf, size, "%s [outside every traced call: entered before %s, named by the "
		 "stack at the freeze]", key_text(syms, key, name, sizeof(name)),
		 wrapped ? "the ring" : "tracing began");
	return buf;
}

/* A list of functions by self time; root (or NULL) names the root's line (root_text). */
static void text_funcs(FILE *out, const struct summary *s, struct agent_symbols *syms,
		       const struct summary_func *f, size_t n, uint64_t total, const char *root)
{
	char name[NAME_TEXT];
	if (!n) {
		fprintf(out, "    (no calls)\n");
		return;
	}
	fprintf(out, "    %12s %6s %9s %12s %12s  %s\n", "self", "self%", "calls", "blocked",
		"preempted", "function");
	for (size_t i = 0; i < n; i++) {
		if (f[i].key == CCT_ROOT && root)
			snprintf(name, sizeof(name), "%s", root);
		else
			key_text(syms, f[i].key, name, sizeof(name));
		fprintf(out, "    %12s %5.1f%% %9llu %12s %12s  %s%s%s\n", H(f[i].self),
			total ? 100.0 * (double)f[i].self / (double)total : 0.0,
			(unsigned long long)(f[i].calls + f[i].more),
			f[i].blocked ? H(f[i].blocked) : "-",
			f[i].preempted ? H(f[i].preempted) : "-", name,
			cut_text(f[i].truncated, f[i].running), guessed_text(s, f[i].key));
	}
}

/* A chain, one link a line, indented by depth; an elided middle is one line saying how
 * many calls it held, and the indent goes on from the kept links (at most
 * SUMMARY_MAX_DEPTH), so the text stays linear in the chain. */
static void text_chain(FILE *out, const struct summary *s, struct agent_symbols *syms,
		       const struct summary_chain *c, const char *indent)
{
	char name[NAME_TEXT], count[32];
	for (size_t i = 0; i < c->n; i++) {
		const struct summary_frame *f = &c->f[i];
		if (c->elided && i == c->at)
			fprintf(out, "%s%*s... %s calls elided ...\n", indent, (int)(2 * i), "",
				grouped(c->elided, count, sizeof(count)));
		key_text(syms, f->key, name, sizeof(name));
		char calls[40] = "";
		if (f->calls > 1)
			snprintf(calls, sizeof(calls), " in %u calls", f->calls);
		/* The chain's end: where the time went, unless what dominates that frame is
		 * its time preempted, which is not its code's doing. */
		bool preempted_most = f->preempted > f->self && f->preempted > f->blocked;
		fprintf(out, "%s%*s%s  (%s incl%s, %s self%s%s%s%s)%s%s%s\n", indent, (int)(2 * i),
			"", name, H(f->incl), calls, H(f->self), f->blocked ? ", blocked " : "",
			f->blocked ? H(f->blocked) : "", f->preempted ? ", preempted " : "",
			f->preempted ? H(f->preempted) : "", cut_text(f->truncated, f->running),
			i + 1 < c->n ? "" : guessed_text(s, f->key), /* the time's place */
			i + 1 < c->n	   ? ""
			: preempted_most ? "  <- preempted here: another task had its CPU"
					 : "  <- where the time went");
	}
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Without the switch records, what blocked time is rests on an assumption: say it. */
static void text_blocked_assumed(FILE *out, const struct summary *s)
{
	if (!blocked_is_asleep(s))
		fputs("blocked: the whole of every wrapped blocking call, assumed asleep (no switch "
		      "records say when the thread left its CPU)\n",
		      out);
}

/*
 * The rest of the window's line: how its time split into running, preempted and blocked,
 * where the thread ran, what blocked time is, and, when preemption took most of it, the
 * verdict that the code below is not the culprit (the frame was made slow by other
 * processes, not by code).
 */
static void text_window(FILE *out, const struct summary *s)
{
	const struct summary_sched *sc = &s->sched;
	uint64_t wlen = s->w1 - s->w0, running, preempted, blocked;
	window_split(s, &running, &preempted, &blocked);
	if (!wlen) {
		fputc('\n', out);
		return;
	}
	if (sc->source == SUMMARY_SCHED_NONE) {
		fprintf(out, ", %.0f%% of it blocked\n", pct(blocked, wlen));
		fprintf(out, "scheduling: not recorded (no perf ring, no schedstat samples): time "
			     "the thread was preempted counts as its functions' self time\n");
		text_blocked_assumed(out, s);
		return;
	}
	fprintf(out, ": running %s (%.0f%%), preempted %s (%.0f%%), blocked %s (%.0f%%)\n",
		H(running), pct(running, wlen), H(preempted), pct(preempted, wlen), H(blocked),
		pct(blocked, wlen));
	if (sc->source == SUMMARY_SCHED_PERF) {
		fprintf(out, "scheduling (perf context switches): ran longest on CPU %u (%s)",
			sc->main_cpu, H(sc->main_cpu_ticks));
		uint64_t on = sc->on_unknown;
		for (int c = 0; c < HAL_CPU_NCLASSES; c++)
			on += sc->on_class[c];
		if (sc->nclasses >= 2 && on) {
			for (int c = HAL_CPU_NCLASSES - 1; c >= 0; c--)
				fprintf(out, ", %s %.0f%%", hal_cpu_class_name((enum hal_cpu_class)c),
					pct(sc->on_class[c], on));
		}
		fprintf(out, "; %u migration%s", sc->migrations, sc->migrations == 1 ? "" : "s");
		if (sc->lost)
			fprintf(out, "; %llu switch records lost", (unsigned long long)sc->lost);
		fputc('\n', out);
	} else {
		fprintf(out, "scheduling (schedstat samples at frame boundaries): the frame's "
			     "preempted time only; the functions' self time below still holds it\n");
		text_blocked_assumed(out, s);
	}
	if (2 * preempted >= wlen)
		fprintf(out,
			"=> preempted for most of this %s: the thread was runnable but another task "
			"had its CPU%s. Its own code ran %s; look at what else runs there, and at "
			"the thread's priority and CPU affinity, before the functions below.\n",
			s->window_kind == SUMMARY_WINDOW_FRAME ? "frame" : "window",
			sc->source == SUMMARY_SCHED_PERF ? "" : " (schedstat)", H(running));
}

/* Sampled time (ringbuf/untimed.h): say how many records' times are estimates. */
void summary_write_called(FILE *out, uint64_t records, uint64_t calls)
{
	if (records)
		fprintf(out,
			"times: %llu calls counted, in %llu records (one in %d calls on average, "
			"where it ran): their length is their function's mean as the runtime "
			"measured it, an estimate (docs/trace-points.md, \"Counted calls\")\n",
			(unsigned long long)calls, (unsigned long long)records,
			(int)((calls + records / 2) / records));
}

void summary_write_untimed(FILE *out, uint64_t records, uint64_t untimed, uint64_t windows,
			   unsigned measured)
{
	if (!untimed)
		return;
	if (!windows)
		fprintf(out,
			"times: %.0f%% of records untimed (sampled time), with no two timed "
			"records around them to estimate their times from\n",
			pct(untimed, records));
	else if (!measured)
		fprintf(out,
			"times: %.0f%% of records untimed (sampled time), their times estimated "
			"from %llu timed windows (each within its window: docs/untimed.md)\n",
			pct(untimed, records), (unsigned long long)windows);
	else
		fprintf(out,
			"times: %.0f%% of records untimed (sampled time), their times estimated "
			"from %llu timed windows and the calls of %u functions as the runtime's "
			"learning windows measured them (each within its window: docs/untimed.md)\n",
			pct(untimed, records), (unsigned long long)windows, measured);
}

/* The ranked contexts, or, with no baseline to rank them against, one line saying so. */
static void text_contexts(FILE *out, const struct summary *s, struct agent_symbols *syms)
{
	char name[NAME_TEXT], count[32];
	if (!s->base_len) {
		fprintf(out, "\nwhat changed: nothing to compare against (%s), so no calling "
			     "contexts are ranked\n",
			no_baseline(s));
		return;
	}
	fprintf(out, "\nwhat changed against %s (hot calling contexts, differential):\n",
		s->base_frames ? "the normal frames, per frame" : "the trace before the window");
	if (!s->ncontexts)
		fprintf(out, "    (no calls)\n");
	for (size_t i = 0; i < s->ncontexts; i++) {
		const struct summary_context *c = &s->contexts[i];
		/* The path's frame that changed most (of those kept), and the path shortened
		 * to the last ones. */
		size_t hot = 0;
		for (size_t j = 1; j < c->n; j++)
			if ((int64_t)(c->self[j] - c->base[j]) >
			    (int64_t)(c->self[hot] - c->base[hot]))
				hot = j;
		fprintf(out, "  %zu. %s%s:", i + 1, c->cost < 0 ? "-" : "+",
			H(c->cost < 0 ? 0 - (uint64_t)c->cost : (uint64_t)c->cost));
		size_t from = c->n > 4 ? c->n - 4 : 0;
		if (from > hot)
			from = hot;
		fprintf(out, "%s", from || (c->elided && c->at == 0) ? " ..." : "");
		for (size_t j = from; j < c->n; j++) {
			if (c->elided && j == c->at && j > from)
				fprintf(out, " > (%s calls elided)",
					grouped(c->elided, count, sizeof(count)));
			key_text(syms, c->key[j], name, sizeof(name));
			fprintf(out, "%s %s%s", j > from ? " >" : "", name,
				j == hot && c->n > 1 ? "*" : "");
		}
		key_text(syms, c->key[hot], name, sizeof(name));
		fprintf(out, "\n       %s: %s self now, %s normally\n", name, H(c->self[hot]),
			H(c->base[hot]));
	}
}

/* Where the first functions ran most (summary.h, summary_path). */
static void text_paths(FILE *out, const struct summary *s, struct agent_symbols *syms)
{
	char name[NAME_TEXT];
	if (!s->npaths)
		return;
	fprintf(out,
		"\nwhere the first ran most (the calling context with most of its self time):\n");
	for (size_t i = 0; i < s->npaths; i++) {
		const struct summary_path *p = &s->paths[i];
		fprintf(out, "  %s: %s", H(p->self), p->elided ? "... > " : "");
		for (size_t k = 0; k < p->n; k++)
			fprintf(out, "%s%s", k ? " > " : "",
				key_text(syms, p->path[k], name, sizeof(name)));
		fputc('\n', out);
	}
}

/*
 * Where the ring does not reach: the window starts at the ring's oldest record, so the
 * moment began earlier, and the calls still running then are named from the thread's
 * stack (outer.h), outermost first.
 */
static void text_outer(FILE *out, const struct summary *s, const struct agent_outer *outer)
{
	if (s->ring_cut)
		fprintf(out,
			"\nthe ring holds only the last %s of this thread (it wrapped %u times): "
			"the moment began earlier, and time in callers whose entries it lost shows "
			"as outside any traced function (named below by the stack when it can "
			"be)\n",
			H(s->w1 - s->w0), s->trace->threads[s->thread].laps);
	if (!outer->n)
		return;
	fprintf(out,
		"%souter frames at the freeze, recovered from the thread's stack (not "
		"recorded: each is checked to call the next in the program's code when "
		"that is here):\n    ",
		s->ring_cut ? "" : "\n");
	for (size_t i = 0; i < outer->n; i++) {
		fputs(i ? " > " : "", out);
		agent_escape_fput(out, outer->name[i]);
	}
	fputc('\n', out);
}

int summary_write_text(FILE *out, const struct summary *s, struct agent_symbols *syms)
{
	char name[NAME_TEXT], thread[NAME_TEXT];
	struct lists ls;
	int err = lists_of(s, syms, s->points_out, &ls);
	if (err)
		return err;
	const struct summary_frames *fr = &s->frames;
	uint64_t wlen = s->w1 - s->w0;

	fputs("anomaly: ", out);
	agent_escape_fput(out, s->trace->reason[0] ? s->trace->reason : "(no reason given)");
	const char *detector = summary_detector(s);
	if (s->anomaly_marked)
		fprintf(out, " (detector: %s)\n", detector);
	else
		fprintf(out, " (%s%s%sno anomaly mark: the window ends with the trace)\n",
			detector ? "detector: " : "", detector ? detector : "", detector ? "; " : "");
	fprintf(out, "thread \"%s\": ", thread_text(s, s->thread, thread, sizeof(thread)));
	if (s->window_kind == SUMMARY_WINDOW_FRAME && fr->open_skipped)
		fprintf(out,
			"the last complete frame took %s (the one open at the freeze had only "
			"begun: %s, under the median frame)",
			H(wlen), H(fr->open_skipped));
	else if (s->window_kind == SUMMARY_WINDOW_FRAME)
		fprintf(out, "the slow frame took %s", H(wlen));
	else
		fprintf(out, "no frame marks; the window is the last %s", H(wlen));
	text_window(out, s);
	summary_write_untimed(out, s->records, s->untimed, s->untimed_windows,
			      s->untimed_measured);
	summary_write_called(out, s->called, s->called_calls);
	if (fr->count) {
		fprintf(out, "frames: %zu complete, median %s, p99 %s, %zu over the %s budget",
			fr->count, H(fr->median), H(fr->p99), fr->over_budget, H(fr->budget));
		if (fr->have_this)
			fprintf(out, "; this frame %s an outlier (mean %s + 3 sigma %s)",
				fr->outlier ? "is" : "is not", H(fr->mean), H(3 * fr->sigma));
		fputc('\n', out);
	}

	for (size_t i = 0; i < s->nhops; i++) {
		const struct summary_hop *h = &s->hops[i];
		key_text(syms, h->waiter, name, sizeof(name));
		char object[32];
		agent_wait_key_name(h->object, object, sizeof(object));
		fprintf(out, "\n%s \"%s\" was blocked %s of %s, longest on %s in %s (%s%s)\n",
			i ? "then" : "blocked on:", thread_text(s, h->thread, thread, sizeof(thread)),
			H(h->blocked), H(h->to - h->from), object, name,
			H(h->wait_end - h->wait_begin), h->still_waiting ? ", still waiting" : "");
		if (h->waker < 0) {
			fprintf(out, "  no wake-up of that object was recorded%s\n",
				h->still_waiting ? " yet" : "");
			continue;
		}
		fprintf(out, "  woken by \"%s\" after %s; meanwhile it ran:\n",
			thread_text(s, h->waker, thread, sizeof(thread)),
			H(h->wake_ts - h->wait_begin));
		text_funcs(out, s, syms, ls.hop[i], ls.nhop[i], h->wake_ts - h->wait_begin, NULL);
		if (h->chain.n) {
			fprintf(out, "  its longest chain:\n");
			text_chain(out, s, syms, &h->chain, "    ");
		}
	}

	/* The outer frames, read once: their list, and the root's name in the top lists. */
	static struct agent_outer outer; /* 8 KiB: not on the stack of a small thread */
	agent_outer_frames(syms, &s->trace->threads[s->thread], &outer);
	text_outer(out, s, &outer);
	fprintf(out, "\nlongest call chains in the window:\n");
	if (!s->nchains)
		fprintf(out, "    (no calls)\n");
	for (size_t i = 0; i < s->nchains; i++) {
		fprintf(out, "  %zu. %s\n", i + 1, H(s->chains[i].n ? s->chains[i].f[0].incl : 0));
		text_chain(out, s, syms, &s->chains[i], "     ");
	}

	if (s->points_out)
		fprintf(out,
			"\nself times below are without the trace points: %.2f ns each, as the "
			"program measured %s, %.0f%% of the thread's running time (a "
			"profile of the build without them ranks so)\n",
			s->point_ps / 1000.0,
			s->trace->timed_ps ? "them (its sampled and timed records, by their shares)"
					   : "it at its start",
			100 * s->points_share);
	else if (s->point_ps > 0)
		fprintf(out,
			"\nself times below hold the trace points: at %.2f ns each they are %.0f%% "
			"of the thread's running time, too much to take out (1%% off in their cost "
			"would move the rest by %.0f%%): helpers called often, and functions "
			"that make many calls, look heavier than they are\n",
			s->point_ps / 1000.0, 100 * s->points_share,
			s->points_share < 1 ? 100 * s->points_share / (1 - s->points_share) : 100.0);
	fprintf(out, "\ntop self time in the window:\n");
	char root[NAME_TEXT + 128];
	const char *rt = root_text(s, syms, &outer, root, sizeof(root));
	text_funcs(out, s, syms, ls.window, ls.nwindow, wlen, rt);
	text_paths(out, s, syms);

	text_contexts(out, s, syms);

	fprintf(out, "\ntop self time over the whole trace of \"%s\" (%s):\n",
		thread_text(s, s->thread, thread, sizeof(thread)), H(s->span));
	text_funcs(out, s, syms, ls.trace, ls.ntrace, s->span, rt);
	lists_free(&ls);
	return ferror(out) ? -EIO : 0;
}

void agent_wait_key_name(uint32_t key, char *buf, unsigned size)
{
	switch (key & 3) {
	case 1:
		snprintf(buf, size, "fd %u", key >> 2);
		break;
	case 2:
		snprintf(buf, size, "a sleep");
		break;
	default:
		snprintf(buf, size, "object 0x%x", key);
	}
}
