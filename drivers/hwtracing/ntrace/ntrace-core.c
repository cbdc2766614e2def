// SPDX-License-Identifier: GPL-2.0
/*
 * RISC-V N-Trace components: trace encoders (one per hart), funnels and
 * RAM sinks of the RISC-V Trace Control Interface 1.0, found in the
 * device tree as "riscv,trace-component" nodes. The component type and
 * version come from each component's own trXxImpl register, what it
 * implements from the WARL probing TCI 1.0 section 5.1 describes, and
 * the topology from an of_graph (in-ports/out-ports) description.
 */
#include <linux/bitfield.h>
#include <linux/delay.h>
#include <linux/iopoll.h>
#include <linux/log2.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/of_address.h>
#include <linux/of_graph.h>
#include <linux/platform_device.h>
#include <linux/time64.h>
#include <linux/timex.h>

#include "ntrace.h"

struct ntrace_device ntrace_dev = {
	.encoders = LIST_HEAD_INIT(ntrace_dev.encoders),
	.funnels = LIST_HEAD_INIT(ntrace_dev.funnels),
	.sinks = LIST_HEAD_INIT(ntrace_dev.sinks),
};

/* Components are polled for Active, Enable and Empty for at most this. */
#define POLL_US		100

static int poll_control(void __iomem *base, u32 mask, u32 want)
{
	u32 v;

	return readl_poll_timeout_atomic(base + TR_CONTROL, v,
					 (v & mask) == want, 1, POLL_US);
}

/* TCI 1.0 section 5.1: reset, then activate; Control then holds defaults. */
static int component_reset(void __iomem *base)
{
	writel(0, base + TR_CONTROL);
	if (poll_control(base, TR_ACTIVE, 0))
		return -ETIMEDOUT;
	writel(TR_ACTIVE, base + TR_CONTROL);
	return poll_control(base, TR_ACTIVE, TR_ACTIVE);
}

/* ---- trace encoder -------------------------------------------------- */

static u32 te_control_base(u32 mode)
{
	return TR_ACTIVE | FIELD_PREP(TE_INST_MODE, mode) |
	       FIELD_PREP(TE_FORMAT, TE_FORMAT_NTRACE);
}

static bool te_sticks(struct ntrace_encoder *te, u32 off, u32 val, u32 mask)
{
	writel(val, te->base + off);
	return (readl(te->base + off) & mask) == (val & mask);
}

/* The registers TCI 1.0 section 5.1 says may not reset. */
static void te_known_state(struct ntrace_encoder *te)
{
	writel(TR_ACTIVE, te->base + TR_CONTROL);
	writel(0, te->base + TE_INST_FEATURES);
	writel(0, te->base + TE_INST_FILTERS);
	writel(0, te->base + TE_DATA_CONTROL);
	writel(0, te->base + TE_DATA_FILTERS);
	writel(0, te->base + TE_TRIG_DBG);
	writel(0, te->base + TE_TRIG_EXT_IN);
	writel(0, te->base + TE_TRIG_EXT_OUT);
	writel(0, te->base + TS_CONTROL);
}

static bool te_ts_mode_sticks(struct ntrace_encoder *te, u32 mode)
{
	u32 v = TS_ACTIVE | FIELD_PREP(TS_MODE, mode) | TS_ENABLE;

	return te_sticks(te, TS_CONTROL, v, TS_ACTIVE | TS_MODE | TS_ENABLE);
}

/*
 * Whether the timestamp counter reads what the time CSR reads. Nothing in
 * the registers says what drives an external timestamp input (TCI 1.0,
 * "Timestamp Unit"); a platform that wires its timer there gives every
 * hart the clock of sched_clock(), which perf can turn into sample times.
 * Any other clock is off by far more than a millisecond by the time the
 * system has run for a while, so one close reading tells.
 *
 * A reading is close only if nothing runs between the counter and the
 * CSR: interrupts are off, and a try that was still slow (a hypervisor
 * or an emulator that switched harts) is made again. Each try writes the
 * mode again first: no cost on hardware, and the lab's emulated unit
 * (tools/qemu/ntrace-plugin.c) shows the counter as of the last register
 * write, so without it every retry would read the first one's value.
 */
