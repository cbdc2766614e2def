// SPDX-License-Identifier: GPL-2.0
/*
 * pmu::sched_task() before mainline 6.15 (and 6.12.y before 6.12.117):
 * (pmu_ctx, sched_in), without the task being switched.
 */
#include <linux/perf_event.h>

static void conftest_sched_task(struct perf_event_pmu_context *pmu_ctx,
				bool sched_in)
{
}

void conftest_set(struct pmu *pmu);
void conftest_set(struct pmu *pmu)
{
	pmu->sched_task = conftest_sched_task;
}
