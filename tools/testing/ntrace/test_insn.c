// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Hand vectors for nt_insn_classify().
 *
 * 16- and 32-bit encodings were produced with GNU as (-M no-aliases
 * listings), except Zcmp/Zcmt, which binutils 2.40 does not know; those
 * were assembled by hand from the ratified Zc field layout. Every row of
 * the ingress-port itype table has at least one vector.
 *
 * Every vector is copied into a heap buffer of exactly its length so
 * that AddressSanitizer flags any read past len.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"
#include "tap.h"
#include "xorshift.h"

#define P64	0x80001000ull
#define P32	0x00001000ull
#define RV32	NT_ISA_RV32
#define ZCMP	NT_ISA_ZCMP
#define ZCMT	NT_ISA_ZCMT

#define IC(x)	NT_IC_##x
#define IT(x)	NT_ITYPE_##x

struct vec {
	const char *name;
	uint64_t raw;		/* little-endian instruction bits */
	uint8_t len;		/* bytes handed to the classifier */
	unsigned int isa;
	uint64_t pc;
	int ret;
	uint8_t size, iclass, itype, rd, rs1;
	bool has_target;
	int64_t imm;
	uint64_t target;
};

/* plain instruction without registers, immediate or target */
#define PLAIN(n, r, l, i, rt, c, t) \
	{ n, r, l, i, P64, rt, (l), IC(c), IT(t), 0, 0, false, 0, 0 }
/* direct transfer at pc */
#define DIRECT(n, r, l, i, pc, c, t, d, off, tgt) \
	{ n, r, l, i, pc, l, l, IC(c), IT(t), d, 0, true, off, tgt }
#define JALR(n, r, l, t, d, s, im) \
	{ n, r, l, 0, P64, l, l, IC(JALR), IT(t), d, s, false, im, 0 }
#define UPPER(n, r, l, i, c, d, im) \
	{ n, r, l, i, P64, l, l, IC(c), IT(NONE), d, 0, false, im, 0 }
#define INVAL(n, r, l, i, sz) \
	{ n, r, l, i, P64, -1, sz, IC(INVALID), IT(NONE), 0, 0, false, 0, 0 }
#define ZC(n, r, i, c, t, im) \
	{ n, r, 2, i, P64, 2, 2, IC(c), IT(t), 0, 0, false, im, 0 }

