/* SPDX-License-Identifier: MIT */
/*
 * uploader/random.h - random bytes for secrets and idempotency keys: mbedtls' CTR_DRBG,
 * seeded from the kernel's getrandom() (never from anything guessable). Thread-safe.
 */
#ifndef JITT_UPLOADER_RANDOM_H
#define JITT_UPLOADER_RANDOM_H

#include <stddef.h>

/* Fills buf. 0, or -EIO when the generator cannot be seeded or fails. */
int up_random(void *buf, size_t len);

/* A random (version 4) UUID in lowercase, "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" and a NUL. */
int up_uuid4(char out[37]);

#endif
