// SPDX-License-Identifier: GPL-2.0
/*
 * Branch stacks for perf from RISC-V Control Transfer Records (Smctr/Ssctr).
 *
 * CTR keeps the most recent control transfers of a hart in a small ring of
 * entry registers that S-mode reads through the Sscsrind window (siselect
 * 0x200 + logical entry). This file turns perf's branch_sample_type into a
 * sctrctl value, reads the ring into perf_branch_entry records when the SBI
 * PMU driver handles a counter overflow, and keeps one task's records away
 * from every other task.
 *
 * The hardware is shared by all branch stack events of a CPU, so only events
 * asking for the same sctrctl value can be active on a CPU at the same time;
 * another one is refused by pmu::add() and perf multiplexes it.
 */
#define pr_fmt(fmt) "riscv-ctr: " fmt

#include <linux/bitfield.h>
#include <linux/bits.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/irqflags.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>
#include <linux/of.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/riscv/ctr.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <asm/asm-extable.h>
#include <asm/csr.h>
#include <asm/hwcap.h>
#include <asm/pgtable.h>

#define CSR_SCTRCTL		0x14e
#define CSR_SCTRSTATUS		0x14f
#define CSR_SCTRDEPTH		0x15f
/* siselect, sireg, sireg2, sireg3 */
#define CTR_CSR_SISELECT	0x150
#define CTR_CSR_SIREG		0x151
#define CTR_CSR_SIREG2		0x152
#define CTR_CSR_SIREG3		0x153
#define CTR_ENTRY_BASE		0x200

/* sctrctl */
#define CTRCTL_U		BIT_ULL(0)
#define CTRCTL_S		BIT_ULL(1)
#define CTRCTL_RASEMU		BIT_ULL(7)
#define CTRCTL_STE		BIT_ULL(8)
#define CTRCTL_BPFRZ		BIT_ULL(11)
#define CTRCTL_LCOFIFRZ		BIT_ULL(12)
#define CTRCTL_EXCINH		BIT_ULL(33)
#define CTRCTL_INTRINH		BIT_ULL(34)
#define CTRCTL_TRETINH		BIT_ULL(35)
#define CTRCTL_NTBREN		BIT_ULL(36)
#define CTRCTL_TKBRINH		BIT_ULL(37)
#define CTRCTL_INDCALLINH	BIT_ULL(40)
#define CTRCTL_DIRCALLINH	BIT_ULL(41)
#define CTRCTL_INDJMPINH	BIT_ULL(42)
#define CTRCTL_DIRJMPINH	BIT_ULL(43)
#define CTRCTL_CORSWAPINH	BIT_ULL(44)
#define CTRCTL_RETINH		BIT_ULL(45)
#define CTRCTL_INDLJMPINH	BIT_ULL(46)
#define CTRCTL_DIRLJMPINH	BIT_ULL(47)

#define CTRCTL_INH_ALL	(CTRCTL_EXCINH | CTRCTL_INTRINH | CTRCTL_TRETINH | \
			 CTRCTL_TKBRINH | CTRCTL_INDCALLINH |		   \
			 CTRCTL_DIRCALLINH | CTRCTL_INDJMPINH |		   \
			 CTRCTL_DIRJMPINH | CTRCTL_CORSWAPINH |		   \
			 CTRCTL_RETINH | CTRCTL_INDLJMPINH |		   \
			 CTRCTL_DIRLJMPINH)
/* Every bit this driver may ever write; probed at boot. */
#define CTRCTL_PROBE	(CTRCTL_U | CTRCTL_S | CTRCTL_RASEMU | CTRCTL_STE | \
			 CTRCTL_BPFRZ | CTRCTL_LCOFIFRZ | CTRCTL_NTBREN |   \
			 CTRCTL_INH_ALL)

/* sctrstatus */
#define CTRSTATUS_WRPTR		GENMASK(7, 0)
#define CTRSTATUS_FROZEN	BIT(31)

/* sctrdepth */
#define CTRDEPTH_MASK		GENMASK(2, 0)
#define CTRDEPTH_MAX_ENC	4

/* Entry registers */
#define CTRSOURCE_V		BIT_ULL(0)
#define CTRTARGET_MISP		BIT_ULL(0)
#define CTRDATA_TYPE		GENMASK_ULL(3, 0)
#define CTRDATA_CCV		BIT_ULL(15)
#define CTRDATA_CCM		GENMASK_ULL(27, 16)
#define CTRDATA_CCE		GENMASK_ULL(31, 28)

/* ctrdata.TYPE (the E-trace itype encodings) */
enum {
	CTR_TYPE_NONE		= 0,
	CTR_TYPE_EXCEPTION	= 1,
	CTR_TYPE_INTERRUPT	= 2,
	CTR_TYPE_TRAP_RETURN	= 3,
	CTR_TYPE_NOT_TAKEN	= 4,
	CTR_TYPE_TAKEN		= 5,
	CTR_TYPE_IND_CALL	= 8,
	CTR_TYPE_DIR_CALL	= 9,
	CTR_TYPE_IND_JUMP	= 10,
	CTR_TYPE_DIR_JUMP	= 11,
	CTR_TYPE_CORSWAP	= 12,
	CTR_TYPE_RETURN		= 13,
	CTR_TYPE_IND_LJUMP	= 14,
	CTR_TYPE_DIR_LJUMP	= 15,
};

