/* SPDX-License-Identifier: MIT */
/*
 * Where symbols may come from (agent/analysis/symbols.h; hostile input): a trace names
 * its modules' paths, and its writer chooses them. Only a regular file, at an absolute
 * path, whose build-id is the trace's gives names; a device, a FIFO (without hanging), a
 * folder, a file of another build-id, a module without a build-id (not even opened) and,
 * for jittd, a file the trace's writer could not read, all give module and offset. The
 * ELF reader's caps hold against a file that claims huge tables or shrinks while read.
 * A stripped module is named from its debug file (beside it, in .debug/, under the debug
 * root by folder or by build-id, or fetched from a debuginfod server), only when that
 * file's build-id (and a debuglink's CRC) is the module's; a device or FIFO named as a
 * module is looked at, never opened.
 */
#define _GNU_SOURCE /* posix_openpt, ptsname, memmem */
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/inotify.h>
#include <sys/socket.h>
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

/* ---- the debuginfod client (agent/analysis/debuginfod.h) ---- */

TEST(debuginfod_urls_are_read_strictly)
{
	struct agent_http_url u;
	const char *good = "http://127.0.0.1:8002/prefix/";
	CHECK_EQ_INT(agent_debuginfod_url(good, strlen(good), &u), 0);
	CHECK_STR(u.host, "127.0.0.1");
	CHECK_STR(u.port, "8002");
	CHECK_STR(u.prefix, "/prefix");
	const char *v6 = "http://[::1]";
	CHECK_EQ_INT(agent_debuginfod_url(v6, strlen(v6), &u), 0);
	CHECK_STR(u.host, "::1");
	CHECK_STR(u.port, "80");
	CHECK_STR(u.prefix, "");
	const char *bad[] = { "", "http://", "http://:80", "http://h:", "http://h:0",
			      "http://h:65536", "http://h:8x", "http://user@h/", "http://h/?q",
			      "http://h/#f", "http://[::1", "http://[]/", "http://[::1]x/",
			      "ftp:/h", "h:80", "http://h\x01/" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (agent_debuginfod_url(bad[i], strlen(bad[i]), &u) != -EINVAL)
			test_fail(__FILE__, __LINE__, "accepted \"%s\"", bad[i]);
	CHECK_EQ_INT(agent_debuginfod_url("https://h/", 10, &u), -EPROTONOSUPPORT);
	CHECK_EQ_INT(agent_debuginfod_url("ftp://h/", 8, &u), -EPROTONOSUPPORT);
}

struct sunk {
	char data[64];
	size_t n;
};

static int sink(void *arg, const void *d, size_t n)
{
	struct sunk *s = arg;
	if (n > sizeof(s->data) - s->n)
		return -1;
	memcpy(s->data + s->n, d, n);
	s->n += n;
	return 0;
}

/* A kept body (the parser's sink) comes without its chunk framing, and is never cut: over
 * body_max it is an error, where the uploader's discarded body just stops being read. */
TEST(http_parser_gives_a_kept_body_whole_or_an_error)
{
	const char *chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			      "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
	const char *length = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
	struct up_http_parser p;
	struct sunk s = { .n = 0 };
	up_http_parser_init(&p);
	p.sink = sink, p.sink_arg = &s, p.body_max = 1000;
	CHECK_EQ_INT(up_http_feed(&p, chunked, strlen(chunked), NULL), 1);
	CHECK(s.n == 11 && memcmp(s.data, "hello world", 11) == 0);
	s.n = 0;
	up_http_parser_init(&p);
	p.sink = sink, p.sink_arg = &s, p.body_max = 5;
	CHECK_EQ_INT(up_http_feed(&p, length, strlen(length), NULL), -EBADMSG);
	CHECK_STR(p.why, "body too large");
	/* A sink that cannot keep more stops the answer. */
	s.n = sizeof(s.data) - 3;
	up_http_parser_init(&p);
	p.sink = sink, p.sink_arg = &s, p.body_max = 1000;
	CHECK_EQ_INT(up_http_feed(&p, length, strlen(length), NULL), -EBADMSG);
	char req[256];
	CHECK(up_http_get_request(req, sizeof(req), "::1", "8002", "80", "/buildid/ab/debuginfo") >
	      0);
	CHECK_STR(req, "GET /buildid/ab/debuginfo HTTP/1.1\r\nHost: [::1]:8002\r\n"
		       "User-Agent: jitt/1\r\nConnection: close\r\n\r\n");
	CHECK_EQ_INT(up_http_get_request(req, sizeof(req), "h", "80", "80", "/a b"), -EINVAL);
}

/* A server on 127.0.0.1 that gives each connection the next of n canned answers (head,
 * then the file body when not NULL), then exits; "" for an answer holds the connection
 * open without a byte until the client leaves. The port in *port. Its pid, or -1. */
static pid_t serve(const char *const *heads, const char *body, int n, char *port, size_t size)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 8) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) != 0)
		return -1;
	snprintf(port, size, "%u", ntohs(a.sin_port));
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0) {
		close(l);
		return pid;
	}
	for (int i = 0; i < n; i++) {
		int c = accept(l, NULL, NULL);
		if (c < 0)
			_exit(1);
		char buf[4096];
		size_t got = 0;
		while (got < sizeof(buf) - 1) { /* the request, to its empty line */
			ssize_t r = read(c, buf + got, sizeof(buf) - 1 - got);
			if (r <= 0)
				break;
			got += (size_t)r;
			buf[got] = '\0';
			if (strstr(buf, "\r\n\r\n"))
				break;
		}
		if (!heads[i][0]) {
			while (read(c, buf, sizeof(buf)) > 0) /* until the client gives up */
				;
		} else if (write(c, heads[i], strlen(heads[i])) < 0) {
			_exit(1);
		} else if (body && strstr(heads[i], " 200 ")) {
			int f = open(body, O_RDONLY | O_CLOEXEC);
			ssize_t r;
			while (f >= 0 && (r = read(f, buf, sizeof(buf))) > 0)
				if (write(c, buf, (size_t)r) != r)
					break;
		}
		close(c);
	}
	_exit(0);
}

