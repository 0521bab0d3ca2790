/* SPDX-License-Identifier: MIT */
/*
 * tests/test_report.c - the report (uploader/report.h, docs/report-format.md): only what is
 * on the allow-list leaves, identifiers planted in a summary never reach the bytes, the
 * envelope's formats, the 4 KiB bound with all 10 contexts of a deep summary, and bad
 * input refused.
 */
#include "tests/harness.h"
#include "uploader/json.h"
#include "uploader/report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY "6f1c1f0e-3b7a-4c55-9a51-0d8d2b4b7e21"
#define ID  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const struct up_report_params params = {
	.key = KEY,
	.id = ID,
	.period = 683,
	.unix_s = 1795431845, /* 2026-11-23 11:04:05 UTC */
	.thread_names = "main ui render",
	.reasons = "hang jank slow-frame slow-start",
};

/* A summary with identifiers planted where a careless copy would carry them. */
static const char planted[] =
	"{\"schema\":\"jitt.summary\",\"version\":2,\"reason\":\"mail bob@corp.example now\","
	"\"detector\":\"explicit\",\"thread\":\"alice@example.com\","
	"\"hostname\":\"joe-laptop.local\",\"pid\":4242,\"path\":\"/home/alice/trace.jtr\","
	"\"serial\":\"R58M123ABCD\",\"ip\":\"192.168.1.23\","
	"\"app\":{\"build_id\":\"F139AD13\",\"name\":\"/home/alice/app/bin/jank-sim\","
	"\"path\":\"/home/alice/app\"},"
	"\"trace\":{\"threads\":3,\"records\":100,\"contexts\":5,\"ns\":1000,\"tid\":777},"
	"\"modules\":[[\"f139ad13\",\"jank-sim\"],[\"abcdef01\",\"/home/alice/app/libfoo.so\"]],"
	"\"functions\":[[0,4096,\"main\"],[1,8192,\"foo_work\"],[-1,0,\"(entered before)\"]],"
	"\"window\":{\"kind\":\"frame\",\"ns\":900,\"blocked_ns\":800,\"anomaly_marked\":true,"
	"\"start\":\"2026-11-23T11:04:05.123\"},"
	"\"frames\":{\"count\":3,\"median_ns\":1,\"p99_ns\":2,\"budget_ns\":3,\"over_budget\":1,"
	"\"mean_ns\":1,\"sigma_ns\":0,\"this_ns\":900,\"outlier\":true},"
	"\"top_window\":[[1,500,1,0,0]],\"top_trace\":[[0,700,2,0,0]],"
	"\"chains\":[[[0,900,100,0,0],[1,800,800,0,0,3]]],"
	"\"contexts\":[{\"cost_ns\":800,\"path\":[0,1],\"self_ns\":[100,800],\"base_ns\":[0,0]},"
	"{\"cost_ns\":5,\"from\":[0,1],\"path\":[2],\"self_ns\":[5],\"base_ns\":[0],"
	"\"note\":\"aa:bb:cc:dd:ee:ff\"}],"
	"\"blocked_on\":[{\"thread\":\"joe-laptop\",\"blocked_ns\":800,\"object\":\"0x7ffd1234abcd\","
	"\"waiter\":0,\"wait_ns\":700,\"still_waiting\":false,\"woken_by\":\"wifi aa:bb:cc:dd:ee:ff\","
	"\"top\":[[1,600,1,0,0]],\"chain\":[[1,600,600,0,0]]},"
	"{\"thread\":\"ui\",\"blocked_ns\":10,\"object\":\"0x7ffd1234abcd\",\"waiter\":0,"
	"\"wait_ns\":5,\"still_waiting\":true,\"woken_by\":\"alice@example.com\",\"top\":[],"
	"\"chain\":[]}]}";

static int build(const char *s, size_t len, const struct up_report_params *p, char *out,
		 size_t *n, char *err)
{
	return up_report_build(s, len, p, out, UP_REPORT_MAX, n, err, 256);
}

/* The output parses as strict JSON, schema jitt.report, its top level the envelope. */
static int valid(const char *out, size_t n)
{
	struct json_doc d;
	char err[256];
	int ok = json_parse(&d, out, n, err, sizeof(err)) == 0 && json_type(&d, 0) == JSON_OBJECT &&
		 json_len(&d, 0) == 10 && json_str(&d, json_get(&d, 0, "schema"), NULL) &&
		 !strcmp(json_str(&d, json_get(&d, 0, "schema"), NULL), "jitt.report");
	if (!ok)
		printf("    not a valid report: %s\n", err);
	json_free(&d);
	return ok;
}

