/* SPDX-License-Identifier: MIT */
/*
 * Where symbols may come from (agent/analysis/symbols.h, issue 12 item 9): a trace names
 * its modules' paths, and its writer chooses them. Only a regular file, at an absolute
 * path, whose build-id is the trace's gives names; a device, a FIFO (without hanging), a
 * folder, a file of another build-id, a module without a build-id (not even opened) and,
 * for jittd, a file the trace's writer could not read, all give module and offset. The
 * ELF reader's caps hold against a file that claims huge tables or shrinks while read.
 */
#define _GNU_SOURCE /* posix_openpt, ptsname */
#include "harness.h"
#include "deadline.h"
#include "agent/analysis/debugfile.h"
#include "agent/analysis/debuginfod.h"
#include "agent/analysis/symbols.h"
#include "hal/fs.h"
#include "uploader/http.h"
#include "ringbuf/elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A copy of this test program (an ELF with a build-id and symbols) in the test's folder,
 * with its build-id; 0 or -1. */
static int copy_self(const char *path, mode_t mode, struct rb_elf *elf)
{
	if (rb_elf_load("/proc/self/exe", elf) != 0 || elf->build_id_len == 0)
		return -1;
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	char buf[65536];
	ssize_t n;
	int err = in < 0 || out < 0 ? -1 : 0;
	while (!err && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			err = -1;
	if (in >= 0)
		close(in);
	if (out >= 0 && (close(out) != 0 || chmod(path, mode) != 0))
		err = -1;
	return err;
}

static void module(struct rb_module *m, const char *path, const struct rb_elf *elf)
{
	memset(m, 0, sizeof(*m));
	m->path = path;
	m->start = 0;
	m->end = ~0ull;
	if (elf) {
		m->build_id_len = elf->build_id_len;
		memcpy(m->build_id, elf->build_id, elf->build_id_len);
	}
}

/* The name of agent_hex (a function of this program) through module m. */
static void name_in(struct agent_symbols *s, int m, char *out, size_t size)
{
	agent_symbol_name(s, m, (uint64_t)(uintptr_t)agent_hex, out, size);
}

/* An IN_OPEN event is waiting on the inotify descriptor (read without blocking). */
static int opened(int in)
{
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n = read(in, buf, sizeof(buf));
	return n > 0;
}

TEST(symbols_only_from_the_file_of_the_same_build_id)
{
	char exe[512], fifo[512], relative[] = "exe";
	struct rb_elf self;
	snprintf(exe, sizeof(exe), "%s/exe", test_tmpdir());
	snprintf(fifo, sizeof(fifo), "%s/fifo", test_tmpdir());
	CHECK_EQ_INT(copy_self(exe, 0644, &self), 0);
	CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
	struct rb_elf other = self;
	other.build_id[0] ^= 0xff; /* the same file, as a trace of another build names it */

	enum { DEV, FIFO, DIR, OTHER, NO_ID, RELATIVE, SAME, N };
	struct rb_module mods[N];
	module(&mods[DEV], "/dev/null", &self);
	module(&mods[FIFO], fifo, &self);
	module(&mods[DIR], test_tmpdir(), &self);
	module(&mods[OTHER], exe, &other);
	module(&mods[NO_ID], exe, NULL);
	module(&mods[RELATIVE], relative, &self);
	module(&mods[SAME], exe, &self);
	struct rb_trace t = { .nmodules = N, .modules = mods };
	struct agent_symbols s;
	CHECK_EQ_INT(agent_symbols_open(&s, &t), 0);

	/* A module without a build-id is never opened: nothing could prove it the same. */
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	CHECK(in >= 0 && inotify_add_watch(in, exe, IN_OPEN) >= 0);
	char name[256];
	/* From the test's folder, "exe" would be the file: a relative path is still refused. */
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(cwd >= 0 && chdir(test_tmpdir()) == 0);
	deadline_start(); /* a FIFO must not hold the reader */
	for (int m = 0; m < SAME; m++) {
		if (m == NO_ID)
			(void)opened(in); /* what the module before did */
		CHECK(!agent_symbols_ready(&s, m));
		name_in(&s, m, name, sizeof(name));
		if (strstr(name, "agent_hex"))
			test_fail(__FILE__, __LINE__, "module %d gave a name: %s", m, name);
		if (m == NO_ID) {
			CHECK(!opened(in));
			CHECK(strncmp(name, "no-build-id+0x", 14) == 0);
		}
	}
	deadline_stop();
	CHECK(fchdir(cwd) == 0);
	close(cwd);
	CHECK(agent_symbols_ready(&s, SAME));
	CHECK(opened(in)); /* the watch works: this one was opened */
	name_in(&s, SAME, name, sizeof(name));
	CHECK_STR(name, "agent_hex");
	close(in);
	agent_symbols_close(&s);
	rb_elf_free(&self);
}

/* jittd reads as root what any app writes: a module path must not let one app read the
 * function names of a binary it could not read itself. */
TEST(symbols_for_an_owner_only_from_files_it_could_read)
{
	char exe[512], name[256];
	struct rb_elf self;
	snprintf(exe, sizeof(exe), "%s/exe", test_tmpdir());
	CHECK_EQ_INT(copy_self(exe, 0600, &self), 0);
	struct rb_module mod;
	module(&mod, exe, &self);
	struct rb_trace t = { .nmodules = 1, .modules = &mod };
	struct agent_symbols s;

	/* Another user's trace: the file is ours and private to us. */
	CHECK_EQ_INT(agent_symbols_open(&s, &t), 0);
	agent_symbols_set_owner(&s, getuid() + 1);
	name_in(&s, 0, name, sizeof(name));
	CHECK(strstr(name, "agent_hex") == NULL);
	agent_symbols_close(&s);
	/* Our own trace: our file. */
	CHECK_EQ_INT(agent_symbols_open(&s, &t), 0);
	agent_symbols_set_owner(&s, getuid());
	name_in(&s, 0, name, sizeof(name));
	CHECK_STR(name, "agent_hex");
	agent_symbols_close(&s);
	/* Another user's trace and a world-readable file (a system library). */
	CHECK_EQ_INT(chmod(exe, 0644), 0);
	CHECK_EQ_INT(agent_symbols_open(&s, &t), 0);
	agent_symbols_set_owner(&s, getuid() + 1);
	name_in(&s, 0, name, sizeof(name));
	CHECK_STR(name, "agent_hex");
	agent_symbols_close(&s);
	/* The `jitt` command: no owner, its user reads what they can. */
	CHECK_EQ_INT(chmod(exe, 0600), 0);
	CHECK_EQ_INT(agent_symbols_open(&s, &t), 0);
	name_in(&s, 0, name, sizeof(name));
	CHECK_STR(name, "agent_hex");
	agent_symbols_close(&s);
	rb_elf_free(&self);
}

/* A tiny ELF64 (or ELF32, as this machine is) with a build-id note and a symbol table whose
 * headers claim symsize and strsize bytes; its tables are left as holes of a sparse file. */
static int write_elf(const char *path, uint64_t symsize, uint64_t strsize, uint64_t filesize)
{
	uint8_t buf[4096];
	memset(buf, 0, sizeof(buf));
	int is64 = sizeof(void *) == 8;
	size_t eh = is64 ? 64 : 52, sh = is64 ? 64 : 40;
	memcpy(buf, ELFMAG, SELFMAG);
	buf[EI_CLASS] = is64 ? ELFCLASS64 : ELFCLASS32;
	buf[EI_DATA] = ELFDATA2LSB;
	buf[EI_VERSION] = EV_CURRENT;
	uint64_t shoff = 256, note = 1024, tables = 8192;
	uint16_t shentsize = (uint16_t)sh, shnum = 4;
	/* section 1: the note; 2: .symtab (link 3); 3: .strtab */
	struct {
		uint32_t type, link;
		uint64_t off, size, entsize;
	} sec[4] = { { 0, 0, 0, 0, 0 },
		     { SHT_NOTE, 0, note, 36, 0 },
		     { SHT_SYMTAB, 3, tables, symsize, is64 ? 24 : 16 },
		     { SHT_STRTAB, 0, tables + symsize, strsize, 0 } };
	if (is64) {
		memcpy(buf + 40, &shoff, 8);
		memcpy(buf + 58, &shentsize, 2);
		memcpy(buf + 60, &shnum, 2);
	} else {
		uint32_t o = (uint32_t)shoff;
		memcpy(buf + 32, &o, 4);
		memcpy(buf + 46, &shentsize, 2);
		memcpy(buf + 48, &shnum, 2);
	}
	(void)eh;
	for (int i = 0; i < 4; i++) {
		uint8_t *p = buf + shoff + (size_t)i * sh;
		memcpy(p + 4, &sec[i].type, 4);
		if (is64) {
			memcpy(p + 24, &sec[i].off, 8);
			memcpy(p + 32, &sec[i].size, 8);
			memcpy(p + 40, &sec[i].link, 4);
			memcpy(p + 56, &sec[i].entsize, 8);
		} else {
			uint32_t o = (uint32_t)sec[i].off, z = (uint32_t)sec[i].size,
				 e = (uint32_t)sec[i].entsize;
			memcpy(p + 16, &o, 4);
			memcpy(p + 20, &z, 4);
			memcpy(p + 24, &sec[i].link, 4);
			memcpy(p + 36, &e, 4);
		}
	}
	uint32_t nhdr[3] = { 4, 20, NT_GNU_BUILD_ID };
	memcpy(buf + note, nhdr, sizeof(nhdr));
	memcpy(buf + note + 12, "GNU", 4);
	memset(buf + note + 16, 0xab, 20);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	int err = write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) &&
				  ftruncate(fd, (off_t)filesize) == 0
			  ? 0
			  : -1;
	close(fd);
	return err;
}

