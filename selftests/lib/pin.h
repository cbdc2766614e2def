/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a board test runs: pinned to one hart (inherited by the perf and
 * workload processes it starts from then on), and back to all of them;
 * harts taken offline and brought back.
 */
#ifndef NTRACE_SELFTEST_PIN_H
#define NTRACE_SELFTEST_PIN_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include "sysfs.h"

/* 0, or -1 with errno set. */
static inline int pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static inline int unpin(void)
{
	cpu_set_t set;
	int cpu;

	CPU_ZERO(&set);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/*
 * The kernel's ENOTSUPP, which <errno.h> does not have: what Linux makes
 * of every SBI error it has no errno for (sbi_err_map_linux_errno()).
 */
#define KERNEL_ENOTSUPP	524

/*
 * 0 or -errno. Putting a hart back online right after taking it offline
 * races with the hart's own way out: the kernel hears "dead" before the
 * hart has asked the SBI to stop it, so sbi_hsm_hart_start() can meet it
 * in STOP_PENDING and fail with -EINVAL (both lab kernels log "HART1
 * isn't stopped; status 3"), or, when the hart has not even got that far
 * (status 0, STARTED), with SBI_ERR_ALREADY_AVAILABLE, which the kernel
 * turns into -ENOTSUPP (7.3 on a loaded host, 2026-12-02). A hart that
 * is still stopping is given up to a second.
 */
static inline int set_online(int cpu, int on)
{
	char path[64];
	int ret, tries = 100;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online",
		 cpu);
	while (((ret = file_write_str(path, on ? "1" : "0")) == -EINVAL ||
		ret == -KERNEL_ENOTSUPP) && on && --tries)
		usleep(10000);
	return ret;
}

#endif
