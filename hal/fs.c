/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* O_PATH (glibc; musl has it either way) */
#include "fs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[PATH_MAX] = CONFIG_HAL_FS_ROOT;

int hal_root_set(const char *r)
{
	if (!r || !*r)
		r = CONFIG_HAL_FS_ROOT;
	size_t n = strlen(r);
	if (n >= sizeof(root))
		return -ENAMETOOLONG;
	memcpy(root, r, n + 1);
	/* "/a/b/" and "/a/b" are the same root; keep "/" as it is. */
	while (n > 1 && root[n - 1] == '/')
		root[--n] = '\0';
	return 0;
}

const char *hal_root(void)
{
	return root;
}

bool hal_root_is_real(void)
{
	return strcmp(root, "/") == 0;
}

int hal_path(char *buf, size_t size, const char *rel)
{
	while (*rel == '/')
		rel++;
	const char *sep = root[strlen(root) - 1] == '/' ? "" : "/";
	int n = snprintf(buf, size, "%s%s%s", root, sep, rel);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* Read fd (closed here) into buf: hal_read_text's rules. */
static int read_text_fd(int fd, char *buf, size_t size)
{
	int err;
	/* sysfs and procfs files report size 0 or 4096: read until EOF, not by stat. */
	size_t len = 0;
	for (;;) {
		ssize_t got = read(fd, buf + len, size - 1 - len);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			close(fd);
			return err;
		}
		if (got == 0)
			break;
		len += (size_t)got;
		if (len == size - 1) {
			/* Full: one more byte tells a file that fits exactly from a longer one. */
			char extra;
			ssize_t more = read(fd, &extra, 1);
			close(fd);
			if (more != 0)
				return -EFBIG;
			goto done;
		}
	}
	close(fd);
done:
	buf[len] = '\0';
	if (memchr(buf, '\0', len))
		return -EINVAL; /* binary junk: no pseudo-file we read holds a NUL */
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		buf[--len] = '\0';
	return (int)len;
}

/*
 * Open path for hal_read_text_owned: a regular file, not a link, owned by root or by the
 * owner of the folder it is in, and writable by no one else; -EPERM otherwise. The folder
 * is opened first and the file through it, so the owner compared is that of the folder the
 * file was found in. The folder's owner, not the reader's: jittd (as its user) and root's
 * `jitt hal` used to judge a file of jittd's user differently (root said "unknown" where
 * jittd uploaded). The image's init makes that folder for jittd's user (run_dir, or
 * data_dir on Android: docs/oem.md), so it names jittd's configured user to every reader,
 * and only root can give it to anyone else.
 */
