/* SPDX-License-Identifier: MIT */
/* The upload queue: one file per report (uploader/queue.h). */
#include "uploader/queue.h"
#include "hal/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Strict decimal of at most `max` digits, no leading zero (one name per report); *s
 * advanced past it. */
static int take_number(const char **s, unsigned max, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	unsigned n = 0;
	while (*p >= '0' && *p <= '9' && n < max) {
		x = x * 10 + (uint64_t)(*p - '0');
		p++, n++;
	}
	if (n == 0 || (*p >= '0' && *p <= '9') || (n > 1 && **s == '0'))
		return -EINVAL;
	*s = p;
	*v = x;
	return 0;
}

static int is_uuid(const char *s)
{
	for (int i = 0; i < 36; i++) {
		char c = s[i];
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c != '-')
				return 0;
		} else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
			return 0;
		}
	}
	return 1;
}

int up_queue_parse_name(const char *name, struct up_queued *q)
{
	uint64_t t, sev, att;
	const char *p = name;
	if (strlen(name) >= sizeof(q->name) || strncmp(p, "r-", 2))
		return -EINVAL;
	p += 2;
	if (take_number(&p, 12, &t) || *p++ != '-' || take_number(&p, 15, &sev) || *p++ != '-')
		return -EINVAL;
	if (strlen(p) < 37 || !is_uuid(p) || p[36] != '-')
		return -EINVAL;
	memcpy(q->key, p, 36);
	q->key[36] = 0;
	p += 37;
	if (take_number(&p, 3, &att) || strcmp(p, ".json"))
		return -EINVAL;
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->queued_s = (int64_t)t;
	q->severity_us = sev;
	q->attempts = (unsigned)att;
	return 0;
}

static void make_name(struct up_queued *q)
{
	snprintf(q->name, sizeof(q->name), "r-%" PRId64 "-%" PRIu64 "-%s-%u.json", q->queued_s,
		 q->severity_us, q->key, q->attempts);
}

static int older(const void *a, const void *b)
{
	const struct up_queued *x = a, *y = b;
	if (x->queued_s != y->queued_s)
		return x->queued_s < y->queued_s ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* A listing of the folder held as dirfd (its own descriptor: closedir must not close
 * dirfd). NULL with errno set. */
static DIR *open_listing(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (fd >= 0 && !d) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

int up_queue_list(int dirfd, struct up_queued *out, size_t max, size_t *n)
{
	*n = 0;
	DIR *d = open_listing(dirfd);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d)) && *n < max) {
		if (up_queue_parse_name(de->d_name, &out[*n]) == 0)
			(*n)++;
	}
	closedir(d);
	qsort(out, *n, sizeof(out[0]), older);
	return 0;
}

int up_queue_add(int dirfd, const char *key, int64_t queued_s, uint64_t severity_us,
		 const void *report, size_t len, struct up_queued *q)
{
	if (strlen(key) != 36 || !is_uuid(key) || queued_s < 0 || queued_s > 999999999999LL)
		return -EINVAL;
	memcpy(q->key, key, 37);
	q->queued_s = queued_s;
	q->severity_us = severity_us > 999999999999999ULL ? 999999999999999ULL : severity_us;
	q->attempts = 0;
	make_name(q);
	char tmp[sizeof(q->name) + 8];
	snprintf(tmp, sizeof(tmp), ".tmp-%s", q->name);
	return hal_file_write_at(dirfd, tmp, q->name, report, len);
}

int up_queue_read(int dirfd, const struct up_queued *q, char *buf, size_t size, size_t *len)
{
	struct stat st;
	int fd = hal_open_file(dirfd, q->name, false, &st);
	if (fd < 0)
		return fd == -ENOENT ? fd : -EINVAL;
	if (st.st_size < 0 || (uint64_t)st.st_size > size) {
		close(fd);
		return -EINVAL;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (got != (size_t)st.st_size)
		return -EIO;
	*len = got;
	return 0;
}

int up_queue_count_attempt(int dirfd, struct up_queued *q)
{
	struct up_queued next = *q;
	next.attempts = q->attempts < 999 ? q->attempts + 1 : 999;
	make_name(&next);
	if (renameat(dirfd, q->name, dirfd, next.name) != 0)
		return -errno;
	fsync(dirfd);
	*q = next;
	return 0;
}

int up_queue_remove(int dirfd, const struct up_queued *q)
{
	if (unlinkat(dirfd, q->name, 0) != 0 && errno != ENOENT)
		return -errno;
	fsync(dirfd);
	return 0;
}

int up_queue_clear(int dirfd)
{
	DIR *d = open_listing(dirfd);
	if (!d)
		return -errno;
	int removed = 0;
	struct dirent *de;
	struct up_queued q;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		bool tmp = !strncmp(name, ".tmp-r-", 7);
		if ((tmp || up_queue_parse_name(name, &q) == 0) && unlinkat(dirfd, name, 0) == 0)
			removed++;
	}
	closedir(d);
	fsync(dirfd);
	return removed;
}
