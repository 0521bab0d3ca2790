/* SPDX-License-Identifier: MIT */
/*
 * The uploader's state files and queue (uploader/state.h, uploader/queue.h): the consent
 * line is strict, the budget holds across a "reboot" (parse of what was written) and with
 * a clock that went back, and the queue's names carry what the policy needs.
 */
#include "harness.h"
#include "uploader/queue.h"
#include "uploader/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(upload_consent_line_is_strict)
{
	bool g = true;
	CHECK_EQ_INT(up_consent_parse("granted\n", 8, &g), 0);
	CHECK(g);
	CHECK_EQ_INT(up_consent_parse("revoked", 7, &g), 0);
	CHECK(!g);
	static const char *const bad[] = { "", "\n", "granted\n\n", " granted", "GRANTED",
					   "granted\r\n", "yes", "granted\0x", "revokedd" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		g = true;
		size_t n = i == 7 ? 9 : strlen(bad[i]);
		CHECK_EQ_INT(up_consent_parse(bad[i], n, &g), -EINVAL);
	}
	CHECK_STR(up_consent_text(true), "granted\n");
}

TEST(upload_budget_round_trip_and_limits)
{
	static struct up_budget b, back;
	char text[512], err[128];
	const int64_t week = 7 * 86400, t0 = 1763900000;
	b.n = 0;
	int64_t reopens;
	CHECK_EQ_INT(up_budget_left(&b, t0, week, 3, &reopens), 3);
	up_budget_add(&b, t0);
	up_budget_add(&b, t0 + 10);
	up_budget_add(&b, t0 + 20);
	CHECK_EQ_INT(up_budget_left(&b, t0 + 30, week, 3, &reopens), 0);
	CHECK(reopens == t0 + week);
	/* A restart reads back what was written: the fourth still waits. */
	int n = up_budget_format(&b, text, sizeof(text));
	CHECK(n > 0);
	CHECK_EQ_INT(up_budget_parse(text, (size_t)n, &back, err, sizeof(err)), 0);
	CHECK_EQ_INT(back.n, 3);
	CHECK_EQ_INT(up_budget_left(&back, t0 + 30, week, 3, &reopens), 0);
	/* A week after the first, one place opens. */
	CHECK_EQ_INT(up_budget_left(&back, t0 + week, week, 3, &reopens), 1);
	/* A clock set back a day: the uploads "in the future" still count. */
	CHECK_EQ_INT(up_budget_left(&back, t0 - 86400, week, 3, &reopens), 0);
	up_budget_prune(&back, t0 + week + 15, week);
	CHECK_EQ_INT(back.n, 1);
	CHECK_EQ_INT(up_budget_left(&b, t0, week, 0, &reopens), 0);
}

TEST(upload_budget_of_the_largest_count_reads_back)
{
	/* upload_budget's range ends at 1000: a full file of 12-digit times must still be a
	 * budget file when read back, not "corrupt, counted as spent". */
	static struct up_budget b, back;
	static char text[UP_BUDGET_MAX * 28 + 32];
	char err[128];
	b.n = 0;
	for (int i = 0; i < UP_BUDGET_MAX; i++)
		up_budget_add(&b, 999999999999LL - i);
	int n = up_budget_format(&b, text, sizeof(text));
	CHECK(n > 0 && n <= UP_STATE_FILE_MAX);
	CHECK_EQ_INT(up_budget_parse(text, (size_t)n, &back, err, sizeof(err)), 0);
	CHECK_EQ_INT(back.n, UP_BUDGET_MAX);
}

