/* SPDX-License-Identifier: MIT */
/*
 * Bad trace files and ELF files: truncated, corrupted, or structurally wrong with a CRC
 * that matches. Every one gets a clear error naming the offset, or parses into something
 * that decodes without crashing.
 */
#include "harness.h"
#include "hal/sched.h"
#include "ringbuf/crc32.h"
#include "ringbuf/decode.h"
#include "ringbuf/elf.h"
#include "ringbuf/tracefile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A whole file into an 8-byte aligned buffer (the parser wants it so). */
static uint8_t *read_whole(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	fstat(fd, &st);
	uint8_t *buf = aligned_alloc(8, ((size_t)st.st_size + 7) & ~(size_t)7);
	if (read(fd, buf, (size_t)st.st_size) != st.st_size)
		abort();
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

/* A small, valid trace file in memory: a fake frozen ring with a few records. */
static uint8_t *make_file(size_t *size)
{
	static uint64_t slots[64];
	uint64_t ts = 0x123400000000ull;
	int n = 0;
	slots[n++] = ts & 0xffffffff00000000ull; /* sync payload */
	slots[n++] = ts << 32 | 0x2;
	for (int i = 0; i < 10; i++) {
		slots[n++] = (ts + 10 * i) << 32 | 0x401000;
		slots[n++] = (ts + 10 * i + 5) << 32;
	}
	struct rb_frozen f = { .slots = slots, .nslots = 64, .end = (uint64_t)n, .valid = (uint64_t)n,
			       .tid = 42, .name = "fake" };
	char path[4096];
	if (rb_trace_write(test_tmpdir(), "bad files", &f, 1, path, sizeof(path)) != 0)
		return NULL;
	return read_whole(path, size);
}

/* Recompute the CRC after a deliberate change, so structural checks are reached. */
static void fix_crc(uint8_t *d, size_t size)
{
	uint32_t crc = rb_crc32(0, d, size - 8);
	memcpy(d + size - 8, &crc, 4);
}

static void expect_error(const uint8_t *d, size_t size, const char *needle)
{
	struct rb_trace t;
	char err[256] = "";
	int e = rb_trace_parse(d, size, &t, err, sizeof(err));
	if (e != -EINVAL || !strstr(err, "offset") || (needle && !strstr(err, needle)))
		test_fail(__FILE__, __LINE__, "expected an error with \"%s\", got %d \"%s\"",
			  needle ? needle : "offset", e, err);
}

/* In a set-group-id folder (the spool, docs/oem.md) a trace takes the folder's group and is
 * 0640, whatever the writer's umask; anywhere else it stays 0600. */
TEST(tracefile_mode_follows_a_set_group_id_folder)
{
	static uint64_t slots[8] = { 0x123400000000ull, 0x2 };
	struct rb_frozen f = { .slots = slots, .nslots = 8, .end = 2, .valid = 2, .tid = 42,
			       .name = "fake" };
	char dir[512], path[4096];
	struct stat st;
	mode_t old = umask(077);
	snprintf(dir, sizeof(dir), "%s/plain", test_tmpdir());
	CHECK(mkdir(dir, 0700) == 0);
	CHECK_EQ_INT(rb_trace_write(dir, "plain", &f, 1, path, sizeof(path)), 0);
	CHECK(stat(path, &st) == 0);
	CHECK_EQ_INT(st.st_mode & 07777, 0600);
	snprintf(dir, sizeof(dir), "%s/setgid", test_tmpdir());
	CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 02700) == 0);
	struct stat ds;
	CHECK(stat(dir, &ds) == 0);
	if (ds.st_mode & S_ISGID) { /* a file system that keeps the bit */
		CHECK_EQ_INT(rb_trace_write(dir, "setgid", &f, 1, path, sizeof(path)), 0);
		CHECK(stat(path, &st) == 0);
		CHECK_EQ_INT(st.st_mode & 07777, 0640);
		CHECK_EQ_INT(st.st_gid, ds.st_gid);
	}
	umask(old);
}

