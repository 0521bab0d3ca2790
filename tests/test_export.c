/* SPDX-License-Identifier: MIT */
/*
 * tests/test_export.c - `jitt export`'s three formats on one synthetic trace with exactly
 * known times: two threads that nest calls, a wrapped ring that starts inside a call (with a
 * wide entry cut by the wrap) and ends inside two, marks, a blocked wait and the wake that
 * ended it, a reserved record, a thread with an empty ring and a name that needs escaping,
 * and times off the CPU (preempted, and sleeping, inside a wait and outside).
 *
 * Chrome: every B has its E per thread, in order, at the right times. Folded: the counts sum
 * to the calling-context tree's self time exactly. Perfetto: read back by a small protobuf
 * walker written here (not the encoder's code), slices balanced per track, names interned
 * before use. With JITT_EXPORT_KEEP=DIR the trace and its exports are copied to DIR, for
 * tests/export-check.sh to check with independent tools (a strict JSON parser, protoc).
 */
#include "harness.h"
#include "synth.h"
#include "agent/analysis/cct.h"
#include "agent/analysis/export.h"
#include "agent/marks.h"
#include "agent/analysis/perfetto.h"
#include "agent/analysis/symbols.h"
#include "hal/timer.h"
#include "ringbuf/decode.h"
#include "ringbuf/tracefile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Functions of this program, so the exports name them from its own symbols. Each body
 * differs, or identical code folding could give two of them one address. */
static volatile int sink;
__attribute__((noinline)) void export_fn_main(void)
{
	sink = 1;
}
__attribute__((noinline)) void export_fn_a(void)
{
	sink = 2;
}
__attribute__((noinline)) void export_fn_b(void)
{
	sink = 3;
}
__attribute__((noinline)) void export_fn_work(void)
{
	sink = 4;
}
__attribute__((noinline)) void export_fn_leaf(void)
{
	sink = 5;
}

#define WIDE_A	     0x7f0012345678ull /* in no module: named ?0x... */
#define WIDE_B	     0x7f00abcdef00ull
#define KEY	     (5u << 2 | 1) /* a wait on fd 5 (marks.h) */
#define UI_NAME	     "ui;\"q\"\\\t\xff" /* ';' for folded, '"' '\' and a tab for JSON, bad UTF-8 */
#define UI_TID	     101
#define WORKER_TID   102
#define IDLE_TID     103
#define WORKER_SLOTS 32
#define UNKNOWN	     "(entered before the ring's oldest record)"

/* Slices each thread opens: ui 7 calls, a wait and 4 times off the CPU; worker, after the
 * wrap, the call it starts inside, b, four (wide, b) pairs, work, leaf and b. */
#define UI_SLICES     12
#define WORKER_SLICES 13

/*
 * ui (unbounded ring, times in ticks):
 *   1000 sync; 1010 > main; 1020 frame begin; 1030 > a; 1040 > b; 1100 < b;
 *   1110 wait-begin 0x42; 1500 wait-end 0x42; 1600 < a; 1610 > wide; 1700 <;
 *   1710 frame end; 1720 anomaly (jank); 1800 < main; 1802 > leaf <; 1805 reserved 0xB;
 *   1850 > a; 1900 > b; 1950 mark 9; frozen at 2950, inside a and b (a copied ring: they ran
 *   until the freeze, as a hang's culprit does)
 * worker (a ring of 32 slots that wrapped): 100 sync, then for j = 0..9 at base 100 + 100 j:
 *   > wide (2 slots) +10, > b +20, < +50, < +80; then 1110 > work, 1120 > leaf,
 *   1450 wake 0x42, 1460 mark 9, 1470 > b, 1480 <. The ring keeps the last 32 slots: the
 *   tag of iteration 5's wide entry (its payload overwritten: cut), then > b 620, < 650,
 *   < 680: it starts inside one call.
 * idle: only its start record, at 5000.
 * The trace's first event is worker's > b at 620.
 *
 * ui's times off the CPU (ui_off, set on the parsed trace by open_trace, as the scheduling
 * section's switches are): 900-950 preempted (before the ring's first record: left out);
 * 1050-1080 preempted from CPU 3, in b; 1200-1400 sleeping, inside the wait (no slice: the
 * wait covers it); 1510-1590 sleeping from CPU 2, in a; 2000-2500 preempted from CPU 0, in the
 * second a and b, after the ring's last record; 2900 sleeping from CPU 2, not back before the
 * freeze: it ends there (2950).
 */
static const struct rb_offcpu ui_off[] = {
	{ 900, 950, 1, RB_OFF_PREEMPTED },   { 1050, 1080, 3, RB_OFF_PREEMPTED },
	{ 1200, 1400, 1, RB_OFF_SLEEPING },  { 1510, 1590, 2, RB_OFF_SLEEPING },
	{ 2000, 2500, 0, RB_OFF_PREEMPTED }, { 2900, UINT64_MAX, 2, RB_OFF_SLEEPING },
};