TEST(upload_budget_parse_refuses_garbage)
{
	static struct up_budget b;
	char err[128];
	static const char *const bad[] = {
		"",
		"jitt.budget 2\n",
		"jitt.budget 1",
		"jitt.budget 1\nsent\n",
		"jitt.budget 1\nsent -5\n",
		"jitt.budget 1\nsent 0012\n",
		"jitt.budget 1\nsent 12x\n",
		"jitt.budget 1\nsent 1234567890123456789\n",
		"jitt.budget 1\nsent 5\nsent 6",
		"jitt.budget 1\nsend 5\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		CHECK_EQ_INT(up_budget_parse(bad[i], strlen(bad[i]), &b, err, sizeof(err)), -EINVAL);
		CHECK(err[0] != 0);
	}
	/* Out of order is sorted; the header alone is an empty budget. */
	const char *ok = "jitt.budget 1\nsent 30\nsent 10\nsent 20\n";
	CHECK_EQ_INT(up_budget_parse(ok, strlen(ok), &b, err, sizeof(err)), 0);
	CHECK(b.n == 3 && b.sent[0] == 10 && b.sent[2] == 30);
	CHECK_EQ_INT(up_budget_parse("jitt.budget 1\n", 14, &b, err, sizeof(err)), 0);
	CHECK_EQ_INT(b.n, 0);
}

static int open_fresh_dir(const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	mkdir(path, 0700);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

TEST(upload_queue_names_carry_the_policy)
{
	int dir = open_fresh_dir("queue");
	CHECK(dir >= 0);
	struct up_queued a, b, list[8];
	size_t n;
	const char *k1 = "6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21";
	const char *k2 = "00000000-0000-4000-8000-000000000002";
	CHECK_EQ_INT(up_queue_add(dir, k2, 200, 5, "{\"b\":1}", 7, &b), 0);
	CHECK_EQ_INT(up_queue_add(dir, k1, 100, 99000, "{\"a\":1}", 7, &a), 0);
	CHECK_EQ_INT(up_queue_add(dir, "not-a-uuid", 1, 1, "x", 1, &a), -EINVAL);
	/* Planted or foreign names are not reports. */
	int fd = openat(dir, "r-1-2-zz.json", O_CREAT | O_WRONLY, 0600);
	close(fd);
	CHECK_EQ_INT(up_queue_list(dir, list, 8, &n), 0);
	CHECK_EQ_INT(n, 2);
	CHECK_STR(list[0].key, k1); /* the oldest first */
	CHECK(list[0].severity_us == 99000 && list[0].attempts == 0);
	char buf[64];
	size_t len;
	CHECK_EQ_INT(up_queue_read(dir, &list[0], buf, sizeof(buf), &len), 0);
	CHECK(len == 7 && !memcmp(buf, "{\"a\":1}", 7));
	CHECK_EQ_INT(up_queue_read(dir, &list[0], buf, 3, &len), -EINVAL);
	/* An attempt survives a "restart": it is in the name. */
	CHECK_EQ_INT(up_queue_count_attempt(dir, &list[0]), 0);
	CHECK_EQ_INT(up_queue_count_attempt(dir, &list[0]), 0);
	CHECK_EQ_INT(up_queue_list(dir, list, 8, &n), 0);
	CHECK_EQ_INT(list[0].attempts, 2);
	CHECK_EQ_INT(up_queue_remove(dir, &list[1]), 0);
	CHECK_EQ_INT(up_queue_remove(dir, &list[1]), 0); /* gone already: fine */
	CHECK_EQ_INT(up_queue_clear(dir), 1);
	CHECK_EQ_INT(up_queue_list(dir, list, 8, &n), 0);
	CHECK_EQ_INT(n, 0);
	CHECK(faccessat(dir, "r-1-2-zz.json", F_OK, 0) == 0); /* not ours: left */
	close(dir);
}

TEST(upload_queue_name_parser_is_strict)
{
	struct up_queued q;
	const char *good = "r-100-5-6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21-3.json";
	CHECK_EQ_INT(up_queue_parse_name(good, &q), 0);
	CHECK(q.queued_s == 100 && q.severity_us == 5 && q.attempts == 3);
	static const char *const bad[] = {
		"r-100-5-6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21-3.json.tmp",
		"r-100-5-6F1C1F0E-3b7a-4c55-9a51-0d8d2b4b7e21-3.json",
		"r--5-6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21-3.json",
		"r-100-5-6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21-.json",
		"r-100-5-6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21-1234.json",
		"r-1000000000000-5-6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21-3.json",
		".tmp-r-100-5-6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21-3.json",
		"r-100-5-6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e2-3.json",
		"r-00100-5-6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21-3.json", /* found by fuzz_state */
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_INT(up_queue_parse_name(bad[i], &q), -EINVAL);
}
