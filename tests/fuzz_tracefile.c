/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the trace-file parser, the decoder, the summariser (agent/analysis/summary.h,
 * with its JSON writer) and the ELF reader. Each input is
 * tried twice: as it is (the CRC check must turn garbage away cleanly), and with its CRC
 * made to match, so that mutations reach the structural checks and the decoder behind it.
 * Built with clang -fsanitize=fuzzer,address,undefined (make fuzz; a short run in make test).
 */
#include "agent/analysis/summary.h"
#include "agent/analysis/summary_out.h"
#include "agent/analysis/symbols.h"
#include "ringbuf/crc32.h"
#include "ringbuf/decode.h"
#include "ringbuf/elf.h"
#include "ringbuf/tracefile.h"

#include <stdlib.h>
#include <string.h>

static void parse_and_decode(const uint8_t *d, size_t size)
{
	struct rb_trace t;
	char err[256];
	if (rb_trace_parse(d, size, &t, err, sizeof(err)) != 0)
		return;
	for (uint32_t i = 0; i < t.nthreads; i++) {
		struct rb_event *ev;
		size_t n;
		if (rb_decode(&t.threads[i].view, t.ref_ticks, &ev, &n, NULL) == 0) {
			for (size_t k = 0; k < n; k++) {
				uint64_t vaddr;
				rb_trace_resolve(&t, &ev[k], &vaddr);
			}
			free(ev);
		}
	}
	/* The summary of whatever parsed, written out; symbols are never loaded from the
	 * paths a fuzzed file names. */
	struct summary s;
	struct agent_symbols syms;
	static FILE *null;
	if (!null)
		null = fopen("/dev/null", "w");
	if (agent_symbols_open(&syms, &t) == 0) {
		for (uint32_t m = 0; m < t.nmodules; m++)
			syms.state[m] = -1;
		if (summary_build(&s, &t, 10) == 0) {
			summary_write_json(null, &s, &syms);
			summary_write_text(null, &s, &syms);
			summary_free(&s);
		}
		agent_symbols_close(&syms);
	}
	rb_trace_close(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *d = aligned_alloc(8, (size + 8) & ~(size_t)7);
	if (!d)
		return 0;
	memcpy(d, data, size);
	parse_and_decode(d, size);
	if (size >= 104) {
		uint32_t crc = rb_crc32(0, d, size - 8);
		memcpy(d + size - 8, &crc, 4);
		parse_and_decode(d, size);
	}
	struct rb_elf elf;
	if (rb_elf_parse(d, size, &elf) == 0) {
		rb_elf_lookup(&elf, size);
		rb_elf_free(&elf);
	}
	free(d);
	return 0;
}