static int reap(pid_t pid)
{
	int status = -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct id_check {
	const uint8_t *id;
	unsigned len;
	int calls;
};

/* The caller's check: the fetched file's build-id is the one asked for. */
static int check_id(int fd, uint64_t size, void *arg)
{
	struct id_check *c = arg;
	struct rb_elf elf;
	c->calls++;
	int err = rb_elf_read(fd, size, SIZE_MAX, &elf);
	if (!err && (elf.build_id_len != c->len || memcmp(elf.build_id, c->id, c->len) != 0))
		err = -ESRCH;
	rb_elf_free(&elf);
	return err;
}

TEST(debuginfod_fetch_keeps_only_a_checked_file)
{
	struct rb_elf self;
	CHECK_EQ_INT(rb_elf_load("/proc/self/exe", &self), 0);
	char hex[65], cache[512], kept[700], port[16], urls[512], err[512];
	agent_hex(self.build_id, self.build_id_len, hex);
	snprintf(cache, sizeof(cache), "%s/cache/jitt", test_tmpdir());
	CHECK_EQ_INT(agent_debuginfod_cache_path(cache, hex, kept, sizeof(kept)), 0);
	struct id_check ck = { self.build_id, self.build_id_len, 0 };
	struct agent_debuginfod d = { .cache = cache, .timeout_ms = 300, .check = check_id,
				      .arg = &ck };
	struct stat st;
	const char *const answers[] = {
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"garbage\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", /* not an ELF file */
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n", /* claims too much */
		"", /* says nothing */
		"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n",
	};
	int n = (int)(sizeof(answers) / sizeof(answers[0]));
	pid_t pid = serve(answers, NULL, n, port, sizeof(port));
	CHECK(pid > 0);
	snprintf(urls, sizeof(urls), "https://127.0.0.1:%s http://127.0.0.1:%s/", port, port);
	d.urls = urls;
	deadline_start();
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, hex, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, "no debug file") != NULL);
	snprintf(urls, sizeof(urls), "http://127.0.0.1:%s", port);
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, hex, err, sizeof(err)), -EBADMSG);
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, hex, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(ck.calls, 1); /* the body was checked, and refused */
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, hex, err, sizeof(err)), -EFBIG);
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, hex, err, sizeof(err)), -ETIMEDOUT);
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, hex, err, sizeof(err)), -EPROTO);
	CHECK(strstr(err, "HTTP 500") != NULL);
	deadline_stop();
	CHECK_EQ_INT(reap(pid), 0);
	CHECK(stat(kept, &st) != 0 && errno == ENOENT); /* nothing was kept */
	/* Garbage ids and lists are refused before anything is asked. */
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, "../../etc", err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, "AB", err, sizeof(err)), -EINVAL);
	d.urls = "";
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, hex, err, sizeof(err)), -EINVAL);

	/* A server with the file: fetched, checked, kept under the build-id's name. */
	const char *const ok[] = { "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" };
	pid = serve(ok, "/proc/self/exe", 1, port, sizeof(port));
	snprintf(urls, sizeof(urls), "http://127.0.0.1:%s", port);
	d.urls = urls;
	deadline_start();
	CHECK_EQ_INT(agent_debuginfod_fetch(&d, hex, err, sizeof(err)), 0);
	deadline_stop();
	CHECK_EQ_INT(reap(pid), 0);
	struct rb_elf got;
	CHECK_EQ_INT(rb_elf_load(kept, &got), 0);
	CHECK(got.build_id_len == self.build_id_len &&
	      memcmp(got.build_id, self.build_id, self.build_id_len) == 0);
	CHECK(stat(cache, &st) == 0 && (st.st_mode & 0777) == 0700);
	rb_elf_free(&got);
	rb_elf_free(&self);
}

