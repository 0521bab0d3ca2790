/* SPDX-License-Identifier: MIT */
#include "harness.h"
#include "hal/fs.h"
#include "hal/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct hal_net_info probe(const char *fake)
{
	char root[512];
	struct hal_net_info info;
	snprintf(root, sizeof(root), "%s/%s", test_fakes(), fake);
	hal_root_set(root);
	CHECK_EQ_INT(hal_net_get(&info), 0);
	hal_root_set(NULL);
	return info;
}

#define CHECK_NET(fake, want_state, want_iface)                                          \
	do {                                                                             \
		struct hal_net_info i_ = probe(fake);                                    \
		CHECK_STR(hal_net_state_name(i_.state), hal_net_state_name(want_state)); \
		CHECK_STR(i_.iface, want_iface);                                         \
		CHECK(i_.reason[0] != '\0');                                             \
	} while (0)

TEST(net_wifi)
{
	CHECK_NET("net-wifi", HAL_NET_WIFI, "wlan0");
}

TEST(net_cellular)
{
	CHECK_NET("net-cellular", HAL_NET_CELLULAR, "rmnet_data0");
}

TEST(net_ethernet)
{
	CHECK_NET("net-ethernet", HAL_NET_ETHERNET, "eth0");
}

TEST(net_no_default_route_is_offline)
{
	CHECK_NET("net-noroute", HAL_NET_OFFLINE, "");
}

TEST(net_kernel_that_never_had_a_route_is_offline)
{
	/* Such a kernel prints empty tables, without even the header line. */
	CHECK_NET("net-empty", HAL_NET_OFFLINE, "");
}

TEST(net_two_default_routes_lowest_metric_wins)
{
	CHECK_NET("net-tworoutes", HAL_NET_CELLULAR, "rmnet_data0");
}

TEST(net_ipv6_only_default_route)
{
	CHECK_NET("net-ipv6-cellular", HAL_NET_CELLULAR, "rmnet_data1");
}

TEST(net_no_routing_table_is_unknown)
{
	CHECK_NET("does-not-exist", HAL_NET_UNKNOWN, "");
}

TEST(net_override_file_wins)
{
	/* The committed fake has it at the default path; a board may name another. */
	if (strcmp(CONFIG_HAL_NET_OVERRIDE_FILE, "/run/jitt/network") != 0)
		return;
	struct hal_net_info i = probe("net-override");
	CHECK_EQ_INT(i.state, HAL_NET_WIFI);
	CHECK(strstr(i.reason, "override") != NULL);
}

/* The override file in a fake tree, written with MODE (or a link to a "wifi" file). */
static struct hal_net_info probe_override(mode_t mode, int as_link)
{
	char root[512], path[1024], target[1024];
	snprintf(root, sizeof(root), "%s/override", test_tmpdir());
	snprintf(path, sizeof(path), "%s%s", root, CONFIG_HAL_NET_OVERRIDE_FILE);
	mkdir(root, 0755);
	unlink(path);
	char *slash = path + strlen(root);
	while ((slash = strchr(slash + 1, '/')) != NULL) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	snprintf(target, sizeof(target), "%s/wifi-word", root);
	FILE *f = fopen(as_link ? target : path, "w");
	CHECK(f != NULL);
	fputs("wifi\n", f);
	fclose(f);
	CHECK_EQ_INT(chmod(as_link ? target : path, mode), 0);
	if (as_link)
		CHECK_EQ_INT(symlink(target, path), 0);
	struct hal_net_info info;
	hal_root_set(root);
	CHECK_EQ_INT(hal_net_get(&info), 0);
	hal_root_set(NULL);
	return info;
}

/* The run folder is 1733: any app may create the file there. Only root's or the folder
 * owner's, writable by no one else and not a link, is believed (an app's "wifi" must not send
 * reports over a data plan). */
