/* SPDX-License-Identifier: MIT */
/*
 * The settings file (agent/config.h): good files with comments, blanks, tabs and CRLF;
 * every error names its line and leaves the settings unchanged; garbage and random bytes
 * never crash and never half-apply; loading names the file.
 */
#include "harness.h"
#include "deadline.h"
#include "agent/config.h"
#include "agent/jitt.h"
#include "agent/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int parse(struct agent_config *c, const char *text, char *err, size_t size)
{
	err[0] = 0;
	return agent_config_parse(c, text, strlen(text), err, size);
}

TEST(config_good_file)
{
	struct agent_config c;
	agent_config_defaults(&c);
	CHECK_STR(c.data_dir, CONFIG_AGENT_DATA_DIR);
	CHECK_EQ_INT(c.max_traces, CONFIG_AGENT_MAX_TRACES);
	CHECK_EQ_INT(c.enabled, 1);    /* the host defconfig's AGENT_ENABLED */
	CHECK_EQ_INT(c.trace_main, 0); /* AGENT_TRACE_MAIN is off by default */
	CHECK_EQ_INT(c.jank_normal_pct, CONFIG_AGENT_JANK_NORMAL_PCT);
	CHECK_EQ_INT(c.jank_warmup_frames, CONFIG_AGENT_JANK_WARMUP_FRAMES);
	CHECK_EQ_INT(c.cooldown_preempt_pct, CONFIG_AGENT_COOLDOWN_PREEMPT_PCT);
	const char *text = "# jitt settings\n"
			   "\n"
			   "data_dir = /data/jitt   # where traces go\n"
			   "run_dir=/run/j\r\n"
			   "\thang_ms\t=\t250\n"
			   "jank_frames = 5\n"
			   "frame_budget_us = 8333\n"
			   "cooldown_ms = 0\n"
			   "jank_normal_pct = 150\n"
			   "jank_warmup_frames = 0\n"
			   "cooldown_preempt_pct = 0\n"
			   "max_traces = 3\n"
			   "max_trace_mb = 64\n"
			   "keep_traces = 0\n"
			   "enabled = 0\n"
			   "trace_main = 1\n"
			   "ring_kb = 1024\n"
			   "system_uid = 1000\n"
			   "log_level = debug"; /* no final newline */
	char err[256];
	CHECK_EQ_INT(parse(&c, text, err, sizeof(err)), 0);
	CHECK_STR(c.data_dir, "/data/jitt");
	CHECK_STR(c.run_dir, "/run/j");
	CHECK_EQ_INT(c.hang_ms, 250);
	CHECK_EQ_INT(c.jank_frames, 5);
	CHECK_EQ_INT(c.frame_budget_us, 8333);
	CHECK_EQ_INT(c.cooldown_ms, 0);
	CHECK_EQ_INT(c.jank_normal_pct, 150);
	CHECK_EQ_INT(c.jank_warmup_frames, 0);
	CHECK_EQ_INT(c.cooldown_preempt_pct, 0);
	CHECK_EQ_INT(c.max_traces, 3);
	CHECK_EQ_INT(c.max_trace_mb, 64);
	CHECK_EQ_INT(c.keep_traces, 0);
	CHECK_EQ_INT(c.enabled, 0);
	CHECK_EQ_INT(c.trace_main, 1);
	CHECK_EQ_INT(c.ring_kb, 1024);
	CHECK_EQ_INT(c.system_uid, 1000);
	CHECK_EQ_INT(c.log_level, AGENT_LOG_DEBUG);
	/* A later file applies over the earlier settings; the last line of a key wins. */
	CHECK_EQ_INT(
		parse(&c, "system_uid = -1\nmax_traces = 9\nmax_traces = 10\n", err, sizeof(err)),
		0);
	CHECK_EQ_INT(c.system_uid, -1);
	CHECK_EQ_INT(c.max_traces, 10);
	CHECK_STR(c.data_dir, "/data/jitt");
	/* Empty and comment-only files change nothing. */
	struct agent_config before = c;
	CHECK_EQ_INT(parse(&c, "", err, sizeof(err)), 0);
	CHECK_EQ_INT(parse(&c, "# nothing\n\n   \n", err, sizeof(err)), 0);
	CHECK(memcmp(&before, &c, sizeof(c)) == 0);
}

