/* SPDX-License-Identifier: MIT */
/*
 * LLVM XRay in flight-data-recorder mode. clang puts a sled (a few NOPs) at every entry and
 * exit of the functions built with -fxray-instrument; __xray_patch() rewrites them into
 * calls of the logging handler. FDR mode records into per-thread buffers only after
 * __xray_log_init_mode("xray-fdr", ...) and writes its log only when the program finalises
 * and flushes it: XRAY_OPTIONS' xray_mode alone records nothing (TOOLCHAIN.md).
 * Its options come from XRAY_FDR_OPTIONS (tests/bench-peers.sh sets the buffers large
 * enough for a whole repetition, and func_duration_threshold_us=0: by default FDR drops
 * calls shorter than 5 us, which is every call of Listing 1). The records are counted from
 * the log by `llvm-xray account`.
 */
#include "tests/peers.h"

#include <errno.h>

/* xray/xray_log_interface.h and xray/xray_interface.h are C++ only; their C ABI. */
enum { XRAY_LOG_INITIALIZED = 2, XRAY_LOG_FINALIZED = 4, XRAY_LOG_FLUSHED = 2 };
enum { XRAY_PATCHING_SUCCESS = 1 };
int __xray_log_select_mode(const char *mode);
int __xray_log_init_mode(const char *mode, const char *config);
int __xray_log_finalize(void);
int __xray_log_flushLog(void);
int __xray_patch(void);
int __xray_unpatch(void);

const char peers_tracer[] = "xray-fdr";

int peers_begin(void)
{
	/* Without selecting the mode first, clang 14's runtime answers the init with
	 * XRAY_LOG_UNINITIALIZED and FDR never starts (found by trying: the header does not
	 * say so). */
	if (__xray_log_select_mode("xray-fdr") != 0)
		return -ENOENT;
	if (__xray_log_init_mode("xray-fdr", "") != XRAY_LOG_INITIALIZED)
		return -EIO;
	return __xray_patch() == XRAY_PATCHING_SUCCESS ? 0 : -EIO;
}

int64_t peers_records(void)
{
	return -1;
}

int peers_end(void)
{
	__xray_unpatch();
	if (__xray_log_finalize() != XRAY_LOG_FINALIZED)
		return -EIO;
	return __xray_log_flushLog() == XRAY_LOG_FLUSHED ? 0 : -EIO;
}

int peers_persist(const char *dir, char *path, size_t size)
{
	(void)dir, (void)path, (void)size;
	return -ENOTSUP;
}