/* Read a whole file into memory (free it); NULL on failure. */
static uint8_t *slurp(const char *path, size_t *size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t *d = fd >= 0 && fstat(fd, &st) == 0 ? malloc((size_t)st.st_size) : NULL;
	if (d && read(fd, d, (size_t)st.st_size) != st.st_size) {
		free(d);
		d = NULL;
	}
	if (fd >= 0)
		close(fd);
	*size = d ? (size_t)st.st_size : 0;
	return d;
}

/* The debuglink's name is joined to folders: a name that could climb out of them, or
 * holds control bytes, is no link at all. */
TEST(elf_reader_debuglink_is_one_plain_file_name)
{
	char dir[512], app[600];
	struct rb_elf self, elf;
	snprintf(dir, sizeof(dir), "%s/bin", test_tmpdir());
	make_dirs(dir);
	if (split_self(dir, &self) != 0)
		return;
	snprintf(app, sizeof(app), "%s/app", dir);
	size_t size;
	uint8_t *d = slurp(app, &size);
	/* The section's copy is the last: objcopy appends it, and this program's own strings
	 * hold the name too. */
	uint8_t *at = NULL;
	for (uint8_t *p = d; p && (p = memmem(p, size - (size_t)(p - d), "app.debug\0", 10));
	     p++)
		at = p;
	if (!CHECK(at != NULL)) {
		free(d);
		return;
	}
	const char *names[] = { "../.debug", "a/b.debug", "app.de\nug", "..\0xxxxxx", ".\0xxxxxxx",
				"\0xxxxxxxx" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		memcpy(at, names[i], 9);
		CHECK_EQ_INT(rb_elf_parse(d, size, &elf), 0);
		if (elf.debuglink[0])
			test_fail(__FILE__, __LINE__, "link %zu kept as \"%s\"", i, elf.debuglink);
		CHECK_EQ_INT(elf.build_id_len, self.build_id_len); /* the rest is read */
		rb_elf_free(&elf);
	}
	memcpy(at, "ok.debug\0", 9);
	CHECK_EQ_INT(rb_elf_parse(d, size, &elf), 0);
	CHECK_STR(elf.debuglink, "ok.debug");
	rb_elf_free(&elf);
	free(d);
	rb_elf_free(&self);
}

TEST(symbols_a_compilers_copy_is_named_as_its_source)
{
	/* This program has GCC's clones ("name.constprop.0", "name.part.0"): each is named up
	 * to its first '.', in every view, so that copies merge by name; an address inside
	 * one keeps the copy's name, its offset being from the copy. */
	char exe[512];
	struct rb_elf self;
	snprintf(exe, sizeof(exe), "%s/exe", test_tmpdir());
	CHECK_EQ_INT(copy_self(exe, 0644, &self), 0);
	const struct rb_symbol *clone = NULL;
	for (size_t i = 0; i < self.nsyms && !clone; i++)
		if (strstr(self.syms[i].name, ".constprop.") || strstr(self.syms[i].name, ".part."))
			clone = &self.syms[i];
	CHECK(clone != NULL);
	if (!clone) {
		rb_elf_free(&self);
		return;
	}
	struct rb_module mod;
	module(&mod, exe, &self);
	struct rb_trace t = { .nmodules = 1, .modules = &mod };
	struct agent_symbols s;
	CHECK_EQ_INT(agent_symbols_open(&s, &t), 0);
	char name[256], want[256];
	agent_symbol_name(&s, 0, clone->addr, name, sizeof(name));
	snprintf(want, sizeof(want), "%.*s", (int)(strchr(clone->name, '.') - clone->name),
		 clone->name);
	CHECK_STR(name, want);
	agent_symbol_name(&s, 0, clone->addr + 1, name, sizeof(name));
	snprintf(want, sizeof(want), "%s+0x1", clone->name);
	CHECK_STR(name, want);
	agent_symbols_close(&s);
	rb_elf_free(&self);
}