#define CTR_MAX_DEPTH		256

/* ecall; other exceptions are told apart by the instruction that trapped */
#define CTR_INSN_ECALL		0x00000073U

/* SCTRCLR; the assembler may not know the mnemonic. */
static __always_inline void ctr_sctrclr(void)
{
	asm volatile (".insn i 0x73, 0, x0, x0, 0x104" ::: "memory");
}

/* Branch filters the driver understands; anything else is refused. */
#define CTR_BRANCH_TYPES	(PERF_SAMPLE_BRANCH_ANY |		\
				 PERF_SAMPLE_BRANCH_ANY_CALL |		\
				 PERF_SAMPLE_BRANCH_ANY_RETURN |	\
				 PERF_SAMPLE_BRANCH_IND_CALL |		\
				 PERF_SAMPLE_BRANCH_CALL |		\
				 PERF_SAMPLE_BRANCH_COND |		\
				 PERF_SAMPLE_BRANCH_IND_JUMP)
#define CTR_BRANCH_OPTIONS	(PERF_SAMPLE_BRANCH_PLM_ALL |		\
				 PERF_SAMPLE_BRANCH_NO_FLAGS |		\
				 PERF_SAMPLE_BRANCH_NO_CYCLES |		\
				 PERF_SAMPLE_BRANCH_TYPE_SAVE |		\
				 PERF_SAMPLE_BRANCH_HW_INDEX |		\
				 PERF_SAMPLE_BRANCH_PRIV_SAVE)

struct ctr_raw {
	u64 src;
	u64 dst;
	u64 data;
};

/*
 * A task's call stack kept across its context switches (CALL_STACK
 * events), allocated by perf core from pmu->task_ctx_cache: per task
 * (task_struct::perf_ctx_data) on mainline, per task context
 * (perf_event_pmu_context::task_ctx_data, which perf swaps with the
 * context) on kernels before 6.15. Sized for the hardware's largest depth.
 */
struct ctr_task_ctx {
	unsigned int nr;		/* saved entries, 0: nothing saved */
	unsigned long wrptr;
	struct ctr_raw e[];
};

struct ctr_cpu {
	unsigned int users;
	unsigned int callstack_users;	/* CALL_STACK events added */
	unsigned int enc;		/* sctrdepth read back on this CPU */
	u64 ctl;
	struct perf_branch_stack stack;
	struct perf_branch_entry entries[CTR_MAX_DEPTH];
};

static struct ctr_cpu __percpu *ctr_cpus;
static struct kmem_cache *ctr_task_ctx_cache;
static bool ctr_present;
static u64 ctr_ctl_ok;			/* implemented sctrctl bits */
static unsigned int ctr_enc_ok;		/* bit n: DEPTH encoding n reads back */
static unsigned int ctr_max_enc;	/* largest accepted DEPTH encoding */
static unsigned int ctr_enc;		/* DEPTH encoding asked for */
static bool ctr_has_misp;
static bool ctr_has_cc;

static DEFINE_SPINLOCK(ctr_lock);
static unsigned int ctr_nr_events;	/* protected by ctr_lock */
static bool ctr_reconfiguring;		/* protected by ctr_lock */

static unsigned int ctr_depth_entries(unsigned int enc)
{
	return 16U << enc;
}

/*
 * Largest accepted encoding whose depth does not exceed @entries, else the
 * smallest accepted one. The accepted encodings need not be contiguous.
 */
static unsigned int ctr_enc_for(unsigned int entries)
{
	unsigned int enc, best = __ffs(ctr_enc_ok);

	for (enc = 0; enc <= CTRDEPTH_MAX_ENC; enc++)
		if ((ctr_enc_ok & BIT(enc)) && ctr_depth_entries(enc) <= entries)
			best = enc;
	return best;
}

/*
 * Writes sctrdepth on this CPU and keeps what the hardware took (WARL): the
 * depth used for reading, saving and hw_idx is always the one read back.
 */
static void ctr_write_depth(unsigned int enc)
{
	struct ctr_cpu *cc = this_cpu_ptr(ctr_cpus);

	csr_write(CSR_SCTRDEPTH, enc);
	cc->enc = csr_read(CSR_SCTRDEPTH) & CTRDEPTH_MASK;
	if (cc->enc != enc || !(ctr_enc_ok & BIT(cc->enc)))
		pr_warn_once("CPU%d: sctrdepth %u written, %u read back\n",
			     smp_processor_id(), enc, cc->enc);
	if (!(ctr_enc_ok & BIT(cc->enc)))
		cc->enc = __ffs(ctr_enc_ok);
}

/*
 * Indirect access to one logical entry. Callers keep interrupts off so
 * that nothing else can move siselect between the select and the reads;
 * siselect is put back for code that was interrupted around us.
 */
static void ctr_read_entry(unsigned int idx, struct ctr_raw *e)
{
	csr_write(CTR_CSR_SISELECT, CTR_ENTRY_BASE + idx);
	e->src = csr_read(CTR_CSR_SIREG);
	e->dst = csr_read(CTR_CSR_SIREG2);
	e->data = csr_read(CTR_CSR_SIREG3);
}

