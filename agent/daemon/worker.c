/* SPDX-License-Identifier: MIT */
/*
 * jittd's handling of one trace (agent/daemon/worker.h). The order of the steps is what
 * makes a kill -9 at any moment harmless:
 *
 *   1. open spool/X.jtr once (no symlink, no FIFO, one link), read it into memory, keep its
 *      (dev, ino); a file that shrank while read, or cannot be parsed, goes to step Q
 *   2. outbox/X.json exists?  then only step 4 is left
 *   3. summarise from memory; outbox/.jittd-X.json.tmp: write, fsync, rename to X.json,
 *      fsync the outbox
 *   4. keep_traces: room among the older kept copies and a slot for the copy while it is
 *      made (agent/spool.h), traces/.jittd-X.jtr.tmp from memory: write, fsync, rename to
 *      X.jtr, fsync traces/ (a copy that does not fit is skipped and counted: the summary
 *      is what matters); then unlink spool/X.jtr if that name is still the inode read,
 *      fsync the spool, release the slot unless a copy holds it; trim
 *   Q. quarantine/X.why, then quarantine/X.jtr from memory (each written as in 3); then
 *      unlink spool/X.jtr as in 4
 *
 * A kill before 3's rename leaves a temporary (removed at the next start) and the trace in
 * the spool: it is summarised again, once. A kill after it leaves the summary: the next run
 * sees it in step 2 and finishes the copy, which replaces a copy made before the kill by a
 * rename (never two). A kill in Q quarantines again, over the same names. Nothing is lost
 * and no summary is made twice.
 *
 * Kept and quarantined traces are jittd's own files (mode 0600), not the writer's moved in
 * with its owner and mode; the unlink checks the inode so that a file put under the same
 * name meanwhile is not removed unread.
 */
#define _GNU_SOURCE
#include "agent/daemon/worker.h"
#include "agent/log.h"
#include "agent/spool.h"
#include "agent/analysis/summary.h"
#include "agent/analysis/summary_out.h"
#include "agent/analysis/symbols.h"
#include "hal/fs.h"
#include "ringbuf/tracefile.h"
#include "uploader/uploader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TMP_PREFIX ".jittd-"
#define TMP_SUFFIX ".tmp"

int jittd_worker_init(struct jittd_worker *w, const struct agent_config *c,
		      const struct agent_spool_dirs *dirs)
{
	memset(w, 0, sizeof(*w));
	w->c = c;
	w->dirs = dirs;
	return -pthread_mutex_init(&w->lock, NULL);
}

void jittd_worker_stats(struct jittd_worker *w, struct jittd_stats *out)
{
	pthread_mutex_lock(&w->lock);
	*out = w->st;
	pthread_mutex_unlock(&w->lock);
}

/* Counters change under the lock: the control socket's thread reads them. */
#define COUNT(w, field, n)                        \
	do {                                      \
		pthread_mutex_lock(&(w)->lock);   \
		(w)->st.field += (n);             \
		pthread_mutex_unlock(&(w)->lock); \
	} while (0)

/* dirfd/name, whole or not at all: a temporary, fsync'd, renamed, the folder fsync'd. Our
 * own folder (checked at start), relative to its descriptor. */
static int write_atomic(int dirfd, const char *name, const void *buf, size_t len)
{
	char tmp[200];
	int n = snprintf(tmp, sizeof(tmp), "%s%s%s", TMP_PREFIX, name, TMP_SUFFIX);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	return hal_file_write_at(dirfd, tmp, name, buf, len);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int remove_temporaries(int dirfd, const char *sub)
{
	int fd = dirfd < 0 ? -1 : openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	int removed = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) ||
		    !ends_with(de->d_name, TMP_SUFFIX))
			continue;
		if (unlinkat(dirfd, de->d_name, 0) == 0) {
			log_info("removed %s/%s, left half-written by an earlier run", sub,
				 de->d_name);
			removed++;
		}
	}
	closedir(d);
	return removed;
}

