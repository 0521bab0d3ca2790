/* SPDX-License-Identifier: MIT */
/*
 * agent/runtime/learn_samples.c - where the traced threads' time goes, by function, as a
 * profiler sees it: perf's samples of each traced thread (hal/sample.h), each address
 * turned into the program function (sled) that holds it. Sleds learning (sleds.c) keeps
 * the top of this profile traced: a profile's top is what a summary must name (issue 25),
 * and the traced windows' own times cannot rank short functions (their trace points weigh
 * more than their work). A sample falls where the code ran, not where the trace points
 * ran (the thunks and hooks are not a program function), and whether the function is
 * traced or not.
 *
 * All on the control thread. Where perf is refused (paranoid 3, seccomp) no thread is
 * sampled and sleds.c does without (agent_samples_follow returns an error).
 */
#define _GNU_SOURCE
#include "agent/runtime/runtime.h"
#include "hal/sample.h"
#include "ringbuf/elf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_THREADS 64 /* CONFIG_RB_MAX_TRACED_THREADS's range, as sched.c's */
#define SAMPLE_PAGES 8	  /* 2,048 samples a thread between two reads */

struct fn_range {
	uintptr_t start, end; /* the function's code, as loaded */
	uint32_t idx;	      /* its sled */
};

static struct {
	struct fn_range *fns; /* sorted by start, not overlapping */
	size_t nfns;
	bool *blind; /* by sled: agent_samples_blind */
	size_t nblind;
	uint64_t period_ns;
	int refused; /* the error the last open got: sampling is off */
	struct {
		pid_t tid; /* 0: free */
		struct hal_perf_ring ring;
	} t[SAMPLE_THREADS];
} smp;

RT static int cmp_start(const void *a, const void *b)
{
	uintptr_t x = ((const struct fn_range *)a)->start, y = ((const struct fn_range *)b)->start;
	return x < y ? -1 : x > y;
}

RT int agent_samples_start(const uintptr_t *sleds, size_t nsleds, uintptr_t bias,
			   const struct rb_elf *elf)
{
	/* Each sled's function, and the C library's function behind each of its wrappers */
	smp.fns = calloc(2 * nsleds + 1, sizeof(*smp.fns));
	smp.blind = calloc(nsleds + 1, sizeof(*smp.blind));
	if (!smp.fns || !smp.blind) {
		free(smp.fns), free(smp.blind);
		smp.fns = NULL, smp.blind = NULL;
		return -ENOMEM;
	}
	smp.nblind = nsleds;
	size_t n = 0;
	for (size_t i = 0; i < nsleds; i++) {
		const struct rb_symbol *s = elf ? rb_elf_lookup(elf, sleds[i] - bias) : NULL;
		bool whole = s && s->addr == sleds[i] - bias;
		smp.fns[n].start = sleds[i];
		/* A stripped program: up to the next function with a sled (below) */
		smp.fns[n].end = whole && s->size ? sleds[i] + s->size : UINTPTR_MAX;
		smp.fns[n++].idx = (uint32_t)i;
		/* A wrapper's time is the library function's it jumps to (ringbuf/sleds_libc.c),
		 * where the program links that in (static): its samples are the wrapper's */
		const char *lib = whole ? rb_elf_shown_name(s->name) : NULL;
		if (!lib || lib == s->name)
			continue; /* not a wrapper */
		const struct rb_symbol *real = rb_elf_find(elf, lib);
		if (real && real->addr != s->addr) {
			/* musl's assembly (memcpy, memmove, memset) has no size: up to the next
			 * function, as perf takes it */
			uint64_t size = real->size;
			for (const struct rb_symbol *x = real + 1;
			     !size && x < elf->syms + elf->nsyms && x->addr - real->addr < 4096; x++)
				size = x->addr - real->addr;
			smp.fns[n].start = (uintptr_t)real->addr + bias;
			smp.fns[n].end = smp.fns[n].start + (size ? size : 1);
			smp.fns[n++].idx = (uint32_t)i;
		} else {
			smp.blind[i] = true;
		}
	}
	qsort(smp.fns, n, sizeof(*smp.fns), cmp_start);
	for (size_t i = 0; i + 1 < n; i++)
		if (smp.fns[i].end > smp.fns[i + 1].start)
			smp.fns[i].end = smp.fns[i + 1].start;
	if (n && smp.fns[n - 1].end == UINTPTR_MAX)
		smp.fns[n - 1].end = smp.fns[n - 1].start + 4096; /* a guess's bound */
	smp.nfns = n;
	return 0;
}