TEST(report_copies_only_the_allow_list_and_rewrites_identifiers)
{
	char out[UP_REPORT_MAX + 1], err[256] = "";
	size_t n;
	if (!CHECK((build(planted, strlen(planted), &params, out, &n, err)) == 0)) {
		printf("    %s\n", err);
		return;
	}
	out[n] = '\0';
	CHECK(valid(out, n));
	static const char *const never[] = {
		"alice", "example.com", "joe-laptop", "/home", "0x7ffd",
		"7ffd1234abcd", "bob@", "corp.example", "mail", "aa:bb:cc", "R58M123", "192.168",
		"hostname", "\"pid\"", "\"tid\"", "\"start\"", "11:04", "\"note\"",
		"serial", "wifi",
	};
	for (size_t i = 0; i < sizeof(never) / sizeof(*never); i++)
		if (never[i] && strstr(out, never[i]))
			test_fail(__FILE__, __LINE__, "\"%s\" reached the report: %s", never[i], out);
	CHECK(strstr(out, "\"hour\":\"2026-11-23T11\"") != NULL);
	CHECK(strstr(out, "\"app\":{\"build_id\":\"f139ad13\",\"name\":\"jank-sim\"}") != NULL);
	CHECK(strstr(out, "[\"abcdef01\",\"libfoo.so\"]") != NULL); /* the basename only */
	CHECK(strstr(out, "\"reason\":\"explicit\"") != NULL);
	CHECK(strstr(out, "\"detector\":\"explicit\"") != NULL);
	CHECK(strstr(out, "\"summary\":{\"thread\":\"thread-1\"") != NULL);
	/* joe-laptop is thread-2, ui passes, alice is thread-1 again; one object */
	CHECK(strstr(out, "{\"thread\":\"thread-2\",\"blocked_ns\":800,\"object\":\"object-1\"") !=
	      NULL);
	CHECK(strstr(out, "\"woken_by\":\"thread-3\"") != NULL);
	CHECK(strstr(out, "{\"thread\":\"ui\",\"blocked_ns\":10,\"object\":\"object-1\"") != NULL);
	CHECK(strstr(out, "\"woken_by\":\"thread-1\"") != NULL);
	CHECK(strstr(out, "\"from\":[0,1]") != NULL);
	CHECK(strstr(out, "[0,800,800,0,0,3]") != NULL); /* foo_work, named first */
	CHECK(strstr(out, "\"trace\":{\"threads\":3,\"records\":100,\"contexts\":5,\"ns\":1000}") !=
	      NULL);
}

/* Sampled time: how many records were untimed goes with the report (their times are
 * estimates); a negative or non-integer count is refused. */
TEST(report_carries_how_many_records_were_untimed)
{
	char s[sizeof(planted) + 64], out[UP_REPORT_MAX + 1], err[256] = "";
	size_t n;
	static const char from[] = "\"ns\":1000,\"tid\":777}";
	const char *at = strstr(planted, from);
	static const char *const forms[] = { "\"ns\":1000,\"untimed\":92,\"tid\":777}",
					     "\"ns\":1000,\"untimed\":-1}",
					     "\"ns\":1000,\"untimed\":\"92\"}" };
	for (int i = 0; i < 3; i++) {
		int len = snprintf(s, sizeof(s), "%.*s%s%s", (int)(at - planted), planted, forms[i],
				   at + strlen(from));
		int e = build(s, (size_t)len, &params, out, &n, err);
		if (i == 0) {
			CHECK_EQ_INT(e, 0);
			if (e)
				continue;
			out[n] = '\0';
			CHECK(strstr(out, "\"records\":100,\"contexts\":5,\"ns\":1000,\"untimed\":92}") !=
			      NULL);
		} else {
			CHECK_EQ_INT(e, -EINVAL);
			CHECK(strstr(err, "\"untimed\" should be a non-negative integer") != NULL);
		}
	}
}