static void ctr_write_entry(unsigned int idx, const struct ctr_raw *e)
{
	csr_write(CTR_CSR_SISELECT, CTR_ENTRY_BASE + idx);
	csr_write(CTR_CSR_SIREG, e->src);
	csr_write(CTR_CSR_SIREG2, e->dst);
	csr_write(CTR_CSR_SIREG3, e->data);
}

/* Reads logical entries 0.. up to the first invalid one; returns how many. */
static unsigned int ctr_read_all(struct ctr_raw *e, unsigned int max)
{
	unsigned long flags, sel;
	unsigned int n;

	local_irq_save(flags);
	sel = csr_read(CTR_CSR_SISELECT);
	for (n = 0; n < max; n++) {
		ctr_read_entry(n, &e[n]);
		if (!(e[n].src & CTRSOURCE_V))
			break;
	}
	csr_write(CTR_CSR_SISELECT, sel);
	local_irq_restore(flags);
	return n;
}

/* Empty buffer, recording not frozen; other sctrstatus bits are kept. */
static void ctr_clear(void)
{
	ctr_sctrclr();
	csr_clear(CSR_SCTRSTATUS, CTRSTATUS_WRPTR | CTRSTATUS_FROZEN);
}

static void ctr_disable(void)
{
	csr_write(CSR_SCTRCTL, 0);
	ctr_clear();
}

/* An extension in every possible CPU's riscv,isa-extensions. */
static bool ctr_dt_has(const char *ext)
{
	struct device_node *np;
	int cpu;

	for_each_possible_cpu(cpu) {
		np = of_get_cpu_node(cpu, NULL);
		if (!np)
			return false;
		if (of_property_match_string(np, "riscv,isa-extensions",
					     ext) < 0) {
			of_node_put(np);
			return false;
		}
		of_node_put(np);
	}
	return true;
}

/*
 * The kernel's ISA extension detection where it knows the extension (it
 * validates the device tree and ACPI and takes what every hart has); the
 * device tree string otherwise (Linux 7.3 knows Sscsrind, not Ssctr).
 */
static bool ctr_isa_has_ssctr(void)
{
#ifdef RISCV_ISA_EXT_SSCTR
	return riscv_isa_extension_available(NULL, SSCTR);
#else
	return ctr_dt_has("ssctr");
#endif
}

static bool ctr_isa_has_sscsrind(void)
{
#ifdef RISCV_ISA_EXT_SSCSRIND
	return riscv_isa_extension_available(NULL, SSCSRIND);
#else
	return ctr_dt_has("sscsrind");
#endif
}

/*
 * Reads a CSR with an exception fixup: 0, or -EFAULT (written to a5 by the
 * fixup) when the access trapped. S-mode CTR and Sscsrind accesses raise
 * an illegal-instruction exception unless M-mode set mstateen0.CTR (and
 * .CSRIND); firmware that predates Smctr leaves them clear.
 */
#define ctr_csr_try_read(csr)						\
({									\
	register long __err asm("a5") = 0;				\
	unsigned long __val;						\
									\
	asm volatile ("1:	csrr	%[val], " __stringify(csr) "\n"	\
		      "2:\n"						\
		      _ASM_EXTABLE_UACCESS_ERR(1b, 2b, a5)		\
		      : "+r" (__err), [val] "=r" (__val));		\
	__err;								\
})

/* Write/read-back probe of what this hart implements; CTR left off. */
static void ctr_probe_hw(void)
{
	unsigned long flags, sel;
	struct ctr_raw e = {};
	unsigned int enc;

	local_irq_save(flags);
	csr_write(CSR_SCTRCTL, CTRCTL_PROBE);
	ctr_ctl_ok = csr_read(CSR_SCTRCTL) & CTRCTL_PROBE;
	csr_write(CSR_SCTRCTL, 0);

	/* WARL: only the encodings that read back as written are usable */
	ctr_enc_ok = 0;
	for (enc = 0; enc <= CTRDEPTH_MAX_ENC; enc++) {
		csr_write(CSR_SCTRDEPTH, enc);
		if ((csr_read(CSR_SCTRDEPTH) & CTRDEPTH_MASK) == enc)
			ctr_enc_ok |= BIT(enc);
	}
	ctr_max_enc = ctr_enc_ok ? __fls(ctr_enc_ok) : 0;

	/* MISP and the cycle count are WARL fields of writable entries. */
	sel = csr_read(CTR_CSR_SISELECT);
	e.src = CTRSOURCE_V;
	e.dst = CTRTARGET_MISP;
	e.data = CTRDATA_CCV | FIELD_PREP(CTRDATA_CCM, 1);
	ctr_write_entry(0, &e);
	ctr_read_entry(0, &e);
	csr_write(CTR_CSR_SISELECT, sel);
	ctr_has_misp = e.dst & CTRTARGET_MISP;
	ctr_has_cc = e.data & CTRDATA_CCV;
	ctr_disable();
	local_irq_restore(flags);
}

static unsigned int ctr_depth_param = CTR_MAX_DEPTH;

static void ctr_set_depth_cpu(void *unused)
{
	ctr_write_depth(ctr_enc);
	ctr_disable();
}