static bool te_ts_counts_time(struct ntrace_encoder *te)
{
	u64 mask = te->caps.ts_width && te->caps.ts_width < 64 ?
		   BIT_ULL(te->caps.ts_width) - 1 : U64_MAX;
	u32 mode = readl(te->base + TS_CONTROL);
	unsigned long flags;
	u64 counter, now;
	bool close;
	u32 hi, lo;
	int tries;

	for (tries = 0; tries < 3; tries++) {
		local_irq_save(flags);
		writel(mode, te->base + TS_CONTROL);
		hi = readl(te->base + TS_COUNTER_HIGH);
		lo = readl(te->base + TS_COUNTER_LOW);
		now = get_cycles64();
		close = readl(te->base + TS_COUNTER_HIGH) == hi;
		local_irq_restore(flags);
		counter = (u64)hi << 32 | lo;
		if (close &&
		    ((now - counter) & mask) <= riscv_timebase / MSEC_PER_SEC)
			return true;
	}
	return false;
}

/*
 * The timestamp mode: an external input on the time CSR's clock first,
 * then the internal clocks, the core's (3) before the system's (2), then
 * an external input on a clock of its own.
 */
static void te_probe_timestamps(struct ntrace_encoder *te)
{
	struct ntrace_te_caps *c = &te->caps;
	static const u32 modes[] = { TS_MODE_CORE, TS_MODE_SYSTEM,
				     TS_MODE_EXTERNAL };
	unsigned int i;

	if (te_ts_mode_sticks(te, TS_MODE_EXTERNAL)) {
		c->ts_width = FIELD_GET(TS_WIDTH, readl(te->base + TS_CONTROL));
		c->ts_time = te_ts_counts_time(te);
	}
	for (i = 0; !c->ts_time && i < ARRAY_SIZE(modes); i++) {
		if (te_ts_mode_sticks(te, modes[i])) {
			c->ts_mode = modes[i];
			c->ts_width = FIELD_GET(TS_WIDTH,
						readl(te->base + TS_CONTROL));
			break;
		}
	}
	if (c->ts_time)
		c->ts_mode = TS_MODE_EXTERNAL;
	c->timestamp = c->ts_mode;
}

/* What the encoder implements: WARL writes and read-backs, never enabled. */
static void te_probe_caps(struct ntrace_encoder *te)
{
	struct ntrace_te_caps *c = &te->caps;
	u32 base = te_control_base(TE_MODE_BTM), v;
	unsigned int i;

	c->btm = te_sticks(te, TR_CONTROL, base, TE_INST_MODE | TE_FORMAT);
	base = te_control_base(TE_MODE_HTM);
	c->htm = te_sticks(te, TR_CONTROL, base, TE_INST_MODE | TE_FORMAT);
	if (!c->htm)
		base = te_control_base(TE_MODE_BTM);
	c->context = te_sticks(te, TR_CONTROL, base | TE_CONTEXT, TE_CONTEXT);
	for (i = 0; i < 4; i++)
		if (te_sticks(te, TR_CONTROL,
			      base | FIELD_PREP(TE_SYNC_MODE, i),
			      TE_SYNC_MODE))
			c->sync_modes |= BIT(i);
	writel(base, te->base + TR_CONTROL);

	c->seq_jump = te_sticks(te, TE_INST_FEATURES, TE_SEQ_JUMP, TE_SEQ_JUMP);
	c->rep_hist = te_sticks(te, TE_INST_FEATURES, TE_REP_HIST, TE_REP_HIST);
	c->all_jumps = te_sticks(te, TE_INST_FEATURES, TE_ALL_JUMPS,
				 TE_ALL_JUMPS);
	c->ext_msb = te_sticks(te, TE_INST_FEATURES, TE_EXT_MSB, TE_EXT_MSB);
	for (i = 1; i < 4; i++)
		if (te_sticks(te, TE_INST_FEATURES,
			      TE_IMPL_RET | FIELD_PREP(TE_IR_MODE, i),
			      TE_IMPL_RET | TE_IR_MODE))
			c->ir_modes |= BIT(i);
	writel(TE_SRC_BITS, te->base + TE_INST_FEATURES);
	c->src_bits = min_t(u32, FIELD_GET(TE_SRC_BITS,
					   readl(te->base + TE_INST_FEATURES)),
			    12);
	writel(0, te->base + TE_INST_FEATURES);

	/* filters are implemented from 0 up */
	writel(GENMASK(TE_MAX_FILTERS - 1, 0), te->base + TE_INST_FILTERS);
	v = readl(te->base + TE_INST_FILTERS) & GENMASK(TE_MAX_FILTERS - 1, 0);
	c->filters = v & 1 ? ffz(v) : 0;
	if (c->filters) {
		u32 want = TE_FILTER_ENABLE | TE_FILTER_MATCH_PRIV;

		c->filter_priv =
			te_sticks(te, TE_FILTER_CONTROL(0), want, want) &&
			te_sticks(te, TE_FILTER_MATCH_INST(0), 0x3, 0x3);
		writel(0, te->base + TE_FILTER_CONTROL(0));
		writel(0, te->base + TE_FILTER_MATCH_INST(0));
	}
	writel(0, te->base + TE_INST_FILTERS);

	te_probe_timestamps(te);
	te_known_state(te);
}

