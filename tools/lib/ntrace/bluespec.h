/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Reader and writer for the Bluespec tandem-verification trace format
 * ("Trace Protocol Specification", version 2018-11-20, D. Rad).
 *
 * The format is a byte stream of state-change items, bracketed into
 * atomic groups. This module reduces it to one event per retired
 * instruction or taken trap, which is what a PC-level comparison needs;
 * register, memory and other state items are length-checked and
 * skipped. See Documentation/ntrace/bluespec.rst.
 *
 * Section names in comments refer to that document; "Notes" is its
 * chapter 3, "Examples" its appendix C.
 */
#ifndef NTRACE_BLUESPEC_H
#define NTRACE_BLUESPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Item opcodes, chapter 2 "Trace Format". */
enum nt_bsv_op {
	NT_BSV_OP_BEGIN_GROUP = 1,
	NT_BSV_OP_END_GROUP = 2,
	NT_BSV_OP_INCR_PC = 3,
	NT_BSV_OP_FULL_REG = 4,
	NT_BSV_OP_INCR_REG_ADD = 5,
	NT_BSV_OP_INCR_REG_OR = 6,
	NT_BSV_OP_ADDL_STATE = 7,
	NT_BSV_OP_MEM_REQ = 8,
	NT_BSV_OP_MEM_RSP = 9,
	NT_BSV_OP_HART_RESET = 10,
	NT_BSV_OP_STATE_INIT = 11,
	NT_BSV_OP_INSTR16 = 16,
	NT_BSV_OP_INSTR32 = 17,
};

/* Additional-state identifiers (opcode 7). */
enum nt_bsv_addl {
	NT_BSV_ADDL_PRIV = 1,
	NT_BSV_ADDL_PADDR = 2,
	NT_BSV_ADDL_EADDR = 3,
	NT_BSV_ADDL_DATA8 = 4,
	NT_BSV_ADDL_DATA16 = 5,
	NT_BSV_ADDL_DATA32 = 6,
	NT_BSV_ADDL_DATA64 = 7,
	NT_BSV_ADDL_MTIME = 8,
	NT_BSV_ADDL_PC_PADDR = 9,
	NT_BSV_ADDL_PC = 10,
	/*
	 * Appendix C writes the pc identifier as the byte 0x10 although
	 * the table says 10. 16 is otherwise unassigned, so the reader
	 * accepts it as a synonym; the writer never produces it.
	 */
	NT_BSV_ADDL_PC_EXAMPLE = 16,
};

/* Register address space, as in the RISC-V Debug Specification. */
#define NT_BSV_REG_CSR(n)	((uint16_t)(n))
#define NT_BSV_REG_GPR(n)	((uint16_t)(0x1000 + (n)))
#define NT_BSV_REG_FPR(n)	((uint16_t)(0x1020 + (n)))

/*
 * Parameters both ends must agree on (the format has no way to carry
 * them, see "Notes"). Widths in bits.
 *   xlen: 32 or 64
 *   flen: 0 (no F/D; an FPR write is then an error), 32 or 64
 *   mlen: memory address width; 32..64, stored rounded up to bytes
 *         (RV64: 64; RV32 with Sv32: 34, i.e. 5 bytes)
 */
struct nt_bsv_config {
	unsigned int xlen;
	unsigned int flen;
	unsigned int mlen;
};

/* RV64GC with Sv39/48: xlen = flen = mlen = 64, as in appendix C. */
void nt_bsv_config_rv64(struct nt_bsv_config *cfg);

/*
 * One retired instruction or one trap.
 *
 * The format only carries the pc *after* a group (increment or new
 * value), so @pc is the reader's running pc before the group and is
 * unknown (pc_valid false) until some earlier group set it absolutely.
 * For traps the written xepc is used when the running pc is unknown.
 *
 * insn_size is 2 or 4 from the instr16/instr32 item, or 0 when the
 * group has no instruction (an interrupt; "Notes": the instruction is
 * omitted for interrupts). A trap is recognised by a full write of
 * mcause, scause or ucause in the group; @interrupt is that register's
 * top bit and @cause the remaining bits.
 */
struct nt_bsv_event {
	uint64_t pc;
	uint64_t next_pc;
	uint64_t cause;
	uint64_t tval;
	uint32_t insn;
	uint8_t insn_size;
	uint8_t priv;		/* privilege after the group, 0..3 */
	bool pc_valid;
	bool next_pc_valid;
	bool trap;
	bool interrupt;
	bool tval_valid;
	bool priv_valid;
	size_t offset;		/* reader: offset of the group's first byte */
};

struct nt_bsv_reader {
	/* Read-only for callers. */
	const uint8_t *buf;
	size_t len;
	size_t pos;
	struct nt_bsv_config cfg;
	uint64_t pc;
	bool pc_valid;
	/* Set when nt_bsv_next() returns -1. */
	size_t err_off;
	const char *err_msg;
	/* Statistics. */
	unsigned long groups;
	unsigned long errors;
	unsigned long resets;
};

/* Returns 0, or -1 if @cfg is not a supported combination. */
int nt_bsv_reader_init(struct nt_bsv_reader *r, const struct nt_bsv_config *cfg,
		       const void *buf, size_t len);

/*
 * Decode up to the next event.
 *   1: *ev filled in
 *   0: end of buffer
 *  -1: malformed input; r->err_off is the offset of the offending byte
 *      and r->err_msg says what was wrong. The reader has already
 *      skipped to the next begin-group byte, so calling again
 *      continues. Every call consumes at least one byte or returns 0.
 */
int nt_bsv_next(struct nt_bsv_reader *r, struct nt_bsv_event *ev);

struct nt_bsv_writer {
	uint8_t *buf;
	size_t len;
	size_t cap;
	struct nt_bsv_config cfg;
	uint64_t pc;
	bool pc_valid;
	bool failed;		/* allocation failed; writer is now inert */
	/*
	 * Emit the absolute next pc instead of "increment pc" at least every
	 * @sync_interval groups, so a reader that lost its place can
	 * recover. 0: only when the pc does not simply advance.
	 */
	unsigned int sync_interval;
	unsigned int since_sync;
};

int nt_bsv_writer_init(struct nt_bsv_writer *w, const struct nt_bsv_config *cfg);

/*
 * Append one event. Uses ev->pc, next_pc, insn, insn_size, trap,
 * interrupt, cause, tval(+valid), priv(+valid); pc_valid and
 * next_pc_valid must be set and the values must fit in XLEN. A group
 * that only sets the pc is written first when ev->pc differs from the
 * previous event's next_pc. Returns 0, or -1 on invalid event or
 * allocation failure.
 */
int nt_bsv_write(struct nt_bsv_writer *w, const struct nt_bsv_event *ev);

/* Bytes written so far; valid until the next nt_bsv_write(). */
const uint8_t *nt_bsv_writer_data(const struct nt_bsv_writer *w, size_t *len);

/*
 * Forget the bytes written so far, once the caller has taken them with
 * nt_bsv_writer_data(). The encoding state stays, so the next bytes
 * continue the same stream: a caller that drains regularly streams a
 * trace of any length in a buffer of bounded size.
 */
void nt_bsv_writer_drain(struct nt_bsv_writer *w);

void nt_bsv_writer_free(struct nt_bsv_writer *w);

#ifdef __cplusplus
}
#endif

#endif /* NTRACE_BLUESPEC_H */
