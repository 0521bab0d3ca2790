/* SPDX-License-Identifier: MIT */
#include "crc32.h"

#include <pthread.h>

/*
 * Slicing by eight: eight 256-entry tables, built on first use, fold eight bytes per step
 * (about 3 GB/s against 1 GB/s a byte at a time). Reading a 32 MiB trace checks its CRC
 * first, so this is part of every summary's time.
 */
static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = table[0][table[t - 1][i] & 0xff] ^ (table[t - 1][i] >> 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint32_t rb_crc32(uint32_t crc, const void *data, size_t len)
{
	pthread_once(&table_once, build_table);
	const uint8_t *p = data;
	crc = ~crc;
	for (; len >= 8; len -= 8, p += 8) {
		uint32_t a = le32(p) ^ crc, b = le32(p + 4);
		crc = table[7][a & 0xff] ^ table[6][(a >> 8) & 0xff] ^ table[5][(a >> 16) & 0xff] ^
		      table[4][a >> 24] ^ table[3][b & 0xff] ^ table[2][(b >> 8) & 0xff] ^
		      table[1][(b >> 16) & 0xff] ^ table[0][b >> 24];
	}
	while (len--)
		crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