static int ctr_depth_set(const char *val, const struct kernel_param *kp)
{
	unsigned int entries;
	unsigned long flags;
	bool busy;
	int ret;

	ret = kstrtouint(val, 0, &entries);
	if (ret)
		return ret;
	if (entries < 16 || entries > CTR_MAX_DEPTH || !is_power_of_2(entries))
		return -EINVAL;
	if (!ctr_present) {
		/* Boot time: only remember the cap. */
		ctr_depth_param = entries;
		return 0;
	}

	spin_lock_irqsave(&ctr_lock, flags);
	busy = ctr_nr_events || ctr_reconfiguring;
	if (!busy)
		ctr_reconfiguring = true;
	spin_unlock_irqrestore(&ctr_lock, flags);
	if (busy)
		return -EBUSY;

	cpus_read_lock();
	ctr_depth_param = entries;
	ctr_enc = ctr_enc_for(entries);
	on_each_cpu(ctr_set_depth_cpu, NULL, 1);
	cpus_read_unlock();

	spin_lock_irqsave(&ctr_lock, flags);
	ctr_reconfiguring = false;
	spin_unlock_irqrestore(&ctr_lock, flags);
	return 0;
}

/* The depth this CPU's sctrdepth reads back. */
static int ctr_depth_get(char *buf, const struct kernel_param *kp)
{
	unsigned int enc;

	if (!ctr_present)
		return sysfs_emit(buf, "0\n");
	enc = get_cpu_ptr(ctr_cpus)->enc;
	put_cpu_ptr(ctr_cpus);
	return sysfs_emit(buf, "%u\n", ctr_depth_entries(enc));
}

static const struct kernel_param_ops ctr_depth_ops = {
	.set = ctr_depth_set,
	.get = ctr_depth_get,
};

/*
 * riscv_ctr.depth=N on the command line caps the depth at boot; writing
 * /sys/module/riscv_ctr/parameters/depth changes it while no branch stack
 * event exists. Reading gives the depth in use (0: no CTR).
 */
module_param_cb(depth, &ctr_depth_ops, NULL, 0644);
MODULE_PARM_DESC(depth, "CTR depth cap in entries (16..256, power of two)");

static int ctr_max_depth_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%u\n",
			  ctr_present ? ctr_depth_entries(ctr_max_enc) : 0);
}

static const struct kernel_param_ops ctr_max_depth_ops = {
	.get = ctr_max_depth_get,
};

module_param_cb(max_depth, &ctr_max_depth_ops, NULL, 0444);
MODULE_PARM_DESC(max_depth, "Largest depth the hardware accepts (read-only)");

/*
 * Mainline (6.15) gave pmu::sched_task() the task being switched, and
 * 6.12.117 took that over; older 6.12.y and vendor kernels still have
 * the two-argument form. A kernel version check would get the stable
 * backports wrong, so the build probes the form instead (tools/lab/
 * conftest) and defines HAVE_PMU_SCHED_TASK_NO_TASK for the old one.
 */
#ifdef HAVE_PMU_SCHED_TASK_NO_TASK
static void ctr_sched_task_hook(struct perf_event_pmu_context *pmu_ctx,
				bool sched_in)
{
	riscv_ctr_sched_task(pmu_ctx, current, sched_in);
}
#else
#define ctr_sched_task_hook riscv_ctr_sched_task
#endif

/**
 * riscv_ctr_init_pmu() - detect CTR and hook it into a PMU
 * @pmu: the SBI PMU, before perf_pmu_register()
 *
 * Looks for Ssctr and Sscsrind on every CPU, checks that S-mode may access
 * them, probes the boot hart and, when CTR is usable, installs the context
 * switch callback and the cache for per-task call stacks. Must be called
 * once, with the overflow interrupt available.
 *
 * Return: true when branch stack sampling is available.
 */
bool riscv_ctr_init_pmu(struct pmu *pmu)
{
	unsigned int max;
	bool usable;

	if (!IS_ENABLED(CONFIG_64BIT) || !ctr_isa_has_ssctr())
		return false;
	if (!ctr_isa_has_sscsrind()) {
		pr_info("Ssctr without Sscsrind, not using CTR\n");
		return false;
	}

	/* Trap-guarded first access, then the probe, on one hart. */
	preempt_disable();
	usable = !ctr_csr_try_read(CSR_SCTRCTL) &&
		 !ctr_csr_try_read(CTR_CSR_SISELECT);
	if (usable)
		ctr_probe_hw();
	preempt_enable();
	if (!usable) {
		pr_info("CTR CSRs trap in S-mode (firmware left mstateen0.CTR or CSRIND clear?), not using CTR\n");
		return false;
	}
	if (!(ctr_ctl_ok & CTRCTL_LCOFIFRZ) || !(ctr_ctl_ok & CTRCTL_U) ||
	    !ctr_enc_ok) {
		pr_warn("sctrctl %#llx lacks LCOFIFRZ or U, or no sctrdepth value reads back, not using CTR\n",
			ctr_ctl_ok);
		return false;
	}

	max = ctr_depth_entries(ctr_max_enc);
	ctr_cpus = alloc_percpu(struct ctr_cpu);
	ctr_task_ctx_cache = kmem_cache_create("riscv_ctr_task_ctx",
					       struct_size_t(struct ctr_task_ctx,
							     e, max),
					       0, 0, NULL);
	if (!ctr_cpus || !ctr_task_ctx_cache) {
		free_percpu(ctr_cpus);
		ctr_cpus = NULL;
		kmem_cache_destroy(ctr_task_ctx_cache);
		ctr_task_ctx_cache = NULL;
		return false;
	}

	/* Every CPU gets the depth from the hotplug starting callback. */
	ctr_enc = ctr_enc_for(ctr_depth_param);
	ctr_present = true;
	pmu->sched_task = ctr_sched_task_hook;
	pmu->task_ctx_cache = ctr_task_ctx_cache;
	pr_info("depth %u (max %u, DEPTH values %#x), sctrctl %#llx%s%s\n",
		ctr_depth_entries(ctr_enc), max, ctr_enc_ok, ctr_ctl_ok,
		ctr_has_misp ? ", misp" : "", ctr_has_cc ? ", cycles" : "");
	return true;
}

