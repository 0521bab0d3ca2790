/* SPDX-License-Identifier: MIT */
/*
 * `jitt export --format=chrome|folded|perfetto [-o OUT] FILE`: a trace file for the viewers
 * people already use (agent/analysis/export.h, agent/analysis/perfetto.h): ui.perfetto.dev and
 * chrome://tracing, flamegraph.pl and speedscope. To standard output, or to OUT, which is
 * written under a temporary name and renamed when whole, so a failed export leaves no
 * half file where a viewer would pick it up.
 */
#include "agent/cli/cli.h"
#include "agent/analysis/export.h"
#include "agent/analysis/perfetto.h"
#include "agent/analysis/symbols.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define USAGE "usage: jitt export --format=chrome|folded|perfetto [-o OUT] FILE\n"

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

/* OUT's temporary sibling, created new (it must not be anyone else's file). */
static FILE *open_temp(const char *out, char *tmp, size_t size)
{
	if ((size_t)snprintf(tmp, size, "%s.tmp-%ld", out, (long)getpid()) >= size) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
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
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(USAGE, stdout);
			return 0;
		} else if (strncmp(a, "--format=", 9) == 0) {
			fmt = a + 9;
		} else if (strcmp(a, "--format") == 0 && i + 1 < argc) {
			fmt = argv[++i];
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
		fprintf(stderr, "jitt export: %s: %s\n", outpath, strerror(errno));
		agent_symbols_close(&s);
		rb_trace_close(&t);
		return 1;
	}
	int e = formats[f].run(out, &t, &s);
	if (outpath) {
		if (fclose(out) != 0 && !e)
			e = -EIO;
		if (!e && rename(tmp, outpath) != 0)
			e = -errno;
		if (e)
			unlink(tmp);
	}
	if (e == -EINVAL)
		fprintf(stderr, "jitt export: %s: a thread's ring does not decode\n", path);
	else if (e)
		fprintf(stderr, "jitt export: %s: %s\n", outpath && e == -EIO ? outpath : path,
			strerror(-e));
	agent_symbols_close(&s);
	rb_trace_close(&t);
	return e ? 1 : 0;
}
