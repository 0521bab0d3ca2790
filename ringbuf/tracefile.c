/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "tracefile.h"
#include "crc32.h"
#include "record.h"
#include "hal/fs.h"
#include "hal/sched.h"
#include "hal/timer.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the layout (docs/trace-format.md); every section starts 8-byte aligned ---- */

struct file_header {
	char magic[8];
	uint16_t version;
	uint8_t word_size;
	uint8_t byte_order; /* 1: little endian, 2: big endian */
	uint32_t header_size;
	uint64_t timer_hz;
	uint64_t ref_ticks;
	uint64_t ref_realtime_ns;
	uint64_t ref_monotonic_ns;
	uint64_t file_size;
	uint32_t pid;
	uint32_t nmodules;
	uint32_t nthreads;
	uint32_t reason_len;
	uint64_t frozen_ticks;
	uint32_t sched_source; /* version 2: enum rb_sched_source; a section when not 0 */
	uint32_t ncpus;	       /* version 2: CPU classes in the scheduling section */
	uint32_t point_ps;     /* a trace point's cost, ps, as the runtime measured it; 0 */
	uint32_t timed_ps;     /* a timed record's, where point_ps is sampled time's; 0 */
};

struct file_module {
	uint64_t bias, start, end;
	uint32_t path_len;
	uint8_t build_id_len;
	uint8_t pad[3];
	uint8_t build_id[RB_BUILD_ID_MAX];
};

struct file_thread {
	uint32_t tid;
	uint32_t flags;
	char name[RB_NAME_MAX];
	uint64_t nslots, end, valid, stored;
	uint32_t laps;
	uint32_t nstack; /* version 3: return addresses after the slots (stack.h); else 0 */
};

/* The scheduling section: per thread, then its switches (struct hal_sched_event: ns of
 * CLOCK_MONOTONIC, CPU, kind). */
struct file_sched {
	uint32_t count;
	uint32_t flags; /* SCHED_ON */
	uint64_t lost;
};
#define SCHED_ON 1u

#define FLAG_COPIED 1u
#define FLAG_ANOMALY 2u /* the anomaly is this thread's (rb_frozen.anomaly) */
#define FOOTER_MAGIC "JEND"
#define MAX_SLOTS ((uint64_t)1 << 27) /* 1 GiB of ring: more is not a ring we wrote */

_Static_assert(sizeof(struct file_header) == 96, "header layout");
_Static_assert(sizeof(struct file_module) == 64, "module layout");
_Static_assert(sizeof(struct file_thread) == 64, "thread layout");
_Static_assert(sizeof(struct file_sched) == 16, "scheduling layout");
_Static_assert(sizeof(struct hal_sched_event) == 16, "switch layout");

static const uint8_t host_order =
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	1;
#else
	2;
#endif

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* ---- writing ---- */

struct writer {
	int fd;
	int err;
	uint32_t crc;
	uint64_t size;
};

static void put(struct writer *w, const void *data, size_t len)
{
	const char *p = data;
	if (w->err)
		return;
	w->crc = rb_crc32(w->crc, data, len);
	w->size += len;
	while (len) {
		ssize_t n = write(w->fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			w->err = -errno;
			return;
		}
		p += n;
		len -= (size_t)n;
	}
}

static void put_padded(struct writer *w, const void *data, size_t len)
{
	static const char zeros[8];
	put(w, data, len);
	put(w, zeros, pad8(len) - len);
}

struct module_list {
	struct file_module m[RB_FILE_MAX_MODULES];
	char path[RB_FILE_MAX_MODULES][256];
	uint32_t n;
};

static void read_build_id(struct dl_phdr_info *info, const ElfW(Phdr) *ph, struct file_module *m)
{
	const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
	const uint8_t *end = p + ph->p_memsz;
	while (p + 12 <= end) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, p, 4);
		memcpy(&descsz, p + 4, 4);
		memcpy(&type, p + 8, 4);
		const uint8_t *name = p + 12, *desc = name + ((namesz + 3) & ~3u);
		if (desc + descsz > end)
			return;
		if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && memcmp(name, "GNU", 4) == 0) {
			m->build_id_len = descsz > RB_BUILD_ID_MAX ? RB_BUILD_ID_MAX : (uint8_t)descsz;
			memcpy(m->build_id, desc, m->build_id_len);
			return;
		}
		p = desc + ((descsz + 3) & ~3u);
	}
}

