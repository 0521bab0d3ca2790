/* SPDX-License-Identifier: MIT */
/*
 * tests/synth.h - synthetic traces with exactly known times, written through the ring-buffer
 * library: records encoded as the trace point encodes them (ringbuf/record.h), into rings
 * of a chosen size (so they can wrap), persisted with rb_trace_write like a real freeze.
 */
#ifndef JITT_TESTS_SYNTH_H
#define JITT_TESTS_SYNTH_H

#include "ringbuf/record.h"
#include "ringbuf/ring.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct synth_thread {
	uint64_t *slots;
	uint64_t nslots;  /* the ring's size */
	uint64_t written; /* slots written so far: the ring keeps the newest nslots */
	int tid;
	const char *name;
	bool bounded;
	uint64_t frozen; /* nonzero: a copied ring, frozen then (its open calls ran until then) */
	bool anomaly;	 /* the writer names it the anomaly's thread (a hang's) */
};

/* A ring of nslots slots (0: large enough never to wrap), starting with a sync record at
 * `start` as rb_start writes one. */
void synth_init(struct synth_thread *t, const char *name, int tid, uint64_t nslots, uint64_t start);
void synth_free(struct synth_thread *t);
void synth_entry(struct synth_thread *t, uint64_t ts, uint64_t id);
void synth_exit(struct synth_thread *t, uint64_t ts);
void synth_special(struct synth_thread *t, uint64_t ts, uint32_t kind, uint32_t arg);

/* A function id for a function of this program (narrow on 64-bit, absolute on 32-bit), so
 * summaries name it from the program's own symbols. */
uint64_t synth_id(void (*fn)(void));

/* Persist the threads as one trace file in the test's temporary folder. 0 or an errno. */
int synth_write(struct synth_thread *th, int n, const char *reason, char *path, size_t size);

#endif