static int read_elf(const char *path, uint64_t claimed, size_t budget, struct rb_elf *elf)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = rb_elf_read(fd, claimed, budget, elf);
	close(fd);
	return err;
}

TEST(elf_reader_caps_what_a_file_claims)
{
	char path[512];
	struct rb_elf elf;
	snprintf(path, sizeof(path), "%s/huge.so", test_tmpdir());
	/* Sane tables: read (their holes read as zeros: no function symbols, a build-id). */
	CHECK_EQ_INT(write_elf(path, 4096, 4096, 16384), 0);
	CHECK_EQ_INT(read_elf(path, 16384, SIZE_MAX, &elf), 0);
	CHECK_EQ_INT(elf.build_id_len, 20);
	rb_elf_free(&elf);
	/* A symbol table past the cap (a sparse 64 MiB file): refused before it is read. */
	uint64_t big = RB_ELF_MAX_SYMTAB + 4096;
	CHECK_EQ_INT(write_elf(path, big, 4096, 8192 + big + 4096), 0);
	CHECK_EQ_INT(read_elf(path, 8192 + big + 4096, SIZE_MAX, &elf), -EFBIG);
	CHECK(elf.syms == NULL && elf.strings == NULL);
	/* A string table past the cap. */
	big = RB_ELF_MAX_STRTAB + 1;
	CHECK_EQ_INT(write_elf(path, 4096, big, 8192 + 4096 + big), 0);
	CHECK_EQ_INT(read_elf(path, 8192 + 4096 + big, SIZE_MAX, &elf), -EFBIG);
	/* Under the caps but over what the caller may still hold. */
	CHECK_EQ_INT(write_elf(path, 4096, 4096, 16384), 0);
	CHECK_EQ_INT(read_elf(path, 16384, 1000, &elf), -EFBIG);
	/* A file that shrank after its fstat: a short read, not SIGBUS. */
	CHECK_EQ_INT(write_elf(path, 4096, 4096, 9000), 0);
	CHECK_EQ_INT(read_elf(path, 16384, SIZE_MAX, &elf), -EINVAL);
	CHECK(elf.syms == NULL && elf.strings == NULL);
}

