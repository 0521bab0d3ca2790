/* SPDX-License-Identifier: MIT */
/* `jitt decode FILE`: a trace file as people read it: every thread's calls, in order, with
 * whole timestamps, names where the binary on this machine has symbols. */
#include "agent/cli/cli.h"
#include "agent/escape.h"
#include "agent/analysis/outer.h"
#include "agent/analysis/summary_out.h"
#include "agent/analysis/symbols.h"
#include "hal/cpu.h"
#include "hal/timer.h"
#include "ringbuf/record.h"
#include "ringbuf/decode.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INDENT 32

/* The name of an entry's function. */
static void name_of(struct agent_symbols *s, const struct rb_event *e, char *out, size_t size)
{
	uint64_t vaddr = e->id;
	int m = rb_trace_resolve(s->trace, e, &vaddr);
	agent_symbol_name(s, m, vaddr, out, size);
}

static double ms(const struct rb_trace *t, uint64_t from, uint64_t to)
{
	return (double)hal_ticks_to_ns(to - from, t->timer_hz) / 1e6;
}

static void print_thread(struct agent_symbols *s, const struct rb_file_thread *th)
{
	const struct rb_trace *t = s->trace;
	char tname[4 * RB_NAME_MAX + 8];
	printf("\nthread %u \"%s\": ring of %llu slots, %u laps, %llu valid, %s\n", th->tid,
	       agent_escape(tname, sizeof(tname), th->name), (unsigned long long)th->view.nslots,
	       th->laps, (unsigned long long)th->view.valid,
	       th->copied ? "validated copy (the thread was blocked)" : "clean stop");
	struct rb_event *ev;
	size_t n;
	struct rb_decode_stats st;
	int err = rb_decode(&th->view, t->ref_ticks, &ev, &n, &st);
	if (err) {
		printf("  cannot decode: %s\n", strerror(-err));
		return;
	}
	printf("  %llu records, %llu anchors, %llu cut by the wrap, %llu gaps repaired\n",
	       (unsigned long long)st.records, (unsigned long long)st.anchors,
	       (unsigned long long)st.cut, (unsigned long long)st.gaps);
	if (st.untimed) {
		fputs("  ", stdout);
		summary_write_untimed(stdout, st.records, st.untimed, st.windows, st.measured);
	}
	if (st.called) {
		fputs("  ", stdout);
		summary_write_called(stdout, st.called, st.called_calls);
	}
	if (th->sched_on)
		printf("  %u context switches (%llu lost), %zu times off its CPU\n", th->nsw,
		       (unsigned long long)th->sched_lost, th->view.noff);
	static struct agent_outer outer;
	agent_outer_frames(s, th, &outer);
	if (outer.n) {
		char text[4 * AGENT_OUTER_NAME];
		printf("  outer frames at the freeze (recovered from its stack):");
		for (size_t k = 0; k < outer.n; k++)
			printf("%s%s", k ? " > " : " ",
			       agent_escape(text, sizeof(text), outer.name[k]));
		printf("\n");
	}
	if (n == 0) {
		free(ev);
		return;
	}
	uint64_t t0 = ev[0].ts;
	uint64_t *starts = malloc(n * sizeof(*starts));
	size_t depth = 0, truncated = 0;
	char name[256], text[1024]; /* a name from the trace, and escaped (agent/escape.h) */
	printf("  %12s  event\n", "time (ms)");
	for (size_t i = 0; i < n; i++) {
		const struct rb_event *e = &ev[i];
		int indent = (int)(depth < MAX_INDENT ? depth : MAX_INDENT) * 2;
		if (e->kind == RB_EV_EXIT && depth)
			indent -= 2;
		printf("  %12.6f  ", ms(t, t0, e->ts));
		switch (e->kind) {
		case RB_EV_ENTRY:
			name_of(s, e, name, sizeof(name));
			printf("%*s> %s", indent, "", agent_escape(text, sizeof(text), name));
			if (depth >= MAX_INDENT)
				printf("  [depth %zu]", depth);
			printf("\n");
			if (starts)
				starts[depth] = e->ts;
			depth++;
			break;
		case RB_EV_EXIT:
			if (depth == 0) {
				truncated++;
				printf("< (entry overwritten or before the start)\n");
				break;
			}
			depth--;
			printf("%*s< %.6f ms\n", indent, "",
			       starts ? ms(t, starts[depth], e->ts) : 0.0);
			break;
		case RB_EV_OFF_CPU: /* printed at its end, like an exit */
			printf("%*s~ off its CPU %.6f ms, %s (left CPU %u)\n", indent, "",
			       ms(t, e->id, e->ts),
			       e->raw == RB_OFF_PREEMPTED ? "preempted" : "sleeping", e->arg);
			break;
		case RB_EV_SCHEDSTAT:
			printf("%*sschedstat %s %u us\n", indent, "",
			       e->raw == RB_SCHED_RUN ? "on-cpu" : "run-queue", e->arg);
			break;
		default:
			printf("%*s%s %u\n", indent, "", rb_ev_kind_name(e->kind), e->arg);
			break;
		}
	}
	if (truncated)
		printf("  %zu exits of calls that began before the ring's oldest record\n",
		       truncated);
	if (depth)
		printf("  %zu calls still running when the ring was frozen\n", depth);
	free(starts);
	free(ev);
}

