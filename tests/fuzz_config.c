/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the settings parser (agent_config_parse, agent/config.h) on arbitrary
 * bytes, the file both jittd and every traced app read before main(). Checked besides the
 * sanitizers:
 *   - a failed parse says so ("line N: ..." in err) and leaves the settings as they were,
 *     byte for byte (nothing half-applied), also with an error buffer too small for the
 *     message;
 *   - a parse that succeeds gives settings within the documented ranges, NUL-terminated
 *     paths, and is idempotent: the same text over its own result changes nothing.
 */
#include "agent/config.h"
#include "agent/log.h"
#include "tests/fuzz_common.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_valid(const struct agent_config *c)
{
	FUZZ_CHECK(memchr(c->data_dir, '\0', sizeof(c->data_dir)) != NULL);
	FUZZ_CHECK(memchr(c->run_dir, '\0', sizeof(c->run_dir)) != NULL);
	/* The ranges of agent/config.c's table, which are the Kconfig ones. */
	FUZZ_CHECK(c->hang_ms >= 50 && c->hang_ms <= 60000);
	FUZZ_CHECK(c->jank_frames >= 1 && c->jank_frames <= 1000);
	FUZZ_CHECK(c->frame_budget_us >= 1000 && c->frame_budget_us <= 10000000);
	FUZZ_CHECK(c->cooldown_ms <= 86400000);
	FUZZ_CHECK(c->jank_normal_pct == 0 ||
		   (c->jank_normal_pct > 100 && c->jank_normal_pct <= 10000));
	FUZZ_CHECK(c->jank_warmup_frames <= 100000);
	FUZZ_CHECK(c->cooldown_preempt_pct == 0 ||
		   (c->cooldown_preempt_pct > 100 && c->cooldown_preempt_pct <= 10000));
	FUZZ_CHECK(c->max_traces >= 1 && c->max_traces <= 10000);
	FUZZ_CHECK(c->max_trace_mb >= 1 && c->max_trace_mb <= 100000);
	FUZZ_CHECK(c->max_threads >= 1 && c->max_threads <= 64);
	FUZZ_CHECK(c->keep_traces == 0 || c->keep_traces == 1);
	FUZZ_CHECK(c->system_uid >= -1 && c->system_uid <= 2147483647);
	FUZZ_CHECK(c->log_level >= AGENT_LOG_ERROR && c->log_level <= AGENT_LOG_DEBUG);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct agent_config c, before;
	char err[256] = "", tiny[6];
	agent_config_defaults(&c);
	memcpy(&before, &c, sizeof(c));
	int e = agent_config_parse(&c, text, size, err, sizeof(err));
	FUZZ_CHECK(e == 0 || e == -EINVAL);
	if (e) {
		FUZZ_CHECK(memcmp(&before, &c, sizeof(c)) == 0);
		FUZZ_CHECK(strncmp(err, "line ", 5) == 0);
		/* The same failure with room for five bytes of message: cut, terminated. */
		memset(tiny, 'x', sizeof(tiny));
		FUZZ_CHECK(agent_config_parse(&c, text, size, tiny, sizeof(tiny)) == e);
		FUZZ_CHECK(memchr(tiny, '\0', sizeof(tiny)) != NULL);
		FUZZ_CHECK(memcmp(&before, &c, sizeof(c)) == 0);
		return 0;
	}
	check_valid(&c);
	struct agent_config again;
	memcpy(&again, &c, sizeof(c));
	FUZZ_CHECK(agent_config_parse(&again, text, size, err, sizeof(err)) == 0);
	FUZZ_CHECK(memcmp(&again, &c, sizeof(c)) == 0);
	return 0;
}