TEST(report_reasons_detectors_and_names)
{
	char s[sizeof(planted) + 64], out[UP_REPORT_MAX + 1], err[256] = "";
	size_t n;
	/* the detector's own reason: its name before the ':' passes, the rest does not */
	const char *at = strstr(planted, "mail bob@corp.example now");
	snprintf(s, sizeof(s), "%.*sjank: 3 frames over 16667 us%s", (int)(at - planted), planted,
		 at + strlen("mail bob@corp.example now"));
	if (CHECK((build(s, strlen(s), &params, out, &n, err)) == 0)) {
		out[n] = '\0';
		CHECK(strstr(out, "\"reason\":\"jank\"") != NULL);
		CHECK(strstr(out, "16667") == NULL);
	}
	/* an unknown detector is "unknown" */
	at = strstr(planted, "\"detector\":\"explicit\"");
	snprintf(s, sizeof(s), "%.*s\"detector\":\"alice\"%s", (int)(at - planted), planted,
		 at + strlen("\"detector\":\"explicit\""));
	if (CHECK((build(s, strlen(s), &params, out, &n, err)) == 0)) {
		out[n] = '\0';
		CHECK(strstr(out, "\"detector\":\"unknown\"") != NULL);
	}
	/* a long name with escapes and non-ASCII: plain ASCII, cut at 64 with "..." */
	char name[200];
	memset(name, 'x', 150);
	name[150] = '\0';
	snprintf(s, sizeof(s), "%s", planted);
	char *f = strstr(s, "foo_work");
	char big[sizeof(planted) + 256];
	snprintf(big, sizeof(big), "%.*s\\u00e9\\u001b[2J\\ud83d\\ude00%s%s", (int)(f - s), s, name,
		 f + strlen("foo_work"));
	if (CHECK((build(big, strlen(big), &params, out, &n, err)) == 0)) {
		out[n] = '\0';
		CHECK(valid(out, n));
		CHECK(strstr(out, "\\u00e9\\u001b[2J\\ud83d\\ude00xxx") != NULL);
		CHECK(strstr(out, "xxx...\"") != NULL);
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] >= 0x7f)
				test_fail(__FILE__, __LINE__, "byte 0x%02x at %zu", out[i], i);
	}
}

/* A deep summary as the sim app's: 10 contexts 11 deep under one frame, 38 functions of
 * 20-byte names named (the sim app's compute jank names 53 of 12 to 20 bytes); the report
 * keeps all 10 within 4 KiB. */
static size_t deep_summary(char *s, size_t size)
{
	size_t o = 0;
#define W(...) (o += (size_t)snprintf(s + o, o < size ? size - o : 0, __VA_ARGS__))
	W("{\"schema\":\"jitt.summary\",\"version\":2,\"reason\":\"jank: 3 frames\","
	  "\"detector\":\"jank\",\"thread\":\"ui\",\"app\":{\"build_id\":\"f139ad13adb9fa8233409a"
	  "a48fd37beb0e567bda\",\"name\":\"jank-sim\"},\"trace\":{\"threads\":3,\"records\":528305,"
	  "\"contexts\":1845,\"ns\":747302186},\"modules\":[[\"f139ad13adb9fa8233409aa48fd37beb0"
	  "e567bda\",\"jank-sim\"]],\"functions\":[");
	for (int f = 0; f < 60; f++)
		W("%s[0,%d,\"measure_child_%06d\"]", f ? "," : "", 4200000 + 272 * f, f);
	W("],\"window\":{\"kind\":\"frame\",\"ns\":113299022,\"blocked_ns\":0,\"anomaly_marked\":"
	  "true},\"frames\":{\"count\":25,\"median_ns\":5696674,\"p99_ns\":118771702,\"budget_ns\":"
	  "16666999,\"over_budget\":3,\"mean_ns\":14599764,\"sigma_ns\":30710290,\"this_ns\":"
	  "113299022,\"outlier\":true},\"top_window\":[");
	for (int i = 0; i < 10; i++)
		W("%s[%d,%d,%d,0,0]", i ? "," : "", 10 + i, 106031889 / (i + 1), 80 + i);
	W("],\"top_trace\":[");
	for (int i = 0; i < 3; i++)
		W("%s[%d,%d,%d,0,0]", i ? "," : "", 50 + i, 327261752 / (i + 1), 3 + i);
	W("],\"chains\":[[");
	for (int i = 0; i < 11; i++)
		W("%s[%d,%d,%d,0,0]", i ? "," : "", i, 113298802 - 1000 * i, 1873 + i);
	W("]],\"contexts\":[{\"cost_ns\":106033641,\"path\":[0,1,2,3,4,5,6,7,8,9,10],"
	  "\"self_ns\":[1873,931,1011,1633,3446,2043,2073,9928,6482,1192,106031889],"
	  "\"base_ns\":[984,3038,782,1108,2791,1905,1954,11383,4916,0,0]}");
	for (int c = 1; c < 10; c++) {
		W(",{\"cost_ns\":%d,\"from\":[0,%d],\"path\":[", 4141471 / c, 2 + c % 5);
		for (int k = 0; k < 6; k++)
			W("%s%d", k ? "," : "", 11 + (c * 3 + k) % 24);
		W("],\"self_ns\":[1733,1683,591,2083,3827,4143058],\"base_ns\":[1687,1667,474,2005,"
		  "3726,1383]}");
	}
	W("],\"blocked_on\":[]}");
#undef W
	return o;
}

