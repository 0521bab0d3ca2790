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
#include "ringbuf/tracefile.h"

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

/* ---- slots (agent/spool.h): the caps kept without listing the spool ---- */

/* Slot numbers as max_traces allows them; a slot file named past it is not a writer's. */
#define SLOT_MAX 10000

SPOOL static void slot_name(char *buf, size_t size, int k)
{
	snprintf(buf, size, "%s%d", AGENT_SPOOL_SLOT_PREFIX, k);
}

/* A slot file's number (".slot-K"), or -1. */
SPOOL static int slot_file(const char *name)
{
	size_t k = strlen(AGENT_SPOOL_SLOT_PREFIX);
	if (strncmp(name, AGENT_SPOOL_SLOT_PREFIX, k))
		return -1;
	size_t n = strspn(name + k, "0123456789");
	if (!n || n > 5 || name[k + n])
		return -1;
	int s = atoi(name + k);
	return s < SLOT_MAX ? s : -1;
}

/* "-s<K>" at the end of name[0..len): K, or -1. */
SPOOL static int tag_slot(const char *name, size_t len)
{
	size_t i = len;
	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i == len || len - i > 5 || i < 2 || name[i - 1] != 's' || name[i - 2] != '-')
		return -1;
	int s = atoi(name + i);
	return s < SLOT_MAX ? s : -1;
}

SPOOL int agent_spool_slot_of(const char *name)
{
	size_t n = strlen(name);
	if (n > 4 && !strcmp(name + n - 4, ".jtr"))
		n -= 4;
	return tag_slot(name, n);
}