/**
 * ntrace_encoder_start() - program an encoder and start tracing
 * @te: the encoder, on the calling hart
 * @control: trTeControl fields (mode, context, sync) without Active,
 *	Enable and InstTracing
 * @features: trTeInstFeatures
 * @priv_mask: privilege levels to trace, bit n for level n
 * @timestamps: add TSTAMP fields
 *
 * Follows TCI 1.0 section 5.3: configuration first, Enable last, then
 * InstTracing. The caller has checked the request against the caps.
 *
 * Return: 0, or -EIO when the encoder does not take the configuration.
 */
int ntrace_encoder_start(struct ntrace_encoder *te, u32 control, u32 features,
			 u8 priv_mask, bool timestamps)
{
	u32 ctl = TR_ACTIVE | FIELD_PREP(TE_FORMAT, TE_FORMAT_NTRACE) | control;

	te->req_control = control;
	te->req_features = features;
	te->req_priv = priv_mask;
	te->req_ts = timestamps;
	te_known_state(te);
	writel(features, te->base + TE_INST_FEATURES);
	/* filter 0 selects the privilege levels: the only way in */
	writel(priv_mask, te->base + TE_FILTER_MATCH_INST(0));
	writel(TE_FILTER_ENABLE | TE_FILTER_MATCH_PRIV,
	       te->base + TE_FILTER_CONTROL(0));
	writel(BIT(0), te->base + TE_INST_FILTERS);
	if (timestamps) {
		u32 ts = TS_ACTIVE | TS_ENABLE |
			 FIELD_PREP(TS_MODE, te->caps.ts_mode);

		/* an external input has no counter of its own to run */
		if (te->caps.ts_mode != TS_MODE_EXTERNAL)
			ts |= TS_COUNT | TS_RESET;
		writel(ts, te->base + TS_CONTROL);
	}
	writel(ctl, te->base + TR_CONTROL);
	if ((readl(te->base + TR_CONTROL) & ~TE_OVERFLOW & ~TR_EMPTY) != ctl ||
	    readl(te->base + TE_FILTER_MATCH_INST(0)) != priv_mask) {
		/* never trace with a configuration it did not take */
		te_known_state(te);
		return -EIO;
	}
	writel(ctl | TR_ENABLE, te->base + TR_CONTROL);
	writel(ctl | TR_ENABLE | TE_INST_TRACING, te->base + TR_CONTROL);
	te->control = ctl | TR_ENABLE | TE_INST_TRACING;
	te->enabled = true;
	return 0;
}

/**
 * ntrace_encoder_restart() - start an encoder again as it was started last
 * @te: the encoder, on the calling hart
 *
 * Return: as ntrace_encoder_start().
 */
