/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RISC-V N-Trace: trace components of the RISC-V Trace Control Interface
 * (TCI) 1.0 and the "ntrace" perf PMU that streams their trace into the
 * perf AUX buffer.
 */
#ifndef _NTRACE_H
#define _NTRACE_H

#include <linux/bits.h>
#include <linux/cpumask.h>
#include <linux/device.h>
#include <linux/io.h>
#include <linux/list.h>
#include <linux/perf_event.h>
#include <linux/spinlock.h>
#include <linux/types.h>

/* Registers common to every component (TCI 1.0 section 4.1). */
#define TR_CONTROL		0x000
#define TR_IMPL			0x004
#define TR_ACTIVE		BIT(0)
#define TR_ENABLE		BIT(1)
#define TR_EMPTY		BIT(3)
#define TR_IMPL_VER_MAJOR	GENMASK(3, 0)
#define TR_IMPL_VER_MINOR	GENMASK(7, 4)
#define TR_IMPL_TYPE		GENMASK(11, 8)

#define TR_TYPE_ENCODER		0x1
#define TR_TYPE_FUNNEL		0x8
#define TR_TYPE_RAMSINK		0x9

/* Trace encoder (TCI 1.0 section 4.2) */
#define TE_INST_FEATURES	0x008
#define TE_INST_FILTERS		0x00c
#define TE_DATA_CONTROL		0x010
#define TE_DATA_FILTERS		0x01c
#define TS_CONTROL		0x040
#define TS_COUNTER_LOW		0x048
#define TS_COUNTER_HIGH		0x04c
#define TE_TRIG_DBG		0x050
#define TE_TRIG_EXT_IN		0x054
#define TE_TRIG_EXT_OUT		0x058
#define TE_FILTER_CONTROL(i)	(0x400 + 0x20 * (i))
#define TE_FILTER_MATCH_INST(i)	(0x404 + 0x20 * (i))
#define TE_MAX_FILTERS		16

#define TE_INST_TRACING		BIT(2)
#define TE_INST_MODE		GENMASK(6, 4)
#define TE_CONTEXT		BIT(9)
#define TE_OVERFLOW		BIT(12)
#define TE_INHIBIT_SRC		BIT(15)
#define TE_SYNC_MODE		GENMASK(17, 16)
#define TE_SYNC_MAX		GENMASK(23, 20)
#define TE_FORMAT		GENMASK(26, 24)
#define TE_MODE_BTM		3
#define TE_MODE_HTM		6
#define TE_FORMAT_NTRACE	1

#define TE_IMPL_PROTO_MAJOR	GENMASK(19, 16)

#define TE_SEQ_JUMP		BIT(2)
#define TE_IMPL_RET		BIT(3)
#define TE_IR_MODE		GENMASK(7, 6)
#define TE_REP_HIST		BIT(8)
#define TE_ALL_JUMPS		BIT(9)
#define TE_EXT_MSB		BIT(10)
#define TE_SRC_ID		GENMASK(27, 16)
#define TE_SRC_BITS		GENMASK(31, 28)

#define TE_FILTER_ENABLE	BIT(0)
#define TE_FILTER_MATCH_PRIV	BIT(1)

#define TS_ACTIVE		BIT(0)
#define TS_COUNT		BIT(1)
#define TS_RESET		BIT(2)
#define TS_MODE			GENMASK(6, 4)
#define TS_ENABLE		BIT(15)
#define TS_WIDTH		GENMASK(29, 24)
#define TS_MODE_EXTERNAL	1
#define TS_MODE_SYSTEM		2
#define TS_MODE_CORE		3

/* Trace funnel (TCI 1.0 section 4.4) */
#define FUNNEL_DIS_INPUT	0x008

/* Trace RAM sink (TCI 1.0 section 4.5) */
#define RAM_START_LO		0x010
#define RAM_START_HI		0x014
#define RAM_LIMIT_LO		0x018
#define RAM_LIMIT_HI		0x01c
#define RAM_WP_LO		0x020
#define RAM_WP_HI		0x024
#define RAM_MODE_SMEM		BIT(4)
#define RAM_STOP_ON_WRAP	BIT(8)
#define RAM_HAS_SRAM		BIT(12)
#define RAM_HAS_SMEM		BIT(13)
#define RAM_WRAP		BIT(0)

/* What an encoder implements, found by WARL probing at boot. */
struct ntrace_te_caps {
	bool btm, htm;
	u8 ir_modes;		/* bit n: ImplicitReturnMode n sticks */
	bool seq_jump, rep_hist, all_jumps, ext_msb, context;
	u8 sync_modes;		/* bit n: InstSyncMode n sticks */
	u8 src_bits;		/* widest SRC field */
	u8 filters;		/* instruction filters */
	bool filter_priv;	/* filter 0 matches privilege levels */
	bool timestamp;		/* trTsControl has a mode that sticks */
	u8 ts_width;
	u8 ts_mode;		/* the mode timestamps use */
	bool ts_time;		/* the counter reads what the time CSR reads */
};

struct ntrace_sink;

struct ntrace_encoder {
	void __iomem *base;
	struct device *dev;
	int cpu;
	u32 impl;
	struct ntrace_te_caps caps;
	struct ntrace_sink *sink;	/* where its trace ends up */
	int funnel_input;		/* -1: straight into the sink */
	bool enabled;			/* programmed and enabled */
	u32 control;			/* trTeControl while enabled */
	/* the configuration it was last started with */
	u32 req_control, req_features;
	u8 req_priv;
	bool req_ts;
	struct list_head node;
};

struct ntrace_funnel {
	void __iomem *base;
	struct device *dev;
	u32 impl;
	u32 inputs;		/* trFunnelDisInput bits that stick */
	struct ntrace_sink *sink;
	struct list_head node;
};

struct ntrace_sink {
	void __iomem *base;
	struct device *dev;
	u32 impl;
	phys_addr_t mem;	/* the memory it may write (SMEM) */
	size_t mem_size;
	void *buf;		/* that memory, mapped */
	struct ntrace_funnel *funnel;	/* in front of it, if any */
	struct list_head node;
};

struct ntrace_device {
	struct device *dev;
	struct list_head encoders, funnels, sinks;
	struct ntrace_encoder *cpu_encoder[NR_CPUS];
	cpumask_t cpus;			/* harts with an encoder */
	struct ntrace_sink *sink;	/* the sink every encoder reaches */
	u8 src_bits;			/* SRC width the encoders use */
};

extern struct ntrace_device ntrace_dev;

/* ntrace-core.c: the components */
int ntrace_encoder_start(struct ntrace_encoder *te, u32 control, u32 features,
			 u8 priv_mask, bool timestamps);
void ntrace_encoder_stop(struct ntrace_encoder *te);
int ntrace_encoder_restart(struct ntrace_encoder *te);
int ntrace_path_enable(struct ntrace_sink *sink, size_t size);
void ntrace_path_disable(struct ntrace_sink *sink);
bool ntrace_sink_running(struct ntrace_sink *sink);
u64 ntrace_sink_wp(struct ntrace_sink *sink, bool *wrapped);
void ntrace_sink_rewind(struct ntrace_sink *sink);
void ntrace_sink_flush(struct ntrace_sink *sink);
int ntrace_sink_window(struct ntrace_sink *sink, u64 start, size_t len);

/* ntrace-perf.c: the PMU */
int ntrace_pmu_register(void);
void ntrace_pmu_unregister(void);

#endif
