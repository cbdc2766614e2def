// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Cross-check nt_insn_classify() against GNU objdump.
 *
 * Usage: insn_objdump_check [-m MIN] FILE [[-m MIN] FILE...]
 *
 * FILE "-" is standard input.
 * Each FILE holds the output of
 *	objdump -d -M no-aliases,numeric BINARY
 * "no-aliases" keeps the mnemonics one-to-one with encodings (no "ret",
 * "j", "beqz" forms to undo) and "numeric" prints x0..x31, so the link
 * registers can be recognised without an ABI name table.
 *
 * The expected class, itype and target are derived here from the
 * mnemonic and operands only, independently of the classifier's bit
 * decoding. One TAP line is printed per (file, section); a file whose
 * sections hold fewer than MIN checked instructions in total gets an
 * extra failing line.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"
#include "tap.h"

#define MAX_SHOWN	10

struct expect {
	int size;
	unsigned int iclass;
	unsigned int itype;
	int rd, rs1;		/* -1: not checked */
	bool has_target;
	uint64_t target;
	bool has_upper;		/* lui/auipc: 20-bit field as printed */
	uint64_t upper;
};

struct section_stats {
	char name[128];
	unsigned long checked, mismatches, skipped;
};

static const char *const iclass_names[] = {
	"other", "branch", "jal", "jalr", "table-jump", "popret",
	"trap-return", "ecall", "lui", "auipc", "invalid",
};

static const char *iclass_name(unsigned int c)
{
	if (c < sizeof(iclass_names) / sizeof(iclass_names[0]))
		return iclass_names[c];
	return "?";
}

/* "x12" -> 12, anything else -> -1 */
static int parse_xreg(const char *s)
{
	char *end;
	long v;

	while (*s == ' ')
		s++;
	if (s[0] != 'x' || !isdigit((unsigned char)s[1]))
		return -1;
	v = strtol(s + 1, &end, 10);
	if (v < 0 || v > 31)
		return -1;
	return (int)v;
}

/*
 * Written straight from the spec's 4-bit itype table rows, in a form that
 * deliberately differs from the library's nested tests.
 */
static bool link_reg(int r)
{
	return r == 1 || r == 5;
}

static unsigned int expect_jalr_itype(int rd, int rs)
{
	if (link_reg(rd) && !link_reg(rs))
		return NT_ITYPE_INDIRECT_CALL;
	if (link_reg(rd) && link_reg(rs) && rd == rs)
		return NT_ITYPE_INDIRECT_CALL;
	if (link_reg(rd) && link_reg(rs) && rd != rs)
		return NT_ITYPE_COROUTINE_SWAP;
	if (!link_reg(rd) && link_reg(rs))
		return NT_ITYPE_RETURN;
	if (rd == 0 && !link_reg(rs))
		return NT_ITYPE_INDIRECT_JUMP;
	return NT_ITYPE_OTHER_INDIRECT_JUMP;
}

static unsigned int expect_jal_itype(int rd)
{
	if (link_reg(rd))
		return NT_ITYPE_DIRECT_CALL;
	return rd == 0 ? NT_ITYPE_DIRECT_JUMP : NT_ITYPE_OTHER_DIRECT_JUMP;
}

/* The last comma-separated operand, as a hex address ("1abd2 <sym>"). */
static bool parse_target(const char *ops, uint64_t *t)
{
	const char *p = strrchr(ops, ',');
	char *end;

	p = p ? p + 1 : ops;
	while (*p == ' ')
		p++;
	if (!isxdigit((unsigned char)*p))
		return false;
	*t = strtoull(p, &end, 16);
	return end != p;
}

static const char *const branches[] = {
	"beq", "bne", "blt", "bge", "bltu", "bgeu", "c.beqz", "c.bnez",
	/* alias forms, should objdump ever print them */
	"beqz", "bnez", "blez", "bgez", "bltz", "bgtz", "bgt", "ble",
	"bgtu", "bleu",
};

static bool in_list(const char *m, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(m, list[i]))
			return true;
	return false;
}