int ntrace_encoder_restart(struct ntrace_encoder *te)
{
	return ntrace_encoder_start(te, te->req_control, te->req_features,
				    te->req_priv, te->req_ts);
}

/**
 * ntrace_encoder_stop() - stop an encoder and flush its trace to the sink
 * @te: the encoder, on the calling hart
 */
void ntrace_encoder_stop(struct ntrace_encoder *te)
{
	if (!te->enabled)
		return;
	writel(te->control & ~(TR_ENABLE | TE_INST_TRACING),
	       te->base + TR_CONTROL);
	if (poll_control(te->base, TR_ENABLE | TR_EMPTY, TR_EMPTY))
		dev_warn_ratelimited(te->dev, "encoder did not flush\n");
	te->enabled = false;
}

static int encoder_probe(struct platform_device *pdev, void __iomem *base,
			 u32 impl)
{
	struct device *dev = &pdev->dev;
	struct device_node *cpu_np;
	struct ntrace_encoder *te;
	int cpu;

	if (FIELD_GET(TE_IMPL_PROTO_MAJOR, impl) != 1) {
		dev_err(dev, "encoder speaks protocol %lu.x, not N-Trace 1.x (trTeImpl 0x%08x)\n",
			FIELD_GET(TE_IMPL_PROTO_MAJOR, impl), impl);
		return -ENODEV;
	}
	cpu_np = of_parse_phandle(dev->of_node, "cpus", 0);
	if (!cpu_np) {
		dev_err(dev, "encoder without a cpus phandle\n");
		return -EINVAL;
	}
	cpu = of_cpu_node_to_id(cpu_np);
	of_node_put(cpu_np);
	if (cpu < 0 || !cpu_possible(cpu)) {
		dev_err(dev, "encoder of a hart Linux does not know\n");
		return -EINVAL;
	}
	if (ntrace_dev.cpu_encoder[cpu]) {
		dev_err(dev, "second encoder for cpu %d\n", cpu);
		return -EINVAL;
	}
	te = devm_kzalloc(dev, sizeof(*te), GFP_KERNEL);
	if (!te)
		return -ENOMEM;
	te->base = base;
	te->dev = dev;
	te->cpu = cpu;
	te->impl = impl;
	te->funnel_input = -1;
	te_probe_caps(te);
	if (!te->caps.btm && !te->caps.htm) {
		dev_err(dev, "encoder implements neither BTM nor HTM\n");
		return -ENODEV;
	}
	platform_set_drvdata(pdev, te);
	ntrace_dev.cpu_encoder[cpu] = te;
	cpumask_set_cpu(cpu, &ntrace_dev.cpus);
	list_add_tail(&te->node, &ntrace_dev.encoders);
	dev_info(dev, "cpu %d: trace encoder %lu.%lu%s%s\n", cpu,
		 FIELD_GET(TR_IMPL_VER_MAJOR, impl),
		 FIELD_GET(TR_IMPL_VER_MINOR, impl),
		 te->caps.htm ? " htm" : "", te->caps.btm ? " btm" : "");
	return 0;
}

/* ---- funnel and RAM sink -------------------------------------------- */

static int funnel_probe(struct platform_device *pdev, void __iomem *base,
			u32 impl)
{
	struct ntrace_funnel *fu;

	fu = devm_kzalloc(&pdev->dev, sizeof(*fu), GFP_KERNEL);
	if (!fu)
		return -ENOMEM;
	fu->base = base;
	fu->dev = &pdev->dev;
	fu->impl = impl;
	writel(0xffff, base + FUNNEL_DIS_INPUT);
	fu->inputs = readl(base + FUNNEL_DIS_INPUT) & 0xffff;
	writel(0, base + FUNNEL_DIS_INPUT);
	platform_set_drvdata(pdev, fu);
	list_add_tail(&fu->node, &ntrace_dev.funnels);
	dev_info(&pdev->dev, "trace funnel, inputs 0x%04x can be disabled\n",
		 fu->inputs);
	return 0;
}

