/* SPDX-License-Identifier: MIT */
/*
 * agent/runtime/learn_memory.c - what sleds learning found (sleds.c), kept for the
 * program's next run: each judged function's counts, perf's samples of them, who called
 * whom, and the decision made from them (what is out of the trace, what is counted). A run
 * that finds its program's memory starts from that decision: no window traces every
 * function at its start, and the phases an earlier run saw open no window for their new
 * functions (SQLite's speedtest1 opened 22-26 such windows in a run; docs/trace-points.md,
 * "Learning remembered").
 *
 * One file per build of the program (its GNU build-id, else the layout of its sleds), in
 * a folder of the app's own: the settings' sleds_memory, else the app's cache folder
 * ($CACHE_DIRECTORY, a systemd service's; $XDG_CACHE_HOME/jitt; ~/.cache/jitt). Apart from
 * the name, the file must say it was made for this very program (the sleds' count and
 * layout, the timer's frequency within 0.1%, the threshold), and its every index must be
 * one of the program's sleds: anything else is a stale or damaged file, which is left for
 * the next save to replace, and learning starts afresh. Being a cache, it is written without fsync
 * (a crash's torn file fails its CRC), at most every LEARN_SAVE_GAP_MS (sleds.c).
 *
 * The folder is opened without following a symlink at its last step, and must be the
 * app's user's and writable by nobody else (0700 when created here); the file too (0600).
 * A program that runs set-user-ID takes no folder from its environment.
 */
#define _GNU_SOURCE
#include "agent/runtime/learn_memory.h"
#include "hal/fs.h"
#include "ringbuf/crc32.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MEM __attribute__((no_instrument_function))

static const char magic[8] = { 'j', 'i', 't', 't', 'l', 'r', 'n', '1' };
#define MEMORY_VERSION 1
/* A program's few thousand functions take some 100 KiB; past this it is not a memory. */
#define MEMORY_MAX_BYTES (16u << 20)

/* The file: this head, fn[nfn], edges[nedges], counted[ncounted], out[nout], then the
 * CRC-32 of all that; native byte order (it never leaves the device), every part 8-byte
 * aligned but out[] and the CRC. */
struct head {
	char magic[8];
	uint32_t version, head_bytes;
	uint64_t layout, freq, samples, span;
	uint32_t nsleds, min_ns;
	uint32_t nfn, nedges, ncounted, nout;
	uint32_t edges_full, build_id_len;
	uint8_t build_id[32];
};

MEM static size_t body_bytes(const struct head *h)
{
	return sizeof(*h) + (size_t)h->nfn * sizeof(struct agent_memory_fn) +
	       (size_t)h->nedges * sizeof(uint64_t) +
	       (size_t)h->ncounted * sizeof(struct agent_memory_counted) +
	       (size_t)h->nout * sizeof(uint32_t);
}

MEM int agent_memory_encode(const struct agent_memory *m, void **buf, size_t *len)
{
	struct head h = { .version = MEMORY_VERSION, .head_bytes = sizeof(h) };
	memcpy(h.magic, magic, sizeof(magic));
	h.layout = m->key.layout, h.freq = m->key.freq, h.samples = m->samples;
	h.span = m->span;
	h.nsleds = m->key.nsleds, h.min_ns = m->key.min_ns;
	h.nfn = (uint32_t)m->nfn, h.nedges = (uint32_t)m->nedges;
	h.ncounted = (uint32_t)m->ncounted, h.nout = (uint32_t)m->nout;
	h.edges_full = m->edges_full;
	h.build_id_len = m->key.build_id_len;
	memcpy(h.build_id, m->key.build_id, sizeof(h.build_id));
	size_t n = body_bytes(&h);
	char *b = malloc(n + sizeof(uint32_t));
	if (!b)
		return -ENOMEM;
	char *at = b;
#define PUT(p, bytes) (memcpy(at, (p), (bytes)), at += (bytes))
	PUT(&h, sizeof(h));
	PUT(m->fn, m->nfn * sizeof(*m->fn));
	PUT(m->edges, m->nedges * sizeof(*m->edges));
	PUT(m->counted, m->ncounted * sizeof(*m->counted));
	PUT(m->out, m->nout * sizeof(*m->out));
	uint32_t crc = rb_crc32(0, b, n);
	PUT(&crc, sizeof(crc));
#undef PUT
	*buf = b;
	*len = n + sizeof(uint32_t);
	return 0;
}