/**
 * riscv_ctr_starting_cpu() - program CTR on a CPU coming online
 *
 * Called from the SBI PMU driver's CPU hotplug starting callback.
 */
void riscv_ctr_starting_cpu(void)
{
	if (!ctr_present)
		return;
	ctr_write_depth(ctr_enc);
	ctr_disable();
}

/**
 * riscv_ctr_dying_cpu() - stop CTR on a CPU going offline
 */
void riscv_ctr_dying_cpu(void)
{
	/* perf has already removed this CPU's events. */
	if (ctr_present)
		ctr_disable();
}

/**
 * riscv_ctr_cpu_pm_exit() - program CTR again after a low power state
 *
 * Called from the SBI PMU driver's CPU_PM_EXIT notifier. A non-retentive
 * suspend loses sctrdepth and sctrctl; the buffer content is gone anyway,
 * so the depth is written again and, while events record on this CPU,
 * their sctrctl value on an empty buffer.
 */
void riscv_ctr_cpu_pm_exit(void)
{
	struct ctr_cpu *cc;

	if (!ctr_present)
		return;
	cc = this_cpu_ptr(ctr_cpus);
	ctr_write_depth(ctr_enc);
	csr_write(CSR_SCTRCTL, 0);
	ctr_clear();
	if (cc->users)
		csr_write(CSR_SCTRCTL, cc->ctl);
}

static void ctr_event_destroy(struct perf_event *event)
{
	unsigned long flags;

	spin_lock_irqsave(&ctr_lock, flags);
	ctr_nr_events--;
	spin_unlock_irqrestore(&ctr_lock, flags);
}

/* branch_sample_type -> sctrctl, or a negative errno. */
static s64 ctr_filter(struct perf_event *event)
{
	u64 bst = event->attr.branch_sample_type;
	u64 ctl = CTRCTL_LCOFIFRZ;
	u64 types = bst & CTR_BRANCH_TYPES;

	if (bst & ~(CTR_BRANCH_TYPES | CTR_BRANCH_OPTIONS |
		    PERF_SAMPLE_BRANCH_CALL_STACK))
		return -EOPNOTSUPP;

	/*
	 * perf_copy_attr() has already checked perf_allow_kernel() for a
	 * branch stack that asks for kernel entries.
	 */
	if (bst & PERF_SAMPLE_BRANCH_KERNEL)
		ctl |= CTRCTL_S;
	if (bst & PERF_SAMPLE_BRANCH_USER)
		ctl |= CTRCTL_U;
	/* HV: there is no hypervisor below this kernel to record. */
	if (!(ctl & (CTRCTL_U | CTRCTL_S)))
		return -EOPNOTSUPP;

	if (bst & PERF_SAMPLE_BRANCH_CALL_STACK) {
		/* RAS emulation ignores the type filters: nothing to add. */
		if (types)
			return -EOPNOTSUPP;
		ctl |= CTRCTL_RASEMU;
	} else if (!types) {
		return -EINVAL;
	} else if (!(types & PERF_SAMPLE_BRANCH_ANY)) {
		u64 inh = CTRCTL_INH_ALL;

		/* Calls include traps into the kernel, as on x86. */
		if (types & PERF_SAMPLE_BRANCH_ANY_CALL)
			inh &= ~(CTRCTL_DIRCALLINH | CTRCTL_INDCALLINH |
				 CTRCTL_CORSWAPINH | CTRCTL_EXCINH |
				 CTRCTL_INTRINH);
		if (types & PERF_SAMPLE_BRANCH_ANY_RETURN)
			inh &= ~(CTRCTL_RETINH | CTRCTL_TRETINH |
				 CTRCTL_CORSWAPINH);
		if (types & PERF_SAMPLE_BRANCH_IND_CALL)
			inh &= ~CTRCTL_INDCALLINH;
		if (types & PERF_SAMPLE_BRANCH_CALL)
			inh &= ~CTRCTL_DIRCALLINH;
		if (types & PERF_SAMPLE_BRANCH_COND)
			inh &= ~CTRCTL_TKBRINH;
		if (types & PERF_SAMPLE_BRANCH_IND_JUMP)
			inh &= ~(CTRCTL_INDJMPINH | CTRCTL_INDLJMPINH);
		ctl |= inh;
	}

	/* A filter the hardware cannot apply would leak other kinds. */
	if (ctl & ~ctr_ctl_ok)
		return -EOPNOTSUPP;
	return ctl;
}

