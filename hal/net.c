/* SPDX-License-Identifier: MIT */
#include "net.h"
#include "fs.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Route flags, from <linux/route.h> (not included: the HAL builds against libc only). */
#define RTF_UP	   0x0001u
#define RTF_REJECT 0x0200u

/* ARPHRD_* interface types, from <linux/if_arp.h>. */
#define ARPHRD_ETHER 1
#define ARPHRD_PPP   512
#define ARPHRD_RAWIP 519 /* Qualcomm rmnet and other modems that carry bare IP */

static const char *const state_names[] = {
	[HAL_NET_UNKNOWN] = "unknown",	 [HAL_NET_OFFLINE] = "offline",	  [HAL_NET_WIFI] = "wifi",
	[HAL_NET_CELLULAR] = "cellular", [HAL_NET_ETHERNET] = "ethernet",
};

const char *hal_net_state_name(enum hal_net_state state)
{
	return state <= HAL_NET_ETHERNET ? state_names[state] : "?";
}

int hal_net_state_parse(const char *word, enum hal_net_state *state)
{
	for (int s = HAL_NET_UNKNOWN; s <= HAL_NET_ETHERNET; s++) {
		if (strcasecmp(word, state_names[s]) == 0) {
			*state = s;
			return 0;
		}
	}
	return -EINVAL;
}

/* Copy at most 24 printable characters of untrusted text, for a reason string. */
static void printable(char *dst, size_t size, const char *src)
{
	size_t n = 0;
	for (; *src && n + 1 < size && n < 24; src++)
		dst[n++] = isprint((unsigned char)*src) ? *src : '?';
	dst[n] = '\0';
}

/* 1 when the override file decided (info filled), 0 when there is none. */
static int from_override(struct hal_net_info *info)
{
	char word[64], shown[32];
	/* The run folder lets every app create files: one that wrote "wifi" here must not
	 * send reports over a phone's data plan. Only root's or jittd's user's file counts
	 * (the folder's owner: hal_read_text_owned), whoever asks. */
	int n = hal_read_text_owned(CONFIG_HAL_NET_OVERRIDE_FILE, word, sizeof(word));
	if (n == -ENOENT)
		return 0;
	if (n == -EPERM) {
		snprintf(info->reason, sizeof(info->reason),
			 "override %s ignored: not a file of root or its folder's owner, or "
			 "others may write it", CONFIG_HAL_NET_OVERRIDE_FILE);
		return 1;
	}
	if (n < 0) {
		snprintf(info->reason, sizeof(info->reason), "override %s unreadable (%s)",
			 CONFIG_HAL_NET_OVERRIDE_FILE, strerror(-n));
		return 1;
	}
	char *w = word;
	while (isspace((unsigned char)*w))
		w++;
	if (hal_net_state_parse(w, &info->state) != 0) {
		printable(shown, sizeof(shown), w);
		snprintf(info->reason, sizeof(info->reason),
			 "override %s holds \"%s\", not a state", CONFIG_HAL_NET_OVERRIDE_FILE,
			 shown);
		info->state = HAL_NET_UNKNOWN;
		return 1;
	}
	snprintf(info->reason, sizeof(info->reason), "override %s", CONFIG_HAL_NET_OVERRIDE_FILE);
	return 1;
}

/* Interface names come from a file; they end up in a path, so check them strictly. */
static bool valid_ifname(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n >= IF_NAMESIZE || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_-.@:", name[i]))
			return false;
	return true;
}

struct default_route {
	bool found;
	uint32_t metric;
	char iface[IF_NAMESIZE];
};

static void consider(struct default_route *best, const char *iface, uint32_t metric)
{
	/* Lowest metric wins; on a tie the first listed, as the kernel picks it. */
	if (best->found && metric >= best->metric)
		return;
	best->found = true;
	best->metric = metric;
	snprintf(best->iface, sizeof(best->iface), "%s", iface);
}

static bool hex_field(const char *s, size_t digits, uint64_t *v)
{
	return strlen(s) == digits && hal_parse_u64(s, 16, v) == 0;
}

