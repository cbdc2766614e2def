// SPDX-License-Identifier: GPL-2.0
/*
 * Test module for the lab's emulated N-Trace hardware (tools/qemu): it
 * finds the trace components in the device tree (all compatible
 * "riscv,trace-component"; the type comes from tr??Impl, the funnel input
 * an encoder feeds from the of_graph), checks their registers against the
 * RISC-V Trace Control Interface 1.0 programming sequence, and drives a
 * capture for the host-side correctness tests through procfs. It stands
 * in for the real driver until that exists.
 *
 * /proc/ntrace_hw/: selftest (read: TAP), config (write), start, stop
 * (write 1), trace (read: the captured bytes, oldest first), status.
 * (procfs, not debugfs: the lab kernel is built without debugfs.)
 */
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/of_address.h>
#include <linux/of_graph.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "tci-regs.h"

#define MAX_ENC		16

static void __iomem *enc[MAX_ENC];
static int enc_cpu[MAX_ENC];		/* the logical CPU it traces */
static u32 enc_input[MAX_ENC];		/* its funnel input, if any */
static unsigned int nenc;
static void __iomem *funnel;		/* only on multi-hart boards */
static void __iomem *sink;
static void __iomem *buf;
static phys_addr_t buf_pa;
static size_t buf_size;
static struct proc_dir_entry *dir;

/* capture configuration, written to /proc/ntrace_hw/config */
static u32 cfg_mode = 6, cfg_features, cfg_ctl_extra;
static u32 cfg_filter_priv = 1;	/* bitmap of privileges traced: U */
static u32 cfg_size, cfg_stop_on_wrap, cfg_ts;
static u32 cfg_discard;		/* encoders whose funnel input is disabled */
static u64 last_wp;
static bool last_wrap;
/* as found by stop */
static u32 last_ctl[MAX_ENC], last_ram_ctl, last_fun_ctl, last_fun_dis;

/* The sink from Start to Start + size - 4, empty and enabled (TCI 5.2). */
static void sink_start(size_t size, bool stop_on_wrap)
{
	writel(0, sink + RAM_CONTROL);
	writel(ACTIVE, sink + RAM_CONTROL);
	writel(upper_32_bits(buf_pa), sink + RAM_START_HI);
	writel(lower_32_bits(buf_pa), sink + RAM_START_LO);
	writel(upper_32_bits(buf_pa + size - 4), sink + RAM_LIMIT_HI);
	writel(lower_32_bits(buf_pa + size - 4), sink + RAM_LIMIT_LO);
	writel(upper_32_bits(buf_pa), sink + RAM_WP_HI);
	writel(lower_32_bits(buf_pa), sink + RAM_WP_LO);
	writel(ACTIVE | ENABLE | (stop_on_wrap ? RAM_STOPWRAP : 0),
	       sink + RAM_CONTROL);
}

/* The funnel, if there is one, enabled with the inputs in dis discarded. */
static void funnel_start(u32 dis)
{
	if (!funnel)
		return;
	writel(0, funnel + FUN_CONTROL);
	writel(ACTIVE, funnel + FUN_CONTROL);
	writel(dis, funnel + FUN_DISINPUT);
	writel(ACTIVE | ENABLE, funnel + FUN_CONTROL);
}

/* ---- register semantics (TCI 1.0 chapter 4, programming sequence) ---- */

struct tap {
	struct seq_file *m;
	int n, failed;
};

static void check(struct tap *t, bool ok, const char *what, u32 got)
{
	t->n++;
	if (!ok)
		t->failed++;
	seq_printf(t->m, "%sok %d - %s (read 0x%08x)\n", ok ? "" : "not ",
		   t->n, what, got);
}

static bool poll(void __iomem *reg, u32 mask, u32 want)
{
	int i;

	for (i = 0; i < 1000; i++) {
		if ((readl(reg) & mask) == want)
			return true;
		usleep_range(10, 20);
	}
	return false;
}