static int sink_probe(struct platform_device *pdev, void __iomem *base,
		      u32 impl)
{
	struct device *dev = &pdev->dev;
	struct ntrace_sink *sink;
	struct device_node *mem;
	struct resource res;
	int ret;

	if (!(impl & RAM_HAS_SMEM)) {
		/* SRAM sinks are read through trRamData: not done yet */
		dev_info(dev, "RAM sink without SMEM mode is not supported (trRamImpl 0x%08x)\n",
			 impl);
		return -ENODEV;
	}
	mem = of_parse_phandle(dev->of_node, "memory-region", 0);
	if (!mem) {
		dev_err(dev, "SMEM sink without a memory-region\n");
		return -EINVAL;
	}
	ret = of_address_to_resource(mem, 0, &res);
	of_node_put(mem);
	if (ret)
		return ret;
	if (resource_size(&res) < SZ_4K || !IS_ALIGNED(res.start, 4) ||
	    !IS_ALIGNED(resource_size(&res), 4)) {
		dev_err(dev, "memory-region %pR is too small or unaligned\n",
			&res);
		return -EINVAL;
	}
	sink = devm_kzalloc(dev, sizeof(*sink), GFP_KERNEL);
	if (!sink)
		return -ENOMEM;
	sink->base = base;
	sink->dev = dev;
	sink->impl = impl;
	sink->mem = res.start;
	sink->mem_size = resource_size(&res);
	/*
	 * The sink writes behind the hart's caches: a write-combining
	 * (uncached) mapping reads what it wrote with no cache maintenance.
	 */
	sink->buf = devm_memremap(dev, sink->mem, sink->mem_size, MEMREMAP_WC);
	if (IS_ERR(sink->buf))
		return PTR_ERR(sink->buf);
	writel(TR_ACTIVE | RAM_MODE_SMEM, base + TR_CONTROL);
	if (!(readl(base + TR_CONTROL) & RAM_MODE_SMEM)) {
		dev_err(dev, "RAM sink does not take SMEM mode\n");
		return -ENODEV;
	}
	platform_set_drvdata(pdev, sink);
	list_add_tail(&sink->node, &ntrace_dev.sinks);
	dev_info(dev, "RAM sink, SMEM %pa + %zu KiB\n", &sink->mem,
		 sink->mem_size / SZ_1K);
	return 0;
}

static void sink_set(struct ntrace_sink *sink, u32 lo, u32 hi, u64 v)
{
	writel(upper_32_bits(v), sink->base + hi);
	writel(lower_32_bits(v), sink->base + lo);
}

static u64 sink_get(struct ntrace_sink *sink, u32 lo, u32 hi)
{
	u32 h, l;

	/* a running sink's WP may carry into the high half between reads */
	do {
		h = readl(sink->base + hi);
		l = readl(sink->base + lo);
	} while (readl(sink->base + hi) != h);
	return ((u64)h << 32) | l;
}

/**
 * ntrace_path_enable() - reset and enable a sink and the funnel before it
 * @sink: the sink
 * @size: bytes of its memory to use, a multiple of 4
 *
 * Sink first, then funnel (TCI 1.0 section 5.3). The sink stops when
 * full (StopOnWrap): its encoders then report the loss and resynchronise,
 * where a circular buffer would overwrite trace nobody has read.
 *
 * Return: 0, or -EIO when the sink does not take the buffer.
 */
int ntrace_path_enable(struct ntrace_sink *sink, size_t size)
{
	struct ntrace_funnel *fu = sink->funnel;
	u64 limit = sink->mem + size - 4;

	if (component_reset(sink->base))
		return -EIO;
	writel(TR_ACTIVE | RAM_MODE_SMEM, sink->base + TR_CONTROL);
	sink_set(sink, RAM_START_LO, RAM_START_HI, sink->mem);
	sink_set(sink, RAM_LIMIT_LO, RAM_LIMIT_HI, limit);
	sink_set(sink, RAM_WP_LO, RAM_WP_HI, sink->mem);
	if (sink_get(sink, RAM_START_LO, RAM_START_HI) != sink->mem ||
	    sink_get(sink, RAM_LIMIT_LO, RAM_LIMIT_HI) != limit) {
		dev_err(sink->dev, "sink does not take its buffer\n");
		return -EIO;
	}
	writel(TR_ACTIVE | TR_ENABLE | RAM_MODE_SMEM | RAM_STOP_ON_WRAP,
	       sink->base + TR_CONTROL);
	if (fu) {
		if (component_reset(fu->base))
			return -EIO;
		writel(0, fu->base + FUNNEL_DIS_INPUT);
		writel(TR_ACTIVE | TR_ENABLE, fu->base + TR_CONTROL);
	}
	return 0;
}

