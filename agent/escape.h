/* SPDX-License-Identifier: MIT */
/*
 * agent/escape.h - the one way a name from outside reaches a terminal, a log line or a JSON
 * string. Function, thread and module names come from trace files, summaries, file names and
 * control requests, all written by someone else (docs/security.md): printed raw, a name can
 * move the reader's cursor, rewrite the screen, forge log lines or break a document.
 *
 * Text (terminals, logs): printable ASCII and valid UTF-8 of printable characters pass; a
 * backslash doubles; every other byte is written as \xNN: C0 controls, DEL, C1 controls
 * (U+0080..U+009F, which some terminals obey), invalid UTF-8, and the characters that reorder
 * or hide text (U+200B..U+200F, U+2028..U+202E, U+2066..U+2069, U+FEFF), so what is shown
 * is what the bytes are.
 *
 * JSON: plain ASCII out, whatever comes in: '"' and '\' escaped, every other character
 * below U+0020 or above U+007E as \uXXXX (surrogate pairs above U+FFFF), each invalid UTF-8
 * byte as \ufffd. Any strict parser reads it back; no control byte is ever raw in it.
 */
#ifndef JITT_AGENT_ESCAPE_H
#define JITT_AGENT_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* s as text into buf (size >= 4), always terminated; when it does not fit it is cut at a
 * character boundary and ends with "...". Returns buf, for use as a printf argument. */
const char *agent_escape(char *buf, size_t size, const char *s);
/* s as text, whole, to f. */
void agent_escape_fput(FILE *f, const char *s);
/* The first len bytes of s as a JSON string, quotes included, to f. */
void agent_json_fput(FILE *f, const char *s, size_t len);

#endif