MEM static const char *check_key(const struct head *h, const struct agent_memory_key *want)
{
	if (h->nsleds != want->nsleds || h->layout != want->layout)
		return "made for another build of the program";
	if (h->build_id_len != want->build_id_len ||
	    memcmp(h->build_id, want->build_id, sizeof(h->build_id)))
		return "made for another build of the program";
	/* x86's timer frequency is calibrated at each start, a few ppm apart run to run */
	uint64_t gap = h->freq > want->freq ? h->freq - want->freq : want->freq - h->freq;
	if (gap > want->freq / 1000)
		return "its times are in another timer's ticks";
	if (h->min_ns != want->min_ns)
		return "learnt with another sleds_learn_ns";
	return NULL;
}

/* Whether every index is one of the nsleds sleds, each at most once in its list (seen: a
 * scratch of nsleds flags) and no function both out and counted. */
MEM static const char *check_indexes(const struct agent_memory *m, uint8_t *seen)
{
	uint32_t n = m->key.nsleds;
	memset(seen, 0, n);
	for (size_t i = 0; i < m->nfn; i++) {
		const struct agent_memory_fn *f = &m->fn[i];
		if (f->idx >= n || seen[f->idx])
			return "a function's counts are there twice, or for no function";
		seen[f->idx] = 1;
		/* Not self <= incl: each is an estimate with the trace points' cost taken out
		 * (sleds.c, learn_ring), and a call whose callees' points cost more than their
		 * measured time has more self time than time */
		if (f->calls > AGENT_MEMORY_COUNT_MAX || f->incl > AGENT_MEMORY_COUNT_MAX ||
		    f->self > AGENT_MEMORY_COUNT_MAX || f->parent > f->calls ||
		    f->hits > AGENT_MEMORY_COUNT_MAX)
			return "a function's counts are out of range";
	}
	if (m->samples > AGENT_MEMORY_COUNT_MAX || m->span > AGENT_MEMORY_COUNT_MAX)
		return "its samples or its span are out of range";
	for (size_t i = 0; i < m->nedges; i++) {
		uint64_t caller = m->edges[i] >> 32, callee = (uint32_t)m->edges[i];
		if (!caller || !callee || caller > n || callee > n)
			return "a call between no functions";
	}
	memset(seen, 0, n);
	for (size_t i = 0; i < m->nout; i++) {
		if (m->out[i] >= n || seen[m->out[i]])
			return "a function out twice, or no function";
		seen[m->out[i]] = 1;
	}
	for (size_t i = 0; i < m->ncounted; i++) {
		uint32_t k = m->counted[i].idx;
		if (k >= n || seen[k])
			return "a function counted twice, or also out, or no function";
		seen[k] = 1;
	}
	return NULL;
}

MEM int agent_memory_decode(const void *buf, size_t len, const struct agent_memory_key *want,
			    struct agent_memory *m, const char **why)
{
	struct head h;
	memset(m, 0, sizeof(*m));
	*why = "not a memory of jitt's, or of another version";
	if (len < sizeof(h) + sizeof(uint32_t))
		return -EINVAL;
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, magic, sizeof(magic)) || h.version != MEMORY_VERSION ||
	    h.head_bytes != sizeof(h))
		return -EINVAL;
	*why = "damaged: its length is not what its head says";
	if (h.nfn > h.nsleds || h.nout > h.nsleds || h.ncounted > h.nsleds ||
	    h.nedges > AGENT_MEMORY_EDGES_MAX || h.build_id_len > sizeof(h.build_id) ||
	    body_bytes(&h) + sizeof(uint32_t) != len)
		return -EINVAL;
	uint32_t crc;
	memcpy(&crc, (const char *)buf + len - sizeof(crc), sizeof(crc));
	*why = "damaged: its CRC fails";
	if (rb_crc32(0, buf, len - sizeof(crc)) != crc)
		return -EINVAL;
	if ((*why = check_key(&h, want)))
		return -ESTALE;
	/* The parts are copied out: buf may be anything, aligned or not. */
	m->key = *want;
	m->samples = h.samples;
	m->span = h.span;
	m->edges_full = h.edges_full != 0;
	m->nfn = h.nfn, m->nedges = h.nedges, m->ncounted = h.ncounted, m->nout = h.nout;
	m->fn = malloc(m->nfn * sizeof(*m->fn) + 1);
	m->edges = malloc(m->nedges * sizeof(*m->edges) + 1);
	m->counted = malloc(m->ncounted * sizeof(*m->counted) + 1);
	m->out = malloc(m->nout * sizeof(*m->out) + 1);
	uint8_t *seen = malloc(h.nsleds + 1);
	*why = "no memory to read it";
	int err = -ENOMEM;
	if (m->fn && m->edges && m->counted && m->out && seen) {
		const char *at = (const char *)buf + sizeof(h);
#define GET(p, bytes) (memcpy((p), at, (bytes)), at += (bytes))
		GET(m->fn, m->nfn * sizeof(*m->fn));
		GET(m->edges, m->nedges * sizeof(*m->edges));
		GET(m->counted, m->ncounted * sizeof(*m->counted));
		GET(m->out, m->nout * sizeof(*m->out));
#undef GET
		err = (*why = check_indexes(m, seen)) ? -EINVAL : 0;
	}
	free(seen);
	if (err)
		agent_memory_free(m);
	return err;
}

