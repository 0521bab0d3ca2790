/* SPDX-License-Identifier: MIT */
/*
 * tests/harness.h - a tiny unit-test harness that runs the same natively, under qemu-user
 * and inside a qemu board (no dependency beyond libc).
 *
 *   TEST(name) { CHECK(x == 1); CHECK_EQ_U64(a, b); }
 *
 * Tests register themselves; the program runs them in order (or those named on its command
 * line), prints "ok name" or "FAIL name" with each failed check, and ends with the line
 * "N passed, N failed".
 */
#ifndef JITT_TESTS_HARNESS_H
#define JITT_TESTS_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct test_case {
	const char *name;
	void (*fn)(void);
	struct test_case *next;
};

void test_register(struct test_case *tc);
/* Records a failed check of the running test; returns 0 so CHECK can be an expression. */
int test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The folder of fake /sys and /proc trees (sim/fakes), from --fakes or $JITT_FAKES. */
const char *test_fakes(void);
/* A fresh temporary folder for this test (removed by the harness afterwards). */
const char *test_tmpdir(void);
/* A pid no process has now: a child's, exited and reaped. */
pid_t test_dead_pid(void);

#define TEST(name)                                                     \
	static void name(void);                                        \
	__attribute__((constructor)) static void register_##name(void) \
	{                                                              \
		static struct test_case tc = { #name, name, NULL };    \
		test_register(&tc);                                    \
	}                                                              \
	static void name(void)

#define CHECK(cond) ((cond) ? 1 : test_fail(__FILE__, __LINE__, "%s", #cond))

#define CHECK_EQ_U64(a, b)                                                                       \
	do {                                                                                     \
		unsigned long long a_ = (a), b_ = (b);                                           \
		if (a_ != b_)                                                                    \
			test_fail(__FILE__, __LINE__, "%s == %s: %llu != %llu", #a, #b, a_, b_); \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                       \
	do {                                                                                     \
		long long a_ = (a), b_ = (b);                                                    \
		if (a_ != b_)                                                                    \
			test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_); \
	} while (0)

#define CHECK_STR(a, b)                                                                     \
	do {                                                                                \
		const char *a_ = (a), *b_ = (b);                                            \
		if (!a_ || !b_ || strcmp(a_, b_) != 0)                                      \
			test_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, \
				  a_ ? a_ : "(null)", b_ ? b_ : "(null)");                  \
	} while (0)

#endif
