/* SPDX-License-Identifier: MIT */
/* The settings file of agent/config.h: Kconfig defaults, then `key = value` lines. */
#define _GNU_SOURCE /* secure_getenv */
#include "agent/config.h"
#include "agent/log.h"
#include "hal/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CFG __attribute__((no_instrument_function))

/* The uploader's Kconfig defaults, or its private ones in a build without it (where jittd
 * never starts it: these only make the keys valid in a shared settings file). */
#ifdef CONFIG_UPLOADER
#define UP_DEFAULT(name, otherwise) CONFIG_UPLOADER_##name
#else
#define UP_DEFAULT(name, otherwise) otherwise
#endif

CFG static void upload_defaults(struct agent_upload_config *u)
{
	snprintf(u->url, sizeof(u->url), "%s", UP_DEFAULT(URL, ""));
	snprintf(u->ca_file, sizeof(u->ca_file), "%s", UP_DEFAULT(CA_FILE, ""));
	snprintf(u->pin, sizeof(u->pin), "%s", UP_DEFAULT(PIN_SHA256, ""));
	snprintf(u->consent_file, sizeof(u->consent_file), "%s", UP_DEFAULT(CONSENT_FILE, ""));
	snprintf(u->thread_names, sizeof(u->thread_names), "%s",
		 UP_DEFAULT(THREAD_NAMES, "main ui render"));
	snprintf(u->reasons, sizeof(u->reasons), "%s", UP_DEFAULT(REASONS, ""));
#if defined(CONFIG_UPLOADER_PICK_SEVERE)
	snprintf(u->pick, sizeof(u->pick), "severe");
#elif defined(CONFIG_UPLOADER_PICK_CAMPAIGN)
	snprintf(u->pick, sizeof(u->pick), "campaign");
	snprintf(u->campaign, sizeof(u->campaign), "%s", CONFIG_UPLOADER_CAMPAIGN);
#else
	snprintf(u->pick, sizeof(u->pick), "first");
#endif
	u->budget = UP_DEFAULT(BUDGET_COUNT, 3);
	u->budget_days = UP_DEFAULT(BUDGET_DAYS, 7);
	u->rotation_days = UP_DEFAULT(ROTATION_DAYS, 30);
	u->max_attempts = UP_DEFAULT(MAX_ATTEMPTS, 8);
	u->timeout_ms = UP_DEFAULT(TIMEOUT_MS, 10000);
	u->poll_s = 30;
	u->backoff_ms = 2000;
#ifdef CONFIG_UPLOADER_ALLOW_ETHERNET
	u->allow_ethernet = 1;
#endif
}

/* The percentages compare a frame with a normal one: at or below 100 they would call a
 * normal frame slow. Kconfig's range cannot say "0 or over 100"; the build does. */
_Static_assert(CONFIG_AGENT_JANK_NORMAL_PCT == 0 || CONFIG_AGENT_JANK_NORMAL_PCT > 100,
	       "AGENT_JANK_NORMAL_PCT is 0 or over 100");
_Static_assert(CONFIG_AGENT_COOLDOWN_PREEMPT_PCT == 0 || CONFIG_AGENT_COOLDOWN_PREEMPT_PCT > 100,
	       "AGENT_COOLDOWN_PREEMPT_PCT is 0 or over 100");

CFG void agent_config_defaults(struct agent_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->data_dir, sizeof(c->data_dir), "%s", CONFIG_AGENT_DATA_DIR);
	snprintf(c->run_dir, sizeof(c->run_dir), "%s", CONFIG_AGENT_RUN_DIR);
	c->hang_ms = CONFIG_AGENT_HANG_MS;
	c->jank_frames = CONFIG_AGENT_JANK_FRAMES;
	c->frame_budget_us = CONFIG_AGENT_FRAME_BUDGET_US;
	c->cooldown_ms = CONFIG_AGENT_COOLDOWN_MS;
	c->jank_normal_pct = CONFIG_AGENT_JANK_NORMAL_PCT;
	c->jank_warmup_frames = CONFIG_AGENT_JANK_WARMUP_FRAMES;
	c->cooldown_preempt_pct = CONFIG_AGENT_COOLDOWN_PREEMPT_PCT;
	c->max_traces = CONFIG_AGENT_MAX_TRACES;
	c->max_trace_mb = CONFIG_AGENT_MAX_TRACE_MB;
	c->max_threads = CONFIG_RB_MAX_TRACED_THREADS;
	c->ring_kb = (uint32_t)(((uint64_t)1 << CONFIG_RB_RING_SHIFT) / 1024);