TEST(report_of_a_deep_summary_keeps_10_contexts_within_4_kib_and_is_deterministic)
{
	char s[8192], out[UP_REPORT_MAX], again[UP_REPORT_MAX], err[256] = "";
	size_t len = deep_summary(s, sizeof(s)), n, m;
	CHECK(len < sizeof(s));
	if (!CHECK((build(s, len, &params, out, &n, err)) == 0)) {
		printf("    %s\n", err);
		return;
	}
	printf("    report of a summary of %zu bytes: %zu bytes\n", len, n);
	CHECK(n <= UP_REPORT_MAX);
	CHECK(valid(out, n));
	struct json_doc d;
	if (CHECK((json_parse(&d, out, n, err, sizeof(err))) == 0))
		CHECK_EQ_U64(json_len(&d, json_get(&d, json_get(&d, 0, "summary"), "contexts")), 10);
	json_free(&d);
	CHECK_EQ_INT(build(s, len, &params, again, &m, err), 0);
	CHECK(m == n && memcmp(out, again, n) == 0);
	/* a small output buffer: smaller, still whole */
	CHECK_EQ_INT(up_report_build(s, len, &params, out, 2000, &n, err, sizeof(err)), 0);
	CHECK(n <= 2000 && valid(out, n));
	CHECK(strstr(out, "\"contexts_left_out\":") != NULL);
}