/* Fill e from mnemonic and operands; false if the line can't be checked */
static bool derive(const char *mn, const char *ops, struct expect *e)
{
	char buf[256];
	char *comma;

	e->iclass = NT_IC_OTHER;
	e->itype = NT_ITYPE_NONE;
	e->rd = e->rs1 = -1;
	e->has_target = false;
	e->has_upper = false;

	if (in_list(mn, branches, sizeof(branches) / sizeof(branches[0]))) {
		e->iclass = NT_IC_BRANCH;
		e->itype = NT_ITYPE_BRANCH_TAKEN;
		e->has_target = parse_target(ops, &e->target);
		return e->has_target;
	}
	if (!strcmp(mn, "jal") || !strcmp(mn, "c.j") ||
	    !strcmp(mn, "c.jal") || !strcmp(mn, "j")) {
		if (!strcmp(mn, "c.j") || !strcmp(mn, "j"))
			e->rd = 0;
		else if (!strcmp(mn, "c.jal") || !strchr(ops, ','))
			e->rd = 1;
		else
			e->rd = parse_xreg(ops);
		if (e->rd < 0)
			return false;
		e->iclass = NT_IC_JAL;
		e->itype = expect_jal_itype(e->rd);
		e->has_target = parse_target(ops, &e->target);
		return e->has_target;
	}
	if (!strcmp(mn, "c.jr") || !strcmp(mn, "c.jalr")) {
		e->rd = mn[3] == 'r' ? 0 : 1;
		e->rs1 = parse_xreg(ops);
		if (e->rs1 < 0)
			return false;
		e->iclass = NT_IC_JALR;
		e->itype = expect_jalr_itype(e->rd, e->rs1);
		return true;
	}
	if (!strcmp(mn, "jalr")) {
		/* "xD,imm(xS)" or "xD,xS,imm" */
		snprintf(buf, sizeof(buf), "%s", ops);
		comma = strchr(buf, ',');
		if (!comma)
			return false;
		*comma = '\0';
		e->rd = parse_xreg(buf);
		comma++;
		if (strchr(comma, '('))
			e->rs1 = parse_xreg(strchr(comma, '(') + 1);
		else
			e->rs1 = parse_xreg(comma);
		if (e->rd < 0 || e->rs1 < 0)
			return false;
		e->iclass = NT_IC_JALR;
		e->itype = expect_jalr_itype(e->rd, e->rs1);
		return true;
	}
	if (!strcmp(mn, "mret") || !strcmp(mn, "sret") ||
	    !strcmp(mn, "mnret")) {
		e->iclass = NT_IC_TRAP_RETURN;
		e->itype = NT_ITYPE_TRAP_RETURN;
		return true;
	}
	if (!strcmp(mn, "ecall") || !strcmp(mn, "ebreak") ||
	    !strcmp(mn, "c.ebreak")) {
		e->iclass = NT_IC_ECALL;
		e->itype = NT_ITYPE_EXCEPTION;
		return true;
	}
	if (!strcmp(mn, "lui") || !strcmp(mn, "c.lui") ||
	    !strcmp(mn, "auipc")) {
		e->iclass = mn[0] == 'a' ? NT_IC_AUIPC : NT_IC_LUI;
		e->rd = parse_xreg(ops);
		comma = strchr(ops, ',');
		if (e->rd < 0 || !comma)
			return false;
		e->upper = strtoull(comma + 1, NULL, 0);
		e->has_upper = true;
		return true;
	}
	if (!strcmp(mn, "c.unimp")) {
		e->iclass = NT_IC_INVALID;
		return true;
	}
	return true;
}

static int check_line(const char *line, unsigned int isa,
		      struct section_stats *st)
{
	unsigned long long addr, raw;
	char hex[32], mn[64], ops[256];
	uint8_t bytes[4];
	struct nt_insn in;
	struct expect e;
	const char *p;
	char *end;
	size_t nhex;
	int ret, n, i;
	bool bad;

