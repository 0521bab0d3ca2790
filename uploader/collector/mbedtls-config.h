/* SPDX-License-Identifier: MIT */
/*
 * uploader/collector/mbedtls-config.h - mbedtls 2.28 for the collector built for a board
 * (make guest-collector): mbedtls' own default configuration, server side included, plus
 * the pthread locking Debian's libmbedtls builds with, which the host's collector relies
 * on (its connection threads share one CTR_DRBG: coll_server.c). board/common/mbedtls.sh
 * installs this as include/mbedtls/config.h and keeps mbedtls' own as config-default.h,
 * which is included here after the additions (its guard is MBEDTLS_CONFIG_H, so it must
 * not be defined here; its end includes check_config.h with them).
 */
#ifndef JITT_COLLECTOR_MBEDTLS_CONFIG_H
#define JITT_COLLECTOR_MBEDTLS_CONFIG_H

#define MBEDTLS_THREADING_C
#define MBEDTLS_THREADING_PTHREAD

#include "mbedtls/config-default.h"

#endif
