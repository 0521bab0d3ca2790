/* SPDX-License-Identifier: MIT */
/*
 * `jitt diff [-k N] [--alpha N] [--json] A B`: what changed between two runs, A before (or
 * normal) and B after (or slow), each a trace file or a summary from `jitt summarize
 * --json`. Calling contexts are matched (agent/analysis/diff.h: equal paths, then DiffProf's relaxed
 * path condition) and listed by the impact of their self-time change, largest first: a
 * context that got slower and one that is new come before anything unchanged. Summaries
 * (version 3) also compare their windows, running / preempted / blocked and the scheduling
 * source, with one line saying when the slow moment moved (code to preemption, ...), and
 * their top lists' functions, self time beside preempted time.
 */
#include "agent/cli/cli.h"
#include "agent/escape.h"
#include "agent/analysis/diff.h"
#include "uploader/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOWN_FRAMES 4 /* the last frames of a long path; the thread's name always shows */

#define SYNOPSIS "usage: jitt diff [-k N] [--alpha N] [--json] A B\n"

static const char details[] =
	"  A, B        trace files or summaries (jitt summarize --json): A before, B after\n"
	"  -k N        the N contexts of largest impact (default %d; 0: all of them)\n"
	"  --alpha N   match call paths up to N inserted, deleted or replaced frames apart\n"
	"              (default %d, at most %d; 0: equal paths only)\n"
	"  --json      JSON (schema jitt.diff, version 1) instead of tables\n"
	"exit status: 0 done, 1 a file could not be read, 2 bad arguments\n";

static void help(FILE *out)
{
	fprintf(out, details, CONFIG_AGENT_SUMMARY_K, CONFIG_AGENT_DIFF_ALPHA, DIFF_ALPHA_MAX);
}