/**
 * ntrace_path_disable() - flush and disable a funnel and its sink
 * @sink: the sink
 *
 * The encoders are stopped already (TCI 1.0 section 5.4).
 */
void ntrace_path_disable(struct ntrace_sink *sink)
{
	struct ntrace_funnel *fu = sink->funnel;

	if (fu) {
		writel(TR_ACTIVE, fu->base + TR_CONTROL);
		poll_control(fu->base, TR_ENABLE | TR_EMPTY, TR_EMPTY);
	}
	ntrace_sink_flush(sink);
}

/**
 * ntrace_sink_flush() - disable a sink, its buffered bytes written out
 * @sink: the sink
 */
void ntrace_sink_flush(struct ntrace_sink *sink)
{
	u32 ctl = readl(sink->base + TR_CONTROL);

	writel(ctl & ~TR_ENABLE, sink->base + TR_CONTROL);
	if (poll_control(sink->base, TR_ENABLE | TR_EMPTY, TR_EMPTY))
		dev_warn_ratelimited(sink->dev, "sink did not flush\n");
}

/**
 * ntrace_sink_running() - whether the sink still takes trace
 * @sink: the sink
 *
 * Return: false once it stopped itself on a full buffer.
 */
bool ntrace_sink_running(struct ntrace_sink *sink)
{
	return readl(sink->base + TR_CONTROL) & TR_ENABLE;
}

/**
 * ntrace_sink_wp() - where the sink writes next
 * @sink: the sink, running or not
 * @wrapped: set to the Wrap flag
 *
 * Everything below the write pointer of a running sink is in memory;
 * the word it is filling may still be held inside.
 *
 * Return: the write pointer, a physical address.
 */
u64 ntrace_sink_wp(struct ntrace_sink *sink, bool *wrapped)
{
	u64 wp = sink_get(sink, RAM_WP_LO, RAM_WP_HI);

	*wrapped = wp & RAM_WRAP;
	return wp & ~3ULL;
}

/**
 * ntrace_sink_rewind() - start a disabled sink again at the buffer start
 * @sink: the sink, flushed
 */
void ntrace_sink_rewind(struct ntrace_sink *sink)
{
	/* writing WP low also clears Wrap */
	sink_set(sink, RAM_WP_LO, RAM_WP_HI, sink->mem);
	writel(TR_ACTIVE | TR_ENABLE | RAM_MODE_SMEM | RAM_STOP_ON_WRAP,
	       sink->base + TR_CONTROL);
}

/**
 * ntrace_sink_window() - point a disabled sink at other memory, enable it
 * @sink: the sink, flushed
 * @start: physical address of the first byte, word aligned
 * @len: bytes, a multiple of 4
 *
 * For sinks that write system memory at any address ("SMEM generic",
 * TCI 1.0 section 5.2): the driver points them straight at AUX pages.
 *
 * Return: 0, or -EOPNOTSUPP when the sink does not take the window (it
 * is left disabled).
 */
int ntrace_sink_window(struct ntrace_sink *sink, u64 start, size_t len)
{
	u64 limit = start + len - 4;

	sink_set(sink, RAM_START_LO, RAM_START_HI, start);
	sink_set(sink, RAM_LIMIT_LO, RAM_LIMIT_HI, limit);
	sink_set(sink, RAM_WP_LO, RAM_WP_HI, start);
	if (sink_get(sink, RAM_START_LO, RAM_START_HI) != start ||
	    sink_get(sink, RAM_LIMIT_LO, RAM_LIMIT_HI) != limit)
		return -EOPNOTSUPP;
	writel(TR_ACTIVE | TR_ENABLE | RAM_MODE_SMEM | RAM_STOP_ON_WRAP,
	       sink->base + TR_CONTROL);
	return 0;
}