/* rb_trace_open, and ui's times off the CPU (above) on its view. */
static int open_trace(const char *path, struct rb_trace *t, char *err, size_t size)
{
	int e = rb_trace_open(path, t, err, size);
	if (e)
		return e;
	if (CHECK(t->nthreads == 3) && CHECK(t->threads[0].tid == UI_TID)) {
		t->threads[0].view.off = ui_off;
		t->threads[0].view.noff = sizeof(ui_off) / sizeof(ui_off[0]);
	}
	return 0;
}
static void make_trace(char *path, size_t size)
{
	struct synth_thread th[3];
	synth_init(&th[0], UI_NAME, UI_TID, 0, 1000);
	synth_entry(&th[0], 1010, synth_id(export_fn_main));
	synth_special(&th[0], 1020, RB_MARK, AGENT_MARK_FRAME_BEGIN);
	synth_entry(&th[0], 1030, synth_id(export_fn_a));
	synth_entry(&th[0], 1040, synth_id(export_fn_b));
	synth_exit(&th[0], 1100);
	synth_special(&th[0], 1110, RB_WAIT_BEGIN, KEY);
	synth_special(&th[0], 1500, RB_WAIT_END, KEY);
	synth_exit(&th[0], 1600);
	synth_entry(&th[0], 1610, WIDE_A);
	synth_exit(&th[0], 1700);
	synth_special(&th[0], 1710, RB_MARK, AGENT_MARK_FRAME_END);
	synth_special(&th[0], 1720, RB_MARK, AGENT_MARK_ANOMALY | AGENT_DETECT_JANK);
	synth_exit(&th[0], 1800);
	synth_entry(&th[0], 1802, synth_id(export_fn_leaf)); /* a call of no length */
	synth_exit(&th[0], 1802);
	synth_special(&th[0], 1805, 0xB, 5);
	synth_entry(&th[0], 1850, synth_id(export_fn_a));
	synth_entry(&th[0], 1900, synth_id(export_fn_b));
	synth_special(&th[0], 1950, RB_MARK, 9);
	th[0].frozen = 2950;

	synth_init(&th[1], "worker", WORKER_TID, WORKER_SLOTS, 100);
	for (uint64_t j = 0; j < 10; j++) {
		uint64_t base = 100 + 100 * j;
		synth_entry(&th[1], base + 10, WIDE_B);
		synth_entry(&th[1], base + 20, synth_id(export_fn_b));
		synth_exit(&th[1], base + 50);
		synth_exit(&th[1], base + 80);
	}
	synth_entry(&th[1], 1110, synth_id(export_fn_work));
	synth_entry(&th[1], 1120, synth_id(export_fn_leaf));
	synth_special(&th[1], 1450, RB_WAKE, KEY);
	synth_special(&th[1], 1460, RB_MARK, 9);
	synth_entry(&th[1], 1470, synth_id(export_fn_b));
	synth_exit(&th[1], 1480);

	synth_init(&th[2], "idle", IDLE_TID, 0, 5000);
	CHECK_EQ_INT(synth_write(th, 3, "export test", path, size), 0);
	for (int i = 0; i < 3; i++)
		synth_free(&th[i]);
}

static char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, got;
	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 65536;
			char *b = realloc(buf, cap);
			if (!b) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = b;
		}
		got = fread(buf + n, 1, 4096, f);
		n += got;
	} while (got > 0);
	fclose(f);
	buf[n] = '\0';
	*size = n;
	return buf;
}

/* With JITT_EXPORT_KEEP set, a copy of path in that folder under name. */
static void keep(const char *path, const char *name)
{
	const char *dir = getenv("JITT_EXPORT_KEEP");
	size_t n = 0;
	char dst[512];
	if (!dir || !*dir)
		return;
	char *data = slurp(path, &n);
	snprintf(dst, sizeof(dst), "%s/%s", dir, name);
	FILE *f = fopen(dst, "wb");
	if (!CHECK(data && f) || !CHECK(fwrite(data, 1, n, f) == n))
		test_fail(__FILE__, __LINE__, "cannot keep %s as %s", path, dst);
	if (f)
		fclose(f);
	free(data);
}

typedef int (*export_fn)(FILE *out, const struct rb_trace *t, struct agent_symbols *s);

/* Export trace to the test's folder as name; its contents, or NULL. off_cpu: with ui's
 * times off the CPU (open_trace), else the file as it is (what `jitt export` reads). */
static char *export_to(const char *trace, export_fn fn, const char *name, size_t *size,
		       bool off_cpu)
{
	struct rb_trace t;
	struct agent_symbols s;
	char err[256], out[512];
	if ((off_cpu ? open_trace : rb_trace_open)(trace, &t, err, sizeof(err)) != 0) {
		test_fail(__FILE__, __LINE__, "%s: %s", trace, err);
		return NULL;
	}
	CHECK_EQ_INT(agent_symbols_open(&s, &t), 0);
	snprintf(out, sizeof(out), "%s/%s", test_tmpdir(), name);
	FILE *f = fopen(out, "wb");
	if (CHECK(f != NULL)) {
		CHECK_EQ_INT(fn(f, &t, &s), 0);
		fclose(f);
	}
	agent_symbols_close(&s);
	rb_trace_close(&t);
	keep(out, name);
	return slurp(out, size);
}

/* The trace's timer and first event, and the decoder's view of the worker's wrap. */
static void trace_facts(const char *path, uint64_t *hz, uint64_t *t0)
{
	struct rb_trace t;
	char err[256];
	if (!CHECK(open_trace(path, &t, err, sizeof(err)) == 0))
		return;
	*hz = t.timer_hz;
	CHECK_EQ_INT(agent_trace_start(&t, t0), 0);
	CHECK_EQ_U64(*t0, 620);
	struct rb_decoder d;
	CHECK_EQ_INT(rb_decoder_init(&d, &t.threads[1].view, t.ref_ticks, NULL, NULL), 0);
	CHECK_EQ_U64(d.open_at_start, 1); /* the test covers what it says it does */
	CHECK_EQ_U64(d.stats.cut, 1);
	rb_decoder_free(&d);
	rb_trace_close(&t);
}

/* ---- Chrome JSON ---- */

