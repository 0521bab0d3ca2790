/* SPDX-License-Identifier: MIT */
/*
 * `jitt export --format=chrome|folded|perfetto [-o OUT] FILE`: a trace file for the viewers
 * people already use (agent/analysis/export.h, agent/analysis/perfetto.h): ui.perfetto.dev
 * (perfetto, chrome), speedscope (chrome, folded), flamegraph.pl (folded). To standard
 * output, or to OUT (agent/cli/cli_out.c): a file is written under a temporary name and
 * renamed when whole, so a failed export leaves no half file where a viewer would pick it
 * up; a device or a FIFO is written in place; a symbolic link, and the trace itself, are
 * refused. A new OUT is 0600: an export holds what the trace holds, and the trace is 0600.
 * The Perfetto format is binary: it is not written to a terminal unless asked for with -o -.
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define USAGE "usage: jitt export --format=chrome|folded|perfetto [--max-stack N] [-o OUT] FILE\n"

static void help(FILE *out)
{
	fputs("\n"
	      "Writes the trace FILE for a viewer, to standard output or to OUT (-o OUT,\n"
	      "--output=OUT; -o - is standard output). Formats, and where to open them:\n"
	      "  chrome    Trace Event JSON: ui.perfetto.dev (Open trace file), speedscope\n"
	      "            (npx speedscope FILE.json, or speedscope.app). A timeline per thread.\n"
	      "  perfetto  Perfetto's protobuf, the smallest: ui.perfetto.dev. Also shows each\n"
	      "            wake-up as an arrow to the wait it ended. Binary: not written to a\n"
	      "            terminal unless -o - is given.\n"
	      "  folded    folded stacks, one line per call path, its count the path's self time\n"
	      "            in nanoseconds (blocked waits as [blocked on ...] frames):\n"
	      "            flamegraph.pl --countname=ns, speedscope.\n"
	      "Calls still running when the rings were frozen (a hang) end at the freeze, as in\n"
	      "jitt summarize. --max-stack N (folded): keep the N innermost frames (default 127).\n"
	      "An existing OUT is replaced whole; a device or a FIFO is written to; a symbolic\n"
	      "link, a folder, and FILE itself are refused.\n",
	      out);
}

/* Every format written one way: the call-path formats take --max-stack and count the
 * lines cut; the others ignore both. */
static int write_chrome(FILE *out, const struct rb_trace *t, struct agent_symbols *s,
			unsigned max_stack, uint64_t *cut)
{
	(void)max_stack;
	(void)cut;
	return agent_export_chrome(out, t, s);
}

static int write_perfetto(FILE *out, const struct rb_trace *t, struct agent_symbols *s,
			  unsigned max_stack, uint64_t *cut)
{
	(void)max_stack;
	(void)cut;
	return agent_export_perfetto(out, t, s);
}

/* What each format is, so that nothing below asks which one it is (as uftrace's dump ops). */
static const struct format {
	const char *name;
	bool binary;	/* not for a terminal: written there only when -o - insists */
	bool max_stack; /* its lines are call paths, cut to --max-stack frames */
	int (*write)(FILE *out, const struct rb_trace *t, struct agent_symbols *s,
		     unsigned max_stack, uint64_t *cut);
} formats[] = {
	{ "chrome", false, false, write_chrome },
	{ "folded", false, true, agent_export_folded_max },
	{ "perfetto", true, false, write_perfetto },
};

#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

static const struct format *format_named(const char *name)
{
	for (size_t k = 0; k < NFORMATS; k++)
		if (strcasecmp(name, formats[k].name) == 0)
			return &formats[k];
	return NULL;
}

static const struct option longopts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "max-stack", required_argument, NULL, 'm' },
	{ "output", required_argument, NULL, 'o' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt export", USAGE, help, "o:", longopts };

/* The trace at path, written as fmt to outpath (NULL: standard output): 0 or 1. */
static int export(const char *path, const struct format *fmt, const char *outpath,
		  unsigned max_stack)
{
	struct rb_trace t;
	if (cli_trace_open("jitt export", path, &t) != 0)
		return 1;
	struct agent_symbols s;
	if (agent_symbols_open(&s, &t) != 0) {
		rb_trace_close(&t);
		return cli_analysis_error("jitt export", path, -ENOMEM);
	}
	struct cli_out out = { .f = stdout };
	int status = 0;
	/* 0600: an export holds what the trace holds, and the trace is 0600. */
	if (outpath && cli_out_open("jitt export", outpath, 0600, &path, 1, &out) != 0) {
		status = 1;
		goto done;
	}
	uint64_t cut = 0;
	int e = fmt->write(out.f, &t, &s, max_stack, &cut);
	int w = outpath ? cli_out_close(&out, e) : e;
	if (e) {
		status = cli_analysis_error("jitt export", path, e);
	} else if (w) {
		fputs("jitt export: ", stderr);
		agent_escape_fput(stderr, outpath);
		fprintf(stderr, ": %s\n", strerror(-w));
		status = 1;
	} else if (cut) {
		fprintf(stderr,
			"jitt export: %llu stacks deeper than %u frames were cut at the root side "
			"(--max-stack)\n",
			(unsigned long long)cut, max_stack);
	}
done:
	agent_symbols_close(&s);
	rb_trace_close(&t);
	return status;
}

int cmd_export(int argc, char **argv)
{
	const char *path = NULL, *outpath = NULL;
	const struct format *fmt = NULL;
	long max_stack = AGENT_FOLDED_MAX_STACK;
	bool max_stack_given = false;
	struct cli_args p;
	cli_args_init(&p, &command, argc, argv);
	for (int c; (c = cli_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case 'f':
			if (!(fmt = format_named(p.arg)))
				return cli_usage_error(&p,
						       "the formats are chrome, folded and "
						       "perfetto, not",
						       p.arg);
			break;
		case 'm':
			if (cli_parse_long(p.arg, 1, 65536, &max_stack) != 0)
				return cli_usage_error(&p, "--max-stack takes 1 to 65536, not",
						       p.arg);
			max_stack_given = true;
			break;
		case 'o':
			if (!*p.arg)
				return cli_usage_error(
					&p, "-o needs a file name (or - for standard output)",
					NULL);
			outpath = p.arg;
			break;
		case CLI_OPERAND:
			if (path)
				return cli_usage_error(&p, "one trace file at a time; also given",
						       p.arg);
			path = p.arg;
			break;
		}
	}
	if (!fmt)
		return cli_usage_error(&p, "which format? --format=chrome, folded or perfetto",
				       NULL);
	if (!path)
		return cli_usage_error(&p, "no trace file given", NULL);
	if (max_stack_given && !fmt->max_stack)
		return cli_usage_error(&p, "--max-stack applies to call paths (folded), not",
				       fmt->name);
	if (outpath && strcmp(outpath, "-") == 0) {
		outpath = NULL; /* asked for: standard output, whatever it is */
	} else if (!outpath && fmt->binary && isatty(STDOUT_FILENO)) {
		fprintf(stderr,
			"jitt export: the %s format is binary; not writing it to a "
			"terminal (use -o FILE, or -o - to insist)\n",
			fmt->name);
		return 2;
	}
	return export(path, fmt, outpath, (unsigned)max_stack);
}