TEST(config_errors_name_the_line)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
		{ "colour = blue\n", "line 1: unknown key 'colour'" },
		{ "# ok\nhang_ms = 400\nhang_ms 400\n", "line 3: expected key = value" },
		{ "\n\n\n\nhang_ms =\n", "line 5: expected key = value" },
		{ "= 3\n", "line 1: expected key = value" },
		{ "hang_ms = 10\n", "line 1: hang_ms wants a whole number in 50..60000" },
		{ "a_ok = 1\n", "line 1: unknown key 'a_ok'" },
		{ "max_traces = 0\n", "line 1: max_traces wants a whole number in 1..10000" },
		{ "max_traces = 3x\n", "line 1: max_traces wants a whole number" },
		{ "max_traces = 99999999999999999999999\n", "line 1: max_traces wants" },
		{ "keep_traces = 2\n", "line 1: keep_traces wants a whole number in 0..1" },
		{ "system_uid = -2\n", "line 1: system_uid wants" },
		{ "cooldown_ms = -1\n", "line 1: cooldown_ms wants" },
		{ "jank_normal_pct = 100\n", "line 1: jank_normal_pct wants 0 (off) or over 100" },
		{ "jank_normal_pct = 10001\n", "line 1: jank_normal_pct wants a whole number in" },
		{ "cooldown_preempt_pct = 1\n", "line 1: cooldown_preempt_pct wants 0 (off) or" },
		{ "jank_warmup_frames = -1\n", "line 1: jank_warmup_frames wants" },
		{ "max_trace_mb = 1.5\n", "line 1: max_trace_mb wants" },
		{ "log_level = loud\n", "line 1: log_level is error, warn, info or debug" },
		{ "ring_kb = 3000\n", "line 1: ring_kb wants a power of two" },
		{ "ring_kb = 2\n", "line 1: ring_kb wants a whole number in 4..1048576" },
		{ "ring_kb = 2097152\n", "line 1: ring_kb wants a whole number in 4..1048576" },
		{ "data_dir = relative/path\n", "line 1: data_dir must be an absolute path" },
		{ "hang_ms = 400\r\nrun_dir = run\r\n",
		  "line 2: run_dir must be an absolute path" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct agent_config c, before;
		agent_config_defaults(&c);
		before = c;
		char err[256];
		int e = parse(&c, cases[i].text, err, sizeof(err));
		if (e != -EINVAL || strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
			test_fail(__FILE__, __LINE__, "case %zu: %d \"%s\", wanted \"%s\"", i, e,
				  err, cases[i].err);
		CHECK(memcmp(&before, &c, sizeof(c)) == 0); /* nothing half-applied */
	}
	/* A too long path, a too long line, a NUL byte. */
	char text[1200];
	int n = snprintf(text, sizeof(text), "\ndata_dir = /");
	memset(text + n, 'd', 300);
	strcpy(text + n + 300, "\n");
	struct agent_config c;
	agent_config_defaults(&c);
	char err[256];
	CHECK_EQ_INT(parse(&c, text, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "line 2: data_dir is too long");
	memset(text, '#', 1000);
	text[1000] = 0;
	CHECK_EQ_INT(parse(&c, text, err, sizeof(err)), -EINVAL);
	CHECK_STR(err, "line 1: line too long");
	CHECK_EQ_INT(agent_config_parse(&c, "hang_ms = 400\nx\0y = 1\n", 22, err, sizeof(err)),
		     -EINVAL);
	CHECK_STR(err, "line 2: NUL byte");
	/* A tiny error buffer is cut, not overrun. */
	char tiny[8];
	memset(tiny, 'z', sizeof(tiny));
	CHECK_EQ_INT(agent_config_parse(&c, "nope = 1", 8, tiny, 6), -EINVAL);
	CHECK(tiny[5] == 0 && tiny[6] == 'z');
}

/* xorshift: the same garbage on every machine. */
static uint32_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)(*s >> 11);
}

