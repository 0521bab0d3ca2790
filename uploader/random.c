/* SPDX-License-Identifier: MIT */
/*
 * uploader/random.c - mbedtls' CTR_DRBG (AES-256), seeded from getrandom() alone.
 *
 * mbedtls' own platform source is off in our trimmed configuration
 * (MBEDTLS_NO_PLATFORM_ENTROPY, uploader/mbedtls-config.h), so the only seed is the kernel's,
 * added here as a strong source; with mbedtls' default configuration its platform source
 * (which also reads getrandom or /dev/urandom) is added beside it. getrandom() without flags
 * blocks until the kernel's pool is initialised, once after boot: jittd uploads long after.
 * One generator per process, made on first use and guarded by a mutex; after a fork() the
 * child reseeds before its first byte, so parent and child never share an output stream.
 */
#include "uploader/random.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mbedtls_entropy_context entropy;
static mbedtls_ctr_drbg_context drbg;
static bool ready;
static pid_t seeded_by;

/* mbedtls_entropy_f_source_ptr: fills all of out from the kernel, or fails. */
static int kernel_source(void *data, unsigned char *out, size_t len, size_t *olen)
{
	(void)data;
	size_t got = 0;
	while (got < len) {
		ssize_t n = getrandom(out + got, len - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return MBEDTLS_ERR_ENTROPY_SOURCE_FAILED;
		}
		got += (size_t)n;
	}
	*olen = got;
	return 0;
}

/* Called with the lock held. */
static int seed(void)
{
	static const unsigned char who[] = "jitt uploader";
	mbedtls_entropy_init(&entropy);
	mbedtls_ctr_drbg_init(&drbg);
	/* 32 bytes a poll: the strong source alone reaches the entropy module's threshold. */
	if (mbedtls_entropy_add_source(&entropy, kernel_source, NULL, 32,
				       MBEDTLS_ENTROPY_SOURCE_STRONG) != 0 ||
	    mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, who, sizeof(who) - 1) !=
		    0) {
		mbedtls_ctr_drbg_free(&drbg);
		mbedtls_entropy_free(&entropy);
		return -EIO;
	}
	/* Reseed from the kernel now and then, not only at start (mbedtls' default interval:
	 * every 10000 requests). */
	mbedtls_ctr_drbg_set_prediction_resistance(&drbg, MBEDTLS_CTR_DRBG_PR_OFF);
	ready = true;
	seeded_by = getpid();
	return 0;
}

int up_random(void *buf, size_t len)
{
	unsigned char *out = buf;
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (!ready)
		ret = seed();
	else if (seeded_by != getpid()) {
		if (mbedtls_ctr_drbg_reseed(&drbg, NULL, 0) != 0)
			ret = -EIO;
		else
			seeded_by = getpid();
	}
	/* The generator gives at most MBEDTLS_CTR_DRBG_MAX_REQUEST bytes a call. */
	while (ret == 0 && len) {
		size_t n = len < MBEDTLS_CTR_DRBG_MAX_REQUEST ? len : MBEDTLS_CTR_DRBG_MAX_REQUEST;
		if (mbedtls_ctr_drbg_random(&drbg, out, n) != 0)
			ret = -EIO;
		out += n;
		len -= n;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

int up_uuid4(char out[37])
{
	unsigned char b[16];
	int ret = up_random(b, sizeof(b));
	if (ret)
		return ret;
	/* RFC 9562 section 5.4: version 4 in the high nibble of byte 6, variant 10 in the top
	 * bits of byte 8. */
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
	return 0;
}
