/* SPDX-License-Identifier: MIT */
#include "agent/analysis/summary_out.h"
#include "agent/marks.h"
#include "hal/timer.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t ns(const struct summary *s, uint64_t ticks)
{
	return hal_ticks_to_ns(ticks, s->trace->timer_hz);
}

static const char *thread_name(const struct summary *s, int i)
{
	const struct rb_file_thread *th = &s->trace->threads[i];
	return th->name[0] ? th->name : "(unnamed)";
}

/* ---- JSON ---- */

static void json_string(FILE *out, const char *v)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f) /* also keeps the output plain ASCII */
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

/* The functions a summary names, each once; the JSON refers to them by index. */
struct ftable {
	uint64_t *key;
	size_t n, cap;
};

static int fidx(struct ftable *f, uint64_t key)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->key[i] == key)
			return (int)i;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		uint64_t *k = realloc(f->key, cap * sizeof(*k));
		if (!k)
			return -1;
		f->key = k;
		f->cap = cap;
	}
	f->key[f->n] = key;
	return (int)f->n++;
}

static void json_funcs(FILE *out, const struct summary *s, struct ftable *ft,
		       const struct summary_func *f, size_t n)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s[%d,%llu,%llu,%llu,%d]", i ? "," : "", fidx(ft, f[i].key),
			(unsigned long long)ns(s, f[i].self), (unsigned long long)f[i].calls,
			(unsigned long long)ns(s, f[i].blocked), f[i].truncated);
	fputc(']', out);
}