TEST(tracefile_crc_known_answer)
{
	CHECK_EQ_U64(rb_crc32(0, "123456789", 9), 0xCBF43926u);
}

/* The trace point's cost (rb_trace_set_point_cost, in ticks) is in every file written after
 * it, in ps at the file's timer frequency (offset 88); 0 is "not known"; a value over 1 ms,
 * no measurement, reads as not known. */
TEST(tracefile_carries_the_trace_points_measured_cost)
{
	size_t size;
	rb_trace_set_point_cost(0);
	uint8_t *d = make_file(&size);
	struct rb_trace t;
	char err[256];
	if (CHECK(d != NULL) && CHECK(rb_trace_parse(d, size, &t, err, sizeof(err)) == 0)) {
		CHECK_EQ_U64(t.point_ps, 0);
		rb_trace_close(&t);
	}
	free(d);
	rb_trace_set_point_cost(25.0);
	d = make_file(&size);
	rb_trace_set_point_cost(0);
	if (CHECK(d != NULL) && CHECK(rb_trace_parse(d, size, &t, err, sizeof(err)) == 0)) {
		double want = 25.0 * 1e12 / (double)t.timer_hz;
		CHECK(t.point_ps > 0 && fabs((double)t.point_ps - want) <= 1 + want * 1e-6);
		uint32_t hostile = 2000000000u;
		memcpy(d + 88, &hostile, 4);
		fix_crc(d, size);
		rb_trace_close(&t);
		if (CHECK(rb_trace_parse(d, size, &t, err, sizeof(err)) == 0)) {
			CHECK_EQ_U64(t.point_ps, 0);
			rb_trace_close(&t);
		}
	}
	free(d);
}

/* The measured section (version 4): the table the runtime set is in every thread's view,
 * a file written after it was cleared has none, and a count that runs past the end or
 * over the limit is refused with its offset. */
TEST(tracefile_carries_the_measured_calls_and_refuses_bad_counts)
{
	static const struct rb_measured m[3] = { { 0x401000, 120 }, { 0x401040, 7 },
						 { 0x401080, 3000 } };
	CHECK_EQ_INT(rb_trace_set_measured(m, 3), 0);
	size_t size;
	uint8_t *d = make_file(&size);
	CHECK_EQ_INT(rb_trace_set_measured(NULL, 0), 0);
	struct rb_trace t;
	char err[256];
	if (!CHECK(d != NULL) || !CHECK(rb_trace_parse(d, size, &t, err, sizeof(err)) == 0)) {
		free(d);
		return;
	}
	CHECK_EQ_INT(t.version, 4);
	CHECK_EQ_U64(t.nmeasured, 3);
	CHECK_EQ_U64(t.threads[0].view.nmeasured, 0); /* not used unless asked */
	rb_trace_use_measured(&t);
	CHECK_EQ_U64(t.threads[0].view.nmeasured, 3);
	CHECK(t.threads[0].view.measured == t.measured);
	CHECK(t.nmeasured == 3 && !memcmp(t.measured, m, sizeof(m)));
	rb_trace_close(&t);
	/* The count sits 3 * 8 + 8 bytes before the footer. */
	size_t at = size - 8 - 3 * 8 - 8;
	uint8_t *d2 = aligned_alloc(8, size);
	static const uint32_t bad[] = { 4, 1000000, RB_FILE_MAX_MEASURED + 1, UINT32_MAX };
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		memcpy(d2, d, size);
		memcpy(d2 + at, &bad[k], 4);
		fix_crc(d2, size);
		expect_error(d2, size, "measured functions");
	}
	memcpy(d2, d, size);
	uint32_t fewer = 2; /* the third pair is then unexplained */
	memcpy(d2 + at, &fewer, 4);
	fix_crc(d2, size);
	expect_error(d2, size, "unexplained");
	free(d2);
	free(d);
	d = make_file(&size);
	if (CHECK(d != NULL) && CHECK(rb_trace_parse(d, size, &t, err, sizeof(err)) == 0)) {
		CHECK_EQ_U64(t.nmeasured, 0);
		CHECK_EQ_U64(t.threads[0].view.nmeasured, 0);
		rb_trace_close(&t);
	}
	free(d);
}