static void selftest_encoder(struct tap *t, unsigned int i)
{
	void __iomem *b = enc[i];
	u32 v;

	writel(0, b + TE_CONTROL);
	check(t, poll(b + TE_CONTROL, ACTIVE, 0), "encoder held in reset",
	      readl(b + TE_CONTROL));
	writel(ACTIVE, b + TE_CONTROL);
	check(t, poll(b + TE_CONTROL, ACTIVE, ACTIVE), "encoder active",
	      readl(b + TE_CONTROL));
	v = readl(b + TE_IMPL);
	check(t, (v & 0xf) == 1 && ((v >> 8) & 0xf) == 1 &&
	      ((v >> 16) & 0xf) == 1 && ((v >> 20) & 0xf) == 0,
	      "trTeImpl: version 1.0, encoder, N-Trace 1.0", v);
	v = readl(b + TE_CONTROL);
	check(t, (v & EMPTY) && !(v & ENABLE), "Empty=1, Enable=0 after reset",
	      v);
	/* WARL probes, never with Enable set */
	writel(ACTIVE | (3 << 4) | (1 << 24), b + TE_CONTROL);
	v = readl(b + TE_CONTROL);
	check(t, ((v >> 4) & 7) == 3 && ((v >> 24) & 7) == 1,
	      "InstMode 3 (BTM) and Format 1 (N-Trace) stick", v);
	writel(ACTIVE | (5 << 4) | (2 << 24), b + TE_CONTROL);
	v = readl(b + TE_CONTROL);
	check(t, ((v >> 4) & 7) == 6 && ((v >> 24) & 7) == 1,
	      "InstMode 5 reads back a supported mode, Format stays 1", v);
	writel(0xffffffff, b + TE_FEATURES);
	v = readl(b + TE_FEATURES);
	check(t, !(v & (BIT(0) | BIT(1) | BIT(4) | BIT(5))) &&
	      (v >> 28) == 12 && ((v >> 6) & 3) == 3,
	      "trTeInstFeatures: hard-wired zeroes, SrcBits capped at 12", v);
	writel(0xffff, b + TE_FILTERS);
	check(t, readl(b + TE_FILTERS) == 1, "one instruction filter",
	      readl(b + TE_FILTERS));
	writel(0, b + TE_FEATURES);
	writel(0, b + TE_FILTERS);
	/* configuration is locked while enabled */
	writel(ACTIVE | ENABLE | (6 << 4) | (1 << 24), b + TE_CONTROL);
	writel(0x30000000, b + TE_FEATURES);
	check(t, readl(b + TE_FEATURES) == 0, "features locked while enabled",
	      readl(b + TE_FEATURES));
	writel(ACTIVE | ENABLE | (3 << 4) | (1 << 24), b + TE_CONTROL);
	check(t, ((readl(b + TE_CONTROL) >> 4) & 7) == 6,
	      "mode locked while enabled", readl(b + TE_CONTROL));
	writel(ACTIVE | (6 << 4) | (1 << 24), b + TE_CONTROL);
	check(t, poll(b + TE_CONTROL, ENABLE | EMPTY, EMPTY),
	      "disable flushes: Enable=0, Empty=1", readl(b + TE_CONTROL));
}

static void selftest_sink(struct tap *t)
{
	u32 v;

	writel(0, sink + RAM_CONTROL);
	writel(ACTIVE, sink + RAM_CONTROL);
	check(t, poll(sink + RAM_CONTROL, ACTIVE, ACTIVE), "sink active",
	      readl(sink + RAM_CONTROL));
	v = readl(sink + RAM_IMPL);
	check(t, (v & 0xf) == 1 && ((v >> 8) & 0xf) == 9 && (v & BIT(13)) &&
	      !(v & BIT(12)), "trRamImpl: 1.0, RAM sink, SMEM only", v);
	writel(ACTIVE, sink + RAM_CONTROL);
	check(t, readl(sink + RAM_CONTROL) & RAM_SMEM, "Mode reads back SMEM",
	      readl(sink + RAM_CONTROL));
	/* Start/Limit stay inside the reserved trace memory */
	writel(0, sink + RAM_START_HI);
	writel(0, sink + RAM_START_LO);
	v = readl(sink + RAM_START_LO);
	check(t, v == lower_32_bits(buf_pa), "Start outside trace memory: legal value",
	      v);
	writel(lower_32_bits(buf_pa) + 0x1003, sink + RAM_START_LO);
	v = readl(sink + RAM_START_LO);
	check(t, v == lower_32_bits(buf_pa) + 0x1000, "Start is word aligned", v);
	writel(0xffffffff, sink + RAM_LIMIT_LO);
	v = readl(sink + RAM_LIMIT_LO);
	check(t, v == lower_32_bits(buf_pa + buf_size - 4),
	      "Limit capped at the last word of trace memory", v);
	writel(lower_32_bits(buf_pa), sink + RAM_START_LO);
	writel(lower_32_bits(buf_pa) | 1, sink + RAM_WP_LO);
	v = readl(sink + RAM_WP_LO);
	check(t, v == lower_32_bits(buf_pa), "writing WP clears Wrap", v);
	writel(ACTIVE | ENABLE, sink + RAM_CONTROL);
	writel(lower_32_bits(buf_pa) + 0x100, sink + RAM_WP_LO);
	check(t, readl(sink + RAM_WP_LO) == lower_32_bits(buf_pa),
	      "WP locked while enabled", readl(sink + RAM_WP_LO));
	writel(ACTIVE, sink + RAM_CONTROL);
	check(t, poll(sink + RAM_CONTROL, ENABLE | EMPTY, EMPTY),
	      "sink disable: Enable=0, Empty=1", readl(sink + RAM_CONTROL));
}

