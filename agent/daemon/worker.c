/* SPDX-License-Identifier: MIT */
/*
 * jittd's handling of one trace (agent/daemon/worker.h). The order of the steps is what
 * makes a kill -9 at any moment harmless:
 *
 *   1. outbox/X.json exists?  then only step 4 is left
 *   2. parse and summarise spool/X.jtr (in memory; a bad file goes to quarantine/)
 *   3. outbox/.jittd-X.json.tmp: write, fsync, rename to X.json, fsync the outbox
 *   4. spool/X.jtr -> traces/X.jtr (keep_traces) or unlink, fsync the folders; trim
 *
 * A kill before 3's rename leaves a temporary (removed at the next start) and the trace in
 * the spool: it is summarised again, once. A kill after it leaves the summary: the next run
 * sees it in step 1 and finishes the move. Nothing is lost and no summary is made twice.
 */
#include "agent/daemon/worker.h"
#include "agent/log.h"
#include "agent/spool.h"
#include "agent/analysis/summary.h"
#include "agent/analysis/summary_out.h"
#include "agent/analysis/symbols.h"
#include "hal/fs.h"
#include "ringbuf/tracefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_PREFIX ".jittd-"
#define TMP_SUFFIX ".tmp"

int jittd_worker_init(struct jittd_worker *w, const struct agent_config *c)
{
	memset(w, 0, sizeof(*w));
	w->c = c;
	int e = agent_config_path(c, "spool", w->spool, sizeof(w->spool));
	if (!e)
		e = agent_config_path(c, "outbox", w->outbox, sizeof(w->outbox));
	if (!e)
		e = agent_config_path(c, "traces", w->traces, sizeof(w->traces));
	if (!e)
		e = agent_config_path(c, "quarantine", w->quarantine, sizeof(w->quarantine));
	return e;
}

static int join(char *buf, size_t size, const char *dir, const char *a, const char *b,
		const char *c)
{
	int n = snprintf(buf, size, "%s/%s%s%s", dir, a, b, c);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* dir/name, whole or not at all: a temporary, fsync'd, renamed, the folder fsync'd. */
static int write_atomic(const char *dir, const char *name, const char *buf, size_t len)
{
	char tmp[AGENT_PATH_MAX + 160], final[AGENT_PATH_MAX + 160];
	int e = join(tmp, sizeof(tmp), dir, TMP_PREFIX, name, TMP_SUFFIX);
	if (!e)
		e = join(final, sizeof(final), dir, name, "", "");
	if (e)
		return e;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	size_t done = 0;
	while (done < len && !e) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n > 0)
			done += (size_t)n;
		else if (n < 0 && errno != EINTR)
			e = -errno;
		else if (n == 0)
			e = -EIO;
	}
	return hal_file_commit(fd, e, tmp, final, dir);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int remove_temporaries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	int removed = 0;
	struct dirent *de;
	char path[AGENT_PATH_MAX + 300];
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) ||
		    !ends_with(de->d_name, TMP_SUFFIX))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) == 0) {
			log_info("removed %s, left half-written by an earlier run", path);
			removed++;
		}
	}
	closedir(d);
	return removed;
}

int jittd_worker_recover(struct jittd_worker *w)
{
	int a = remove_temporaries(w->outbox), b = remove_temporaries(w->quarantine);
	return (a > 0 ? a : 0) + (b > 0 ? b : 0);
}

/* Step 4: the trace leaves the spool, kept or deleted, then the caps. */
static int finish(struct jittd_worker *w, const char *name)
{
	char from[AGENT_PATH_MAX + 160], to[AGENT_PATH_MAX + 160];
	join(from, sizeof(from), w->spool, name, "", "");
	if (w->c->keep_traces) {
		join(to, sizeof(to), w->traces, name, "", "");
		if (rename(from, to) != 0) {
			if (errno == ENOENT) /* trimmed meanwhile by a writer's caps */
				return 0;
			int e = -errno;
			log_err("%s: cannot move to %s: %s", name, w->traces, strerror(-e));
			return e;
		}
		/* The new name first: with only the spool synced, a crash could lose both. */
		hal_fsync_dir(w->traces);
		hal_fsync_dir(w->spool);
		w->st.kept++;
		log_dbg("%s: kept in %s", name, w->traces);
	} else {
		if (unlink(from) != 0) {
			if (errno == ENOENT)
				return 0;
			int e = -errno;
			log_err("%s: cannot delete: %s", name, strerror(-e));
			return e;
		}
		hal_fsync_dir(w->spool);
		w->st.deleted++;
		log_dbg("%s: deleted", name);
	}
	uint64_t bytes = 0;
	int n = agent_spool_trim(w->c, 0, &bytes);
	if (n > 0) {
		w->st.trimmed += (uint64_t)n;
		log_info("trimmed %d raw trace%s (%llu bytes) to stay within max_traces %u, "
			 "max_trace_mb %u",
			 n, n == 1 ? "" : "s", (unsigned long long)bytes, w->c->max_traces,
			 w->c->max_trace_mb);
	} else if (n < 0) {
		log_warn("cannot trim the raw traces: %s", strerror(-n));
	}
	return 0;
}

