/* SPDX-License-Identifier: MIT */
#include "synth.h"
#include "harness.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* An unbounded ring grows; a bounded one overwrites its oldest slot, as the trace point. */
static void put(struct synth_thread *t, uint64_t v)
{
	if (!t->bounded && t->written == t->nslots) {
		t->nslots = t->nslots ? 2 * t->nslots : 1024;
		t->slots = realloc(t->slots, t->nslots * sizeof(*t->slots));
		if (!t->slots)
			abort();
	}
	t->slots[t->written++ % t->nslots] = v;
}

void synth_init(struct synth_thread *t, const char *name, int tid, uint64_t nslots, uint64_t start)
{
	memset(t, 0, sizeof(*t));
	t->name = name;
	t->tid = tid;
	if (nslots) {
		t->bounded = true;
		t->nslots = nslots;
		t->slots = calloc(nslots, sizeof(*t->slots));
	}
	synth_special(t, start, RB_SYNC, 0);
}

void synth_free(struct synth_thread *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

void synth_entry(struct synth_thread *t, uint64_t ts, uint64_t id)
{
	if (id >= RB_FIRST_ID && id <= UINT32_MAX) {
		put(t, rb_tag(ts, (uint32_t)id));
	} else {
		put(t, id);
		put(t, rb_tag(ts, RB_WIDE));
	}
}

void synth_exit(struct synth_thread *t, uint64_t ts)
{
	put(t, rb_tag(ts, RB_EXIT));
}

void synth_special(struct synth_thread *t, uint64_t ts, uint32_t kind, uint32_t arg)
{
	put(t, rb_special_payload(ts, arg));
	put(t, rb_tag(ts, kind));
}

uint64_t synth_id(void (*fn)(void))
{
	/* What rb_enter records: the low half of the address (ringbuf/trace.h). */
	uintptr_t a = (uintptr_t)fn;
	return sizeof(void *) == 4 ? a : (uint32_t)a;
}

int synth_write(struct synth_thread *th, int n, const char *reason, char *path, size_t size)
{
	struct rb_frozen f[16];
	if (n > 16)
		return -22;
	for (int i = 0; i < n; i++) {
		struct synth_thread *t = &th[i];
		uint64_t nslots = t->nslots ? t->nslots : 1;
		f[i] = (struct rb_frozen){ .slots = t->slots ? t->slots : (uint64_t[1]){ 0 },
					   .nslots = nslots,
					   .end = t->written % nslots,
					   .valid = t->written < nslots ? t->written : nslots,
					   .laps = (uint32_t)(t->written / nslots),
					   .copied = t->frozen != 0,
					   .frozen_ticks = t->frozen,
					   .anomaly = t->anomaly,
					   .tid = t->tid };
		strncpy(f[i].name, t->name, sizeof(f[i].name) - 1);
	}
	return rb_trace_write(test_tmpdir(), reason, f, n, path, size);
}
