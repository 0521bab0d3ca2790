/* SPDX-License-Identifier: MIT */
/*
 * uploader/identity.h - who a report says it is from: a pseudonym that names one app on
 * one install for one period, and nothing else (AppInsight section 6: an anonymous hash
 * per phone and per app).
 *
 *   id = HMAC-SHA256(install secret, app build-id bytes || period as 8 bytes big-endian)
 *
 * The install secret is 32 random bytes (uploader/random.h), made at the first grant of
 * consent and destroyed on revoke: the collector can count reports per app and period, but
 * cannot link two apps of one device, one app across periods, or the ids before a revoke
 * with those after a new grant.
 */
#ifndef JITT_UPLOADER_IDENTITY_H
#define JITT_UPLOADER_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#define UP_SECRET_LEN  32
#define UP_SECRET_FILE "secret"

/* The secret in dirfd (its file, 0600): 0, -ENOENT (none), or -EINVAL (not ours). */
int up_secret_load(int dirfd, unsigned char secret[UP_SECRET_LEN]);
/* A new secret, written (atomically, fsync'd) before it is returned. 0 or -errno. */
int up_secret_create(int dirfd, unsigned char secret[UP_SECRET_LEN]);
/* Overwritten with zeros (and synced) before it is unlinked, so the bytes do not stay
 * behind in the file's blocks on a simple filesystem. 0 (also when there was none). */
int up_secret_destroy(int dirfd);

/* The rotation period of unix time t: t / (days * 86400). */
int64_t up_period(int64_t unix_s, unsigned days);

/* id (64 lowercase hex and a NUL) for the app whose build-id is build_id_hex. 0, or -EINVAL
 * when build_id_hex is not an even number (2 to 128) of hex digits. */
int up_pseudonym(const unsigned char secret[UP_SECRET_LEN], const char *build_id_hex,
		 int64_t period, char id[65]);

/* hex (exactly 2 * len digits, either case) into out[0..len). 0 or -EINVAL. */
int up_hex_decode(const char *hex, unsigned char *out, size_t len);

#endif
