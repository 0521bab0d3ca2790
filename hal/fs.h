/* SPDX-License-Identifier: MIT */
/*
 * hal/fs.h - the one door to /sys and /proc.
 *
 * Every read of the kernel's pseudo-files goes through a configurable root, so tests and
 * demos point the HAL at fake trees (sim/fakes/) instead of the machine they run on.
 * Paths given to these functions are relative to that root ("sys/devices/...").
 */
#ifndef JITT_HAL_FS_H
#define JITT_HAL_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

/*
 * Set the root of the /sys and /proc trees; NULL or "" restores CONFIG_HAL_FS_ROOT.
 * Not thread-safe: call it at start-up, before other threads use the HAL.
 * Returns 0, or -ENAMETOOLONG.
 */
int hal_root_set(const char *root);
const char *hal_root(void);
/* True when the root is the machine's own "/", not a fake tree. */
bool hal_root_is_real(void);

/* Format "<root>/<rel>" into buf. Returns 0, or -ENAMETOOLONG. */
int hal_path(char *buf, size_t size, const char *rel);

/*
 * Read a whole small file into buf as a NUL-terminated string with trailing white space
 * removed. Returns the length, -ENOENT (or another -errno from open/read), or -EFBIG when
 * the file does not fit, so a garbage file cannot be silently truncated into a valid one.
 */
int hal_read_text(const char *rel, char *buf, size_t size);

/*
 * hal_read_text for a file whose word is trusted, in a folder others may write (the run
 * folder is 1733): -EPERM unless it is a regular file, not a symbolic link, owned by root
 * or by the owner of its folder (jittd's user, for whom the image's init made it), and
 * writable by no one else. The same answer whoever reads it: jittd, root, anyone.
 */
int hal_read_text_owned(const char *rel, char *buf, size_t size);

/*
 * Read a file holding one unsigned decimal number (sysfs style). Returns 0, an error of
 * hal_read_text, or -EINVAL when it holds anything else (empty, signs, junk, overflow).
 */
int hal_read_u64(const char *rel, uint64_t *value);

/* Parse a whole string as an unsigned number in the given base (10 or 16). 0 or -EINVAL. */
int hal_parse_u64(const char *s, int base, uint64_t *value);

/* fopen() of "<root>/<rel>" for reading, with close-on-exec. NULL with errno set. */
FILE *hal_fopen(const char *rel);

/* True when "<root>/<rel>" exists (any type). */
bool hal_exists(const char *rel);

/*
 * Open a file for reading the one safe way (docs/security.md): once, with O_NONBLOCK (a
 * FIFO or a device planted in its place cannot block the open), O_NOCTTY (nor a terminal
 * become the controlling one), O_CLOEXEC, and O_NOFOLLOW unless follow is set (in folders
 * another user can write, a symlink is an attack); then fstat on that descriptor, which
 * everything after works on. dirfd is a folder's descriptor or AT_FDCWD. Only a regular
 * file is opened: anything else is closed and refused with -EISDIR (a folder) or -EINVAL
 * (a FIFO, socket or device); a symlink without follow is -ELOOP. The file's stat is in
 * *st (also on -EISDIR and -EINVAL, so the caller can name the kind with hal_file_kind).
 * Returns the fd or a negative errno.
 */
int hal_open_file(int dirfd, const char *path, bool follow, struct stat *st);
/* The whole of a file opened by hal_open_file, size bytes (its stat's st_size), if that is
 * max at most: into *buf, malloc'd, NUL-terminated after them. 0, or -EFBIG, -ENOMEM,
 * read's -errno, -EINVAL when it shrank while read. fd stays open. */
int hal_read_whole(int fd, uint64_t size, uint64_t max, char **buf);
/* "a directory", "a FIFO", "a socket", "a character device", ... for a stat's st_mode. */
const char *hal_file_kind(unsigned mode);

/*
 * Files that must survive a crash (trace files, summaries) are written to a temporary
 * name in their folder, then committed: fsync, close, rename to the final name, fsync of
 * the folder. These paths are the caller's own (the spool, the outbox), not under the
 * root above.
 */
/* Commit the temporary written through fd (closed in any case). err: an error the writing
 * already met, which commits nothing. On any error the temporary is removed. 0 or -errno. */
int hal_file_commit(int fd, int err, const char *tmp, const char *final, const char *dir);
/* The same in a folder held open as dirfd, tmp and final named relative to it (jittd works
 * only through its folders' descriptors: docs/security.md). */
int hal_file_commit_at(int fd, int err, int dirfd, const char *tmp, const char *final);
/* A whole small file at once: buf[0..len) written to the temporary tmp in dirfd (0600,
 * truncated if a crash left it, never through a symlink), then committed as final by
 * hal_file_commit_at. 0 or -errno. */
int hal_file_write_at(int dirfd, const char *tmp, const char *final, const void *buf,
		      size_t len);
/* fsync a folder, so that renames and removals in it survive a crash. 0 or -errno. */
int hal_fsync_dir(const char *dir);

#endif