static const struct vec vecs[] = {
	/* conditional branches: itype is the taken value */
	DIRECT("beq +16", 0x00b50863, 4, 0, P64, BRANCH, BRANCH_TAKEN,
	       0, 16, P64 + 16),
	DIRECT("bne -8", 0xfe209ce3, 4, 0, P64, BRANCH, BRANCH_TAKEN,
	       0, -8, P64 - 8),
	DIRECT("blt +4094", 0x7e41cfe3, 4, 0, P64, BRANCH, BRANCH_TAKEN,
	       0, 4094, P64 + 4094),
	DIRECT("bge -4096", 0x80a05063, 4, 0, P64, BRANCH, BRANCH_TAKEN,
	       0, -4096, P64 - 4096),
	DIRECT("bltu +2", 0x0062e163, 4, 0, P64, BRANCH, BRANCH_TAKEN,
	       0, 2, P64 + 2),
	DIRECT("bgeu -2", 0xfe83ffe3, 4, 0, P64, BRANCH, BRANCH_TAKEN,
	       0, -2, P64 - 2),
	DIRECT("c.beqz -256", 0xd001, 2, 0, P64, BRANCH, BRANCH_TAKEN,
	       0, -256, P64 - 256),
	DIRECT("c.bnez +254", 0xeffd, 2, 0, P64, BRANCH, BRANCH_TAKEN,
	       0, 254, P64 + 254),
	DIRECT("rv32 c.bnez +254", 0xeffd, 2, RV32, P32, BRANCH,
	       BRANCH_TAKEN, 0, 254, P32 + 254),
	DIRECT("rv64 bne -8 below 0", 0xfe209ce3, 4, 0, 4, BRANCH,
	       BRANCH_TAKEN, 0, -8, 0xfffffffffffffffcull),
	DIRECT("rv32 bne -8 wraps", 0xfe209ce3, 4, RV32, 4, BRANCH,
	       BRANCH_TAKEN, 0, -8, 0xfffffffcull),
	INVAL("branch funct3 010", 0x00b52863, 4, 0, 4),
	INVAL("branch funct3 011", 0x00b53863, 4, 0, 4),

	/* JAL rd rows */
	DIRECT("jal x0 (jump)", 0x7ffff06f, 4, 0, P64, JAL, DIRECT_JUMP,
	       0, 0xffffe, P64 + 0xffffe),
	DIRECT("jal x1 (call)", 0x800000ef, 4, 0, P64, JAL, DIRECT_CALL,
	       1, -0x100000, P64 - 0x100000),
	DIRECT("jal x5 (call)", 0x008002ef, 4, 0, P64, JAL, DIRECT_CALL,
	       5, 8, P64 + 8),
	DIRECT("jal x6 (other)", 0xff9ff36f, 4, 0, P64, JAL,
	       OTHER_DIRECT_JUMP, 6, -8, P64 - 8),
	DIRECT("rv64 jal +32 no wrap", 0x0200006f, 4, 0, 0xfffffff0, JAL,
	       DIRECT_JUMP, 0, 32, 0x100000010ull),
	DIRECT("rv32 jal +32 wraps", 0x0200006f, 4, RV32, 0xfffffff0, JAL,
	       DIRECT_JUMP, 0, 32, 0x10),
	DIRECT("c.j -2048", 0xb001, 2, 0, P64, JAL, DIRECT_JUMP,
	       0, -2048, P64 - 2048),
	DIRECT("c.j +2046", 0xaffd, 2, 0, P64, JAL, DIRECT_JUMP,
	       0, 2046, P64 + 2046),
	DIRECT("rv32 c.j +2046", 0xaffd, 2, RV32, P32, JAL, DIRECT_JUMP,
	       0, 2046, P32 + 2046),
	/* C.JAL is RV32 only; the same bits are c.addiw on RV64 */
	DIRECT("rv32 c.jal +2046", 0x2ffd, 2, RV32, P32, JAL, DIRECT_CALL,
	       1, 2046, P32 + 2046),
	DIRECT("rv32 c.jal -2048", 0x3001, 2, RV32, P32, JAL, DIRECT_CALL,
	       1, -2048, P32 - 2048),
	DIRECT("rv32 c.jal -2048 wraps", 0x3001, 2, RV32, 0x400, JAL,
	       DIRECT_CALL, 1, -2048, 0xfffffc00ull),
	PLAIN("rv64 c.addiw x10,1", 0x2505, 2, 0, 2, OTHER, NONE),
	INVAL("rv64 c.addiw x0 (reserved)", 0x3001, 2, 0, 2),

	/* JALR rd, rs rows, in table order */
	JALR("jalr x1,x10: call", 0x000500e7, 4, INDIRECT_CALL, 1, 10, 0),
	JALR("jalr x1,x1: call", 0x000080e7, 4, INDIRECT_CALL, 1, 1, 0),
	JALR("jalr x5,x5: call", 0x000282e7, 4, INDIRECT_CALL, 5, 5, 0),
	JALR("jalr x1,x5: swap", 0x000280e7, 4, COROUTINE_SWAP, 1, 5, 0),
	JALR("jalr x5,x1: swap", 0x000082e7, 4, COROUTINE_SWAP, 5, 1, 0),
	JALR("jalr x0,x1: return", 0x00008067, 4, RETURN, 0, 1, 0),
	JALR("jalr x0,x5: return", 0x00028067, 4, RETURN, 0, 5, 0),
	JALR("jalr x6,x1: return", 0x00008367, 4, RETURN, 6, 1, 0),
	JALR("jalr x0,x10: jump", 0x00050067, 4, INDIRECT_JUMP, 0, 10, 0),
	JALR("jalr x6,x10: other", 0x00050367, 4, OTHER_INDIRECT_JUMP,
	     6, 10, 0),
	JALR("jalr x0,-2048(x11)", 0x80058067, 4, INDIRECT_JUMP, 0, 11,
	     -2048),
	JALR("jalr x0,2047(x11)", 0x7ff58067, 4, INDIRECT_JUMP, 0, 11, 2047),
	INVAL("jalr funct3 001", 0x00051067, 4, 0, 4),

	/* C.JR / C.JALR rows */
	JALR("c.jr x1: return", 0x8082, 2, RETURN, 0, 1, 0),
	JALR("c.jr x5: return", 0x8282, 2, RETURN, 0, 5, 0),
	JALR("c.jr x15: jump", 0x8782, 2, INDIRECT_JUMP, 0, 15, 0),
	INVAL("c.jr x0 (reserved)", 0x8002, 2, 0, 2),
	JALR("c.jalr x1: call", 0x9082, 2, INDIRECT_CALL, 1, 1, 0),
	JALR("c.jalr x5: swap", 0x9282, 2, COROUTINE_SWAP, 1, 5, 0),
	JALR("c.jalr x15: call", 0x9782, 2, INDIRECT_CALL, 1, 15, 0),
	PLAIN("c.mv", 0x852e, 2, 0, 2, OTHER, NONE),
	PLAIN("c.add", 0x952e, 2, 0, 2, OTHER, NONE),

	/* traps and trap returns */
	PLAIN("c.ebreak", 0x9002, 2, 0, 2, ECALL, EXCEPTION),
	PLAIN("ecall", 0x00000073, 4, 0, 4, ECALL, EXCEPTION),
	PLAIN("ebreak", 0x00100073, 4, 0, 4, ECALL, EXCEPTION),
	PLAIN("rv32 ecall", 0x00000073, 4, RV32, 4, ECALL, EXCEPTION),
	PLAIN("mret", 0x30200073, 4, 0, 4, TRAP_RETURN, TRAP_RETURN),
	PLAIN("sret", 0x10200073, 4, 0, 4, TRAP_RETURN, TRAP_RETURN),
	PLAIN("mnret", 0x70200073, 4, 0, 4, TRAP_RETURN, TRAP_RETURN),
	PLAIN("wfi", 0x10500073, 4, 0, 4, OTHER, NONE),
	PLAIN("sfence.vma", 0x12000073, 4, 0, 4, OTHER, NONE),
	PLAIN("dret", 0x7b200073, 4, 0, 4, OTHER, NONE),
	PLAIN("csrrw (unimp)", 0xc0001073, 4, 0, 4, OTHER, NONE),

	/* lui / auipc / c.lui */
	UPPER("lui x10,0x12345", 0x12345537, 4, 0, LUI, 10, 0x12345000),
	UPPER("lui x10,0xfffff", 0xfffff537, 4, 0, LUI, 10, -4096),
	UPPER("rv32 lui x10,0xfffff", 0xfffff537, 4, RV32, LUI, 10, -4096),
	UPPER("lui x10,0x80000", 0x80000537, 4, 0, LUI, 10,
	      -0x80000000ll),
	UPPER("lui x0,1 (hint)", 0x00001037, 4, 0, LUI, 0, 4096),
	UPPER("auipc x3,0x80000", 0x80000197, 4, 0, AUIPC, 3,
	      -0x80000000ll),
	UPPER("auipc x3,1", 0x00001197, 4, 0, AUIPC, 3, 4096),
	UPPER("rv32 auipc x3,0x80000", 0x80000197, 4, RV32, AUIPC, 3,
	      -0x80000000ll),
	UPPER("c.lui x15,1", 0x6785, 2, 0, LUI, 15, 4096),
	UPPER("c.lui x15,0xfffff", 0x77fd, 2, 0, LUI, 15, -4096),
	UPPER("c.lui x15,0xfffe0", 0x7781, 2, 0, LUI, 15, -0x20000),
	UPPER("c.lui x15,0x1f", 0x67fd, 2, 0, LUI, 15, 0x1f000),
	UPPER("rv32 c.lui x10,0xfffff", 0x757d, 2, RV32, LUI, 10, -4096),
	PLAIN("c.addi16sp", 0x713d, 2, 0, 2, OTHER, NONE),
	PLAIN("c.lui x0 (hint)", 0x6005, 2, 0, 2, OTHER, NONE),
	PLAIN("c.lui nzimm=0 (reserved)", 0x6781, 2, 0, 2, OTHER, NONE),

	/* plain instructions */
	PLAIN("c.nop", 0x0001, 2, 0, 2, OTHER, NONE),
	PLAIN("addi", 0x00310093, 4, 0, 4, OTHER, NONE),
	PLAIN("c.ldsp x1", 0x60a2, 2, 0, 2, OTHER, NONE),
	PLAIN("rv32 c.flwsp f0", 0x6002, 2, RV32, 2, OTHER, NONE),
	PLAIN("c.fsdsp (no Zc flags)", 0xa016, 2, 0, 2, OTHER, NONE),
	PLAIN("c.fsd with Zcmp/Zcmt", 0xa000, 2, ZCMP | ZCMT, 2, OTHER,
	      NONE),

	/* invalid and over-long encodings */
	INVAL("all-zero halfword", 0x0000, 2, 0, 2),
	INVAL("all-zero halfword, len 4", 0x0000, 4, 0, 2),
	INVAL("c.addi4spn nzuimm=0", 0x0010, 2, 0, 2),
	INVAL("c.lwsp x0", 0x4002, 2, 0, 2),
	INVAL("rv64 c.ldsp x0", 0x6002, 2, 0, 2),
	INVAL("all-ones word", 0xffffffff, 4, 0, 0),
	INVAL("48-bit", 0x00000000001full, 6, 0, 6),
	INVAL("48-bit, first parcel only", 0x001f, 2, 0, 6),
	INVAL("64-bit", 0x000000000000003full, 8, 0, 8),
	INVAL(">=80-bit", 0x007f, 2, 0, 0),

	/* Zcmt: cm.jt index < 32, cm.jalt index >= 32 */
	ZC("cm.jt 5", 0xa016, ZCMT, TABLE_JUMP, DIRECT_JUMP, 5),
	ZC("cm.jt 31", 0xa07e, ZCMT, TABLE_JUMP, DIRECT_JUMP, 31),
	ZC("cm.jalt 32", 0xa082, ZCMT, TABLE_JUMP, DIRECT_CALL, 32),
	ZC("cm.jalt 255", 0xa3fe, ZCMT, TABLE_JUMP, DIRECT_CALL, 255),
	ZC("rv32 cm.jalt 32", 0xa082, ZCMT | RV32, TABLE_JUMP, DIRECT_CALL,
	   32),
	ZC("cm.jt 5, Zcmp+Zcmt", 0xa016, ZCMT | ZCMP, TABLE_JUMP,
	   DIRECT_JUMP, 5),
	INVAL("cm.jt 5, Zcmp only", 0xa016, 2, ZCMP, 2),
	PLAIN("cm.jalt 32 bits, no flags", 0xa082, 2, 0, 2, OTHER, NONE),

	/* Zcmp */
	ZC("cm.popret {ra,s0-s1}", 0xbe62, ZCMP, POPRET, RETURN, 0),
	ZC("cm.popretz {ra}", 0xbc42, ZCMP, POPRET, RETURN, 0),
	ZC("rv32 cm.popret {ra}", 0xbe42, ZCMP | RV32, POPRET, RETURN, 0),
	ZC("cm.popret, Zcmp+Zcmt", 0xbe62, ZCMP | ZCMT, POPRET, RETURN, 0),
	ZC("cm.pop {ra,s0}", 0xba52, ZCMP, OTHER, NONE, 0),
	ZC("cm.push {ra}", 0xb842, ZCMP, OTHER, NONE, 0),
	ZC("cm.mvsa01 s1,s0", 0xaca2, ZCMP, OTHER, NONE, 0),
	ZC("cm.mva01s s0,s0", 0xac62, ZCMP, OTHER, NONE, 0),
	PLAIN("cm.popret bits, no flags", 0xbe62, 2, 0, 2, OTHER, NONE),
	INVAL("cm.popret, Zcmt only", 0xbe62, 2, ZCMT, 2),
	INVAL("cm.popret rlist 3", 0xbe32, 2, ZCMP, 2),
	INVAL("cm.push rlist 0", 0xb802, 2, ZCMP, 2),
	INVAL("cm.pop* funct2 01", 0xbd42, 2, ZCMP, 2),
	INVAL("cm.mvsa01 s0,s0", 0xac22, 2, ZCMP, 2),
};