/* The lengths of the slots 0..n-1 added up: the bytes claimed. Name lookups only. */
SPOOL static uint64_t claimed_bytes(int spool, unsigned n)
{
	uint64_t sum = 0;
	for (unsigned k = 0; k < n; k++) {
		char name[32];
		struct stat st;
		slot_name(name, sizeof(name), (int)k);
		if (fstatat(spool, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	return sum;
}

struct claim {
	const struct agent_config *c;
	int spool; /* the folder, opened without following a symlink */
	int slot;  /* claimed, or -1 */
};

/* rb_trace_write_reserved's say: a slot claimed for `size` bytes, or -EDQUOT. */
SPOOL static int claim_slot(void *arg, uint64_t size, char *tag, size_t tagsize)
{
	struct claim *cl = arg;
	const unsigned n = cl->c->max_traces;
	const uint64_t max_bytes = (uint64_t)cl->c->max_trace_mb << 20;
	if (!n || size > max_bytes)
		return -EDQUOT;
	char pid[24];
	int len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	/* Each process from a place of its own: writers at once rarely try the same names. */
	unsigned first = (unsigned)getpid() % n;
	for (unsigned i = 0; i < n; i++) {
		char name[32];
		int k = (int)((first + i) % n);
		slot_name(name, sizeof(name), k);
		int fd = openat(cl->spool, name,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
		if (fd < 0) {
			if (errno == EEXIST)
				continue;
			return -errno;
		}
		/* The pid tells jittd whether the claimant is alive; the length is the claim
		 * (sparse: it takes no blocks). 0640 whatever the umask: in a set-group-id spool
		 * jittd's group reads the pid, and no other app does. */
		errno = 0;
		int e = 0;
		(void)fchmod(fd, 0640);
		if (write(fd, pid, (size_t)len) != len ||
		    ftruncate(fd, (off_t)(size > (uint64_t)len ? size : (uint64_t)len)) != 0)
			e = errno ? -errno : -EIO;
		close(fd);
		/* Our length is set before we add up the others': of two writers at once, the
		 * later to set its length sees the other's, and the bytes are never overrun. */
		if (!e && claimed_bytes(cl->spool, n) > max_bytes)
			e = -EDQUOT;
		if (e) {
			unlinkat(cl->spool, name, 0);
			return e;
		}
		cl->slot = k;
		snprintf(tag, tagsize, "-s%d", k);
		return 0;
	}
	return -EDQUOT;
}

SPOOL int agent_spool_write(const struct agent_config *c, const char *spool, const char *reason,
			    const struct rb_frozen *threads, int nthreads,
			    const struct rb_trace_sched *sched, char *path, size_t path_size)
{
	/* O_PATH: a writer of another uid may search the spool, not read it; a name
	 * lookup relative to it is all a claim needs. */
	struct claim cl = { .c = c,
			    .spool = open(spool, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
			    .slot = -1 };
	if (cl.spool < 0)
		return -errno;
	struct rb_trace_reserve r = { claim_slot, &cl };
	int e = rb_trace_write_reserved(spool, reason, threads, nthreads, sched, &r, path,
					path_size);
	if (e && cl.slot >= 0) {
		char name[32];
		slot_name(name, sizeof(name), cl.slot);
		unlinkat(cl.spool, name, 0);
	}
	close(cl.spool);
	return e;
}

SPOOL int agent_spool_claim_at(const struct agent_spool_dirs *d, const struct agent_config *c,
			       uint64_t size, int *slot)
{
	struct claim cl = { .c = c, .spool = d->spool, .slot = -1 };
	char tag[32];
	int e = d->spool < 0 ? -ENOENT : claim_slot(&cl, size, tag, sizeof(tag));
	*slot = cl.slot;
	return e;
}

SPOOL void agent_spool_unclaim_at(const struct agent_spool_dirs *d, int slot)
{
	char name[32];
	slot_name(name, sizeof(name), slot);
	if (slot >= 0 && d->spool >= 0)
		unlinkat(d->spool, name, 0);
}

SPOOL int agent_spool_release_at(const struct agent_spool_dirs *d, const char *name)
{
	int k = agent_spool_slot_of(name);
	if (k < 0 || d->spool < 0)
		return 0;
	char slot[32];
	slot_name(slot, sizeof(slot), k);
	return unlinkat(d->spool, slot, 0) == 0 || errno == ENOENT ? 0 : -errno;
}

/* ---- the trim ---- */

/* The pid a claimant wrote in its slot, or 0 when it cannot be read. */
SPOOL static pid_t slot_pid(int spool, const char *name)
{
	int fd = openat(spool, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[24];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *end;
	unsigned long pid = strtoul(buf, &end, 10);
	return end != buf && *end == '\n' && pid > 0 && pid <= INT32_MAX ? (pid_t)pid : 0;
}

/* What one slot holds while the trim works. In the spool a slot's trace is one file: its
 * writer's temporary, renamed into the trace (a folder read during the rename may show
 * both names: one trace still). In traces/, its kept copy. */
struct slot_use {
	bool claimed;
	bool spooled;	      /* a trace or temporary in the spool named for it */
	unsigned kept;	      /* copies in traces/ named for it */
	uint64_t spool_bytes; /* the largest of the spool's names */
	uint64_t kept_bytes;
	uint64_t reserved; /* the slot's length */
	struct stat st;	   /* the slot file's */
};

SPOOL static unsigned slot_files(const struct slot_use *u)
{
	return (unsigned)u->spooled + u->kept;
}

struct usage {
	size_t files;
	uint64_t bytes;
};

/* The accounting of spool/ and traces/: the slots, and what holds none ("loose"). */
struct ledger {
	struct slot_use *u;
	size_t nslots;
	struct usage loose;
};

SPOOL static struct usage ledger_total(const struct ledger *l)
{
	struct usage t = l->loose;
	for (size_t k = 0; k < l->nslots; k++) {
		const struct slot_use *u = &l->u[k];
		unsigned files = slot_files(u);
		uint64_t bytes = u->spool_bytes + u->kept_bytes;
		if (u->claimed) { /* the claim, or its files if more (a trace and its copy) */
			t.files += files > 1 ? files : 1;
			t.bytes += bytes > u->reserved ? bytes : u->reserved;
		} else {
			t.files += files;
			t.bytes += bytes;
		}
	}
	return t;
}

/* A file or temporary of spool/ or traces/ (kept), named `name`, of `bytes`, entered (sign
 * 1) or taken out (-1). */
SPOOL static void ledger_add(struct ledger *l, bool kept, const char *name, uint64_t bytes,
			     int sign)
{
	int k = agent_spool_slot_of(name);
	struct usage *loose = &l->loose;
	if (k >= 0 && (size_t)k < l->nslots) {
		struct slot_use *u = &l->u[k];
		if (kept) {
			u->kept += (unsigned)sign;
			u->kept_bytes += sign > 0 ? bytes : -bytes;
		} else if (sign > 0) {
			u->spooled = true;
			if (bytes > u->spool_bytes)
				u->spool_bytes = bytes;
		} else {
			u->spooled = false;
			u->spool_bytes = 0;
		}
	} else {
		loose->files += (size_t)sign;
		loose->bytes += sign > 0 ? bytes : -bytes;
	}
}

/*
 * One reading of the spool folder: gone writers' temporaries and planted slot files
 * removed, the live temporaries and the slots entered in the ledger (slots: what a writer
 * claimed, counted by ledger_total). 0 or -errno.
 */
SPOOL static int scan_spool(int dirfd, struct ledger *l, struct agent_spool_trimmed *t)
{
	if (dirfd < 0)
		return 0;
	DIR *d = open_listing(dirfd);
	if (!d)
		return -errno;
	int e = 0;
	struct dirent *de;
	while ((de = readdir(d)) && !e) {
		pid_t pid = temporary_pid(de->d_name);
		int k = pid ? -1 : slot_file(de->d_name);
		struct stat st;
		if ((!pid && k < 0) || fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		/* Not a file (planted), or a writer that is gone: it will never be renamed. A
		 * slot file that is not one a writer makes is planted: it holds nothing. */
		bool gone = pid ? !S_ISREG(st.st_mode) || writer_gone(pid, &st)
				: !S_ISREG(st.st_mode) || st.st_nlink != 1;
		if (gone) {
			int flags = S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0;
			if (unlinkat(dirfd, de->d_name, flags) == 0) {
				t->other++;
				if (S_ISREG(st.st_mode) && pid)
					t->bytes += (uint64_t)st.st_size;
			} else if (errno != ENOENT && errno != ENOTEMPTY && errno != EPERM &&
				   errno != EACCES) {
				e = -errno;
			}
			continue;
		}
		if (pid) {
			ledger_add(l, false, de->d_name, (uint64_t)st.st_size, 1);
			continue;
		}
		if ((size_t)k >= l->nslots) {
			size_t n = (size_t)k + 1;
			struct slot_use *u = realloc(l->u, n * sizeof(*u));
			if (!u) {
				e = -ENOMEM;
				break;
			}
			memset(u + l->nslots, 0, (n - l->nslots) * sizeof(*u));
			l->u = u;
			l->nslots = n;
		}
		l->u[k].claimed = true;
		l->u[k].reserved = (uint64_t)st.st_size;
		l->u[k].st = st;
	}
	closedir(d);
	return e;
}

/* A slot that nothing holds (no trace, no temporary named for it) and whose claimant is
 * gone (the rule of temporaries: its pid is gone and the slot is older than the grace, or
 * it is older than the longest a writer takes, whatever the pid) is free again. */
SPOOL static void release_dead_claims(int spool, struct ledger *l, struct agent_spool_trimmed *t)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	for (size_t k = 0; k < l->nslots; k++) {
		struct slot_use *u = &l->u[k];
		if (!u->claimed || slot_files(u))
			continue;
		char name[32];
		slot_name(name, sizeof(name), (int)k);
		pid_t pid = slot_pid(spool, name);
		bool dead = pid ? writer_gone(pid, &u->st)
				: now.tv_sec - u->st.st_mtim.tv_sec > AGENT_SPOOL_TMP_MAX_AGE_S;
		if (dead && unlinkat(spool, name, 0) == 0) {
			u->claimed = false;
			t->other++;
		}
	}
}

/* One trace of the ledger removed (ENOENT: someone else did, it counts no more); its slot
 * released when nothing else holds it. 0 or -errno. */
SPOOL static int remove_trace(const struct agent_spool_dirs *d, struct ledger *l,
			      const struct agent_spool_file *f)
{
	if (unlinkat(dir_fd(d, f->sub), f->name, 0) != 0 && errno != ENOENT)
		return -errno;
	ledger_add(l, !strcmp(f->sub, "traces"), f->name, f->bytes, -1);
	int k = agent_spool_slot_of(f->name);
	if (k >= 0 && (size_t)k < l->nslots && l->u[k].claimed && !slot_files(&l->u[k])) {
		char name[32];
		slot_name(name, sizeof(name), k);
		unlinkat(d->spool, name, 0);
		l->u[k].claimed = false;
	}
	return 0;
}

SPOOL static int trim_traces(const struct agent_spool_dirs *d, const struct agent_config *c,
			     uint64_t incoming, struct agent_spool_trimmed *t)
{
	static const char *const subs[] = { "spool", "traces" };
	struct ledger l = { .nslots = c->max_traces };
	l.u = calloc(l.nslots ? l.nslots : 1, sizeof(*l.u));
	if (!l.u)
		return -ENOMEM;
	/* The spool's own entries first, the traces after: a trace renamed in between is
	 * then seen as a trace, never missed (its slot is too young to be thought dead). */
	int e = scan_spool(d->spool, &l, t);
	struct agent_spool_file *files = NULL;
	size_t n = 0;
	if (!e)
		e = list(d, subs, 2, &files, &n);
	if (e) {
		free(l.u);
		return e;
	}
	/* Only what a writer of ours made counts and is trimmed; planted entries are jittd's
	 * to remove (agent/daemon/worker.c), and count nothing. */
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (agent_spool_is_plain(&files[i]))
			files[m++] = files[i];
	n = m;
	for (size_t i = 0; i < n; i++)
		ledger_add(&l, !strcmp(files[i].sub, "traces"), files[i].name, files[i].bytes, 1);
	release_dead_claims(d->spool, &l, t);

	const size_t max_files = c->max_traces;
	const uint64_t max_bytes = (uint64_t)c->max_trace_mb << 20;
	/* Room for one more trace: the copy coming, or the next app's (a slot's share). */
	const uint64_t want = incoming ? incoming : max_bytes / (max_files ? max_files : 1);
	/* Kept copies first, oldest first: their summaries exist (Hubble 6: the summary is
	 * what leaves the device; a raw copy is for a developer, and the newest matter). */
	for (size_t i = 0; i < n && !e; i++) {
		struct usage u = ledger_total(&l);
		if (u.files + 1 <= max_files && u.bytes + want <= max_bytes)
			break;
		if (strcmp(files[i].sub, "traces"))
			continue;
		e = remove_trace(d, &l, &files[i]);
		if (!e) {
			t->rotated++;
			t->bytes += files[i].bytes;
		}
	}
	struct usage u = ledger_total(&l);
	if (incoming) {
		t->no_room = !(u.files + 1 <= max_files && u.bytes + incoming <= max_bytes);
		n = 0; /* a copy never makes room by dropping an unsummarised trace */
	}
	/* Then the spool's, only to bring it within the caps. */
	for (size_t i = 0; i < n && !e; i++) {
		if (u.files <= max_files && u.bytes <= max_bytes)
			break;
		if (strcmp(files[i].sub, "spool"))
			continue;
		e = remove_trace(d, &l, &files[i]);
		if (!e) {
			t->unsummarised++;
			t->bytes += files[i].bytes;
			if (t->dropped)
				t->dropped(t->arg, files[i].name);
		}
		u = ledger_total(&l);
	}
	free(files);
	free(l.u);
	return e;
}

/*
 * Remove the oldest plain *.jtr of quarantine/ (each with its .why) until those left fit
 * the caps. Adds to t->other and t->bytes. 0 or -errno.
 */
SPOOL static int trim_quarantine(const struct agent_spool_dirs *d, const struct agent_config *c,
				 struct agent_spool_trimmed *t)
{
	static const char *const subs[] = { "quarantine" };
	struct agent_spool_file *files;
	size_t n;
	int e = list(d, subs, 1, &files, &n);
	if (e)
		return e;
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (agent_spool_is_plain(&files[i]))
			files[m++] = files[i];
	n = m;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += files[i].bytes;
	const uint64_t max_bytes = (uint64_t)c->max_trace_mb << 20;
	for (size_t i = 0; i < n; i++) {
		if (n - i <= c->max_traces && total <= max_bytes)
			break;
		total -= files[i].bytes;
		if (unlinkat(d->quarantine, files[i].name, 0) != 0) {
			if (errno == ENOENT)
				continue;
			e = -errno;
			break;
		}
		char why[sizeof(files[i].name) + 8];
		snprintf(why, sizeof(why), "%.*s.why", (int)(strlen(files[i].name) - 4),
			 files[i].name);
		unlinkat(d->quarantine, why, 0);
		t->other++;
		t->bytes += files[i].bytes;
	}
	free(files);
	return e;
}

SPOOL int agent_spool_trim_at(const struct agent_spool_dirs *d, const struct agent_config *c,
			      uint64_t incoming, struct agent_spool_trimmed *t)
{
	struct agent_spool_trimmed none = { 0 };
	if (!t)
		t = &none;
	int e = trim_traces(d, c, incoming, t);
	/* Quarantined copies have caps of their own, the same numbers: a writer feeding jittd
	 * files it cannot summarise must not fill the disk through quarantine/ either, nor
	 * push out the good traces kept in traces/. */
	if (!e && d->quarantine >= 0)
		e = trim_quarantine(d, c, t);
	return e ? e : (int)(t->rotated + t->unsummarised + t->other);
}

SPOOL int agent_spool_trim(const struct agent_config *c, uint64_t incoming, uint64_t *removed_bytes)
{
	struct agent_spool_dirs d;
	struct agent_spool_trimmed t = { 0 };
	int e = agent_spool_open(c, &d);
	if (!e)
		e = agent_spool_trim_at(&d, c, incoming, &t);
	agent_spool_close(&d);
	if (removed_bytes)
		*removed_bytes += t.bytes;
	return e;
}
