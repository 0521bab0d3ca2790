/* SPDX-License-Identifier: MIT */
#include "agent/analysis/debugfile.h"
#include "agent/analysis/debuginfod.h"
#include "agent/analysis/symbols.h"
#include "hal/fs.h"
#include "ringbuf/crc32.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The settings, copied (agent_debug_set): fixed arrays, so a caller's strings need not
 * outlive the call. */
static struct {
	char root[PATH_MAX];
	char urls[1024];
	char cache[PATH_MAX];
	int timeout_ms;
	char error[512];
} cfg;

static int copy(char *dst, size_t size, const char *src)
{
	size_t n = src ? strlen(src) : 0;
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
	return 0;
}

int agent_debug_set(const struct agent_debug_settings *s)
{
	static const struct agent_debug_settings none;
	if (!s)
		s = &none;
	char root[sizeof(cfg.root)], urls[sizeof(cfg.urls)], cache[sizeof(cfg.cache)];
	if (copy(root, sizeof(root), s->root) || copy(urls, sizeof(urls), s->urls) ||
	    copy(cache, sizeof(cache), s->cache))
		return -ENAMETOOLONG;
	memcpy(cfg.root, root, sizeof(root));
	memcpy(cfg.urls, urls, sizeof(urls));
	memcpy(cfg.cache, cache, sizeof(cache));
	cfg.timeout_ms = s->timeout_ms;
	cfg.error[0] = '\0';
	return 0;
}

const char *agent_debug_error(void)
{
	return cfg.error;
}

int agent_open_regular(const char *path, uid_t owner, struct stat *st)
{
	struct stat look;
	/* stat first: a device or a FIFO is refused by what it is, never opened (opening a
	 * device runs its driver's open, whatever the flags). */
	if (stat(path, &look) != 0)
		return -errno;
	if (S_ISDIR(look.st_mode))
		return -EISDIR;
	if (!S_ISREG(look.st_mode))
		return -EINVAL;
	if (owner != (uid_t)-1 && look.st_uid != owner && !(look.st_mode & S_IROTH))
		return -EACCES;
	/* Then open, as safely as ever (O_NONBLOCK: if a FIFO was swapped in since the stat,
	 * the open does not wait), and make sure it is the file looked at. */
	int fd = hal_open_file(AT_FDCWD, path, true, st);
	if (fd < 0)
		return fd;
	if (st->st_dev != look.st_dev || st->st_ino != look.st_ino ||
	    (owner != (uid_t)-1 && st->st_uid != owner && !(st->st_mode & S_IROTH))) {
		close(fd);
		return -EAGAIN;
	}
	return fd;
}