/* Sampled time's two costs (offsets 88 and 92): a record's in sampled time and a timed
 * one's (a learning window's), weighed by the share of records written untimed, of which
 * sampled time leaves all but one in 32.5; a file with no timed cost (an older one: its
 * reserved bytes 0) has one cost for every record. */
TEST(tracefile_weighs_sampled_and_timed_records_costs)
{
	size_t size;
	rb_trace_set_point_cost(4.0);
	rb_trace_set_timed_cost(16.0);
	uint8_t *d = make_file(&size);
	rb_trace_set_point_cost(0);
	rb_trace_set_timed_cost(0);
	struct rb_trace t;
	char err[256];
	if (CHECK(d != NULL) && CHECK(rb_trace_parse(d, size, &t, err, sizeof(err)) == 0)) {
		double timed = 16 * 1e12 / (double)t.timer_hz;
		CHECK(fabs((double)t.timed_ps - timed) <= 1 + timed * 1e-6);
		/* All sampled: 63 untimed in 65; all in a window: none untimed; half and half */
		CHECK(fabs(rb_trace_point_ps(&t, 6500, 6300) - (double)t.point_ps) < 1e-6);
		CHECK(fabs(rb_trace_point_ps(&t, 6500, 0) - (double)t.timed_ps) < 1e-6);
		CHECK(fabs(rb_trace_point_ps(&t, 13000, 6300) -
			   ((double)t.point_ps + (double)t.timed_ps) / 2) < 1e-6);
		CHECK(fabs(rb_trace_point_ps(&t, 0, 0) - (double)t.point_ps) < 1e-6);
		CHECK(fabs(rb_trace_point_ps(&t, 10, 11) - (double)t.point_ps) < 1e-6); /* bad */
		uint32_t zero = 0;
		memcpy(d + 92, &zero, 4);
		fix_crc(d, size);
		rb_trace_close(&t);
		if (CHECK(rb_trace_parse(d, size, &t, err, sizeof(err)) == 0)) {
			CHECK_EQ_U64(t.timed_ps, 0);
			CHECK(fabs(rb_trace_point_ps(&t, 6500, 0) - (double)t.point_ps) < 1e-6);
			rb_trace_close(&t);
		}
	}
	free(d);
}

TEST(tracefile_rejects_truncation_and_corruption_with_the_offset)
{
	size_t size;
	uint8_t *good = make_file(&size);
	if (!CHECK(good != NULL))
		return;
	struct rb_trace t;
	char err[256];
	CHECK_EQ_INT(rb_trace_parse(good, size, &t, err, sizeof(err)), 0);
	rb_trace_close(&t);

	uint8_t *d = aligned_alloc(8, size + 8);
	for (size_t cut = 0; cut < size; cut += 7) {
		memcpy(d, good, cut);
		expect_error(d, cut, NULL);
	}
	for (size_t at = 0; at < size; at += 3) { /* one flipped byte: the CRC or a check */
		memcpy(d, good, size);
		d[at] ^= 0x40;
		expect_error(d, size, NULL);
	}
	memcpy(d, good, size);
	memcpy(d, "NOTATRAC", 8);
	fix_crc(d, size);
	expect_error(d, size, "magic");
	memcpy(d, good, size);
	d[8] = 9; /* version */
	fix_crc(d, size);
	expect_error(d, size, "version");
	memcpy(d, good, size);
	d[11] = d[11] == 1 ? 2 : 1; /* byte order */
	fix_crc(d, size);
	expect_error(d, size, "endian");
	memcpy(d, good, size);
	d[10] = 5; /* word size */
	fix_crc(d, size);
	expect_error(d, size, "word size");
	free(d);
	free(good);
}

