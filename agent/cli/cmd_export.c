/* SPDX-License-Identifier: MIT */
/*
 * `jitt export --format=chrome|folded|perfetto [-o OUT] FILE`: a trace file for the viewers
 * people already use (agent/analysis/export.h, agent/analysis/perfetto.h): ui.perfetto.dev
 * (perfetto, chrome), speedscope (chrome, folded), flamegraph.pl (folded). To standard
 * output, or to OUT, which is written under a temporary name and renamed when whole, so a
 * failed export leaves no half file where a viewer would pick it up. OUT is 0600: an export
 * holds what the trace holds, and the trace is 0600. The Perfetto format is binary: it is
 * not written to a terminal unless asked for with -o -.
 *
 * --max-stack N (folded only, 127 by default, as perf's): a line keeps a context's N
 * innermost frames; deeper ones are cut at the root side and counted on standard error.
 */
#include "agent/cli/cli.h"
#include "agent/analysis/export.h"
#include "agent/analysis/perfetto.h"
#include "agent/analysis/symbols.h"
#include "agent/escape.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define USAGE "usage: jitt export --format=chrome|folded|perfetto [--max-stack N] [-o OUT] FILE\n"

#define HELP                                                                                   \
	USAGE                                                                                  \
	"\n"                                                                                   \
	"Writes the trace FILE for a viewer, to standard output or to OUT (-o OUT,\n"          \
	"--output=OUT; -o - is standard output). Formats, and where to open them:\n"          \
	"  chrome    Trace Event JSON: ui.perfetto.dev (Open trace file), speedscope\n"         \
	"            (npx speedscope FILE.json, or speedscope.app). A timeline per thread.\n"  \
	"  perfetto  Perfetto's protobuf, the smallest: ui.perfetto.dev. Also shows each\n"     \
	"            wake-up as an arrow to the wait it ended. Binary: not written to a\n"      \
	"            terminal unless -o - is given.\n"                                          \
	"  folded    folded stacks, one line per call path, its count the path's self time\n" \
	"            in nanoseconds (blocked waits as [blocked on ...] frames):\n"             \
	"            flamegraph.pl --countname=ns, speedscope.\n"                             \
	"Calls still running when the rings were frozen (a hang) end at the freeze, as in\n"   \
	"jitt summarize. --max-stack N (folded): keep the N innermost frames (default 127).\n"

static const struct {
	const char *name;
	int (*run)(FILE *out, const struct rb_trace *t, struct agent_symbols *s);
} formats[] = {
	{ "chrome", agent_export_chrome },
	{ "folded", agent_export_folded },
	{ "perfetto", agent_export_perfetto },
};

#define NFORMATS (int)(sizeof(formats) / sizeof(formats[0]))

static int usage(void)
{
	fputs(USAGE, stderr);
	return 2;
}

/* A usage error that says what is wrong, then the usage line. */
static int bad_usage(const char *what, const char *arg)
{
	fputs("jitt export: ", stderr);
	fputs(what, stderr);
	if (arg) {
		fputs(" '", stderr);
		agent_escape_fput(stderr, arg);
		fputs("'", stderr);
	}
	fputs("\n", stderr);
	return usage();
}

/* OUT's temporary sibling, created new (it must not be anyone else's file, nor a link to
 * one), readable by its owner only. */
static FILE *open_temp(const char *out, char *tmp, size_t size)
{
	if ((size_t)snprintf(tmp, size, "%s.tmp-%ld", out, (long)getpid()) >= size) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
	}
	return f;
}

int cmd_export(int argc, char **argv)
{
	const char *path = NULL, *fmt = NULL, *outpath = NULL;
	unsigned long max_stack = AGENT_FOLDED_MAX_STACK;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(HELP, stdout);
			return 0;
		} else if (strncmp(a, "--format=", 9) == 0) {
			fmt = a + 9;
		} else if (strcmp(a, "--format") == 0 && i + 1 < argc) {
			fmt = argv[++i];
		} else if ((strcmp(a, "--max-stack") == 0 && i + 1 < argc) ||
			   strncmp(a, "--max-stack=", 12) == 0) {
			const char *v = a[11] == '=' ? a + 12 : argv[++i];
			char *end;
			errno = 0;
			max_stack = strtoul(v, &end, 10);
			if (*v < '0' || *v > '9' || *end || errno || max_stack < 1 ||
			    max_stack > 65536) {
				fputs("jitt export: --max-stack takes 1 to 65536\n", stderr);
				return 2;
			}
		} else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && i + 1 < argc) {
			outpath = argv[++i];
		} else if (strncmp(a, "--output=", 9) == 0) {
			outpath = a + 9;
		} else if (a[0] != '-' && !path) {
			path = a;
		} else if (a[0] == '-') {
			return bad_usage("unknown option", a);
		} else {
			return bad_usage("one trace file at a time; also given", a);
		}
	}
	int f = -1;
	for (int k = 0; fmt && k < NFORMATS; k++)
		if (strcasecmp(fmt, formats[k].name) == 0)
			f = k;
	if (!fmt)
		return bad_usage("which format? --format=chrome, folded or perfetto", NULL);
	if (f < 0)
		return bad_usage("the formats are chrome, folded and perfetto, not", fmt);
	if (!path)
		return bad_usage("no trace file given", NULL);
	if (outpath && !*outpath)
		return bad_usage("-o needs a file name (or - for standard output)", NULL);
	if (outpath && strcmp(outpath, "-") == 0)
		outpath = NULL; /* asked for: standard output, whatever it is */
	else if (!outpath && formats[f].run == agent_export_perfetto && isatty(STDOUT_FILENO)) {
		fputs("jitt export: the perfetto format is binary; not writing it to a terminal "
		      "(use -o FILE, or -o - to insist)\n",
		      stderr);
		return 2;
	}

	struct rb_trace t;
	if (cli_trace_open("jitt export", path, &t) != 0)
		return 1;
	struct agent_symbols s;
	if (agent_symbols_open(&s, &t) != 0) {
		fprintf(stderr, "jitt export: out of memory\n");
		rb_trace_close(&t);
		return 1;
	}
	char tmp[4096];
	FILE *out = stdout;
	if (outpath && !(out = open_temp(outpath, tmp, sizeof(tmp)))) {
		int en = errno;
		fputs("jitt export: ", stderr);
		agent_escape_fput(stderr, outpath);
		fprintf(stderr, ": %s\n", strerror(en));
		agent_symbols_close(&s);
		rb_trace_close(&t);
		return 1;
	}
	int e;
	uint64_t cut = 0;
	if (formats[f].run == agent_export_folded)
		e = agent_export_folded_max(out, &t, &s, (unsigned)max_stack, &cut);
	else
		e = formats[f].run(out, &t, &s);
	if (outpath) {
		if (fclose(out) != 0 && !e)
			e = -EIO;
		if (!e && rename(tmp, outpath) != 0)
			e = -errno;
		if (e)
			unlink(tmp);
	}
	if (e == -EINVAL) {
		fputs("jitt export: ", stderr);
		agent_escape_fput(stderr, path);
		fputs(": a thread's ring does not decode\n", stderr);
	} else if (e) {
		fputs("jitt export: ", stderr);
		agent_escape_fput(stderr, outpath && e == -EIO ? outpath : path);
		fprintf(stderr, ": %s\n", strerror(-e));
	} else if (cut) {
		fprintf(stderr,
			"jitt export: %llu stacks deeper than %lu frames were cut at the root side "
			"(--max-stack)\n",
			(unsigned long long)cut, max_stack);
	}
	agent_symbols_close(&s);
	rb_trace_close(&t);
	return e ? 1 : 0;
}