RT long agent_samples_sled_of(uintptr_t ip)
{
	size_t lo = 0, hi = smp.nfns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (smp.fns[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && ip < smp.fns[lo - 1].end ? (long)smp.fns[lo - 1].idx : -1;
}

RT int agent_samples_follow(const pid_t *tids, int n, uint64_t period_ns)
{
	if (!smp.fns)
		return -ENODEV;
	/* Threads no longer traced: closed */
	for (int i = 0; i < SAMPLE_THREADS; i++) {
		bool live = false;
		for (int k = 0; k < n && !live && smp.t[i].tid; k++)
			live = tids[k] == smp.t[i].tid;
		if (smp.t[i].tid && !live) {
			hal_perf_ring_close(&smp.t[i].ring);
			smp.t[i].tid = 0;
		}
	}
	bool repace = period_ns != smp.period_ns;
	smp.period_ns = period_ns;
	for (int k = 0; k < n && !smp.refused; k++) {
		int i = 0, free_at = -1;
		for (; i < SAMPLE_THREADS && smp.t[i].tid != tids[k]; i++)
			if (!smp.t[i].tid && free_at < 0)
				free_at = i;
		if (i < SAMPLE_THREADS) {
			if (repace)
				(void)hal_sample_period(&smp.t[i].ring, period_ns);
			continue;
		}
		if (free_at < 0)
			break; /* more threads than slots: the first ones are sampled */
		int e = hal_sample_open(&smp.t[free_at].ring, tids[k], SAMPLE_PAGES, period_ns);
		if (e == -ESRCH)
			continue; /* it has just exited */
		if (e) {
			smp.refused = e;
			break;
		}
		smp.t[free_at].tid = tids[k];
	}
	return smp.refused;
}

RT uint64_t agent_samples_read(uint64_t *hits, uint64_t *recent, uint64_t weight)
{
	static uint8_t buf[SAMPLE_PAGES * 4096];
	static uint64_t ips[SAMPLE_PAGES * 4096 / 16];
	uint64_t all = 0;
	for (int i = 0; i < SAMPLE_THREADS; i++) {
		if (!smp.t[i].tid)
			continue;
		long got;
		/* A full buffer may have left records: read until none are left */
		while ((got = hal_sample_drain(&smp.t[i].ring, buf, sizeof(buf))) > 0) {
			uint64_t skipped, lost = 0;
			size_t n = hal_sample_parse(buf, (size_t)got, ips,
						    sizeof(ips) / sizeof(ips[0]), &skipped, &lost);
			for (size_t k = 0; k < n; k++) {
				long f = agent_samples_sled_of((uintptr_t)ips[k]);
				if (f >= 0)
					hits[f]++, recent[f] += weight, all++;
			}
			if ((size_t)got < sizeof(buf) / 2)
				break;
		}
	}
	return all;
}

RT uint64_t agent_samples_cpu_ns(void)
{
	uint64_t all = 0, ns = 0;
	for (int i = 0; i < SAMPLE_THREADS; i++)
		if (smp.t[i].tid && !hal_sample_cpu_ns(&smp.t[i].ring, &ns))
			all += ns;
	return all;
}

RT bool agent_samples_blind(size_t idx)
{
	return idx < smp.nblind && smp.blind[idx];
}

RT void agent_samples_stop(void)
{
	for (int i = 0; i < SAMPLE_THREADS; i++)
		if (smp.t[i].tid) {
			hal_perf_ring_close(&smp.t[i].ring);
			smp.t[i].tid = 0;
		}
	free(smp.fns);
	free(smp.blind);
	memset(&smp, 0, sizeof(smp));
}
