/* SPDX-License-Identifier: MIT */
/* uftrace records from outside: `uftrace record` preloads its libmcount, whose mcount (for
 * -pg builds) or __cyg_profile_func_enter/exit (for -finstrument-functions builds)
 * replace glibc's empty ones. Nothing to start here; the records are counted from the data
 * files by `uftrace report` (tests/bench-peers.sh). */
#include "tests/peers.h"

#include <errno.h>

const char peers_tracer[] = "uftrace";

int peers_begin(void)
{
	return 0;
}

int64_t peers_records(void)
{
	return -1;
}

int peers_end(void)
{
	return 0;
}

int peers_persist(const char *dir, char *path, size_t size)
{
	(void)dir, (void)path, (void)size;
	return -ENOTSUP;
}
