/* SPDX-License-Identifier: MIT */
/*
 * The data folder (agent/spool.h): its sub-folders and the caps on raw traces, by count
 * and by bytes, oldest first (modification time, then name) over spool/ and traces/
 * together; temporaries and other files untouched.
 */
#include "harness.h"
#include "agent/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void setup(struct agent_config *c, const char *name)
{
	agent_config_defaults(c);
	snprintf(c->data_dir, sizeof(c->data_dir), "%s/%s", test_tmpdir(), name);
	CHECK_EQ_INT(agent_spool_prepare(c), 0);
}

/* A file of `bytes` (sparse) in data_dir/sub, modified at `mtime` seconds. */
static void put(const struct agent_config *c, const char *sub, const char *name, off_t bytes,
		time_t mtime)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s/%s", c->data_dir, sub, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, bytes) == 0);
	struct timespec t[2] = { { mtime, 0 }, { mtime, 0 } };
	CHECK(futimens(fd, t) == 0);
	close(fd);
}

static int exists(const struct agent_config *c, const char *sub, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s/%s", c->data_dir, sub, name);
	return access(path, F_OK) == 0;
}

TEST(spool_prepare)
{
	struct agent_config c;
	agent_config_defaults(&c);
	snprintf(c.data_dir, sizeof(c.data_dir), "%s/a/b/data", test_tmpdir());
	CHECK_EQ_INT(agent_spool_prepare(&c), 0);
	const char *subs[] = { "", "/spool", "/traces", "/outbox", "/quarantine" };
	for (int i = 0; i < 5; i++) {
		char path[512];
		struct stat st;
		snprintf(path, sizeof(path), "%s%s", c.data_dir, subs[i]);
		CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
		CHECK_EQ_INT(st.st_mode & 0777, 0700);
	}
	/* Again: nothing to do. */
	CHECK_EQ_INT(agent_spool_prepare(&c), 0);
	/* A file where a folder should be. */
	char path[512];
	snprintf(path, sizeof(path), "%s/f", test_tmpdir());
	close(open(path, O_WRONLY | O_CREAT, 0600));
	snprintf(c.data_dir, sizeof(c.data_dir), "%s", path);
	CHECK_EQ_INT(agent_spool_prepare(&c), -ENOTDIR);
}

TEST(spool_trim_by_count)
{
	struct agent_config c;
	setup(&c, "count");
	c.max_traces = 3;
	put(&c, "traces", "t-a.jtr", 10, 1000);
	put(&c, "spool", "s-b.jtr", 10, 2000);
	put(&c, "traces", "t-c.jtr", 10, 3000);
	put(&c, "spool", "s-d.jtr", 10, 4000);
	put(&c, "spool", "s-e.jtr", 10, 5000);
	/* Not traces: temporaries, other names, the other folders. */
	put(&c, "spool", ".tmp-trace-1", 10, 1);
	put(&c, "spool", "notes.txt", 10, 1);
	put(&c, "quarantine", "q.jtr", 10, 1);
	put(&c, "outbox", "o.jtr", 10, 1);

	uint64_t bytes = 0;
	CHECK_EQ_INT(agent_spool_trim(&c, 0, &bytes), 2); /* within the cap: 3 left */
	CHECK_EQ_U64(bytes, 20);
	CHECK(!exists(&c, "traces", "t-a.jtr") && !exists(&c, "spool", "s-b.jtr"));
	CHECK(exists(&c, "traces", "t-c.jtr") && exists(&c, "spool", "s-d.jtr"));
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 0);
	/* A file coming: room for it. */
	CHECK_EQ_INT(agent_spool_trim(&c, 1, &bytes), 1);
	CHECK(!exists(&c, "traces", "t-c.jtr") && exists(&c, "spool", "s-d.jtr"));
	CHECK(exists(&c, "spool", ".tmp-trace-1") && exists(&c, "spool", "notes.txt"));
	CHECK(exists(&c, "quarantine", "q.jtr") && exists(&c, "outbox", "o.jtr"));

	struct agent_spool_file *f;
	size_t n;
	CHECK_EQ_INT(agent_spool_list(&c, "spool", &f, &n), 0);
	CHECK_EQ_U64(n, 2);
	if (n == 2) {
		CHECK_STR(f[0].name, "s-d.jtr");
		CHECK_STR(f[1].name, "s-e.jtr");
		CHECK_EQ_U64(f[0].bytes, 10);
	}
	free(f);
}

TEST(spool_trim_by_bytes_and_name_order)
{
	struct agent_config c;
	setup(&c, "bytes");
	c.max_traces = 100;
	c.max_trace_mb = 1;
	/* Same time: the name decides (trace names grow with time). */
	put(&c, "spool", "trace-1-b.jtr", 400 << 10, 5000);
	put(&c, "traces", "trace-1-a.jtr", 400 << 10, 5000);
	put(&c, "spool", "trace-1-c.jtr", 400 << 10, 5000);
	uint64_t bytes = 0;
	CHECK_EQ_INT(agent_spool_trim(&c, 0, &bytes), 1); /* 1200 KiB > 1 MiB */
	CHECK_EQ_U64(bytes, 400 << 10);
	CHECK(!exists(&c, "traces", "trace-1-a.jtr") && exists(&c, "spool", "trace-1-b.jtr"));
	/* 800 KiB + 300 KiB coming > 1 MiB. */
	CHECK_EQ_INT(agent_spool_trim(&c, 300 << 10, &bytes), 1);
	CHECK(!exists(&c, "spool", "trace-1-b.jtr") && exists(&c, "spool", "trace-1-c.jtr"));
	/* A file larger than the cap on its own: everything goes, and that is all. */
	CHECK_EQ_INT(agent_spool_trim(&c, 2 << 20, NULL), 1);
	CHECK_EQ_INT(agent_spool_trim(&c, 2 << 20, NULL), 0);
}

TEST(spool_missing_folders)
{
	struct agent_config c;
	agent_config_defaults(&c);
	snprintf(c.data_dir, sizeof(c.data_dir), "%s/none", test_tmpdir());
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 0);
	struct agent_spool_file *f = (void *)1;
	size_t n = 1;
	CHECK_EQ_INT(agent_spool_list(&c, "spool", &f, &n), 0);
	CHECK(n == 0 && f == NULL);
}
