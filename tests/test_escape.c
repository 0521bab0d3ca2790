/* SPDX-License-Identifier: MIT */
/*
 * Escaping (agent/escape.h): names from traces, summaries, file names and requests reach a
 * terminal, a log line or a JSON string with no control byte raw; what is printable passes
 * unchanged; a cut keeps whole characters; every byte string gives valid output.
 */
#include "harness.h"
#include "agent/escape.h"

#include <stdlib.h>
#include <string.h>

static char *fput_text(const char *s, int json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (json)
		agent_json_fput(f, s, strlen(s));
	else
		agent_escape_fput(f, s);
	fclose(f);
	return buf;
}

TEST(escape_passes_printable_text)
{
	char buf[64];
	CHECK_STR(agent_escape(buf, sizeof(buf), "main::draw_frame(int) <lambda#2>"),
		  "main::draw_frame(int) <lambda#2>");
	CHECK_STR(agent_escape(buf, sizeof(buf), "caf\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97"),
		  "caf\xc3\xa9 \xe6\xbc\xa2\xe5\xad\x97");
	CHECK_STR(agent_escape(buf, sizeof(buf), "a\\b"), "a\\\\b");
}

TEST(escape_hides_no_control_byte)
{
	char buf[128];
	/* ESC [2J clears the screen; \r and \n forge a log line; CSI as the C1 byte and in
	 * UTF-8; a right-to-left override; invalid and overlong UTF-8. */
	CHECK_STR(agent_escape(buf, sizeof(buf), "f\x1b[2J\r\nok"), "f\\x1b[2J\\x0d\\x0aok");
	CHECK_STR(agent_escape(buf, sizeof(buf),
			       "\x9b"
			       "31m"),
		  "\\x9b31m");
	CHECK_STR(agent_escape(buf, sizeof(buf),
			       "\xc2\x9b"
			       "31m"),
		  "\\xc2\\x9b31m");
	CHECK_STR(agent_escape(buf, sizeof(buf), "x\xe2\x80\xaey"), "x\\xe2\\x80\\xaey");
	CHECK_STR(agent_escape(buf, sizeof(buf), "\xc0\xaf\x7f\xff"), "\\xc0\\xaf\\x7f\\xff");
	char *t = fput_text("bell\a\x1b]0;title\a", 0);
	CHECK_STR(t, "bell\\x07\\x1b]0;title\\x07");
	free(t);
}

TEST(escape_cuts_at_a_character_with_dots)
{
	char buf[8];
	CHECK_STR(agent_escape(buf, sizeof(buf), "abcdefg"), "abcdefg");
	CHECK_STR(agent_escape(buf, sizeof(buf), "abcdefgh"), "abcd...");
	CHECK_STR(agent_escape(buf, sizeof(buf), "\x1b\x1b"), "\\x1b...");
	CHECK_STR(agent_escape(buf, sizeof(buf), "ab\xe6\xbc\xa2\xe5\xad\x97"), "ab...");
	CHECK_STR(agent_escape(buf, sizeof(buf), "\xe6\xbc\xa2\xe5\xad\x97xy"), "\xe6\xbc\xa2...");
	char tiny[4];
	CHECK_STR(agent_escape(tiny, sizeof(tiny), "\x1b"), "...");
	CHECK_STR(agent_escape(tiny, sizeof(tiny), ""), "");
}

TEST(escape_json_is_plain_ascii)
{
	char *j = fput_text("a\"b\\c\n\x1b\x7f\xc2\x9b\xc3\xa9\xf0\x9f\x98\x80\xff", 1);
	CHECK_STR(j, "\"a\\\"b\\\\c\\u000a\\u001b\\u007f\\u009b\\u00e9\\ud83d\\ude00\\ufffd\"");
	free(j);
}

/* Random bytes: the text form has no byte below 0x20 or DEL, and ends where it should. */
TEST(escape_random_bytes_never_leak_controls)
{
	srand(7);
	char in[64], out[300];
	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(rand() % 63);
		for (size_t i = 0; i < n; i++)
			in[i] = (char)(1 + rand() % 255);
		in[n] = 0;
		size_t size = 4 + (size_t)(rand() % 296);
		agent_escape(out, size, in);
		size_t len = strlen(out);
		CHECK(len < size);
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f) {
				CHECK(!"a control byte passed");
				return;
			}
		char *j = fput_text(in, 1);
		for (const char *p = j; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) {
				CHECK(!"JSON is not plain ASCII");
				free(j);
				return;
			}
		free(j);
	}
}
