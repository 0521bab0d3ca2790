/* SPDX-License-Identifier: MIT */
/*
 * `jitt summarize FILE [-k N]`: what a developer reads first: per thread, the functions that
 * spent the most time themselves (self time, blocked time apart), from the calling-context
 * tree (agent/cct.h). More of the summary (chains, differential ranking, JSON) comes next.
 */
#include "cli.h"
#include "agent/cct.h"
#include "agent/symbols.h"
#include "hal/timer.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t key_of(void *ctx, const struct rb_event *e)
{
	return agent_func_key(ctx, e);
}

static double ms(const struct rb_trace *t, uint64_t ticks)
{
	return (double)hal_ticks_to_ns(ticks, t->timer_hz) / 1e6;
}

/* A duration people read at a glance: "12.345 ms", "45.6 us", "780 ns". */
static const char *human(const struct rb_trace *t, uint64_t ticks, char *buf, size_t size)
{
	uint64_t ns = hal_ticks_to_ns(ticks, t->timer_hz);
	if (ns >= 1000000)
		snprintf(buf, size, "%.3f ms", (double)ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, size, "%.1f us", (double)ns / 1e3);
	else
		snprintf(buf, size, "%llu ns", (unsigned long long)ns);
	return buf;
}

static void summarize_thread(struct agent_symbols *s, const struct rb_file_thread *th, int k)
{
	const struct rb_trace *t = s->trace;
	struct rb_event *ev;
	size_t n;
	struct cct c;
	struct cct_func *f;
	size_t nf;
	printf("\nthread %u \"%s\"", th->tid, th->name);
	if (rb_decode(&th->view, t->ref_ticks, &ev, &n, NULL) != 0 ||
	    cct_build(&c, ev, n, key_of, (void *)t) != 0) {
		printf(": cannot decode\n");
		return;
	}
	free(ev);
	if (cct_functions(&c, CCT_WHOLE, &f, &nf) != 0) {
		cct_free(&c);
		printf(": out of memory\n");
		return;
	}
	double span = ms(t, c.t1 - c.t0);
	char b1[32], b2[32];
	printf(": %s traced, %u calling contexts, %zu functions%s\n",
	       human(t, c.t1 - c.t0, b1, sizeof(b1)), c.n - 1, nf,
	       th->copied ? " (validated copy: the thread was blocked)" : "");
	printf("  %12s %6s %10s %12s  %s\n", "self", "self%", "calls", "blocked", "function");
	for (size_t i = 0; i < nf && (int)i < k; i++) {
		char name[256];
		if (f[i].func == CCT_UNKNOWN)
			snprintf(name, sizeof(name), "(entered before the ring's oldest record)");
		else
			agent_key_name(s, f[i].func, name, sizeof(name));
		printf("  %12s %5.1f%% %10llu %12s  %s%s\n", human(t, f[i].self, b1, sizeof(b1)),
		       span > 0 ? 100.0 * ms(t, f[i].self) / span : 0.0,
		       (unsigned long long)f[i].calls, human(t, f[i].blocked, b2, sizeof(b2)), name,
		       f[i].truncated ? " [cut by the ring]" : "");
	}
	free(f);
	cct_free(&c);
}

int cmd_summarize(int argc, char **argv)
{
	const char *path = NULL;
	int k = 10;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 1000) {
				fprintf(stderr, "jitt summarize: -k takes 1 to 1000\n");
				return 2;
			}
			k = (int)v;
		} else if (argv[i][0] != '-' && !path) {
			path = argv[i];
		} else {
			fprintf(stderr, "usage: jitt summarize FILE [-k N]\n");
			return 2;
		}
	}
	if (!path) {
		fprintf(stderr, "usage: jitt summarize FILE [-k N]\n");
		return 2;
	}
	struct rb_trace t;
	char err[256] = "";
	int e = rb_trace_open(path, &t, err, sizeof(err));
	if (e) {
		fprintf(stderr, "jitt summarize: %s: %s\n", path, e == -EINVAL ? err : strerror(-e));
		return 1;
	}
	struct agent_symbols s;
	if (agent_symbols_open(&s, &t) != 0) {
		rb_trace_close(&t);
		return 1;
	}
	printf("summary of %s\n  reason: %s\n", path, t.reason);
	for (uint32_t i = 0; i < t.nthreads; i++)
		summarize_thread(&s, &t.threads[i], k);
	agent_symbols_close(&s);
	rb_trace_close(&t);
	return 0;
}
