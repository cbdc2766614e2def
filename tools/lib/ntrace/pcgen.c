// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Ingress-port records from executed PCs.
 *
 * The outcome of an instruction is only known when the next PC is: a
 * branch is taken if the next PC is its target, an indirect jump goes
 * wherever the next PC is. A next PC that the instruction cannot produce
 * means a trap came in between (QEMU user mode delivers signals that way):
 * the instruction retired, then an interrupt to the next PC.
 */
#include <stdlib.h>

#include "ntrace.h"

struct nt_pcgen {
	const struct nt_image *img;
	unsigned int isa;
	bool have_prev;
	uint64_t prev_pc;
	struct nt_insn prev;
	/* the instruction before prev, for sequential-jump detection */
	bool have_const;
	uint8_t const_rd;
	uint64_t const_val;
	struct nt_pcgen_stats stats;
};

struct nt_pcgen *nt_pcgen_new(const struct nt_image *img, unsigned int isa)
{
	struct nt_pcgen *g = calloc(1, sizeof(*g));

	if (g) {
		g->img = img;
		g->isa = isa;
	}
	return g;
}

void nt_pcgen_free(struct nt_pcgen *g)
{
	free(g);
}

const struct nt_pcgen_stats *nt_pcgen_stats(const struct nt_pcgen *g)
{
	return &g->stats;
}

static uint64_t xlen_mask(const struct nt_pcgen *g)
{
	return (g->isa & NT_ISA_RV32) ? 0xffffffffull : ~0ull;
}

static void retire(struct nt_pcgen *g, struct nt_record *r, uint8_t itype)
{
	r->addr = g->prev_pc;
	r->size = g->prev.size;
	r->itype = itype;
	g->stats.retired++;
	g->stats.halfwords += g->prev.size / 2;
}

static void trap(struct nt_pcgen *g, struct nt_record *r, uint64_t epc,
		 bool exception)
{
	r->addr = epc;
	r->itype = exception ? NT_ITYPE_EXCEPTION : NT_ITYPE_INTERRUPT;
	if (exception)
		g->stats.exceptions++;
	else
		g->stats.interrupts++;
}

/*
 * Section 8.1: the jump target came from a lui/auipc right before it, in
 * the register the jump reads.
 */
static bool seq_inferable(const struct nt_pcgen *g, uint64_t next)
{
	const struct nt_insn *j = &g->prev;

	if (!g->have_const || !j->rs1 || j->rs1 != g->const_rd)
		return false;
	return ((g->const_val + (uint64_t)j->imm) & ~1ull & xlen_mask(g)) ==
	       next;
}

/* Records for prev, now that the next PC is known (has_next false: end). */
static int complete(struct nt_pcgen *g, bool has_next, uint64_t next,
		    struct nt_record out[2])
{
	const struct nt_insn *in = &g->prev;
	uint64_t fall = (g->prev_pc + in->size) & xlen_mask(g);
	uint64_t expect = fall;
	int n = 1;

	out[0] = (struct nt_record){ 0 };
	switch (in->iclass) {
	case NT_IC_ECALL:
		trap(g, &out[0], g->prev_pc, true);
		return 1;
	case NT_IC_BRANCH:
		if (has_next && next == in->target) {
			retire(g, &out[0], NT_ITYPE_BRANCH_TAKEN);
			expect = next;
		} else {
			retire(g, &out[0], NT_ITYPE_BRANCH_NOT_TAKEN);
		}
		break;
	case NT_IC_JAL:
		retire(g, &out[0], in->itype);
		expect = in->target;
		break;
	case NT_IC_JALR:
	case NT_IC_TABLE_JUMP:
	case NT_IC_POPRET:
	case NT_IC_TRAP_RETURN:
		retire(g, &out[0], in->itype);
		if (in->iclass == NT_IC_JALR && has_next &&
		    seq_inferable(g, next)) {
			out[0].flags |= NT_REC_SEQ_INFERABLE;
			g->stats.seq_jumps++;
		}
		expect = next;
		break;
	default:
		retire(g, &out[0], NT_ITYPE_NONE);
		break;
	}
	if (has_next && next != expect) {
		/* retired, then an asynchronous trap before expect ran */
		out[1] = (struct nt_record){ 0 };
		trap(g, &out[1], expect, false);
		n = 2;
	}
	return n;
}

static void remember_const(struct nt_pcgen *g, bool consecutive)
{
	const struct nt_insn *in = &g->prev;

	g->have_const = consecutive && in->rd &&
			(in->iclass == NT_IC_LUI || in->iclass == NT_IC_AUIPC);
	if (g->have_const) {
		g->const_rd = in->rd;
		g->const_val = (uint64_t)in->imm;
		if (in->iclass == NT_IC_AUIPC)
			g->const_val += g->prev_pc;
	}
}

int nt_pcgen_next_bytes(struct nt_pcgen *g, uint64_t pc, const uint8_t *p,
			size_t avail, struct nt_record out[2], const char **err)
{
	int n = 0;
	bool consecutive = false;

	g->stats.pcs++;
	if (g->have_prev) {
		n = complete(g, true, pc, out);
		consecutive = n == 1 && pc == g->prev_pc + g->prev.size;
		/* a constant load counts only if it ran right before the jump */
		remember_const(g, consecutive);
	} else {
		g->have_const = false;
	}

	g->have_prev = false;
	*err = NULL;
	if (!p)
		*err = "PC outside every program image";
	else if (nt_insn_classify(p, avail, pc, g->isa, &g->prev) <= 0 ||
		 g->prev.iclass == NT_IC_INVALID)
		*err = "undecodable instruction";
	if (*err)
		return n;
	g->prev_pc = pc;
	g->have_prev = true;
	return n;
}

int nt_pcgen_next(struct nt_pcgen *g, uint64_t pc, struct nt_record out[2],
		  const char **err)
{
	size_t avail = 0;
	const uint8_t *p = g->img ? nt_image_lookup(g->img, pc, &avail) : NULL;

	return nt_pcgen_next_bytes(g, pc, p, avail, out, err);
}

int nt_pcgen_finish(struct nt_pcgen *g, struct nt_record out[2],
		    const char **err)
{
	(void)err;
	if (!g->have_prev)
		return 0;
	g->have_prev = false;
	return complete(g, false, 0, out);
}
