/* SPDX-License-Identifier: MIT */
/*
 * `jitt exclude TRACE... [--budget PCT] [--cost NS | --ratio R] [--keep N] [--protect PCT]
 * [--min-us US] [--min-calls N] [--off-cost NS] [--code PLAIN [--keep-loops]] [-o FILE] [-v]`:
 * the functions whose trace points cost the most for the time they account for, as GCC's
 * -finstrument-functions-exclude-function-list= options, and the saving the cost model
 * predicts (agent/analysis/exclude.h, docs/exclude.md). The line "predicted: ..." is for
 * scripts: its form is documented there and stays. FILE is written under a
 * temporary name and renamed when whole, so a build never picks up half a list; never
 * over one of the traces, nor through a symbolic link (agent/cli/cli_out.c).
 */
#include "agent/cli/cli.h"
#include "agent/analysis/exclude.h"
#include "agent/analysis/symbols.h"
#include "agent/escape.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHOWN 20 /* excluded functions listed without -v */

#define SYNOPSIS                                                                            \
	"usage: jitt exclude TRACE... [--budget PCT] [--cost NS | --ratio R] [--keep N]\n" \
	"                    [--protect PCT] [--min-us US] [--min-calls N] [--off-cost NS]\n"  \
	"                    [--code PLAIN... [--keep-loops]] [-o FILE] [-v]\n"
#define PROTECT 5 /* % of the running time: what a profile puts on top (docs/exclude.md) */
#define MIN_US	1 /* calls this long or longer stay traced (exclude.h, docs/exclude.md) */

static const char details[] =
	"  TRACE          trace files of one program (more traces: more of its code seen)\n"
	"  --budget PCT   the trace points' cost to aim at, in %% of the time the program\n"
	"                 takes without them (default 10: 1.10x)\n"
	"  --cost NS      one trace point's cost on the device, in ns (default: estimated\n"
	"                 from the traces)\n"
	"  --ratio R      or: the traced build's CPU time over the plain build's, measured\n"
	"                 on this workload; the cost is then what fits it\n"
	"  --keep N       never exclude the N functions of most self time (trace points\n"
	"                 taken out), but those whose trace points cost more (default %d)\n"
	"  --protect PCT  never exclude a function of PCT %% of the running time or more,\n"
	"                 whatever --keep is (default %d; 0: none)\n"
	"  --min-us US    exclude only functions whose calls last under US microseconds\n"
	"                 on average (default %d; 0: any)\n"
	"  --min-calls N  exclude only functions called N times or more (default 100)\n"
	"  --off-cost NS  one trace point's cost when the thread is not traced, for the\n"
	"                 prediction (default: 5%% of the cost)\n"
	"  --code PLAIN   the program's build without trace points (or a library of it):\n"
	"                 its functions that hold a loop are excluded only after every\n"
	"                 loop-free one (read with $OBJDUMP, else objdump; repeatable)\n"
	"  --keep-loops   with --code: never exclude a function that holds a loop\n"
	"  -o FILE        write the list as GCC options, for `gcc @FILE` (also --output)\n"
	"  -v             show every excluded function (default: the first %d; also\n"
	"                 --verbose)\n"
	"exit status: 0 done, 1 a file could not be read or written, 2 bad arguments\n";

static void help(FILE *out)
{
	fprintf(out, details, CONFIG_AGENT_SUMMARY_K, PROTECT, MIN_US, SHOWN);
}