static int run(const uint8_t *src, size_t len, uint64_t pc, unsigned int isa,
	       struct nt_insn *in)
{
	/* exact-size heap copy: ASan catches any read beyond len */
	uint8_t *buf = malloc(len ? len : 1);
	int ret;

	if (!buf)
		abort();
	memcpy(buf, src, len);
	ret = nt_insn_classify(buf, len, pc, isa, in);
	free(buf);
	return ret;
}

static void check_vec(const struct vec *v)
{
	uint8_t bytes[8];
	struct nt_insn in;
	int ret, i;
	bool ok;

	for (i = 0; i < 8; i++)
		bytes[i] = (uint8_t)(v->raw >> (8 * i));
	ret = run(bytes, v->len, v->pc, v->isa, &in);
	ok = ret == v->ret && in.size == v->size && in.iclass == v->iclass &&
	     in.itype == v->itype && in.rd == v->rd && in.rs1 == v->rs1 &&
	     in.has_target == v->has_target && in.imm == v->imm &&
	     in.target == v->target;
	if (!tap_ok(ok, "%s", v->name))
		tap_diag("got ret %d size %u class %u itype %u rd %u rs1 %u ht %d imm %" PRId64 " target %#" PRIx64,
			 ret, in.size, in.iclass, in.itype, in.rd, in.rs1,
			 in.has_target, in.imm, in.target);
}

