/* SPDX-License-Identifier: MIT */
#include "harness.h"
#include "hal/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!CHECK(f != NULL))
		return;
	fwrite(data, 1, len, f);
	fclose(f);
}

TEST(fs_root_joins_paths)
{
	char buf[64];
	CHECK_EQ_INT(hal_root_set("/tmp/fake/"), 0);
	CHECK_STR(hal_root(), "/tmp/fake");
	CHECK(!hal_root_is_real());
	CHECK_EQ_INT(hal_path(buf, sizeof(buf), "/sys/x"), 0);
	CHECK_STR(buf, "/tmp/fake/sys/x");
	CHECK_EQ_INT(hal_path(buf, 8, "sys/devices"), -ENAMETOOLONG);
	CHECK_EQ_INT(hal_root_set(NULL), 0);
	CHECK(hal_root_is_real());
	CHECK_EQ_INT(hal_path(buf, sizeof(buf), "proc/cpuinfo"), 0);
	CHECK_STR(buf, "/proc/cpuinfo");
}

TEST(fs_read_text_rejects_what_does_not_fit)
{
	const char *dir = test_tmpdir();
	char buf[8];
	hal_root_set(dir);
	write_file(dir, "fits", "1234567", 7);
	write_file(dir, "fits_nl", "1234567\n", 8);
	write_file(dir, "long", "12345678", 8);
	write_file(dir, "nul",
		   "12\0"
		   "4",
		   4);
	write_file(dir, "empty", "", 0);
	CHECK_EQ_INT(hal_read_text("fits", buf, sizeof(buf)), 7);
	CHECK_STR(buf, "1234567");
	CHECK_EQ_INT(hal_read_text("fits_nl", buf, sizeof(buf)), -EFBIG);
	CHECK_EQ_INT(hal_read_text("long", buf, sizeof(buf)), -EFBIG);
	CHECK_EQ_INT(hal_read_text("nul", buf, sizeof(buf)), -EINVAL);
	CHECK_EQ_INT(hal_read_text("empty", buf, sizeof(buf)), 0);
	CHECK_EQ_INT(hal_read_text("missing", buf, sizeof(buf)), -ENOENT);
	hal_root_set(NULL);
}

TEST(fs_read_u64_accepts_only_plain_numbers)
{
	const char *dir = test_tmpdir();
	static const struct {
		const char *text;
		int err;
		uint64_t value;
	} cases[] = {
		{ "1024\n", 0, 1024 },
		{ "0", 0, 0 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -EINVAL, 0 },
		{ "", -EINVAL, 0 },
		{ "\n", -EINVAL, 0 },
		{ "-1", -EINVAL, 0 },
		{ "+5", -EINVAL, 0 },
		{ " 5", -EINVAL, 0 },
		{ "5 6", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "12abc", -EINVAL, 0 },
		{ "\xff\xfe", -EINVAL, 0 },
		{ "99999999999999999999999999999999999999", -EINVAL, 0 },
	};
	hal_root_set(dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 7;
		write_file(dir, "n", cases[i].text, strlen(cases[i].text));
		int err = hal_read_u64("n", &v);
		if (err != cases[i].err)
			test_fail(__FILE__, __LINE__, "\"%s\": error %d, expected %d",
				  cases[i].text, err, cases[i].err);
		if (!err && v != cases[i].value)
			test_fail(__FILE__, __LINE__, "\"%s\": %llu", cases[i].text,
				  (unsigned long long)v);
	}
	hal_root_set(NULL);
}

/* The one safe open: a FIFO, a folder or a device is refused at once (never blocks), a
 * symlink only when asked to follow it, and the stat describes what was opened. */
TEST(fs_open_file_refuses_what_is_not_a_regular_file)
{
	char path[512], link[512], fifo[512];
	snprintf(path, sizeof(path), "%s/trace.jtr", test_tmpdir());
	snprintf(link, sizeof(link), "%s/link.jtr", test_tmpdir());
	snprintf(fifo, sizeof(fifo), "%s/fifo.jtr", test_tmpdir());
	FILE *f = fopen(path, "w");
	CHECK(f && fputs("data", f) >= 0 && fclose(f) == 0);
	CHECK(symlink(path, link) == 0);
	CHECK(mkfifo(fifo, 0600) == 0);

	struct stat st;
	int fd = hal_open_file(AT_FDCWD, path, false, &st);
	CHECK(fd >= 0 && S_ISREG(st.st_mode) && st.st_size == 4);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(hal_open_file(AT_FDCWD, link, false, &st), -ELOOP);
	fd = hal_open_file(AT_FDCWD, link, true, &st);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(hal_open_file(AT_FDCWD, fifo, true, &st), -EINVAL); /* and did not block */
	CHECK_STR(hal_file_kind(st.st_mode), "a FIFO");
	CHECK_EQ_INT(hal_open_file(AT_FDCWD, test_tmpdir(), true, &st), -EISDIR);
	CHECK_STR(hal_file_kind(st.st_mode), "a directory");
	CHECK_EQ_INT(hal_open_file(AT_FDCWD, "/dev/null", true, &st), -EINVAL);
	CHECK_STR(hal_file_kind(st.st_mode), "a character device");
	int dfd = open(test_tmpdir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = hal_open_file(dfd, "trace.jtr", false, &st);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK_EQ_INT(hal_open_file(dfd, "missing.jtr", false, &st), -ENOENT);
	close(dfd);
}