/* ---- topology ------------------------------------------------------- */

/*
 * The component at the other end of a node's first out-ports endpoint,
 * and the number of the input port it arrives at.
 */
static struct device_node *downstream(struct device_node *np, u32 *input)
{
	struct device_node *ports, *port, *ep, *remote, *rport, *rports;
	struct device_node *comp = NULL;

	ports = of_get_child_by_name(np, "out-ports");
	if (!ports)
		return NULL;
	port = of_get_next_child(ports, NULL);
	of_node_put(ports);
	if (!port)
		return NULL;
	ep = of_get_next_child(port, NULL);
	of_node_put(port);
	if (!ep)
		return NULL;
	remote = of_graph_get_remote_endpoint(ep);
	of_node_put(ep);
	if (!remote)
		return NULL;
	rport = of_get_parent(remote);
	of_node_put(remote);
	*input = 0;
	of_property_read_u32(rport, "reg", input);
	rports = of_get_parent(rport);
	of_node_put(rport);
	if (rports && of_node_name_eq(rports, "in-ports"))
		comp = of_get_parent(rports);
	of_node_put(rports);
	return comp;
}

static struct ntrace_sink *sink_of_node(struct device_node *np)
{
	struct ntrace_sink *sink;

	list_for_each_entry(sink, &ntrace_dev.sinks, node)
		if (sink->dev->of_node == np)
			return sink;
	return NULL;
}

static struct ntrace_funnel *funnel_of_node(struct device_node *np)
{
	struct ntrace_funnel *fu;

	list_for_each_entry(fu, &ntrace_dev.funnels, node)
		if (fu->dev->of_node == np)
			return fu;
	return NULL;
}

/*
 * Follow every encoder to its sink. All encoders must reach the same
 * one: a session's trace is then in one place, with one SRC per hart.
 */
static int ntrace_topology(void)
{
	struct ntrace_encoder *te;
	struct ntrace_funnel *fu;
	struct device_node *np;
	int max_cpu = 0, shared = 0;
	u32 input;

	list_for_each_entry(fu, &ntrace_dev.funnels, node) {
		np = downstream(fu->dev->of_node, &input);
		fu->sink = sink_of_node(np);
		of_node_put(np);
		if (fu->sink)
			fu->sink->funnel = fu;
	}
	list_for_each_entry(te, &ntrace_dev.encoders, node) {
		np = downstream(te->dev->of_node, &input);
		if (!np && list_is_singular(&ntrace_dev.sinks) &&
		    list_empty(&ntrace_dev.funnels)) {
			/* no graph: a lone sink takes everything */
			te->sink = list_first_entry(&ntrace_dev.sinks,
						    struct ntrace_sink, node);
		} else if (np) {
			fu = funnel_of_node(np);
			if (fu) {
				if (input >= 16 || (fu->inputs &&
						    !(fu->inputs & BIT(input)))) {
					dev_err(te->dev, "no funnel input %u\n",
						input);
					of_node_put(np);
					return -EINVAL;
				}
				te->funnel_input = input;
				te->sink = fu->sink;
				shared = 1;
			} else {
				te->sink = sink_of_node(np);
			}
		}
		of_node_put(np);
		if (!te->sink) {
			dev_err(te->dev, "encoder reaches no RAM sink\n");
			return -ENODEV;
		}
		if (ntrace_dev.sink && ntrace_dev.sink != te->sink) {
			dev_err(te->dev, "encoders reach different sinks\n");
			return -EOPNOTSUPP;
		}
		ntrace_dev.sink = te->sink;
		max_cpu = max(max_cpu, te->cpu);
	}
	if (!ntrace_dev.sink)
		return -ENODEV;
	/*
	 * Harts sharing a sink are told apart by the SRC field, SRC = cpu
	 * number; every encoder into one sink uses the same width.
	 */
	if (shared || !list_is_singular(&ntrace_dev.encoders)) {
		ntrace_dev.src_bits = max(order_base_2(max_cpu + 1), 1);
		list_for_each_entry(te, &ntrace_dev.encoders, node) {
			if (te->caps.src_bits < ntrace_dev.src_bits) {
				dev_err(te->dev, "SRC field too narrow for %d harts\n",
					max_cpu + 1);
				return -EOPNOTSUPP;
			}
		}
	}
	return 0;
}

