/* SPDX-License-Identifier: MIT */
/*
 * The data folder of agent/spool.h: its sub-folders, and the caps on raw traces. Linked
 * into libjitt too, so nothing here is instrumented and nothing prints.
 */
#include "agent/spool.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPOOL __attribute__((no_instrument_function))

static const char *const subdirs[] = { "spool", "traces", "outbox", "quarantine" };

/* mkdir that is content with a folder already there (and only with a folder). */
SPOOL static int make_dir(const char *path, mode_t mode)
{
	if (mkdir(path, mode) == 0)
		return 0;
	int e = errno;
	struct stat st;
	if (e == EEXIST && stat(path, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	return -e;
}

SPOOL int agent_spool_prepare(const struct agent_config *c)
{
	char path[AGENT_PATH_MAX + 16];
	if (snprintf(path, sizeof(path), "%s", c->data_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* The parents as mkdir -p makes them; the data folder itself private. */
	for (char *p = path + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		int e = make_dir(path, 0755);
		*p = '/';
		if (e)
			return e;
	}
	int e = make_dir(path, 0700);
	if (e)
		return e;
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		e = agent_config_path(c, subdirs[i], path, sizeof(path));
		if (!e)
			e = make_dir(path, 0700);
		if (e)
			return e;
	}
	return 0;
}

/* A raw trace: "*.jtr", not hidden (writers' temporaries start with a dot). */
SPOOL static int is_trace(const char *name)
{
	size_t n = strlen(name);
	return name[0] != '.' && n > 4 && !strcmp(name + n - 4, ".jtr");
}

/* Append the traces of one sub-folder to *files. A missing folder holds none. */
SPOOL static int list_dir(const struct agent_config *c, const char *sub,
			  struct agent_spool_file **files, size_t *n, size_t *cap)
{
	char dir[AGENT_PATH_MAX], path[AGENT_PATH_MAX + 256];
	int e = agent_config_path(c, sub, dir, sizeof(dir));
	if (e)
		return e;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!is_trace(de->d_name) || strlen(de->d_name) >= sizeof((*files)->name))
			continue;
		if (*n == *cap) {
			size_t ncap = *cap ? *cap * 2 : 32;
			struct agent_spool_file *f = realloc(*files, ncap * sizeof(*f));
			if (!f) {
				e = -ENOMEM;
				break;
			}
			*files = f;
			*cap = ncap;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		struct stat st;
		if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue; /* gone meanwhile, or not a file */
		struct agent_spool_file *f = &(*files)[*n];
		f->mtime = st.st_mtim;
		f->bytes = (uint64_t)st.st_size;
		f->sub = sub;
		strcpy(f->name, de->d_name);
		(*n)++;
	}
	closedir(d);
	return e;
}

/* Oldest first: modification time, then name (the writer's names grow with time), then
 * the folder, so the order is total. */
SPOOL static int older_first(const void *pa, const void *pb)
{
	const struct agent_spool_file *a = pa, *b = pb;
	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
	if (a->mtime.tv_nsec != b->mtime.tv_nsec)
		return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
	int r = strcmp(a->name, b->name);
	return r ? r : strcmp(a->sub, b->sub);
}

SPOOL static int list(const struct agent_config *c, const char *const *subs, int nsubs,
		      struct agent_spool_file **files, size_t *n)
{
	size_t cap = 0;
	*files = NULL;
	*n = 0;
	int e = 0;
	for (int i = 0; i < nsubs && !e; i++)
		e = list_dir(c, subs[i], files, n, &cap);
	if (e) {
		free(*files);
		*files = NULL;
		*n = 0;
		return e;
	}
	if (*n)
		qsort(*files, *n, sizeof(**files), older_first);
	return 0;
}

SPOOL int agent_spool_list(const struct agent_config *c, const char *sub,
			   struct agent_spool_file **files, size_t *n)
{
	return list(c, &sub, 1, files, n);
}

SPOOL int agent_spool_trim(const struct agent_config *c, uint64_t incoming, uint64_t *removed_bytes)
{
	static const char *const subs[] = { "spool", "traces" };
	struct agent_spool_file *files;
	size_t n;
	int e = list(c, subs, 2, &files, &n);
	if (e)
		return e;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += files[i].bytes;
	const uint64_t max_bytes = (uint64_t)c->max_trace_mb << 20;
	/* With a file coming, leave room for it; with none, only bring the folders within the
	 * caps. */
	const size_t max_files = incoming ? (c->max_traces ? c->max_traces - 1 : 0) : c->max_traces;
	int removed = 0;
	for (size_t i = 0; i < n; i++) {
		if (n - i <= max_files && total + incoming <= max_bytes)
			break;
		char path[AGENT_PATH_MAX + 256];
		char dir[AGENT_PATH_MAX];
		agent_config_path(c, files[i].sub, dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
		total -= files[i].bytes;
		if (unlink(path) != 0) {
			if (errno == ENOENT) /* someone else removed it: it no longer counts */
				continue;
			e = -errno;
			break;
		}
		removed++;
		if (removed_bytes)
			*removed_bytes += files[i].bytes;
	}
	free(files);
	return e ? e : removed;
}