/**
 * riscv_ctr_event_init() - validate a branch stack event
 * @event: an event of the SBI PMU with PERF_SAMPLE_BRANCH_STACK
 *
 * Computes the sctrctl value the event needs into event->hw.extra_reg.
 *
 * Return: 0, -EOPNOTSUPP when the hardware cannot record what is asked,
 * -EINVAL for a malformed request, -EACCES when kernel branches are asked
 * for without the permission to see them, -EBUSY while the depth changes.
 */
int riscv_ctr_event_init(struct perf_event *event)
{
	unsigned long flags;
	bool busy;
	s64 ctl;

	if (!ctr_present)
		return -EOPNOTSUPP;
	if (event->pmu->capabilities & PERF_PMU_CAP_NO_INTERRUPT)
		return -EOPNOTSUPP;
	if (!is_sampling_event(event))
		return -EINVAL;

	ctl = ctr_filter(event);
	if (ctl < 0)
		return ctl;
	event->hw.extra_reg.config = ctl;

	spin_lock_irqsave(&ctr_lock, flags);
	busy = ctr_reconfiguring;
	if (!busy)
		ctr_nr_events++;
	spin_unlock_irqrestore(&ctr_lock, flags);
	if (busy)
		return -EBUSY;
	event->destroy = ctr_event_destroy;
	/*
	 * Call stacks are saved per task across context switches: perf core
	 * then allocates the task's data from pmu->task_ctx_cache. Set last,
	 * on success only: mainline detaches the data of a failed event that
	 * has the flag.
	 */
	if (ctl & CTRCTL_RASEMU)
		event->attach_state |= PERF_ATTACH_TASK_DATA;
	return 0;
}

/*
 * The call stack data of a task context: under rcu_read_lock() or with
 * interrupts off. @pmu_ctx is the task's PMU context (old kernels), @task
 * the task (mainline); either may be NULL for CPU-wide events.
 */
static struct ctr_task_ctx *ctr_task_data(struct perf_event_pmu_context *pmu_ctx,
					  struct task_struct *task)
{
#ifdef HAVE_EPC_TASK_CTX_DATA
	return pmu_ctx ? pmu_ctx->task_ctx_data : NULL;
#else
	struct perf_ctx_data *cd;

	if (!task)
		return NULL;
	cd = rcu_dereference(task->perf_ctx_data);
	return cd ? cd->data : NULL;
#endif
}

/*
 * CALL_STACK events added on this CPU: those of the running task's context
 * and CPU-wide ones. They are counted per CPU, not per task: when perf
 * swaps the cloned contexts of a parent and child, the events of one run
 * on behalf of the other without being added again, and the stack to keep
 * is the running task's whichever context is in.
 */
static void ctr_callstack_account(struct ctr_cpu *cc, struct perf_event *event,
				  int delta)
{
	if (event->hw.extra_reg.config & CTRCTL_RASEMU)
		cc->callstack_users += delta;
}

/**
 * riscv_ctr_add() - start recording for an event scheduled on this CPU
 * @event: a branch stack event accepted by riscv_ctr_event_init()
 *
 * Return: 0, or -EBUSY when another event with a different filter owns CTR
 * on this CPU.
 */
int riscv_ctr_add(struct perf_event *event)
{
	struct ctr_cpu *cc = this_cpu_ptr(ctr_cpus);
	u64 ctl = event->hw.extra_reg.config;

	if (cc->users && cc->ctl != ctl)
		return -EBUSY;
	if (!cc->users) {
		/* Nothing recorded before this event may be seen by it. */
		csr_write(CSR_SCTRCTL, 0);
		ctr_clear();
		cc->ctl = ctl;
		csr_write(CSR_SCTRCTL, ctl);
	}
	cc->users++;
	ctr_callstack_account(cc, event, 1);
	perf_sched_cb_inc(event->pmu);
	return 0;
}

/**
 * riscv_ctr_del() - stop recording for an event leaving this CPU
 * @event: an event riscv_ctr_add() accepted
 */
void riscv_ctr_del(struct perf_event *event)
{
	struct ctr_cpu *cc = this_cpu_ptr(ctr_cpus);

	if (WARN_ON_ONCE(!cc->users))
		return;
	perf_sched_cb_dec(event->pmu);
	ctr_callstack_account(cc, event, -1);
	if (!--cc->users)
		ctr_disable();
}

static unsigned int ctr_depth(struct ctr_cpu *cc)
{
	return ctr_depth_entries(cc->enc);
}

static void ctr_save(struct ctr_cpu *cc, struct ctr_task_ctx *tc)
{
	unsigned long status;

	/* one csrrs: no recorded transfer can slip between read and write */
	status = csr_read_set(CSR_SCTRSTATUS, CTRSTATUS_FROZEN);
	tc->nr = ctr_read_all(tc->e, ctr_depth(cc));
	tc->wrptr = status & CTRSTATUS_WRPTR;
}