/* ns as the export writes microseconds: three decimals. */
static const char *us_text(char *buf, uint64_t ns)
{
	snprintf(buf, 32, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
	return buf;
}

struct chrome_thread {
	unsigned long tid;
	int depth, begins;
	uint64_t last_ns, open_ns[16];
	char open_name[16][128];
};

/* The line's "name" member's value, raw (escapes kept), or "" when none. */
static void json_name(const char *line, char *out, size_t size)
{
	const char *p = strstr(line, "\"name\":\"");
	size_t n = 0;
	if (p)
		for (p += 8; *p && *p != '"' && n + 1 < size; p++) {
			if (*p == '\\' && p[1])
				out[n++] = *p++;
			out[n++] = *p;
		}
	out[n] = '\0';
}

static uint64_t json_us_ns(const char *line, const char *member)
{
	const char *p = strstr(line, member);
	char *end;
	if (!p)
		return UINT64_MAX;
	uint64_t us = strtoull(p + strlen(member), &end, 10);
	if (*end != '.')
		return UINT64_MAX;
	return us * 1000 + strtoull(end + 1, NULL, 10);
}

static uint64_t json_ts_ns(const char *line)
{
	return json_us_ns(line, "\"ts\":");
}

TEST(export_chrome_every_begin_has_its_end)
{
	char trace[512];
	size_t n = 0;
	uint64_t hz = 0, t0 = 0;
	make_trace(trace, sizeof(trace));
	trace_facts(trace, &hz, &t0);
	keep(trace, "export.jtr");
	char *json = export_to(trace, agent_export_chrome, "export.json", &n, true);
	if (!CHECK(json != NULL))
		return;
	CHECK(strncmp(json, "{", 1) == 0);
	CHECK(n > 4 && strcmp(json + n - 4, "\n]}\n") == 0);

	struct chrome_thread th[3] = { { .tid = UI_TID },
				       { .tid = WORKER_TID },
				       { .tid = IDLE_TID } };
	char *save = NULL;
	int lines = 0;
	for (char *line = strtok_r(json, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *tidp = strstr(line, "\"tid\":"), *ph = strstr(line, "\"ph\":\"");
		lines++;
		if (!tidp || !ph)
			continue;
		unsigned long tid = strtoul(tidp + 6, NULL, 10);
		struct chrome_thread *c = NULL;
		for (int i = 0; i < 3; i++)
			if (th[i].tid == tid)
				c = &th[i];
		char kind = ph[6];
		if (kind == 'M')
			continue;
		if (!CHECK(c != NULL))
			continue;
		uint64_t ns = json_ts_ns(line);
		if (!CHECK(ns != UINT64_MAX) || !CHECK(ns >= c->last_ns))
			test_fail(__FILE__, __LINE__, "out of order: %s", line);
		char name[128];
		json_name(line, name, sizeof(name));
		CHECK(name[0] != '\0'); /* every event named, the ends too (speedscope) */
		if (kind == 'B') {
			c->last_ns = ns;
			if (CHECK(c->depth < 16)) {
				strcpy(c->open_name[c->depth], name);
				c->open_ns[c->depth++] = ns;
			}
			c->begins++;
		} else if (kind == 'X') {
			/* A complete slice, nothing inside: the time goes on to its end. */
			uint64_t dur = json_us_ns(line, "\"dur\":");
			if (CHECK(dur != UINT64_MAX))
				c->last_ns = ns + dur;
			c->begins++;
		} else if (kind == 'E') {
			c->last_ns = ns;
			if (!CHECK(c->depth > 0))
				continue;
			CHECK(ns >= c->open_ns[--c->depth]);
			CHECK_STR(name, c->open_name[c->depth]);
		} else {
			c->last_ns = ns;
			CHECK(kind == 'i');
		}
	}
	CHECK(lines > 20);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(th[i].depth, 0);
	CHECK_EQ_INT(th[0].begins, UI_SLICES);
	CHECK_EQ_INT(th[1].begins, WORKER_SLICES);
	CHECK_EQ_INT(th[2].begins, 0);
	free(json);

	/* The names, and the times to the nanosecond (microseconds with three decimals). */
	json = export_to(trace, agent_export_chrome, "export.json", &n, true);
	if (!CHECK(json != NULL))
		return;
	static const char *const names[] = {
		"export_fn_main",
		"export_fn_a",
		"export_fn_b",
		"export_fn_work",
		"export_fn_leaf",
		"\"?0x7f0012345678\"",
		"\"?0x7f00abcdef00\"",
		"\"" UNKNOWN "\"",
		"\"blocked on fd 5\"",
		"\"frame begin\"",
		"\"frame end\"",
		"\"anomaly: jank\"",
		"\"mark 0x9\"",
		"\"wake-up of fd 5\"",
		"\"record kind 0xb, argument 0x5\"",
		"\"process_name\"",
		/* the name: ';' kept, '"' and '\' escaped, the tab as \u0009, 0xff as U+FFFD,
		 * written \ufffd: the JSON is plain ASCII (agent_json_fput) */
		"{\"name\":\"ui;\\\"q\\\"\\\\\\u0009\\ufffd\"}",
		"{\"name\":\"idle\"}",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strstr(json, names[i]))
			test_fail(__FILE__, __LINE__, "no %s in the Chrome JSON", names[i]);
	char want[256], us[32], dur[32];
	/* The wait, a leaf: one complete event, from its begin to its end. */
	snprintf(want, sizeof(want),
		 "\"ph\":\"X\",\"ts\":%s,\"name\":\"blocked on fd 5\",\"cat\":\"blocked\",\"dur\":%s}",
		 us_text(us, hal_ticks_to_ns(1110 - t0, hz)), us_text(dur, hal_ticks_to_ns(390, hz)));
	if (!strstr(json, want))
		test_fail(__FILE__, __LINE__, "no %s", want);
	/* Times off the CPU outside the wait: leaves of the call they fell in, X events
	 * between their ends, or a B/E pair when the next event is at their end (the sleep
	 * the freeze ended, at b's and a's ends). */
	static const struct {
		uint64_t from, to;
		const char *name;
	} off[] = { { 1050, 1080, "preempted (CPU 3)" },
		    { 1510, 1590, "off CPU: sleeping" },
		    { 2000, 2500, "preempted (CPU 0)" } };
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		uint64_t from = hal_ticks_to_ns(off[i].from - t0, hz);
		snprintf(want, sizeof(want),
			 "\"tid\":%d,\"ph\":\"X\",\"ts\":%s,\"name\":\"%s\",\"cat\":\"off-cpu\","
			 "\"dur\":%s}",
			 UI_TID, us_text(us, from), off[i].name,
			 us_text(dur, hal_ticks_to_ns(off[i].to - t0, hz) - from));
		if (!strstr(json, want))
			test_fail(__FILE__, __LINE__, "no %s", want);
	}
	snprintf(want, sizeof(want),
		 "\"ph\":\"B\",\"ts\":%s,\"name\":\"off CPU: sleeping\",\"cat\":\"off-cpu\"}",
		 us_text(us, hal_ticks_to_ns(2900 - t0, hz)));
	if (!strstr(json, want))
		test_fail(__FILE__, __LINE__, "no %s", want);
	snprintf(want, sizeof(want),
		 "\"ph\":\"E\",\"ts\":%s,\"name\":\"off CPU: sleeping\",\"cat\":\"off-cpu\"}",
		 us_text(us, hal_ticks_to_ns(2950 - t0, hz)));
	if (!strstr(json, want))
		test_fail(__FILE__, __LINE__, "no %s", want);
	/* The sleep inside the wait (1200) has no slice, nor the time before the ring (900). */
	snprintf(want, sizeof(want), "\"ts\":%s,", us_text(us, hal_ticks_to_ns(1200 - t0, hz)));
	CHECK(strstr(json, want) == NULL);
	CHECK(strstr(json, "CPU 1") == NULL);
	/* A call still running at the freeze ends at the freeze, not at the last record
	 * (1950): the summary's end, and a hang's culprit's whole time. Its E has no
	 * arguments (speedscope matches them with the B's); an instant says why it ended. */
	us_text(us, hal_ticks_to_ns(2950 - t0, hz));
	snprintf(want, sizeof(want), "\"ph\":\"E\",\"ts\":%s,\"name\":\"export_fn_b\"}", us);
	if (!strstr(json, want))
		test_fail(__FILE__, __LINE__, "no %s", want);
	snprintf(want, sizeof(want),
		 "\"tid\":%d,\"ph\":\"i\",\"s\":\"t\",\"ts\":%s,\"name\":\"ring frozen: ", UI_TID, us);
	if (!strstr(json, want))
		test_fail(__FILE__, __LINE__, "no %s", want);
	/* A slice of no length is a B/E pair, never an X (speedscope would order its begin
	 * after a sibling's of the same time). */
	CHECK(strstr(json, "\"dur\":0.000}") == NULL);
	snprintf(want, sizeof(want), "\"ph\":\"B\",\"ts\":%s,\"name\":\"export_fn_leaf\"}",
		 us_text(dur, hal_ticks_to_ns(1802 - t0, hz)));
	if (!strstr(json, want))
		test_fail(__FILE__, __LINE__, "no %s", want);
	for (const char *e = strstr(json, "\"ph\":\"E\""); e; e = strstr(e + 1, "\"ph\":\"E\"")) {
		const char *eol = strchr(e, '\n'), *args = strstr(e, "\"args\"");
		if (args && (!eol || args < eol))
			test_fail(__FILE__, __LINE__, "an E with arguments: %.80s", e);
	}
	snprintf(want, sizeof(want), "\"tid\":%d,\"ph\":\"B\",\"ts\":0.000,\"name\":\"%s\"",
		 WORKER_TID, UNKNOWN);
	if (!strstr(json, want))
		test_fail(__FILE__, __LINE__, "no %s", want);
	free(json);
}

/* ---- folded stacks ---- */

static uint64_t key_of(void *ctx, const struct rb_event *e)
{
	return agent_func_key(ctx, e);
}

TEST(export_folded_sums_to_the_self_time_of_the_tree)
{
	char trace[512];
	size_t n = 0;
	make_trace(trace, sizeof(trace));
	/* The file as it is, for export-check.sh to compare with `jitt export`'s. */
	free(export_to(trace, agent_export_folded, "export.folded", &n, false));
	char *text = export_to(trace, agent_export_folded, "export-offcpu.folded", &n, true);
	struct rb_trace t;
	char err[256];
	if (!CHECK(text != NULL) || !CHECK(open_trace(trace, &t, err, sizeof(err)) == 0)) {
		free(text);
		return;
	}
	/* ';' as \x3b, '\' doubled, the tab as \x09, 0xff as U+FFFD (agent_escape) */
	static const char *const labels[3] = { "ui\\x3b\"q\"\\\\\\x09\xef\xbf\xbd-101",
					       "worker-102", "idle-103" };
	uint64_t sum[3] = { 0 };
	int per[3] = { 0 }, waits = 0, offs = 0;
	/* ui's times off the CPU outside the wait, a frame each under the call they fell in,
	 * one per reason (no CPU: the two preemptions are in two contexts anyway). A count is
	 * the difference of two running sums each rounded down: its ticks in ns, or 1 more. */
	static const struct {
		const char *path;
		uint64_t ticks;
	} off[] = {
		{ "-101;export_fn_main;export_fn_a;export_fn_b;[preempted]", 30 },
		{ "-101;export_fn_main;export_fn_a;[off CPU: sleeping]", 80 },
		{ "-101;export_fn_a;export_fn_b;[preempted]", 500 },
		{ "-101;export_fn_a;export_fn_b;[off CPU: sleeping]", 50 },
		/* b's self time: its 60 ticks but the 30 it was preempted */
		{ "-101;export_fn_main;export_fn_a;export_fn_b", 30 },
	};
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *end;
		if (!CHECK(sp != NULL))
			continue;
		unsigned long long v = strtoull(sp + 1, &end, 10);
		CHECK(*end == '\0' && sp[1] >= '1' && sp[1] <= '9');
		*sp = '\0';
		char *semi = strchr(line, ';');
		size_t len = semi ? (size_t)(semi - line) : strlen(line);
		int k = -1;
		for (int i = 0; i < 3; i++)
			if (strlen(labels[i]) == len && strncmp(line, labels[i], len) == 0)
				k = i;
		if (!CHECK(k >= 0)) {
			test_fail(__FILE__, __LINE__, "unknown thread in \"%s\"", line);
			continue;
		}
		sum[k] += v;
		per[k]++;
		if (k == 0 && strstr(line, "[blocked on fd 5]")) {
			/* the wait, a frame of its own in the call that waited, 390 ticks */
			CHECK(strstr(line, "export_fn_main;export_fn_a;[blocked on fd 5]") != NULL);
			CHECK_EQ_U64(v, hal_ticks_to_ns(390, t.timer_hz));
			waits++;
		}
		if (k == 0 && strstr(line, "export_fn_b"))
			CHECK(strstr(line, "export_fn_main;export_fn_a;export_fn_b") ||
			      strstr(line, "-101;export_fn_a;export_fn_b"));
		for (size_t i = 0; k == 0 && i < sizeof(off) / sizeof(off[0]); i++) {
			const char *at = strstr(line, off[i].path);
			if (!at || at[strlen(off[i].path)])
				continue;
			uint64_t ns = hal_ticks_to_ns(off[i].ticks, t.timer_hz);
			if (!CHECK(v == ns || v == ns + 1))
				test_fail(__FILE__, __LINE__, "%s %llu, not %llu", line, v,
					  (unsigned long long)ns);
			offs++;
		}
		CHECK(strstr(line, "CPU 1") == NULL && strstr(line, "(CPU") == NULL);
	}
	/* The model: the calling-context tree of each thread, built here from all of its
	 * events at once and ended at the freeze (ui: 2950) as the summary ends it; the whole
	 * of its time (the root's: self, blocked and off the CPU), from ticks to ns once. */
	for (uint32_t i = 0; i < t.nthreads && i < 3; i++) {
		struct rb_event *ev;
		size_t count;
		struct cct c;
		struct rb_decoder d;
		struct cct_opts o = { .key = key_of, .ctx = &t };
		CHECK_EQ_INT(rb_decode(&t.threads[i].view, t.ref_ticks, &ev, &count, NULL), 0);
		CHECK_EQ_INT(rb_decoder_init(&d, &t.threads[i].view, t.ref_ticks, NULL, NULL), 0);
		CHECK_EQ_INT(cct_init(&c, &o, d.open_at_start), 0);
		CHECK_EQ_INT(cct_add_n(&c, ev, count), 0);
		CHECK_EQ_INT(cct_finish(&c, d.end_ts), 0);
		CHECK_EQ_U64(d.end_ts, i == 0 ? 2950 : d.end_ts);
		rb_decoder_free(&d);
		CHECK_EQ_U64(sum[i], hal_ticks_to_ns(c.node[0].s[CCT_WHOLE].incl, t.timer_hz));
		/* ui: its wait and 4 times off the CPU, frames of their own */
		CHECK(per[i] <= (int)c.n + (i == 0 ? 5 : 0));
		cct_free(&c);
		free(ev);
	}
	CHECK(per[0] >= 4 && per[1] >= 4);
	CHECK_EQ_INT(waits, 1);
	CHECK_EQ_INT(offs, 5);
	CHECK_EQ_INT(per[2], 0); /* an empty ring: no time at all */
	rb_trace_close(&t);
	free(text);
}

