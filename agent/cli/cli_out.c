/* SPDX-License-Identifier: MIT */
/*
 * A file the `jitt` command writes because the command line named it (`jitt export -o`,
 * `jitt exclude -o`). A regular file is written under a temporary name and renamed over
 * the name when whole, so a failure leaves no half file where a viewer or a build would pick
 * it up. But a rename replaces whatever had the name, so what is not a regular file is
 * looked at first: a device or a FIFO is written in place (as a shell's redirection would:
 * renaming over /dev/null, as root, made it a regular file); a symbolic link is refused
 * (replacing it breaks it, writing through it writes where its target says, which in a
 * shared folder someone else chose); so are a folder and a socket; and so is any input of
 * the command (`-o X.jtr X.jtr` replaced the trace with its export).
 */
#include "agent/cli/cli.h"
#include "agent/escape.h"
#include "hal/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int say(const char *prog, const char *path, const char *why)
{
	fprintf(stderr, "%s: ", prog);
	agent_escape_fput(stderr, path);
	fprintf(stderr, ": %s\n", why);
	return 1;
}

/* PATH's temporary sibling, created new (not anyone else's file, nor a link to one). */
static int open_temp(struct cli_out *o, mode_t mode)
{
	if ((size_t)snprintf(o->tmp, sizeof(o->tmp), "%s.tmp-%ld", o->path, (long)getpid()) >=
	    sizeof(o->tmp))
		return -ENAMETOOLONG;
	int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		o->tmp[0] = 0;
		return -errno;
	}
	return fd;
}

/* A device or a FIFO, written in place: no O_CREAT, no O_TRUNC, no link followed, and the
 * same inode the look before found (-EAGAIN: another was swapped in meanwhile). A FIFO
 * waits here for its reader, as a shell's `>` would. */
static int open_in_place(const char *path, const struct stat *seen)
{
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_dev != seen->st_dev || st.st_ino != seen->st_ino) {
		close(fd);
		return -EAGAIN;
	}
	return fd;
}

int cli_out_open(const char *prog, const char *path, mode_t mode, const char *const *inputs,
		 int ninputs, struct cli_out *o)
{
	memset(o, 0, sizeof(*o));
	o->path = path;
	struct stat st;
	int fd;
	if (lstat(path, &st) != 0) {
		if (errno != ENOENT)
			return say(prog, path, strerror(errno));
		fd = open_temp(o, mode); /* a new file */
	} else if (S_ISLNK(st.st_mode)) {
		return say(prog, path,
			   "a symbolic link: neither replaced nor followed (name its target, or "
			   "remove it)");
	} else if (S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode)) {
		char why[64];
		snprintf(why, sizeof(why), "%s, not a file to write", hal_file_kind(st.st_mode));
		return say(prog, path, why);
	} else if (!S_ISREG(st.st_mode)) {
		fd = open_in_place(path, &st);
	} else {
		for (int i = 0; i < ninputs; i++) {
			struct stat in;
			if (stat(inputs[i], &in) == 0 && in.st_dev == st.st_dev &&
			    in.st_ino == st.st_ino)
				return say(prog, path,
					   "a file this command reads: not written over");
		}
		fd = open_temp(o, mode);
	}
	if (fd == -EAGAIN)
		return say(prog, path, "replaced while it was opened: not written");
	if (fd < 0)
		return say(prog, path, strerror(-fd));
	if (!(o->f = fdopen(fd, "w"))) {
		int e = errno;
		close(fd);
		if (o->tmp[0])
			unlink(o->tmp);
		return say(prog, path, strerror(e));
	}
	return 0;
}

int cli_out_close(struct cli_out *o, int e)
{
	if (fclose(o->f) != 0 && !e)
		e = -EIO;
	o->f = NULL;
	if (!o->tmp[0])
		return e;
	if (!e && rename(o->tmp, o->path) != 0)
		e = -errno;
	if (e)
		unlink(o->tmp);
	return e;
}