#ifdef CONFIG_AGENT_KEEP_TRACES
	c->keep_traces = 1;
#endif
	c->system_uid = CONFIG_AGENT_SYSTEM_UID;
#ifdef CONFIG_AGENT_ENABLED
	c->enabled = 1;
#endif
#ifdef CONFIG_AGENT_TRACE_MAIN
	c->trace_main = 1;
#endif
	c->log_level = CONFIG_AGENT_LOG_LEVEL;
	c->sched_pages = CONFIG_AGENT_SCHED_PAGES;
	snprintf(c->sleds, sizeof(c->sleds), "sampled");
	/* Learnt by default: every function traced costs an interpreter 3x to 4x, and the
	 * learnt summaries name perf's top as often or more (docs/trace-points.md, "A
	 * profile's top from perf's samples") */
	c->sleds_learn_ns = 250;
	upload_defaults(&c->up);
}

/* The numeric keys, their fields and ranges (the Kconfig ranges). */
static const struct {
	const char *key;
	size_t off;
	int64_t min, max;
	int wide; /* int64_t field, else uint32_t (int for the 0-or-1 switches) */
} numbers[] = {
	{ "hang_ms", offsetof(struct agent_config, hang_ms), 50, 60000, 0 },
	{ "jank_frames", offsetof(struct agent_config, jank_frames), 1, 1000, 0 },
	{ "frame_budget_us", offsetof(struct agent_config, frame_budget_us), 1000, 10000000, 0 },
	{ "cooldown_ms", offsetof(struct agent_config, cooldown_ms), 0, 86400000, 0 },
	{ "jank_normal_pct", offsetof(struct agent_config, jank_normal_pct), 0, 10000, 0 },
	{ "jank_warmup_frames", offsetof(struct agent_config, jank_warmup_frames), 0, 100000, 0 },
	{ "cooldown_preempt_pct", offsetof(struct agent_config, cooldown_preempt_pct), 0, 10000,
	  0 },
	{ "max_traces", offsetof(struct agent_config, max_traces), 1, 10000, 0 },
	{ "max_trace_mb", offsetof(struct agent_config, max_trace_mb), 1, 100000, 0 },
	{ "max_threads", offsetof(struct agent_config, max_threads), 1, 64, 0 },
	/* ringbuf's RB_RING_MIN_BYTES..RB_RING_MAX_BYTES (Kconfig's RB_RING_SHIFT 12..30) */
	{ "ring_kb", offsetof(struct agent_config, ring_kb), 4, 1048576, 0 },
	{ "keep_traces", offsetof(struct agent_config, keep_traces), 0, 1, 0 },
	{ "enabled", offsetof(struct agent_config, enabled), 0, 1, 0 },
	{ "trace_main", offsetof(struct agent_config, trace_main), 0, 1, 0 },
	{ "sched_pages", offsetof(struct agent_config, sched_pages), 0, 256, 0 },
	{ "sleds_learn_ns", offsetof(struct agent_config, sleds_learn_ns), 0, 1000000, 0 },
	{ "system_uid", offsetof(struct agent_config, system_uid), -1, 2147483647, 1 },
	{ "upload_budget", offsetof(struct agent_config, up.budget), 0, 1000, 0 },
	{ "upload_budget_days", offsetof(struct agent_config, up.budget_days), 1, 365, 0 },
	{ "upload_rotation_days", offsetof(struct agent_config, up.rotation_days), 1, 3650, 0 },
	{ "upload_max_attempts", offsetof(struct agent_config, up.max_attempts), 1, 100, 0 },
	{ "upload_timeout_ms", offsetof(struct agent_config, up.timeout_ms), 100, 600000, 0 },
	{ "upload_poll_s", offsetof(struct agent_config, up.poll_s), 1, 86400, 0 },
	{ "upload_backoff_ms", offsetof(struct agent_config, up.backoff_ms), 100, 3600000, 0 },
	{ "upload_allow_ethernet", offsetof(struct agent_config, up.allow_ethernet), 0, 1, 0 },
};