/* ---- Perfetto: an independent reader ---- */

struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end) {
			r->bad = true;
			return 0;
		}
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

/* The next field: its number, wire type, value (varints) or body (length-delimited).
 * False at the end or on malformed input (r->bad). */
static bool rd_field(struct rd *r, uint32_t *field, uint64_t *v, struct rd *body)
{
	if (r->bad || r->p >= r->end)
		return false;
	uint64_t key = rd_varint(r);
	*field = (uint32_t)(key >> 3);
	*v = 0;
	*body = (struct rd){ NULL, NULL, false };
	switch (key & 7) {
	case 0:
		*v = rd_varint(r);
		break;
	case 2: {
		uint64_t len = rd_varint(r);
		if (r->bad || len > (uint64_t)(r->end - r->p)) {
			r->bad = true;
			return false;
		}
		*body = (struct rd){ r->p, r->p + len, false };
		r->p += len;
		break;
	}
	case 1:
	case 5: {
		size_t w = (key & 7) == 1 ? 8 : 4;
		if ((size_t)(r->end - r->p) < w) {
			r->bad = true;
			return false;
		}
		for (size_t i = 0; i < w; i++) /* little-endian */
			*v |= (uint64_t)r->p[i] << 8 * i;
		r->p += w;
		break;
	}
	default:
		r->bad = true;
		return false;
	}
	return !r->bad && *field != 0;
}

