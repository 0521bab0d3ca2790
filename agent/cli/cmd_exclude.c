/* SPDX-License-Identifier: MIT */
/*
 * `jitt exclude TRACE... [--budget PCT] [--cost NS] [--keep N] [--min-calls N] [-o FILE]
 * [-v]`: the functions whose trace points cost the most for the time they account for,
 * as GCC's -finstrument-functions-exclude-function-list= options, and the saving the cost
 * model predicts (agent/analysis/exclude.h, docs/exclude.md). FILE is written under a
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

#define SHOWN 20 /* excluded functions listed without -v */

#define SYNOPSIS                                                                               \
	"usage: jitt exclude TRACE... [--budget PCT] [--cost NS] [--keep N] [--min-calls N]\n" \
	"                    [-o FILE] [-v]\n"

static const char details[] =
	"  TRACE          trace files of one program (more traces: more of its code seen)\n"
	"  --budget PCT   the trace points' cost to aim at, in %% of the time the program\n"
	"                 takes without them (default 10: 1.10x)\n"
	"  --cost NS      one trace point's cost on the device, in ns (default: estimated\n"
	"                 from the traces)\n"
	"  --keep N       never exclude the N functions of most self time (default %d)\n"
	"  --min-calls N  exclude only functions called N times or more (default 100)\n"
	"  -o FILE        write the list as GCC options, for `gcc @FILE` (also --output)\n"
	"  -v             show every excluded function (default: the first %d; also\n"
	"                 --verbose)\n"
	"exit status: 0 done, 1 a file could not be read or written, 2 bad arguments\n";

static void help(FILE *out)
{
	fprintf(out, details, CONFIG_AGENT_SUMMARY_K, SHOWN);
}

static const struct option longopts[] = {
	{ "budget", required_argument, NULL, 'b' },
	{ "cost", required_argument, NULL, 'c' },
	{ "keep", required_argument, NULL, 'k' },
	{ "min-calls", required_argument, NULL, 'm' },
	{ "output", required_argument, NULL, 'o' },
	{ "verbose", no_argument, NULL, 'v' },
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
	double u = after ? x->after_ns : x->self_ns, v = after ? y->after_ns : y->self_ns;
	if (u != v)
		return u > v ? -1 : 1;
	return strcmp(x->name, y->name);
}

static const struct exclude_set *sorting;
static int by_self_now(const void *a, const void *b)
{
	return by_after(a, b, sorting, false);
}
static int by_self_after(const void *a, const void *b)
{
	return by_after(a, b, sorting, true);
}

/* The top of the summary now and as the model predicts it with the list: what the
 * developer would read first, before and after the rebuild. */
