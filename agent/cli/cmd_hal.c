/* SPDX-License-Identifier: MIT */
/* `jitt hal`: what the HAL found on this machine, and why. */
#include "agent/cli/cli.h"
#include "hal/cpu.h"
#include "hal/fs.h"
#include "hal/net.h"
#include "hal/sched.h"
#include "hal/timer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void help(FILE *out)
{
	fputs("  --root DIR  read /sys and /proc under DIR (a fake tree) instead of /\n", out);
}

static void print_timer(void)
{
	int err = hal_timer_init();
	const struct hal_timer_info *t = hal_timer_info();
	printf("timer: %s at %llu Hz (%.3f MHz, %.2f ns per tick)\n",
	       hal_timer_source_name(t->source), (unsigned long long)t->freq_hz,
	       (double)t->freq_hz / 1e6, 1e9 / (double)t->freq_hz);
	printf("  why: %s\n", t->reason);
	if (t->reported_hz)
		printf("  reported by hardware: %llu Hz\n", (unsigned long long)t->reported_hz);
	if (t->measured_hz)
		printf("  measured: %llu Hz\n", (unsigned long long)t->measured_hz);
	uint64_t step = hal_timer_resolution_ticks();
	if (step)
		printf("  resolution: %llu tick%s (%.2f ns), the smallest step between two reads\n",
		       (unsigned long long)step, step == 1 ? "" : "s",
		       (double)step * 1e9 / (double)t->freq_hz);
	else
		printf("  resolution: unknown, the timer did not move in %d reads\n",
		       HAL_TIMER_RESOLUTION_READS);
	if (err)
		printf("  error: the configured counter is unusable (%s): tracing cannot start\n",
		       strerror(-err));
}

static const char *const source_label[] = {
	[HAL_CPU_SRC_CAPACITY] = "from cpu_capacity",
	[HAL_CPU_SRC_CPUFREQ] = "from cpufreq's cpuinfo_max_freq",
	[HAL_CPU_SRC_MIDR] = "from the core types (MIDR) in proc/cpuinfo",
};

static const char *const rank_label[] = {
	[HAL_CPU_SRC_CAPACITY] = "capacity",
	[HAL_CPU_SRC_CPUFREQ] = "max",
	[HAL_CPU_SRC_MIDR] = "core score",
};

static void print_cpus(void)
{
	struct hal_topology topo;
	int err = hal_topology_load(&topo);
	if (err) {
		printf("cpus: none found in sys/devices/system/cpu (%s)\n", strerror(-err));
		return;
	}
	unsigned online = 0, allowed = 0, usable = 0;
	for (unsigned i = 0; i < topo.ncpus; i++) {
		online += topo.cpu[i].online;
		allowed += topo.cpu[i].allowed;
		usable += topo.cpu[i].online && topo.cpu[i].allowed;
	}
	printf("cpus: %u present, %u online, %u allowed, %u usable; %u class%s %s\n", topo.ncpus,
	       online, allowed, usable, topo.nclasses, topo.nclasses == 1 ? "" : "es",
	       topo.source == HAL_CPU_SRC_NONE ? "(no capacity, cpufreq or core type to compare)"
					       : source_label[topo.source]);
	if (topo.reason[0])
		printf("  passed over: %s\n", topo.reason);
	if (topo.truncated)
		printf("  note: CPUs numbered %d and above are ignored (CONFIG_HAL_MAX_CPUS)\n",
		       CONFIG_HAL_MAX_CPUS);
	for (int c = HAL_CPU_NCLASSES - 1; c >= 0; c--) {
		unsigned all[CONFIG_HAL_MAX_CPUS], n = 0;
		uint64_t rank = 0;
		for (unsigned i = 0; i < topo.ncpus; i++) {
			if (topo.cpu[i].ranked && (int)topo.cpu[i].cls == c) {
				all[n++] = topo.cpu[i].id;
				rank = topo.cpu[i].rank;
			}
		}
		if (n == 0)
			continue;
		char members[256], usable_list[256] = "";
		hal_cpulist_format(all, n, members, sizeof(members));
		unsigned ids[CONFIG_HAL_MAX_CPUS];
		int k = hal_topology_class_cpus(&topo, c, ids, CONFIG_HAL_MAX_CPUS);
		if (k > 0)
			hal_cpulist_format(ids, (unsigned)k, usable_list, sizeof(usable_list));
		printf("  %-6s cpus %-8s usable %s", hal_cpu_class_name(c), members,
		       k > 0 ? usable_list : "none");
		if (topo.source != HAL_CPU_SRC_NONE)
			printf("%*s%s %llu%s", 9 - (int)strlen(k > 0 ? usable_list : "none"), "",
			       rank_label[topo.source], (unsigned long long)rank,
			       topo.source == HAL_CPU_SRC_CPUFREQ ? " kHz" : "");
		printf("\n");
	}
	unsigned unranked[CONFIG_HAL_MAX_CPUS], n = 0;
	for (unsigned i = 0; i < topo.ncpus; i++)
		if (!topo.cpu[i].ranked)
			unranked[n++] = topo.cpu[i].id;
	if (n) {
		char list[256];
		hal_cpulist_format(unranked, n, list, sizeof(list));
		printf("  unclassified (offline, no data): cpus %s\n", list);
	}
}

static void print_net(void)
{
	struct hal_net_info net;
	hal_net_get(&net);
	printf("network: %s", hal_net_state_name(net.state));
	if (net.iface[0])
		printf(" via %s", net.iface);
	printf("\n  why: %s\n", net.reason);
}

/* Which scheduling source a traced thread of an app would get here (agent/runtime/sched.c):
 * this thread tries the same perf ring, and its own schedstat. */
static void print_sched(void)
{
	struct hal_perf_ring r;
	int e = hal_sched_open(&r, (pid_t)syscall(SYS_gettid), 1);
	hal_perf_ring_close(&r);
	uint64_t run, wait, slices;
	int s = hal_sched_stat((pid_t)syscall(SYS_gettid), &run, &wait, &slices);
	if (!e)
		printf("scheduling: perf context switches\n");
	else
		printf("scheduling: %s (perf refused: %s)\n",
		       s ? "none: preempted time will count as self time"
			 : "schedstat samples at frame boundaries",
		       strerror(-e));
	if (s)
		printf("  schedstat: unreadable (%s)\n", strerror(-s));
}

static const struct option longopts[] = {
	{ "root", required_argument, NULL, 'r' },
	CLI_HELP_OPTION,
	{ NULL, 0, NULL, 0 },
};
static const struct cli_command command = { "jitt hal", "usage: jitt hal [--root DIR]\n", help, "",
					    longopts };

int cmd_hal(int argc, char **argv)
{
	struct cli_args p;
	cli_args_init(&p, &command, argc, argv);
	for (int c; (c = cli_next(&p)) != CLI_END;) {
		switch (c) {
		case CLI_EXIT:
			return p.status;
		case 'r':
			if (hal_root_set(p.arg) != 0)
				return cli_usage_error(&p, "--root: path too long:", p.arg);
			break;
		case CLI_OPERAND:
			return cli_usage_error(&p, "unexpected argument", p.arg);
		}
	}
	print_timer();
	print_cpus();
	print_net();
	print_sched();
	return 0;
}