/* Split a line at blanks into at most max fields. Returns the count. */
static int split(char *line, char **fields, int max)
{
	int n = 0;
	for (char *save, *tok = strtok_r(line, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		if (n == max)
			return max + 1;
		fields[n++] = tok;
	}
	return n;
}

/*
 * /proc/net/route: a header, then "Iface Destination Gateway Flags RefCnt Use Metric Mask
 * MTU Window IRTT", addresses in hex. A kernel that never had a route prints nothing at
 * all, not even the header.
 */
static int route_v4_line(char *line, int lineno, struct default_route *best)
{
	if (lineno == 1)
		return strncmp(line, "Iface", 5) == 0 ? 0 : -EINVAL;
	char *fld[11];
	int n = split(line, fld, 11);
	uint64_t dest, flags, metric, mask;
	if (n < 8 || n > 11 || !valid_ifname(fld[0]) || !hex_field(fld[1], 8, &dest) ||
	    hal_parse_u64(fld[3], 16, &flags) != 0 || hal_parse_u64(fld[6], 10, &metric) != 0 ||
	    metric > UINT32_MAX || !hex_field(fld[7], 8, &mask))
		return -EINVAL;
	if (dest == 0 && mask == 0 && (flags & RTF_UP) && !(flags & RTF_REJECT))
		consider(best, fld[0], (uint32_t)metric);
	return 0;
}

/*
 * /proc/net/ipv6_route: "dest plen src splen nexthop metric refcnt use flags iface", all hex.
 * The kernel lists an unreachable default on lo (RTF_REJECT): that one is no way out.
 */
static int route_v6_line(char *line, int lineno, struct default_route *best)
{
	(void)lineno;
	char *fld[10];
	uint64_t plen, metric, flags, ignored;
	if (split(line, fld, 10) != 10 || strlen(fld[0]) != 32 ||
	    strspn(fld[0], "0123456789abcdef") != 32 || !hex_field(fld[1], 2, &plen) ||
	    !hex_field(fld[3], 2, &ignored) || !hex_field(fld[5], 8, &metric) ||
	    !hex_field(fld[8], 8, &flags) || !valid_ifname(fld[9]))
		return -EINVAL;
	if (strspn(fld[0], "0") == 32 && plen == 0 && (flags & RTF_UP) && !(flags & RTF_REJECT))
		consider(best, fld[9], (uint32_t)metric);
	return 0;
}

/* Feeds each line of a routing table to parse_line. Returns 0, -ENOENT, or -EINVAL with
 * *bad_line set to the first line that did not parse. */
static int scan_routes(const char *rel, struct default_route *best, int *bad_line,
		       int (*parse_line)(char *line, int lineno, struct default_route *best))
{
	FILE *f = hal_fopen(rel);
	if (!f)
		return -ENOENT;
	char line[512];
	int lineno = 0, err = 0;
	while (!err && fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f))
			err = -EINVAL; /* longer than any real route line */
		else
			err = parse_line(line, lineno, best);
	}
	fclose(f);
	*bad_line = lineno;
	return err;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The kind of link an interface is, from /sys/class/net/<if>/. *how says what told. */
