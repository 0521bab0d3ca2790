/* SPDX-License-Identifier: MIT */
/* Escaping names for terminals, logs and JSON (agent/escape.h). */
#include "agent/escape.h"

#include <stdint.h>
#include <string.h>

#define ESC __attribute__((no_instrument_function)) /* linked into libjitt too */

/* The code point of the UTF-8 sequence at s (at most n bytes) and its length, or 0 when it
 * is not a valid, shortest-form sequence of a scalar value (RFC 3629 section 4). */
ESC static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	size_t len;
	uint32_t min;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, min = 0x80, *cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, min = 0x800, *cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, min = 0x10000, *cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* Characters a terminal obeys or that reorder, join or hide the text around them. */
ESC static int hidden(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

/*
 * The text form of the character at s: its bytes as they are, or its escape written into
 * esc. Returns how many input bytes it covers; *out and *outlen say what to write.
 */
ESC static size_t text_piece(const char *s, size_t n, char esc[16], const char **out,
			     size_t *outlen)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;
	size_t k = utf8_decode(u, n, &cp);
	if (k && !hidden(cp) && cp != '\\') {
		*out = s;
		*outlen = k;
		return k;
	}
	if (k && cp == '\\') {
		*out = "\\\\";
		*outlen = 2;
		return 1;
	}
	/* a control, an invisible character or an invalid byte: every byte of it as \xNN */
	size_t bytes = k ? k : 1, o = 0;
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < bytes; i++) {
		esc[o++] = '\\';
		esc[o++] = 'x';
		esc[o++] = hex[u[i] >> 4];
		esc[o++] = hex[u[i] & 15];
	}
	*out = esc;
	*outlen = o;
	return bytes;
}

/* The length of s's text form. */
ESC static size_t escaped_len(const char *s, size_t n)
{
	size_t total = 0, len;
	char esc[16];
	const char *piece;
	for (size_t i = 0; i < n; total += len)
		i += text_piece(s + i, n - i, esc, &piece, &len);
	return total;
}

ESC const char *agent_escape(char *buf, size_t size, const char *s)
{
	size_t n = strlen(s), o = 0;
	char esc[16];
	int fits = escaped_len(s, n) < size;
	for (size_t i = 0; i < n;) {
		const char *piece;
		size_t len;
		size_t used = text_piece(s + i, n - i, esc, &piece, &len);
		/* Every piece but the last leaves room for a "..." after it (size >= 4 makes
		 * that true at the start too), so a cut always has its room. */
		int last = fits || i + used == n;
		if (o + len + (last ? 0 : 3) >= size) {
			if (last && o + len < size) {
				memcpy(buf + o, piece, len);
				o += len;
			} else {
				memcpy(buf + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(buf + o, piece, len);
		o += len;
		i += used;
	}
	buf[o] = '\0';
	return buf;
}

ESC void agent_escape_fput(FILE *f, const char *s)
{
	size_t n = strlen(s);
	char esc[16];
	for (size_t i = 0; i < n;) {
		const char *piece;
		size_t len;
		i += text_piece(s + i, n - i, esc, &piece, &len);
		fwrite(piece, 1, len, f);
	}
}

ESC void agent_json_fput(FILE *f, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	putc('"', f);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t k = utf8_decode(u + i, len - i, &cp);
		if (!k) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		i += k;
		if (cp == '"' || cp == '\\') {
			putc('\\', f);
			putc((int)cp, f);
		} else if (cp >= 0x20 && cp < 0x7f) {
			putc((int)cp, f);
		} else if (cp < 0x10000) {
			fprintf(f, "\\u%04x", (unsigned)cp);
		} else {
			cp -= 0x10000;
			fprintf(f, "\\u%04x\\u%04x", (unsigned)(0xd800 | cp >> 10),
				(unsigned)(0xdc00 | (cp & 0x3ff)));
		}
	}
	putc('"', f);
}
