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
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* agent_spool_prepare, the folders closed again; err says why when it fails. */
static int prepare(const struct agent_config *c, char *err, size_t errsize)
{
	struct agent_spool_dirs d;
	int e = agent_spool_prepare(c, &d, err, errsize);
	if (!e)
		agent_spool_close(&d);
	return e;
}

static void setup(struct agent_config *c, const char *name)
{
	agent_config_defaults(c);
	snprintf(c->data_dir, sizeof(c->data_dir), "%s/%s", test_tmpdir(), name);
	char err[256] = "";
	if (prepare(c, err, sizeof(err)) != 0)
		test_fail(__FILE__, __LINE__, "prepare %s: %s", c->data_dir, err);
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
	char err[256] = "";
	CHECK_EQ_INT(prepare(&c, err, sizeof(err)), 0);
	/* The data folder reachable by apps of other uids, the spool shared (sticky, and
	 * set-group-id: each trace takes jittd's group), the rest jittd's alone. */
	const char *subs[] = { "", "/spool", "/traces", "/outbox", "/quarantine" };
	const unsigned modes[] = { 0711, 03733, 0700, 0700, 0700 };
	for (int i = 0; i < 5; i++) {
		char path[512];
		struct stat st;
		snprintf(path, sizeof(path), "%s%s", c.data_dir, subs[i]);
		CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
		CHECK_EQ_INT(st.st_mode & 07777, modes[i]);
	}
	/* Again: nothing to do. */
	CHECK_EQ_INT(prepare(&c, err, sizeof(err)), 0);
	/* A file where a folder should be. */
	char path[512];
	snprintf(path, sizeof(path), "%s/f", test_tmpdir());
	close(open(path, O_WRONLY | O_CREAT, 0600));
	snprintf(c.data_dir, sizeof(c.data_dir), "%s", path);
	CHECK_EQ_INT(prepare(&c, err, sizeof(err)), -ENOTDIR);
}

/* jittd refuses a data folder another user could change (planted symlinks, data_dir = /),
 * and says which folder and why. */
static void expect_refused(const char *data_dir, int want, const char *needle)
{
	struct agent_config c;
	agent_config_defaults(&c);
	snprintf(c.data_dir, sizeof(c.data_dir), "%s", data_dir);
	char err[512] = "";
	int e = prepare(&c, err, sizeof(err));
	if (e != want || !strstr(err, needle))
		test_fail(__FILE__, __LINE__, "%s: wanted %d with \"%s\", got %d \"%s\"", data_dir,
			  want, needle, e, err);
}

