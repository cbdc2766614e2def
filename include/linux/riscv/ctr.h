/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hooks between the RISC-V SBI PMU driver and the Control Transfer Records
 * (Smctr/Ssctr) branch stack support in drivers/perf/riscv_ctr.c.
 */
#ifndef _LINUX_RISCV_CTR_H
#define _LINUX_RISCV_CTR_H

#include <linux/errno.h>
#include <linux/perf_event.h>

#ifdef CONFIG_RISCV_CTR
bool riscv_ctr_init_pmu(struct pmu *pmu);
void riscv_ctr_starting_cpu(void);
void riscv_ctr_dying_cpu(void);
void riscv_ctr_cpu_pm_exit(void);
int riscv_ctr_event_init(struct perf_event *event);
int riscv_ctr_add(struct perf_event *event);
void riscv_ctr_del(struct perf_event *event);
void riscv_ctr_sched_task(struct perf_event_pmu_context *pmu_ctx,
			  struct task_struct *task, bool sched_in);
void riscv_ctr_sample(struct perf_event *event, struct perf_sample_data *data);
void riscv_ctr_irq_done(void);
#else
static inline bool riscv_ctr_init_pmu(struct pmu *pmu) { return false; }
static inline void riscv_ctr_starting_cpu(void) { }
static inline void riscv_ctr_dying_cpu(void) { }
static inline void riscv_ctr_cpu_pm_exit(void) { }
static inline int riscv_ctr_event_init(struct perf_event *event)
{
	return -EOPNOTSUPP;
}

static inline int riscv_ctr_add(struct perf_event *event) { return 0; }
static inline void riscv_ctr_del(struct perf_event *event) { }
static inline void riscv_ctr_sample(struct perf_event *event,
				    struct perf_sample_data *data) { }
static inline void riscv_ctr_irq_done(void) { }
#endif

#endif /* _LINUX_RISCV_CTR_H */