/* The string keys: printable ASCII only (they reach logs and HTTP headers), and a cap. */
static const struct {
	const char *key;
	size_t off, size;
	int path; /* 1: an absolute path */
} strings[] = {
#define UP_STRING(key, field, path)                                                             \
	{ key, offsetof(struct agent_config, up.field),                                         \
	  sizeof(((struct agent_config *)0)->up.field), path }
	UP_STRING("upload_url", url, 0),
	UP_STRING("upload_ca_file", ca_file, 1),
	UP_STRING("upload_pin", pin, 0),
	UP_STRING("consent_file", consent_file, 1),
	UP_STRING("upload_thread_names", thread_names, 0),
	UP_STRING("upload_reasons", reasons, 0),
	UP_STRING("upload_campaign", campaign, 0),
	UP_STRING("upload_pick", pick, 0),
#undef UP_STRING
	{ "debuginfod_urls", offsetof(struct agent_config, debuginfod_urls),
	  sizeof(((struct agent_config *)0)->debuginfod_urls), 0 },
	{ "debuginfod_cache", offsetof(struct agent_config, debuginfod_cache),
	  sizeof(((struct agent_config *)0)->debuginfod_cache), 1 },
	{ "sleds", offsetof(struct agent_config, sleds), sizeof(((struct agent_config *)0)->sleds),
	  0 },
	{ "sleds_exclude", offsetof(struct agent_config, sleds_exclude),
	  sizeof(((struct agent_config *)0)->sleds_exclude), 1 },
	{ "sleds_memory", offsetof(struct agent_config, sleds_memory),
	  sizeof(((struct agent_config *)0)->sleds_memory), 0 },
};

CFG static int fail(char *err, size_t size, unsigned line, const char *fmt, ...)
{
	char what[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, size, "line %u: %s", line, what);
	return -EINVAL;
}

/* Strict decimal, optionally negative: no trailing garbage, no overflow. */
CFG static int parse_int(const char *s, int64_t *v)
{
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (end == s || *end || errno)
		return -EINVAL;
	*v = x;
	return 0;
}

CFG static int set(struct agent_config *c, const char *key, const char *val, unsigned line,
		   char *err, size_t errsize)
{
	if (!strcmp(key, "data_dir") || !strcmp(key, "run_dir")) {
		char *dst = key[0] == 'd' ? c->data_dir : c->run_dir;
		if (val[0] != '/')
			return fail(err, errsize, line, "%s must be an absolute path", key);
		if (strlen(val) >= AGENT_PATH_MAX - 32) /* room for the names inside */
			return fail(err, errsize, line, "%s is too long", key);
		strcpy(dst, val);
		return 0;
	}
	if (!strcmp(key, "log_level")) {
		int l = agent_log_level_parse(val);
		if (l < 0)
			return fail(err, errsize, line, "log_level is error, warn, info or debug");
		c->log_level = l;
		return 0;
	}
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		if (strcmp(key, strings[i].key))
			continue;
		size_t n = strlen(val);
		for (size_t k = 0; k < n; k++)
			if (val[k] < 0x20 || val[k] > 0x7e)
				return fail(err, errsize, line, "%s must be printable ASCII", key);
		if (n >= strings[i].size)
			return fail(err, errsize, line, "%s is longer than %zu bytes", key,
				    strings[i].size - 1);
		if (strings[i].path && val[0] != '/')
			return fail(err, errsize, line, "%s must be an absolute path", key);
		if (!strcmp(key, "upload_pick") && strcmp(val, "first") && strcmp(val, "severe") &&
		    strcmp(val, "campaign"))
			return fail(err, errsize, line, "upload_pick is first, severe or campaign");
		if (!strcmp(key, "sleds") && strcmp(val, "sampled") && strcmp(val, "timed") &&
		    strcmp(val, "off"))
			return fail(err, errsize, line, "sleds is sampled, timed or off");
		if (!strcmp(key, "sleds_memory") && val[0] && strcmp(val, "off") &&
		    (val[0] != '/' || n >= AGENT_PATH_MAX - 64)) /* room for the file's name */
			return fail(err, errsize, line, "sleds_memory is off or an absolute path "
				    "of at most %d bytes", AGENT_PATH_MAX - 65);
		memcpy((char *)c + strings[i].off, val, n + 1);
		return 0;
	}
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		if (strcmp(key, numbers[i].key))
			continue;
		int64_t v;
		if (parse_int(val, &v) || v < numbers[i].min || v > numbers[i].max)
			return fail(err, errsize, line, "%s wants a whole number in %lld..%lld", key,
				    (long long)numbers[i].min, (long long)numbers[i].max);
		if (!strcmp(key, "sched_pages") && (v & (v - 1)))
			return fail(err, errsize, line, "sched_pages wants 0 or a power of two");
		if (!strcmp(key, "ring_kb") && (v & (v - 1)))
			return fail(err, errsize, line, "ring_kb wants a power of two (4096: 4 MiB)");
		if ((!strcmp(key, "jank_normal_pct") || !strcmp(key, "cooldown_preempt_pct")) &&
		    v > 0 && v <= 100)
			return fail(err, errsize, line, "%s wants 0 (off) or over 100", key);
		char *field = (char *)c + numbers[i].off;
		if (numbers[i].wide)
			*(int64_t *)field = v;
		else if (!strcmp(key, "keep_traces") || !strcmp(key, "enabled") ||
			 !strcmp(key, "trace_main"))
			*(int *)field = (int)v;
		else
			*(uint32_t *)field = (uint32_t)v;
		return 0;
	}
	return fail(err, errsize, line, "unknown key '%.40s'", key);
}

