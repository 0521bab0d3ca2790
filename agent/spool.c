/* SPDX-License-Identifier: MIT */
/*
 * The data folder of agent/spool.h: its sub-folders, and the caps on raw traces. Linked
 * into libjitt too, so nothing here is instrumented and nothing prints.
 *
 * Every operation inside the data folder is relative to a folder's descriptor opened once
 * without following symlinks: a symlink or a swapped entry planted by another user is
 * seen for what it is, never followed (docs/security.md).
 */
#define _GNU_SOURCE
#include "agent/spool.h"
#include "hal/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPOOL __attribute__((no_instrument_function))

/* uploads/: the uploader's (queued reports, the install secret, the budget count). */
static const char *const subdirs[] = { "spool", "traces", "outbox", "quarantine", "uploads" };
/* The modes jittd creates (agent/spool.h says why); fchmod'd, so umask does not matter. */
#define DATA_MODE  0711
#define SPOOL_MODE 03733
#define SUB_MODE   0700
#define DIR_FLAGS  (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

SPOOL static int *dir_slot(struct agent_spool_dirs *d, const char *sub)
{
	if (!strcmp(sub, "spool"))
		return &d->spool;
	if (!strcmp(sub, "traces"))
		return &d->traces;
	if (!strcmp(sub, "outbox"))
		return &d->outbox;
	if (!strcmp(sub, "quarantine"))
		return &d->quarantine;
	if (!strcmp(sub, "uploads"))
		return &d->uploads;
	return NULL;
}

SPOOL static int dir_fd(const struct agent_spool_dirs *d, const char *sub)
{
	int *p = dir_slot((struct agent_spool_dirs *)d, sub);
	return p ? *p : -1;
}

SPOOL void agent_spool_close(struct agent_spool_dirs *d)
{
	int *fds[] = { &d->data, &d->spool, &d->traces, &d->outbox, &d->quarantine, &d->uploads };
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}

SPOOL static void dirs_init(struct agent_spool_dirs *d)
{
	d->data = d->spool = d->traces = d->outbox = d->quarantine = d->uploads = -1;
}

__attribute__((format(printf, 3, 4))) SPOOL static void say(char *err, size_t errsize,
							    const char *fmt, ...)
{
	if (!err || !errsize)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errsize, fmt, ap);
	va_end(ap);
}

/*
 * Open folder `name` of parent (a descriptor) without following a symlink; create it with
 * `mode` when missing (*created set). What is there instead of a folder is named in err.
 */
SPOOL static int open_dir(int parent, const char *name, const char *shown, mode_t mode,
			  bool *created, char *err, size_t errsize)
{
	*created = false;
	int fd = openat(parent, name, DIR_FLAGS);
	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(parent, name, 0700) == 0) {
			*created = true;
		} else if (errno != EEXIST) {
			int e = -errno;
			say(err, errsize, "cannot create %s: %s", shown, strerror(-e));
			return e;
		}
		fd = openat(parent, name, DIR_FLAGS);
		if (fd >= 0 && *created && fchmod(fd, mode) != 0) {
			int e = -errno;
			close(fd);
			say(err, errsize, "cannot set the mode of %s: %s", shown, strerror(-e));
			return e;
		}
	}
	if (fd >= 0)
		return fd;
	int e = -errno;
	struct stat st;
	if ((e == -ELOOP || e == -ENOTDIR) &&
	    fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode)) {
			say(err, errsize,
			    "%s is a symbolic link: refused (another user may have "
			    "planted it)",
			    shown);
			return -ELOOP;
		}
		say(err, errsize, "%s is %s, not a folder", shown, hal_file_kind(st.st_mode));
		return -ENOTDIR;
	}
	say(err, errsize, "cannot open %s: %s", shown, strerror(-e));
	return e;
}

/*
 * Who may change a folder: only its owner (root or us) when nobody else may write it; with
 * the sticky bit (sticky_ok), others may add entries but not rename or remove ours.
 */
SPOOL static int check_dir(int fd, const char *shown, bool root_ok, bool sticky_ok, char *err,
			   size_t errsize)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = -errno;
		say(err, errsize, "cannot stat %s: %s", shown, strerror(-e));
		return e;
	}
	uid_t me = geteuid();
	if (st.st_uid != me && !(root_ok && st.st_uid == 0)) {
		say(err, errsize,
		    "%s is owned by uid %u, not by %s%u: another user could change "
		    "what is in it",
		    shown, (unsigned)st.st_uid, root_ok ? "root or uid " : "uid ", (unsigned)me);
		return -EPERM;
	}
	if ((st.st_mode & 022) && !(sticky_ok && (st.st_mode & S_ISVTX))) {
		say(err, errsize,
		    "%s is writable by %s (mode %04o)%s: another user could replace "
		    "what is in it",
		    shown, (st.st_mode & 002) ? "others" : "its group",
		    (unsigned)(st.st_mode & 07777), sticky_ok ? " without the sticky bit" : "");
		return -EPERM;
	}
	return 0;
}