TEST(spool_prepare_refuses_what_others_could_change)
{
	const char *tmp = test_tmpdir();
	char a[512], b[512];
	expect_refused("/", -EINVAL, "root folder");
	expect_refused("//", -EINVAL, "root folder");
	expect_refused("relative/data", -EINVAL, "not an absolute path");
	/* A folder above that others may write, without the sticky bit. */
	snprintf(a, sizeof(a), "%s/open", tmp);
	mkdir(a, 0700);
	chmod(a, 0777);
	snprintf(b, sizeof(b), "%s/open/data", tmp);
	expect_refused(b, -EPERM, "open is writable by others (mode 0777) without the sticky bit");
	snprintf(b, sizeof(b), "%s/open/data", tmp);
	CHECK(access(b, F_OK) != 0); /* nothing made inside it */
	/* ... with the sticky bit, as /tmp: fine. */
	chmod(a, 01777);
	struct agent_config c;
	agent_config_defaults(&c);
	snprintf(c.data_dir, sizeof(c.data_dir), "%s", b);
	char err[512] = "";
	CHECK_EQ_INT(prepare(&c, err, sizeof(err)), 0);
	/* The data folder itself group-writable. */
	chmod(b, 0771);
	expect_refused(b, -EPERM, "data is writable by its group");
	chmod(b, 0711);
	/* Sub-folders planted as symlinks to someone else's folder. */
	char victim[512], link[600];
	snprintf(victim, sizeof(victim), "%s/victim", tmp);
	mkdir(victim, 0700);
	snprintf(link, sizeof(link), "%s/outbox", b);
	rmdir(link);
	CHECK(symlink(victim, link) == 0);
	expect_refused(b, -ELOOP, "data/outbox is a symbolic link");
	unlink(link);
	snprintf(link, sizeof(link), "%s/traces", b);
	rmdir(link);
	CHECK(symlink(victim, link) == 0);
	expect_refused(b, -ELOOP, "data/traces is a symbolic link");
	unlink(link);
	CHECK_EQ_INT(prepare(&c, err, sizeof(err)), 0);
	/* A sub-folder others may write; a spool others may write without the sticky bit. */
	snprintf(link, sizeof(link), "%s/quarantine", b);
	chmod(link, 0777);
	expect_refused(b, -EPERM, "data/quarantine is writable by others (mode 0777)");
	chmod(link, 0700);
	snprintf(link, sizeof(link), "%s/spool", b);
	chmod(link, 0733);
	expect_refused(b, -EPERM,
		       "data/spool is writable by others (mode 0733) without the "
		       "sticky bit");
	chmod(link, 01733);
	CHECK_EQ_INT(prepare(&c, err, sizeof(err)), 0);
	/* Owned by another uid: a folder above, a sub-folder (root can give them away). */
	if (geteuid() == 0) {
		/* A set-group-id spool of another group would give it every app's trace. */
		CHECK(chown(link, 0, 65534) == 0 && chmod(link, 03733) == 0);
		expect_refused(b, -EPERM, "data/spool is set-group-id with group 65534, not "
					  "jittd's group 0");
		CHECK(chown(link, 0, 0) == 0 && chmod(link, 03733) == 0);
		CHECK_EQ_INT(prepare(&c, err, sizeof(err)), 0);
		CHECK(chown(link, 65534, 65534) == 0);
		expect_refused(b, -EPERM, "data/spool is owned by uid 65534, not by uid 0");
		CHECK(chown(link, 0, 0) == 0);
		chmod(a, 0755);
		CHECK(chown(a, 65534, 65534) == 0);
		expect_refused(b, -EPERM, "open is owned by uid 65534, not by root or uid 0");
	} else {
		printf("    (not root: other owners not tried)\n");
	}
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
	put(&c, "spool", ".tmp-x", 10, 1);
	put(&c, "spool", "notes.txt", 10, 1);
	put(&c, "quarantine", "q.jtr", 10, 1);
	put(&c, "outbox", "o.jtr", 10, 1);

	uint64_t bytes = 0;
	/* The kept copies first, however new: 3 left, the spool's. */
	CHECK_EQ_INT(agent_spool_trim(&c, 0, &bytes), 2);
	CHECK_EQ_U64(bytes, 20);
	CHECK(!exists(&c, "traces", "t-a.jtr") && !exists(&c, "traces", "t-c.jtr"));
	CHECK(exists(&c, "spool", "s-b.jtr") && exists(&c, "spool", "s-d.jtr"));
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 0);
	/* A copy coming: no kept copy is left to give way, and no unsummarised trace does. */
	CHECK_EQ_INT(agent_spool_trim(&c, 1, &bytes), 0);
	CHECK(exists(&c, "spool", "s-b.jtr"));
	/* Smaller caps since: the spool's oldest goes. */
	c.max_traces = 2;
	CHECK_EQ_INT(agent_spool_trim(&c, 0, &bytes), 1);
	CHECK(!exists(&c, "spool", "s-b.jtr") && exists(&c, "spool", "s-d.jtr"));
	CHECK(exists(&c, "spool", ".tmp-x") && exists(&c, "spool", "notes.txt"));
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

/* Quarantined copies have caps of their own: a writer feeding jittd files it cannot
 * summarise fills neither the disk nor pushes out the traces kept in traces/. */
