/* SPDX-License-Identifier: MIT */
/*
 * The pseudonym and the install secret (uploader/identity.h): a known answer (computed
 * apart, with Python's hmac module), one id per app and per period, a new secret after a
 * revoke, and the secret file's life (0600, gone after destroy).
 */
#include "harness.h"
#include "uploader/identity.h"
#include "uploader/random.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char app_a[] = "001cb428a17b6efb6cfc3116ed85f3401673abbf";
static const char app_b[] = "4ea56f8199d6e77cf48826896b271fc44d75ce70";

TEST(identity_pseudonym_known_answer)
{
	unsigned char secret[UP_SECRET_LEN];
	for (int i = 0; i < UP_SECRET_LEN; i++)
		secret[i] = (unsigned char)i;
	char id[65];
	/* hmac.new(bytes(range(32)), bytes.fromhex(app_a) + (692).to_bytes(8, 'big'),
	 *          hashlib.sha256).hexdigest() */
	CHECK_EQ_INT(up_pseudonym(secret, app_a, 692, id), 0);
	CHECK_STR(id, "0127bf446bc7b9286aa93c5ad1144cf425f769c3527267c8c012ac909e589225");
}

TEST(identity_one_id_per_app_period_and_install)
{
	unsigned char s1[UP_SECRET_LEN], s2[UP_SECRET_LEN];
	CHECK_EQ_INT(up_random(s1, sizeof(s1)), 0);
	CHECK_EQ_INT(up_random(s2, sizeof(s2)), 0);
	CHECK(memcmp(s1, s2, sizeof(s1)) != 0);
	char a[65], a2[65], b[65], next[65], other[65];
	CHECK_EQ_INT(up_pseudonym(s1, app_a, 692, a), 0);
	CHECK_EQ_INT(up_pseudonym(s1, app_a, 692, a2), 0);
	CHECK_EQ_INT(up_pseudonym(s1, app_b, 692, b), 0);
	CHECK_EQ_INT(up_pseudonym(s1, app_a, 693, next), 0);
	CHECK_EQ_INT(up_pseudonym(s2, app_a, 692, other), 0);
	CHECK_STR(a, a2);	   /* stable within a period: reports of one app can be counted */
	CHECK(strcmp(a, b));	   /* two apps of one device: unlinkable */
	CHECK(strcmp(a, next));	   /* one app across periods: unlinkable */
	CHECK(strcmp(a, other));   /* before and after a revoke (a new secret): unlinkable */
	/* Upper-case hex names the same build-id. */
	char upper[65];
	CHECK_EQ_INT(up_pseudonym(s1, "001CB428A17B6EFB6CFC3116ED85F3401673ABBF", 692, upper), 0);
	CHECK_STR(a, upper);
	static const char *const bad[] = { "", "0", "abc", "zz", "00 1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_INT(up_pseudonym(s1, bad[i], 1, a), -EINVAL);
	CHECK(up_period(0, 30) == 0);
	CHECK(up_period(30 * 86400 - 1, 30) == 0);
	CHECK(up_period(30 * 86400, 30) == 1);
}

TEST(identity_secret_file_lives_from_grant_to_revoke)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/identity", test_tmpdir());
	mkdir(path, 0700);
	int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dir >= 0);
	unsigned char s[UP_SECRET_LEN], back[UP_SECRET_LEN];
	CHECK_EQ_INT(up_secret_load(dir, back), -ENOENT);
	CHECK_EQ_INT(up_secret_create(dir, s), 0);
	struct stat st;
	CHECK(fstatat(dir, UP_SECRET_FILE, &st, 0) == 0);
	CHECK_EQ_INT(st.st_mode & 0777, 0600);
	CHECK_EQ_INT(st.st_size, UP_SECRET_LEN);
	CHECK_EQ_INT(up_secret_load(dir, back), 0);
	CHECK(!memcmp(s, back, sizeof(s)));
	CHECK_EQ_INT(up_secret_destroy(dir), 0);
	CHECK_EQ_INT(up_secret_load(dir, back), -ENOENT);
	CHECK_EQ_INT(up_secret_destroy(dir), 0); /* none: fine */
	/* A file of another length is not a secret of ours. */
	int fd = openat(dir, UP_SECRET_FILE, O_CREAT | O_WRONLY, 0600);
	CHECK(write(fd, "short", 5) == 5);
	close(fd);
	CHECK_EQ_INT(up_secret_load(dir, back), -EINVAL);
	close(dir);
}