static void test_truncation(void)
{
	static const uint8_t jal[4] = { 0xef, 0x00, 0x00, 0x80 };
	static const uint8_t cjr[2] = { 0x82, 0x80 };
	struct nt_insn in;
	int r0, r1, r2, r3, r4;

	r0 = run(jal, 0, P64, 0, &in);
	r1 = run(jal, 1, P64, 0, &in);
	r2 = run(jal, 2, P64, 0, &in);
	r3 = run(jal, 3, P64, 0, &in);
	tap_ok(r0 == 0 && r1 == 0 && r2 == 0 && r3 == 0 && in.size == 0 &&
	       !in.has_target,
	       "32-bit jal with len 0..3 needs more bytes (%d %d %d %d)",
	       r0, r1, r2, r3);
	r4 = run(jal, 4, P64, 0, &in);
	tap_ok(r4 == 4 && in.iclass == NT_IC_JAL, "32-bit jal with len 4");
	r1 = run(cjr, 1, P64, 0, &in);
	r2 = run(cjr, 2, P64, 0, &in);
	tap_ok(r1 == 0 && r2 == 2 && in.iclass == NT_IC_JALR,
	       "c.jr with len 1 / 2 (%d %d)", r1, r2);
	tap_ok(nt_insn_classify(NULL, 0, 0, 0, &in) == 0,
	       "len 0 never dereferences bytes");
}

