/* SPDX-License-Identifier: MIT */
/*
 * `jitt diff [-k N] [--alpha N] [--json] A B`: what changed between two runs, A before (or
 * normal) and B after (or slow), each a trace file or a summary from `jitt summarize
 * --json`. Calling contexts are matched (agent/analysis/diff.h: equal paths, then DiffProf's relaxed
 * path condition) and listed by the impact of their self-time change, largest first: a
 * context that got slower and one that is new come before anything unchanged.
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

static const char usage[] =
	"usage: jitt diff [-k N] [--alpha N] [--json] A B\n"
	"  A, B        trace files or summaries (jitt summarize --json): A before, B after\n"
	"  -k N        the N contexts of largest impact (default %d; 0: all of them)\n"
	"  --alpha N   match call paths up to N inserted, deleted or replaced frames apart\n"
	"              (default %d, at most %d; 0: equal paths only)\n"
	"  --json      JSON (schema jitt.diff, version 1) instead of a table\n"
	"exit status: 0 done, 1 a file could not be read, 2 bad arguments\n";

static int bad_usage(const char *why)
{
	if (why)
		fprintf(stderr, "jitt diff: %s\n", why);
	fprintf(stderr, usage, CONFIG_AGENT_SUMMARY_K, CONFIG_AGENT_DIFF_ALPHA, DIFF_ALPHA_MAX);
	return 2;
}

static int number(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

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

static void print_text(const char *pa, const struct diff_side *a, const char *pb,
		       const struct diff_side *b, const struct diff_result *r, unsigned alpha,
		       size_t k, uint32_t *buf)
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
}

static void print_json(const char *pa, const struct diff_side *a, const char *pb,
		       const struct diff_side *b, const struct diff_result *r, unsigned alpha,
		       size_t k, uint32_t *buf)
{
	printf("{\"schema\":\"jitt.diff\",\"version\":1,\"alpha\":%u,\"a\":{\"file\":", alpha);
	agent_json_fput(stdout, pa, strlen(pa));
	printf(",\"kind\":\"%s\",\"threads\":%u},\"b\":{\"file\":", kind_name(a), a->threads);
	agent_json_fput(stdout, pb, strlen(pb));
	printf(",\"kind\":\"%s\",\"threads\":%u},", kind_name(b), b->threads);
	printf("\"counts\":{\"exact\":%zu,\"relaxed\":%zu,\"gone\":%zu,\"new\":%zu},\"contexts\":[",
	       r->exact, r->relaxed, r->gone, r->added);
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
	printf("]}\n");
}

int cmd_diff(int argc, char **argv)
{
	const char *path[2] = { NULL, NULL };
	int npath = 0, json = 0;
	long k = CONFIG_AGENT_SUMMARY_K, alpha = CONFIG_AGENT_DIFF_ALPHA;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			printf(usage, CONFIG_AGENT_SUMMARY_K, CONFIG_AGENT_DIFF_ALPHA,
			       DIFF_ALPHA_MAX);
			return 0;
		} else if (strcmp(arg, "--json") == 0) {
			json = 1;
		} else if (strcmp(arg, "-k") == 0 || strcmp(arg, "--alpha") == 0 ||
			   strncmp(arg, "--alpha=", 8) == 0) {
			int is_k = arg[1] == 'k';
			const char *val = strchr(arg, '=') ? strchr(arg, '=') + 1 : NULL;
			if (!val && ++i >= argc)
				return bad_usage(is_k ? "-k needs a number"
						      : "--alpha needs a number");
			if (!val)
				val = argv[i];
			if (is_k && number(val, 0, 1000000, &k) != 0)
				return bad_usage("-k takes 0 (all) to 1000000");
			if (!is_k && number(val, 0, DIFF_ALPHA_MAX, &alpha) != 0)
				return bad_usage("--alpha takes 0 to 16");
		} else if (strcmp(arg, "--") == 0 && i + 1 < argc) {
			for (i++; i < argc; i++) {
				if (npath == 2)
					return bad_usage("give two files, A and B");
				path[npath++] = argv[i];
			}
		} else if (arg[0] == '-' && arg[1]) {
			fputs("jitt diff: unknown option ", stderr);
			agent_escape_fput(stderr, arg);
			fputc('\n', stderr);
			return bad_usage(NULL);
		} else {
			if (npath == 2)
				return bad_usage("give two files, A and B");
			path[npath++] = arg;
		}
	}
	if (npath != 2)
		return bad_usage("give two files, A and B");

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
	if (json)
		print_json(path[0], &side[0], path[1], &side[1], &r, (unsigned)alpha, (size_t)k,
			   buf);
	else
		print_text(path[0], &side[0], path[1], &side[1], &r, (unsigned)alpha, (size_t)k,
			   buf);
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
