/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a board test runs: pinned to one hart (inherited by the perf and
 * workload processes it starts from then on), and back to all of them.
 */
#ifndef NTRACE_SELFTEST_PIN_H
#define NTRACE_SELFTEST_PIN_H

#include <sched.h>

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

#endif