static void check_outcome(const struct agent_config *before, const struct agent_config *after,
			  int e, const char *err)
{
	if (e == 0)
		return;
	if (e != -EINVAL || strncmp(err, "line ", 5) != 0)
		test_fail(__FILE__, __LINE__, "garbage gave %d \"%s\"", e, err);
	if (memcmp(before, after, sizeof(*before)) != 0)
		test_fail(__FILE__, __LINE__, "garbage half-applied (%s)", err);
}

TEST(config_garbage_never_crashes)
{
	static const char good[] = "data_dir = /d\nrun_dir = /r\nhang_ms = 400\n"
				   "max_traces = 8 # eight\nlog_level = info\nsystem_uid = 1000\n";
	static const char alphabet[] = "= #\n\r\t/_-0123456789abcdefghijklmnopqrstuvwxyz";
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	char buf[700], err[128];
	int ok = 0, bad = 0;
	for (int round = 0; round < 3000; round++) {
		size_t n = rnd(&seed) % sizeof(buf);
		switch (round % 3) {
		case 0: /* random bytes */
			for (size_t i = 0; i < n; i++)
				buf[i] = (char)rnd(&seed);
			break;
		case 1: /* random text of the file's own characters */
			for (size_t i = 0; i < n; i++)
				buf[i] = alphabet[rnd(&seed) % (sizeof(alphabet) - 1)];
			break;
		default: /* a good file with a few bytes changed */
			n = sizeof(good) - 1;
			memcpy(buf, good, n);
			for (int k = 1 + (int)(rnd(&seed) % 4); k > 0; k--)
				buf[rnd(&seed) % n] = (char)rnd(&seed);
			break;
		}
		struct agent_config c, before;
		agent_config_defaults(&c);
		before = c;
		err[0] = 0;
		int e = agent_config_parse(&c, buf, n, err, sizeof(err));
		check_outcome(&before, &c, e, err);
		e ? bad++ : ok++;
	}
	CHECK(ok > 0 && bad > 0); /* both sides were reached */
}

TEST(config_load_names_the_file)
{
	char path[512], err[512];
	snprintf(path, sizeof(path), "%s/jitt.conf", test_tmpdir());
	struct agent_config c;
	CHECK_EQ_INT(agent_config_load(&c, path, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, path) != NULL);

	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(write(fd, "max_traces = 4\nhang_ms = 1\n", 27) == 27);
	close(fd);
	CHECK_EQ_INT(agent_config_load(&c, path, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, path) != NULL && strstr(err, "line 2: hang_ms") != NULL);

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(write(fd, "max_traces = 4\n", 15) == 15);
	close(fd);
	CHECK_EQ_INT(agent_config_load(&c, path, err, sizeof(err)), 0);
	CHECK_EQ_INT(c.max_traces, 4);
	/* $JITT_CONFIG when no path is given. */
	setenv("JITT_CONFIG", path, 1);
	CHECK_EQ_INT(agent_config_load(&c, NULL, err, sizeof(err)), 0);
	CHECK_EQ_INT(c.max_traces, 4);
	unsetenv("JITT_CONFIG");

	/* Too large to be a settings file. */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	static char blank[20000];
	memset(blank, '\n', sizeof(blank));
	CHECK(write(fd, blank, sizeof(blank)) == (ssize_t)sizeof(blank));
	close(fd);
	CHECK_EQ_INT(agent_config_load(&c, path, err, sizeof(err)), -EFBIG);
	CHECK(strstr(err, path) != NULL);
}

/* Hostile input: a FIFO as the settings file hung jittd, and every traced app before
 * main(); a folder, /dev/zero or a huge file is refused by what it is, naming it. */