TEST(spool_trim_caps_quarantine_apart)
{
	struct agent_config c;
	setup(&c, "quarantine");
	c.max_traces = 2;
	put(&c, "traces", "kept.jtr", 10, 1);
	for (int i = 0; i < 5; i++) {
		char name[32];
		snprintf(name, sizeof(name), "bad-%d.jtr", i);
		put(&c, "quarantine", name, 10, 100 + i);
		snprintf(name, sizeof(name), "bad-%d.why", i);
		put(&c, "quarantine", name, 10, 100 + i);
	}
	uint64_t bytes = 0;
	CHECK_EQ_INT(agent_spool_trim(&c, 0, &bytes), 3);
	CHECK_EQ_U64(bytes, 30);
	CHECK(exists(&c, "traces", "kept.jtr"));
	CHECK(!exists(&c, "quarantine", "bad-0.jtr") && !exists(&c, "quarantine", "bad-0.why"));
	CHECK(!exists(&c, "quarantine", "bad-2.jtr") && !exists(&c, "quarantine", "bad-2.why"));
	CHECK(exists(&c, "quarantine", "bad-3.jtr") && exists(&c, "quarantine", "bad-3.why"));
	CHECK(exists(&c, "quarantine", "bad-4.jtr") && exists(&c, "quarantine", "bad-4.why"));
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
	/* 800 KiB + a copy of 300 KiB coming > 1 MiB: the spool's stay. */
	CHECK_EQ_INT(agent_spool_trim(&c, 300 << 10, &bytes), 0);
	CHECK(exists(&c, "spool", "trace-1-b.jtr") && exists(&c, "spool", "trace-1-c.jtr"));
	/* 1200 KiB in the spool alone: its oldest by name goes. */
	put(&c, "spool", "trace-1-d.jtr", 400 << 10, 5000);
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 1);
	CHECK(!exists(&c, "spool", "trace-1-b.jtr") && exists(&c, "spool", "trace-1-c.jtr"));
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

/* Writers' temporaries (of apps killed while persisting): a gone writer's is removed and
 * counted by the trim; a live writer's is left alone but counts against the caps while it
 * exists. */
TEST(spool_trim_removes_gone_writers_temporaries_and_counts_live_ones)
{
	struct agent_config c;
	setup(&c, "tmp");
	c.max_traces = 3;
	c.max_trace_mb = 100;
	time_t now = time(NULL);
	char dead[64], live[64], fresh[64], old[64];
	snprintf(dead, sizeof(dead), ".tmp-trace-%d-1-0", (int)test_dead_pid());
	snprintf(fresh, sizeof(fresh), ".tmp-trace-%d-2-0", (int)test_dead_pid());
	snprintf(live, sizeof(live), ".tmp-trace-%d-3-0", (int)getpid());
	snprintf(old, sizeof(old), ".tmp-trace-%d-4-0", (int)getpid());
	put(&c, "spool", dead, 1000, now - 2 * AGENT_SPOOL_TMP_GRACE_S); /* gone writer */
	put(&c, "spool", fresh, 10, now); /* gone, but just written: maybe another pid
					   * namespace's writer */
	put(&c, "spool", live, 10, now - 2 * AGENT_SPOOL_TMP_GRACE_S);	 /* a live writer */
	put(&c, "spool", old, 100, now - 2 * AGENT_SPOOL_TMP_MAX_AGE_S); /* too old for any */
	put(&c, "spool", "a.jtr", 10, now - 30);
	put(&c, "spool", "b.jtr", 10, now - 20);
	uint64_t bytes = 0;
	/* 2 traces + 2 live temporaries > 3: the oldest trace goes too. */
	CHECK_EQ_INT(agent_spool_trim(&c, 0, &bytes), 3);
	CHECK_EQ_U64(bytes, 1110);
	CHECK(!exists(&c, "spool", dead) && !exists(&c, "spool", old));
	CHECK(exists(&c, "spool", fresh) && exists(&c, "spool", live));
	CHECK(!exists(&c, "spool", "a.jtr") && exists(&c, "spool", "b.jtr"));
	/* By bytes too: 1 MiB of live temporary leaves no room for a 1 MiB trace in 1 MiB. */
	c.max_traces = 100;
	c.max_trace_mb = 1;
	put(&c, "spool", live, 1 << 20, now - 2 * AGENT_SPOOL_TMP_GRACE_S);
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 1);
	CHECK(!exists(&c, "spool", "b.jtr") && exists(&c, "spool", live));
}

/* Entries no writer of ours makes (planted by another user): listed as what they are
 * (never followed), neither counted nor trimmed; the target of a symlink is untouched. */