static void json_chain(FILE *out, const struct summary *s, struct ftable *ft,
		       const struct summary_chain *c)
{
	fputc('[', out);
	for (size_t i = 0; i < c->n; i++) {
		fprintf(out, "%s[%d,%llu,%llu,%llu,%d", i ? "," : "", fidx(ft, c->f[i].key),
			(unsigned long long)ns(s, c->f[i].incl),
			(unsigned long long)ns(s, c->f[i].self),
			(unsigned long long)ns(s, c->f[i].blocked), c->f[i].truncated);
		if (c->f[i].calls > 1)
			fprintf(out, ",%u", c->f[i].calls);
		fputc(']', out);
	}
	fputc(']', out);
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

/* The functions table last in the writing, first in the file: the body is written to a
 * memory stream, then the header and the table, then the body. Only the first ncontexts
 * ranked contexts and nchains chains are written. */
static int write_json(FILE *out, const struct summary *s, struct agent_symbols *syms,
		      size_t ncontexts, size_t nchains)
{
	char *body = NULL;
	size_t size = 0;
	FILE *b = open_memstream(&body, &size);
	if (!b)
		return -ENOMEM;
	struct ftable ft = { 0 };
	const struct summary_frames *fr = &s->frames;
	fprintf(b,
		",\"window\":{\"kind\":\"%s\",\"ns\":%llu,\"blocked_ns\":%llu,\"anomaly_marked\":%"
		"s}",
		s->window_kind == SUMMARY_WINDOW_FRAME ? "frame" : "span",
		(unsigned long long)ns(s, s->w1 - s->w0),
		(unsigned long long)ns(s, s->window_blocked), s->anomaly_marked ? "true" : "false");
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
	json_funcs(b, s, &ft, s->top_window, s->ntop_window);
	fputs(",\"top_trace\":", b);
	json_funcs(b, s, &ft, s->top_trace, s->ntop_trace);
	fputs(",\"chains\":[", b);
	for (size_t i = 0; i < nchains; i++) {
		fputs(i ? "," : "", b);
		json_chain(b, s, &ft, &s->chains[i]);
	}
	fputs("],\"contexts\":[", b);
	for (size_t i = 0; i < ncontexts; i++) {
		const struct summary_context *c = &s->contexts[i];
		fprintf(b, "%s{\"cost_ns\":%lld,\"path\":[", i ? "," : "", sns(s, c->cost));
		for (size_t j = 0; j < c->n; j++)
			fprintf(b, "%s%d", j ? "," : "", fidx(&ft, c->key[j]));
		fputs("],\"self_ns\":", b);
		json_u64s(b, s, c->self, c->n);
		fputs(",\"base_ns\":", b);
		json_u64s(b, s, c->base, c->n);
		fputc('}', b);
	}
	fputs("],\"blocked_on\":[", b);
	for (size_t i = 0; i < s->nhops; i++) {
		const struct summary_hop *h = &s->hops[i];
		fprintf(b, "%s{\"thread\":", i ? "," : "");
		json_string(b, thread_name(s, h->thread));
		fprintf(b,
			",\"blocked_ns\":%llu,\"object\":\"0x%x\",\"waiter\":%d,\"wait_ns\":%llu,"
			"\"still_waiting\":%s,\"woken_by\":",
			(unsigned long long)ns(s, h->blocked), h->object, fidx(&ft, h->waiter),
			(unsigned long long)ns(s, h->wait_end - h->wait_begin),
			h->still_waiting ? "true" : "false");
		if (h->waker >= 0)
			json_string(b, thread_name(s, h->waker));
		else
			fputs("null", b);
		fputs(",\"top\":", b);
		json_funcs(b, s, &ft, h->top, h->ntop);
		fputs(",\"chain\":", b);
		json_chain(b, s, &ft, &h->chain);
		fputc('}', b);
	}
	fputc(']', b);
	if (ncontexts < s->ncontexts)
		fprintf(b, ",\"contexts_left_out\":%zu", s->ncontexts - ncontexts);
	if (nchains < s->nchains)
		fprintf(b, ",\"chains_left_out\":%zu", s->nchains - nchains);
	fputs("}\n", b);
	if (fclose(b) != 0) {
		free(body);
		free(ft.key);
		return -ENOMEM;
	}

	const struct rb_trace *t = s->trace;
	fprintf(out, "{\"schema\":\"%s\",\"version\":%d,\"reason\":", SUMMARY_SCHEMA,
		SUMMARY_VERSION);
	json_string(out, t->reason);
	fprintf(out, ",\"detector\":");
	if (s->anomaly_marked)
		json_string(out, agent_detector_name(s->anomaly_arg));
	else
		fputs("null", out);
	fputs(",\"thread\":", out);
	json_string(out, thread_name(s, s->thread));
	fprintf(out, ",\"trace\":{\"threads\":%u,\"records\":%llu,\"contexts\":%llu,\"ns\":%llu}",
		t->nthreads, (unsigned long long)s->records, (unsigned long long)s->ncontexts_tree,
		(unsigned long long)ns(s, s->span));
	/* Modules by index; only their build-id and file name (never the folder). */
	fputs(",\"modules\":[", out);
	for (uint32_t m = 0; m < t->nmodules; m++) {
		char id[2 * RB_BUILD_ID_MAX + 1];
		agent_hex(t->modules[m].build_id, t->modules[m].build_id_len, id);
		const char *file = strrchr(t->modules[m].path, '/');
		fprintf(out, "%s[\"%s\",", m ? "," : "", id);
		json_string(out, file ? file + 1 : t->modules[m].path);
		fputc(']', out);
	}
	fputs("],\"functions\":[", out);
	for (size_t i = 0; i < ft.n; i++) {
		char name[256] = "";
		uint64_t k = ft.key[i];
		bool pseudo = k == CCT_UNKNOWN || k == CCT_ROOT;
		int m = pseudo ? -1 : AGENT_KEY_MODULE(k);
		/* A name only when it says more than {build-id, offset} already does. */
		if (m < 0 || agent_symbols_ready(syms, m))
			agent_key_name(syms, k, name, sizeof(name));
		fprintf(out, "%s[%d,%llu,", i ? "," : "", m,
			pseudo ? 0ull : (unsigned long long)AGENT_KEY_VADDR(k));
		json_string(out, name);
		fputc(']', out);
	}
	fputc(']', out);
	fwrite(body, 1, size, out);
	free(body);
	free(ft.key);
	return ferror(out) ? -EIO : 0;
}

/*
 * The summary is often the only thing that leaves the phone: it stays within
 * SUMMARY_JSON_MAX bytes. Deep call paths make the ranked contexts and the chains the
 * parts that grow, so the lowest-ranked contexts are left out first, then the shortest
 * chains (the longest is always kept), each counted, until it fits.
 */
int summary_write_json(FILE *out, const struct summary *s, struct agent_symbols *syms)
{
	size_t nctx = s->ncontexts, nch = s->nchains;
	for (;;) {
		char *buf = NULL;
		size_t size = 0;
		FILE *m = open_memstream(&buf, &size);
		if (!m)
			return -ENOMEM;
		int err = write_json(m, s, syms, nctx, nch);
		if (fclose(m) != 0 && !err)
			err = -ENOMEM;
		bool last = nctx == 0 && nch <= 1;
		if (!err && (size <= SUMMARY_JSON_MAX || last)) {
			fwrite(buf, 1, size, out);
			err = ferror(out) ? -EIO : 0;
		}
		free(buf);
		if (err || size <= SUMMARY_JSON_MAX || last)
			return err;
		if (nctx)
			nctx--;
		else
			nch--;
	}
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

static void text_funcs(FILE *out, const struct summary *s, struct agent_symbols *syms,
		       const struct summary_func *f, size_t n, uint64_t total)
{
	char name[256];
	if (!n) {
		fprintf(out, "    (no calls)\n");
		return;
	}
	fprintf(out, "    %12s %6s %9s %12s  %s\n", "self", "self%", "calls", "blocked",
		"function");
	for (size_t i = 0; i < n; i++) {
		agent_key_name(syms, f[i].key, name, sizeof(name));
		fprintf(out, "    %12s %5.1f%% %9llu %12s  %s%s\n", H(f[i].self),
			total ? 100.0 * (double)f[i].self / (double)total : 0.0,
			(unsigned long long)f[i].calls, f[i].blocked ? H(f[i].blocked) : "-", name,
			f[i].truncated ? " [cut by the ring]" : "");
	}
}

static void text_chain(FILE *out, const struct summary *s, struct agent_symbols *syms,
		       const struct summary_chain *c, const char *indent)
{
	char name[256];
	for (size_t i = 0; i < c->n; i++) {
		const struct summary_frame *f = &c->f[i];
		agent_key_name(syms, f->key, name, sizeof(name));
		char calls[40] = "";
		if (f->calls > 1)
			snprintf(calls, sizeof(calls), " in %u calls", f->calls);
		fprintf(out, "%s%*s%s  (%s incl%s, %s self%s%s)%s%s\n", indent, (int)(2 * i), "",
			name, H(f->incl), calls, H(f->self), f->blocked ? ", blocked " : "",
			f->blocked ? H(f->blocked) : "",
			f->running	  ? " [still running when frozen]"
			: f->truncated ? " [cut by the ring]"
				       : "",
			i + 1 == c->n ? "  <- where the time went" : "");
	}
}

int summary_write_text(FILE *out, const struct summary *s, struct agent_symbols *syms)
{
	char name[256];
	const struct summary_frames *fr = &s->frames;
	uint64_t wlen = s->w1 - s->w0;

	fprintf(out, "anomaly: %s", s->trace->reason[0] ? s->trace->reason : "(no reason given)");
	if (s->anomaly_marked)
		fprintf(out, " (detector: %s)\n", agent_detector_name(s->anomaly_arg));
	else
		fprintf(out, " (no anomaly mark: the window ends with the trace)\n");
	fprintf(out, "thread \"%s\": ", thread_name(s, s->thread));
	if (s->window_kind == SUMMARY_WINDOW_FRAME)
		fprintf(out, "the slow frame took %s", H(wlen));
	else
		fprintf(out, "no frame marks; the window is the last %s", H(wlen));
	if (wlen)
		fprintf(out, ", %.0f%% of it blocked",
			100.0 * (double)s->window_blocked / (double)wlen);
	fputc('\n', out);
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
		agent_key_name(syms, h->waiter, name, sizeof(name));
		char object[32];
		agent_wait_key_name(h->object, object, sizeof(object));
		fprintf(out, "\n%s \"%s\" was blocked %s of %s, longest on %s in %s (%s%s)\n",
			i ? "then" : "blocked on:", thread_name(s, h->thread), H(h->blocked),
			H(h->to - h->from), object, name, H(h->wait_end - h->wait_begin),
			h->still_waiting ? ", still waiting" : "");
		if (h->waker < 0) {
			fprintf(out, "  no wake-up of that object was recorded%s\n",
				h->still_waiting ? " yet" : "");
			continue;
		}
		fprintf(out, "  woken by \"%s\" after %s; meanwhile it ran:\n",
			thread_name(s, h->waker), H(h->wake_ts - h->wait_begin));
		text_funcs(out, s, syms, h->top, h->ntop, h->wake_ts - h->wait_begin);
		if (h->chain.n) {
			fprintf(out, "  its longest chain:\n");
			text_chain(out, s, syms, &h->chain, "    ");
		}
	}

	fprintf(out, "\nlongest call chains in the window:\n");
	if (!s->nchains)
		fprintf(out, "    (no calls)\n");
	for (size_t i = 0; i < s->nchains; i++) {
		fprintf(out, "  %zu. %s\n", i + 1, H(s->chains[i].n ? s->chains[i].f[0].incl : 0));
		text_chain(out, s, syms, &s->chains[i], "     ");
	}

	fprintf(out, "\ntop self time in the window:\n");
	text_funcs(out, s, syms, s->top_window, s->ntop_window, wlen);

	fprintf(out, "\nwhat changed against %s (hot calling contexts, differential):\n",
		s->base_frames ? "the normal frames, per frame" : "the trace before the window");
	if (!s->ncontexts)
		fprintf(out, "    (no calls)\n");
	for (size_t i = 0; i < s->ncontexts; i++) {
		const struct summary_context *c = &s->contexts[i];
		/* The path's frame that changed most, and the path shortened to the last ones. */
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
		fprintf(out, "%s", from ? " ..." : "");
		for (size_t j = from; j < c->n; j++) {
			agent_key_name(syms, c->key[j], name, sizeof(name));
			fprintf(out, "%s %s%s", j > from ? " >" : "", name,
				j == hot && c->n > 1 ? "*" : "");
		}
		agent_key_name(syms, c->key[hot], name, sizeof(name));
		fprintf(out, "\n       %s: %s self now, %s normally\n", name, H(c->self[hot]),
			H(c->base[hot]));
	}

	fprintf(out, "\ntop self time over the whole trace of \"%s\" (%s):\n",
		thread_name(s, s->thread), H(s->span));
	text_funcs(out, s, syms, s->top_trace, s->ntop_trace, s->span);
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