int jittd_worker_recover(struct jittd_worker *w)
{
	return remove_temporaries(w->dirs->outbox, "outbox") +
	       remove_temporaries(w->dirs->traces, "traces") +
	       remove_temporaries(w->dirs->quarantine, "quarantine");
}

/* A spool trace the caps removed before it was summarised: named in the log, and seen (it
 * may never have been read). */
static void dropped(void *arg, const char *name)
{
	struct jittd_worker *w = arg;
	if (strcmp(w->retrying, name))
		COUNT(w, seen, 1);
	else
		w->retrying[0] = 0;
	log_warn("%s: dropped by the caps (max_traces %u, max_trace_mb %u) before it was "
		 "summarised",
		 name, w->c->max_traces, w->c->max_trace_mb);
}

/* The caps with room for `incoming` (a copy about to be kept), counted and logged. Returns
 * false when it does not fit. */
static bool trim(struct jittd_worker *w, uint64_t incoming)
{
	struct agent_spool_trimmed t = { .dropped = dropped, .arg = w };
	int n = agent_spool_trim_at(w->dirs, w->c, incoming, &t);
	if (n > 0) {
		pthread_mutex_lock(&w->lock);
		w->st.trimmed += (uint64_t)n;
		w->st.rotated += t.rotated;
		w->st.dropped += t.unsummarised;
		pthread_mutex_unlock(&w->lock);
		log_info("trimmed %d file%s (%llu bytes): %u kept cop%s rotated out, %u "
			 "unsummarised, %u temporar%s or slot%s of gone writers or quarantined "
			 "(max_traces %u, max_trace_mb %u)",
			 n, n == 1 ? "" : "s", (unsigned long long)t.bytes, t.rotated,
			 t.rotated == 1 ? "y" : "ies", t.unsummarised, t.other,
			 t.other == 1 ? "y" : "ies", t.other == 1 ? "" : "s", w->c->max_traces,
			 w->c->max_trace_mb);
	} else if (n < 0) {
		log_warn("cannot trim the raw traces: %s", strerror(-n));
	}
	return n >= 0 && !t.no_room;
}

void jittd_worker_trim(struct jittd_worker *w)
{
	(void)trim(w, 0);
}

/* The spool's `name` leaves, if it is still the file that was read (dev, ino of *st): a
 * file renamed over it meanwhile is another trace, left for its own turn. */
