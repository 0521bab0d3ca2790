/* SPDX-License-Identifier: MIT */
/*
 * Garbage in every file: each fake tree is copied, then every one of its files in turn is
 * overwritten with each kind of junk a broken kernel, a full disk or a hostile process
 * could leave there. The HAL must answer with its documented fallback or a clear error,
 * never crash, and never turn doubt into "wifi".
 */
#define _XOPEN_SOURCE 700
#include "harness.h"
#include "hal/cpu.h"
#include "hal/fs.h"
#include "hal/net.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const trees[] = {
	"phone-4-4",	 "phone-1-3-4",	      "rpi4",	      "phone-offline",
	"phone-cpuset",	 "phone-cpufreq",     "phone-midr",   "missing",
	"net-wifi",	 "net-cellular",      "net-ethernet", "net-noroute",
	"net-tworoutes", "net-ipv6-cellular", "net-override", "net-empty",
};

static char long_line[10000];

static const struct {
	const char *data;
	size_t len;
} junk[] = {
	{ "", 0 },
	{ "\n", 1 },
	{ "garbage\n", 8 },
	{ "-1\n", 3 },
	{ "0\n", 2 },
	{ "99999999999999999999999999\n", 27 },
	{ "1,2,3-\n", 7 },
	{ "\xff\xfe\x00\x01\n", 5 },
	{ "wifi\n", 5 },
	{ "Iface\n\t\t\t\n", 10 },
	{ long_line, sizeof(long_line) },
};

/* ---- copying a tree ---- */
static const char *copy_src, *copy_dst;

static int copy_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	char dst[1024];
	snprintf(dst, sizeof(dst), "%s%s", copy_dst, path + strlen(copy_src));
	if (flag == FTW_D)
		return mkdir(dst, 0755) == 0 || errno == EEXIST ? 0 : -1;
	if (flag != FTW_F)
		return 0;
	int in = open(path, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char buf[8192];
	ssize_t n;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	(void)st;
	return 0;
}

/* ---- the files of the copy, so each can be spoiled in turn ---- */
static char *files[256];
static int nfiles;

static int list_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	if (flag == FTW_F && nfiles < 256)
		files[nfiles++] = strdup(path);
	return 0;
}

static int slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size);
	close(fd);
	return (int)n;
}

static void spit(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	if (fd >= 0) {
		if (write(fd, data, len) != (ssize_t)len)
			test_fail(__FILE__, __LINE__, "short write to %s", path);
		close(fd);
	}
}

static void check_topology_sane(const char *what)
{
	struct hal_topology t;
	int err = hal_topology_load(&t);
	if (err) {
		if (err != -ENOENT)
			test_fail(__FILE__, __LINE__, "%s: topology error %d", what, err);
		return;
	}
	if (t.ncpus == 0 || t.ncpus > CONFIG_HAL_MAX_CPUS || t.nclasses < 1 || t.nclasses > 3)
		test_fail(__FILE__, __LINE__, "%s: %u cpus, %u classes", what, t.ncpus, t.nclasses);
	for (int c = 0; c < HAL_CPU_NCLASSES; c++) {
		unsigned ids[CONFIG_HAL_MAX_CPUS];
		int n = hal_topology_class_cpus(&t, c, ids, CONFIG_HAL_MAX_CPUS);
		if (n < 0 && n != -ENODEV && n != -EACCES)
			test_fail(__FILE__, __LINE__, "%s: class %d error %d", what, c, n);
	}
	/* LITTLE always exists when any CPU was ranked. */
	unsigned ids[CONFIG_HAL_MAX_CPUS];
	if (hal_topology_class_cpus(&t, HAL_CPU_LITTLE, ids, CONFIG_HAL_MAX_CPUS) == -ENODEV)
		test_fail(__FILE__, __LINE__, "%s: no LITTLE class", what);
}

static void check_net_sane(const char *what, const char *spoiled, size_t junk_len,
			   enum hal_net_state clean)
{
	struct hal_net_info info;
	hal_net_get(&info);
	if (info.state > HAL_NET_ETHERNET)
		test_fail(__FILE__, __LINE__, "%s: state %d", what, info.state);
	if (info.state == HAL_NET_WIFI && clean != HAL_NET_WIFI)
		test_fail(__FILE__, __LINE__, "%s: garbage made it wifi", what);
	/* An empty table is a kernel without routes (it prints not even a header), not
	 * garbage. */
	bool routes = strstr(spoiled, "proc/net/") && junk_len > 0;
	bool override = strstr(spoiled, "run/jitt/network") != NULL;
	/* Garbage in the routing table is doubt, unless the override decides first. */
	if (routes && !hal_exists(CONFIG_HAL_NET_OVERRIDE_FILE) && info.state != HAL_NET_UNKNOWN)
		test_fail(__FILE__, __LINE__, "%s: %s from a garbage routing table", what,
			  hal_net_state_name(info.state));
	if (override && info.state != HAL_NET_UNKNOWN && info.state != HAL_NET_WIFI)
		test_fail(__FILE__, __LINE__, "%s: garbage override gave %s", what,
			  hal_net_state_name(info.state));
}

