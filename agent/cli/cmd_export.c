/* SPDX-License-Identifier: MIT */
/*
 * `jitt export --format=chrome|folded|perfetto [-o OUT] FILE`: a trace file for the viewers
 * people already use (agent/analysis/export.h, agent/analysis/perfetto.h): ui.perfetto.dev and
 * chrome://tracing, flamegraph.pl and speedscope. To standard output, or to OUT, which is
 * written under a temporary name and renamed when whole, so a failed export leaves no
 * half file where a viewer would pick it up. OUT is 0600: an export holds what the trace
 * holds, and the trace is 0600.
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
#include <unistd.h>

#define USAGE "usage: jitt export --format=chrome|folded|perfetto [--max-stack N] [-o OUT] FILE\n"

static const struct {
	const char *name;
	int (*run)(FILE *out, const struct rb_trace *t, struct agent_symbols *s);
} formats[] = {
	{ "chrome", agent_export_chrome },
	{ "folded", agent_export_folded },
	{ "perfetto", agent_export_perfetto },
};

static int usage(void)
{
	fputs(USAGE, stderr);
	return 2;
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
			fputs(USAGE, stdout);
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
		} else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
			outpath = argv[++i];
		} else if (a[0] != '-' && !path) {
			path = a;
		} else {
			return usage();
		}
	}
	int f = -1;
	for (size_t k = 0; fmt && k < sizeof(formats) / sizeof(formats[0]); k++)
		if (strcmp(fmt, formats[k].name) == 0)
			f = (int)k;
	if (!path || f < 0 || (outpath && !*outpath))
		return usage();

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