/* ---- platform driver ------------------------------------------------ */

static int ntrace_component_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct resource *res;
	void __iomem *base;
	u32 impl;

	res = platform_get_resource(pdev, IORESOURCE_MEM, 0);
	if (!res || resource_size(res) < SZ_4K) {
		dev_err(dev, "needs a 4 KiB register window\n");
		return -EINVAL;
	}
	base = devm_ioremap_resource(dev, res);
	if (IS_ERR(base))
		return PTR_ERR(base);
	if (component_reset(base)) {
		dev_err(dev, "component does not become active\n");
		return -ENODEV;
	}
	impl = readl(base + TR_IMPL);
	if (FIELD_GET(TR_IMPL_VER_MAJOR, impl) != 1) {
		/* 0 is SiFive's pre-ratification interface */
		dev_err(dev, "trace interface version %lu.%lu is not 1.x (impl 0x%08x)\n",
			FIELD_GET(TR_IMPL_VER_MAJOR, impl),
			FIELD_GET(TR_IMPL_VER_MINOR, impl), impl);
		return -ENODEV;
	}
	switch (FIELD_GET(TR_IMPL_TYPE, impl)) {
	case TR_TYPE_ENCODER:
		return encoder_probe(pdev, base, impl);
	case TR_TYPE_FUNNEL:
		return funnel_probe(pdev, base, impl);
	case TR_TYPE_RAMSINK:
		return sink_probe(pdev, base, impl);
	default:
		dev_info(dev, "trace component type 0x%lx not supported\n",
			 FIELD_GET(TR_IMPL_TYPE, impl));
		return -ENODEV;
	}
}

static const struct of_device_id ntrace_of_match[] = {
	{ .compatible = "riscv,trace-component" },
	{ }
};
MODULE_DEVICE_TABLE(of, ntrace_of_match);

/*
 * No unbinding: on kernels before perf core could unregister a PMU with
 * live events, taking a component away under a session would leave perf
 * with freed state. Unloading the module is safe: every event holds a
 * reference to it.
 */
static struct platform_driver ntrace_driver = {
	.probe = ntrace_component_probe,
	.driver = {
		.name = "riscv-ntrace",
		.of_match_table = ntrace_of_match,
		.suppress_bind_attrs = true,
	},
};

static int __init ntrace_init(void)
{
	int ret;

	ret = platform_driver_register(&ntrace_driver);
	if (ret)
		return ret;
	ret = ntrace_topology();
	if (!ret)
		ret = ntrace_pmu_register();
	if (ret) {
		pr_info("ntrace: no usable trace path (%d)\n", ret);
		platform_driver_unregister(&ntrace_driver);
		memset(ntrace_dev.cpu_encoder, 0, sizeof(ntrace_dev.cpu_encoder));
		cpumask_clear(&ntrace_dev.cpus);
		INIT_LIST_HEAD(&ntrace_dev.encoders);
		INIT_LIST_HEAD(&ntrace_dev.funnels);
		INIT_LIST_HEAD(&ntrace_dev.sinks);
		ntrace_dev.sink = NULL;
	}
	return ret;
}

static void __exit ntrace_exit(void)
{
	ntrace_pmu_unregister();
	platform_driver_unregister(&ntrace_driver);
}

module_init(ntrace_init);
module_exit(ntrace_exit);
MODULE_DESCRIPTION("RISC-V N-Trace trace components and the ntrace perf PMU");
MODULE_LICENSE("GPL");
