/* SPDX-License-Identifier: MIT */
/*
 * uploader/json.c - the strict JSON reader of json.h. The grammar is RFC 8259's; every read
 * checks the end first, so no input makes it read past `len`, and the nesting bound keeps
 * the recursion within a few kilobytes of stack whatever the input.
 */
#include "uploader/json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	const char *s;
	size_t len, pos;
	struct json_doc *doc;
	char *err;
	size_t errsize;
	int nomem;
};

static int fail(struct parser *p, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, size_t at, const char *fmt, ...)
{
	if (p->err && p->errsize) {
		int n = snprintf(p->err, p->errsize, "offset %zu: ", at);
		if (n >= 0 && (size_t)n < p->errsize) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(p->err + n, p->errsize - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EINVAL;
}

static int nomem(struct parser *p)
{
	p->nomem = 1;
	if (p->err && p->errsize)
		snprintf(p->err, p->errsize, "out of memory");
	return -ENOMEM;
}

/* What is at pos, for messages: a character, or "the end". */
static const char *what(const struct parser *p, char *buf, size_t size)
{
	if (p->pos >= p->len)
		return "the end";
	unsigned char c = (unsigned char)p->s[p->pos];
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "byte 0x%02x", c);
	return buf;
}

static int unexpected(struct parser *p, const char *expected)
{
	char b[16];
	return fail(p, p->pos, "expected %s, found %s", expected, what(p, b, sizeof(b)));
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		p->pos++;
	}
}

static int new_value(struct parser *p, enum json_type type, uint32_t *out)
{
	struct json_doc *d = p->doc;
	if (d->n == d->cap) {
		uint32_t cap = d->cap ? 2 * d->cap : 64;
		struct json_value *v = realloc(d->v, cap * sizeof(*v));
		if (!v)
			return nomem(p);
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n] = (struct json_value){ .next = JSON_NONE,
					  .child = JSON_NONE,
					  .key = UINT32_MAX,
					  .at = (uint32_t)p->pos,
					  .type = (uint8_t)type };
	*out = d->n++;
	return 0;
}

static int put_bytes(struct parser *p, const void *b, size_t n)
{
	struct json_doc *d = p->doc;
	if (d->slen + n + 1 > d->scap) {
		size_t cap = d->scap ? d->scap : 256;
		while (d->slen + n + 1 > cap)
			cap *= 2;
		char *s = realloc(d->strings, cap);
		if (!s)
			return nomem(p);
		d->strings = s;
		d->scap = cap;
	}
	memcpy(d->strings + d->slen, b, n);
	d->slen += n;
	return 0;
}

static int put_utf8(struct parser *p, uint32_t cp)
{
	unsigned char b[4];
	size_t n;
	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6);
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | cp >> 12);
		b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (unsigned char)(0xf0 | cp >> 18);
		b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (unsigned char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return put_bytes(p, b, n);
}

/*
 * The length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629 section 4: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t need;
	unsigned char lo = 0x80, hi = 0xbf;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < need + 1 || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k <= need; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return need + 1;
}

static int hex4(struct parser *p, uint32_t *out)
{
	uint32_t v = 0;
	if (p->len - p->pos < 4)
		return fail(p, p->pos, "\\u needs four hex digits");
	for (int k = 0; k < 4; k++) {
		char c = p->s[p->pos + (size_t)k];
		int h = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (h < 0)
			return fail(p, p->pos + (size_t)k, "\\u needs four hex digits");
		v = v << 4 | (uint32_t)h;
	}
	p->pos += 4;
	*out = v;
	return 0;
}

/* A string at pos (at its opening quote), decoded into doc->strings; its offset and length
 * there go to *off and *n. */
static int parse_string(struct parser *p, uint32_t *off, uint32_t *n)
{
	size_t start = p->pos;
	p->pos++; /* the quote */
	*off = (uint32_t)p->doc->slen;
	for (;;) {
		if (p->pos >= p->len)
			return fail(p, start, "string not closed before the end");
		unsigned char c = (unsigned char)p->s[p->pos];
		if (c == '"') {
			p->pos++;
			break;
		}
		if (c < 0x20)
			return fail(p, p->pos, "control character 0x%02x inside a string", c);
		if (c != '\\') {
			/* A run of plain bytes at once. */
			size_t run = p->pos;
			while (run < p->len) {
				unsigned char r = (unsigned char)p->s[run];
				if (r == '"' || r == '\\' || r < 0x20)
					break;
				size_t k =
					utf8_len((const unsigned char *)p->s + run, p->len - run);
				if (!k)
					return fail(p, run, "invalid UTF-8 inside a string");
				run += k;
			}
			if (put_bytes(p, p->s + p->pos, run - p->pos))
				return -ENOMEM;
			p->pos = run;
			continue;
		}
		size_t esc = p->pos++;
		if (p->pos >= p->len)
			return fail(p, esc, "string not closed before the end");
		char e = p->s[p->pos++];
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		const char *simple = e ? strchr(from, e) : NULL;
		if (simple) {
			if (put_bytes(p, &to[simple - from], 1))
				return -ENOMEM;
			continue;
		}
		if (e != 'u')
			return fail(p, esc, "invalid escape in a string");
		uint32_t cp, lo;
		int r = hex4(p, &cp);
		if (r)
			return r;
		if (cp >= 0xdc00 && cp <= 0xdfff)
			return fail(p, esc, "\\u%04x: a low surrogate without its high one", cp);
		if (cp >= 0xd800 && cp <= 0xdbff) {
			/* UTF-16 surrogate pair (RFC 8259 section 7): the low half must follow. */
			if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
				return fail(p, esc, "\\u%04x: a high surrogate without its low one",
					    cp);
			p->pos += 2;
			if ((r = hex4(p, &lo)) != 0)
				return r;
			if (lo < 0xdc00 || lo > 0xdfff)
				return fail(p, esc, "\\u%04x: a high surrogate without its low one",
					    cp);
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		}
		if (put_utf8(p, cp))
			return -ENOMEM;
	}
	*n = (uint32_t)(p->doc->slen - *off);
	return put_bytes(p, "", 1) ? -ENOMEM : 0;
}