static enum hal_net_state link_kind(const char *iface, const char **how)
{
	char rel[128], text[512];
	snprintf(rel, sizeof(rel), "sys/class/net/%s", iface);
	if (!hal_exists(rel)) {
		*how = "no sysfs entry";
		return HAL_NET_UNKNOWN;
	}
	snprintf(rel, sizeof(rel), "sys/class/net/%s/phy80211", iface);
	if (hal_exists(rel)) {
		*how = "phy80211";
		return HAL_NET_WIFI;
	}
	snprintf(rel, sizeof(rel), "sys/class/net/%s/wireless", iface);
	if (hal_exists(rel)) {
		*how = "wireless";
		return HAL_NET_WIFI;
	}
	snprintf(rel, sizeof(rel), "sys/class/net/%s/uevent", iface);
	if (hal_read_text(rel, text, sizeof(text)) >= 0) {
		if (strstr(text, "DEVTYPE=wwan")) {
			*how = "DEVTYPE=wwan";
			return HAL_NET_CELLULAR;
		}
		if (strstr(text, "DEVTYPE=wlan")) {
			*how = "DEVTYPE=wlan";
			return HAL_NET_WIFI;
		}
	}
	/* Modem drivers that present themselves as Ethernet: Qualcomm rmnet, MediaTek
	 * ccmni, Unisoc seth/sipa, generic wwan. Calling them cellular is the safe error. */
	static const char *const modem_prefixes[] = { "rmnet", "ccmni", "wwan",
						      "seth",  "sipa",	"pdp" };
	for (size_t i = 0; i < sizeof(modem_prefixes) / sizeof(modem_prefixes[0]); i++) {
		if (has_prefix(iface, modem_prefixes[i])) {
			*how = "modem interface name";
			return HAL_NET_CELLULAR;
		}
	}
	uint64_t type;
	snprintf(rel, sizeof(rel), "sys/class/net/%s/type", iface);
	if (hal_read_u64(rel, &type) != 0) {
		*how = "no readable type";
		return HAL_NET_UNKNOWN;
	}
	switch (type) {
	case ARPHRD_ETHER:
		*how = "type 1, not wireless";
		return HAL_NET_ETHERNET;
	case ARPHRD_PPP:
		*how = "type 512 (ppp)";
		return HAL_NET_CELLULAR;
	case ARPHRD_RAWIP:
		*how = "type 519 (raw IP modem)";
		return HAL_NET_CELLULAR;
	default:
		*how = "type neither Ethernet, Wi-Fi nor modem (a tunnel?)";
		return HAL_NET_UNKNOWN;
	}
}

/* When IPv4 and IPv6 leave by different kinds of link, the least permissive one rules. */
static int permissiveness(enum hal_net_state s)
{
	switch (s) {
	case HAL_NET_WIFI:
		return 3;
	case HAL_NET_ETHERNET:
		return 2;
	case HAL_NET_UNKNOWN:
		return 1;
	default: /* cellular: metered; offline cannot happen with a route */
		return 0;
	}
}

int hal_net_get(struct hal_net_info *info)
{
	memset(info, 0, sizeof(*info));
	if (from_override(info))
		return 0;

	struct default_route v4 = { 0 }, v6 = { 0 };
	int bad4 = 0, bad6 = 0;
	int err4 = scan_routes("proc/net/route", &v4, &bad4, route_v4_line);
	int err6 = scan_routes("proc/net/ipv6_route", &v6, &bad6, route_v6_line);
	if (err4 == -EINVAL || err6 == -EINVAL) {
		snprintf(info->reason, sizeof(info->reason), "proc/net/%s line %d is malformed",
			 err4 == -EINVAL ? "route" : "ipv6_route", err4 == -EINVAL ? bad4 : bad6);
		return 0;
	}
	if (err4 == -ENOENT && err6 == -ENOENT) {
		snprintf(info->reason, sizeof(info->reason), "no routing table in proc/net");
		return 0;
	}
	if (!v4.found && !v6.found) {
		info->state = HAL_NET_OFFLINE;
		snprintf(info->reason, sizeof(info->reason), "no default route");
		return 0;
	}

	const char *how4 = "", *how6 = "";
	enum hal_net_state s4 = v4.found ? link_kind(v4.iface, &how4) : HAL_NET_UNKNOWN;
	enum hal_net_state s6 = v6.found ? link_kind(v6.iface, &how6) : HAL_NET_UNKNOWN;
	if (v4.found && v6.found && (s4 != s6 || strcmp(v4.iface, v6.iface) != 0)) {
		bool v4rules = permissiveness(s4) <= permissiveness(s6);
		info->state = v4rules ? s4 : s6;
		snprintf(info->iface, sizeof(info->iface), "%s", v4rules ? v4.iface : v6.iface);
		snprintf(info->reason, sizeof(info->reason),
			 "IPv4 default via %s (%s), IPv6 via %s (%s): the less permissive rules",
			 v4.iface, hal_net_state_name(s4), v6.iface, hal_net_state_name(s6));
		return 0;
	}
	const struct default_route *r = v4.found ? &v4 : &v6;
	info->state = v4.found ? s4 : s6;
	snprintf(info->iface, sizeof(info->iface), "%s", r->iface);
	snprintf(info->reason, sizeof(info->reason), "%s default route via %s (%s)",
		 v4.found ? "IPv4" : "IPv6", r->iface, v4.found ? how4 : how6);
	return 0;
}
