/* SPDX-License-Identifier: MIT */
/* The levelled logger of agent/log.h. */
#include "agent/log.h"

#include <stdbool.h>
#include "agent/escape.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#define LOG __attribute__((no_instrument_function))

static const char *const level_names[] = { "error", "warn", "info", "debug" };
static int log_level = AGENT_LOG_INFO;
static int log_syslog;

LOG bool agent_log_enabled(int level)
{
	return level <= log_level;
}

LOG void agent_log_open(const char *ident, int use_syslog, int level)
{
	log_level = level;
	log_syslog = use_syslog;
	if (use_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

LOG void agent_log(int level, const char *fmt, ...)
{
	if (level > log_level)
		return;
	char raw[512], line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* Names in a message come from files and requests others wrote: no byte of theirs may
	 * end the line early, forge another or drive the terminal (agent/escape.h). */
	agent_escape(line, sizeof(line), raw);
	if (log_syslog) {
		static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
		syslog(prio[level], "%s", line);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	/* One write per line, so lines of several threads do not interleave. */
	fprintf(stderr, "%02d:%02d:%02d.%03ld %-5s %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000000, level_names[level], line);
}

LOG int agent_log_level_parse(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, level_names[i]))
			return i;
	return -EINVAL;
}
