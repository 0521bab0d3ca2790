/* SPDX-License-Identifier: MIT */
/*
 * ringbuf/sleds_libc.c - the C library's memory and string functions, given sleds so that a
 * summary can name them (x86_64, jitt-sleds.pc). In SQLite's speedtest1, musl's memcpy is
 * the function perf puts first (17.5-23% of the thread's samples, memmove and memcmp
 * 4-5% more), and the C library is built without sleds: its time went to whichever traced
 * function called it, and no summary could name it (issue 25, perf's top 3).
 *
 * jitt-sleds.pc links the program with -Wl,--wrap=NAME for each function here
 * (agent/runtime/Kbuild, JITT_SLEDS_LIBC): every call of NAME, the C library's own
 * included, comes to __wrap_NAME, a function of five NOPs and a tail jump to the library's
 * own (__real_NAME), whatever it is (musl's assembly, glibc's chosen by the CPU). Off, a
 * call pays the jump. Traced, the wrapper is a function like any other: its thunk's records
 * time the library's code, since the jump leaves the return through the thunk. The names
 * shown are the library's (agent/analysis/symbols.c), and learning's samples that fall in
 * the library's function count for its wrapper (agent/runtime/learn_samples.c), so a
 * profile's top keeps it, counted (docs/trace-points.md, "The C library's hot functions").
 *
 * The runtime's own calls of these functions come here too: on the control thread (not
 * traced) the thunk goes straight on; nothing here runs inside a record being written (the
 * thunks copy with rep movsq, and the ring's writers store slot by slot).
 */
#include <stddef.h>

#define LIBC_SLED(ret, name, params, args)                                                    \
	ret __real_##name params;                                                             \
	ret __wrap_##name params;                                                             \
	ret __wrap_##name params                                                              \
	{                                                                                     \
		return __real_##name args;                                                    \
	}

LIBC_SLED(void *, memcpy, (void *d, const void *s, size_t n), (d, s, n))
LIBC_SLED(void *, memmove, (void *d, const void *s, size_t n), (d, s, n))
LIBC_SLED(void *, memset, (void *d, int c, size_t n), (d, c, n))
LIBC_SLED(int, memcmp, (const void *a, const void *b, size_t n), (a, b, n))
LIBC_SLED(size_t, strlen, (const char *s), (s))
LIBC_SLED(int, strcmp, (const char *a, const char *b), (a, b))
LIBC_SLED(int, strncmp, (const char *a, const char *b, size_t n), (a, b, n))
LIBC_SLED(char *, strchr, (const char *s, int c), (s, c))
LIBC_SLED(size_t, strcspn, (const char *s, const char *reject), (s, reject))
