// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Static RISC-V instruction classifier for the N-Trace decoder.
 *
 * The decoder walks program images between trace messages and needs, for
 * each instruction, its size and the itype it would put on the ingress
 * port when retired ("Trace Ingress Port" chapter, table "Generating itype
 * for different instructions"). Nothing else about the instruction
 * matters, so everything that cannot change control flow collapses into
 * NT_IC_OTHER without further validation.
 *
 * All field extraction is done on unsigned values; sign extension goes
 * through sext() so that no negative value is ever shifted.
 */
#include <string.h>

#include "ntrace.h"

/* Sign-extend the low @bits bits of @v (1 <= bits <= 64). */
static inline int64_t sext(uint64_t v, unsigned int bits)
{
	uint64_t m = 1ull << (bits - 1);

	v &= (m << 1) - 1;	/* bits == 64 wraps to ~0 as intended */
	return (int64_t)((v ^ m) - m);
}

static inline uint32_t bit(uint32_t v, unsigned int n)
{
	return (v >> n) & 1u;
}

static inline uint32_t field(uint32_t v, unsigned int lo, unsigned int n)
{
	return (v >> lo) & ((1u << n) - 1u);
}

/* x1 (ra) and x5 (t0) are the link registers of the unprivileged ISA. */
static inline bool is_link(unsigned int r)
{
	return r == 1 || r == 5;
}

/*
 * JAL rd: 4-bit itype rows of the ingress-port table. Shared by JAL,
 * C.J (rd = x0) and C.JAL (rd = x1).
 */
static uint8_t jal_itype(unsigned int rd)
{
	if (is_link(rd))
		return NT_ITYPE_DIRECT_CALL;
	if (rd == 0)
		return NT_ITYPE_DIRECT_JUMP;
	return NT_ITYPE_OTHER_DIRECT_JUMP;
}

/*
 * JALR rd, rs1. The rows are checked in the table's order; note that a
 * return is any jump through a link register that does not itself write
 * a link register, whatever rd is, and that "jalr x1, x1" is a call but
 * "jalr x1, x5" (or x5, x1) swaps co-routines.
 */
static uint8_t jalr_itype(unsigned int rd, unsigned int rs1)
{
	if (is_link(rd)) {
		if (is_link(rs1) && rd != rs1)
			return NT_ITYPE_COROUTINE_SWAP;
		return NT_ITYPE_INDIRECT_CALL;
	}
	if (is_link(rs1))
		return NT_ITYPE_RETURN;
	if (rd == 0)
		return NT_ITYPE_INDIRECT_JUMP;
	return NT_ITYPE_OTHER_INDIRECT_JUMP;
}

static uint64_t add_pc(uint64_t pc, int64_t off, unsigned int isa)
{
	uint64_t t = pc + (uint64_t)off;

	if (isa & NT_ISA_RV32)
		t &= 0xffffffffu;
	return t;
}

static void set_direct(struct nt_insn *insn, uint8_t iclass, uint8_t itype,
		       int64_t off, uint64_t pc, unsigned int isa)
{
	insn->iclass = iclass;
	insn->itype = itype;
	insn->imm = off;
	insn->has_target = true;
	insn->target = add_pc(pc, off, isa);
}

/*
 * Zcmp / Zcmt live in the C.FSDSP slot (quadrant 2, funct3 101) which
 * they may only use because both exclude Zcd. With either flag given the
 * slot no longer holds C.FSDSP, so encodings the enabled extensions do
 * not define are reserved. Without either flag it is a C.FSDSP (OTHER).
 */
static void classify_zc(uint32_t c, unsigned int isa, struct nt_insn *insn)
{
	uint32_t f6 = field(c, 10, 6);

	if (!(isa & (NT_ISA_ZCMP | NT_ISA_ZCMT)))
		return;

	insn->iclass = NT_IC_INVALID;
	if (isa & NT_ISA_ZCMT) {
		/* cm.jt / cm.jalt: 101000 index[7:0] 10 */
		if (f6 == 0x28) {
			uint32_t idx = field(c, 2, 8);

			insn->iclass = NT_IC_TABLE_JUMP;
			insn->itype = idx < 32 ? NT_ITYPE_DIRECT_JUMP :
						 NT_ITYPE_DIRECT_CALL;
			insn->imm = idx;
			return;
		}
	}
	if (isa & NT_ISA_ZCMP) {
		uint32_t f2 = field(c, 8, 2);
		uint32_t rlist = field(c, 4, 4);

		/* cm.push 101110 00, cm.pop 101110 10, popretz/popret 101111 */
		if (f6 == 0x2e || f6 == 0x2f) {
			if (rlist < 4 || (f2 & 1))
				return;	/* reserved */
			if (f6 == 0x2f) {
				insn->iclass = NT_IC_POPRET;
				insn->itype = NT_ITYPE_RETURN;
			} else {
				insn->iclass = NT_IC_OTHER;
			}
			return;
		}
		/* cm.mvsa01 101011 r1s 01 r2s, cm.mva01s ... 11 ... */
		if (f6 == 0x2b && bit(c, 5)) {
			/* mvsa01 with r1s == r2s would write one reg twice */
			if (!bit(c, 6) && field(c, 7, 3) == field(c, 2, 3))
				return;
			insn->iclass = NT_IC_OTHER;
			return;
		}
	}
}

/* CJ format offset[11|4|9:8|10|6|7|3:1|5] in bits 12..2 */
static int64_t cj_offset(uint32_t c)
{
	uint64_t u = bit(c, 12) << 11 | bit(c, 11) << 4 | field(c, 9, 2) << 8 |
		     bit(c, 8) << 10 | bit(c, 7) << 6 | bit(c, 6) << 7 |
		     field(c, 3, 3) << 1 | bit(c, 2) << 5;

	return sext(u, 12);
}

static void classify16(uint32_t c, uint64_t pc, unsigned int isa,
		       struct nt_insn *insn)
{
	uint32_t op = c & 3u;
	uint32_t f3 = field(c, 13, 3);
	uint32_t r = field(c, 7, 5);	/* rd/rs1 of CR/CI formats */
	uint32_t rs2 = field(c, 2, 5);
	bool rv32 = isa & NT_ISA_RV32;
	uint64_t u;

	/* quadrant in bits 4:3, funct3 in bits 2:0 */
	switch (op << 3 | f3) {
	case 0x00:	/* c.addi4spn; nzuimm 0 (so 0x0000) is reserved */
		if (field(c, 5, 8) == 0)
			insn->iclass = NT_IC_INVALID;
		return;
	case 0x09:	/* RV32 c.jal; RV64 c.addiw */
		if (!rv32) {
			if (r == 0)
				insn->iclass = NT_IC_INVALID;
			return;
		}
		insn->rd = 1;
		set_direct(insn, NT_IC_JAL, NT_ITYPE_DIRECT_CALL, cj_offset(c),
			   pc, isa);
		return;
	case 0x0d:	/* c.j */
		set_direct(insn, NT_IC_JAL, NT_ITYPE_DIRECT_JUMP, cj_offset(c),
			   pc, isa);
		return;
	case 0x0b:	/* c.lui, or c.addi16sp for rd == x2 */
		u = bit(c, 12) << 5 | rs2;
		if (r == 0 || r == 2 || u == 0)
			return;	/* addi16sp, HINT or reserved: no jump */
		insn->iclass = NT_IC_LUI;
		insn->rd = (uint8_t)r;
		insn->imm = sext(u << 12, 18);
		return;
	case 0x0e:	/* c.beqz */
	case 0x0f:	/* c.bnez */
		u = bit(c, 12) << 8 | field(c, 10, 2) << 3 |
		    field(c, 5, 2) << 6 | field(c, 3, 2) << 1 | bit(c, 2) << 5;
		set_direct(insn, NT_IC_BRANCH, NT_ITYPE_BRANCH_TAKEN,
			   sext(u, 9), pc, isa);
		return;
	case 0x12:	/* c.lwsp */
		if (r == 0)
			insn->iclass = NT_IC_INVALID;
		return;
	case 0x13:	/* RV64 c.ldsp (RV32 c.flwsp allows f0) */
		if (!rv32 && r == 0)
			insn->iclass = NT_IC_INVALID;
		return;
	case 0x14:
		if (!bit(c, 12)) {
			if (rs2 != 0)
				return;		/* c.mv */
			if (r == 0) {		/* c.jr x0 is reserved */
				insn->iclass = NT_IC_INVALID;
				return;
			}
			insn->iclass = NT_IC_JALR;
			insn->rs1 = (uint8_t)r;
			insn->itype = is_link(r) ? NT_ITYPE_RETURN :
						   NT_ITYPE_INDIRECT_JUMP;
			return;
		}
		if (rs2 != 0)
			return;			/* c.add */
		if (r == 0) {			/* c.ebreak */
			insn->iclass = NT_IC_ECALL;
			insn->itype = NT_ITYPE_EXCEPTION;
			return;
		}
		/* c.jalr rs: jalr x1, rs -- so rs == x5 is the swap case */
		insn->iclass = NT_IC_JALR;
		insn->rd = 1;
		insn->rs1 = (uint8_t)r;
		insn->itype = jalr_itype(1, r);
		return;
	case 0x15:	/* c.fsdsp, or Zcmp/Zcmt */
		classify_zc(c, isa, insn);
		return;
	default:
		return;
	}
}

static void classify32(uint32_t w, uint64_t pc, unsigned int isa,
		       struct nt_insn *insn)
{
	uint32_t rd = field(w, 7, 5);
	uint32_t rs1 = field(w, 15, 5);
	uint32_t f3 = field(w, 12, 3);
	uint64_t u;

	switch (w & 0x7f) {
	case 0x63:	/* BRANCH; funct3 010 and 011 are unallocated */
		if (f3 == 2 || f3 == 3) {
			insn->iclass = NT_IC_INVALID;
			return;
		}
		u = (uint64_t)bit(w, 31) << 12 | bit(w, 7) << 11 |
		    field(w, 25, 6) << 5 | field(w, 8, 4) << 1;
		set_direct(insn, NT_IC_BRANCH, NT_ITYPE_BRANCH_TAKEN,
			   sext(u, 13), pc, isa);
		return;
	case 0x6f:	/* JAL */
		u = (uint64_t)bit(w, 31) << 20 | field(w, 21, 10) << 1 |
		    bit(w, 20) << 11 | field(w, 12, 8) << 12;
		insn->rd = (uint8_t)rd;
		set_direct(insn, NT_IC_JAL, jal_itype(rd), sext(u, 21), pc,
			   isa);
		return;
	case 0x67:	/* JALR */
		if (f3 != 0) {
			insn->iclass = NT_IC_INVALID;
			return;
		}
		insn->iclass = NT_IC_JALR;
		insn->rd = (uint8_t)rd;
		insn->rs1 = (uint8_t)rs1;
		insn->itype = jalr_itype(rd, rs1);
		insn->imm = sext(w >> 20, 12);
		return;
	case 0x37:	/* LUI */
	case 0x17:	/* AUIPC */
		insn->iclass = (w & 0x7f) == 0x37 ? NT_IC_LUI : NT_IC_AUIPC;
		insn->rd = (uint8_t)rd;
		/* bit 31 is the sign at either XLEN */
		insn->imm = sext(w & 0xfffff000u, 32);
		return;
	case 0x73:	/* SYSTEM: only exact encodings matter here */
		switch (w) {
		case 0x00000073:	/* ecall */
		case 0x00100073:	/* ebreak */
			insn->iclass = NT_IC_ECALL;
			insn->itype = NT_ITYPE_EXCEPTION;
			return;
		case 0x10200073:	/* sret */
		case 0x30200073:	/* mret */
		case 0x70200073:	/* mnret (Smrnmi) */
			insn->iclass = NT_IC_TRAP_RETURN;
			insn->itype = NT_ITYPE_TRAP_RETURN;
			return;
		}
		return;
	default:
		return;
	}
}

int nt_insn_classify(const uint8_t *bytes, size_t len, uint64_t pc,
		     unsigned int isa, struct nt_insn *insn)
{
	uint32_t lo;

	memset(insn, 0, sizeof(*insn));
	if (len < 2)
		return 0;

	lo = (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8;
	if ((lo & 3) != 3) {
		insn->size = 2;
		classify16(lo, pc, isa, insn);
		return insn->iclass == NT_IC_INVALID ? -1 : 2;
	}
	if ((lo & 0x1c) != 0x1c) {
		if (len < 4)
			return 0;
		insn->size = 4;
		classify32(lo | (uint32_t)bytes[2] << 16 |
			   (uint32_t)bytes[3] << 24, pc, isa, insn);
		return insn->iclass == NT_IC_INVALID ? -1 : 4;
	}

	/*
	 * Longer encodings (unprivileged ISA, "Base Instruction-Length
	 * Encoding"). Only the 48- and 64-bit forms have a settled length;
	 * none of them is a control transfer we know of.
	 */
	insn->iclass = NT_IC_INVALID;
	if ((lo & 0x3f) == 0x1f)
		insn->size = 6;
	else if ((lo & 0x7f) == 0x3f)
		insn->size = 8;
	return -1;
}

const char *nt_itype_name(unsigned int itype)
{
	static const char *const names[16] = {
		[NT_ITYPE_NONE] = "none",
		[NT_ITYPE_EXCEPTION] = "exception",
		[NT_ITYPE_INTERRUPT] = "interrupt",
		[NT_ITYPE_TRAP_RETURN] = "trap-return",
		[NT_ITYPE_BRANCH_NOT_TAKEN] = "branch-not-taken",
		[NT_ITYPE_BRANCH_TAKEN] = "branch-taken",
		[NT_ITYPE_INDIRECT_3BIT] = "indirect-jump",
		[7] = "reserved",
		[NT_ITYPE_INDIRECT_CALL] = "indirect-call",
		[NT_ITYPE_DIRECT_CALL] = "direct-call",
		[NT_ITYPE_INDIRECT_JUMP] = "indirect-jump-nolink",
		[NT_ITYPE_DIRECT_JUMP] = "direct-jump-nolink",
		[NT_ITYPE_COROUTINE_SWAP] = "coroutine-swap",
		[NT_ITYPE_RETURN] = "return",
		[NT_ITYPE_OTHER_INDIRECT_JUMP] = "other-indirect-jump",
		[NT_ITYPE_OTHER_DIRECT_JUMP] = "other-direct-jump",
	};

	if (itype >= 16)
		return "invalid";
	return names[itype];
}