/*
 * What this CPU's encoder traces of this very code (S-mode) reaches the
 * sink through the enabled funnel, goes out when the funnel is disabled,
 * and is lost behind the disabled funnel. The CPU must not change in
 * between, hence no sleeping poll().
 */
static void selftest_funnel_flush(struct tap *t)
{
	u32 ctl = ACTIVE | (6 << 4) | (1 << 24), fun, wp, wp2, v;
	int cpu = get_cpu();
	void __iomem *b;
	unsigned int i;

	for (i = 0; i < nenc && enc_cpu[i] != cpu; i++)
		;
	if (i == nenc) {
		put_cpu();
		check(t, false, "an encoder traces this CPU", cpu);
		return;
	}
	b = enc[i];
	sink_start(buf_size, false);
	funnel_start(0);
	writel(0, b + TE_CONTROL);
	writel(ACTIVE, b + TE_CONTROL);
	writel(0, b + TE_FEATURES);
	writel(1, b + TE_FILTERS);
	writel(BIT(0) | BIT(1), b + TE_F0_CONTROL);
	writel(BIT(1), b + TE_F0_MATCHINST);	/* S-mode */
	writel(0, b + TS_CONTROL);
	writel(ctl, b + TE_CONTROL);
	writel(ctl | ENABLE, b + TE_CONTROL);
	writel(ctl | ENABLE | TRACING, b + TE_CONTROL);
	writel(ACTIVE, funnel + FUN_CONTROL);
	fun = readl(funnel + FUN_CONTROL);
	wp = readl(sink + RAM_WP_LO);
	/* the encoder's last message on disabling finds the funnel off */
	writel(ctl, b + TE_CONTROL);
	v = readl(b + TE_CONTROL);
	wp2 = readl(sink + RAM_WP_LO);
	put_cpu();
	check(t, (fun & (ENABLE | EMPTY)) == EMPTY &&
	      wp != lower_32_bits(buf_pa),
	      "funnel disable flushes: Enable=0, Empty=1, the trace is in the sink",
	      fun);
	check(t, (v & OVERFLOW) && wp2 == wp,
	      "trace behind a disabled funnel is lost: StallOrOverflow=1, WP unchanged",
	      v);
	writel(ACTIVE, sink + RAM_CONTROL);
	writel(0, b + TE_CONTROL);
	writel(ACTIVE, b + TE_CONTROL);
}

static void selftest_funnel(struct tap *t)
{
	u32 v;

	writel(0, funnel + FUN_CONTROL);
	check(t, poll(funnel + FUN_CONTROL, ACTIVE, 0), "funnel held in reset",
	      readl(funnel + FUN_CONTROL));
	writel(ACTIVE, funnel + FUN_CONTROL);
	check(t, poll(funnel + FUN_CONTROL, ACTIVE, ACTIVE), "funnel active",
	      readl(funnel + FUN_CONTROL));
	v = readl(funnel + FUN_IMPL);
	check(t, (v & 0xff) == 1 && COMP_TYPE(v) == COMP_FUNNEL,
	      "trFunnelImpl: version 1.0, funnel", v);
	v = readl(funnel + FUN_CONTROL);
	check(t, (v & EMPTY) && !(v & ENABLE),
	      "funnel Empty=1, Enable=0 after reset", v);
	/* WARL: which inputs can be disabled, one per encoder here */
	writel(0xffff, funnel + FUN_DISINPUT);
	v = readl(funnel + FUN_DISINPUT);
	check(t, v == GENMASK(nenc - 1, 0),
	      "trFunnelDisInput: 0xffff reads back one bit per encoder", v);
	writel(0, funnel + FUN_CONTROL);
	writel(ACTIVE, funnel + FUN_CONTROL);
	v = readl(funnel + FUN_DISINPUT);
	check(t, v == 0, "funnel reset clears trFunnelDisInput", v);
	writel(ACTIVE | ENABLE, funnel + FUN_CONTROL);
	v = readl(funnel + FUN_CONTROL);
	check(t, (v & (ACTIVE | ENABLE | EMPTY)) == (ACTIVE | ENABLE | EMPTY),
	      "funnel enabled: Active=1, Enable=1, Empty=1", v);
	writel(ENABLE, funnel + FUN_CONTROL);
	v = readl(funnel + FUN_CONTROL);
	check(t, !(v & (ACTIVE | ENABLE)), "Enable=1 with Active=0 reads 0",
	      v);
	selftest_funnel_flush(t);
	writel(0, funnel + FUN_CONTROL);
}