static void help(FILE *out)
{
	fputs("prints every thread's records of the trace FILE, in order, with whole\n"
	      "timestamps, and names where this machine has the program's symbols\n",
	      out);
}

static const struct option longopts[] = { CLI_HELP_OPTION, { NULL, 0, NULL, 0 } };
static const struct cli_command command = { "jitt decode", "usage: jitt decode FILE\n", help, "",
					    longopts };

int cmd_decode(int argc, char **argv)
{
	const char *path = NULL;
	struct cli_args p;
	cli_args_init(&p, &command, argc, argv);
	for (int c; (c = cli_next(&p)) != CLI_END;) {
		if (c == CLI_EXIT)
			return p.status;
		if (path)
			return cli_usage_error(&p, "one trace file at a time; also given", p.arg);
		path = p.arg;
	}
	if (!path)
		return cli_usage_error(&p, "no trace file given", NULL);
	struct rb_trace t;
	if (cli_trace_open("jitt decode", path, &t) != 0)
		return 1;
	time_t secs = (time_t)(t.ref_realtime_ns / 1000000000u);
	struct tm tm;
	char when[64];
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fputs("trace ", stdout);
	agent_escape_fput(stdout, path);
	fputs("\n  reason: ", stdout);
	agent_escape_fput(stdout, t.reason);
	printf("\n  written %s.%06u UTC by pid %u; timer %llu Hz; %u-bit", when,
	       (unsigned)(t.ref_realtime_ns % 1000000000u / 1000), t.pid,
	       (unsigned long long)t.timer_hz, t.word_size * 8);
	if (t.point_ps)
		printf("; a trace point %.2f ns (measured by the program at its start)",
		       t.point_ps / 1000.0);
	if (t.timed_ps)
		printf(", %.2f ns timed (in a learning window)", t.timed_ps / 1000.0);
	putchar('\n');

	struct agent_symbols s;
	if (agent_symbols_open(&s, &t) != 0) {
		rb_trace_close(&t);
		return cli_analysis_error("jitt decode", path, -ENOMEM);
	}
	for (uint32_t m = 0; m < t.nmodules; m++) {
		char id[65] = "none";
		if (t.modules[m].build_id_len)
			agent_hex(t.modules[m].build_id, t.modules[m].build_id_len, id);
		printf("  module %u: ", m);
		agent_escape_fput(stdout, t.modules[m].path);
		printf(" build-id %s%s\n", id,
		       m == 0 ? (agent_symbols_ready(&s, 0) ? " (symbols)" : " (no matching symbols here)")
			      : "");
	}
	static const char *const sources[] = { "none", "perf context switches",
					       "schedstat samples at frame boundaries" };
	if (t.sched.source != RB_SCHED_NONE)
		printf("  scheduling: %s", sources[t.sched.source]);
	if (t.sched.source != RB_SCHED_NONE && t.sched.ncpus) {
		printf("; CPU classes");
		for (uint32_t c = 0; c < t.sched.ncpus; c++)
			printf(" %u:%s", c,
			       t.sched.cpu_class[c] == RB_CPU_CLASS_UNKNOWN
				       ? "?"
				       : hal_cpu_class_name((enum hal_cpu_class)t.sched.cpu_class[c]));
	}
	if (t.sched.source != RB_SCHED_NONE)
		printf("\n");
	for (uint32_t i = 0; i < t.nthreads; i++)
		print_thread(&s, &t.threads[i]);
	agent_symbols_close(&s);
	rb_trace_close(&t);
	return 0;
}
