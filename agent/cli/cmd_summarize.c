/* SPDX-License-Identifier: MIT */
/*
 * `jitt summarize FILE [--json] [-k N]`: what a developer reads first (agent/analysis/summary.h):
 * the anomaly's window, what it was blocked on, the longest call chains, the top self-time
 * functions and what changed against normal frames; --json for the form that may leave
 * the device (docs/summary-format.md).
 */
#include "agent/cli/cli.h"
#include "agent/escape.h"
#include "agent/analysis/summary.h"
#include "agent/analysis/summary_out.h"
#include "agent/analysis/symbols.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
	fprintf(stderr, "usage: jitt summarize FILE [--json] [-k N]\n");
	return 2;
}

int cmd_summarize(int argc, char **argv)
{
	const char *path = NULL;
	int k = CONFIG_AGENT_SUMMARY_K;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > SUMMARY_MAX_K) {
				fprintf(stderr, "jitt summarize: -k takes 1 to %d\n",
					SUMMARY_MAX_K);
				return 2;
			}
			k = (int)v;
		} else if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: jitt summarize FILE [--json] [-k N]\n");
			return 0;
		} else if (argv[i][0] != '-' && !path) {
			path = argv[i];
		} else {
			return usage();
		}
	}
	if (!path)
		return usage();
	struct rb_trace t;
	if (cli_trace_open("jitt summarize", path, &t) != 0)
		return 1;
	struct agent_symbols syms;
	struct summary s;
	if (agent_symbols_open(&syms, &t) != 0) {
		rb_trace_close(&t);
		fprintf(stderr, "jitt summarize: out of memory\n");
		return 1;
	}
	int e = summary_build(&s, &t, (unsigned)k);
	if (e) {
		fputs("jitt summarize: ", stderr);
		agent_escape_fput(stderr, path);
		fprintf(stderr, ": %s\n", e == -EINVAL ? "a ring cannot be decoded" : strerror(-e));
	} else {
		if (!json) {
			fputs("summary of ", stdout);
			agent_escape_fput(stdout, path);
			fputc('\n', stdout);
		}
		e = json ? summary_write_json(stdout, &s, &syms)
			 : summary_write_text(stdout, &s, &syms);
		if (fflush(stdout) != 0)
			e = -EIO;
		summary_free(&s);
	}
	agent_symbols_close(&syms);
	rb_trace_close(&t);
	return e ? 1 : 0;
}