static int selftest_show(struct seq_file *m, void *unused)
{
	struct tap t = { .m = m };
	unsigned int i;

	check(&t, nenc > 0 && sink && buf, "trace components in the DT", nenc);
	if (!sink || !buf)
		return 0;
	/* one hart feeds the sink directly, several through the funnel */
	check(&t, !funnel == (nenc == 1),
	      "a funnel if and only if there are several encoders", nenc);
	for (i = 0; i < nenc; i++)
		selftest_encoder(&t, i);
	selftest_sink(&t);
	if (funnel)
		selftest_funnel(&t);
	seq_printf(m, "1..%d\n", t.n);
	return 0;
}

static int selftest_open(struct inode *inode, struct file *file)
{
	return single_open(file, selftest_show, NULL);
}

static const struct proc_ops selftest_ops = {
	.proc_open = selftest_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

/* ---- capture ---------------------------------------------------------- */

static void stop_all(void)
{
	unsigned int i;

	/* status as tracing left it, before stopping changes it */
	for (i = 0; i < nenc; i++)
		last_ctl[i] = readl(enc[i] + TE_CONTROL);
	last_ram_ctl = readl(sink + RAM_CONTROL);
	if (funnel) {
		last_fun_ctl = readl(funnel + FUN_CONTROL);
		last_fun_dis = readl(funnel + FUN_DISINPUT);
	}
	/* encoders first, then the funnel, then the sink (TCI 5.4) */
	for (i = 0; i < nenc; i++) {
		writel(readl(enc[i] + TE_CONTROL) & ~(ENABLE | TRACING),
		       enc[i] + TE_CONTROL);
		poll(enc[i] + TE_CONTROL, EMPTY, EMPTY);
	}
	if (funnel) {
		writel(readl(funnel + FUN_CONTROL) & ~ENABLE,
		       funnel + FUN_CONTROL);
		poll(funnel + FUN_CONTROL, ENABLE | EMPTY, EMPTY);
	}
	writel(readl(sink + RAM_CONTROL) & ~ENABLE, sink + RAM_CONTROL);
	poll(sink + RAM_CONTROL, EMPTY, EMPTY);
	last_wp = ((u64)readl(sink + RAM_WP_HI) << 32) |
		  (readl(sink + RAM_WP_LO) & ~3u);
	last_wrap = readl(sink + RAM_WP_LO) & 1;
}

static void start_all(void)
{
	size_t size = cfg_size && cfg_size <= buf_size ? cfg_size : buf_size;
	unsigned int i;
	u32 dis = 0;

	/* sink, funnel, encoders (TCI 5.3) */
	sink_start(size, cfg_stop_on_wrap);
	for (i = 0; i < nenc; i++)
		if (cfg_discard & BIT(i))
			dis |= BIT(enc_input[i]);
	funnel_start(dis);
	for (i = 0; i < nenc; i++) {
		void __iomem *b = enc[i];
		u32 f = cfg_features;

		writel(0, b + TE_CONTROL);
		writel(ACTIVE, b + TE_CONTROL);
		/* several harts share the sink: SRC tells them apart */
		if (nenc > 1)
			f |= (4u << 28) | (i << 16);
		writel(f, b + TE_FEATURES);
		writel(cfg_filter_priv ? 1 : 0, b + TE_FILTERS);
		writel(BIT(0) | BIT(1), b + TE_F0_CONTROL);
		writel(cfg_filter_priv, b + TE_F0_MATCHINST);
		writel(cfg_ts ? BIT(0) | BIT(1) | (3 << 4) | BIT(15) : 0,
		       b + TS_CONTROL);
		writel(ACTIVE | (cfg_mode << 4) | (1 << 24) | cfg_ctl_extra,
		       b + TE_CONTROL);
		/* Enable last, then start tracing */
		writel(ACTIVE | ENABLE | (cfg_mode << 4) | (1 << 24) |
		       cfg_ctl_extra, b + TE_CONTROL);
		writel(ACTIVE | ENABLE | TRACING | (cfg_mode << 4) | (1 << 24) |
		       cfg_ctl_extra, b + TE_CONTROL);
	}
}

static ssize_t action_write(struct file *f, const char __user *u, size_t n,
			    loff_t *off)
{
	bool start = (uintptr_t)pde_data(file_inode(f));

	if (!sink || !buf)
		return -ENODEV;
	if (start)
		start_all();
	else
		stop_all();
	return n;
}

static const struct proc_ops action_ops = {
	.proc_write = action_write,
};

/*
 * "mode=6 features=0x108 ctl=0x30000 priv=1 size=4096 stopwrap=1 ts=1
 * discard=2" (discard: the encoders, by index, whose funnel input is
 * disabled)
 */
static ssize_t config_write(struct file *f, const char __user *u, size_t n,
			    loff_t *off)
{
	char text[256], *p, *tok;
	u32 v;

	if (n >= sizeof(text))
		return -EINVAL;
	if (copy_from_user(text, u, n))
		return -EFAULT;
	text[n] = '\0';
	p = strim(text);
	/* every capture states its whole configuration */
	cfg_mode = 6;
	cfg_features = 0;
	cfg_ctl_extra = 0;
	cfg_filter_priv = 1;
	cfg_size = 0;
	cfg_stop_on_wrap = 0;
	cfg_ts = 0;
	cfg_discard = 0;
	while ((tok = strsep(&p, " ")) != NULL) {
		char *val = strchr(tok, '=');

		if (!*tok)
			continue;
		if (!val || kstrtou32(val + 1, 0, &v))
			return -EINVAL;
		*val = '\0';
		if (!strcmp(tok, "mode") && (v == 3 || v == 6))
			cfg_mode = v;
		else if (!strcmp(tok, "features"))
			cfg_features = v & 0x7ff;
		else if (!strcmp(tok, "ctl"))
			cfg_ctl_extra = v & (BIT(9) | (0xff << 16));
		else if (!strcmp(tok, "priv") && v <= 0xf)
			cfg_filter_priv = v;
		else if (!strcmp(tok, "size") && v >= 256 && !(v & 3))
			cfg_size = v;
		else if (!strcmp(tok, "stopwrap") && v <= 1)
			cfg_stop_on_wrap = v;
		else if (!strcmp(tok, "ts") && v <= 1)
			cfg_ts = v;
		else if (!strcmp(tok, "discard") && funnel &&
			 v < BIT(nenc))
			cfg_discard = v;
		else
			return -EINVAL;
	}
	return n;
}

static const struct proc_ops config_ops = {
	.proc_write = config_write,
};

/* The captured bytes, oldest first (a wrapped buffer starts at WP). */
static ssize_t trace_read(struct file *f, char __user *u, size_t n,
			  loff_t *off)
{
	size_t size = cfg_size && cfg_size <= buf_size ? cfg_size : buf_size;
	size_t wpo = last_wp - buf_pa, total = last_wrap ? size : wpo;
	size_t pos = *off, chunk, from;
	u8 *tmp;

	if (pos >= total)
		return 0;
	from = last_wrap ? (wpo + pos) % size : pos;
	chunk = min3(n, total - pos, size - from);
	chunk = min_t(size_t, chunk, PAGE_SIZE);
	tmp = kmalloc(chunk, GFP_KERNEL);
	if (!tmp)
		return -ENOMEM;
	memcpy_fromio(tmp, buf + from, chunk);
	if (copy_to_user(u, tmp, chunk)) {
		kfree(tmp);
		return -EFAULT;
	}
	kfree(tmp);
	*off += chunk;
	return chunk;
}

static const struct proc_ops trace_ops = {
	.proc_read = trace_read,
	.proc_lseek = default_llseek,
};

static int status_show(struct seq_file *m, void *unused)
{
	unsigned int i;

	seq_printf(m, "wp 0x%llx wrap %d sink-before-stop 0x%08x\n", last_wp,
		   last_wrap, last_ram_ctl);
	for (i = 0; i < nenc; i++)
		seq_printf(m, "encoder %u control-before-stop 0x%08x input %u\n",
			   i, last_ctl[i], enc_input[i]);
	if (funnel)
		seq_printf(m, "funnel control-before-stop 0x%08x disinput 0x%x\n",
			   last_fun_ctl, last_fun_dis);
	return 0;
}

static int status_open(struct inode *inode, struct file *file)
{
	return single_open(file, status_show, NULL);
}

static const struct proc_ops status_ops = {
	.proc_open = status_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

/* ---- set-up ------------------------------------------------------------ */

/* The logical CPU an encoder node's "cpus" names. */
static int encoder_cpu(struct device_node *np)
{
	struct device_node *cpu = of_parse_phandle(np, "cpus", 0);
	int id = cpu ? of_cpu_node_to_id(cpu) : -ENODEV;

	of_node_put(cpu);
	return id;
}

/*
 * The funnel input an encoder feeds: the reg of the port its out-port's
 * endpoint leads to (0 when it leads to a sink's only port). The of_graph
 * helpers look for "ports" or "port" right under the node they are given,
 * so they get the out-ports node, as CoreSight's do.
 */
static u32 encoder_input(struct device_node *np)
{
	struct device_node *out, *ep = NULL, *port = NULL;
	u32 n = 0;

	out = of_get_child_by_name(np, "out-ports");
	if (out)
		ep = of_graph_get_next_endpoint(out, NULL);
	if (ep)
		port = of_graph_get_remote_port(ep);
	if (port && of_property_read_u32(port, "reg", &n))
		n = 0;
	of_node_put(port);
	of_node_put(ep);
	of_node_put(out);
	return n;
}

static int __init ntrace_hw_init(void)
{
	struct device_node *np;
	struct resource res;

	for_each_compatible_node(np, NULL, "riscv,trace-component") {
		void __iomem *regs;
		u32 impl;

		if (of_address_to_resource(np, 0, &res))
			continue;
		regs = ioremap(res.start, resource_size(&res));
		if (!regs)
			continue;
		/* activate to read the component type */
		writel(ACTIVE, regs);
		impl = readl(regs + 4);
		if (COMP_TYPE(impl) == COMP_ENCODER && nenc < MAX_ENC) {
			enc_cpu[nenc] = encoder_cpu(np);
			enc_input[nenc] = encoder_input(np);
			enc[nenc++] = regs;
		} else if (COMP_TYPE(impl) == COMP_FUNNEL && !funnel) {
			funnel = regs;
		} else if (COMP_TYPE(impl) == COMP_RAM_SINK && !sink) {
			struct device_node *mem;

			sink = regs;
			mem = of_parse_phandle(np, "memory-region", 0);
			if (mem && !of_address_to_resource(mem, 0, &res)) {
				buf_pa = res.start;
				buf_size = resource_size(&res);
				buf = ioremap(buf_pa, buf_size);
			}
			of_node_put(mem);
		} else {
			iounmap(regs);
		}
	}
	if (!nenc || !sink || !buf || (nenc > 1 && !funnel))
		pr_warn("ntrace_hw: %u encoders, funnel %s, sink %s, buffer %s\n",
			nenc, funnel ? "found" : "missing",
			sink ? "found" : "missing", buf ? "mapped" : "missing");
	dir = proc_mkdir("ntrace_hw", NULL);
	if (!dir)
		return -ENOMEM;
	proc_create("selftest", 0400, dir, &selftest_ops);
	proc_create("config", 0200, dir, &config_ops);
	proc_create_data("start", 0200, dir, &action_ops, (void *)1);
	proc_create_data("stop", 0200, dir, &action_ops, (void *)0);
	proc_create("trace", 0400, dir, &trace_ops);
	proc_create("status", 0400, dir, &status_ops);
	return 0;
}

static void __exit ntrace_hw_exit(void)
{
	unsigned int i;

	proc_remove(dir);
	for (i = 0; i < nenc; i++)
		iounmap(enc[i]);
	if (funnel)
		iounmap(funnel);
	if (sink)
		iounmap(sink);
	if (buf)
		iounmap(buf);
}

module_init(ntrace_hw_init);
module_exit(ntrace_hw_exit);
MODULE_DESCRIPTION("Test module for the lab's emulated N-Trace hardware");
MODULE_LICENSE("GPL");
