/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The overflow interrupt (LCOFI) count the kernel keeps per hart: whether
 * a sampling event's overflows reached S-mode.
 */
#ifndef NTRACE_SELFTEST_IRQ_H
#define NTRACE_SELFTEST_IRQ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The riscv-pmu (LCOFI) count of /proc/interrupts on cpu, or -1. */
static inline long long pmu_interrupts(int cpu)
{
	long long count = -1;
	char line[1024];
	FILE *f;

	f = fopen("/proc/interrupts", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p, *end;
		int col;

		if (!strstr(line, "riscv-pmu"))
			continue;
		p = strchr(line, ':');
		if (!p)
			break;
		for (p++, col = 0;; p = end, col++) {
			long long v = strtoll(p, &end, 10);

			if (end == p)
				break;
			if (col == cpu) {
				count = v;
				break;
			}
		}
		break;
	}
	fclose(f);
	return count;
}

#endif