int agent_debug_build_id_path(const char *root, const uint8_t *id, unsigned len, char *buf,
			      size_t size)
{
	if (len < 2) {
		if (size)
			buf[0] = '\0';
		return 0;
	}
	char hex[2 * 32 + 1];
	agent_hex(id, len > 32 ? 32 : len, hex);
	int n = snprintf(buf, size, "%s/.build-id/%.2s/%s.debug", root, hex, hex + 2);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The CRC-32 of all of fd (size bytes), as .gnu_debuglink carries it. 0 or -errno. */
static int file_crc(int fd, uint64_t size, uint32_t *crc)
{
	if (size > AGENT_DEBUG_MAX_CRC_BYTES)
		return -EFBIG;
	enum { CHUNK = 1 << 16 };
	uint8_t *buf = malloc(CHUNK);
	if (!buf)
		return -ENOMEM;
	uint32_t c = 0;
	int err = 0;
	for (uint64_t off = 0; off < size && !err;) {
		size_t want = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		ssize_t r = pread(fd, buf, want, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			err = r < 0 ? -errno : -EINVAL; /* it shrank under us */
		else
			c = rb_crc32(c, buf, (size_t)r), off += (uint64_t)r;
	}
	free(buf);
	*crc = c;
	return err;
}

struct want {
	const struct rb_module *mod;
	size_t budget;
	bool check_crc;
	uint32_t crc;
	struct rb_elf *out;
};

/* Load the debug file open on fd into w->out when it is mod's: same build-id, a symbol
 * table of functions, and (for a debuglink) the link's CRC. 0 or a negative errno. */
static int take(int fd, uint64_t size, void *arg)
{
	struct want *w = arg;
	int err = rb_elf_read(fd, size, w->budget, w->out);
	if (err)
		return err;
	bool same = w->out->build_id_len == w->mod->build_id_len &&
		    memcmp(w->out->build_id, w->mod->build_id, w->mod->build_id_len) == 0;
	uint32_t crc = 0;
	if (!same || !w->out->full_symtab || !w->out->nsyms)
		err = -ESRCH;
	else if (w->check_crc && (err = file_crc(fd, size, &crc)) == 0 && crc != w->crc)
		err = -ESRCH;
	if (err)
		rb_elf_free(w->out);
	return err;
}

static int try_path(const char *path, uid_t owner, struct want *w)
{
	struct stat st;
	int fd = agent_open_regular(path, owner, &st);
	if (fd < 0)
		return fd;
	int err = take(fd, (uint64_t)st.st_size, w);
	close(fd);
	return err;
}

/* The three debuglink places (GDB's): beside the module, in its .debug/, under the root. */
static int try_debuglink(const struct rb_module *mod, const struct rb_elf *file, const char *root,
			 uid_t owner, struct want *w)
{
	const char *slash = strrchr(mod->path, '/');
	if (!file || !file->debuglink[0] || !slash)
		return -ENOENT;
	int dl = (int)(slash - mod->path); /* the folder, without its last '/' */
	char path[PATH_MAX];
	const char *above[] = { "", "", root }, *below[] = { "/", "/.debug/", "/" };
	w->check_crc = true;
	w->crc = file->debuglink_crc;
	for (int i = 0; i < 3; i++) {
		int n = snprintf(path, sizeof(path), "%s%.*s%s%s", above[i], dl, mod->path,
				 below[i], file->debuglink);
		if (n > 0 && (size_t)n < sizeof(path) && try_path(path, owner, w) == 0)
			return 0;
	}
	w->check_crc = false;
	return -ENOENT;
}

int agent_debug_find(const struct rb_module *mod, const struct rb_elf *file, uid_t owner,
		     size_t budget, struct rb_elf *out)
{
	memset(out, 0, sizeof(*out));
	if (!mod->build_id_len)
		return -ENOENT; /* nothing could prove a debug file the one of this build */
	char root[PATH_MAX], path[PATH_MAX];
	if (cfg.root[0] ? copy(root, sizeof(root), cfg.root)
			: hal_path(root, sizeof(root), "usr/lib/debug"))
		return -ENOENT;
	struct want w = { .mod = mod, .budget = budget, .out = out };
	if (agent_debug_build_id_path(root, mod->build_id, mod->build_id_len, path,
				      sizeof(path)) == 0 &&
	    path[0] && try_path(path, owner, &w) == 0)
		return 0;
	if (try_debuglink(mod, file, root, owner, &w) == 0)
		return 0;
	/* A server, only for a user's own command (jittd sets no URL) and a full build-id's
	 * file: the cache first, then the servers, in turn. */
	if (!cfg.urls[0] || !cfg.cache[0] || mod->build_id_len < 2)
		return -ENOENT;
	char hex[2 * 32 + 1];
	agent_hex(mod->build_id, mod->build_id_len > 32 ? 32 : mod->build_id_len, hex);
	if (agent_debuginfod_cache_path(cfg.cache, hex, path, sizeof(path)) == 0 &&
	    try_path(path, owner, &w) == 0)
		return 0;
	struct agent_debuginfod d = { .urls = cfg.urls,
				      .cache = cfg.cache,
				      .timeout_ms = cfg.timeout_ms,
				      .check = take,
				      .arg = &w };
	char err[sizeof(cfg.error)];
	if (agent_debuginfod_fetch(&d, hex, err, sizeof(err)) == 0)
		return 0;
	memcpy(cfg.error, err, sizeof(err));
	return -ENOENT;
}