/*
 * Random words: no crash or overread (under ASan), results are
 * self-consistent, and extra trailing bytes never change a decision.
 */
static void test_random(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned long bad = 0, n;
	static const unsigned int isas[] = {
		0, RV32, ZCMP, ZCMT, ZCMP | ZCMT | RV32,
	};

	for (n = 0; n < 400000; n++) {
		struct nt_insn a, b;
		uint8_t bytes[4];
		unsigned int isa = isas[n % 5];
		size_t len;
		int ra, rb, i;

		xorshift64(&x);
		for (i = 0; i < 4; i++)
			bytes[i] = (uint8_t)(x >> (8 * i));
		len = (size_t)(x >> 40) % 5;
		ra = run(bytes, len, x >> 8, isa, &a);
		rb = run(bytes, 4, x >> 8, isa, &b);
		if (ra != 0 && memcmp(&a, &b, sizeof(a)))
			bad++;
		if (ra > 0 && ra != a.size)
			bad++;
		if (rb == 0 || (rb > 0 && b.iclass == NT_IC_INVALID) ||
		    (rb < 0 && b.iclass != NT_IC_INVALID))
			bad++;
		if (b.has_target != (b.iclass == NT_IC_BRANCH ||
				     b.iclass == NT_IC_JAL))
			bad++;
		if (b.itype > 15 || b.itype == NT_ITYPE_INTERRUPT ||
		    b.itype == NT_ITYPE_BRANCH_NOT_TAKEN ||
		    b.itype == NT_ITYPE_INDIRECT_3BIT || b.itype == 7)
			bad++;
		if ((isa & RV32) && b.has_target && b.target > 0xffffffffu)
			bad++;
	}
	tap_ok(bad == 0, "%lu random encodings consistent (%lu bad)", n, bad);
}

static void test_names(void)
{
	unsigned int i, j;
	bool ok = true;

	for (i = 0; i < 16; i++) {
		const char *a = nt_itype_name(i);

		if (!a || !*a)
			ok = false;
		for (j = 0; a && j < i; j++)
			if (!strcmp(a, nt_itype_name(j)))
				ok = false;
	}
	tap_ok(ok, "nt_itype_name: 16 distinct names");
	tap_ok(!strcmp(nt_itype_name(NT_ITYPE_RETURN), "return") &&
	       nt_itype_name(16) && nt_itype_name(~0u),
	       "nt_itype_name: spot check and out of range");
}

int main(void)
{
	size_t i;

	for (i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++)
		check_vec(&vecs[i]);
	test_truncation();
	test_random();
	test_names();
	return tap_done();
}
