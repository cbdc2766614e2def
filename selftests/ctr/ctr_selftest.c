// SPDX-License-Identifier: GPL-2.0
/*
 * Smctr/Ssctr smoke test: record a handful of control transfers whose
 * addresses are known, read them back through the Sscsrind window and
 * compare. Loading succeeds only when every expected record is found, so
 * the result is the return value of init_module().
 *
 * The kernel this runs on has no CTR support of its own, which is why the
 * CSRs are driven directly here and left disabled on the way out.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitfield.h>
#include <linux/bits.h>
#include <linux/irqflags.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <asm/csr.h>

#define CTR_CSR_SCTRCTL		0x14e
#define CTR_CSR_SCTRSTATUS	0x14f
#define CTR_CSR_SISELECT	0x150
#define CTR_CSR_SIREG		0x151
#define CTR_CSR_SIREG2		0x152
#define CTR_CSR_SIREG3		0x153
#define CTR_CSR_SCTRDEPTH	0x15f

#define CTR_ENTRY_BASE		0x200
#define CTR_CTL_S		BIT(1)
#define CTR_STATUS_WRPTR	GENMASK(7, 0)
#define CTR_STATUS_FROZEN	BIT(31)
#define CTR_DEPTH_MASK		GENMASK(2, 0)
#define CTR_SRC_V		BIT(0)
#define CTR_DATA_TYPE		GENMASK(3, 0)

/* ctrdata.TYPE encodings used below. */
#define CTR_TYPE_TAKEN_BRANCH	5
#define CTR_TYPE_DIRECT_CALL	9
#define CTR_TYPE_DIRECT_JUMP	11
#define CTR_TYPE_RETURN		13

/* Positions of the labels in ctr_selftest_transfers(). */
enum { PC_CALL, PC_JUMP, PC_BRANCH, PC_STOP, PC_LEAF, PC_NR };

struct ctr_entry {
	unsigned long src;
	unsigned long dst;
	unsigned long data;
};

/*
 * One asm block so that no compiler-generated branch lands between the
 * enable and the disable: the buffer then holds exactly these transfers,
 * newest first: branch, jump, return, call. norvc keeps the instruction
 * sizes predictable for anyone reading a disassembly next to the log.
 */
static noinline void ctr_selftest_transfers(unsigned long ctl,
					    unsigned long *pc)
{
	asm volatile (".option push\n"
		      ".option norvc\n"
		      /* SCTRCLR: start from an empty buffer */
		      ".insn i 0x73, 0, x0, x0, 0x104\n"
		      "csrw 0x14f, zero\n"
		      "csrw 0x14e, %[ctl]\n"
		      "1: jal ra, 5f\n"
		      "2: j 3f\n"
		      "nop\n"
		      "3: beq zero, zero, 4f\n"
		      "nop\n"
		      "4: csrw 0x14e, zero\n"
		      "j 6f\n"
		      "5: ret\n"
		      "6: lla t0, 1b\n"
		      "sd t0, 0(%[pc])\n"
		      "lla t0, 2b\n"
		      "sd t0, 8(%[pc])\n"
		      "lla t0, 3b\n"
		      "sd t0, 16(%[pc])\n"
		      "lla t0, 4b\n"
		      "sd t0, 24(%[pc])\n"
		      "lla t0, 5b\n"
		      "sd t0, 32(%[pc])\n"
		      ".option pop\n"
		      :
		      : [ctl] "r" (ctl), [pc] "r" (pc)
		      : "ra", "t0", "memory");
}

static void ctr_read_entry(unsigned int idx, struct ctr_entry *e)
{
	csr_write(CTR_CSR_SISELECT, CTR_ENTRY_BASE + idx);
	e->src = csr_read(CTR_CSR_SIREG);
	e->dst = csr_read(CTR_CSR_SIREG2);
	e->data = csr_read(CTR_CSR_SIREG3);
}

static bool ctr_check(const struct ctr_entry *e, unsigned int idx,
		      unsigned long src, unsigned long dst, unsigned int type)
{
	unsigned int got_type = FIELD_GET(CTR_DATA_TYPE, e->data);
	bool ok = (e->src & CTR_SRC_V) &&
		  (e->src & ~CTR_SRC_V) == src &&
		  (e->dst & ~1UL) == dst &&
		  /* TYPE is optional: 0 means "not implemented" */
		  (got_type == 0 || got_type == type);

	pr_info("entry %u: %s want %#lx -> %#lx type %u, got %#lx -> %#lx data %#lx\n",
		idx, ok ? "ok" : "MISMATCH", src, dst, type,
		e->src, e->dst, e->data);
	return ok;
}

static int __init ctr_selftest_init(void)
{
	unsigned long pc[PC_NR], flags, siselect, status, depth;
	struct ctr_entry e[5];
	bool ok = true;
	unsigned int i;

	local_irq_save(flags);
	siselect = csr_read(CTR_CSR_SISELECT);
	depth = csr_read(CTR_CSR_SCTRDEPTH);
	ctr_selftest_transfers(CTR_CTL_S, pc);
	status = csr_read(CTR_CSR_SCTRSTATUS);
	for (i = 0; i < ARRAY_SIZE(e); i++)
		ctr_read_entry(i, &e[i]);
	csr_write(CTR_CSR_SISELECT, siselect);
	local_irq_restore(flags);

	pr_info("depth %lu entries, wrptr %lu, frozen %d\n",
		16UL << (depth & CTR_DEPTH_MASK),
		status & CTR_STATUS_WRPTR, !!(status & CTR_STATUS_FROZEN));

	ok &= ctr_check(&e[0], 0, pc[PC_BRANCH], pc[PC_STOP],
			CTR_TYPE_TAKEN_BRANCH);
	ok &= ctr_check(&e[1], 1, pc[PC_JUMP], pc[PC_BRANCH],
			CTR_TYPE_DIRECT_JUMP);
	ok &= ctr_check(&e[2], 2, pc[PC_LEAF], pc[PC_JUMP],
			CTR_TYPE_RETURN);
	ok &= ctr_check(&e[3], 3, pc[PC_CALL], pc[PC_LEAF],
			CTR_TYPE_DIRECT_CALL);
	/* SCTRCLR emptied the buffer, so nothing older may be valid. */
	if (e[4].src & CTR_SRC_V) {
		pr_info("entry 4: MISMATCH unexpected valid record %#lx -> %#lx\n",
			e[4].src, e[4].dst);
		ok = false;
	}

	pr_info("%s\n", ok ? "PASS" : "FAIL");
	return ok ? 0 : -EIO;
}

static void __exit ctr_selftest_exit(void)
{
}

module_init(ctr_selftest_init);
module_exit(ctr_selftest_exit);

MODULE_DESCRIPTION("Smctr/Ssctr smoke test for the ntrace lab");
MODULE_LICENSE("GPL");
