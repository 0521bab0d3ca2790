/* SPDX-License-Identifier: MIT */
/*
 * Starts the runtime before main() (CONFIG_AGENT_AUTO_INIT), so linking libjitt is all an
 * app needs; its settings come from the config file. A separate object, so the unit tests
 * (and programs that call jitt_init themselves) can leave it out.
 */
#include "agent/jitt.h"
#include "agent/runtime/runtime.h"

#ifdef CONFIG_AGENT_AUTO_INIT
/* Not static: libjitt.ldflags names it (-u), so a link from libjitt.a keeps this object,
 * which nothing else refers to. */
void jitt_auto_init(void);
RT __attribute__((constructor)) void jitt_auto_init(void)
{
	(void)jitt_init(NULL); /* failures are logged; the app runs on untraced */
}

RT __attribute__((destructor)) static void jitt_auto_shutdown(void)
{
	agent_exit();
}
#endif