static void ctr_restore(struct ctr_task_ctx *tc)
{
	unsigned long flags, sel, status;
	unsigned int i;

	local_irq_save(flags);
	ctr_sctrclr();
	/*
	 * WRPTR first, so that logical entries land where they were; frozen
	 * meanwhile, so a read-modify-write keeps the bits we do not know.
	 */
	csr_set(CSR_SCTRSTATUS, CTRSTATUS_FROZEN);
	status = csr_read(CSR_SCTRSTATUS) & ~CTRSTATUS_WRPTR;
	csr_write(CSR_SCTRSTATUS, status | tc->wrptr);
	sel = csr_read(CTR_CSR_SISELECT);
	for (i = 0; i < tc->nr; i++)
		ctr_write_entry(i, &tc->e[i]);
	csr_write(CTR_CSR_SISELECT, sel);
	csr_clear(CSR_SCTRSTATUS, CTRSTATUS_FROZEN);
	local_irq_restore(flags);
}

/**
 * riscv_ctr_sched_task() - context switch callback of the PMU
 * @pmu_ctx: perf's PMU context of the task (or of the CPU)
 * @task: the task being switched in or out
 * @sched_in: true when the next task is being switched in
 *
 * A task switched in starts with an empty buffer, except that a task's
 * own call stack (CALL_STACK events) is saved at switch out and put back.
 * The saved stack lives in data perf core keeps with the task (mainline)
 * or swaps with its context (old kernels), so a stack goes back to the
 * task it came from, cloned contexts swapped between parent and child
 * included.
 */
void riscv_ctr_sched_task(struct perf_event_pmu_context *pmu_ctx,
			  struct task_struct *task, bool sched_in)
{
	struct ctr_cpu *cc = this_cpu_ptr(ctr_cpus);
	struct ctr_task_ctx *tc;
	bool callstack;

	if (!cc->users)
		return;
	rcu_read_lock();
	tc = ctr_task_data(pmu_ctx, task);
	callstack = tc && cc->callstack_users;
	if (!sched_in) {
		if (callstack)
			ctr_save(cc, tc);
		else if (tc)
			tc->nr = 0;
	} else {
		if (callstack && tc->nr)
			ctr_restore(tc);
		else
			ctr_clear();
		if (tc)
			tc->nr = 0;
	}
	rcu_read_unlock();
}

static bool ctr_kernel_addr(u64 addr)
{
	return addr >= TASK_SIZE_64;
}

/*
 * ctrdata.TYPE says "exception" for every synchronous trap. The
 * instruction at the source tells an ecall (a system call) from a load or
 * store that faulted (page fault, access fault, misaligned access) and
 * from a fault of the instruction itself (fetch faults, illegal
 * instructions, breakpoints), in perf's terms as the Arm BRBE driver
 * reports them.
 */
static void ctr_exception_type(u64 from, struct perf_branch_entry *br)
{
	u16 lo, hi = 0;
	u32 insn;
	int err;

	if (ctr_kernel_addr(from)) {
		err = copy_from_kernel_nofault(&lo, (void *)from, sizeof(lo));
		if (!err && (lo & 3) == 3)
			err = copy_from_kernel_nofault(&hi, (void *)(from + 2),
						       sizeof(hi));
	} else if (!current->mm) {
		/* a kernel thread: no user memory of its own to look at */
		err = -EFAULT;
	} else {
		err = copy_from_user_nofault(&lo, (void __user *)from,
					     sizeof(lo));
		if (!err && (lo & 3) == 3)
			err = copy_from_user_nofault(&hi,
						     (void __user *)(from + 2),
						     sizeof(hi));
	}
	insn = (u32)hi << 16 | lo;
	if (!err && insn == CTR_INSN_ECALL) {
		br->type = PERF_BR_SYSCALL;
		return;
	}
	br->type = PERF_BR_EXTEND_ABI;
	br->new_type = PERF_BR_NEW_FAULT_INST;
	if (err)
		return;
	if ((lo & 3) == 3) {
		switch (insn & 0x7f) {
		case 0x03:	/* LOAD */
		case 0x07:	/* LOAD-FP, vector loads */
		case 0x0f:	/* MISC-MEM: cache block operations */
		case 0x23:	/* STORE */
		case 0x27:	/* STORE-FP, vector stores */
		case 0x2f:	/* AMO */
			br->new_type = PERF_BR_NEW_FAULT_DATA;
		}
		return;
	}
	/* RVC: quadrant 0 but c.addi4spn, quadrant 2 *sp loads and stores */
	if (((lo & 3) == 0 && lo >> 13) ||
	    ((lo & 3) == 2 && (lo >> 13) != 0 && (lo >> 13) != 4))
		br->new_type = PERF_BR_NEW_FAULT_DATA;
}

static u8 ctr_perf_type(unsigned int type)
{
	switch (type) {
	case CTR_TYPE_EXCEPTION:
		return PERF_BR_SYSCALL;		/* refined by ctr_exception_type() */
	case CTR_TYPE_INTERRUPT:
		return PERF_BR_IRQ;
	case CTR_TYPE_TRAP_RETURN:
		return PERF_BR_ERET;
	case CTR_TYPE_NOT_TAKEN:
	case CTR_TYPE_TAKEN:
		return PERF_BR_COND;
	case CTR_TYPE_IND_CALL:
		return PERF_BR_IND_CALL;
	case CTR_TYPE_DIR_CALL:
		return PERF_BR_CALL;
	case CTR_TYPE_IND_JUMP:
	case CTR_TYPE_IND_LJUMP:
		return PERF_BR_IND;
	case CTR_TYPE_DIR_JUMP:
	case CTR_TYPE_DIR_LJUMP:
		return PERF_BR_UNCOND;
	case CTR_TYPE_CORSWAP:
		/*
		 * jalr x1, x5 / jalr x5, x1 returns and calls at once; perf
		 * has no such type. It enters code through a register with
		 * a link, so call it an indirect call.
		 */
		return PERF_BR_IND_CALL;
	case CTR_TYPE_RETURN:
		return PERF_BR_RET;
	default:
		return PERF_BR_UNKNOWN;
	}
}