MEM void agent_memory_free(struct agent_memory *m)
{
	free(m->fn), free(m->edges), free(m->counted), free(m->out);
	m->fn = NULL, m->edges = NULL, m->counted = NULL, m->out = NULL;
	m->nfn = m->nedges = m->ncounted = m->nout = 0;
}

/* mkdir, where it is missing: 0 when the folder is there after. */
MEM static int make_dir(const char *path)
{
	return mkdir(path, 0700) && errno != EEXIST ? -errno : 0;
}

MEM int agent_memory_folder(const char *setting, bool secure, char *path, size_t size)
{
	if (!strcmp(setting, "off"))
		return -ENOENT;
	if (setting[0]) {
		if ((size_t)snprintf(path, size, "%s", setting) >= size)
			return -ENAMETOOLONG;
		return make_dir(path);
	}
	/* The environment names the app's own folder, unless the program runs with more
	 * rights than whoever set it (set-user-ID: secure_getenv gives nothing then). */
	const char *service = secure ? NULL : getenv("CACHE_DIRECTORY");
	const char *xdg = secure ? NULL : getenv("XDG_CACHE_HOME");
	const char *home = secure ? NULL : getenv("HOME");
	int n;
	if (service && service[0] == '/' && !strchr(service, ':')) { /* ':' joins several */
		n = snprintf(path, size, "%s/jitt", service);
	} else if (xdg && xdg[0] == '/') {
		if ((size_t)snprintf(path, size, "%s", xdg) >= size || make_dir(path))
			return -ENOENT;
		n = snprintf(path, size, "%s/jitt", xdg);
	} else if (home && home[0] == '/') {
		if ((size_t)snprintf(path, size, "%s/.cache", home) >= size || make_dir(path))
			return -ENOENT;
		n = snprintf(path, size, "%s/.cache/jitt", home);
	} else {
		return -ENOENT;
	}
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return make_dir(path);
}

/* The folder's descriptor, if it is the app's own: its user's, nobody else may write. */
MEM static int open_folder(const char *dir, const char **why)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		*why = errno == ELOOP || errno == ENOTDIR ? "not a folder (a symlink?)"
							   : strerror(errno);
		return -errno;
	}
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		*why = "not the app's own folder (another user's, or others may write it)";
		return -EPERM;
	}
	return fd;
}

MEM int agent_memory_read(const char *dir, const char *name, void **buf, size_t *len,
			  const char **why)
{
	int dfd = open_folder(dir, why);
	if (dfd < 0)
		return dfd;
	struct stat st;
	int fd = hal_open_file(dfd, name, false, &st);
	close(dfd);
	if (fd < 0) {
		*why = fd == -ENOENT ? "none yet" : fd == -ELOOP ? "a symlink" : strerror(-fd);
		return fd;
	}
	int err = -EPERM;
	char *b = NULL;
	*why = "not the app's own file (another user's, or others may read it)";
	if (st.st_uid == geteuid() && !(st.st_mode & 077)) {
		err = hal_read_whole(fd, (uint64_t)st.st_size, MEMORY_MAX_BYTES, &b);
		*why = err == -EFBIG ? "too large to be a memory"
		       : err == -EINVAL ? "it shrank while read" : strerror(-err);
	}
	close(fd);
	if (err)
		return err;
	*buf = b;
	*len = (size_t)st.st_size;
	return 0;
}

MEM int agent_memory_write(const char *dir, const char *name, const void *buf, size_t len,
			   const char **why)
{
	int dfd = open_folder(dir, why);
	if (dfd < 0)
		return dfd;
	char tmp[96];
	snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", name, (int)getpid());
	/* O_TRUNC, not O_EXCL: a temporary a killed run left under this pid is ours. */
	int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int err = fd < 0 ? -errno : 0;
	size_t done = 0;
	while (!err && done < len) {
		ssize_t k = write(fd, (const char *)buf + done, len - done);
		if (k > 0)
			done += (size_t)k;
		else if (k < 0 && errno != EINTR)
			err = -errno;
		else if (!k)
			err = -EIO;
	}
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	if (!err && renameat(dfd, tmp, dfd, name))
		err = -errno;
	if (err && fd >= 0)
		unlinkat(dfd, tmp, 0);
	if (err)
		*why = strerror(-err);
	close(dfd);
	return err;
}