static int collect_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct module_list *l = arg;
	if (l->n == RB_FILE_MAX_MODULES)
		return 1;
	struct file_module *m = &l->m[l->n];
	memset(m, 0, sizeof(*m));
	m->bias = info->dlpi_addr;
	m->start = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			if (ph->p_vaddr < m->start)
				m->start = ph->p_vaddr;
			if (ph->p_vaddr + ph->p_memsz > m->end)
				m->end = ph->p_vaddr + ph->p_memsz;
		}
		if (ph->p_type == PT_NOTE && !m->build_id_len)
			read_build_id(info, ph, m);
	}
	if (m->start == UINT64_MAX)
		m->start = 0;
	char *path = l->path[l->n];
	/* The first module is the main program, which glibc names "", musl "/proc/self/exe"
	 * when static and argv[0] (a relative path, say) when dynamic: name the real file. */
	if (l->n > 0 && info->dlpi_name && info->dlpi_name[0]) {
		snprintf(path, sizeof(l->path[0]), "%s", info->dlpi_name);
	} else {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(l->path[0]) - 1);
		path[n > 0 ? n : 0] = '\0';
	}
	m->path_len = (uint32_t)strlen(path);
	l->n++;
	return 0;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int rb_trace_write(const char *dir, const char *reason, const struct rb_frozen *threads,
		   int nthreads, char *path_out, size_t path_size)
{
	return rb_trace_write_sched(dir, reason, threads, nthreads, NULL, path_out, path_size);
}

/*
 * A spool many uids write into (docs/oem.md, "Many apps, many uids") is set-group-id: each
 * new file takes the folder's group, the reader's (jittd's), whoever makes it. Then the file
 * is made readable by that group, 0640, so jittd reads it without being root, while another
 * app (not the owner, not in the group) reads nothing. In any other folder the file stays
 * 0600: the writer's own group is nobody we were told may read it. fchmod, not the mode of
 * open(): the writer's umask must not take the group's read away.
 */
static void share_with_folder_group(int fd, const char *dir)
{
	struct stat ds, fs;
	if (stat(dir, &ds) == 0 && (ds.st_mode & S_ISGID) && fstat(fd, &fs) == 0 &&
	    fs.st_gid == ds.st_gid)
		(void)fchmod(fd, 0640); /* on failure the file stays 0600: jittd quarantines it */
}

int rb_trace_write_sched(const char *dir, const char *reason, const struct rb_frozen *threads,
			 int nthreads, const struct rb_trace_sched *sched, char *path_out,
			 size_t path_size)
{
	return rb_trace_write_reserved(dir, reason, threads, nthreads, sched, NULL, path_out,
				       path_size);
}

/* What rb_trace_set_point_cost said, in 1/1024 ticks: each file has it in ps at its own
 * timer frequency. */
static _Atomic uint64_t point_ticks1024;

/* ticks in 1/1024 ticks; 0 when not a measurement (0 or less, or absurd) */
static uint64_t ticks1024_of(double ticks)
{
	return ticks > 0 && ticks < 1e9 ? (uint64_t)(ticks * 1024 + 0.5) : 0;
}

void rb_trace_set_point_cost(double ticks)
{
	atomic_store_explicit(&point_ticks1024, ticks1024_of(ticks), memory_order_relaxed);
}

void rb_trace_set_point_cost1024(uint64_t ticks1024)
{
	atomic_store_explicit(&point_ticks1024, ticks1024, memory_order_relaxed);
}

/* What rb_trace_set_measured said (malloc'd), behind a spin lock: the runtime's control
 * thread sets it after a window's decision, a freeze's writer copies it. */
static struct {
	atomic_flag lock;
	struct rb_measured *m;
	size_t n;
} measured = { ATOMIC_FLAG_INIT, NULL, 0 };

static void measured_lock(void)
{
	while (atomic_flag_test_and_set_explicit(&measured.lock, memory_order_acquire))
		;
}

static void measured_unlock(void)
{
	atomic_flag_clear_explicit(&measured.lock, memory_order_release);
}

int rb_trace_set_measured(const struct rb_measured *m, size_t n)
{
	n = n > RB_FILE_MAX_MEASURED ? RB_FILE_MAX_MEASURED : n;
	struct rb_measured *copy = n ? malloc(n * sizeof(*copy)) : NULL;
	if (n && !copy)
		return -ENOMEM;
	if (n)
		memcpy(copy, m, n * sizeof(*copy));
	measured_lock();
	struct rb_measured *old = measured.m;
	measured.m = copy, measured.n = n;
	measured_unlock();
	free(old);
	return 0;
}

/* A copy of the table (malloc'd, *n of them; NULL when there is none or no memory). */
static struct rb_measured *measured_copy(size_t *n)
{
	measured_lock();
	struct rb_measured *copy = measured.n ? malloc(measured.n * sizeof(*copy)) : NULL;
	*n = copy ? measured.n : 0;
	if (copy)
		memcpy(copy, measured.m, *n * sizeof(*copy));
	measured_unlock();
	return copy;
}

