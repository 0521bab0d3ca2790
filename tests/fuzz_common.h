/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz_common.h - what the libFuzzer targets (tests/fuzz_<name>.c) share: a fuzzed trace
 * parsed the way jittd would meet it, and an output stream that keeps a bounded prefix of
 * what was written so a target can check it (valid JSON, well-formed lines) without a
 * quadratic output (a hostile trace nested thousands deep) taking the fuzzer's memory.
 */
#ifndef JITT_TESTS_FUZZ_COMMON_H
#define JITT_TESTS_FUZZ_COMMON_H

#include "agent/analysis/symbols.h"
#include "ringbuf/tracefile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A fuzzer stops on the first failed check: abort() is what libFuzzer saves an input for. */
#define FUZZ_CHECK(cond)                                      \
	do {                                                  \
		if (!(cond))                                  \
			fuzz_fail(__FILE__, __LINE__, #cond); \
	} while (0)
_Noreturn void fuzz_fail(const char *file, int line, const char *what);

/*
 * A fuzzed trace: the input copied to an 8-byte aligned buffer (as jittd reads a file), its
 * CRC made to match when crc_fix (so mutations get past the checksum to the structure and the
 * rings behind it), parsed. Symbols are opened but never loaded: a fuzzed file names any path
 * it likes (as a hostile trace would), and the fuzzer must not open them. 0 or -EINVAL.
 */
struct fuzz_trace {
	uint8_t *buf;
	struct rb_trace t;
	struct agent_symbols syms;
};
int fuzz_trace_open(struct fuzz_trace *ft, const uint8_t *data, size_t size, bool crc_fix);
void fuzz_trace_close(struct fuzz_trace *ft);

/*
 * A write-only stream that counts every byte and keeps the first `cap` of them in memory,
 * discarding the rest (glibc's fopencookie: the fuzzers build against the host's libc).
 * After fclose, data holds the kept bytes (NUL-terminated), len how many, total how many
 * were written, and truncated whether some were dropped.
 */
struct fuzz_sink {
	char *data;
	size_t len, cap;
	uint64_t total;
	bool truncated;
};
FILE *fuzz_sink_open(struct fuzz_sink *s, size_t cap);
void fuzz_sink_free(struct fuzz_sink *s);

/* True when the environment variable is set to something other than "" or "0". */
bool fuzz_env(const char *name);

#endif
