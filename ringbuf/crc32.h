/* SPDX-License-Identifier: MIT */
/* ringbuf/crc32.h - CRC-32 (IEEE 802.3, reflected 0xEDB88320), as zlib and gzip compute it. */
#ifndef JITT_RINGBUF_CRC32_H
#define JITT_RINGBUF_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: start with crc = 0. crc32("123456789") == 0xCBF43926. */
uint32_t rb_crc32(uint32_t crc, const void *data, size_t len);

#endif