CFG static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

CFG int agent_config_parse(struct agent_config *c, const char *text, size_t size, char *err,
			   size_t errsize)
{
	struct agent_config next = *c;
	unsigned line = 0;
	size_t at = 0;
	while (at < size) {
		line++;
		const char *nl = memchr(text + at, '\n', size - at);
		size_t len = nl ? (size_t)(nl - (text + at)) : size - at;
		char buf[512];
		if (len >= sizeof(buf))
			return fail(err, errsize, line, "line too long");
		memcpy(buf, text + at, len);
		buf[len] = 0;
		at += len + (nl != NULL);
		if (strlen(buf) != len)
			return fail(err, errsize, line, "NUL byte");
		char *hash = strchr(buf, '#');
		if (hash)
			*hash = 0;
		char *s = trim(buf);
		if (!*s)
			continue;
		char *eq = strchr(s, '=');
		if (!eq)
			return fail(err, errsize, line, "expected key = value");
		*eq = 0;
		char *key = trim(s), *val = trim(eq + 1);
		if (!*key || !*val)
			return fail(err, errsize, line, "expected key = value");
		int e = set(&next, key, val, line, err, errsize);
		if (e)
			return e;
	}
	*c = next;
	return 0;
}

CFG int agent_config_load(struct agent_config *c, const char *path, char *err, size_t errsize)
{
	agent_config_defaults(c);
	int named = 1;
	/* In a set-uid or set-gid program the environment is the caller's: it must not choose
	 * the settings (a data_dir of theirs) of a program running with more rights. */
	if (!path)
		path = secure_getenv("JITT_CONFIG");
	if (!path || !*path) {
		path = CONFIG_AGENT_CONFIG_FILE;
		named = 0;
	}
	snprintf(c->file, sizeof(c->file), "%s", path);
	/* The settings file is the OEM's (or the admin's), never a user's, so a symlink is
	 * followed: /etc/jitt.conf may be one in an image. But it is read before main() by
	 * every traced app and by jittd at start: a FIFO or a device there must not block the
	 * open or feed an endless read, so hal_open_file (O_NONBLOCK, regular files only). */
	struct stat st;
	int fd = hal_open_file(AT_FDCWD, path, true, &st);
	if (fd < 0) {
		if (fd == -ENOENT && !named)
			return 0;
		if (fd == -EISDIR || fd == -EINVAL)
			snprintf(err, errsize, "%s: %s, not a settings file", path,
				 hal_file_kind(st.st_mode));
		else
			snprintf(err, errsize, "%s: %s", path, strerror(-fd));
		return fd;
	}
	char text[AGENT_CONFIG_MAX_SIZE + 1];
	if (st.st_size > AGENT_CONFIG_MAX_SIZE) {
		close(fd);
		snprintf(err, errsize, "%s: larger than %d bytes", path, AGENT_CONFIG_MAX_SIZE);
		return -EFBIG;
	}
	/* One byte more than the cap is asked for, so a file that grew since fstat is still
	 * caught as too large rather than cut into a valid one. */
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, text + n, sizeof(text) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			close(fd);
			snprintf(err, errsize, "%s: %s", path, strerror(-e));
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == sizeof(text)) {
			close(fd);
			snprintf(err, errsize, "%s: larger than %d bytes", path,
				 AGENT_CONFIG_MAX_SIZE);
			return -EFBIG;
		}
	}
	close(fd);
	char why[200];
	int e = agent_config_parse(c, text, n, why, sizeof(why));
	if (e)
		snprintf(err, errsize, "%s: %s", path, why);
	c->file_found = !e;
	return e;
}

CFG int agent_config_path(const struct agent_config *c, const char *sub, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s", c->data_dir, sub);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

CFG int agent_config_socket(const struct agent_config *c, pid_t pid, char *buf, size_t size)
{
	int n = pid ? snprintf(buf, size, "%s/jitt-%d.sock", c->run_dir, (int)pid)
		    : snprintf(buf, size, "%s/jittd.sock", c->run_dir);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