/* One budget for the whole trace: a module whose tables do not fit in what is left is
 * shown by module and offset, and what a loaded one holds is taken from the budget. */
TEST(symbols_budget_bounds_a_whole_trace)
{
	char exe[512], name[256];
	struct rb_elf self;
	snprintf(exe, sizeof(exe), "%s/exe", test_tmpdir());
	CHECK_EQ_INT(copy_self(exe, 0644, &self), 0);
	struct rb_module mods[2];
	module(&mods[0], exe, &self);
	module(&mods[1], exe, &self);
	struct rb_trace t = { .nmodules = 2, .modules = mods };
	struct agent_symbols s;
	CHECK_EQ_INT(agent_symbols_open(&s, &t), 0);
	CHECK_EQ_U64(s.budget, AGENT_SYMBOLS_BUDGET);
	s.budget = self.bytes - 1; /* as if other modules had taken the rest */
	name_in(&s, 0, name, sizeof(name));
	CHECK(strstr(name, "agent_hex") == NULL);
	s.budget = AGENT_SYMBOLS_BUDGET;
	name_in(&s, 1, name, sizeof(name));
	CHECK_STR(name, "agent_hex");
	CHECK_EQ_U64(s.budget, AGENT_SYMBOLS_BUDGET - self.bytes);
	agent_symbols_close(&s);
	rb_elf_free(&self);
}