#define MAX_NAMES 64
#define MAX_SEQ	  8

struct pf_seq {
	uint32_t id;
	uint64_t default_track, last_ts;
	uint32_t default_clock; /* 0: absolute times */
	bool incremental;	/* clock 64 is an incremental clock... */
	uint64_t clock_now;	/* ...which reads this (the previous packet's time) */
	bool cleared;
	int npackets;
	uint64_t iid[MAX_NAMES];
	char name[MAX_NAMES][128];
	int nnames;
};

struct pf_track {
	uint64_t uuid;
	int64_t tid; /* -1: the process's track */
	char name[128];
	int depth, begins, instants, cuts;
	uint64_t last_end; /* the latest end's time */
	char open[16][48]; /* the open slices' names, begin times and "cpu" annotations */
	uint64_t open_ts[16];
	int64_t open_cpu[16];
};

/* A slice read back whose name says it is a time off the CPU. */
struct pf_off {
	int64_t tid, cpu;
	uint64_t begin, end;
	char name[48];
};

struct pf_flow {
	uint64_t id, ts;
	bool terminating;
};

struct pf_read {
	struct pf_flow flow[16];
	int nflows;
	struct pf_seq seq[MAX_SEQ];
	int nseq;
	struct pf_track track[MAX_SEQ];
	int ntracks;
	struct pf_off off[16];
	int noff;
	char process_name[256];
	int64_t pid;
};