TEST(spool_planted_entries_are_listed_as_what_they_are_and_never_followed)
{
	struct agent_config c;
	setup(&c, "planted");
	c.max_traces = 1;
	char victim[512], path[512];
	snprintf(victim, sizeof(victim), "%s/victim.jtr", test_tmpdir());
	close(open(victim, O_WRONLY | O_CREAT, 0600));
	snprintf(path, sizeof(path), "%s/spool/link.jtr", c.data_dir);
	CHECK(symlink(victim, path) == 0);
	snprintf(path, sizeof(path), "%s/spool/fifo.jtr", c.data_dir);
	CHECK(mkfifo(path, 0600) == 0);
	snprintf(path, sizeof(path), "%s/spool/hard.jtr", c.data_dir);
	CHECK(link(victim, path) == 0);
	put(&c, "spool", "a.jtr", 10, 1000);
	put(&c, "spool", "b.jtr", 10, 2000);
	struct agent_spool_file *f;
	size_t n;
	CHECK_EQ_INT(agent_spool_list(&c, "spool", &f, &n), 0);
	CHECK_EQ_U64(n, 5);
	int plain = 0;
	for (size_t i = 0; i < n; i++) {
		plain += agent_spool_is_plain(&f[i]);
		if (!strcmp(f[i].name, "link.jtr"))
			CHECK(S_ISLNK(f[i].mode));
		if (!strcmp(f[i].name, "fifo.jtr"))
			CHECK(S_ISFIFO(f[i].mode));
		if (!strcmp(f[i].name, "hard.jtr"))
			CHECK(f[i].nlink == 2);
	}
	CHECK_EQ_INT(plain, 2);
	free(f);
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 1);
	CHECK(!exists(&c, "spool", "a.jtr") && exists(&c, "spool", "b.jtr"));
	CHECK(access(victim, F_OK) == 0);
}

/* The kept copy in traces/ is jittd's new file with a fresh time; the trace still waiting in
 * the spool may be older. Its summary does not exist yet: it is the last to go, after
 * every kept copy, whatever the times say. */
TEST(spool_trim_drops_kept_copies_before_an_unsummarised_trace)
{
	struct agent_config c;
	setup(&c, "order");
	c.max_traces = 2;
	c.max_trace_mb = 100;
	put(&c, "spool", "trace-1-1-0.jtr", 10, 1000);	/* waiting: no summary yet */
	put(&c, "traces", "trace-2-1-0.jtr", 10, 2000); /* summarised, copy kept */
	put(&c, "traces", "trace-3-1-0.jtr", 10, 3000); /* summarised, copy kept */
	CHECK(agent_spool_trim(&c, 0, NULL) >= 1);
	CHECK(exists(&c, "spool", "trace-1-1-0.jtr"));
	CHECK(!exists(&c, "traces", "trace-2-1-0.jtr"));
}

/* A slot file as a writer leaves it: its pid, and the length it claims; modified at mtime. */
static void put_slot(const struct agent_config *c, int k, pid_t pid, off_t bytes, time_t mtime)
{
	char name[32], text[24];
	snprintf(name, sizeof(name), "%s%d", AGENT_SPOOL_SLOT_PREFIX, k);
	put(c, "spool", name, bytes, mtime);
	char path[512];
	snprintf(path, sizeof(path), "%s/spool/%s", c->data_dir, name);
	int fd = open(path, O_WRONLY);
	int n = snprintf(text, sizeof(text), "%d\n", (int)pid);
	CHECK(fd >= 0 && pwrite(fd, text, (size_t)n, 0) == n);
	struct timespec t[2] = { { mtime, 0 }, { mtime, 0 } };
	CHECK(futimens(fd, t) == 0);
	close(fd);
}

static int slot_exists(const struct agent_config *c, int k)
{
	char name[32];
	snprintf(name, sizeof(name), "%s%d", AGENT_SPOOL_SLOT_PREFIX, k);
	return exists(c, "spool", name);
}

static int write_trace(const struct agent_config *c, char *path, size_t size)
{
	char spool[512];
	snprintf(spool, sizeof(spool), "%s/spool", c->data_dir);
	return agent_spool_write(c, spool, "test", NULL, 0, NULL, path, size);
}

/* The caps without listing: each trace claims one of max_traces slots before it is written;
 * with none free it is not written (-EDQUOT), and jittd's trim frees a slot only with its
 * trace and its kept copy gone. */
