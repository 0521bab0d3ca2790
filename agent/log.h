/* SPDX-License-Identifier: MIT */
/*
 * agent/log.h - jittd's and the control thread's small levelled logger: one line per
 * event, to stderr (with a time and level) or to syslog. Libraries never print; the
 * runtime inside an app logs only what its config asks for, through this.
 */
#ifndef JITT_AGENT_LOG_H
#define JITT_AGENT_LOG_H

#include <stdbool.h>

enum agent_log_level { AGENT_LOG_ERROR, AGENT_LOG_WARN, AGENT_LOG_INFO, AGENT_LOG_DEBUG };

/* Where lines go: stderr (use_syslog 0) or syslog with ident; lines above level dropped. */
void agent_log_open(const char *ident, int use_syslog, int level);
void agent_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether lines of this level are written (what only they need can then be skipped). */
bool agent_log_enabled(int level);
/* "error", "warn", "info", "debug" -> level; -EINVAL for anything else. */
int agent_log_level_parse(const char *name);

#define log_err(...)  agent_log(AGENT_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) agent_log(AGENT_LOG_WARN, __VA_ARGS__)
#define log_info(...) agent_log(AGENT_LOG_INFO, __VA_ARGS__)
#define log_dbg(...)  agent_log(AGENT_LOG_DEBUG, __VA_ARGS__)

#endif