static void copy_str(char *out, size_t size, const struct rd *s)
{
	size_t n = (size_t)(s->end - s->p);
	if (n >= size)
		n = size - 1;
	memcpy(out, s->p, n);
	out[n] = '\0';
}

static struct pf_track *track_of(struct pf_read *pr, uint64_t uuid)
{
	for (int i = 0; i < pr->ntracks; i++)
		if (pr->track[i].uuid == uuid)
			return &pr->track[i];
	return NULL;
}

static const char *name_of(const struct pf_seq *s, uint64_t iid)
{
	for (int i = 0; i < s->nnames; i++)
		if (s->iid[i] == iid)
			return s->name[i];
	return NULL;
}

static void read_descriptor(struct pf_read *pr, struct rd td)
{
	struct pf_track tr = { .tid = -2 };
	struct rd sub, sub2;
	uint32_t f, f2;
	uint64_t v, v2;
	while (rd_field(&td, &f, &v, &sub)) {
		if (f == 1) {
			tr.uuid = v;
		} else if (f == 3) { /* ProcessDescriptor */
			tr.tid = -1;
			while (rd_field(&sub, &f2, &v2, &sub2))
				if (f2 == 1)
					pr->pid = (int64_t)v2;
				else if (f2 == 6)
					copy_str(pr->process_name, sizeof(pr->process_name), &sub2);
		} else if (f == 4) { /* ThreadDescriptor */
			while (rd_field(&sub, &f2, &v2, &sub2))
				if (f2 == 2)
					tr.tid = (int64_t)v2;
				else if (f2 == 5)
					copy_str(tr.name, sizeof(tr.name), &sub2);
		}
	}
	CHECK(!td.bad);
	if (CHECK(pr->ntracks < MAX_SEQ) && CHECK(tr.tid != -2) && CHECK(!track_of(pr, tr.uuid)))
		pr->track[pr->ntracks++] = tr;
}

static void read_packet(struct pf_read *pr, struct rd pkt)
{
	uint32_t f, f2, f3;
	uint64_t v, v2, v3, ts = 0, seq_id = 0, flags = 0, clock = 0;
	struct rd sub, sub2, sub3, event = { NULL, NULL, false }, interned = event;
	struct rd defaults = event, descriptor = event, snapshot = event;
	bool has_ts = false;
	while (rd_field(&pkt, &f, &v, &sub)) {
		if (f == 8)
			ts = v, has_ts = true;
		else if (f == 58)
			clock = v;
		else if (f == 6)
			snapshot = sub;
		else if (f == 10)
			seq_id = v;
		else if (f == 13)
			flags = v;
		else if (f == 11)
			event = sub;
		else if (f == 12)
			interned = sub;
		else if (f == 59)
			defaults = sub;
		else if (f == 60)
			descriptor = sub;
	}
	if (!CHECK(!pkt.bad) || !CHECK(seq_id != 0) || !CHECK(has_ts))
		return;
	struct pf_seq *s = NULL;
	for (int i = 0; i < pr->nseq; i++)
		if (pr->seq[i].id == seq_id)
			s = &pr->seq[i];
	if (!s) {
		if (!CHECK(pr->nseq < MAX_SEQ))
			return;
		s = &pr->seq[pr->nseq++];
		s->id = (uint32_t)seq_id;
	}
	if (flags & 1) {
		CHECK_EQ_INT(s->npackets, 0); /* cleared once, by the first packet */
		s->cleared = true;
		s->nnames = 0;
		s->incremental = false;
		s->default_clock = 0;
	}
	/* The time: on the packet's clock, or the sequence's default; our incremental
	 * clock counts from the previous packet that used it. */
	if (!clock)
		clock = s->default_clock;
	if (clock == 64) {
		CHECK(s->incremental);
		ts += s->clock_now;
		s->clock_now = ts;
	} else {
		CHECK(clock == 0 || clock == 6); /* the trace clock, BOOTTIME */
	}
	CHECK(ts >= s->last_ts);
	s->last_ts = ts;
	s->npackets++;
	while (snapshot.p && rd_field(&snapshot, &f, &v, &sub)) {
		uint64_t id = 0, at = 0, incremental = 0;
		while (f == 1 && rd_field(&sub, &f2, &v2, &sub2))
			if (f2 == 1)
				id = v2;
			else if (f2 == 2)
				at = v2;
			else if (f2 == 3)
				incremental = v2;
		if (id == 64) {
			CHECK(incremental == 1);
			CHECK_EQ_U64(at, ts); /* the two clocks read the same */
			s->incremental = true;
			s->clock_now = at;
		}
	}
	if (descriptor.p)
		read_descriptor(pr, descriptor);
	while (defaults.p && rd_field(&defaults, &f, &v, &sub)) {
		if (f == 58)
			s->default_clock = (uint32_t)v;
		while (f == 11 && rd_field(&sub, &f2, &v2, &sub2))
			if (f2 == 11)
				s->default_track = v2;
	}
	while (interned.p && rd_field(&interned, &f, &v, &sub)) {
		if (f != 2) /* InternedData.event_names */
			continue;
		uint64_t iid = 0;
		char name[128] = "";
		while (rd_field(&sub, &f2, &v2, &sub2))
			if (f2 == 1)
				iid = v2;
			else if (f2 == 2)
				copy_str(name, sizeof(name), &sub2);
		CHECK(iid != 0);
		CHECK(name_of(s, iid) == NULL); /* once per sequence */
		if (CHECK(s->nnames < MAX_NAMES)) {
			s->iid[s->nnames] = iid;
			strcpy(s->name[s->nnames++], name);
		}
	}
	if (!event.p)
		return;
	uint64_t type = 0, iid = 0, uuid = s->default_track;
	bool cut = false;
	int64_t cpu = -1;
	while (rd_field(&event, &f3, &v3, &sub3)) {
		if (f3 == 9) {
			type = v3;
		} else if (f3 == 10) {
			iid = v3;
		} else if (f3 == 11) {
			uuid = v3;
		} else if (f3 == 4) { /* a debug annotation: "cut" is the freeze's mark, "cpu"
				       * (a uint_value) the CPU a time off the CPU left */
			bool is_cpu = false;
			uint64_t value = 0;
			while (rd_field(&sub3, &f2, &v2, &sub2)) {
				bool three = f2 == 10 && sub2.end - sub2.p == 3;
				cut |= three && !memcmp(sub2.p, "cut", 3);
				is_cpu |= three && !memcmp(sub2.p, "cpu", 3);
				if (f2 == 3)
					value = v2;
			}
			if (is_cpu)
				cpu = (int64_t)value;
		} else if ((f3 == 47 || f3 == 48) && CHECK(pr->nflows < 16))
			pr->flow[pr->nflows++] = (struct pf_flow){ v3, ts, f3 == 48 };
	}
	CHECK(!event.bad);
	CHECK(flags & 2);  /* it needs the sequence's interned names */
	CHECK(s->cleared); /* ...which a packet before cleared */
	struct pf_track *tr = track_of(pr, uuid);
	if (!CHECK(tr != NULL))
		return;
	if (type == 1 || type == 3)
		if (!CHECK(iid && name_of(s, iid)))
			test_fail(__FILE__, __LINE__, "name iid %llu not interned on sequence %u",
				  (unsigned long long)iid, s->id);
	if (type == 1) {
		if (CHECK(tr->depth < 16)) {
			const char *nm = name_of(s, iid);
			snprintf(tr->open[tr->depth], sizeof(tr->open[0]), "%s", nm ? nm : "");
			tr->open_ts[tr->depth] = ts;
			tr->open_cpu[tr->depth] = cpu;
		}
		tr->depth++;
		tr->begins++;
	} else if (type == 2) {
		if (!CHECK(tr->depth > 0))
			return;
		tr->depth--;
		tr->cuts += cut;
		tr->last_end = ts;
		const char *nm = tr->depth < 16 ? tr->open[tr->depth] : "";
		if ((!strncmp(nm, "preempted", 9) || !strncmp(nm, "off CPU", 7)) &&
		    CHECK(pr->noff < 16)) {
			struct pf_off *o = &pr->off[pr->noff++];
			*o = (struct pf_off){ .tid = tr->tid,
					      .cpu = tr->open_cpu[tr->depth],
					      .begin = tr->open_ts[tr->depth],
					      .end = ts };
			snprintf(o->name, sizeof(o->name), "%s", nm);
		}
	} else {
		CHECK_EQ_U64(type, 3);
		tr->instants++;
	}
}

