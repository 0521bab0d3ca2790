/* SPDX-License-Identifier: MIT */
/*
 * `jitt summarize FILE [--json] [--measured] [-k N]`: what a developer reads first
 * (agent/analysis/summary.h):
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

static void help(FILE *out)
{
	fprintf(out,
		"  FILE    a trace file\n"
		"  --json  the summary as JSON (docs/summary-format.md), as jittd writes it\n"
		"  --measured  sampled time's fit takes the calls the runtime's learning windows\n"
		"              measured (the trace's measured section; docs/untimed.md)\n"
		"  -k N    N entries per list, 1 to %d (default %d)\n",
		SUMMARY_MAX_K, CONFIG_AGENT_SUMMARY_K);
}

static const struct option longopts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "measured", no_argument, NULL, 'm' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt summarize",
					    "usage: jitt summarize FILE [--json] [--measured] [-k N]\n", help,
					    "k:", longopts };

int cmd_summarize(int argc, char **argv)
{
	const char *path = NULL;
	long k = CONFIG_AGENT_SUMMARY_K;
	bool json = false, measured = false;
	struct cli_args p;
	cli_args_init(&p, &command, argc, argv);
	for (int c; (c = cli_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case 'k':
			if (cli_parse_long(p.arg, 1, SUMMARY_MAX_K, &k) != 0) {
				char what[48];
				snprintf(what, sizeof(what), "-k takes 1 to %d, not",
					 SUMMARY_MAX_K);
				return cli_usage_error(&p, what, p.arg);
			}
			break;
		case 'j':
			json = true;
			break;
		case 'm':
			measured = true;
			break;
		case CLI_OPERAND:
			if (path)
				return cli_usage_error(&p, "one trace file at a time; also given",
						       p.arg);
			path = p.arg;
			break;
		}
	}
	if (!path)
		return cli_usage_error(&p, "no trace file given", NULL);
	struct rb_trace t;
	if (cli_trace_open("jitt summarize", path, &t) != 0)
		return 1;
	if (measured)
		rb_trace_use_measured(&t);
	struct agent_symbols syms;
	struct summary s;
	if (agent_symbols_open(&syms, &t) != 0) {
		rb_trace_close(&t);
		return cli_analysis_error("jitt summarize", path, -ENOMEM);
	}
	int e = summary_build(&s, &t, (unsigned)k);
	if (e) {
		cli_analysis_error("jitt summarize", path, e);
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
