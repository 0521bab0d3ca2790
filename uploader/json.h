/* SPDX-License-Identifier: MIT */
/*
 * uploader/json.h - a small strict JSON reader (RFC 8259), for the summaries `jitt diff` reads
 * back, and the string escaping of what jitt writes.
 *
 * The whole text is parsed at once, by recursive descent bounded by JSON_MAX_DEPTH, into a
 * flat array of values linked as a tree (first child, next sibling), so a caller walks it
 * with indices and never with pointers into a growing array. Strict means: one value with
 * only whitespace around it, no comments, no trailing commas, no leading zeros, no raw
 * control characters in strings, escapes and UTF-8 checked (no lone surrogates, no overlong
 * forms). Any input, however broken, gives 0 or -EINVAL with a message naming the offset;
 * nothing is read past `len`. Member names may repeat (RFC 8259 says they SHOULD NOT):
 * json_get finds the first.
 */
#ifndef JITT_AGENT_JSON_H
#define JITT_AGENT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 64
#define JSON_MAX_SIZE  (1u << 30) /* indices and offsets stay within 32 bits */
#define JSON_NONE      UINT32_MAX

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT
};

struct json_value {
	uint32_t next;	/* the next element or member of the enclosing container, or JSON_NONE */
	uint32_t child; /* array, object: the first element or member, or JSON_NONE */
	uint32_t len;	/* array, object: how many; string: bytes, decoded */
	uint32_t str;	/* string: offset of its decoded bytes (NUL-terminated) in doc->strings */
	uint32_t key;	/* a member of an object: offset of its name in doc->strings */
	uint32_t at;	/* offset of the value in the text, for messages */
	uint8_t type;	/* enum json_type */
	bool is_int;	/* number: an integer that fits in int64_t (in i); else in d only */
	int64_t i;
	double d; /* number: its value (rounded when is_int and beyond 2^53) */
};

struct json_doc {
	struct json_value *v; /* v[0] is the top-level value */
	uint32_t n, cap;
	char *strings; /* decoded strings and member names */
	size_t slen, scap;
};

/*
 * Parse text[0..len) into doc (released with json_free, also after a failure). Returns 0,
 * -EINVAL with "offset N: what is wrong" in err, or -ENOMEM.
 */
int json_parse(struct json_doc *doc, const char *text, size_t len, char *err, size_t errsize);
void json_free(struct json_doc *doc);

/* The value's type; -1 for JSON_NONE. */
int json_type(const struct json_doc *doc, uint32_t v);
/* The member `name` of object v (the first when it repeats), or JSON_NONE. */
uint32_t json_get(const struct json_doc *doc, uint32_t obj, const char *name);
/* An array's or object's first element or member, and the one after v (JSON_NONE at the
 * end, or when v is not a container). */
uint32_t json_first(const struct json_doc *doc, uint32_t v);
uint32_t json_next(const struct json_doc *doc, uint32_t v);
/* Elements of an array or members of an object; 0 for anything else. */
uint32_t json_len(const struct json_doc *doc, uint32_t v);
/* The integer in v: 0, -EINVAL when v is not an integer number, -ERANGE when it does not fit
 * in int64_t. */
int json_int(const struct json_doc *doc, uint32_t v, int64_t *out);
/* The decoded bytes of string v (NUL-terminated; *len may count NULs from \u0000), or NULL
 * when v is not a string. */
const char *json_str(const struct json_doc *doc, uint32_t v, size_t *len);
/* Where v starts in the text (0 for JSON_NONE). */
size_t json_offset(const struct json_doc *doc, uint32_t v);

#endif