TEST(report_bad_input_is_einval)
{
	char out[UP_REPORT_MAX], err[256];
	size_t n;
	static const char *const bad[] = {
		"", "{", "[]", "{\"schema\":\"jitt.summary\",\"version\":1}",
		"{\"schema\":\"jitt.summary\",\"version\":2}",
		"{\"schema\":\"other\",\"version\":2,\"app\":{\"build_id\":\"ab\",\"name\":\"x\"}}",
		"{\"schema\":\"jitt.summary\",\"version\":2,\"app\":{\"build_id\":\"zz\",\"name\":\"x\"}}",
		"{\"schema\":\"jitt.summary\",\"version\":2,\"app\":{\"build_id\":\"ab\",\"name\":\"x\"}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		if (build(bad[i], strlen(bad[i]), &params, out, &n, err) != -EINVAL)
			test_fail(__FILE__, __LINE__, "case %zu accepted", i);
	struct up_report_params p = params;
	p.key = "6F1C1F0E-3B7A-4C55-9A51-0D8D2B4B7E21";
	CHECK_EQ_INT(build(planted, strlen(planted), &p, out, &n, err), -EINVAL);
	p = params;
	p.id = "0123";
	CHECK_EQ_INT(build(planted, strlen(planted), &p, out, &n, err), -EINVAL);
	p = params;
	p.unix_s = -1;
	CHECK_EQ_INT(build(planted, strlen(planted), &p, out, &n, err), -EINVAL);
	/* every prefix of a good summary: refused or a valid report, never a crash */
	for (size_t cut = 0; cut < strlen(planted); cut++) {
		int e = build(planted, cut, &params, out, &n, err);
		if (e != -EINVAL && !(e == 0 && valid(out, n)))
			test_fail(__FILE__, __LINE__, "prefix %zu: %d", cut, e);
	}
}

TEST(report_app_gives_the_build_id_and_basename)
{
	char id[129], name[64];
	CHECK_EQ_INT(up_report_app(planted, strlen(planted), id, sizeof(id), name, sizeof(name)), 0);
	CHECK(strcmp(id, "f139ad13") == 0);
	CHECK(strcmp(name, "jank-sim") == 0);
	CHECK_EQ_INT(up_report_app("{}", 2, id, sizeof(id), name, sizeof(name)), -EINVAL);
	CHECK_EQ_INT(up_report_app(planted, strlen(planted), id, 4, name, sizeof(name)), -EINVAL);
}

/* A version 3 summary (the scheduling figures): the window split into running, preempted
 * and blocked time, the scheduling source, migrations and time per CPU class, preempted_ns
 * as the sixth element of every entry and link, a many-calls link's calls as the seventh.
 * Unknown members planted in the window and in sched. */
static const char v3[] =
	"{\"schema\":\"jitt.summary\",\"version\":3,\"reason\":\"jank: 2 frames over\","
	"\"detector\":\"jank\",\"thread\":\"ui\","
	"\"app\":{\"build_id\":\"f139ad13\",\"name\":\"jank-sim\"},"
	"\"trace\":{\"threads\":2,\"records\":100,\"contexts\":5,\"ns\":1000},"
	"\"modules\":[[\"f139ad13\",\"jank-sim\"]],"
	"\"functions\":[[0,4096,\"main\"],[0,8192,\"layout\"]],"
	"\"window\":{\"kind\":\"frame\",\"ns\":900,\"running_ns\":500,\"preempted_ns\":300,"
	"\"blocked_ns\":100,\"anomaly_marked\":true,\"cpu\":\"cpu7 serial R58M123\","
	"\"sched\":{\"source\":\"perf\",\"migrations\":4,\"cpu_ns\":{\"big\":200,\"little\":300},"
	"\"host\":\"joe-laptop\"}},"
	"\"frames\":{\"count\":3,\"median_ns\":1,\"p99_ns\":2,\"budget_ns\":3,\"over_budget\":1,"
	"\"mean_ns\":1,\"sigma_ns\":0,\"this_ns\":900,\"outlier\":true},"
	"\"top_window\":[[1,400,1,0,0,250]],\"top_trace\":[[0,700,2,0,0,40]],"
	"\"chains\":[[[0,900,100,0,0,50],[1,800,400,100,0,250,12]]],"
	"\"contexts\":[{\"cost_ns\":400,\"path\":[0,1],\"self_ns\":[100,400],\"base_ns\":[0,0]}],"
	"\"blocked_on\":[{\"thread\":\"ui\",\"blocked_ns\":100,\"object\":\"0x7ffd1234abcd\","
	"\"waiter\":1,\"wait_ns\":100,\"still_waiting\":false,\"woken_by\":null,"
	"\"top\":[[1,400,1,0,0,7]],\"chain\":[[1,100,0,100,0,0]]}]}";

/* v3 with `from` replaced by `to` (once), into s. */
static size_t v3_with(char *s, size_t size, const char *from, const char *to)
{
	const char *at = strstr(v3, from);
	if (!at)
		return 0;
	return (size_t)snprintf(s, size, "%.*s%s%s", (int)(at - v3), v3, to, at + strlen(from));
}

TEST(report_of_a_v3_summary_is_version_2_with_the_scheduling_figures)
{
	char out[UP_REPORT_MAX + 1], err[256] = "";
	size_t n;
	if (!CHECK((build(v3, strlen(v3), &params, out, &n, err)) == 0)) {
		printf("    %s\n", err);
		return;
	}
	out[n] = '\0';
	CHECK(valid(out, n));
	CHECK(strncmp(out, "{\"schema\":\"jitt.report\",\"version\":2,", 36) == 0);
	/* the window in the summary's order, sched inside it, cpu_ns little, middle, big */
	CHECK(strstr(out, "\"window\":{\"kind\":\"frame\",\"ns\":900,\"running_ns\":500,"
			  "\"preempted_ns\":300,\"blocked_ns\":100,\"anomaly_marked\":true,"
			  "\"sched\":{\"source\":\"perf\",\"migrations\":4,"
			  "\"cpu_ns\":{\"little\":300,\"big\":200}}}") != NULL);
	CHECK(strstr(out, "\"top_window\":[[0,400,1,0,0,250]]") != NULL);
	CHECK(strstr(out, "\"top_trace\":[[1,700,2,0,0,40]]") != NULL);
	CHECK(strstr(out, "\"chains\":[[[1,900,100,0,0,50],[0,800,400,100,0,250,12]]]") != NULL);
	CHECK(strstr(out, "\"top\":[[0,400,1,0,0,7]],\"chain\":[[0,100,0,100,0,0]]") != NULL);
	static const char *const never[] = { "serial", "R58M", "cpu7", "joe-laptop", "host",
					     "0x7ffd", "\"cpu\"" };
	for (size_t i = 0; i < sizeof(never) / sizeof(*never); i++)
		if (strstr(out, never[i]))
			test_fail(__FILE__, __LINE__, "\"%s\" reached the report: %s", never[i], out);

	/* schedstat and none: no migrations, no cpu_ns, none written */
	char s[sizeof(v3) + 64];
	size_t len = v3_with(s, sizeof(s), "\"source\":\"perf\",\"migrations\":4,"
					   "\"cpu_ns\":{\"big\":200,\"little\":300},",
			     "\"source\":\"schedstat\",");
	if (CHECK((build(s, len, &params, out, &n, err)) == 0)) {
		out[n] = '\0';
		CHECK(strstr(out, "\"sched\":{\"source\":\"schedstat\"}}") != NULL);
	}
	len = v3_with(s, sizeof(s), "\"source\":\"perf\"", "\"source\":\"none\"");
	if (CHECK((build(s, len, &params, out, &n, err)) == 0)) {
		out[n] = '\0';
		CHECK(strstr(out, "\"sched\":{\"source\":\"none\",\"migrations\":4,") != NULL);
	}
	/* a small buffer: the lists go first, the window stays whole */
	if (CHECK(up_report_build(v3, strlen(v3), &params, out, 1000, &n, err, sizeof(err)) == 0)) {
		out[n] = '\0';
		printf("    a version 3 report cut to 1000 bytes: %zu bytes\n", n);
		CHECK(strstr(out, "\"cpu_ns\":{\"little\":300,\"big\":200}}}") != NULL);
	}
	/* up_report_app reads version 3 too */
	char id[129], name[64];
	CHECK_EQ_INT(up_report_app(v3, strlen(v3), id, sizeof(id), name, sizeof(name)), 0);
	CHECK(strcmp(id, "f139ad13") == 0);
	/* a version 2 summary still gives a version 1 report */
	if (CHECK((build(planted, strlen(planted), &params, out, &n, err)) == 0)) {
		out[n] = '\0';
		CHECK(strncmp(out, "{\"schema\":\"jitt.report\",\"version\":1,", 36) == 0);
		CHECK(strstr(out, "running_ns") == NULL && strstr(out, "sched") == NULL);
	}
}

/* Each malformed version 3 member is refused, and the message says what. */
TEST(report_malformed_v3_members_are_einval_with_a_clear_error)
{
	static const struct {
		const char *from, *to, *says;
	} cases[] = {
		{ "\"source\":\"perf\"", "\"source\":\"cfs\"", "scheduling source" },
		{ "\"source\":\"perf\"", "\"source\":\"PERF\"", "scheduling source" },
		{ "\"source\":\"perf\"", "\"source\":\"perf\\u0000x\"", "scheduling source" },
		{ "\"source\":\"perf\"", "\"source\":7", "scheduling source" },
		{ "\"source\":\"perf\",", "", "scheduling source" },
		{ ",\"sched\":{", ",\"schedule\":{", "\"sched\" should be an object" },
		{ "\"cpu_ns\":{\"big\"", "\"cpu_ns\":{\"cpu7\"", "little, middle and big" },
		{ "\"cpu_ns\":{\"big\"", "\"cpu_ns\":{\"little\":1,\"big\"",
		  "little, middle and big" },
		{ "\"cpu_ns\":{\"big\":200", "\"cpu_ns\":{\"big\":-200", "cpu_ns.big" },
		{ "\"cpu_ns\":{\"big\":200", "\"cpu_ns\":{\"big\":2.5", "cpu_ns.big" },
		{ "\"cpu_ns\":{\"big\":200", "\"cpu_ns\":{\"big\":\"200\"", "cpu_ns.big" },
		{ "\"cpu_ns\":{\"big\":200,\"little\":300}", "\"cpu_ns\":[200,300]",
		  "\"cpu_ns\" should be an object" },
		{ "\"migrations\":4", "\"migrations\":-4", "\"migrations\"" },
		{ "\"migrations\":4", "\"migrations\":4.5", "\"migrations\"" },
		{ "\"running_ns\":500", "\"running_ns\":-500", "\"running_ns\"" },
		{ "\"running_ns\":500", "\"running_ns\":500.5", "\"running_ns\"" },
		{ "\"running_ns\":500,", "", "\"running_ns\"" },
		{ "\"preempted_ns\":300", "\"preempted_ns\":-1", "\"preempted_ns\"" },
		{ "\"preempted_ns\":300", "\"preempted_ns\":null", "\"preempted_ns\"" },
		{ "[[1,400,1,0,0,250]]", "[[1,400,1,0,0,-250]]", "preempted_ns" },
		{ "[[1,400,1,0,0,250]]", "[[1,400,1,0,0,2.5]]", "preempted_ns" },
		{ "[[1,400,1,0,0,250]]", "[[1,400,1,0,0]]", "array of 6 to 6" },
		{ "[[0,700,2,0,0,40]]", "[[0,700,2,0,0,40,1]]", "array of 6 to 6" },
		{ "[1,800,400,100,0,250,12]", "[1,800,400,100,0,250,-12]", "calls" },
		{ "[1,800,400,100,0,250,12]", "[1,800,400,100,0,250,12,1]", "array of 6 to 7" },
		{ "[0,900,100,0,0,50]", "[0,900,100,0,0]", "array of 6 to 7" },
		{ "\"top\":[[1,400,1,0,0,7]]", "\"top\":[[1,400,1,0,0,-7]]", "preempted_ns" },
		{ "\"version\":3", "\"version\":4", "version is not 2 or 3" },
		{ "\"version\":3", "\"version\":1", "version is not 2 or 3" },
	};
	char s[sizeof(v3) + 64], out[UP_REPORT_MAX], err[256];
	size_t n;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		size_t len = v3_with(s, sizeof(s), cases[i].from, cases[i].to);
		if (!len) {
			test_fail(__FILE__, __LINE__, "case %zu: \"%s\" not in the summary", i,
				  cases[i].from);
			continue;
		}
		err[0] = '\0';
		int e = build(s, len, &params, out, &n, err);
		if (e != -EINVAL)
			test_fail(__FILE__, __LINE__, "case %zu (%s): %d, not -EINVAL", i, cases[i].to, e);
		else if (!strstr(err, cases[i].says))
			test_fail(__FILE__, __LINE__, "case %zu (%s): the error \"%s\" does not say %s",
				  i, cases[i].to, err, cases[i].says);
	}
	/* every prefix of the v3 summary: refused or a valid report, never a crash */
	for (size_t cut = 0; cut < strlen(v3); cut++) {
		int e = build(v3, cut, &params, out, &n, err);
		if (e != -EINVAL && !(e == 0 && valid(out, n)))
			test_fail(__FILE__, __LINE__, "prefix %zu: %d", cut, e);
	}
}