/* In a new session without a terminal, as a daemon is: a module path naming a terminal
 * (refused, as a device) must not have made it the controlling terminal, whose hangup
 * would then kill the reader. Exits 0 when it did not. */
static void module_is_a_terminal(const char *tty)
{
	if (setsid() < 0)
		_exit(2);
	struct rb_module mod;
	module(&mod, tty, NULL);
	mod.build_id_len = 1; /* any: the path is opened before the build-id is compared */
	struct rb_trace t = { .nmodules = 1, .modules = &mod };
	struct agent_symbols s;
	if (agent_symbols_open(&s, &t) != 0 || agent_symbols_ready(&s, 0))
		_exit(3);
	agent_symbols_close(&s);
	int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
	_exit(fd >= 0 ? 1 : 0);
}

TEST(symbols_a_terminal_named_as_a_module_is_not_taken)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0 || !ptsname(master)) {
		printf("    no pseudo-terminal here (%s): skipped\n", strerror(errno));
		if (master >= 0)
			close(master);
		return;
	}
	char tty[128];
	snprintf(tty, sizeof(tty), "%s", ptsname(master));
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		module_is_a_terminal(tty);
	int status = -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	close(master);
	if (!CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		printf("    status %#x: %s became the reader's controlling terminal\n", status,
		       tty);
}

/* ---- separate debug files (agent/analysis/debugfile.h) ---- */

/* Runs argv (found on PATH) and waits: its exit status, or -1. */
static int run(char *const argv[])
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0)
			dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	int status = -1;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * What an OEM image ships, made from a copy of this program (built with -g): dir/app
 * stripped, with a .gnu_debuglink naming app.debug, and dir/app.debug its debug file
 * (objcopy --only-keep-debug). self: the program's build-id. 0, or -1 when binutils is not
 * here (the test is then skipped).
 */