/*
 * A set-group-id spool gives every trace its group, and writers make their traces readable
 * by that group (ringbuf/tracefile.c): it must be ours, or another group would read every
 * app's traces and jittd none (docs/oem.md, "Many apps, many uids").
 */
SPOOL static int check_spool_group(int fd, const char *shown, char *err, size_t errsize)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = -errno;
		say(err, errsize, "cannot stat %s: %s", shown, strerror(-e));
		return e;
	}
	if ((st.st_mode & S_ISGID) && st.st_gid != getegid()) {
		say(err, errsize,
		    "%s is set-group-id with group %u, not jittd's group %u: the traces "
		    "would be readable by that group and not by jittd",
		    shown, (unsigned)st.st_gid, (unsigned)getegid());
		return -EPERM;
	}
	return 0;
}

/* The data folder as an absolute path without symlinks, "." or "..": the longest part that
 * exists resolved by realpath (a symlink there was put by root or us, or the walk that
 * follows refuses it), the rest appended as it is. */
SPOOL static int resolve(const char *data_dir, char *out, size_t size, char *err, size_t errsize)
{
	char path[PATH_MAX], real[PATH_MAX];
	if (data_dir[0] != '/') {
		say(err, errsize, "data_dir %s is not an absolute path", data_dir);
		return -EINVAL;
	}
	if (snprintf(path, sizeof(path), "%s", data_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = 0;
	size_t cut = len;
	for (;;) {
		char saved = path[cut];
		path[cut] = 0;
		char *r = realpath(cut ? path : "/", real);
		path[cut] = saved;
		if (r)
			break;
		if (errno != ENOENT && errno != ENOTDIR) {
			int e = -errno;
			say(err, errsize, "cannot resolve %s: %s", data_dir, strerror(-e));
			return e;
		}
		while (cut > 0 && path[cut - 1] != '/')
			cut--;
		while (cut > 0 && path[cut - 1] == '/')
			cut--;
	}
	const char *rest = path + cut;
	for (const char *p = rest; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			say(err, errsize, "data_dir %s: '.' and '..' are not allowed", data_dir);
			return -EINVAL;
		}
		p += n;
	}
	int n = snprintf(out, size, "%s%s", strcmp(real, "/") ? real : "", rest);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	char *w = out; /* "a//b" is "a/b" */
	for (const char *r = out; *r; r++)
		if (*r != '/' || w == out || w[-1] != '/')
			*w++ = *r;
	*w = 0;
	if (!out[0] || !strcmp(out, "/")) {
		say(err, errsize, "data_dir %s is the root folder: jittd needs a folder of its own",
		    data_dir);
		return -EINVAL;
	}
	return 0;
}

SPOOL int agent_spool_prepare(const struct agent_config *c, struct agent_spool_dirs *d, char *err,
			      size_t errsize)
{
	dirs_init(d);
	char path[PATH_MAX];
	int e = resolve(c->data_dir, path, sizeof(path), err, errsize);
	if (e)
		return e;
	/* From "/" down, each folder opened relative to the one above it, never following a
	 * symlink, and checked before anything is made inside it. */
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = check_dir(fd, "/", true, true, err, errsize);
	char *p = path + 1;
	while (!e) {
		char *slash = strchr(p, '/');
		bool last = !slash;
		if (slash)
			*slash = 0;
		bool created;
		/* The parents as mkdir -p makes them (under jittd's umask); the data folder
		 * reachable by writers of other uids, but not listable. */
		int next = open_dir(fd, p, path, last ? DATA_MODE : 0755, &created, err, errsize);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
		e = check_dir(fd, path, true, !last, err, errsize);
		if (last)
			break;
		*slash = '/';
		p = slash + 1;
	}
	if (e) {
		close(fd);
		return e;
	}
	d->data = fd;
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]) && !e; i++) {
		char shown[PATH_MAX + 16];
		snprintf(shown, sizeof(shown), "%s/%s", path, subdirs[i]);
		bool spool = !strcmp(subdirs[i], "spool"), created;
		int sfd = open_dir(d->data, subdirs[i], shown, spool ? SPOOL_MODE : SUB_MODE,
				   &created, err, errsize);
		if (sfd < 0) {
			e = sfd;
			break;
		}
		*dir_slot(d, subdirs[i]) = sfd;
		/* Ours alone: another uid owning one could plant what jittd then writes over. */
		e = check_dir(sfd, shown, false, spool, err, errsize);
		if (!e && spool)
			e = check_spool_group(sfd, shown, err, errsize);
	}
	if (e)
		agent_spool_close(d);
	return e;
}

