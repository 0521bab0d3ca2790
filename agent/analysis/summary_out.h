/* SPDX-License-Identifier: MIT */
/*
 * agent/analysis/summary_out.h - a summary (agent/analysis/summary.h) for people (text) and for machines
 * (JSON, schema "jitt.summary" version 2, documented in docs/summary-format.md). The JSON
 * is what may leave the device: function names and build-ids, no paths, no ids of people.
 */
#ifndef JITT_AGENT_SUMMARY_OUT_H
#define JITT_AGENT_SUMMARY_OUT_H

#include "agent/analysis/summary.h"
#include "agent/analysis/symbols.h"

#include <stdio.h>

#define SUMMARY_SCHEMA	"jitt.summary"
#define SUMMARY_VERSION 3
/* The most bytes of JSON a summary takes: the lowest-ranked contexts are left out (and
 * counted in "contexts_left_out") until it fits. */
#define SUMMARY_JSON_MAX 4096

/* 0, or -EIO when writing failed. */
int summary_write_json(FILE *out, const struct summary *s, struct agent_symbols *syms);
int summary_write_text(FILE *out, const struct summary *s, struct agent_symbols *syms);
/* The line saying that `untimed` of `records` records were written without a time (sampled
 * time, ringbuf/untimed.h) and estimated in `windows` windows; nothing when untimed is 0.
 * jitt summarize and jitt decode print it. */
void summary_write_untimed(FILE *out, uint64_t records, uint64_t untimed, uint64_t windows,
			   unsigned measured);
/* The line saying that `calls` calls were counted (record.h, RB_CALLED), in `records`
 * records: their lengths are estimates; nothing when there are none. */
void summary_write_called(FILE *out, uint64_t records, uint64_t calls);

#endif