	/* "   1045c:\t7760a0ef          \tjal\tx1,1abd2 <sym>" */
	addr = strtoull(line, &end, 16);
	if (end == line || *end != ':' || end[1] != '\t')
		return 0;
	p = end + 2;
	n = 0;
	if (sscanf(p, "%31[0-9a-f]%n", hex, &n) != 1)
		return 0;
	nhex = strlen(hex);
	p += n;
	while (*p == ' ')
		p++;
	if (*p != '\t')
		return 0;	/* several words: longer insn or data */
	p++;
	ops[0] = '\0';
	if (sscanf(p, "%63[^\t\n]\t%255[^\n]", mn, ops) < 1)
		return 0;
	if (mn[0] == '.' || (nhex != 4 && nhex != 8)) {
		st->skipped++;		/* .word/.insn data, >32-bit */
		return 0;
	}
	raw = strtoull(hex, NULL, 16);
	for (i = 0; i < (int)nhex / 2; i++)
		bytes[i] = (uint8_t)(raw >> (8 * i));

	if (!derive(mn, ops, &e)) {
		st->skipped++;
		return 0;
	}
	e.size = (int)nhex / 2;

	ret = nt_insn_classify(bytes, nhex / 2, addr, isa, &in);
	bad = in.size != e.size || in.iclass != e.iclass ||
	      in.itype != e.itype ||
	      ret != (e.iclass == NT_IC_INVALID ? -1 : e.size);
	if (e.rd >= 0 && in.rd != e.rd)
		bad = true;
	if (e.rs1 >= 0 && in.rs1 != e.rs1)
		bad = true;
	if (in.has_target != e.has_target ||
	    (e.has_target && in.target != e.target))
		bad = true;
	if (e.has_upper &&
	    (((uint64_t)in.imm >> 12) & 0xfffff) != (e.upper & 0xfffff))
		bad = true;

	st->checked++;
	if (bad) {
		st->mismatches++;
		if (st->mismatches <= MAX_SHOWN)
			tap_diag("%s: %llx: %s %s %s: got ret %d size %u %s itype %u rd %u rs1 %u tgt %d:%" PRIx64 " imm %" PRId64 "; want %s itype %u tgt %d:%" PRIx64,
				 st->name, addr, hex, mn, ops, ret, in.size,
				 iclass_name(in.iclass), in.itype, in.rd,
				 in.rs1, in.has_target, in.target, in.imm,
				 iclass_name(e.iclass), e.itype,
				 e.has_target, e.target);
	}
	return 1;
}

static void report(const char *file, struct section_stats *st)
{
	if (!st->checked && !st->skipped)
		return;
	tap_ok(st->mismatches == 0,
	       "%s %s: %lu instructions checked, %lu mismatches, %lu skipped",
	       file, st->name, st->checked, st->mismatches, st->skipped);
}

static int check_file(const char *file, unsigned long min)
{
	struct section_stats st = { .name = "(none)" };
	unsigned long total = 0;
	unsigned int isa = 0;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	if (!f) {
		tap_ok(0, "%s: cannot open", file);
		return -1;
	}
	while (getline(&line, &cap, f) > 0) {
		const char *p;

		if (strstr(line, "file format elf32-"))
			isa |= NT_ISA_RV32;
		p = strstr(line, "Disassembly of section ");
		if (p == line) {
			report(file, &st);
			memset(&st, 0, sizeof(st));
			p += strlen("Disassembly of section ");
			snprintf(st.name, sizeof(st.name), "%.*s",
				 (int)strcspn(p, ":\n"), p);
			continue;
		}
		total += (unsigned long)check_line(line, isa, &st);
	}
	report(file, &st);
	free(line);
	if (f != stdin)
		fclose(f);
	if (min)
		tap_ok(total >= min, "%s: %lu instructions checked (min %lu)",
		       file, total, min);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long min = 0;
	int i;

	if (argc < 2) {
		fprintf(stderr,
			"usage: %s [-m MIN] OBJDUMP-OUTPUT [[-m MIN] ...]\n",
			argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-m") && i + 1 < argc) {
			min = strtoul(argv[++i], NULL, 0);
			continue;
		}
		check_file(argv[i], min);
		min = 0;
	}
	return tap_done();
}
