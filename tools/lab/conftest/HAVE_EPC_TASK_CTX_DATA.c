// SPDX-License-Identifier: GPL-2.0
/*
 * PMU data for a task's context switches before mainline 6.15: kept in
 * the task's perf_event_pmu_context (epc->task_ctx_data) and swapped with
 * the context, instead of in task_struct::perf_ctx_data.
 */
#include <linux/perf_event.h>

void *conftest_epc_data(struct perf_event_pmu_context *epc);
void *conftest_epc_data(struct perf_event_pmu_context *epc)
{
	return epc->task_ctx_data;
}
