/* SPDX-License-Identifier: MIT */
/* The install secret and the pseudonym (uploader/identity.h). */
#include "uploader/identity.h"
#include "hal/fs.h"
#include "uploader/random.h"

#include <errno.h>
#include <fcntl.h>
#include <mbedtls/md.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET_TMP ".tmp-" UP_SECRET_FILE

int up_secret_load(int dirfd, unsigned char secret[UP_SECRET_LEN])
{
	struct stat st;
	int fd = hal_open_file(dirfd, UP_SECRET_FILE, false, &st);
	if (fd < 0)
		return fd == -ENOENT ? -ENOENT : -EINVAL;
	ssize_t n = st.st_size == UP_SECRET_LEN ? read(fd, secret, UP_SECRET_LEN) : -1;
	close(fd);
	return n == UP_SECRET_LEN ? 0 : -EINVAL;
}

int up_secret_create(int dirfd, unsigned char secret[UP_SECRET_LEN])
{
	int e = up_random(secret, UP_SECRET_LEN);
	if (!e)
		e = hal_file_write_at(dirfd, SECRET_TMP, UP_SECRET_FILE, secret, UP_SECRET_LEN);
	if (e)
		memset(secret, 0, UP_SECRET_LEN);
	return e;
}

int up_secret_destroy(int dirfd)
{
	static const unsigned char zeros[UP_SECRET_LEN];
	int fd = openat(dirfd, UP_SECRET_FILE, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		/* Best effort: on flash with wear levelling the old block may live on, which is
		 * why the secret is only ever a key, never data worth having by itself. */
		if (pwrite(fd, zeros, sizeof(zeros), 0) == (ssize_t)sizeof(zeros))
			fsync(fd);
		close(fd);
	}
	unlinkat(dirfd, SECRET_TMP, 0);
	if (unlinkat(dirfd, UP_SECRET_FILE, 0) != 0 && errno != ENOENT)
		return -errno;
	fsync(dirfd);
	return 0;
}

int64_t up_period(int64_t unix_s, unsigned days)
{
	int64_t len = (int64_t)(days ? days : 1) * 86400;
	return unix_s >= 0 ? unix_s / len : 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int up_hex_decode(const char *hex, unsigned char *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hi < 0 ? -1 : hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return hex[2 * len] ? -EINVAL : 0;
}

int up_pseudonym(const unsigned char secret[UP_SECRET_LEN], const char *build_id_hex,
		 int64_t period, char id[65])
{
	unsigned char msg[64 + 8], mac[32];
	size_t n = strlen(build_id_hex);
	if (n < 2 || n > 128 || n % 2 || up_hex_decode(build_id_hex, msg, n / 2) != 0)
		return -EINVAL;
	for (int i = 0; i < 8; i++)
		msg[n / 2 + (size_t)i] = (unsigned char)((uint64_t)period >> (56 - 8 * i));
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	if (!md || mbedtls_md_hmac(md, secret, UP_SECRET_LEN, msg, n / 2 + 8, mac) != 0)
		return -EIO;
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		id[2 * i] = digits[mac[i] >> 4];
		id[2 * i + 1] = digits[mac[i] & 15];
	}
	id[64] = 0;
	return 0;
}