static int parse_number(struct parser *p, struct json_value *v)
{
	size_t start = p->pos;
	const char *s = p->s;
	size_t i = p->pos, end = p->len;
	bool neg = false, integer = true;
	if (i < end && s[i] == '-') {
		neg = true;
		i++;
	}
	if (i >= end || s[i] < '0' || s[i] > '9')
		return fail(p, i, "a number needs a digit here");
	if (s[i] == '0') {
		i++;
		if (i < end && s[i] >= '0' && s[i] <= '9')
			return fail(p, start, "a number with a leading zero");
	} else {
		while (i < end && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < end && s[i] == '.') {
		integer = false;
		i++;
		if (i >= end || s[i] < '0' || s[i] > '9')
			return fail(p, i, "a number needs a digit after '.'");
		while (i < end && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < end && (s[i] == 'e' || s[i] == 'E')) {
		integer = false;
		i++;
		if (i < end && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= end || s[i] < '0' || s[i] > '9')
			return fail(p, i, "a number needs a digit in its exponent");
		while (i < end && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	p->pos = i;
	if (integer) {
		/* Exact in 64 bits when it fits: offsets and nanoseconds are integers. */
		uint64_t u = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
		bool fits = true;
		for (size_t k = start + neg; k < i && fits; k++) {
			unsigned dgt = (unsigned)(s[k] - '0');
			if (u > (limit - dgt) / 10)
				fits = false;
			else
				u = u * 10 + dgt;
		}
		if (fits) {
			v->is_int = true;
			v->i = neg ? (int64_t)(0 - u) : (int64_t)u;
			v->d = (double)v->i;
			return 0;
		}
	}
	/* strtod wants a terminated string: a copy of the lexeme, never the text itself. */
	char small[64], *buf = small;
	size_t n = i - start;
	if (n >= sizeof(small) && !(buf = malloc(n + 1)))
		return nomem(p);
	memcpy(buf, s + start, n);
	buf[n] = '\0';
	v->d = strtod(buf, NULL);
	if (buf != small)
		free(buf);
	if (!isfinite(v->d))
		return fail(p, start, "number out of range");
	return 0;
}

static int parse_value(struct parser *p, int depth, uint32_t *out);

static int parse_container(struct parser *p, int depth, uint32_t self, bool object)
{
	char close = object ? '}' : ']';
	uint32_t last = JSON_NONE, count = 0;
	p->pos++; /* the opening bracket */
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == close) {
		p->pos++;
		return 0;
	}
	for (;;) {
		uint32_t key = UINT32_MAX, klen, item;
		int r;
		skip_ws(p);
		if (object) {
			if (p->pos >= p->len || p->s[p->pos] != '"')
				return unexpected(p, "a member name (a string)");
			size_t name_at = p->pos;
			if ((r = parse_string(p, &key, &klen)) != 0)
				return r;
			/* Names are looked up as C strings (json_get): one holding a NUL would
			 * answer for its prefix ("schema\u0000x" for "schema"). No summary has one.
			 */
			if (strlen(p->doc->strings + key) != klen)
				return fail(p, name_at, "a member name holding \\u0000");
			skip_ws(p);
			if (p->pos >= p->len || p->s[p->pos] != ':')
				return unexpected(p, "':' after a member name");
			p->pos++;
			skip_ws(p);
		}
		if ((r = parse_value(p, depth + 1, &item)) != 0)
			return r;
		struct json_value *v = p->doc->v;
		v[item].key = key;
		if (last == JSON_NONE)
			v[self].child = item;
		else
			v[last].next = item;
		last = item;
		count++;
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ',') {
			p->pos++;
			continue;
		}
		if (p->pos < p->len && p->s[p->pos] == close) {
			p->pos++;
			break;
		}
		return unexpected(p, object ? "',' or '}'" : "',' or ']'");
	}
	p->doc->v[self].len = count;
	return 0;
}

static int literal(struct parser *p, const char *word)
{
	size_t n = strlen(word);
	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
		return unexpected(p, "a value");
	p->pos += n;
	return 0;
}

static int parse_value(struct parser *p, int depth, uint32_t *out)
{
	if (p->pos >= p->len)
		return unexpected(p, "a value");
	char c = p->s[p->pos];
	enum json_type type;
	switch (c) {
	case '{':
		type = JSON_OBJECT;
		break;
	case '[':
		type = JSON_ARRAY;
		break;
	case '"':
		type = JSON_STRING;
		break;
	case 't':
		type = JSON_TRUE;
		break;
	case 'f':
		type = JSON_FALSE;
		break;
	case 'n':
		type = JSON_NULL;
		break;
	default:
		if (c != '-' && (c < '0' || c > '9'))
			return unexpected(p, "a value");
		type = JSON_NUMBER;
		break;
	}
	if ((type == JSON_OBJECT || type == JSON_ARRAY) && depth >= JSON_MAX_DEPTH)
		return fail(p, p->pos, "nested deeper than %d", JSON_MAX_DEPTH);
	uint32_t self = 0;
	int r = new_value(p, type, &self);
	if (r)
		return r;
	*out = self;
	switch (type) {
	case JSON_OBJECT:
	case JSON_ARRAY:
		return parse_container(p, depth, self, type == JSON_OBJECT);
	case JSON_STRING: {
		uint32_t off, n;
		if ((r = parse_string(p, &off, &n)) != 0)
			return r;
		p->doc->v[self].str = off;
		p->doc->v[self].len = n;
		return 0;
	}
	case JSON_TRUE:
		return literal(p, "true");
	case JSON_FALSE:
		return literal(p, "false");
	case JSON_NULL:
		return literal(p, "null");
	default:
		return parse_number(p, &p->doc->v[self]);
	}
}

int json_parse(struct json_doc *doc, const char *text, size_t len, char *err, size_t errsize)
{
	struct parser p = { .s = text, .len = len, .doc = doc, .err = err, .errsize = errsize };
	memset(doc, 0, sizeof(*doc));
	if (err && errsize)
		err[0] = '\0';
	if (len > JSON_MAX_SIZE)
		return fail(&p, 0, "larger than %u bytes", JSON_MAX_SIZE);
	skip_ws(&p);
	uint32_t root = 0;
	int r = parse_value(&p, 0, &root);
	if (r)
		return p.nomem ? -ENOMEM : r;
	skip_ws(&p);
	if (p.pos < p.len)
		return unexpected(&p, "the end after the top-level value");
	return 0;
}

void json_free(struct json_doc *doc)
{
	free(doc->v);
	free(doc->strings);
	memset(doc, 0, sizeof(*doc));
}

static const struct json_value *at(const struct json_doc *d, uint32_t v)
{
	return v < d->n ? &d->v[v] : NULL;
}

int json_type(const struct json_doc *d, uint32_t v)
{
	const struct json_value *x = at(d, v);
	return x ? x->type : -1;
}

uint32_t json_get(const struct json_doc *d, uint32_t obj, const char *name)
{
	const struct json_value *o = at(d, obj);
	if (!o || o->type != JSON_OBJECT)
		return JSON_NONE;
	size_t n = strlen(name);
	for (uint32_t m = o->child; m != JSON_NONE; m = d->v[m].next) {
		const char *k = d->strings + d->v[m].key;
		if (strncmp(k, name, n + 1) == 0) /* no name holds a NUL: the parser refuses it */
			return m;
	}
	return JSON_NONE;
}

uint32_t json_first(const struct json_doc *d, uint32_t v)
{
	const struct json_value *x = at(d, v);
	return x && (x->type == JSON_ARRAY || x->type == JSON_OBJECT) ? x->child : JSON_NONE;
}

uint32_t json_next(const struct json_doc *d, uint32_t v)
{
	const struct json_value *x = at(d, v);
	return x ? x->next : JSON_NONE;
}

uint32_t json_len(const struct json_doc *d, uint32_t v)
{
	const struct json_value *x = at(d, v);
	return x && (x->type == JSON_ARRAY || x->type == JSON_OBJECT) ? x->len : 0;
}

int json_int(const struct json_doc *d, uint32_t v, int64_t *out)
{
	const struct json_value *x = at(d, v);
	if (!x || x->type != JSON_NUMBER)
		return -EINVAL;
	if (!x->is_int) {
		/* 1e3 and 1.0 are integers written another way; 1e30 does not fit. */
		if (x->d != floor(x->d))
			return -EINVAL;
		if (x->d < -9223372036854775808.0 || x->d >= 9223372036854775808.0)
			return -ERANGE;
		*out = (int64_t)x->d;
		return 0;
	}
	*out = x->i;
	return 0;
}

const char *json_str(const struct json_doc *d, uint32_t v, size_t *len)
{
	const struct json_value *x = at(d, v);
	if (!x || x->type != JSON_STRING)
		return NULL;
	if (len)
		*len = x->len;
	return d->strings + x->str;
}

size_t json_offset(const struct json_doc *d, uint32_t v)
{
	const struct json_value *x = at(d, v);
	return x ? x->at : 0;
}