/* A file that cannot be summarised: quarantine/X.why says why, then X.jtr joins it. */
static int quarantine(struct jittd_worker *w, const char *name, const char *why)
{
	char text[512], whyname[160], from[AGENT_PATH_MAX + 160], to[AGENT_PATH_MAX + 160];
	int n = snprintf(text, sizeof(text), "%s: %s\n", name, why);
	snprintf(whyname, sizeof(whyname), "%.*s.why", (int)(strlen(name) - 4), name);
	int e = write_atomic(w->quarantine, whyname, text,
			     (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
	if (e) {
		log_err("%s: cannot write %s/%s: %s", name, w->quarantine, whyname, strerror(-e));
		return e;
	}
	join(from, sizeof(from), w->spool, name, "", "");
	join(to, sizeof(to), w->quarantine, name, "", "");
	if (rename(from, to) != 0) {
		if (errno == ENOENT)
			return 0;
		e = -errno;
		log_err("%s: cannot move to %s: %s", name, w->quarantine, strerror(-e));
		return e;
	}
	hal_fsync_dir(w->quarantine);
	hal_fsync_dir(w->spool);
	w->st.quarantined++;
	log_warn("%s: quarantined: %s", name, why);
	return 0;
}

/* Steps 2 and 3. 0, 1 when the file went to quarantine, or -errno to try again later. */
static int summarise(struct jittd_worker *w, const char *name, const char *json_name)
{
	char path[AGENT_PATH_MAX + 160], err[256] = "";
	join(path, sizeof(path), w->spool, name, "", "");
	struct rb_trace t;
	int e = rb_trace_open(path, &t, err, sizeof(err));
	if (e == -ENOENT)
		return -ENOENT;
	if (e == -ENOMEM || e == -EMFILE || e == -ENFILE)
		return e;
	if (e) {
		if (e != -EINVAL || !err[0])
			snprintf(err, sizeof(err), "%s", strerror(-e));
		e = quarantine(w, name, err);
		return e ? e : 1;
	}
	struct agent_symbols syms;
	if (agent_symbols_open(&syms, &t) != 0) {
		rb_trace_close(&t);
		return -ENOMEM;
	}
	struct summary s;
	e = summary_build(&s, &t, CONFIG_AGENT_SUMMARY_K);
	if (e) {
		agent_symbols_close(&syms);
		rb_trace_close(&t);
		if (e != -EINVAL)
			return e;
		e = quarantine(w, name, "a ring cannot be decoded");
		return e ? e : 1;
	}
	/* In memory first: the summary is a few KiB (under 4 KiB at K = 10), and a write to
	 * the disk then says exactly why it failed (ENOSPC, EDQUOT), which stdio would not. */
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	e = mem ? summary_write_json(mem, &s, &syms) : -ENOMEM;
	if (mem && fclose(mem) != 0 && !e)
		e = -ENOMEM;
	summary_free(&s);
	agent_symbols_close(&syms);
	rb_trace_close(&t);
	if (e) {
		free(buf);
		return -ENOMEM;
	}
	e = write_atomic(w->outbox, json_name, buf, len);
	free(buf);
	if (e) {
		log_warn("%s: cannot write %s/%s: %s; left in the spool for a later try", name,
			 w->outbox, json_name, strerror(-e));
		return e;
	}
	w->st.summarised++;
	w->st.summary_bytes += len;
	snprintf(w->st.last_summary, sizeof(w->st.last_summary), "%s", json_name);
	log_info("%s: summarised into outbox/%s (%zu bytes)", name, json_name, len);
	return 0;
}

int jittd_worker_process(struct jittd_worker *w, const char *name)
{
	size_t n = strlen(name);
	if (n <= 4 || n >= sizeof(w->retrying) - 8 || !ends_with(name, ".jtr"))
		return 0; /* not a trace name of ours: left alone */
	if (strcmp(w->retrying, name)) {
		w->st.seen++;
		snprintf(w->retrying, sizeof(w->retrying), "%s", name);
	}
	char json_name[160], json[AGENT_PATH_MAX + 160];
	snprintf(json_name, sizeof(json_name), "%.*s.json", (int)(n - 4), name);
	join(json, sizeof(json), w->outbox, json_name, "", "");

	int e;
	if (access(json, F_OK) == 0) {
		log_info("%s: already summarised into outbox/%s; finishing", name, json_name);
		e = 0;
	} else {
		e = summarise(w, name, json_name);
	}
	if (e == 0)
		e = finish(w, name);
	else if (e == 1 || e == -ENOENT)
		e = 0; /* quarantined, or gone from the spool meanwhile */
	if (e)
		w->st.retries++;
	else
		w->retrying[0] = 0;
	return e;
}