TEST(garbage_in_every_file_of_every_fake_tree)
{
	memset(long_line, 'A', sizeof(long_line));
	static char original[65536];
	int spoiled = 0;
	for (size_t t = 0; t < sizeof(trees) / sizeof(trees[0]); t++) {
		char src[512], dst[512];
		snprintf(src, sizeof(src), "%s/%s", test_fakes(), trees[t]);
		snprintf(dst, sizeof(dst), "%s/%s", test_tmpdir(), trees[t]);
		copy_src = src;
		copy_dst = dst;
		CHECK_EQ_INT(nftw(src, copy_entry, 16, FTW_PHYS), 0);

		hal_root_set(dst);
		struct hal_net_info clean;
		hal_net_get(&clean);
		nfiles = 0;
		nftw(dst, list_file, 16, FTW_PHYS);
		for (int f = 0; f < nfiles; f++) {
			int len = slurp(files[f], original, sizeof(original));
			if (len < 0)
				continue;
			for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
				char what[700];
				snprintf(what, sizeof(what), "%s with junk #%zu",
					 files[f] + strlen(dst), j);
				spit(files[f], junk[j].data, junk[j].len);
				check_topology_sane(what);
				check_net_sane(what, files[f], junk[j].len, clean.state);
				spoiled++;
			}
			spit(files[f], original, (size_t)len);
			free(files[f]);
		}
		hal_root_set(NULL);
	}
	printf("    %d spoiled files checked\n", spoiled);
	CHECK(spoiled > 1000);
}

/* Random mutations of the files with the most structure: a few bytes replaced, inserted or
 * the file cut short, thousands of times, from a fixed seed. */
TEST(mutated_tables_never_crash_or_invent_wifi)
{
	static const struct {
		const char *tree, *file;
	} targets[] = {
		{ "net-wifi", "proc/net/route" },
		{ "net-wifi", "proc/net/ipv6_route" },
		{ "net-tworoutes", "proc/net/route" },
		{ "phone-midr", "proc/cpuinfo" },
		{ "phone-cpuset", "proc/self/status" },
		{ "phone-4-4", "sys/devices/system/cpu/online" },
	};
	static const char bytes[] = "0123456789abcdefABCDEF \t\n-,:x\0\xff";
	uint32_t x = 88172645u;
#define NEXT() (x ^= x << 13, x ^= x >> 17, x ^= x << 5, x)
	int runs = 0;
	for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
		char src[512], dst[512], path[1024];
		snprintf(src, sizeof(src), "%s/%s", test_fakes(), targets[t].tree);
		snprintf(dst, sizeof(dst), "%s/m%zu", test_tmpdir(), t);
		copy_src = src;
		copy_dst = dst;
		CHECK_EQ_INT(nftw(src, copy_entry, 16, FTW_PHYS), 0);
		snprintf(path, sizeof(path), "%s/%s", dst, targets[t].file);
		static char original[16384], mutated[16384 + 64];
		int len = slurp(path, original, sizeof(original));
		if (!CHECK(len > 0))
			continue;
		hal_root_set(dst);
		for (int iter = 0; iter < 1500; iter++) {
			int n = len;
			memcpy(mutated, original, (size_t)len);
			for (int k = 1 + (int)(NEXT() % 4); k > 0; k--) {
				int at = (int)(NEXT() % (uint32_t)n);
				char c = bytes[NEXT() % (sizeof(bytes) - 1)];
				switch (NEXT() % 3) {
				case 0: /* replace */
					mutated[at] = c;
					break;
				case 1: /* insert */
					memmove(mutated + at + 1, mutated + at, (size_t)(n - at));
					mutated[at] = c;
					n++;
					break;
				default: /* cut short */
					n = at;
					break;
				}
				if (n == 0)
					break;
			}
			spit(path, mutated, (size_t)n);
			check_topology_sane(targets[t].file);
			struct hal_net_info info;
			hal_net_get(&info);
			if (info.state > HAL_NET_ETHERNET ||
			    (info.state == HAL_NET_WIFI && strcmp(info.iface, "wlan0") != 0))
				test_fail(__FILE__, __LINE__, "%s: state %d via %s",
					  targets[t].file, info.state, info.iface);
			runs++;
		}
		hal_root_set(NULL);
	}
#undef NEXT
	printf("    %d mutated tables checked\n", runs);
}