/* A stripped program's summary (no names on the device) and a function outside every
 * module: the report carries each module's whole build-id and offsets inside it, so a
 * server can name them later, and never a process address, as offset or as "?0x" name. */
TEST(report_of_a_stripped_program_carries_build_ids_and_offsets_only)
{
	char s[sizeof(planted) + 256], out[UP_REPORT_MAX + 1], err[256] = "";
	const char *old = "\"functions\":[[0,4096,\"main\"],[1,8192,\"foo_work\"],"
			  "[-1,0,\"(entered before)\"]]";
	const char *stripped = "\"functions\":[[0,4096,\"\"],[1,8192,\"\"],"
			       "[-1,140724909080576,\"?0x7ffc12340000\"]]";
	const char *at = strstr(planted, old);
	if (!CHECK(at != NULL))
		return;
	snprintf(s, sizeof(s), "%.*s%s%s", (int)(at - planted), planted, stripped,
		 at + strlen(old));
	size_t n;
	if (!CHECK(build(s, strlen(s), &params, out, &n, err) == 0)) {
		printf("    %s\n", err);
		return;
	}
	out[n] = '\0';
	CHECK(valid(out, n));
	/* Renumbered in order of use: foo_work's module first. */
	CHECK(strstr(out, "\"modules\":[[\"abcdef01\",\"libfoo.so\"],[\"f139ad13\",\"jank-sim\"]],"
			  "\"functions\":[[0,8192,\"\"],[1,4096,\"\"],[-1,0,\"\"]]") != NULL);
	if (strstr(out, "140724909080576") || strstr(out, "7ffc1234"))
		test_fail(__FILE__, __LINE__, "a process address reached the report: %s", out);
}