TEST(tracefile_random_mutations_with_valid_crc_never_crash)
{
	size_t size;
	uint8_t *good = make_file(&size);
	if (!CHECK(good != NULL))
		return;
	uint8_t *d = aligned_alloc(8, size + 8);
	uint32_t x = 12345;
	int parsed = 0;
	for (int iter = 0; iter < 20000; iter++) {
		memcpy(d, good, size);
		for (int k = 0; k < 1 + iter % 4; k++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			size_t at = 16 + x % (size - 24); /* past magic, version, order */
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			d[at] = (uint8_t)x;
		}
		fix_crc(d, size);
		struct rb_trace t;
		char err[256] = "";
		if (rb_trace_parse(d, size, &t, err, sizeof(err)) != 0) {
			if (!strstr(err, "offset"))
				test_fail(__FILE__, __LINE__, "error without an offset: %s", err);
			continue;
		}
		parsed++;
		for (uint32_t i = 0; i < t.nthreads; i++) {
			struct rb_event *ev = NULL;
			size_t n;
			if (rb_decode(&t.threads[i].view, t.ref_ticks, &ev, &n, NULL) == 0)
				free(ev);
		}
		rb_trace_close(&t);
	}
	printf("    %d of 20000 mutated files still parsed (and decoded)\n", parsed);
	free(d);
	free(good);
}

TEST(elf_reader_survives_mutated_binaries)
{
	/* This test program itself: an ELF of this machine's kind with symbols. */
	struct rb_elf elf;
	CHECK_EQ_INT(rb_elf_load("/proc/self/exe", &elf), 0);
	CHECK(elf.nsyms > 100);
	CHECK(elf.build_id_len == 20);
	const struct rb_symbol *s = rb_elf_lookup(&elf, (uintptr_t)make_file);
	/* LTO may make a static global under a suffix when it lands in another partition than
	 * its callers ("make_file.lto_priv.0", seen in an armv7 build): the name, then '.'. */
	CHECK(s && strncmp(s->name, "make_file", 9) == 0 && (s->name[9] == 0 || s->name[9] == '.'));
	/* By name: the first of that name; none for a name no function has */
	const struct rb_symbol *found = rb_elf_find(&elf, s ? s->name : "");
	CHECK(found && s && found->addr == s->addr);
	CHECK(rb_elf_find(&elf, "no_function_is_named_so") == NULL);
	/* A --wrap wrapper is shown as the function it stands for; nothing else changes */
	CHECK_STR(rb_elf_shown_name("__wrap_memcpy"), "memcpy");
	CHECK_STR(rb_elf_shown_name("__wrap_"), "__wrap_");
	CHECK_STR(rb_elf_shown_name("__wrapper"), "__wrapper");
	CHECK_STR(rb_elf_shown_name("memcpy"), "memcpy");
	rb_elf_free(&elf);

	int fd = open("/proc/self/exe", O_RDONLY);
	struct stat st;
	fstat(fd, &st);
	size_t size = (size_t)st.st_size;
	uint8_t *good = malloc(size), *d = malloc(size);
	if (read(fd, good, size) != (ssize_t)size)
		abort();
	close(fd);
	uint32_t x = 777;
	for (int iter = 0; iter < 300; iter++) {
		memcpy(d, good, size);
		for (int k = 0; k < 8; k++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			/* mostly the headers and section table, where the structure lives */
			size_t at = k < 4 ? x % 64 : size - 1 - x % 4096;
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			d[at] = (uint8_t)x;
		}
		if (rb_elf_parse(d, size, &elf) == 0) {
			rb_elf_lookup(&elf, x);
			rb_elf_find(&elf, "make_file");
			rb_elf_free(&elf);
		}
		rb_elf_parse(d, iter * 7 % 200, &elf); /* truncated */
		rb_elf_free(&elf);
	}
	free(good);
	free(d);
}