static bool interned_anywhere(const struct pf_read *pr, const char *name)
{
	for (int i = 0; i < pr->nseq; i++)
		for (int k = 0; k < pr->seq[i].nnames; k++)
			if (strstr(pr->seq[i].name[k], name))
				return true;
	return false;
}

TEST(export_perfetto_reads_back_balanced_and_interned)
{
	char trace[512];
	size_t n = 0;
	uint64_t t_hz = 0, t0 = 0;
	make_trace(trace, sizeof(trace));
	trace_facts(trace, &t_hz, &t0);
	CHECK_EQ_U64(t0, 620);
	uint8_t *pb = (uint8_t *)export_to(trace, agent_export_perfetto, "export.pftrace", &n, true);
	if (!CHECK(pb != NULL))
		return;
	struct pf_read *pr = calloc(1, sizeof(*pr));
	struct rd r = { pb, pb + n, false }, sub;
	uint32_t f;
	uint64_t v;
	int packets = 0;
	while (rd_field(&r, &f, &v, &sub)) {
		CHECK_EQ_INT(f, 1); /* Trace.packet, length-delimited */
		CHECK(sub.p != NULL);
		if (sub.p)
			read_packet(pr, sub);
		packets++;
	}
	CHECK(!r.bad && r.p == r.end);
	CHECK(packets > 30);
	CHECK_EQ_INT(pr->ntracks, 4); /* the process and three threads */
	CHECK_EQ_INT(pr->nseq, 4);
	CHECK_STR(pr->process_name, "unit-tests: export test");
	static const struct {
		int64_t tid;
		const char *name;
		int begins;
	} want[] = {
		{ UI_TID, "ui;\"q\"\\\t\xef\xbf\xbd", UI_SLICES },
		{ WORKER_TID, "worker", WORKER_SLICES },
		{ IDLE_TID, "idle", 0 },
	};
	for (size_t i = 0; i < 3; i++) {
		const struct pf_track *tr = NULL;
		for (int k = 0; k < pr->ntracks; k++)
			if (pr->track[k].tid == want[i].tid)
				tr = &pr->track[k];
		if (!CHECK(tr != NULL))
			continue;
		CHECK_STR(tr->name, want[i].name);
		CHECK_EQ_INT(tr->depth, 0);
		CHECK_EQ_INT(tr->begins, want[i].begins);
		/* ui was frozen inside a and b: both end at the freeze, marked */
		CHECK_EQ_INT(tr->cuts, (i < 2 ? 2 : 0)); /* worker: work and leaf, at its last event */
		if (i == 0)
			CHECK_EQ_U64(tr->last_end, hal_ticks_to_ns(2950 - 620, t_hz));
	}
	/* The worker's wake-up of fd 5 (1450) ended the ui's wait (1500): one flow, from
	 * the wake-up to the "woken up" instant. */
	CHECK_EQ_INT(pr->nflows, 2);
	if (pr->nflows == 2) {
		int from = pr->flow[0].terminating ? 1 : 0, to = 1 - from;
		CHECK(!pr->flow[from].terminating && pr->flow[to].terminating);
		CHECK_EQ_U64(pr->flow[from].id, pr->flow[to].id);
		CHECK_EQ_U64(pr->flow[from].ts, hal_ticks_to_ns(1450 - 620, t_hz));
		CHECK_EQ_U64(pr->flow[to].ts, hal_ticks_to_ns(1500 - 620, t_hz));
	}
	/* ui's times off the CPU outside its wait, each with the CPU it left; none from the
	 * sleep inside the wait (1200-1400). */
	static const struct {
		uint64_t from, to;
		int64_t cpu;
		const char *name;
	} off[] = { { 1050, 1080, 3, "preempted (CPU 3)" },
		    { 1510, 1590, 2, "off CPU: sleeping" },
		    { 2000, 2500, 0, "preempted (CPU 0)" },
		    { 2900, 2950, 2, "off CPU: sleeping" } };
	CHECK_EQ_INT(pr->noff, 4);
	for (int i = 0; i < pr->noff && i < 4; i++) {
		const struct pf_off *o = &pr->off[i];
		CHECK_EQ_U64((uint64_t)o->tid, UI_TID);
		CHECK_STR(o->name, off[i].name);
		CHECK_EQ_U64((uint64_t)o->cpu, (uint64_t)off[i].cpu);
		CHECK_EQ_U64(o->begin, hal_ticks_to_ns(off[i].from - 620, t_hz));
		CHECK_EQ_U64(o->end, hal_ticks_to_ns(off[i].to - 620, t_hz));
	}
	static const char *const names[] = {
		"export_fn_main", "export_fn_a",     "export_fn_work", "?0x7f00abcdef00",
		UNKNOWN,	  "blocked on fd 5", "anomaly: jank",  "wake-up of fd 5",
		"woken up: fd 5",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!interned_anywhere(pr, names[i]))
			test_fail(__FILE__, __LINE__, "%s not interned", names[i]);
	free(pr);
	free(pb);
}