TEST(config_load_refuses_what_is_not_a_file)
{
	char path[512], err[512];
	struct agent_config c;
	snprintf(path, sizeof(path), "%s/jitt.fifo", test_tmpdir());
	CHECK_EQ_INT(mkfifo(path, 0600), 0);
	deadline_start(); /* without the fix, open() waits for a writer: EINTR, not a hang */
	int e = agent_config_load(&c, path, err, sizeof(err));
	deadline_stop();
	CHECK_EQ_INT(e, -EINVAL);
	CHECK(strstr(err, path) != NULL && strstr(err, "a FIFO, not a settings file") != NULL);
	/* ... and named by $JITT_CONFIG, as the runtime's constructor finds it. */
	setenv("JITT_CONFIG", path, 1);
	deadline_start();
	e = agent_config_load(&c, NULL, err, sizeof(err));
	deadline_stop();
	unsetenv("JITT_CONFIG");
	CHECK_EQ_INT(e, -EINVAL);

	CHECK_EQ_INT(agent_config_load(&c, test_tmpdir(), err, sizeof(err)), -EISDIR);
	CHECK(strstr(err, "a directory, not a settings file") != NULL);
	CHECK_EQ_INT(agent_config_load(&c, "/dev/zero", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "/dev/zero: a character device, not a settings file") != NULL);

	/* A sparse 1 GiB file: refused by its size, before a byte is read. */
	snprintf(path, sizeof(path), "%s/huge.conf", test_tmpdir());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && ftruncate(fd, 1 << 30) == 0);
	close(fd);
	CHECK_EQ_INT(agent_config_load(&c, path, err, sizeof(err)), -EFBIG);
	CHECK(strstr(err, path) != NULL && strstr(err, "larger than 16383 bytes") != NULL);
	/* A symlink to a good file is followed: /etc/jitt.conf may be one in an image. */
	char good[512];
	snprintf(good, sizeof(good), "%s/good.conf", test_tmpdir());
	fd = open(good, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(write(fd, "max_traces = 5\n", 15) == 15);
	close(fd);
	snprintf(path, sizeof(path), "%s/link.conf", test_tmpdir());
	CHECK_EQ_INT(symlink(good, path), 0);
	CHECK_EQ_INT(agent_config_load(&c, path, err, sizeof(err)), 0);
	CHECK_EQ_INT(c.max_traces, 5);
}

/* The runtime's constructor calls jitt_init(NULL), which reads $JITT_CONFIG: with a FIFO
 * there the app must run on, untraced, not wait before main() for a writer. */
TEST(config_fifo_does_not_hold_the_app)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/jitt.fifo", test_tmpdir());
	CHECK_EQ_INT(mkfifo(path, 0600), 0);
	setenv("JITT_CONFIG", path, 1);
	deadline_start();
	int e = jitt_init(NULL);
	deadline_stop();
	unsetenv("JITT_CONFIG");
	CHECK_EQ_INT(e, -EINVAL);
	jitt_shutdown(); /* nothing to stop: init failed */
}

TEST(config_paths)
{
	struct agent_config c;
	agent_config_defaults(&c);
	strcpy(c.data_dir, "/d");
	strcpy(c.run_dir, "/r");
	char buf[64];
	CHECK_EQ_INT(agent_config_path(&c, "spool", buf, sizeof(buf)), 0);
	CHECK_STR(buf, "/d/spool");
	CHECK_EQ_INT(agent_config_socket(&c, 0, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "/r/jittd.sock");
	CHECK_EQ_INT(agent_config_socket(&c, 1234, buf, sizeof(buf)), 0);
	CHECK_STR(buf, "/r/jitt-1234.sock");
	CHECK_EQ_INT(agent_config_socket(&c, 1234, buf, 10), -ENAMETOOLONG);
	CHECK_EQ_INT(agent_config_path(&c, "quarantine", buf, 8), -ENAMETOOLONG);
}