/* kill -9 while files are being written: every trace file there is whole (only the
 * temporary names may hold partial data), never a partial file under a final name. Each
 * round waits for the writer's first whole file, however long this machine takes for one
 * (a fixed 5 ms, enough for a 1 MiB write with fsync on an idle machine, saw none on a
 * machine loaded by other processes); the kill then lands in one of the writes after it, a
 * little later each round. */
TEST(tracefile_kill_9_during_persist_leaves_only_whole_files)
{
	static uint64_t slots[1 << 17]; /* 1 MiB: a write takes a while */
	for (size_t i = 0; i < sizeof(slots) / 8; i++)
		slots[i] = (uint64_t)i << 32 | 0x401000;
	struct rb_frozen f = { .slots = slots, .nslots = 1 << 17, .end = 100, .valid = 1 << 17,
			       .laps = 1, .tid = 7, .name = "victim" };
	const char *dir = test_tmpdir();
	int kills = 0;
	for (int round = 0; round < 20; round++) {
		int written[2];
		if (!CHECK(pipe(written) == 0))
			break;
		pid_t pid = fork();
		if (pid == 0) {
			close(written[0]);
			for (;;)
				if (rb_trace_write(dir, "kill -9", &f, 1, NULL, 0) == 0)
					(void)!write(written[1], "w", 1);
		}
		close(written[1]);
		/* The bound only turns a hang into a failure. */
		struct pollfd p = { .fd = written[0], .events = POLLIN };
		char c;
		CHECK(poll(&p, 1, 300000) == 1 && read(written[0], &c, 1) == 1);
		struct timespec nap = { 0, (long)(round % 5) * 250000L };
		nanosleep(&nap, NULL);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(written[0]);
		kills++;
	}
	DIR *d = opendir(dir);
	struct dirent *e;
	int whole = 0, temporary = 0;
	while ((e = readdir(d))) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (strncmp(e->d_name, ".tmp-", 5) == 0) {
			temporary++;
		} else if (strstr(e->d_name, ".jtr")) {
			struct rb_trace t;
			char err[256] = "";
			if (rb_trace_open(path, &t, err, sizeof(err)) != 0)
				test_fail(__FILE__, __LINE__, "%s is not whole: %s", e->d_name, err);
			else
				rb_trace_close(&t);
			whole++;
		}
	}
	closedir(d);
	printf("    %d kills: %d whole files, %d temporary leftovers\n", kills, whole, temporary);
	CHECK(whole >= kills); /* each round waited for one */
}

/* The status of running fn in a child process, which a hang (caught by a generous alarm)
 * or a signal (SIGBUS) cannot take the tests down with it. */