static int unlink_read(struct jittd_worker *w, const char *name, const struct stat *st)
{
	int spool = w->dirs->spool;
	struct stat now;
	if (fstatat(spool, name, &now, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : -errno; /* gone: trimmed by a writer's caps */
	if (st && (now.st_dev != st->st_dev || now.st_ino != st->st_ino)) {
		log_warn("%s: replaced in the spool while it was read; the new file is left for "
			 "its own turn",
			 name);
		return 0;
	}
	if (unlinkat(spool, name, 0) != 0)
		return errno == ENOENT ? 0 : -errno;
	fsync(spool);
	return 0;
}

/* Step 4: the trace leaves the spool, a copy kept or not, then the caps. The summary is
 * written: a copy that does not fit (the caps, even with older copies rotated out; a full
 * disk) is skipped and counted, never a reason to hold up the traces behind this one. */
static int finish(struct jittd_worker *w, const char *name, const void *data, size_t size,
		  const struct stat *st)
{
	bool kept = false;
	int slot = -1;
	if (w->c->keep_traces) {
		/* Room for the copy among the older copies, never by an unsummarised trace;
		 * then a slot of its own while it and the trace are both there. */
		int e = trim(w, size) ? 0 : -EDQUOT;
		if (!e)
			e = agent_spool_claim_at(w->dirs, w->c, size, &slot);
		/* The copy first: with the spool's name gone first, a crash could lose both. */
		if (!e)
			e = write_atomic(w->dirs->traces, name, data, size);
		if (e) {
			COUNT(w, copies_skipped, 1);
			log_warn("%s: copy not kept: %s; its summary stays", name,
				 e == -EDQUOT ? "no room within max_traces and max_trace_mb"
					      : strerror(-e));
		}
		kept = !e;
	}
	int e = unlink_read(w, name, st);
	agent_spool_unclaim_at(w->dirs, slot);
	if (e) {
		log_err("%s: cannot remove it from the spool: %s", name, strerror(-e));
		return e;
	}
	if (kept) { /* the copy holds the trace's slot (agent/spool.h) */
		COUNT(w, kept, 1);
		log_dbg("%s: kept in traces/", name);
	} else {
		(void)agent_spool_release_at(w->dirs, name);
		if (!w->c->keep_traces)
			COUNT(w, deleted, 1);
		log_dbg("%s: deleted", name);
	}
	jittd_worker_trim(w);
	return 0;
}

/* A file that cannot be summarised: quarantine/X.why says why, then a copy of what was read
 * as X.jtr (copy: none when it was not read), then it leaves the spool. */
static int quarantine(struct jittd_worker *w, const char *name, const char *why, bool copy,
		      const void *data, size_t size, const struct stat *st)
{
	char text[512], whyname[160];
	int n = snprintf(text, sizeof(text), "%s: %s\n", name, why);
	snprintf(whyname, sizeof(whyname), "%.*s.why", (int)(strlen(name) - 4), name);
	int e = write_atomic(w->dirs->quarantine, whyname, text,
			     (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
	if (!e && copy)
		e = write_atomic(w->dirs->quarantine, name, data ? data : "", data ? size : 0);
	if (e) {
		log_err("%s: cannot write to quarantine/: %s", name, strerror(-e));
		return e;
	}
	e = unlink_read(w, name, st);
	if (e) {
		log_err("%s: cannot remove it from the spool: %s", name, strerror(-e));
		return e;
	}
	/* quarantine/ has caps of its own: the slot is free again. */
	(void)agent_spool_release_at(w->dirs, name);
	COUNT(w, quarantined, 1);
	log_warn("%s: quarantined: %s", name, why);
	return 0;
}

/* Something named *.jtr in the spool that no writer of ours makes (a symlink, FIFO, folder,
 * device, or a hard link to a file elsewhere): removed, not quarantined. Its name is the
 * spool's alone (unlinking a symlink or one link of a file never touches the target), and
 * there is nothing safe to keep: reading it is the attack. A folder goes only if empty. */
static int remove_planted(struct jittd_worker *w, const char *name, const struct stat *st,
			  const char *what)
{
	int flags = S_ISDIR(st->st_mode) ? AT_REMOVEDIR : 0;
	if (unlinkat(w->dirs->spool, name, flags) != 0 && errno != ENOENT) {
		log_warn("%s: %s in the spool, not a trace; cannot remove it: %s", name, what,
			 strerror(errno));
		return 0; /* never work: the next pass meets it again, the others go on */
	}
	fsync(w->dirs->spool);
	log_warn("%s: %s in the spool, not a trace: removed", name, what);
	return 0;
}

/* The oldest kept copy removed, its slot released: true, or false when there is none. */
static bool rotate_oldest_copy(struct jittd_worker *w)
{
	struct agent_spool_file *files;
	size_t n;
	if (agent_spool_list_at(w->dirs, "traces", &files, &n) != 0)
		return false;
	bool done = false;
	for (size_t i = 0; i < n && !done; i++) {
		if (!agent_spool_is_plain(&files[i]) ||
		    unlinkat(w->dirs->traces, files[i].name, 0) != 0)
			continue;
		(void)agent_spool_release_at(w->dirs, files[i].name);
		pthread_mutex_lock(&w->lock);
		w->st.trimmed++;
		w->st.rotated++;
		pthread_mutex_unlock(&w->lock);
		log_info("%s: kept copy removed to make room for a summary (the disk is full)",
			 files[i].name);
		done = true;
	}
	free(files);
	return done;
}

/* Step 3. 0, 1 when the file went to quarantine, or -errno to try again later. */
static int summarise(struct jittd_worker *w, const char *name, const char *json_name,
		     const void *data, size_t size, const struct stat *st)
{
	char err[256] = "";
	struct rb_trace t;
	int e = rb_trace_parse(data, size, &t, err, sizeof(err));
	if (e == -ENOMEM)
		return e;
	if (e) {
		if (e != -EINVAL || !err[0])
			snprintf(err, sizeof(err), "%s", strerror(-e));
		e = quarantine(w, name, err, true, data, size, st);
		return e ? e : 1;
	}
	struct agent_symbols syms;
	if (agent_symbols_open(&syms, &t) != 0) {
		rb_trace_close(&t);
		return -ENOMEM;
	}
	/* Names only from module files the trace's writer could read itself: one app must not
	 * learn another's private function names through a trace naming its binary. */
	agent_symbols_set_owner(&syms, st->st_uid);
	struct summary s;
	e = summary_build(&s, &t, CONFIG_AGENT_SUMMARY_K);
	if (e) {
		agent_symbols_close(&syms);
		rb_trace_close(&t);
		if (e != -EINVAL)
			return e;
		e = quarantine(w, name, "a ring cannot be decoded", true, data, size, st);
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
	e = write_atomic(w->dirs->outbox, json_name, buf, len);
	/* A full disk: summaries come before raw copies (the summary is what may leave the
	 * device; a kept copy's summary exists already), so the oldest copies give way. */
	while ((e == -ENOSPC || e == -EDQUOT) && rotate_oldest_copy(w))
		e = write_atomic(w->dirs->outbox, json_name, buf, len);
	if (e) {
		free(buf);
		log_warn("%s: cannot write outbox/%s: %s; left in the spool for a later try", name,
			 json_name, strerror(-e));
		return e;
	}
	/* Committed first: a crash between the two loses this report (never sends it twice:
	 * the finishing run sees the summary and does not offer it again). */
	if (w->up)
		up_offer(w->up, buf, len);
	free(buf);
	pthread_mutex_lock(&w->lock);
	w->st.summarised++;
	w->st.summary_bytes += len;
	snprintf(w->st.last_summary, sizeof(w->st.last_summary), "%s", json_name);
	pthread_mutex_unlock(&w->lock);
	log_info("%s: summarised into outbox/%s (%zu bytes)", name, json_name, len);
	return 0;
}

/* Steps 1 to 4 for one name. 0 when done with, or -errno to try again later. */
static int process(struct jittd_worker *w, const char *name, const char *json_name)
{
	struct stat st;
	int fd = hal_open_file(w->dirs->spool, name, false, &st);
	if (fd == -ENOENT)
		return 0; /* gone meanwhile */
	if (fd == -ELOOP) {
		st.st_mode = S_IFLNK;
		return remove_planted(w, name, &st, "a symbolic link");
	}
	if (fd == -EINVAL || fd == -EISDIR)
		return remove_planted(w, name, &st, hal_file_kind(st.st_mode));
	if (fd == -EMFILE || fd == -ENFILE || fd == -ENOMEM) {
		log_warn("%s: cannot open: %s", name, strerror(-fd));
		return fd; /* ours to fix: try again later */
	}
	if (fd < 0) {
		/* A socket fails the open itself (ENXIO): planted like the rest. */
		struct stat now;
		if (fstatat(w->dirs->spool, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISREG(now.st_mode))
			return remove_planted(w, name, &now, hal_file_kind(now.st_mode));
		/* A file jittd may not read (another uid's, jittd not root; a lease): it can
		 * never be summarised, and must not hold up the spool behind it. */
		char why[128];
		snprintf(why, sizeof(why), "cannot open: %s", strerror(-fd));
		return quarantine(w, name, why, false, NULL, 0, NULL);
	}
	if (st.st_nlink != 1) {
		close(fd);
		return remove_planted(w, name, &st, "a hard link to another file");
	}
	uint64_t max = (uint64_t)w->c->max_trace_mb << 20;
	if ((uint64_t)st.st_size > max) {
		close(fd);
		char why[160];
		snprintf(why, sizeof(why), "%llu bytes, more than max_trace_mb %u: not read",
			 (unsigned long long)st.st_size, w->c->max_trace_mb);
		return quarantine(w, name, why, false, NULL, 0, &st);
	}
	void *data;
	size_t got;
	char err[256] = "";
	int e = rb_trace_read_fd(fd, (size_t)st.st_size, &data, &got, err, sizeof(err));
	close(fd);
	if (e == -EINVAL) { /* empty, or shrank under us: what was read goes to quarantine */
		e = quarantine(w, name, err, true, data, got, &st);
		rb_trace_free_copy(data, (size_t)st.st_size);
		return e;
	}
	if (e == -ENOMEM) {
		log_warn("%s: cannot read: %s", name, strerror(-e));
		return e;
	}
	if (e) { /* EIO, ...: this file's trouble, not a reason to stop the spool */
		snprintf(err, sizeof(err), "cannot read: %s", strerror(-e));
		return quarantine(w, name, err, false, NULL, 0, &st);
	}
	struct stat out;
	if (fstatat(w->dirs->outbox, json_name, &out, AT_SYMLINK_NOFOLLOW) == 0) {
		log_info("%s: already summarised into outbox/%s; finishing", name, json_name);
		e = 0;
	} else {
		e = summarise(w, name, json_name, data, got, &st);
	}
	if (e == 0)
		e = finish(w, name, data, got, &st);
	else if (e == 1)
		e = 0; /* quarantined */
	rb_trace_free_copy(data, (size_t)st.st_size);
	return e;
}

int jittd_worker_process(struct jittd_worker *w, const char *name)
{
	size_t n = strlen(name);
	if (n <= 4 || n >= sizeof(w->retrying) - 8 || !ends_with(name, ".jtr"))
		return 0; /* not a trace name of ours: left alone */
	if (strcmp(w->retrying, name)) {
		COUNT(w, seen, 1);
		snprintf(w->retrying, sizeof(w->retrying), "%s", name);
	}
	char json_name[160];
	snprintf(json_name, sizeof(json_name), "%.*s.json", (int)(n - 4), name);
	unsigned forgets = atomic_load(&w->forgets);
	int e = process(w, name, json_name);
	if (e)
		COUNT(w, retries, 1);
	else
		w->retrying[0] = 0;
	if (atomic_load(&w->forgets) != forgets)
		jittd_worker_forget(w); /* what this trace wrote after the revoke goes too */
	return e;
}

/* Every entry of one folder but the sub-folders (none of ours has any); a kept copy's slot
 * (w not NULL: traces/) released with it. */
static int remove_all(struct jittd_worker *w, int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	int n = 0;
	struct dirent *de;
	while ((de = readdir(dir)))
		if ((de->d_name[0] != '.' ||
		     (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))) &&
		    unlinkat(dirfd, de->d_name, 0) == 0) {
			if (w)
				(void)agent_spool_release_at(w->dirs, de->d_name);
			n++;
		}
	closedir(dir);
	fsync(dirfd);
	return n;
}

int jittd_worker_forget(struct jittd_worker *w)
{
	atomic_fetch_add(&w->forgets, 1);
	/* The spool too: its traces were written while consent was granted, and a summary
	 * made from them later would be one more thing from before the revoke. Writers'
	 * temporaries there are theirs: only finished traces go. */
	int n = remove_all(NULL, w->dirs->outbox) + remove_all(w, w->dirs->traces) +
		remove_all(NULL, w->dirs->quarantine);
	struct agent_spool_file *files;
	size_t k;
	if (agent_spool_list_at(w->dirs, "spool", &files, &k) == 0) {
		for (size_t i = 0; i < k; i++)
			if (unlinkat(w->dirs->spool, files[i].name, 0) == 0) {
				(void)agent_spool_release_at(w->dirs, files[i].name);
				n++;
			}
		free(files);
		fsync(w->dirs->spool);
	}
	return n;
}