static int split_self(const char *dir, struct rb_elf *self)
{
	char app[512], dbg[512], link[600];
	snprintf(app, sizeof(app), "%s/app", dir);
	snprintf(dbg, sizeof(dbg), "%s/app.debug", dir);
	snprintf(link, sizeof(link), "--add-gnu-debuglink=%s", dbg);
	char *keep[] = { "objcopy", "--only-keep-debug", app, dbg, NULL };
	char *strip[] = { "objcopy", "--strip-all", app, NULL };
	char *add[] = { "objcopy", link, app, NULL };
	if (copy_self(app, 0644, self) != 0 || run(keep) != 0 || run(strip) != 0 ||
	    run(add) != 0) {
		printf("    no working objcopy here: skipped\n");
		return -1;
	}
	return 0;
}

/* The name of agent_hex through a one-module trace of mod, with fresh symbols. */
static void name_of_module(const struct rb_module *mod, char *out, size_t size)
{
	struct rb_trace t = { .nmodules = 1, .modules = (struct rb_module *)mod };
	struct agent_symbols s;
	snprintf(out, size, "(no memory)");
	if (agent_symbols_open(&s, &t) == 0) {
		name_in(&s, 0, out, size);
		agent_symbols_close(&s);
	}
}

static int move(const char *from, const char *to)
{
	return rename(from, to) == 0 ? 0 : test_fail(__FILE__, __LINE__, "rename %s", from);
}

/* mkdir -p */
static void make_dirs(const char *path)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0700);
			*s = '/';
		}
	mkdir(p, 0700);
}

TEST(symbols_of_a_stripped_binary_from_its_debuglink)
{
	char dir[512], app[600], dbg[600], where[1200], name[256], saved_root[1024];
	struct rb_elf self, file;
	snprintf(saved_root, sizeof(saved_root), "%s", hal_root());
	snprintf(dir, sizeof(dir), "%s/bin", test_tmpdir());
	make_dirs(dir);
	if (split_self(dir, &self) != 0)
		return;
	snprintf(app, sizeof(app), "%s/app", dir);
	snprintf(dbg, sizeof(dbg), "%s/app.debug", dir);
	CHECK_EQ_INT(rb_elf_load(app, &file), 0);
	CHECK_STR(file.debuglink, "app.debug");
	CHECK(!file.full_symtab && file.nsyms == 0); /* stripped: nothing names it */
	rb_elf_free(&file);
	struct rb_module mod;
	module(&mod, app, &self);
	/* Beside the binary. */
	name_of_module(&mod, name, sizeof(name));
	CHECK_STR(name, "agent_hex");
	/* In its .debug/ folder. */
	snprintf(where, sizeof(where), "%s/.debug", dir);
	make_dirs(where);
	snprintf(where, sizeof(where), "%s/.debug/app.debug", dir);
	move(dbg, where);
	name_of_module(&mod, name, sizeof(name));
	CHECK_STR(name, "agent_hex");
	/* Under the debug root, by the binary's folder: <root>/usr/lib/debug/<dir>/app.debug. */
	char root[600], sub[1200];
	snprintf(root, sizeof(root), "%s/root", test_tmpdir());
	snprintf(sub, sizeof(sub), "%s/usr/lib/debug%s", root, dir);
	make_dirs(sub);
	snprintf(sub, sizeof(sub), "%s/usr/lib/debug%s/app.debug", root, dir);
	move(where, sub);
	CHECK_EQ_INT(hal_root_set(root), 0);
	name_of_module(&mod, name, sizeof(name));
	CHECK_STR(name, "agent_hex");
	/* Nowhere: by build-id and offset. */
	CHECK_EQ_INT(hal_root_set(test_tmpdir()), 0);
	name_of_module(&mod, name, sizeof(name));
	CHECK(strstr(name, "agent_hex") == NULL && strstr(name, "+0x") != NULL);
	/* Beside it again, but one byte longer: the same build-id, not the CRC the link
	 * carries (a debug file of another build, or damaged): not used. */
	move(sub, dbg);
	int fd = open(dbg, O_WRONLY | O_APPEND | O_CLOEXEC);
	CHECK(fd >= 0 && write(fd, "", 1) == 1);
	close(fd);
	name_of_module(&mod, name, sizeof(name));
	CHECK(strstr(name, "agent_hex") == NULL);
	CHECK_EQ_INT(hal_root_set(saved_root), 0);
	rb_elf_free(&self);
}