TEST(export_protobuf_encoder_varints_and_nesting)
{
	static const uint64_t values[] = { 0,	  1,	 127,	     128,	 300,
					   16383, 16384, UINT32_MAX, 1ull << 35, UINT64_MAX };
	struct agent_pb b = { 0 };
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		agent_pb_varint(&b, (uint32_t)i + 1, values[i]);
	/* Nested bodies whose lengths take one, two and three bytes, inside one another. */
	static char big[20000];
	memset(big, 'x', sizeof(big) - 1);
	size_t outer = agent_pb_open(&b, 100);
	size_t mid = agent_pb_open(&b, 2000);
	agent_pb_string(&b, 1, "short");
	agent_pb_close(&b, mid);
	size_t inner = agent_pb_open(&b, 3);
	agent_pb_bytes(&b, 4, big, 200);
	agent_pb_string(&b, 5, big);
	agent_pb_close(&b, inner);
	agent_pb_close(&b, outer);
	if (!CHECK(!b.failed))
		return;

	struct rd r = { b.p, b.p + b.len, false }, sub, sub2, sub3;
	uint32_t f, f2, f3;
	uint64_t v, v2, v3;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		CHECK(rd_field(&r, &f, &v, &sub));
		CHECK_EQ_INT(f, i + 1);
		CHECK_EQ_U64(v, values[i]);
	}
	CHECK(rd_field(&r, &f, &v, &sub));
	CHECK_EQ_INT(f, 100);
	CHECK(rd_field(&sub, &f2, &v2, &sub2) && f2 == 2000);
	CHECK(rd_field(&sub2, &f3, &v3, &sub3) && f3 == 1 && sub3.end - sub3.p == 5);
	CHECK(rd_field(&sub, &f2, &v2, &sub2) && f2 == 3);
	CHECK(rd_field(&sub2, &f3, &v3, &sub3) && f3 == 4 && sub3.end - sub3.p == 200);
	CHECK(rd_field(&sub2, &f3, &v3, &sub3) && f3 == 5);
	CHECK_EQ_U64((uint64_t)(sub3.end - sub3.p), sizeof(big) - 1);
	CHECK(!rd_field(&sub2, &f3, &v3, &sub3) && !sub2.bad);
	CHECK(!rd_field(&sub, &f2, &v2, &sub2) && !sub.bad);
	CHECK(!rd_field(&r, &f, &v, &sub) && !r.bad);
	agent_pb_free(&b);
}

/* ---- bad input ---- */

TEST(export_of_a_bad_file_fails_cleanly)
{
	char trace[512], err[256];
	struct rb_trace t;
	make_trace(trace, sizeof(trace));
	/* A torn file does not open: the command names it and stops (export-check.sh). */
	size_t n = 0;
	char *data = slurp(trace, &n);
	if (!CHECK(data != NULL))
		return;
	char torn[600];
	snprintf(torn, sizeof(torn), "%s.torn", trace);
	FILE *f = fopen(torn, "wb");
	if (CHECK(f != NULL)) {
		fwrite(data, 1, n / 2, f);
		fclose(f);
	}
	CHECK(rb_trace_open(torn, &t, err, sizeof(err)) != 0);
	free(data);

	/* A ring whose shape does not hold together (its end past its size): every export
	 * says so instead of reading past the ring. */
	static const export_fn fns[] = { agent_export_chrome, agent_export_folded,
					 agent_export_perfetto };
	for (size_t i = 0; i < 3; i++) {
		if (!CHECK(rb_trace_open(trace, &t, err, sizeof(err)) == 0))
			return;
		struct agent_symbols s;
		CHECK_EQ_INT(agent_symbols_open(&s, &t), 0);
		t.threads[1].view.end = t.threads[1].view.nslots;
		FILE *out = fopen("/dev/null", "w");
		if (CHECK(out != NULL)) {
			CHECK_EQ_INT(fns[i](out, &t, &s), -EINVAL);
			fclose(out);
		}
		agent_symbols_close(&s);
		rb_trace_close(&t);
	}
}