static const struct option longopts[] = {
	{ "alpha", required_argument, NULL, 'a' },
	{ "json", no_argument, NULL, 'j' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt diff", SYNOPSIS, help, "k:", longopts };

/* A duration people read at a glance, signed when asked: "+1.250 ms", "-45.6 us", "0 ns". */
static const char *human(int64_t ns, int sign, char *buf, size_t size)
{
	uint64_t u = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	const char *s = !sign || ns == 0 ? "" : ns < 0 ? "-" : "+";
	if (u >= 1000000)
		snprintf(buf, size, "%s%.3f ms", s, (double)u / 1e6);
	else if (u >= 1000)
		snprintf(buf, size, "%s%.1f us", s, (double)u / 1e3);
	else
		snprintf(buf, size, "%s%llu ns", s, (unsigned long long)u);
	return buf;
}

static void print_path(const struct diff_side *s, uint32_t v, uint32_t *buf)
{
	uint32_t n = diff_path(s, v, buf, s->maxdepth + 1);
	agent_escape_fput(stdout, diff_name(s->names, buf[0]));
	uint32_t from = 1;
	if (n > 1 + SHOWN_FRAMES) {
		fputs(" > \u2026", stdout);
		from = n - SHOWN_FRAMES;
	}
	for (uint32_t i = from; i < n; i++) {
		fputs(" > ", stdout);
		agent_escape_fput(stdout, diff_name(s->names, buf[i]));
	}
}

static void json_path(const struct diff_side *s, uint32_t v, uint32_t *buf)
{
	uint32_t n = diff_path(s, v, buf, s->maxdepth + 1);
	putchar('[');
	for (uint32_t i = 0; i < n; i++) {
		const char *name = diff_name(s->names, buf[i]);
		if (i)
			putchar(',');
		agent_json_fput(stdout, name, strlen(name));
	}
	putchar(']');
}

static const char *kind_name(const struct diff_side *s)
{
	return s->kind == DIFF_TRACE ? "trace" : s->kind == DIFF_SUMMARY ? "summary" : "empty";
}

/* ---- the window: what the anomaly's thread was doing (summaries of version 3) ---- */

static const char *pct(uint64_t part, uint64_t whole, char *buf, size_t size)
{
	unsigned p = diff_permille(part, whole);
	snprintf(buf, size, "%u.%u%%", p / 10, p % 10);
	return buf;
}

/* What a state means to the person reading, in the verdict line. */
static const char *doing(enum diff_state st)
{
	return st == DIFF_PREEMPTED ? "preempted (waiting for a CPU)"
	       : st == DIFF_BLOCKED ? "blocked (waiting)"
				    : "running its own code";
}

static const char *slow_kind(enum diff_state st)
{
	return st == DIFF_PREEMPTED ? "preemption" : st == DIFF_BLOCKED ? "waiting" : "code";
}

static uint64_t state_ns(const struct diff_window *w, enum diff_state st)
{
	return st == DIFF_PREEMPTED ? w->preempted_ns
	       : st == DIFF_BLOCKED ? w->blocked_ns
				    : w->running_ns;
}

static uint64_t cpu_total(const struct diff_window *w)
{
	uint64_t t = 0;
	for (int c = 0; c < HAL_CPU_NCLASSES; c++)
		t += w->cpu_ns[c] > UINT64_MAX - t ? UINT64_MAX - t : w->cpu_ns[c];
	return t;
}

static void window_row(const char *what, const struct diff_window *a, const struct diff_window *b,
		       uint64_t va, uint64_t vb, bool share)
{
	char x[32], y[32], p[16], q[16], d[32];
	printf("  %-22s %12s %6s %12s %6s %12s\n", what, human((int64_t)va, 0, x, sizeof(x)),
	       share ? pct(va, a->ns, p, sizeof(p)) : "",
	       human((int64_t)vb, 0, y, sizeof(y)), share ? pct(vb, b->ns, q, sizeof(q)) : "",
	       human((int64_t)vb - (int64_t)va, 1, d, sizeof(d)));
}

static void print_window(const struct diff_side *a, const struct diff_side *b)
{
	const struct diff_window *wa = &a->window, *wb = &b->window;
	struct diff_sched_cmp c;
	char x[32], y[32];
	diff_sched_compare(wa, wb, &c);
	if (!c.known) {
		const char *side = !wa->known ? "A" : "B";
		const struct diff_side *s = !wa->known ? a : b;
		printf("\nwindow: not compared: %s %s (the split into running, preempted and "
		       "blocked is a summary's: jitt summarize --json)\n",
		       side, s->kind == DIFF_TRACE ? "is a trace" : "has no window");
		return;
	}
	printf("\nwindow of the anomaly's thread: running, preempted (runnable, off its CPU), "
	       "blocked\n  %-22s %12s %6s %12s %6s %12s\n",
	       "", "A", "", "B", "", "change");
	window_row("length", wa, wb, wa->ns, wb->ns, false);
	window_row("running", wa, wb, wa->running_ns, wb->running_ns, true);
	window_row("preempted", wa, wb, wa->preempted_ns, wb->preempted_ns, true);
	window_row("blocked", wa, wb, wa->blocked_ns, wb->blocked_ns, true);
	printf("  %-22s %19s %19s\n", "scheduling source", diff_sched_source_name(wa->source),
	       diff_sched_source_name(wb->source));
	if (wa->has_migrations || wb->has_migrations) {
		snprintf(x, sizeof(x), "%llu", (unsigned long long)wa->migrations);
		snprintf(y, sizeof(y), "%llu", (unsigned long long)wb->migrations);
		printf("  %-22s %19s %19s", "migrations", wa->has_migrations ? x : "-",
		       wb->has_migrations ? y : "-");
		if (wa->has_migrations && wb->has_migrations)
			printf(" %+12lld", (long long)wb->migrations - (long long)wa->migrations);
		putchar('\n');
	}
	if (wa->has_cpu || wb->has_cpu) {
		/* Big first: where the running time was spent, as shares of the time on a CPU
		 * whose class is known. */
		for (int k = HAL_CPU_NCLASSES - 1; k >= 0; k--) {
			if (!wa->cpu_ns[k] && !wb->cpu_ns[k])
				continue;
			char what[40];
			snprintf(what, sizeof(what), "running on %s", hal_cpu_class_name(k));
			printf("  %-22s %19s %19s\n", what,
			       wa->has_cpu ? pct(wa->cpu_ns[k], cpu_total(wa), x, sizeof(x)) : "-",
			       wb->has_cpu ? pct(wb->cpu_ns[k], cpu_total(wb), y, sizeof(y)) : "-");
		}
	}
	/* Apples and oranges first, so nobody reads the numbers above one to one. */
	if (c.a_none && c.b_none)
		printf("  note: neither summary has a scheduling source: preempted time is unknown "
		       "on both sides, inside running\n");
	else if (c.a_none || c.b_none)
		printf("  note: %s has no scheduling source (perf nor schedstat, or a summary "
		       "before version 3): its preempted time is unknown, inside running\n",
		       c.a_none ? "A" : "B");
	else if (!c.same_source)
		printf("  note: A's scheduling times are from %s, B's from %s: compare what the "
		       "thread was doing, not the nanoseconds one to one\n",
		       diff_sched_source_name(wa->source), diff_sched_source_name(wb->source));
	if (!c.verdict) {
		printf("  no verdict on preemption: a side without a scheduling source\n");
		return;
	}
	enum diff_state sa = c.a_state, sb = c.b_state;
	if (sa == sb)
		printf("=> both windows were mostly %s (A %s, B %s): the same kind of slow\n",
		       diff_state_name(sa), pct(state_ns(wa, sa), wa->ns, x, sizeof(x)),
		       pct(state_ns(wb, sb), wb->ns, y, sizeof(y)));
	else
		printf("=> B's slow moment is %s, not %s: B was %s %s of its window; A was %s %s "
		       "of its\n",
		       slow_kind(sb), slow_kind(sa), doing(sb),
		       pct(state_ns(wb, sb), wb->ns, y, sizeof(y)), doing(sa),
		       pct(state_ns(wa, sa), wa->ns, x, sizeof(x)));
	const struct diff_link *l = &b->where;
	if (l->known) {
		char s[32], p[32], bl[32];
		fputs("   B's longest chain ends in ", stdout);
		agent_escape_fput(stdout, diff_name(b->names, l->label));
		printf(": %s self, %s preempted, %s blocked", human((int64_t)l->self_ns, 0, s, sizeof(s)),
		       human((int64_t)l->preempted_ns, 0, p, sizeof(p)),
		       human((int64_t)l->blocked_ns, 0, bl, sizeof(bl)));
		if (l->calls)
			printf(" (in %llu calls)", (unsigned long long)l->calls);
		putchar('\n');
	}
}

/* Preempted time of a function, or "-" where the side cannot tell (not listed, or no
 * scheduling source: then it is inside self time). */
static const char *preempted_of(const struct diff_side *s, bool in, uint64_t ns, char *buf,
				size_t size)
{
	if (!in || !s->window.known || s->window.source == DIFF_SCHED_NONE)
		return "-";
	return human((int64_t)ns, 0, buf, size);
}

static void print_funcs(const struct diff_side *a, const struct diff_side *b,
			const struct diff_func_change *f, size_t n, size_t k)
{
	if (!n)
		return;
	printf("\nfunctions in the window (top lists), by change of self + preempted time\n");
	printf("%5s %12s %12s %12s %14s %12s %12s  %s\n", "rank", "self delta", "A self",
	       "B self", "preempt delta", "A preempted", "B preempted", "function");
	for (size_t i = 0; i < n && (!k || i < k); i++) {
		const struct diff_func_change *c = &f[i];
		char d[32], x[32], y[32], pd[32], px[32], py[32];
		const char *ppx = preempted_of(a, c->in_a, c->a.preempted_ns, px, sizeof(px));
		const char *ppy = preempted_of(b, c->in_b, c->b.preempted_ns, py, sizeof(py));
		printf("%5zu %12s %12s %12s %14s %12s %12s  ", i + 1,
		       human(c->self_delta, 1, d, sizeof(d)),
		       c->in_a ? human((int64_t)c->a.self_ns, 0, x, sizeof(x)) : "-",
		       c->in_b ? human((int64_t)c->b.self_ns, 0, y, sizeof(y)) : "-",
		       ppx[0] != '-' || ppy[0] != '-' ? human(c->preempted_delta, 1, pd, sizeof(pd))
						      : "-",
		       ppx, ppy);
		agent_escape_fput(stdout, diff_name(a->names, c->label));
		putchar('\n');
	}
}

static void json_window(const struct diff_window *w)
{
	static const char *const classes[HAL_CPU_NCLASSES] = { "little", "middle", "big" };
	if (!w->known) {
		fputs("null", stdout);
		return;
	}
	printf("{\"ns\":%llu,\"running_ns\":%llu,\"preempted_ns\":%llu,\"blocked_ns\":%llu,"
	       "\"source\":\"%s\"",
	       (unsigned long long)w->ns, (unsigned long long)w->running_ns,
	       (unsigned long long)w->preempted_ns, (unsigned long long)w->blocked_ns,
	       diff_sched_source_name(w->source));
	if (w->has_migrations)
		printf(",\"migrations\":%llu", (unsigned long long)w->migrations);
	if (w->has_cpu) {
		const char *sep = "";
		fputs(",\"cpu_ns\":{", stdout);
		for (int c = 0; c < HAL_CPU_NCLASSES; c++) {
			if (!w->cpu_ns[c])
				continue;
			printf("%s\"%s\":%llu", sep, classes[c], (unsigned long long)w->cpu_ns[c]);
			sep = ",";
		}
		putchar('}');
	}
	printf(",\"state\":\"%s\"}", diff_state_name(diff_window_state(w)));
}

static void json_sched(const struct diff_side *a, const struct diff_side *b)
{
	struct diff_sched_cmp c;
	diff_sched_compare(&a->window, &b->window, &c);
	fputs(",\"window\":{\"a\":", stdout);
	json_window(&a->window);
	fputs(",\"b\":", stdout);
	json_window(&b->window);
	printf(",\"same_source\":%s,\"changed\":", c.known && c.same_source ? "true" : "false");
	/* The verdict: null when it cannot be told (a side without a window or a source). */
	if (c.verdict)
		fputs(c.a_state != c.b_state ? "true" : "false", stdout);
	else
		fputs("null", stdout);
	putchar('}');
}

static void json_funcs(const struct diff_side *a, const struct diff_func_change *f, size_t n,
		       size_t k)
{
	fputs(",\"functions\":[", stdout);
	for (size_t i = 0; i < n && (!k || i < k); i++) {
		const struct diff_func_change *c = &f[i];
		const char *name = diff_name(a->names, c->label);
		printf("%s\n{\"rank\":%zu,\"function\":", i ? "," : "", i + 1);
		agent_json_fput(stdout, name, strlen(name));
		printf(",\"in_a\":%s,\"in_b\":%s,\"self_delta_ns\":%lld,\"a_self_ns\":%llu,"
		       "\"b_self_ns\":%llu,\"preempted_delta_ns\":%lld,\"a_preempted_ns\":%llu,"
		       "\"b_preempted_ns\":%llu}",
		       c->in_a ? "true" : "false", c->in_b ? "true" : "false",
		       (long long)c->self_delta, (unsigned long long)c->a.self_ns,
		       (unsigned long long)c->b.self_ns, (long long)c->preempted_delta,
		       (unsigned long long)c->a.preempted_ns, (unsigned long long)c->b.preempted_ns);
	}
	putchar(']');
}

static void print_text(const char *pa, const struct diff_side *a, const char *pb,
		       const struct diff_side *b, const struct diff_result *r, unsigned alpha,
		       size_t k, uint32_t *buf, const struct diff_func_change *f, size_t nf)
{
	fputs("diff of A = ", stdout);
	agent_escape_fput(stdout, pa);
	printf(" (%s, %u thread%s) and B = ", kind_name(a), a->threads, a->threads == 1 ? "" : "s");
	agent_escape_fput(stdout, pb);
	printf(" (%s, %u thread%s), alpha %u\n", kind_name(b), b->threads,
	       b->threads == 1 ? "" : "s", alpha);
	printf("  %zu matched (%zu exact, %zu relaxed), %zu gone, %zu new\n", r->exact + r->relaxed,
	       r->exact, r->relaxed, r->gone, r->added);
	if (a->kind == DIFF_SUMMARY || b->kind == DIFF_SUMMARY)
		printf("  (a summary holds its hottest contexts only: \"new\" or \"gone\" may mean "
		       "outside the other's list)\n");
	if (a->kind == DIFF_SUMMARY || b->kind == DIFF_SUMMARY)
		print_window(a, b);
	printf("\n%5s %12s %12s %12s  %-10s  %s\n", "rank", "self delta", "A self", "B self",
	       "status", "context");
	for (size_t i = 0; i < r->n && (!k || i < k); i++) {
		const struct diff_entry *e = &r->e[i];
		char d[32], x[32], y[32], st[16];
		snprintf(st, sizeof(st), "%s", diff_status_name(e->status));
		if (e->status == DIFF_RELAXED)
			snprintf(st, sizeof(st), "relaxed(%u)", e->distance);
		printf("%5zu %12s %12s %12s  %-10s  ", i + 1, human(e->delta_ns, 1, d, sizeof(d)),
		       e->a == DIFF_NONE ? "-" : human((int64_t)e->a_ns, 0, x, sizeof(x)),
		       e->b == DIFF_NONE ? "-" : human((int64_t)e->b_ns, 0, y, sizeof(y)), st);
		if (e->b != DIFF_NONE)
			print_path(b, e->b, buf);
		else
			print_path(a, e->a, buf);
		putchar('\n');
		if (e->status == DIFF_RELAXED) {
			printf("%*s  in A: ", 5 + 3 * 13 + 12, "");
			print_path(a, e->a, buf);
			putchar('\n');
		}
	}
	print_funcs(a, b, f, nf, k);
}

static void print_json(const char *pa, const struct diff_side *a, const char *pb,
		       const struct diff_side *b, const struct diff_result *r, unsigned alpha,
		       size_t k, uint32_t *buf, const struct diff_func_change *f, size_t nf)
{
	printf("{\"schema\":\"jitt.diff\",\"version\":1,\"alpha\":%u,\"a\":{\"file\":", alpha);
	agent_json_fput(stdout, pa, strlen(pa));
	printf(",\"kind\":\"%s\",\"threads\":%u},\"b\":{\"file\":", kind_name(a), a->threads);
	agent_json_fput(stdout, pb, strlen(pb));
	printf(",\"kind\":\"%s\",\"threads\":%u},", kind_name(b), b->threads);
	printf("\"counts\":{\"exact\":%zu,\"relaxed\":%zu,\"gone\":%zu,\"new\":%zu}",
	       r->exact, r->relaxed, r->gone, r->added);
	json_sched(a, b);
	fputs(",\"contexts\":[", stdout);
	for (size_t i = 0; i < r->n && (!k || i < k); i++) {
		const struct diff_entry *e = &r->e[i];
		printf("%s\n{\"rank\":%zu,\"status\":\"%s\",\"delta_ns\":%lld,\"a_ns\":%llu,"
		       "\"b_ns\":%llu",
		       i ? "," : "", i + 1, diff_status_name(e->status), (long long)e->delta_ns,
		       (unsigned long long)e->a_ns, (unsigned long long)e->b_ns);
		if (e->status == DIFF_RELAXED)
			printf(",\"distance\":%u", e->distance);
		printf(",\"path\":");
		if (e->b != DIFF_NONE)
			json_path(b, e->b, buf);
		else
			json_path(a, e->a, buf);
		if (e->status == DIFF_RELAXED) {
			printf(",\"a_path\":");
			json_path(a, e->a, buf);
		}
		putchar('}');
	}
	putchar(']');
	json_funcs(a, f, nf, k);
	printf("}\n");
}

int cmd_diff(int argc, char **argv)
{
	const char *path[2] = { NULL, NULL };
	int npath = 0, json = 0;
	long k = CONFIG_AGENT_SUMMARY_K, alpha = CONFIG_AGENT_DIFF_ALPHA;
	struct cli_args p;
	cli_args_init(&p, &command, argc, argv);
	for (int c; (c = cli_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case 'j':
			json = 1;
			break;
		case 'k':
			if (cli_parse_long(p.arg, 0, 1000000, &k) != 0)
				return cli_usage_error(&p, "-k takes 0 (all) to 1000000, not",
						       p.arg);
			break;
		case 'a':
			if (cli_parse_long(p.arg, 0, DIFF_ALPHA_MAX, &alpha) != 0)
				return cli_usage_error(&p, "--alpha takes 0 to 16, not", p.arg);
			break;
		case CLI_OPERAND:
			if (npath == 2)
				return cli_usage_error(&p, "give two files, A and B; also given",
						       p.arg);
			path[npath++] = p.arg;
			break;
		}
	}
	if (npath != 2)
		return cli_usage_error(&p, "give two files, A and B", NULL);

	struct diff_names names;
	struct diff_side side[2];
	struct diff_result r = { 0 };
	int status = 1, loaded = 0;
	if (diff_names_init(&names) != 0) {
		fprintf(stderr, "jitt diff: out of memory\n");
		return 1;
	}
	for (; loaded < 2; loaded++) {
		char err[256] = "";
		int e = diff_side_init(&side[loaded], &names);
		if (!e)
			e = diff_side_load(&side[loaded], path[loaded], err, sizeof(err));
		if (e) {
			fputs("jitt diff: ", stderr);
			agent_escape_fput(stderr, path[loaded]);
			fputs(": ", stderr);
			agent_escape_fput(stderr, err[0] ? err : strerror(-e));
			fputc('\n', stderr);
			diff_side_free(&side[loaded]);
			goto out;
		}
	}
	if (side[0].kind != side[1].kind)
		fprintf(stderr,
			"jitt diff: note: comparing a %s with a %s: their self times may cover "
			"different spans\n",
			kind_name(&side[0]), kind_name(&side[1]));
	uint32_t depth = side[0].maxdepth > side[1].maxdepth ? side[0].maxdepth : side[1].maxdepth;
	uint32_t *buf = malloc(((size_t)depth + 1) * sizeof(*buf));
	if (!buf || diff_match(&side[0], &side[1], (unsigned)alpha, &r) != 0) {
		free(buf);
		fprintf(stderr, "jitt diff: out of memory\n");
		goto out;
	}
	diff_rank(&r);
	struct diff_func_change *f = NULL;
	size_t nf = 0;
	if (diff_funcs(&side[0], &side[1], &f, &nf) != 0) {
		free(buf);
		fprintf(stderr, "jitt diff: out of memory\n");
		goto out;
	}
	if (json)
		print_json(path[0], &side[0], path[1], &side[1], &r, (unsigned)alpha, (size_t)k,
			   buf, f, nf);
	else
		print_text(path[0], &side[0], path[1], &side[1], &r, (unsigned)alpha, (size_t)k,
			   buf, f, nf);
	free(f);
	free(buf);
	status = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
	if (status)
		fprintf(stderr, "jitt diff: writing the output failed\n");
out:
	diff_result_free(&r);
	while (loaded-- > 0)
		diff_side_free(&side[loaded]);
	diff_names_free(&names);
	return status;
}