static int open_owned(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	if (!slash || !slash[1])
		return -EINVAL;
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	/* O_PATH: the run folder is 1733, which others may search but not list. */
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/* O_NOFOLLOW and fstat, so the file checked is the file read, not what a link
	 * names; O_NONBLOCK, so a FIFO planted there cannot hold the open. */
	int fd = openat(dfd, slash + 1, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	int err = fd < 0 ? (errno == ELOOP ? -EPERM : -errno) : 0;
	struct stat ds, st;
	if (!err && (fstat(dfd, &ds) != 0 || fstat(fd, &st) != 0))
		err = -errno;
	else if (!err && (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != ds.st_uid) ||
			  (st.st_mode & (S_IWGRP | S_IWOTH))))
		err = -EPERM;
	close(dfd);
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

static int read_text(const char *rel, char *buf, size_t size, bool owned)
{
	char path[PATH_MAX];
	int err = hal_path(path, sizeof(path), rel);
	if (err)
		return err;
	if (size < 2)
		return -EINVAL;
	int fd = owned ? open_owned(path) : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return owned ? fd : -errno;
	return read_text_fd(fd, buf, size);
}

int hal_read_text(const char *rel, char *buf, size_t size)
{
	return read_text(rel, buf, size, false);
}

int hal_read_text_owned(const char *rel, char *buf, size_t size)
{
	return read_text(rel, buf, size, true);
}

int hal_parse_u64(const char *s, int base, uint64_t *value)
{
	/* strtoull accepts leading space, signs and "0x"; sysfs numbers have none of them. */
	if (!s || !isxdigit((unsigned char)s[0]))
		return -EINVAL;
	if (base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, base);
	if (errno || end == s || *end != '\0')
		return -EINVAL;
	*value = v;
	return 0;
}

int hal_read_u64(const char *rel, uint64_t *value)
{
	char buf[32];
	int n = hal_read_text(rel, buf, sizeof(buf));
	if (n < 0)
		return n == -EFBIG ? -EINVAL : n;
	return hal_parse_u64(buf, 10, value);
}

FILE *hal_fopen(const char *rel)
{
	char path[PATH_MAX];
	int err = hal_path(path, sizeof(path), rel);
	if (err) {
		errno = -err;
		return NULL;
	}
	return fopen(path, "re");
}

bool hal_exists(const char *rel)
{
	char path[PATH_MAX];
	struct stat st;
	return hal_path(path, sizeof(path), rel) == 0 && stat(path, &st) == 0;
}

int hal_open_file(int dirfd, const char *path, bool follow, struct stat *st)
{
	/* O_NOCTTY: a terminal planted in a file's place is refused below, but without it the
	 * open alone makes it the controlling terminal of a daemon that has none (jittd). */
	int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (follow ? 0 : O_NOFOLLOW);
	int fd = openat(dirfd, path, flags);
	if (fd < 0)
		return -errno;
	int err = 0;
	if (fstat(fd, st) != 0)
		err = -errno;
	else if (S_ISDIR(st->st_mode))
		err = -EISDIR;
	else if (!S_ISREG(st->st_mode))
		err = -EINVAL;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

const char *hal_file_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFSOCK:
		return "a socket";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFLNK:
		return "a symbolic link";
	default:
		return "not a regular file";
	}
}

int hal_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = fsync(fd) ? -errno : 0;
	close(fd);
	return err;
}

/* fsync, close, rename tmp to final (both relative to dirfd), or remove tmp on any error. */
static int commit(int fd, int err, int dirfd, const char *tmp, const char *final)
{
	if (!err && fsync(fd) != 0)
		err = -errno;
	if (close(fd) != 0 && !err)
		err = -errno;
	if (!err && renameat(dirfd, tmp, dirfd, final) != 0)
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

int hal_file_commit(int fd, int err, const char *tmp, const char *final, const char *dir)
{
	err = commit(fd, err, AT_FDCWD, tmp, final);
	if (err)
		return err;
	/* A writer may be allowed to add names to a folder it may not read (the spool, 3733,
	 * for an app of another uid: docs/oem.md): it cannot open the folder to fsync it. The
	 * file's bytes are on disk (fsync above) and the rename is done; the folder's owner
	 * (jittd) takes the name from there, and the folder reaches the disk with the file
	 * system's next commit. */
	err = hal_fsync_dir(dir);
	return err == -EACCES ? 0 : err;
}

int hal_file_commit_at(int fd, int err, int dirfd, const char *tmp, const char *final)
{
	err = commit(fd, err, dirfd, tmp, final);
	return err ? err : fsync(dirfd) ? -errno : 0;
}

int hal_read_whole(int fd, uint64_t size, uint64_t max, char **buf)
{
	if (size > max)
		return -EFBIG;
	char *b = malloc((size_t)size + 1);
	if (!b)
		return -ENOMEM;
	size_t got = 0;
	while (got < size) {
		ssize_t r = read(fd, b + got, (size_t)size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int err = r ? -errno : -EINVAL;
			free(b);
			return err;
		}
		got += (size_t)r;
	}
	b[got] = 0;
	*buf = b;
	return 0;
}

int hal_file_write_at(int dirfd, const char *tmp, const char *final, const void *buf,
		      size_t len)
{
	/* O_TRUNC, not O_EXCL: a temporary left by a crash is ours to reuse. */
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int e = 0;
	size_t done = 0;
	while (done < len && !e) {
		ssize_t k = write(fd, (const char *)buf + done, len - done);
		if (k > 0)
			done += (size_t)k;
		else if (k < 0 && errno != EINTR)
			e = -errno;
		else if (k == 0)
			e = -EIO;
	}
	return hal_file_commit_at(fd, e, dirfd, tmp, final);
}