TEST(net_override_file_others_may_write_is_ignored)
{
	struct hal_net_info ok = probe_override(0644, 0);
	CHECK_EQ_INT(ok.state, HAL_NET_WIFI);
	struct hal_net_info shared = probe_override(0666, 0);
	CHECK_EQ_INT(shared.state, HAL_NET_UNKNOWN);
	CHECK(strstr(shared.reason, "ignored") != NULL);
	struct hal_net_info group = probe_override(0664, 0);
	CHECK_EQ_INT(group.state, HAL_NET_UNKNOWN);
	struct hal_net_info link = probe_override(0644, 1);
	CHECK_EQ_INT(link.state, HAL_NET_UNKNOWN);
	CHECK(strstr(link.reason, "ignored") != NULL);
}

/* The state the HAL reads in the tree at root, asked by a process of uid reader. */
static int state_read_by(const char *root, uid_t reader)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct hal_net_info info;
		if (reader && (setgid(reader) != 0 || setuid(reader) != 0))
			_exit(100);
		hal_root_set(root);
		hal_net_get(&info);
		_exit((int)info.state);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * One rule for every reader (docs/security.md, finding 11): the file counts when owned by
 * root or by its folder's owner, jittd's user, for whom the image's init made the folder.
 * On a booted board root's `jitt hal` said "network: unknown" for a file of jittd's user,
 * which jittd itself believed and uploaded on. As root, the folder is given to one uid
 * (jittd's), the file to it or to another, and the state read by root, by jittd's uid and
 * by a third.
 */
TEST(net_override_file_counts_the_same_for_every_reader)
{
	if (geteuid() != 0) {
		printf("    skipped: giving files to other users needs root\n");
		return;
	}
	const uid_t jittd = 64001, app = 64002, other = 64003;
	struct hal_net_info ok = probe_override(0644, 0); /* makes the tree, root's file */
	CHECK_EQ_INT(ok.state, HAL_NET_WIFI);
	char root[512], path[1024], dir[1024];
	snprintf(root, sizeof(root), "%s/override", test_tmpdir());
	snprintf(path, sizeof(path), "%s%s", root, CONFIG_HAL_NET_OVERRIDE_FILE);
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	CHECK_EQ_INT(chmod(test_tmpdir(), 0711), 0); /* the other readers pass through */
	CHECK_EQ_INT(chmod(root, 0755), 0);
	CHECK_EQ_INT(chown(dir, jittd, jittd), 0);
	CHECK_EQ_INT(chmod(dir, 01733), 0); /* as the image's init makes the run folder */

	CHECK_EQ_INT(chown(path, jittd, jittd), 0); /* jittd's user's file */
	CHECK_EQ_INT(state_read_by(root, 0), HAL_NET_WIFI);
	CHECK_EQ_INT(state_read_by(root, jittd), HAL_NET_WIFI);
	CHECK_EQ_INT(state_read_by(root, other), HAL_NET_WIFI);

	CHECK_EQ_INT(chown(path, app, app), 0); /* an app's file: for nobody */
	CHECK_EQ_INT(state_read_by(root, 0), HAL_NET_UNKNOWN);
	CHECK_EQ_INT(state_read_by(root, jittd), HAL_NET_UNKNOWN);
	CHECK_EQ_INT(state_read_by(root, app), HAL_NET_UNKNOWN);

	CHECK_EQ_INT(chown(path, 0, 0), 0); /* root's: for everybody */
	CHECK_EQ_INT(state_read_by(root, app), HAL_NET_WIFI);
	CHECK_EQ_INT(chown(path, jittd, jittd), 0); /* jittd's, but others may write it */
	CHECK_EQ_INT(chmod(path, 0664), 0);
	CHECK_EQ_INT(state_read_by(root, jittd), HAL_NET_UNKNOWN);
}

TEST(net_state_names_round_trip)
{
	for (int s = HAL_NET_UNKNOWN; s <= HAL_NET_ETHERNET; s++) {
		enum hal_net_state back = HAL_NET_UNKNOWN;
		CHECK_EQ_INT(hal_net_state_parse(hal_net_state_name(s), &back), 0);
		CHECK_EQ_INT(back, s);
	}
	enum hal_net_state st;
	CHECK(hal_net_state_parse("wi-fi", &st) != 0);
	CHECK(hal_net_state_parse("", &st) != 0);
}
