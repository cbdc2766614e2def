// SPDX-License-Identifier: GPL-2.0
/* Must always compile: proves that the probes themselves can build. */
#include <linux/perf_event.h>

int conftest_sanity(struct pmu *pmu);
int conftest_sanity(struct pmu *pmu)
{
	return pmu->capabilities & PERF_PMU_CAP_NO_INTERRUPT;
}