/* What rb_trace_set_timed_cost said, in 1/1024 ticks. */
static _Atomic uint64_t timed_ticks1024;

void rb_trace_set_timed_cost(double ticks)
{
	atomic_store_explicit(&timed_ticks1024, ticks1024_of(ticks), memory_order_relaxed);
}

double rb_trace_point_ps(const struct rb_trace *t, uint64_t records, uint64_t untimed)
{
	if (!t->timed_ps || !records || untimed > records)
		return t->point_ps;
	/* Sampled time times one record in (RB_SAMPLED_GAP_MAX + 1) / 2, a window every one */
	double sampled_untimed = 1.0 - 2.0 / (RB_SAMPLED_GAP_MAX + 1);
	double f = (double)untimed / (double)records / sampled_untimed;
	f = f < 1 ? f : 1;
	return f * t->point_ps + (1 - f) * t->timed_ps;
}

/* ticks1024 (1/1024 timer ticks) in ps at hz; 0 when not known or over 1 ms. */
static uint32_t ticks1024_ps(uint64_t ticks1024, uint64_t hz)
{
	double ps = hz ? (double)ticks1024 / 1024 * 1e12 / (double)hz : 0;
	return ps < 1e9 ? (uint32_t)(ps + 0.5) : 0;
}

int rb_trace_write_reserved(const char *dir, const char *reason, const struct rb_frozen *threads,
			    int nthreads, const struct rb_trace_sched *sched,
			    const struct rb_trace_reserve *r, char *path_out, size_t path_size)
{
	static _Atomic unsigned seq;
	if (nthreads < 0 || nthreads > RB_FILE_MAX_THREADS)
		return -EINVAL;
	if (sched && (sched->source == RB_SCHED_NONE || sched->ncpus > RB_FILE_MAX_CPUS))
		sched = NULL;
	struct module_list *mods = malloc(sizeof(*mods));
	if (!mods)
		return -ENOMEM;
	mods->n = 0;
	dl_iterate_phdr(collect_module, mods);

	struct file_header h = { .version = RB_FILE_VERSION, .word_size = sizeof(void *),
				 .byte_order = host_order, .header_size = sizeof(h) };
	memcpy(h.magic, RB_FILE_MAGIC, 8);
	h.timer_hz = hal_timer_freq();
	/* The reference: the timer read between the two clocks. */
	h.ref_realtime_ns = clock_ns(CLOCK_REALTIME);
	h.ref_ticks = hal_timer_now();
	h.ref_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	h.pid = (uint32_t)getpid();
	for (int i = 0; i < nthreads; i++) /* the last of the rings' freezes */
		if (threads[i].frozen_ticks > h.frozen_ticks && threads[i].frozen_ticks <= h.ref_ticks)
			h.frozen_ticks = threads[i].frozen_ticks;
	/* ps at the frequency the file's times are in: what the reader subtracts from them. */
	h.point_ps = ticks1024_ps(atomic_load_explicit(&point_ticks1024, memory_order_relaxed),
				  h.timer_hz);
	h.timed_ps = ticks1024_ps(atomic_load_explicit(&timed_ticks1024, memory_order_relaxed),
				  h.timer_hz);
	h.nmodules = mods->n;
	h.nthreads = (uint32_t)nthreads;
	h.reason_len = reason ? (uint32_t)strnlen(reason, 4096) : 0;
	if (sched) {
		h.sched_source = sched->source;
		h.ncpus = sched->ncpus;
	}

	/* The size goes in the header, so compute it first. */
	uint64_t size = sizeof(h) + pad8(h.reason_len);
	for (uint32_t i = 0; i < mods->n; i++)
		size += sizeof(struct file_module) + pad8(mods->m[i].path_len);
	for (int i = 0; i < nthreads; i++) {
		const struct rb_frozen *f = &threads[i];
		size += sizeof(struct file_thread) + 8 * rb_frozen_stored(f) + 8 * (uint64_t)f->nstack;
		if (sched)
			size += sizeof(struct file_sched) + 16 * (uint64_t)f->nsched;
	}
	if (sched)
		size += pad8(h.ncpus);
	size_t nmeasured;
	struct rb_measured *meas = measured_copy(&nmeasured);
	size += 8 + 8 * (uint64_t)nmeasured; /* the measured section (version 4) */
	size += 8;
	h.file_size = size;

	char tag[32] = "";
	if (r) {
		int e = r->reserve(r->arg, size, tag, sizeof(tag));
		if (e) {
			free(mods);
			free(meas);
			return e;
		}
	}
	char tmp[4096], final[4096];
	unsigned n = seq++;
	snprintf(final, sizeof(final), "%s/trace-%u-%llu-%u%s.jtr", dir, h.pid,
		 (unsigned long long)h.ref_realtime_ns, n, tag);
	snprintf(tmp, sizeof(tmp), "%s/.tmp-trace-%u-%llu-%u%s", dir, h.pid,
		 (unsigned long long)h.ref_realtime_ns, n, tag);
	struct writer w = { .fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) };
	if (w.fd < 0) {
		int e = -errno;
		free(mods);
		free(meas);
		return e;
	}
	share_with_folder_group(w.fd, dir);

	put(&w, &h, sizeof(h));
	put_padded(&w, reason ? reason : "", h.reason_len);
	for (uint32_t i = 0; i < mods->n; i++) {
		put(&w, &mods->m[i], sizeof(mods->m[i]));
		put_padded(&w, mods->path[i], mods->m[i].path_len);
	}
	for (int i = 0; i < nthreads; i++) {
		const struct rb_frozen *f = &threads[i];
		struct file_thread ft = { .tid = (uint32_t)f->tid,
					  .flags = (f->copied ? FLAG_COPIED : 0) |
						   (f->anomaly ? FLAG_ANOMALY : 0),
					  .nslots = f->nslots,
					  .end = f->end,
					  .valid = f->valid,
					  .stored = rb_frozen_stored(f),
					  .laps = f->laps,
					  .nstack = f->nstack };
		memcpy(ft.name, f->name, sizeof(ft.name));
		put(&w, &ft, sizeof(ft));
		put(&w, f->slots, ft.stored * 8);
		for (uint32_t k = 0; k < f->nstack; k++) {
			uint64_t ra = f->stack[k];
			put(&w, &ra, 8);
		}
	}
	if (sched) {
		put_padded(&w, sched->cpu_class, h.ncpus);
		for (int i = 0; i < nthreads; i++) {
			const struct rb_frozen *f = &threads[i];
			struct file_sched fs = { .count = f->nsched,
						 .flags = f->sched_on ? SCHED_ON : 0,
						 .lost = f->sched_lost };
			put(&w, &fs, sizeof(fs));
			put(&w, f->sched, 16 * (size_t)f->nsched);
		}
	}
	uint32_t count[2] = { (uint32_t)nmeasured, 0 };
	put(&w, count, sizeof(count));
	put(&w, meas, nmeasured * sizeof(*meas));
	free(meas);
	uint32_t crc = w.crc;
	put(&w, &crc, 4);
	put(&w, FOOTER_MAGIC, 4);
	free(mods);

	int err = w.err;
	if (!err && w.size != size)
		err = -EIO;
	err = hal_file_commit(w.fd, err, tmp, final, dir);
	if (!err && path_out)
		snprintf(path_out, path_size, "%s", final);
	return err;
}