SPOOL int agent_spool_open(const struct agent_config *c, struct agent_spool_dirs *d)
{
	dirs_init(d);
	d->data = open(c->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->data < 0)
		return errno == ENOENT ? 0 : -errno;
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		int fd = openat(d->data, subdirs[i], DIR_FLAGS);
		if (fd < 0 && errno != ENOENT) {
			int e = -errno;
			agent_spool_close(d);
			return e;
		}
		*dir_slot(d, subdirs[i]) = fd;
	}
	return 0;
}

/* A raw trace: "*.jtr", not hidden (writers' temporaries start with a dot). */
SPOOL static int is_trace(const char *name)
{
	size_t n = strlen(name);
	return name[0] != '.' && n > 4 && !strcmp(name + n - 4, ".jtr");
}

SPOOL int agent_spool_is_plain(const struct agent_spool_file *f)
{
	return S_ISREG(f->mode) && f->nlink == 1;
}

/* A folder's entries from the start, without disturbing another reader of the same
 * descriptor: a new open file description of it (a dup would share the offset). */
SPOOL static DIR *open_listing(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* Append the *.jtr entries of one sub-folder to *files. A missing folder holds none. */
SPOOL static int list_dir(int dirfd, const char *sub, struct agent_spool_file **files, size_t *n,
			  size_t *cap)
{
	if (dirfd < 0)
		return 0;
	DIR *d = open_listing(dirfd);
	if (!d)
		return -errno;
	int e = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!is_trace(de->d_name) || strlen(de->d_name) >= sizeof((*files)->name))
			continue;
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue; /* gone meanwhile */
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
		struct agent_spool_file *f = &(*files)[*n];
		f->mtime = st.st_mtim;
		f->bytes = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
		f->mode = (unsigned)st.st_mode;
		f->nlink = (unsigned)st.st_nlink;
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

SPOOL static int list(const struct agent_spool_dirs *d, const char *const *subs, int nsubs,
		      struct agent_spool_file **files, size_t *n)
{
	size_t cap = 0;
	*files = NULL;
	*n = 0;
	int e = 0;
	for (int i = 0; i < nsubs && !e; i++)
		e = list_dir(dir_fd(d, subs[i]), subs[i], files, n, &cap);
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

SPOOL int agent_spool_list_at(const struct agent_spool_dirs *d, const char *sub,
			      struct agent_spool_file **files, size_t *n)
{
	return list(d, &sub, 1, files, n);
}

SPOOL int agent_spool_list(const struct agent_config *c, const char *sub,
			   struct agent_spool_file **files, size_t *n)
{
	struct agent_spool_dirs d;
	int e = agent_spool_open(c, &d);
	if (!e)
		e = agent_spool_list_at(&d, sub, files, n);
	else
		*files = NULL, *n = 0;
	agent_spool_close(&d);
	return e;
}

/* The pid in a writer's temporary name, or 0 when it is not one. */
SPOOL static pid_t temporary_pid(const char *name)
{
	size_t k = strlen(AGENT_SPOOL_TMP_PREFIX);
	if (strncmp(name, AGENT_SPOOL_TMP_PREFIX, k))
		return 0;
	char *end;
	unsigned long pid = strtoul(name + k, &end, 10);
	return end != name + k && *end == '-' && pid > 0 && pid <= INT32_MAX ? (pid_t)pid : 0;
}

SPOOL static bool writer_gone(pid_t pid, const struct stat *st)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	time_t age = now.tv_sec - st->st_mtim.tv_sec;
	if (age > AGENT_SPOOL_TMP_MAX_AGE_S)
		return true;
	/* kill(pid, 0): ESRCH when there is no such process (EPERM: it exists, another
	 * user's). */
	return age > AGENT_SPOOL_TMP_GRACE_S && kill(pid, 0) != 0 && errno == ESRCH;
}

/*
 * Writers' temporaries in the spool: those of gone writers removed (counted in *removed and
 * *removed_bytes), the others' count and bytes added to *live and *live_bytes.
 */
SPOOL static int sweep_temporaries(int dirfd, int *removed, uint64_t *removed_bytes, size_t *live,
				   uint64_t *live_bytes)
{
	if (dirfd < 0)
		return 0;
	DIR *d = open_listing(dirfd);
	if (!d)
		return -errno;
	int e = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t pid = temporary_pid(de->d_name);
		struct stat st;
		if (!pid || fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		/* Not a file (planted), or a writer that is gone: it will never be renamed. */
		if (!S_ISREG(st.st_mode) || writer_gone(pid, &st)) {
			int flags = S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0;
			if (unlinkat(dirfd, de->d_name, flags) == 0) {
				(*removed)++;
				if (removed_bytes && S_ISREG(st.st_mode))
					*removed_bytes += (uint64_t)st.st_size;
			} else if (errno != ENOENT && errno != ENOTEMPTY && errno != EPERM &&
				   errno != EACCES) {
				e = -errno;
				break;
			}
			continue;
		}
		(*live)++;
		*live_bytes += (uint64_t)st.st_size;
	}
	closedir(d);
	return e;
}

/*
 * Remove the oldest plain *.jtr of subs until those left, with `live` more files of
 * live_bytes, fit the caps with room for `incoming`. A quarantined trace goes with its .why.
 * Adds to *removed and *removed_bytes. 0 or -errno.
 */
SPOOL static int trim_folders(const struct agent_spool_dirs *d, const struct agent_config *c,
			      const char *const *subs, int nsubs, uint64_t incoming, size_t live,
			      uint64_t live_bytes, int *removed, uint64_t *removed_bytes)
{
	struct agent_spool_file *files;
	size_t n;
	int e = list(d, subs, nsubs, &files, &n);
	if (e)
		return e;
	/* Only what a writer of ours made counts and is trimmed; planted entries are jittd's
	 * to remove (agent/daemon/worker.c), and count nothing. */
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (agent_spool_is_plain(&files[i]))
			files[m++] = files[i];
	n = m;
	uint64_t total = live_bytes;
	for (size_t i = 0; i < n; i++)
		total += files[i].bytes;
	const uint64_t max_bytes = (uint64_t)c->max_trace_mb << 20;
	/* With a file coming, leave room for it; with none, only bring the folders within the
	 * caps. */
	const size_t max_files = incoming ? (c->max_traces ? c->max_traces - 1 : 0) : c->max_traces;
	for (size_t i = 0; i < n; i++) {
		if (n - i + live <= max_files && total + incoming <= max_bytes)
			break;
		total -= files[i].bytes;
		int dirfd = dir_fd(d, files[i].sub);
		if (unlinkat(dirfd, files[i].name, 0) != 0) {
			if (errno == ENOENT) /* someone else removed it: it no longer counts */
				continue;
			e = -errno;
			break;
		}
		if (!strcmp(files[i].sub, "quarantine")) {
			char why[sizeof(files[i].name) + 8];
			snprintf(why, sizeof(why), "%.*s.why", (int)(strlen(files[i].name) - 4),
				 files[i].name);
			unlinkat(dirfd, why, 0);
		}
		(*removed)++;
		if (removed_bytes)
			*removed_bytes += files[i].bytes;
	}
	free(files);
	return e;
}

SPOOL int agent_spool_trim_at(const struct agent_spool_dirs *d, const struct agent_config *c,
			      uint64_t incoming, uint64_t *removed_bytes)
{
	static const char *const traces[] = { "spool", "traces" };
	static const char *const quarantine[] = { "quarantine" };
	int removed = 0;
	size_t live = 0;
	uint64_t live_bytes = 0;
	int e = sweep_temporaries(d->spool, &removed, removed_bytes, &live, &live_bytes);
	if (!e)
		e = trim_folders(d, c, traces, 2, incoming, live, live_bytes, &removed,
				 removed_bytes);
	/* Quarantined copies have caps of their own, the same numbers: a writer feeding jittd
	 * files it cannot summarise must not fill the disk through quarantine/ either, nor
	 * push out the good traces kept in traces/. */
	if (!e)
		e = trim_folders(d, c, quarantine, 1, 0, 0, 0, &removed, removed_bytes);
	return e ? e : removed;
}

SPOOL int agent_spool_trim(const struct agent_config *c, uint64_t incoming, uint64_t *removed_bytes)
{
	struct agent_spool_dirs d;
	int e = agent_spool_open(c, &d);
	if (!e)
		e = agent_spool_trim_at(&d, c, incoming, removed_bytes);
	agent_spool_close(&d);
	return e;
}