static int print_top(const struct exclude_set *s, unsigned k)
{
	uint32_t *now = malloc((s->n ? s->n : 1) * sizeof(*now));
	uint32_t *after = malloc((s->n ? s->n : 1) * sizeof(*after));
	if (!now || !after) {
		free(now);
		free(after);
		return -ENOMEM;
	}
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->f[i].flags & EXCLUDE_TRACED)
			now[n] = after[n] = (uint32_t)i, n++;
	sorting = s;
	qsort(now, n, sizeof(*now), by_self_now);
	qsort(after, n, sizeof(*after), by_self_after);
	if (k > n)
		k = (unsigned)n;
	char a[32], b[32], c[16], nm[256];
	printf("\ntop %u self time now, and as predicted with the list (its rank then):\n", k);
	for (unsigned i = 0; i < k; i++) {
		const struct exclude_func *f = &s->f[now[i]];
		unsigned rank = 0;
		while (rank < k && after[rank] != now[i])
			rank++;
		if (f->flags & EXCLUDE_EXCLUDED)
			snprintf(b, sizeof(b), "excluded");
		else
			human(f->after_ns, b, sizeof(b));
		snprintf(c, sizeof(c), "#%u", rank + 1);
		printf("  %2u. %12s -> %12s %-4s %s\n", i + 1, human(f->self_ns, a, sizeof(a)), b,
		       rank < k ? c : "", name(s, now[i], nm, sizeof(nm)));
	}
	for (unsigned i = 0; i < k; i++) {
		unsigned j = 0;
		while (j < k && now[j] != after[i])
			j++;
		if (j == k)
			printf("  new: %12s -> %12s #%-3u %s\n",
			       human(s->f[after[i]].self_ns, a, sizeof(a)),
			       human(s->f[after[i]].after_ns, b, sizeof(b)), i + 1,
			       name(s, after[i], nm, sizeof(nm)));
	}
	free(now);
	free(after);
	return 0;
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
	} else {
		printf("trace point: C = %.1f ns (--cost)\n", r->cost_ns);
	}
	printf("model:       2C x calls = %s of trace points; without them %s\n",
	       human(s->traced_ns - r->work_ns, a, sizeof(a)), human(r->work_ns, b, sizeof(b)));
	printf("overhead:    now %.1f%% (%.2fx); with the list %.1f%% (%.2fx), budget %g%%%s\n",
	       100 * r->before, 1 + r->before, 100 * r->after, 1 + r->after, o->budget_pct,
	       r->reached ? "" : ": not reached with these traces");
	printf("list:        %zu entr%s excluding %zu functions, %llu calls (%.1f%%); their self "
	       "time, %s, goes to their callers\n",
	       r->nlist, r->nlist == 1 ? "y" : "ies", r->excluded,
	       (unsigned long long)r->calls_saved,
	       s->calls ? 100.0 * (double)r->calls_saved / (double)s->calls : 0.0,
	       human(r->moved_ns, a, sizeof(a)));
	printf("not picked:  the %u of most self time (--keep), and %zu whose name is part of "
	       "theirs\n",
	       o->keep, r->skip_kept);
	if (r->unseen)
		printf("unseen:      %zu functions the traces never saw are excluded too: their "
		       "names contain an entry (GCC matches substrings)\n",
		       r->unseen);
	if (r->unlistable)
		printf("unlistable:  %zu function%s, %.1f%% of the calls (no symbol here, or not "
		       "a C name)\n",
		       r->unlistable, r->unlistable == 1 ? "" : "s",
		       s->calls ? 100.0 * (double)r->unlistable_calls / (double)s->calls : 0.0);
	if (!r->nlist)
		return;
	printf("\nexcluded, least self time per call first:\n%12s %10s  %s\n", "calls", "self/call",
	       "function");
	size_t shown = verbose || r->nlist <= SHOWN + 2 ? r->nlist : SHOWN;
	for (size_t i = 0; i < shown; i++) {
		const struct exclude_func *f = &s->f[r->list[i]];
		printf("%12llu %10s  %s\n", (unsigned long long)f->calls,
		       human(f->self_ns / (double)f->calls, a, sizeof(a)),
		       name(s, r->list[i], nm, sizeof(nm)));
		for (size_t j = 0; j < s->n; j++)
			if (j != r->list[i] && s->f[j].by == r->list[i])
				printf("%12llu %10s    and %s, whose name contains it%s\n",
				       (unsigned long long)s->f[j].calls, "",
				       name(s, (uint32_t)j, nm, sizeof(nm)),
				       s->f[j].flags & EXCLUDE_TRACED ? "" : " (never seen)");
	}
	if (shown < r->nlist)
		printf("  ... %zu more (-v shows them; -o FILE writes them all)\n",
		       r->nlist - shown);
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
		       human(s->f[i].self_ns / (double)s->f[i].calls, a, sizeof(a)),
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
				  .min_calls = 100 };
	const char *outpath = NULL;
	bool verbose = false;
	/* The traces, in the order given: at most every element of the command line. */
	const char **traces = calloc((size_t)argc, sizeof(*traces));
	int ntraces = 0;
	if (!traces) {
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
		case 'v':
			verbose = true;
			break;
		case CLI_OPERAND:
			traces[ntraces++] = p.arg;
			break;
		}
	}
	if (status < 0 && !ntraces)
		status = cli_usage_error(&p, "no trace file given", NULL);
	if (status >= 0) {
		free(traces);
		return status;
	}

	struct exclude_set set;
	exclude_init(&set);
	status = 0;
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
		else if (r.cost_from[0] != EXCLUDE_NONE)
			fprintf(stderr,
				"jitt exclude: the cost estimated from the traces, %.1f ns, "
				"would take all their running time: give --cost NS\n",
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
		if (print_top(&set, o.keep ? o.keep : CONFIG_AGENT_SUMMARY_K))
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
	return status;
}