TEST(spool_write_claims_a_slot_and_drops_the_trace_when_none_is_free)
{
	struct agent_config c;
	setup(&c, "slots");
	c.max_traces = 2;
	char a[512], b[512], x[512];
	CHECK_EQ_INT(write_trace(&c, a, sizeof(a)), 0);
	CHECK_EQ_INT(write_trace(&c, b, sizeof(b)), 0);
	CHECK_EQ_INT(write_trace(&c, x, sizeof(x)), -EDQUOT);
	int ka = agent_spool_slot_of(strrchr(a, '/') + 1),
	    kb = agent_spool_slot_of(strrchr(b, '/') + 1);
	CHECK(ka >= 0 && kb >= 0 && ka != kb && ka < 2 && kb < 2);
	CHECK(slot_exists(&c, ka) && slot_exists(&c, kb));
	/* Nothing to trim: the slots are held by their traces. */
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 0);
	CHECK(slot_exists(&c, ka) && slot_exists(&c, kb));
	/* A's trace summarised and kept: its copy holds the slot. */
	char from[600], to[600];
	snprintf(to, sizeof(to), "%s/traces/%s", c.data_dir, strrchr(a, '/') + 1);
	snprintf(from, sizeof(from), "%s", a);
	CHECK(rename(from, to) == 0);
	CHECK_EQ_INT(write_trace(&c, x, sizeof(x)), -EDQUOT);
	/* The copy rotated out (room kept for the next trace): the slot is free again. */
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 1);
	CHECK(!slot_exists(&c, ka) && slot_exists(&c, kb));
	CHECK_EQ_INT(write_trace(&c, x, sizeof(x)), 0);
	CHECK_EQ_INT(agent_spool_slot_of(strrchr(x, '/') + 1), ka);
	CHECK_EQ_INT(agent_spool_slot_of("trace-1-2-3.jtr"), -1);
	CHECK_EQ_INT(agent_spool_slot_of("trace-1-2-3-s17.jtr"), 17);
}

/* The bytes too: the slots' lengths add up to at most max_trace_mb. */
TEST(spool_write_drops_a_trace_over_the_bytes_claimed)
{
	struct agent_config c;
	setup(&c, "slotbytes");
	c.max_traces = 4;
	c.max_trace_mb = 1;
	time_t now = time(NULL);
	/* Another writer's claim, alive (our pid), for all but 100 bytes of the cap. */
	put_slot(&c, 3, getpid(), (1 << 20) - 100, now);
	char p[512];
	CHECK_EQ_INT(write_trace(&c, p, sizeof(p)), -EDQUOT);
	CHECK(!slot_exists(&c, 0) && !slot_exists(&c, 1) && !slot_exists(&c, 2));
	put_slot(&c, 3, getpid(), 1000, now);
	CHECK_EQ_INT(write_trace(&c, p, sizeof(p)), 0);
}

/* A claimant that died before its trace was renamed in: its slot is free again after the
 * grace (its pid gone), or after the longest a writer takes (whatever its pid); a live
 * writer's young slot is left alone. */
TEST(spool_trim_frees_the_slot_of_a_dead_claimant)
{
	struct agent_config c;
	setup(&c, "deadslot");
	c.max_traces = 4;
	time_t now = time(NULL);
	put_slot(&c, 0, test_dead_pid(), 100, now - 2 * AGENT_SPOOL_TMP_GRACE_S);
	put_slot(&c, 1, test_dead_pid(), 100, now);
	put_slot(&c, 2, getpid(), 100, now - 2 * AGENT_SPOOL_TMP_GRACE_S);
	put_slot(&c, 3, getpid(), 100, now - 2 * AGENT_SPOOL_TMP_MAX_AGE_S);
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 2);
	CHECK(!slot_exists(&c, 0) && slot_exists(&c, 1) && slot_exists(&c, 2) &&
	      !slot_exists(&c, 3));
}

/* A folder read while a writer renames its temporary into its trace may list both names:
 * in the spool a slot's trace is one file, and nothing is dropped for the double listing. */
TEST(spool_trim_counts_a_slots_temporary_and_trace_once)
{
	struct agent_config c;
	setup(&c, "renaming");
	c.max_traces = 2;
	time_t now = time(NULL);
	char tmp[64], name[64];
	for (int k = 0; k < 2; k++) {
		put_slot(&c, k, getpid(), 1000, now);
		snprintf(name, sizeof(name), "trace-%d-%d-0-s%d.jtr", (int)getpid(), k, k);
		put(&c, "spool", name, 1000, now - 10 + k);
	}
	snprintf(tmp, sizeof(tmp), ".tmp-trace-%d-1-0-s1", (int)getpid());
	put(&c, "spool", tmp, 1000, now);
	CHECK_EQ_INT(agent_spool_trim(&c, 0, NULL), 0);
	snprintf(name, sizeof(name), "trace-%d-0-0-s0.jtr", (int)getpid());
	CHECK(exists(&c, "spool", name) && slot_exists(&c, 0) && slot_exists(&c, 1));
}