static int in_child(void (*fn)(const char *), const char *arg)
{
	pid_t pid = fork();
	if (pid == 0) {
		alarm(60);
		fn(arg);
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	return status;
}

static void open_refuses(const char *path)
{
	struct rb_trace t;
	char err[256];
	unsigned kind = 0;
	int e = rb_trace_open_kind(path, &t, &kind, err, sizeof(err));
	if (e == -EISDIR && S_ISDIR(kind))
		_exit(0);
	_exit(e == -EINVAL && !err[0] && (S_ISFIFO(kind) || S_ISCHR(kind)) ? 0 : 1);
}

/* A FIFO, a folder or a device named as a trace (a hostile argument): refused at once with
 * what it is, not opened for ever (a FIFO without a writer) or read without end. */
TEST(tracefile_open_refuses_fifo_folder_and_device_at_once)
{
	char fifo[512];
	snprintf(fifo, sizeof(fifo), "%s/fifo.jtr", test_tmpdir());
	CHECK(mkfifo(fifo, 0600) == 0);
	int status = in_child(open_refuses, fifo);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = in_child(open_refuses, test_tmpdir());
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	status = in_child(open_refuses, "/dev/zero");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* jittd's way (a mapped trace truncated under jittd used to kill it with SIGBUS): the trace
 * is copied into memory, so the writer truncating the file afterwards changes nothing; a
 * file shorter than its fstat size when read (it shrank meanwhile) is an error naming it,
 * never SIGBUS. */
static void load_then_truncate(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0)
		_exit(2);
	struct rb_trace t;
	char err[256];
	if (rb_trace_load_fd(fd, (size_t)st.st_size, &t, err, sizeof(err)) != 0)
		_exit(3);
	close(fd);
	if (truncate(path, 0) != 0)
		_exit(4);
	for (uint32_t i = 0; i < t.nthreads; i++) { /* every record read after the cut */
		struct rb_event *ev = NULL;
		size_t n;
		if (rb_decode(&t.threads[i].view, t.ref_ticks, &ev, &n, NULL) != 0 || n == 0)
			_exit(5);
		free(ev);
	}
	rb_trace_close(&t);
	_exit(0);
}

TEST(tracefile_load_fd_copies_and_a_shrunk_file_is_an_error)
{
	size_t size;
	uint8_t *good = make_file(&size);
	if (!CHECK(good != NULL))
		return;
	char path[512];
	snprintf(path, sizeof(path), "%s/copy.jtr", test_tmpdir());
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(write(fd, good, size) == (ssize_t)size);
	close(fd);
	int status = in_child(load_then_truncate, path);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	/* Shorter than the size its fstat gave: the bytes read are kept for a quarantine
	 * copy, and the error says it shrank. */
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(write(fd, good, size / 2) == (ssize_t)(size / 2));
	close(fd);
	fd = open(path, O_RDONLY);
	void *data;
	size_t got;
	char err[256] = "";
	CHECK_EQ_INT(rb_trace_read_fd(fd, size, &data, &got, err, sizeof(err)), -EINVAL);
	CHECK_EQ_U64(got, size / 2);
	CHECK(data && !memcmp(data, good, size / 2));
	CHECK(strstr(err, "shrank while read") != NULL);
	rb_trace_free_copy(data, size);
	struct rb_trace t;
	CHECK_EQ_INT(rb_trace_load_fd(fd, size, &t, err, sizeof(err)), -EINVAL);
	close(fd);
	free(good);
}

/*
 * The scheduling section (version 2, for time preempted by other processes): written with
 * the rings, read back as switches in ticks and times off the CPU; a file with a malformed
 * one is refused with the offset, and a version 1 file (no section) is still read.
 */
static uint8_t *make_sched_file(size_t *size, const struct hal_sched_event *ev, uint32_t n,
				char *path, size_t path_size)
{
	static uint64_t slots[8];
	uint64_t ts = 0x123400000000ull;
	slots[0] = ts & 0xffffffff00000000ull;
	slots[1] = ts << 32 | 0x2;
	struct rb_frozen f = { .slots = slots, .nslots = 8, .end = 2, .valid = 2, .tid = 42,
			       .name = "ui", .sched = ev, .nsched = n, .sched_on = true,
			       .sched_lost = 3 };
	static const uint8_t classes[] = { 0, 2, RB_CPU_CLASS_UNKNOWN };
	struct rb_trace_sched info = { RB_SCHED_PERF, 3, classes };
	if (rb_trace_write_sched(test_tmpdir(), "sched", &f, 1, &info, path, path_size) != 0)
		return NULL;
	return read_whole(path, size);
}

TEST(tracefile_scheduling_section_round_trips_and_bad_ones_are_refused)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	uint64_t t0 = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec - 50000000u;
	/* out preempted, in on another CPU, out asleep, in, out preempted (not back) */
	struct hal_sched_event ev[] = {
		{ t0, 0, HAL_SCHED_OUT_PREEMPTED }, { t0 + 1000000, 1, HAL_SCHED_IN },
		{ t0 + 2000000, 1, HAL_SCHED_OUT_SLEEPING }, { t0 + 2500000, 1, HAL_SCHED_IN },
		{ t0 + 3000000, 1, HAL_SCHED_OUT_PREEMPTED },
	};
	char path[4096], err[256];
	size_t size = 0;
	uint8_t *good = make_sched_file(&size, ev, 5, path, sizeof(path));
	if (!CHECK(good != NULL))
		return;
	struct rb_trace t;
	if (!CHECK(rb_trace_parse(good, size, &t, err, sizeof(err)) == 0)) {
		printf("    %s\n", err);
		free(good);
		return;
	}
	CHECK_EQ_INT((int)t.sched.source, RB_SCHED_PERF);
	CHECK_EQ_INT((int)t.sched.ncpus, 3);
	CHECK_EQ_INT(t.sched.cpu_class[1], 2);
	const struct rb_file_thread *th = &t.threads[0];
	CHECK(th->sched_on);
	CHECK_EQ_U64(th->sched_lost, 3);
	CHECK_EQ_INT((int)th->nsw, 5);
	/* 1 ms is timer_hz / 1000 ticks, to the timer's calibration */
	uint64_t ms = t.timer_hz / 1000, d = th->sw[1].ts - th->sw[0].ts;
	CHECK(d + ms / 100 >= ms && d <= ms + ms / 100);
	CHECK_EQ_INT((int)th->view.noff, 3);
	CHECK_EQ_INT(th->view.off[0].why, RB_OFF_PREEMPTED);
	CHECK_EQ_U64(th->view.off[0].start, th->sw[0].ts);
	CHECK_EQ_U64(th->view.off[0].end, th->sw[1].ts);
	CHECK_EQ_INT(th->view.off[1].why, RB_OFF_SLEEPING);
	CHECK_EQ_U64(th->view.off[2].end, UINT64_MAX); /* not back when frozen */
	rb_trace_close(&t);

	/* Where its pieces are: the switches are the file's last 5 * 16 bytes before the
	 * measured section (8 bytes: none) and the footer, the per-thread header before them,
	 * the classes before that. */
	size_t sw_at = size - 8 - 8 - 5 * 16, th_at = sw_at - 16, cls_at = th_at - 8;
	uint8_t *d2 = aligned_alloc(8, size);
	struct {
		size_t at;
		uint32_t value;
		const char *needle;
	} bad[] = {
		{ sw_at + 12, 9, "malformed" },		 /* a kind no kernel writes */
		{ sw_at + 8, 0x10000, "malformed" },	 /* CPU 65536 */
		{ sw_at + 16, 0, "malformed" },		 /* time going backwards */
		{ th_at, 6, "past the end" },		 /* more switches than bytes */
		{ th_at, 0x7fffffff, "past the end" },	 /* a count made to overflow */
		{ cls_at + 1, 7, "class" },		 /* CPU 1's class */
		{ 80, 3, "scheduling source" },		 /* an unknown source */
		{ 84, RB_FILE_MAX_CPUS + 1, "scheduling source" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(d2, good, size);
		if (bad[i].at == cls_at + 1)
			d2[bad[i].at] = (uint8_t)bad[i].value;
		else if (bad[i].at == sw_at + 16) /* the second switch's time: before the first */
			memset(d2 + bad[i].at, 0, 8);
		else
			memcpy(d2 + bad[i].at, &bad[i].value, 4);
		fix_crc(d2, size);
		expect_error(d2, size, bad[i].needle);
	}
	/* A switch 2^50 ns away from the reference. */
	memcpy(d2, good, size);
	uint64_t far = t0 + (1ull << 51);
	memcpy(d2 + sw_at + 4 * 16, &far, 8);
	fix_crc(d2, size);
	expect_error(d2, size, "malformed");
	/* Version 1: the same bytes mean nothing there, and a version 1 file has no section;
	 * this one's section is then unexplained bytes, refused. */
	memcpy(d2, good, size);
	d2[8] = 1;
	fix_crc(d2, size);
	expect_error(d2, size, "unexplained");
	free(d2);
	free(good);
}