TEST(symbols_by_build_id_under_a_fake_debug_root)
{
	char dir[512], dbg[600], path[1200], root[600], name[256], saved_root[1024];
	struct rb_elf self;
	snprintf(saved_root, sizeof(saved_root), "%s", hal_root());
	snprintf(dir, sizeof(dir), "%s/bin", test_tmpdir());
	make_dirs(dir);
	if (split_self(dir, &self) != 0)
		return;
	snprintf(dbg, sizeof(dbg), "%s/app.debug", dir);
	snprintf(root, sizeof(root), "%s/root", test_tmpdir());
	CHECK_EQ_INT(hal_root_set(root), 0);
	/* The trace was written on the phone: the binary is not here at all, its debug file
	 * is, by build-id. */
	struct rb_module mod;
	module(&mod, "/system/bin/app", &self);
	char want[1024];
	snprintf(want, sizeof(want), "%s/usr/lib/debug", root);
	CHECK_EQ_INT(agent_debug_build_id_path(want, self.build_id, self.build_id_len, path,
					       sizeof(path)),
		     0);
	char hex[65];
	agent_hex(self.build_id, self.build_id_len, hex);
	snprintf(want, sizeof(want), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, hex,
		 hex + 2);
	CHECK_STR(path, want);
	*strrchr(want, '/') = '\0';
	make_dirs(want);
	move(dbg, path);
	name_of_module(&mod, name, sizeof(name));
	CHECK_STR(name, "agent_hex");
	/* A trace of another build whose id names this file: its build-id is not the
	 * module's, so it is not believed. */
	struct rb_elf other = self;
	other.build_id[self.build_id_len - 1] ^= 1;
	module(&mod, "/system/bin/app", &other);
	char droot[700], opath[1200];
	snprintf(droot, sizeof(droot), "%s/usr/lib/debug", root);
	CHECK_EQ_INT(agent_debug_build_id_path(droot, other.build_id, other.build_id_len, opath,
					       sizeof(opath)),
		     0);
	CHECK(link(path, opath) == 0);
	name_of_module(&mod, name, sizeof(name));
	CHECK(strstr(name, "agent_hex") == NULL);
	/* An id of one byte has no such path. */
	CHECK_EQ_INT(agent_debug_build_id_path(want, self.build_id, 1, path, sizeof(path)), 0);
	CHECK_STR(path, "");
	CHECK_EQ_INT(hal_root_set(saved_root), 0);
	rb_elf_free(&self);
}

/* A trace names a FIFO (or a device) as a module: the loader looks before it opens, so it
 * is never opened at all (an open of a device runs its driver, whatever the flags). */
TEST(symbols_a_fifo_named_as_a_module_is_never_opened)
{
	char fifo[512], name[256];
	struct rb_elf self;
	snprintf(fifo, sizeof(fifo), "%s/fifo", test_tmpdir());
	CHECK_EQ_INT(mkfifo(fifo, 0600), 0);
	CHECK_EQ_INT(rb_elf_load("/proc/self/exe", &self), 0);
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	CHECK(in >= 0 && inotify_add_watch(in, fifo, IN_OPEN) >= 0);
	struct rb_module mod;
	module(&mod, fifo, &self);
	deadline_start();
	name_of_module(&mod, name, sizeof(name));
	deadline_stop();
	CHECK(strstr(name, "agent_hex") == NULL);
	CHECK(!opened(in));
	struct stat st;
	CHECK_EQ_INT(agent_open_regular(fifo, (uid_t)-1, &st), -EINVAL);
	CHECK_EQ_INT(agent_open_regular(test_tmpdir(), (uid_t)-1, &st), -EISDIR);
	CHECK(!opened(in));
	close(in);
	rb_elf_free(&self);
}