static const struct option longopts[] = {
	{ "budget", required_argument, NULL, 'b' },
	{ "cost", required_argument, NULL, 'c' },
	{ "keep", required_argument, NULL, 'k' },
	{ "min-calls", required_argument, NULL, 'm' },
	{ "protect", required_argument, NULL, 'p' },
	{ "min-us", required_argument, NULL, 'u' },
	{ "off-cost", required_argument, NULL, 'f' },
	{ "ratio", required_argument, NULL, 'r' },
	{ "output", required_argument, NULL, 'o' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "code", required_argument, NULL, 'C' },
	{ "keep-loops", no_argument, NULL, 'K' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt exclude", SYNOPSIS, help, "o:v", longopts };

static int real(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v) || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A duration people read at a glance: "1.250 ms", "45.6 us", "12.3 ns". */
static const char *human(double ns, char *buf, size_t size)
{
	if (ns >= 1e6)
		snprintf(buf, size, "%.3f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, size, "%.1f us", ns / 1e3);
	else
		snprintf(buf, size, "%.1f ns", ns);
	return buf;
}

static const char *name(const struct exclude_set *s, uint32_t i, char *buf, size_t size)
{
	return agent_escape(buf, size, s->f[i].name);
}

static int by_after(const void *a, const void *b, const struct exclude_set *s, bool after)
{
	const struct exclude_func *x = &s->f[*(const uint32_t *)a],
				  *y = &s->f[*(const uint32_t *)b];
	double u = after ? x->after_ns : x->plain_ns, v = after ? y->after_ns : y->plain_ns;
	if (u != v)
		return u > v ? -1 : 1;
	return strcmp(x->name, y->name);
}

static const struct exclude_set *sorting;
static int by_plain(const void *a, const void *b)
{
	return by_after(a, b, sorting, false);
}
static int by_self_after(const void *a, const void *b)
{
	return by_after(a, b, sorting, true);
}

/* The time outside every call seen whole, when the stack names where it ran (an
 * interpreter's bytecode loop, entered before the ring: exclude_set.outer_root): a row of
 * the top as `jitt summarize` names it, ranked by that time (the same with the list: it is
 * never excluded). outside_rank: its place among ranked[n], ordered by plain time (or by
 * traced time with the list, after). */
static unsigned outside_rank(const struct exclude_set *s, const uint32_t *ranked, size_t n,
			     double outside_ns, bool after)
{
	unsigned r = 0;
	while (r < n && (after ? s->f[ranked[r]].after_ns : s->f[ranked[r]].plain_ns) >= outside_ns)
		r++;
	return r;
}

static void print_outside(const struct exclude_set *s, double ns, unsigned i, unsigned rank)
{
	char a[32], c[16], nm[256];
	snprintf(c, sizeof(c), "#%u", rank + 1);
	printf("  %2u. %12s -> %12s %-4s %s [outside every traced call: entered before the "
	       "ring, named by the stack at the freeze]\n",
	       i + 1, human(ns, a, sizeof(a)), a, c, agent_escape(nm, sizeof(nm), s->outer_root));
}

/* The top by self time without the trace points (what a profile of the plain build
 * ranks first), and the traced self time a summary of the build with the list would show
 * for each, with its rank there: whether the summary would still name them first. */
static int print_top(const struct exclude_set *s, const struct exclude_result *r, unsigned k)
{
	uint32_t *now = malloc((s->n ? s->n : 1) * sizeof(*now));
	uint32_t *after = malloc((s->n ? s->n : 1) * sizeof(*after));
	if (!now || !after) {
		free(now);
		free(after);
		return -ENOMEM;
	}
	size_t n = 0, na = 0; /* traced; traced and not excluded */
	for (size_t i = 0; i < s->n; i++) {
		if (!(s->f[i].flags & EXCLUDE_TRACED))
			continue;
		now[n++] = (uint32_t)i;
		if (!(s->f[i].flags & EXCLUDE_EXCLUDED))
			after[na++] = (uint32_t)i;
	}
	sorting = s;
	qsort(now, n, sizeof(*now), by_plain);
	qsort(after, na, sizeof(*after), by_self_after);
	/* The outside row takes a place of the k when its time ranks it there. */
	bool outside = s->outer_root[0] && r->outside_ns > 0;
	unsigned at = outside ? outside_rank(s, now, n, r->outside_ns, false) : ~0u;
	unsigned at_after = outside ? outside_rank(s, after, na, r->outside_ns, true) : ~0u;
	if (at >= k)
		outside = false;
	unsigned kf = k - outside; /* functions shown */
	if (kf > n)
		kf = (unsigned)n;
	unsigned ka = kf < na ? kf : (unsigned)na;
	char a[32], b[32], c[16], nm[256];
	printf("\ntop %u self time without the trace points (as a profile of the plain build "
	       "ranks it) -> traced self time a summary would show with the list (its rank "
	       "there):\n",
	       kf + outside);
	for (unsigned i = 0, row = 0; i < kf; i++, row++) {
		if (outside && i == at)
			print_outside(s, r->outside_ns, row++, at_after);
		const struct exclude_func *f = &s->f[now[i]];
		unsigned rank = 0;
		while (rank < ka && after[rank] != now[i])
			rank++;
		rank += outside && rank >= at_after; /* the outside row's place in the summary */
		if (f->flags & EXCLUDE_EXCLUDED)
			snprintf(b, sizeof(b), "excluded");
		else
			human(f->after_ns, b, sizeof(b));
		snprintf(c, sizeof(c), "#%u", rank + 1);
		printf("  %2u. %12s -> %12s %-4s %s\n", row + 1, human(f->plain_ns, a, sizeof(a)),
		       b, rank < ka + outside ? c : "", name(s, now[i], nm, sizeof(nm)));
	}
	if (outside && at == kf)
		print_outside(s, r->outside_ns, kf, at_after);
	for (unsigned i = 0; i < ka; i++) {
		unsigned j = 0;
		while (j < kf && now[j] != after[i])
			j++;
		if (j == kf)
			printf("  new: %12s -> %12s #%-3u %s\n",
			       human(s->f[after[i]].plain_ns, a, sizeof(a)),
			       human(s->f[after[i]].after_ns, b, sizeof(b)),
			       i + 1 + (outside && i >= at_after), name(s, after[i], nm, sizeof(nm)));
	}
	free(now);
	free(after);
	return 0;
}

/* One function's row: calls, self and inclusive time per call without the trace points,
 * then `what` (a saving, or what keeping it costs), and the function as `fmt` shows its
 * name (one %s). */
static void print_row(const struct exclude_set *s, uint32_t i, const char *what,
		      const char *fmt)
{
	const struct exclude_func *f = &s->f[i];
	char a[32], b[32], nm[256];
	if (f->flags & EXCLUDE_TRACED)
		printf("%12llu %10s %10s %16s  ", (unsigned long long)f->calls,
		       human(exclude_self_per_call(f), a, sizeof(a)),
		       human(exclude_incl_per_call(f), b, sizeof(b)), what);
	else
		printf("%12d %10s %10s %16s  ", 0, "", "", "");
	printf(fmt, name(s, i, nm, sizeof(nm)));
	putchar('\n');
}

/* The trace points of `calls`, 2C a call, in ms and % of W. */
static const char *cost(const struct exclude_result *r, uint64_t calls, char *buf, size_t size)
{
	char a[32];
	double ns = 2 * r->cost_ns * (double)calls;
	snprintf(buf, size, "%s %4.1f%%", human(ns, a, sizeof(a)), 100 * ns / r->work_ns);
	return buf;
}

static const char column_names[] = "       calls  self/call  incl/call";

static void print_excluded(const struct exclude_set *s, const struct exclude_result *r,
			   bool verbose)
{
	char c[48];
	printf("\nexcluded, least self time per call first (times without the trace points; "
	       "saving: 2C a call, in %% of the time without them):\n%s %16s  %s\n",
	       column_names, "saving", "function");
	size_t shown = verbose || r->nlist <= SHOWN + 2 ? r->nlist : SHOWN;
	for (size_t i = 0; i < shown; i++) {
		uint32_t e = r->list[i];
		print_row(s, e, cost(r, s->f[e].calls, c, sizeof(c)), "%s");
		for (size_t j = 0; j < s->n; j++)
			if (j != e && s->f[j].by == e)
				print_row(s, (uint32_t)j, cost(r, s->f[j].calls, c, sizeof(c)),
					  s->f[j].flags & EXCLUDE_TRACED
						  ? "  and %s, whose name contains it"
						  : "  and %s, whose name contains it (never seen)");
	}
	if (shown < r->nlist)
		printf("  ... %zu more (-v shows them; -o FILE writes them all)\n",
		       r->nlist - shown);
}

/* The functions never excluded, and what their trace points cost: what the budget cannot
 * take back while the summary keeps them. */
static void print_kept(const struct exclude_set *s, const struct exclude_result *r)
{
	char c[48], v[64];
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		n += (s->f[i].flags & (EXCLUDE_KEPT | EXCLUDE_TRACED)) ==
		     (EXCLUDE_KEPT | EXCLUDE_TRACED);
	if (!n && s->outside_ns <= 0)
		return;
	printf("\nkept, most self time first (share: of the time without the trace points; "
	       "their trace points cost %.1f%% in all):\n%s %6s %16s  %s\n",
	       100 * r->kept_ns / r->work_ns, column_names, "share", "trace points",
	       "function");
	uint32_t *k = malloc((n ? n : 1) * sizeof(*k));
	if (!k)
		return;
	n = 0;
	for (size_t i = 0; i < s->n; i++)
		if ((s->f[i].flags & (EXCLUDE_KEPT | EXCLUDE_TRACED)) ==
		    (EXCLUDE_KEPT | EXCLUDE_TRACED))
			k[n++] = (uint32_t)i;
	sorting = s;
	qsort(k, n, sizeof(*k), by_plain);
	for (size_t i = 0; i < n; i++) {
		const struct exclude_func *f = &s->f[k[i]];
		snprintf(v, sizeof(v), "%5.1f%% %16s", 100 * f->plain_ns / r->work_ns,
			 cost(r, f->calls, c, sizeof(c)));
		print_row(s, k[i], v, f->flags & EXCLUDE_PROTECTED ? "%s (protected)" : "%s");
	}
	free(k);
	char shown[256]; /* a name from a binary: escaped for the terminal */
	if (s->outside_ns > 0)
		printf("%12s %10s %10s %5.1f%% %16s  (outside every call seen whole: before the "
		       "first, and in calls whose entries the rings lost%s%s%s)\n",
		       "", "", "", 100 * r->outside_ns / r->work_ns, "",
		       s->outer_shown[0] ? "; at the freeze, " : "",
		       agent_escape(shown, sizeof(shown), s->outer_shown),
		       s->outer_shown[0] ? " and its callers, never excluded" : "");
}

static void print_report(const struct exclude_set *s, const struct exclude_result *r,
			 const struct exclude_opts *o, bool verbose)
{
	char a[32], b[32], nm[256];
	printf("traces:      %u (%u threads): %s running, %llu calls\n", s->traces, s->threads,
	       human(s->traced_ns, a, sizeof(a)), (unsigned long long)s->calls);
	if (s->silences)
		printf("silences:    %llu over %d ms between two records, %s in all, not counted "
		       "as "
		       "running (waiting for a core, most likely)\n",
		       (unsigned long long)s->silences, EXCLUDE_SILENCE_NS / 1000000,
		       human(s->silent_ns, a, sizeof(a)));
	if (r->cost_from[0] != EXCLUDE_NONE) {
		char other[256];
		printf("trace point: C = %.1f ns, estimated: half of %s's %.1f ns from entry to "
		       "exit and %s's %.1f ns from the exit before it (--cost sets it)\n",
		       r->cost_ns, name(s, r->cost_from[0], nm, sizeof(nm)), r->half_ns[0],
		       name(s, r->cost_from[1], other, sizeof(other)), r->half_ns[1]);
	} else if (o->cost_ns > 0) {
		printf("trace point: C = %.1f ns (--cost)\n", r->cost_ns);
	} else if (r->measured) {
		printf("trace point: C = %.2f ns, measured by the traced program at its start (the "
		       "traces' headers; --ratio fits it to a measured traced/plain ratio)\n",
		       r->cost_ns);
	} else {
		printf("trace point: C = %.2f ns, fitted to the measured ratio (--ratio %g)\n",
		       r->cost_ns, o->ratio);
	}
	printf("off:         D = %.2f ns a trace point when the thread is not traced (%s)\n",
	       r->off_ns, o->off_ns > 0 ? "--off-cost" : "5% of C; --off-cost sets it");
	printf("model:       2C x calls = %s of trace points; without them %s\n",
	       human(s->traced_ns - r->work_ns, a, sizeof(a)), human(r->work_ns, b, sizeof(b)));
	/* W = T - 2C x N: an error in C moves W by (2C x N / W) times as much. */
	if (r->before >= 0.05)
		printf("sensitivity: 1%% off in C moves W, and every time without trace points, "
		       "by %.1f%%%s\n",
		       r->before,
		       r->before < 1 ? ""
		       : r->cost_from[0] != EXCLUDE_NONE
			       ? ": the estimate is an upper bound (the timer's step can hide a "
				 "smaller C), so the times without trace points are lower bounds, "
				 "most for functions that make many calls; give --cost or --ratio "
				 "measured (docs/exclude.md)"
		       : r->measured
			       ? ": measured back to back, C can be a few % over what dense trace "
				 "points cost in the program, and the times without them are then "
				 "lower bounds; give --ratio measured (docs/exclude.md)"
			       : "");
	printf("overhead:    now %.1f%% (%.2fx); with the list %.1f%% (%.2fx), budget %g%%%s\n",
	       100 * r->before, 1 + r->before, 100 * r->after, 1 + r->after, o->budget_pct,
	       r->reached ? "" : ": not reached with these traces");
	/* For scripts (docs/exclude.md): this line's form stays. */
	printf("predicted: %.2fx traced, %.2fx off, with the list (without it: %.2fx traced, "
	       "%.2fx off)\n",
	       1 + r->after, 1 + r->off_after, 1 + r->before, 1 + r->off_before);
	printf("list:        %zu entr%s excluding %zu functions, %llu calls (%.1f%%); their self "
	       "time without trace points, %s, goes to their callers\n",
	       r->nlist, r->nlist == 1 ? "y" : "ies", r->excluded,
	       (unsigned long long)r->calls_saved,
	       s->calls ? 100.0 * (double)r->calls_saved / (double)s->calls : 0.0,
	       human(r->moved_ns, a, sizeof(a)));
	if (r->shorts)
		printf("             %zu of them after the budget was met: loop-free, their trace "
		       "points over %g%% of their calls' time\n",
		       r->shorts, o->budget_pct);
	if (o->loops == EXCLUDE_LOOPS_LAST && r->looped)
		printf("             %zu of them hold a loop: taken when the loop-free ones did not "
		       "reach the budget\n",
		       r->looped);
	printf("not picked:  the %u of most self time (--keep)", o->keep);
	if (r->costly)
		printf(" but %zu whose trace points cost more than their own time", r->costly);
	printf(", %zu of %g%% of the time or more (--protect)", r->protected, o->protect_pct);
	if (r->protected_loops)
		printf(", %zu with a loop that holds %g%% or more with what it calls", r->protected_loops,
		       o->protect_pct);
	printf(", %zu whose calls last %s or more (--min-us), ", r->skip_long,
	       human(o->min_incl_ns, a, sizeof(a)));
	if (o->loops == EXCLUDE_LOOPS_KEEP)
		printf("%zu with a loop (--keep-loops), ", r->looped);
	printf("and %zu whose name is part of a kept one's\n", r->skip_kept);
	if (!s->loop_files)
		printf("loops:       not known (--code PLAIN reads them from the build without trace "
		       "points): a function cheap in these traces may loop longer on other input\n");
	else
		printf("loops:       %zu functions hold a loop in the code of %u file%s (--code): "
		       "their time per call is their input's, %s\n",
		       s->loop_funcs, s->loop_files, s->loop_files == 1 ? "" : "s",
		       o->loops == EXCLUDE_LOOPS_KEEP
			       ? "never excluded (--keep-loops)"
			       : "excluded only after every loop-free candidate");
	if (r->unseen)
		printf("unseen:      %zu functions the traces never saw are excluded too: their "
		       "names contain an entry (GCC matches substrings)\n",
		       r->unseen);
	if (r->unlistable)
		printf("unlistable:  %zu function%s, %.1f%% of the calls (no symbol here, or not "
		       "a C name)\n",
		       r->unlistable, r->unlistable == 1 ? "" : "s",
		       s->calls ? 100.0 * (double)r->unlistable_calls / (double)s->calls : 0.0);
	if (r->nlist)
		print_excluded(s, r, verbose);
	print_kept(s, r);
	size_t clashes = 0;
	for (size_t i = 0; i < s->n; i++)
		clashes += s->f[i].clash != EXCLUDE_NONE;
	if (!clashes)
		return;
	printf("\nnot listed: GCC would also exclude a kept function, whose name contains "
	       "theirs:\n");
	for (size_t i = 0, k = 0; i < s->n; i++) {
		if (s->f[i].clash == EXCLUDE_NONE || (!verbose && k++ >= SHOWN))
			continue;
		char other[256];
		printf("%12llu %10s  %s (in %s)\n", (unsigned long long)s->f[i].calls,
		       human(exclude_self_per_call(&s->f[i]), a, sizeof(a)),
		       name(s, (uint32_t)i, nm, sizeof(nm)),
		       name(s, s->f[i].clash, other, sizeof(other)));
	}
	if (!verbose && clashes > SHOWN)
		printf("  ... %zu more (-v)\n", clashes - SHOWN);
}

/* The list as GCC options into path (agent/cli/cli_out.c: whole or not at all, never over
 * one of the traces read): 0 or 1. */
static int write_list(const char *path, const char *const *traces, int ntraces,
		      const struct exclude_set *s, const struct exclude_result *r)
{
	struct cli_out out;
	/* 0644 less the umask: a list of names for a build, which may run as another user. */
	if (cli_out_open("jitt exclude", path, 0644, traces, ntraces, &out) != 0)
		return 1;
	int e = cli_out_close(&out, exclude_write_flags(out.f, s, r));
	if (e) {
		fputs("jitt exclude: ", stderr);
		agent_escape_fput(stderr, path);
		fprintf(stderr, ": %s\n", strerror(-e));
	}
	return e ? 1 : 0;
}

/* One trace into the set, or an error printed: 0 or 1. */
static int add_file(struct exclude_set *set, const char *path)
{
	struct rb_trace t;
	if (cli_trace_open("jitt exclude", path, &t) != 0)
		return 1;
	struct agent_symbols syms;
	int e = agent_symbols_open(&syms, &t);
	if (!e) {
		e = exclude_add_trace(set, &t, &syms);
		agent_symbols_close(&syms);
	}
	rb_trace_close(&t);
	return e ? cli_analysis_error("jitt exclude", path, e) : 0;
}

int cmd_exclude(int argc, char **argv)
{
	struct exclude_opts o = { .budget_pct = 10,
				  .keep = CONFIG_AGENT_SUMMARY_K,
				  .protect_pct = PROTECT,
				  .min_incl_ns = MIN_US * 1000.0,
				  .min_calls = 100 };
	const char *outpath = NULL;
	bool verbose = false;
	/* The traces, in the order given: at most every element of the command line. */
	const char **traces = calloc((size_t)argc, sizeof(*traces));
	const char **codes = calloc((size_t)argc, sizeof(*codes)); /* --code's files */
	int ntraces = 0, ncodes = 0;
	if (!traces || !codes) {
		free(traces);
		free(codes);
		fputs("jitt exclude: out of memory\n", stderr);
		return 1;
	}
	struct cli_args p;
	cli_args_init(&p, &command, argc, argv);
	int status = -1; /* until the command line is read */
	for (int c; status < 0 && (c = cli_next(&p)) != CLI_END;) {
		double v;
		switch (c) {
		case CLI_EXIT:
			status = p.status;
			break;
		case 'o':
			if (!*p.arg)
				status = cli_usage_error(&p, "-o needs a file name", NULL);
			outpath = p.arg;
			break;
		case 'b':
			if (real(p.arg, 0, 1000, &o.budget_pct))
				status = cli_usage_error(
					&p, "--budget takes a percentage, 0 to 1000, not", p.arg);
			break;
		case 'c':
			if (real(p.arg, 0.001, 1e6, &o.cost_ns))
				status = cli_usage_error(
					&p,
					"--cost takes ns per trace point, 0.001 to 1000000, not",
					p.arg);
			break;
		case 'k':
			if (real(p.arg, 0, 100000, &v) || v != floor(v))
				status = cli_usage_error(
					&p, "--keep takes a count, 0 to 100000, not", p.arg);
			else
				o.keep = (unsigned)v;
			break;
		case 'm':
			if (real(p.arg, 1, 1e12, &v) || v != floor(v))
				status = cli_usage_error(
					&p, "--min-calls takes a count, 1 or more, not", p.arg);
			else
				o.min_calls = (uint64_t)v;
			break;
		case 'p':
			if (real(p.arg, 0, 100, &o.protect_pct))
				status = cli_usage_error(
					&p, "--protect takes a percentage, 0 to 100, not", p.arg);
			break;
		case 'u':
			if (real(p.arg, 0, 1e9, &v))
				status = cli_usage_error(
					&p, "--min-us takes microseconds, 0 to 1000000000, not",
					p.arg);
			else
				o.min_incl_ns = v * 1000;
			break;
		case 'f':
			if (real(p.arg, 0.001, 1e6, &o.off_ns))
				status = cli_usage_error(
					&p,
					"--off-cost takes ns per trace point, 0.001 to 1000000, not",
					p.arg);
			break;
		case 'r':
			if (real(p.arg, 1, 1e6, &o.ratio) || o.ratio <= 1)
				status = cli_usage_error(
					&p, "--ratio takes a ratio over 1, up to 1000000, not",
					p.arg);
			break;
		case 'v':
			verbose = true;
			break;
		case 'C':
			codes[ncodes++] = p.arg;
			break;
		case 'K':
			o.loops = EXCLUDE_LOOPS_KEEP;
			break;
		case CLI_OPERAND:
			traces[ntraces++] = p.arg;
			break;
		}
	}
	if (status < 0 && !ntraces)
		status = cli_usage_error(&p, "no trace file given", NULL);
	if (status < 0 && !ncodes && o.loops == EXCLUDE_LOOPS_KEEP)
		status = cli_usage_error(&p, "--keep-loops needs --code: the loops are read there",
					 NULL);
	if (status < 0 && o.cost_ns > 0 && o.ratio > 0)
		status = cli_usage_error(&p, "--cost and --ratio both set the cost: give one",
					 NULL);
	if (status >= 0) {
		free(traces);
		free(codes);
		return status;
	}

	struct exclude_set set;
	exclude_init(&set);
	/* The program that reads the code for its loops (loops.h): the target's objdump when
	 * cross-building, as make's $(OBJDUMP). */
	const char *objdump = getenv("OBJDUMP");
	if (!objdump || !*objdump)
		objdump = "objdump";
	status = 0;
	for (int i = 0; i < ncodes && !status; i++) {
		int e = exclude_add_code(&set, codes[i], objdump);
		if (e) {
			fprintf(stderr, "jitt exclude: --code %s: %s\n", codes[i],
				e == -EINVAL ? "not an ELF file"
				: e == -ENOENT && access(codes[i], F_OK) == 0
					? "objdump could not be run (OBJDUMP names it)"
				: e == -EIO ? "objdump could not read it (the target's: OBJDUMP)"
					    : strerror(-e));
			status = 1;
		}
	}
	for (int i = 0; i < ntraces && !status; i++)
		status = add_file(&set, traces[i]);
	size_t named = 0;
	for (size_t i = 0; i < set.n; i++)
		named += (set.f[i].flags & (EXCLUDE_TRACED | EXCLUDE_LISTABLE)) ==
			 (EXCLUDE_TRACED | EXCLUDE_LISTABLE);
	if (!status && !set.calls) {
		fputs("jitt exclude: these traces hold no calls: nothing to list\n", stderr);
		status = 1;
	} else if (!status && !named) {
		fputs("jitt exclude: no function of these traces has a name here (is the program "
		      "with its symbols, or its debug file, on this machine? docs/symbols.md): "
		      "nothing to list\n",
		      stderr);
		status = 1;
	}
	struct exclude_result r;
	int e = status ? 0 : exclude_select(&set, &o, &r);
	if (!status && e == -ERANGE) {
		if (o.cost_ns > 0)
			fprintf(stderr,
				"jitt exclude: --cost %g ns: two trace points per call would "
				"take all the traces' running time; give a smaller cost\n",
				o.cost_ns);
		else if (r.cost_from[0] != EXCLUDE_NONE || r.measured)
			fprintf(stderr,
				"jitt exclude: the cost %s, %.1f ns, would take all their "
				"running time: give --cost NS\n",
				r.measured ? "the traced program measured" : "estimated from the traces",
				r.cost_ns);
		else
			fprintf(stderr,
				"jitt exclude: no function has %d calls with records under "
				"%d ns apart to estimate a trace point's cost from: give --cost "
				"NS\n",
				EXCLUDE_EST_MIN_CALLS, EXCLUDE_EST_MAX_NS);
		status = 1;
	} else if (!status && e) {
		fprintf(stderr, "jitt exclude: %s\n", strerror(-e));
		status = 1;
	}
	if (!status) {
		print_report(&set, &r, &o, verbose);
		if (print_top(&set, &r, o.keep ? o.keep : CONFIG_AGENT_SUMMARY_K))
			status = 1;
		if (!status && outpath) {
			if (write_list(outpath, traces, ntraces, &set, &r))
				status = 1;
			else {
				char shown[512];
				agent_escape(shown, sizeof(shown), outpath);
				printf("\nwrote %zu entr%s to %s: add @%s to the instrumented "
				       "compiles (docs/exclude.md)\n",
				       r.nlist, r.nlist == 1 ? "y" : "ies", shown, shown);
			}
		}
		if (fflush(stdout) != 0)
			status = 1;
		exclude_result_free(&r);
	}
	exclude_free(&set);
	free(traces);
	free(codes);
	return status;
}
