/* SPDX-License-Identifier: MIT */
/*
 * hal/net.h - what kind of network the device is on.
 *
 * The uploader sends only on Wi-Fi (AppInsight section 5 made the same choice to spare
 * users' data plans). The answer comes from, in order:
 *   1. the override file (CONFIG_HAL_NET_OVERRIDE_FILE) a phone's connectivity service
 *      writes: it knows about metered Wi-Fi hotspots and VPNs, which routes cannot tell;
 *   2. the default route (IPv4 /proc/net/route, IPv6 /proc/net/ipv6_route; lowest metric
 *      wins) and its interface's type in /sys/class/net/<if>/.
 * Anything in doubt is HAL_NET_UNKNOWN, and unknown is never treated as Wi-Fi.
 */
#ifndef JITT_HAL_NET_H
#define JITT_HAL_NET_H

#include <net/if.h>

enum hal_net_state {
	HAL_NET_UNKNOWN, /* zero: a forgotten initialisation is the safe answer */
	HAL_NET_OFFLINE,
	HAL_NET_WIFI,
	HAL_NET_CELLULAR,
	HAL_NET_ETHERNET,
};

struct hal_net_info {
	enum hal_net_state state;
	char iface[IF_NAMESIZE]; /* the default route's interface, "" when none */
	char reason[192];	 /* how the state was found, or why it is unknown */
};

/* Always fills `info` (state UNKNOWN when in doubt) and returns 0. */
int hal_net_get(struct hal_net_info *info);

const char *hal_net_state_name(enum hal_net_state state);
/* "wifi", "cellular", "ethernet", "offline", "unknown" -> state. 0 or -EINVAL. */
int hal_net_state_parse(const char *word, enum hal_net_state *state);

#endif