/* Elapsed cycles of spec section 6.3 from the CC field. */
static u64 ctr_cycles(u64 data)
{
	u64 ccm = FIELD_GET(CTRDATA_CCM, data);
	u64 cce = FIELD_GET(CTRDATA_CCE, data);

	if (!cce)
		return ccm;
	return (BIT_ULL(12) + ccm) << (cce - 1);
}

/* One entry, whole: the entries array is shared by all events of the CPU. */
static void ctr_decode(struct perf_branch_entry *br, const struct ctr_raw *e,
		       u64 bst)
{
	unsigned int type = FIELD_GET(CTRDATA_TYPE, e->data);

	*br = (struct perf_branch_entry){
		.from = e->src & ~CTRSOURCE_V,
		.to = e->dst & ~CTRTARGET_MISP,
		.spec = PERF_BR_SPEC_NA,
		.priv = PERF_BR_PRIV_UNKNOWN,
		.type = ctr_perf_type(type),
	};
	if (ctr_has_misp && !(bst & PERF_SAMPLE_BRANCH_NO_FLAGS)) {
		br->mispred = !!(e->dst & CTRTARGET_MISP);
		br->predicted = !br->mispred;
	}
	if ((e->data & CTRDATA_CCV) && !(bst & PERF_SAMPLE_BRANCH_NO_CYCLES))
		br->cycles = min_t(u64, ctr_cycles(e->data), U16_MAX);
	if (type == CTR_TYPE_EXCEPTION)
		ctr_exception_type(br->from, br);
	if (bst & PERF_SAMPLE_BRANCH_PRIV_SAVE)
		br->priv = ctr_kernel_addr(br->to ? br->to : br->from) ?
			   PERF_BR_PRIV_KERNEL : PERF_BR_PRIV_USER;
}

/**
 * riscv_ctr_sample() - attach the branch stack to an overflow sample
 * @event: the overflowed branch stack event
 * @data: its sample, before perf_event_overflow()
 *
 * Called from the counter overflow interrupt, where LCOFIFRZ has frozen the
 * buffer; riscv_ctr_irq_done() lets recording go on afterwards. Entries are
 * decoded one at a time straight into the CPU's perf entries, and no more
 * than the event's sample_max_stack of them (perf_event_max_stack, 127, by
 * default: the most perf's branch history takes).
 */
void riscv_ctr_sample(struct perf_event *event, struct perf_sample_data *data)
{
	struct ctr_cpu *cc = this_cpu_ptr(ctr_cpus);
	u64 bst = event->attr.branch_sample_type;
	unsigned int i, got = 0, depth = ctr_depth(cc);
	unsigned int max = min_t(unsigned int, depth,
				 event->attr.sample_max_stack);
	bool user_only = !(cc->ctl & CTRCTL_S);
	unsigned long status, sel;
	struct ctr_raw e;

	lockdep_assert_irqs_disabled();
	if (!cc->users)
		return;
	/*
	 * An overflow seen without a trap does not freeze: do it now, in one
	 * csrrs so that a transfer recorded meanwhile is not undone.
	 */
	status = csr_read_set(CSR_SCTRSTATUS, CTRSTATUS_FROZEN);

	sel = csr_read(CTR_CSR_SISELECT);
	for (i = 0; i < depth && got < max; i++) {
		ctr_read_entry(i, &e);
		if (!(e.src & CTRSOURCE_V))
			break;
		/* Belt and braces: a user-only session never sees the kernel. */
		if (user_only && (ctr_kernel_addr(e.src & ~CTRSOURCE_V) ||
				  ctr_kernel_addr(e.dst & ~CTRTARGET_MISP)))
			continue;
		ctr_decode(&cc->entries[got++], &e, bst);
	}
	csr_write(CTR_CSR_SISELECT, sel);

	cc->stack.nr = got;
	/* Physical index of logical entry 0, like the x86 LBR TOS. */
	cc->stack.hw_idx = (FIELD_GET(CTRSTATUS_WRPTR, status) + depth - 1) &
			   (depth - 1);
	perf_sample_save_brstack(data, event, &cc->stack, NULL);
}

/**
 * riscv_ctr_irq_done() - resume recording after a counter overflow
 *
 * Clears sctrstatus.FROZEN, set by the LCOFI trap. The SBI PMU driver calls
 * it on every way out of its overflow handler, spurious interrupts
 * included.
 */
void riscv_ctr_irq_done(void)
{
	struct ctr_cpu *cc;

	if (!ctr_present)
		return;
	cc = this_cpu_ptr(ctr_cpus);
	if (cc->users)
		csr_clear(CSR_SCTRSTATUS, CTRSTATUS_FROZEN);
}