/* ---- reading ---- */

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errsize, size_t offset,
						      const char *fmt, ...)
{
	if (err && errsize) {
		int n = snprintf(err, errsize, "offset %zu: ", offset);
		va_list ap;
		va_start(ap, fmt);
		if (n >= 0 && (size_t)n < errsize)
			vsnprintf(err + n, errsize - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A switch's CLOCK_MONOTONIC time as the timer's ticks, through the header's reference
 * pair (read together when the file was written). */
static uint64_t mono_to_ticks(const struct file_header *h, uint64_t ns)
{
	double ticks_per_ns = (double)h->timer_hz / 1e9;
	int64_t delta = (int64_t)(ns - h->ref_monotonic_ns);
	double t = (double)h->ref_ticks + (double)delta * ticks_per_ns;
	return t <= 0 ? 0 : t >= 1.8e19 ? UINT64_MAX - 1 : (uint64_t)t;
}

/*
 * The scheduling section (version 2): the CPU classes, then per thread its switches,
 * checked (kinds, CPUs, time order, times within 2^50 ns of the reference) and turned into
 * ticks and into the times off the CPU that the decoder merges (rb_ring_view.off): from a
 * switch out to the next switch in; one with no switch in (it had not come back when the
 * rings froze) runs to the end, and one followed by another switch out (the switch in was
 * lost) is dropped, since where it ended is not known.
 */
static int parse_sched(const uint8_t *d, size_t *offp, size_t limit, const struct file_header *h,
		       struct rb_trace *t, char *err, size_t errsize)
{
	size_t off = *offp;
	if (h->sched_source > RB_SCHED_SCHEDSTAT || h->ncpus > RB_FILE_MAX_CPUS)
		return fail(err, errsize, 80, "scheduling source %u with %u CPUs: not understood",
			    h->sched_source, h->ncpus);
	if (pad8(h->ncpus) > limit - off)
		return fail(err, errsize, off, "CPU classes run past the end");
	for (uint32_t c = 0; c < h->ncpus; c++)
		if (d[off + c] > 2 && d[off + c] != RB_CPU_CLASS_UNKNOWN)
			return fail(err, errsize, off + c, "CPU %u: class %u", c, d[off + c]);
	t->sched = (struct rb_trace_sched){ h->sched_source, h->ncpus, d + off };
	off += pad8(h->ncpus);

	/* First the bounds, to size one allocation for every thread's switches. */
	size_t at = off;
	uint64_t total = 0;
	for (uint32_t i = 0; i < h->nthreads; i++) {
		struct file_sched fs;
		if (sizeof(fs) > limit - at)
			return fail(err, errsize, at, "thread %u's switches run past the end", i);
		memcpy(&fs, d + at, sizeof(fs));
		at += sizeof(fs);
		if (fs.count > (limit - at) / 16)
			return fail(err, errsize, at, "thread %u: %u switches run past the end", i,
				    fs.count);
		at += 16 * (size_t)fs.count;
		total += fs.count;
	}
	t->sched_mem = malloc((total ? total : 1) *
			      (sizeof(struct rb_switch) + sizeof(struct rb_offcpu)));
	if (!t->sched_mem)
		return -ENOMEM;
	struct rb_switch *sw = t->sched_mem;
	struct rb_offcpu *offs = (struct rb_offcpu *)(sw + total);
	for (uint32_t i = 0; i < h->nthreads; i++) {
		struct file_sched fs;
		memcpy(&fs, d + off, sizeof(fs));
		off += sizeof(fs);
		struct rb_file_thread *th = &t->threads[i];
		th->sw = sw;
		th->nsw = fs.count;
		th->sched_on = !!(fs.flags & SCHED_ON);
		th->sched_lost = fs.lost;
		th->view.off = offs;
		uint64_t prev = 0;
		bool out = false;
		struct rb_offcpu open = { 0 };
		for (uint32_t k = 0; k < fs.count; k++, off += 16) {
			struct hal_sched_event ev;
			memcpy(&ev, d + off, sizeof(ev));
			uint64_t from_ref = ev.time_ns > h->ref_monotonic_ns
						    ? ev.time_ns - h->ref_monotonic_ns
						    : h->ref_monotonic_ns - ev.time_ns;
			if (ev.kind < HAL_SCHED_IN || ev.kind > HAL_SCHED_OUT_SLEEPING ||
			    ev.cpu > 0xffff || ev.time_ns < prev || from_ref >> 50)
				return fail(err, errsize, off,
					    "thread %u: switch %u is malformed (kind %u, CPU %u, "
					    "%llu ns)",
					    i, k, ev.kind, ev.cpu, (unsigned long long)ev.time_ns);
			prev = ev.time_ns;
			*sw = (struct rb_switch){ mono_to_ticks(h, ev.time_ns), ev.cpu, ev.kind };
			if (sw->kind == HAL_SCHED_IN) {
				if (out) {
					open.end = sw->ts;
					*offs++ = open;
				}
				out = false;
			} else {
				open = (struct rb_offcpu){
					.start = sw->ts,
					.cpu = sw->cpu,
					.why = sw->kind == HAL_SCHED_OUT_PREEMPTED ? RB_OFF_PREEMPTED
										  : RB_OFF_SLEEPING
				};
				out = true;
			}
			sw++;
		}
		if (out) {
			open.end = UINT64_MAX;
			*offs++ = open;
		}
		th->view.noff = (size_t)(offs - th->view.off);
	}
	*offp = off;
	return 0;
}

/* The header: what the file says it is, checked against what it is (its size, its CRC). */
static int parse_header(const uint8_t *d, size_t size, struct file_header *h, char *err,
			size_t errsize)
{
	if ((uintptr_t)d % 8)
		return fail(err, errsize, 0, "buffer is not 8-byte aligned");
	if (size < sizeof(*h) + 8)
		return fail(err, errsize, size, "file too short for a header (%zu bytes)", size);
	memcpy(h, d, sizeof(*h));
	if (memcmp(h->magic, RB_FILE_MAGIC, 8) != 0)
		return fail(err, errsize, 0, "not a jitt trace file (bad magic)");
	if (h->byte_order != 1 && h->byte_order != 2)
		return fail(err, errsize, 11, "byte order %u is neither 1 (little) nor 2 (big)",
			    h->byte_order);
	if (h->byte_order != host_order)
		return fail(err, errsize, 11, "written %s endian; this machine is %s endian",
			    h->byte_order == 1 ? "little" : "big",
			    host_order == 1 ? "little" : "big");
	if (h->version < 1 || h->version > RB_FILE_VERSION)
		return fail(err, errsize, 8, "version %u; this jitt reads versions 1 to %u",
			    h->version, RB_FILE_VERSION);
	if (h->word_size != 4 && h->word_size != 8)
		return fail(err, errsize, 10, "word size %u is neither 4 nor 8", h->word_size);
	if (h->header_size != sizeof(*h))
		return fail(err, errsize, 12, "header size %u, expected %zu", h->header_size,
			    sizeof(*h));
	if (h->file_size != size)
		return fail(err, errsize, size,
			    "file is %zu bytes, its header says %llu (truncated?)", size,
			    (unsigned long long)h->file_size);
	if (memcmp(d + size - 4, FOOTER_MAGIC, 4) != 0)
		return fail(err, errsize, size - 4, "no end marker (truncated?)");
	uint32_t crc;
	memcpy(&crc, d + size - 8, 4);
	uint32_t got = rb_crc32(0, d, size - 8);
	if (crc != got)
		return fail(err, errsize, size - 8, "CRC mismatch: stored %08x, computed %08x", crc,
			    got);
	if (h->timer_hz == 0)
		return fail(err, errsize, 16, "timer frequency is 0");
	if (h->nmodules > RB_FILE_MAX_MODULES || h->nthreads > RB_FILE_MAX_THREADS)
		return fail(err, errsize, 52, "%u modules, %u threads: too many", h->nmodules,
			    h->nthreads);
	return 0;
}

/* The modules, each a record and its path; paths get NUL terminators in t->strings at *s. */
static int parse_modules(const uint8_t *d, size_t *offp, size_t limit, const struct file_header *h,
			 struct rb_trace *t, char **s, char *err, size_t errsize)
{
	size_t off = *offp;
	for (uint32_t i = 0; i < h->nmodules; i++) {
		struct file_module fm;
		if (off > limit || limit - off < sizeof(fm))
			return fail(err, errsize, off, "module %u runs past the end", i);
		memcpy(&fm, d + off, sizeof(fm));
		off += sizeof(fm);
		if (fm.path_len > 256 || fm.path_len > limit - off ||
		    fm.build_id_len > RB_BUILD_ID_MAX || fm.start > fm.end)
			return fail(err, errsize, off - sizeof(fm), "module %u is malformed", i);
		struct rb_module *m = &t->modules[i];
		m->bias = fm.bias;
		m->start = fm.start;
		m->end = fm.end;
		m->build_id_len = fm.build_id_len;
		memcpy(m->build_id, fm.build_id, fm.build_id_len);
		memcpy(*s, d + off, fm.path_len);
		(*s)[fm.path_len] = '\0';
		m->path = *s;
		*s += fm.path_len + 1;
		off += pad8(fm.path_len);
	}
	*offp = off;
	return 0;
}

/* The threads, each a record, its ring's slots and (version 3) its return addresses. */
static int parse_threads(const uint8_t *d, size_t *offp, size_t limit, const struct file_header *h,
			 struct rb_trace *t, char *err, size_t errsize)
{
	size_t off = *offp;
	for (uint32_t i = 0; i < h->nthreads; i++) {
		struct file_thread ft;
		if (off > limit || limit - off < sizeof(ft))
			return fail(err, errsize, off, "thread %u runs past the end", i);
		memcpy(&ft, d + off, sizeof(ft));
		size_t at = off;
		off += sizeof(ft);
		bool shape_ok = ft.nslots >= 2 && ft.nslots <= MAX_SLOTS &&
				(ft.nslots & (ft.nslots - 1)) == 0 && ft.end < ft.nslots &&
				ft.valid <= ft.nslots &&
				ft.stored == (ft.valid <= ft.end ? ft.end : ft.nslots);
		if (!shape_ok)
			return fail(
				err, errsize, at,
				"thread %u: inconsistent ring (slots %llu, end %llu, valid %llu, "
				"stored %llu)",
				i, (unsigned long long)ft.nslots, (unsigned long long)ft.end,
				(unsigned long long)ft.valid, (unsigned long long)ft.stored);
		if (ft.stored > (limit - off) / 8)
			return fail(err, errsize, off, "thread %u: %llu slots run past the end", i,
				    (unsigned long long)ft.stored);
		struct rb_file_thread *th = &t->threads[i];
		th->tid = ft.tid;
		memcpy(th->name, ft.name, RB_NAME_MAX);
		th->name[RB_NAME_MAX] = '\0';
		th->laps = ft.laps;
		th->copied = !!(ft.flags & FLAG_COPIED);
		th->anomaly = !!(ft.flags & FLAG_ANOMALY);
		th->view = (struct rb_ring_view){
			.slots = (const uint64_t *)(d + off),
			.nslots = ft.nslots,
			.stored = ft.stored,
			.end = ft.end,
			.valid = ft.valid,
			.word_size = h->word_size,
			.frozen_ticks =
				th->copied && h->frozen_ticks <= h->ref_ticks ? h->frozen_ticks : 0
		};
		off += ft.stored * 8;
		uint32_t nstack = h->version >= 3 ? ft.nstack : 0;
		if (nstack > RB_FILE_MAX_STACK || nstack > (limit - off) / 8)
			return fail(err, errsize, at, "thread %u: %u return addresses%s", i, nstack,
				    nstack > RB_FILE_MAX_STACK ? ": too many"
							       : " run past the end");
		th->stack = (const uint64_t *)(d + off);
		th->nstack = nstack;
		off += nstack * 8;
	}
	*offp = off;
	return 0;
}

/* The measured section (version 4): a count, 4 bytes reserved, then that many (id, ticks)
 * pairs (rb_trace_use_measured hands them to the views). */
static int parse_measured(const uint8_t *d, size_t *offp, size_t limit, struct rb_trace *t,
			  char *err, size_t errsize)
{
	size_t off = *offp;
	uint32_t count[2];
	if (limit - off < sizeof(count))
		return fail(err, errsize, off, "the measured section runs past the end");
	memcpy(count, d + off, sizeof(count));
	if (count[0] > RB_FILE_MAX_MEASURED || (size_t)count[0] * 8 > limit - off - 8)
		return fail(err, errsize, off, "%u measured functions%s", count[0],
			    count[0] > RB_FILE_MAX_MEASURED ? ": too many" : " run past the end");
	off += sizeof(count);
	t->measured = (const struct rb_measured *)(d + off);
	t->nmeasured = count[0];
	*offp = off + 8 * (size_t)count[0];
	return 0;
}

int rb_trace_parse(const void *data, size_t size, struct rb_trace *t, char *err, size_t errsize)
{
	const uint8_t *d = data;
	memset(t, 0, sizeof(*t));
	struct file_header h = { 0 };
	int e = parse_header(d, size, &h, err, errsize);
	if (e)
		return e;
	size_t limit = size - 8, off = sizeof(h);
	if (h.reason_len > limit - off)
		return fail(err, errsize, off, "reason of %u bytes runs past the end",
			    h.reason_len);
	/* Strings get NUL terminators in a side buffer: the reason, then every path. */
	t->strings = malloc(h.reason_len + 1 + (size_t)h.nmodules * 257);
	t->modules = calloc(h.nmodules ? h.nmodules : 1, sizeof(*t->modules));
	t->threads = calloc(h.nthreads ? h.nthreads : 1, sizeof(*t->threads));
	if (!t->strings || !t->modules || !t->threads) {
		e = -ENOMEM;
		goto bad;
	}
	char *s = t->strings;
	memcpy(s, d + off, h.reason_len);
	s[h.reason_len] = '\0';
	t->reason = s;
	s += h.reason_len + 1;
	off += pad8(h.reason_len);

	if ((e = parse_modules(d, &off, limit, &h, t, &s, err, errsize)) != 0 ||
	    (e = parse_threads(d, &off, limit, &h, t, err, errsize)) != 0)
		goto bad;
	if (h.version >= 2 && h.sched_source != RB_SCHED_NONE &&
	    (e = parse_sched(d, &off, limit, &h, t, err, errsize)) != 0)
		goto bad;
	if (h.version >= 4 && (e = parse_measured(d, &off, limit, t, err, errsize)) != 0)
		goto bad;
	if (off != limit) {
		e = fail(err, errsize, off, "%zu unexplained bytes before the CRC", limit - off);
		goto bad;
	}
	t->word_size = h.word_size;
	t->timer_hz = h.timer_hz;
	t->ref_ticks = h.ref_ticks;
	t->ref_realtime_ns = h.ref_realtime_ns;
	t->ref_monotonic_ns = h.ref_monotonic_ns;
	/* Only a freeze before the file was written makes sense; anything else is unknown. */
	t->frozen_ticks = h.frozen_ticks <= h.ref_ticks ? h.frozen_ticks : 0;
	t->pid = h.pid;
	/* Over 1 ms a trace point is no measurement (a hostile file's, or a broken one). */
	t->point_ps = h.point_ps <= 1000000000u ? h.point_ps : 0;
	t->timed_ps = t->point_ps && h.timed_ps <= 1000000000u ? h.timed_ps : 0;
	t->version = h.version;
	t->nmodules = h.nmodules;
	t->nthreads = h.nthreads;
	return 0;
bad:
	rb_trace_close(t);
	return e;
}

int rb_trace_open_kind(const char *path, struct rb_trace *t, unsigned *kind, char *err,
		       size_t errsize)
{
	memset(t, 0, sizeof(*t));
	if (err && errsize)
		err[0] = '\0';
	struct stat st;
	/* Once, without blocking: a FIFO or /dev/zero named on the command line is refused
	 * here, not read forever. */
	int fd = hal_open_file(AT_FDCWD, path, true, &st);
	if (kind)
		*kind = fd == -EINVAL || fd == -EISDIR || fd >= 0 ? (unsigned)st.st_mode : 0;
	if (fd < 0)
		return fd;
	if (st.st_size == 0) {
		close(fd);
		return fail(err, errsize, 0, "empty file");
	}
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	int e = rb_trace_parse(map, (size_t)st.st_size, t, err, errsize);
	if (e) {
		munmap(map, (size_t)st.st_size);
		return e;
	}
	t->map = map;
	t->size = (size_t)st.st_size;
	return 0;
}

int rb_trace_open(const char *path, struct rb_trace *t, char *err, size_t errsize)
{
	return rb_trace_open_kind(path, t, NULL, err, errsize);
}

int rb_trace_read_fd(int fd, size_t size, void **data, size_t *got, char *err, size_t errsize)
{
	*data = NULL;
	*got = 0;
	if (size == 0)
		return fail(err, errsize, 0, "empty file");
	/* Page aligned (the parser wants 8) and populated in one call: faulting in a fresh
	 * 32 MiB heap buffer page by page made read() 10 times slower than a mapping of the
	 * page cache (210 ms against 20 ms in a Firecracker VM); populated, about 100 ms. */
	uint8_t *buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED)
		return -ENOMEM;
	size_t done = 0;
	while (done < size) {
		ssize_t n = pread(fd, buf + done, size - done, (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = -errno;
			munmap(buf, size);
			return e;
		}
		if (n == 0)
			break; /* shrank since its fstat */
		done += (size_t)n;
	}
	*data = buf;
	*got = done;
	if (done < size)
		return fail(err, errsize, done, "file shrank while read: %zu of %zu bytes", done,
			    size);
	return 0;
}

void rb_trace_free_copy(void *data, size_t size)
{
	if (data)
		munmap(data, size);
}

int rb_trace_load_fd(int fd, size_t size, struct rb_trace *t, char *err, size_t errsize)
{
	memset(t, 0, sizeof(*t));
	void *data;
	size_t got;
	int e = rb_trace_read_fd(fd, size, &data, &got, err, errsize);
	if (!e)
		e = rb_trace_parse(data, size, t, err, errsize);
	if (e) {
		rb_trace_free_copy(data, size);
		return e;
	}
	t->copy = data;
	t->size = size;
	return 0;
}

void rb_trace_use_measured(struct rb_trace *t)
{
	for (uint32_t i = 0; i < t->nthreads; i++) {
		t->threads[i].view.measured = t->measured;
		t->threads[i].view.nmeasured = t->nmeasured;
	}
}

void rb_trace_close(struct rb_trace *t)
{
	free(t->strings);
	free(t->modules);
	free(t->threads);
	free(t->sched_mem);
	if (t->map)
		munmap(t->map, t->size);
	rb_trace_free_copy(t->copy, t->size);
	memset(t, 0, sizeof(*t));
}

int rb_trace_resolve(const struct rb_trace *t, const struct rb_event *e, uint64_t *vaddr)
{
	if (!e->wide) {
		/* A narrow 64-bit id: the low half of the address of a function of the main
		 * program (record.h), whose virtual addresses stay below 4 GiB; before version
		 * 3, the address minus the load bias. */
		if (t->nmodules == 0)
			return -1;
		*vaddr = t->version >= 3 ? (uint32_t)(e->id - t->modules[0].bias) : e->id;
		return 0;
	}
	for (uint32_t i = 0; i < t->nmodules; i++) {
		const struct rb_module *m = &t->modules[i];
		uint64_t v = e->id - m->bias;
		if (e->id >= m->bias && v >= m->start && v < m->end) {
			*vaddr = v;
			return (int)i;
		}
	}
	return -1;
}
