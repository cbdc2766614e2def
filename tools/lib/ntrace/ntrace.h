/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * libntrace: RISC-V N-Trace 1.0 message codec, encoder model and
 * instruction classifier.
 *
 * Section numbers in comments refer to the ratified RISC-V N-Trace 1.0
 * specification unless another document is named.
 */
#ifndef NTRACE_H
#define NTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Transfer codes (TCODE, 6 bits), "Fields in Messages" table. */
enum nt_tcode {
	NT_TCODE_OWNERSHIP = 2,
	NT_TCODE_DIRECT_BRANCH = 3,
	NT_TCODE_INDIRECT_BRANCH = 4,
	/*
	 * Nexus messages outside N-Trace 1.0 that real encoders send (IEEE-ISTO
	 * 5001-2012 sections 4.3.19 and 4.3.21): read, shown and skipped.
	 */
	NT_TCODE_DATA_ACQUISITION = 7,
	NT_TCODE_ERROR = 8,
	NT_TCODE_PROG_TRACE_SYNC = 9,
	NT_TCODE_DIRECT_BRANCH_SYNC = 11,
	NT_TCODE_INDIRECT_BRANCH_SYNC = 12,
	NT_TCODE_RESOURCE_FULL = 27,
	NT_TCODE_INDIRECT_BRANCH_HIST = 28,
	NT_TCODE_INDIRECT_BRANCH_HIST_SYNC = 29,
	NT_TCODE_REPEAT_BRANCH = 30,
	NT_TCODE_PROG_TRACE_CORRELATION = 33,
	NT_TCODE_IN_CIRCUIT_TRACE = 34,
	NT_TCODE_VENDOR_FIRST = 56,
	NT_TCODE_VENDOR_LAST = 62,
};

/* SYNC reasons (section "Synchronizing Messages"). */
enum nt_sync {
	NT_SYNC_EXTERNAL_TRIGGER = 0,
	NT_SYNC_RESET = 1,
	NT_SYNC_PERIODIC = 2,
	NT_SYNC_DEBUG_EXIT = 3,
	NT_SYNC_ICNT_FULL = 4,
	NT_SYNC_TRACE_ENABLE = 5,
	NT_SYNC_TRACE_EVENT = 6,
	NT_SYNC_FIFO_OVERRUN = 7,
	NT_SYNC_POWER_DOWN_EXIT = 9,
};

/* B-TYPE values. */
enum nt_btype {
	NT_BTYPE_INDIRECT = 0,
	NT_BTYPE_TRAP = 1,
	NT_BTYPE_EXCEPTION = 2,
	NT_BTYPE_INTERRUPT = 3,
};

/* ResourceFull RCODE values; 8..15 are vendor defined. */
enum nt_rcode {
	NT_RCODE_ICNT = 0,
	NT_RCODE_HIST = 1,
	NT_RCODE_HIST_REPEAT = 2,
	NT_RCODE_SIFIVE_NOT_TAKEN = 8,	/* with NT_QUIRK_SIFIVE */
	NT_RCODE_SIFIVE_TAKEN = 9,
};

/* ProgTraceCorrelation EVCODE values. */
enum nt_evcode {
	NT_EVCODE_DEBUG_ENTRY = 0,
	NT_EVCODE_LOW_POWER = 1,
	NT_EVCODE_TRACE_DISABLED = 4,
};

/* Ownership PROCESS field FORMAT sub-field. */
enum nt_ownership_format {
	NT_OWN_PRIV = 0,	/* V/PRV change only */
	NT_OWN_SCONTEXT = 2,
	NT_OWN_HCONTEXT = 3,
};

/* Trace modes as written to trTeInstMode. */
enum nt_mode {
	NT_MODE_BTM = 3,
	NT_MODE_HTM = 6,
};

/* Privilege encoding of records and Ownership messages: {V, PRV[1:0]}. */
#define NT_PRIV_U	0u
#define NT_PRIV_S	1u
#define NT_PRIV_M	3u
#define NT_PRIV_V	4u	/* virtualisation bit */

/* Spec limits ("Maximum Field Sizes" table and transmission protocol). */
#define NT_MAX_SRC_BITS		12
#define NT_MAX_ICNT_BITS	22
#define NT_MAX_HIST_BITS	32
#define NT_MAX_HREPEAT_BITS	18
#define NT_MAX_BCNT_BITS	18
#define NT_MAX_MSG_BYTES	38
#define NT_MAX_VENDOR_MSG_BYTES	256
#define NT_MAX_IR_DEPTH		32

/*
 * Formats of encoders that predate N-Trace 1.0 (nt_stream_cfg.quirks).
 * SiFive's (P550 and relatives): a timestamp that is not absolute is
 * XORed into the running time, not added; ResourceFull RCODE 8 and 9
 * report RDATA branches in a row, all not taken and all taken.
 */
#define NT_QUIRK_SIFIVE		(1u << 0)

/* Stream configuration that changes how bytes are interpreted. */
struct nt_stream_cfg {
	uint8_t src_bits;	/* SRC width, 0 = no SRC field (trTeInhibitSrc) */
	bool timestamps;	/* trTsEnable: TSTAMP may end each message */
	bool extend_addr_msb;	/* trTeInstExtendAddrMSB (section 8.2) */
	uint8_t xlen;		/* 32 or 64; 0 means 64 */
	uint16_t max_msg_bytes;	/* standard messages; 0 = NT_MAX_MSG_BYTES */
	uint8_t quirks;		/* NT_QUIRK_*; readers and decoders only */
};

/* Presence bits of struct nt_msg fields. */
#define NT_F_SRC	(1u << 0)
#define NT_F_SYNC	(1u << 1)
#define NT_F_BTYPE	(1u << 2)
#define NT_F_ICNT	(1u << 3)
#define NT_F_FADDR	(1u << 4)
#define NT_F_UADDR	(1u << 5)
#define NT_F_HIST	(1u << 6)
#define NT_F_TSTAMP	(1u << 7)
#define NT_F_PROCESS	(1u << 8)
#define NT_F_ETYPE	(1u << 9)
#define NT_F_ECODE	(1u << 10)
#define NT_F_RCODE	(1u << 11)
#define NT_F_RDATA	(1u << 12)	/* rdata[0 .. nrdata-1] */
#define NT_F_BCNT	(1u << 13)
#define NT_F_EVCODE	(1u << 14)
#define NT_F_CDF	(1u << 15)
#define NT_F_RAW	(1u << 16)	/* vendor/reserved: raw var fields */
#define NT_F_IDTAG	(1u << 17)	/* DataAcquisition */
#define NT_F_DQDATA	(1u << 18)
#define NT_F_CKSRC	(1u << 19)	/* In-Circuit Trace */
#define NT_F_CKDF	(1u << 20)
#define NT_F_CKDATA	(1u << 21)	/* ckdata[0 .. ckdf] */

/* Errors the reader reports (as records, never fatal). */
enum nt_err {
	NT_OK = 0,
	NT_ERR_MSEO_RESERVED,	/* MSEO=10 */
	NT_ERR_GARBAGE,		/* outside a message: not idle, not a start */
	NT_ERR_FIELD_TOO_LONG,	/* a field has more than 64 significant bits */
	NT_ERR_MSG_TOO_LONG,	/* over the maximum message size */
	NT_ERR_TRUNCATED,	/* stream ended inside a message */
	NT_ERR_BAD_LAYOUT,	/* fields do not match the TCODE's layout */
	NT_ERR_UNKNOWN_TCODE,	/* reserved TCODE (message is still returned) */
	NT_ERR__COUNT
};

#define NT_MAX_RAW_FIELDS 8

/*
 * One decoded message, or one error record (err != NT_OK).
 *
 * Address fields are kept twice: addr_field is the value as transmitted
 * (after sign extension when extend_addr_msb is set), target is the full
 * reconstructed address (F-ADDR << 1, or U-ADDR << 1 XOR the previous
 * address of the same SRC). tstamp is the field as transmitted, time the
 * reconstructed absolute timestamp.
 */
struct nt_msg {
	uint64_t offset;	/* stream byte offset of the first byte */
	uint64_t err_at;	/* error records: offset of the offending byte */
	uint32_t size;		/* bytes in the message (or skipped by an error) */
	uint32_t fields;	/* NT_F_* */
	uint8_t err;		/* enum nt_err */
	uint8_t tcode;
	uint16_t src;
	uint8_t sync;
	uint8_t btype;
	uint8_t etype;
	uint8_t rcode;
	uint8_t evcode;
	uint8_t cdf;
	uint8_t nrdata;
	uint8_t nraw;
	uint8_t cksrc;
	uint8_t ckdf;
	uint64_t icnt;
	uint64_t addr_field;
	uint64_t target;
	uint64_t hist;
	uint64_t tstamp;
	uint64_t time;
	/*
	 * The reader fills these only for the messages that carry them (see
	 * fields): they are not cleared for every message, to keep parsing
	 * cheap.
	 */
	uint64_t rdata[2];	/* RDATA[0], RDATA[1] (= HREPEAT for RCODE 2) */
	uint64_t process;
	uint64_t ecode;
	uint64_t bcnt;
	uint64_t raw[NT_MAX_RAW_FIELDS];
	uint64_t idtag, dqdata;
	uint64_t ckdata[2];	/* CKDATA0, and CKDATA1 when CKDF is 1 */
};

/*
 * The reader is lenient where the writer is strict: a ProgTraceCorrelation
 * with CDF=0 and a second field (no timestamps) is read as carrying HIST,
 * as some encoders write it; the writer sends HIST only with CDF=1.
 */

/* Bytes of struct nt_msg the reader clears for every message. */
#define NT_MSG_CLEARED_BYTES offsetof(struct nt_msg, rdata)

const char *nt_tcode_name(unsigned int tcode);
const char *nt_err_name(unsigned int err);
const char *nt_sync_name(unsigned int sync);
bool nt_tcode_is_sync(unsigned int tcode);
/*
 * I-CNT half-words a message accounts for: its I-CNT field, RDATA of a
 * ResourceFull RCODE 0, or B-CNT times the I-CNT of the branch message a
 * RepeatBranch repeats (*last_branch_icnt carries that between calls).
 */
uint64_t nt_msg_halfwords(const struct nt_msg *m, uint64_t *last_branch_icnt);
/*
 * One-line text of a message's fields ("icnt=5 uaddr=0x3 -> 0x1000 ...");
 * returns the length snprintf would have written.
 */
int nt_msg_format(const struct nt_msg *m, char *buf, size_t len);

/* ---- Reader: bytes -> messages, streaming ---------------------------- */

struct nt_reader;

struct nt_reader *nt_reader_new(const struct nt_stream_cfg *cfg);
void nt_reader_free(struct nt_reader *r);
/*
 * Hand the next chunk of bytes to the reader. The chunk must stay valid
 * until nt_reader_next() returns 0. Chunks may split messages anywhere.
 */
void nt_reader_feed(struct nt_reader *r, const uint8_t *data, size_t len);
/* Mark the end of the stream: a partial message becomes NT_ERR_TRUNCATED. */
void nt_reader_finish(struct nt_reader *r);
/* 1: *m holds a message or error record; 0: needs more data / done. */
int nt_reader_next(struct nt_reader *r, struct nt_msg *m);
/*
 * Up to max records into m[0..max), the ones that many nt_reader_next()
 * calls would give, in a fraction of the time for the common short
 * branch messages. Returns how many; fewer than max when
 * nt_reader_next() would have returned 0.
 */
size_t nt_reader_next_batch(struct nt_reader *r, struct nt_msg *m,
			    size_t max);
/* Forget address/timestamp history (e.g. after a gap in the input). */
void nt_reader_reset_state(struct nt_reader *r);

/* ---- Writer: messages -> bytes --------------------------------------- */

/*
 * Encode one message from its transmitted field values (addr_field,
 * tstamp, ...; target and time are ignored). Returns the number of bytes
 * written, or -1 if the message does not fit in cap or is malformed.
 */
int nt_write_msg(const struct nt_stream_cfg *cfg, const struct nt_msg *m,
		 uint8_t *out, size_t cap);

/* ---- Instruction classifier ------------------------------------------ */

/* Ingress-port itype values (section "Trace Ingress Port"). */
enum nt_itype {
	NT_ITYPE_NONE = 0,
	NT_ITYPE_EXCEPTION = 1,
	NT_ITYPE_INTERRUPT = 2,
	NT_ITYPE_TRAP_RETURN = 3,
	NT_ITYPE_BRANCH_NOT_TAKEN = 4,
	NT_ITYPE_BRANCH_TAKEN = 5,
	NT_ITYPE_INDIRECT_3BIT = 6,
	NT_ITYPE_INDIRECT_CALL = 8,
	NT_ITYPE_DIRECT_CALL = 9,
	NT_ITYPE_INDIRECT_JUMP = 10,
	NT_ITYPE_DIRECT_JUMP = 11,
	NT_ITYPE_COROUTINE_SWAP = 12,
	NT_ITYPE_RETURN = 13,
	NT_ITYPE_OTHER_INDIRECT_JUMP = 14,
	NT_ITYPE_OTHER_DIRECT_JUMP = 15,
};

/* Static instruction classes; itype is derived from class + outcome. */
enum nt_iclass {
	NT_IC_OTHER = 0,	/* falls through */
	NT_IC_BRANCH,		/* conditional, direct: beq.., c.beqz/c.bnez */
	NT_IC_JAL,		/* direct jump or call (itype 9/11/15) */
	NT_IC_JALR,		/* indirect jump/call/return/swap (8/10/12/13/14) */
	NT_IC_TABLE_JUMP,	/* Zcmt cm.jt / cm.jalt: target via jvt table */
	NT_IC_POPRET,		/* Zcmp cm.popret/cm.popretz: return */
	NT_IC_TRAP_RETURN,	/* mret, sret, (mnret) */
	NT_IC_ECALL,		/* ecall, ebreak, c.ebreak: trap, never retire */
	NT_IC_LUI,		/* lui / c.lui: constant load (sequential jump) */
	NT_IC_AUIPC,		/* auipc: pc-relative constant (sequential jump) */
	NT_IC_INVALID,		/* not decodable at this xlen / isa */
};

/* ISA options for the classifier. */
#define NT_ISA_RV32	(1u << 0)	/* default RV64 */
#define NT_ISA_ZCMP	(1u << 1)	/* decode Zcmp (overlaps C.FSDSP space) */
#define NT_ISA_ZCMT	(1u << 2)	/* decode Zcmt (overlaps C.FSDSP space) */

struct nt_insn {
	uint8_t size;		/* bytes: 2 or 4 */
	uint8_t iclass;		/* enum nt_iclass */
	uint8_t itype;		/* 4-bit itype if executed (branches: taken) */
	uint8_t rd;		/* destination register, 0 if none */
	uint8_t rs1;		/* jalr base / source register, 0 if none */
	bool has_target;	/* branch/jal: static target below is valid */
	int64_t imm;		/* branch/jal offset, jalr/lui/auipc immediate,
				 * cm.jt/cm.jalt table index */
	uint64_t target;	/* pc + offset for direct transfers */
};

/*
 * Classify the instruction at pc from up to len bytes. Returns the size in
 * bytes (2 or 4), 0 if len is too short to tell, or -1 for encodings
 * longer than 32 bits or otherwise undecodable (iclass NT_IC_INVALID).
 */
int nt_insn_classify(const uint8_t *bytes, size_t len, uint64_t pc,
		     unsigned int isa, struct nt_insn *insn);
const char *nt_itype_name(unsigned int itype);

/* ---- Encoder model --------------------------------------------------- */

/* One retired instruction (or trap) as seen on the ingress port. */
struct nt_record {
	uint64_t addr;		/* instruction address; for traps the address
				 * of the instruction that did not retire */
	uint64_t tstamp;	/* timestamp unit value */
	uint64_t context;	/* scontext (process id) */
	uint32_t cause;		/* trap cause (not encoded by N-Trace) */
	uint8_t size;		/* 2 or 4 bytes; ignored for traps */
	uint8_t itype;		/* enum nt_itype (4-bit); 1/2 for traps */
	uint8_t priv;		/* NT_PRIV_* of this instruction */
	uint8_t flags;		/* NT_REC_* */
};

/* The indirect jump's target is sequentially inferable (section 8.1.1). */
#define NT_REC_SEQ_INFERABLE	(1u << 0)

struct nt_encoder_cfg {
	struct nt_stream_cfg stream;
	uint16_t src_id;		/* trTeSrcID */
	uint8_t mode;			/* enum nt_mode */
	uint8_t icnt_bits;		/* I-CNT counter incl. overflow bit, 2..22 */
	uint8_t hist_bits;		/* HIST register incl. stop bit, 2..32 */
	bool repeat_history;		/* trTeInstEnRepeatedHistory */
	bool repeat_branch;		/* RepeatBranch messages */
	uint8_t implicit_return;	/* trTeInstImplicitReturnMode 0..3 */
	uint8_t ir_depth;		/* return stack depth, 1..32 */
	uint8_t ir_partial_bits;	/* mode 2: low address bits compared */
	bool sequential_jump;		/* trTeInstEnSequentialJump */
	bool all_jumps;			/* trTeInstEnAllJumps */
	uint8_t sync_mode;		/* trTeInstSyncMode 0..3 */
	uint8_t sync_max;		/* trTeInstSyncMax: period 2^(max+4) */
	bool context;			/* trTeContext: Ownership messages */
	bool btype_trap_only;		/* report traps as B-TYPE 1, not 2/3 */
	uint8_t hrepeat_bits;		/* HREPEAT width, 1..18 */
	uint8_t bcnt_bits;		/* B-CNT width, 1..18 */
	uint32_t fifo_bytes;		/* undrained output limit, 0 = none */
};

struct nt_encoder;

struct nt_encoder_stats {
	uint64_t records;
	uint64_t halfwords;
	uint64_t msgs[64];		/* per TCODE */
	uint64_t bytes;
	uint64_t overflows;
};

/* Fill cfg with defaults: HTM, 16-bit I-CNT, 32-bit HIST, no options. */
void nt_encoder_cfg_default(struct nt_encoder_cfg *cfg);
/* Returns NULL and sets *err to a static message on a bad configuration. */
struct nt_encoder *nt_encoder_new(const struct nt_encoder_cfg *cfg,
				  const char **err);
void nt_encoder_free(struct nt_encoder *e);
/* Start (or restart) tracing: the next record emits a sync with reason. */
void nt_encoder_start(struct nt_encoder *e, unsigned int sync_reason);
/* Feed one record. Returns 0, or -1 for an invalid record (ignored). */
int nt_encoder_retire(struct nt_encoder *e, const struct nt_record *rec);
/*
 * Feed n plain instructions (itype NONE) that ran in a row from
 * first->addr, halfwords I-CNT units in all: the same as n calls of
 * nt_encoder_retire(), for emulators that know a straight run at once.
 */
int nt_encoder_retire_plain(struct nt_encoder *e, const struct nt_record *first,
			    unsigned int n, uint64_t halfwords);
/*
 * A straight run of instructions of which only the last may transfer
 * control: what an emulator translates and runs as one block. Classify
 * it once, retire it each time it runs.
 */
struct nt_block {
	uint64_t addr;		/* the first instruction */
	uint64_t last;		/* the last one */
	uint64_t target;	/* where the last goes when taken (branches,
				 * direct jumps) or, with NT_BLOCK_SEQ, its
				 * sequentially inferable target */
	uint32_t n;		/* instructions, at least 1 */
	uint32_t halfwords;	/* their I-CNT units */
	uint8_t first_size;	/* 2 or 4 (unused if n is 1) */
	uint8_t last_size;	/* 2 or 4 */
	uint8_t last_itype;	/* the last's itype; NT_ITYPE_BRANCH_TAKEN for
				 * any conditional branch */
	uint8_t priv;		/* NT_PRIV_* the block runs at */
	uint8_t flags;		/* NT_BLOCK_* */
};

#define NT_BLOCK_SEQ	(1u << 0)	/* see nt_block.target */

/*
 * Whether b is consistent (sizes, half-words, itype, level): 0, or -1.
 * Check a block once, when it is classified, not every time it runs.
 */
int nt_block_check(const struct nt_block *b);
/*
 * The block ran to its end and its last instruction continued at next:
 * the same as nt_encoder_retire_plain() for the first n - 1 instructions
 * and nt_encoder_retire() for the last (branch taken if next is the
 * target, NT_REC_SEQ_INFERABLE if next is the sequential target), every
 * instruction at tstamp and context. Cheaper: a block that emits nothing
 * costs a few compares. b must have passed nt_block_check(); one that did
 * not makes wrong trace, nothing worse. Returns the bytes of output not
 * yet consumed, as nt_encoder_output() would.
 */
size_t nt_encoder_retire_block(struct nt_encoder *e, const struct nt_block *b,
			       uint64_t next, uint64_t context,
			       uint64_t tstamp);
/* Stop tracing: ProgTraceCorrelation with evcode. */
void nt_encoder_stop(struct nt_encoder *e, unsigned int evcode,
		     uint64_t tstamp);
/* Bytes produced and not yet consumed. */
const uint8_t *nt_encoder_output(const struct nt_encoder *e, size_t *len);
void nt_encoder_consume(struct nt_encoder *e, size_t n);
/*
 * The sink lost trace: drop undrained bytes; an Error message and a
 * SYNC=7 message follow with the next record.
 */
void nt_encoder_lost(struct nt_encoder *e);
const struct nt_encoder_stats *nt_encoder_stats(const struct nt_encoder *e);


/* ---- Program images -------------------------------------------------- */

/*
 * The code the trace ran through: executable segments of ELF files (with a
 * load bias) and raw binaries at an address, looked up by address.
 */
struct nt_image;

struct nt_image *nt_image_new(void);
void nt_image_free(struct nt_image *img);
/* Add the executable PT_LOAD segments of an ELF file, moved by bias. */
int nt_image_add_elf(struct nt_image *img, const char *path, uint64_t bias,
		     const char **err);
/* Add a raw binary file loaded at addr. */
int nt_image_add_raw(struct nt_image *img, const char *path, uint64_t addr,
		     const char **err);
/* Add a copy of len bytes loaded at addr. */
int nt_image_add_mem(struct nt_image *img, const void *data, size_t len,
		     uint64_t addr, const char **err);
/*
 * Code supplied by the caller on demand, the way perf reads it from the
 * files its mmap events name: nt_image_lookup() calls fn for an address
 * no segment covers, and fn adds the code around addr (nt_image_add_mem)
 * and returns 0, or returns -1 when it has none. It must add the whole
 * mapping around addr: the decoder does not follow code from the end of
 * one segment into the next. A page fn had nothing for
 * is not asked again until a segment is added. fn is not called again
 * from inside itself.
 */
typedef int (*nt_image_fill_fn)(void *ctx, struct nt_image *img,
				uint64_t addr);
void nt_image_set_fill(struct nt_image *img, nt_image_fill_fn fn, void *ctx);
/* 32 if every ELF added was ELFCLASS32, else 64. */
unsigned int nt_image_xlen(const struct nt_image *img);
/*
 * Bytes at addr, with *avail set to how many follow contiguously in the
 * same segment; NULL if no image covers addr.
 */
const uint8_t *nt_image_lookup(const struct nt_image *img, uint64_t addr,
			       size_t *avail);


/* ---- Records from an executed-PC sequence ---------------------------- */

/*
 * Derive ingress-port records from the sequence of executed PCs (as QEMU
 * logs them) and the program images: the classifier gives each
 * instruction's class, the next PC its outcome. A PC that continues
 * nowhere the instruction could go is an asynchronous trap (interrupt,
 * signal); ecall/ebreak are exceptions and do not retire.
 */
struct nt_pcgen;

struct nt_pcgen_stats {
	uint64_t pcs;
	uint64_t retired;
	uint64_t halfwords;	/* I-CNT units of the retired instructions */
	uint64_t exceptions;
	uint64_t interrupts;
	uint64_t seq_jumps;	/* indirect jumps marked sequentially inferable */
};

struct nt_pcgen *nt_pcgen_new(const struct nt_image *img, unsigned int isa);
void nt_pcgen_free(struct nt_pcgen *g);
/*
 * Feed the next executed PC. Fills out[] with the records that the
 * previous PC completes (0..2) and returns their number. *err is NULL,
 * or says why pc itself is unusable (not covered by an image, not
 * decodable); the generator then forgets it and restarts at the next PC.
 */
int nt_pcgen_next(struct nt_pcgen *g, uint64_t pc, struct nt_record out[2],
		  const char **err);
/* The same with the instruction bytes at pc given (img may be NULL). */
int nt_pcgen_next_bytes(struct nt_pcgen *g, uint64_t pc, const uint8_t *bytes,
			size_t len, struct nt_record out[2], const char **err);
/* The stream ended: records for the last PC (its outcome is unknown). */
int nt_pcgen_finish(struct nt_pcgen *g, struct nt_record out[2],
		    const char **err);
const struct nt_pcgen_stats *nt_pcgen_stats(const struct nt_pcgen *g);


/* ---- Flow decoder (chapter 11) --------------------------------------- */

enum nt_event_kind {
	NT_EV_INSNS,		/* sequential instructions, then a transfer */
	NT_EV_TRAP,		/* exception or interrupt: from = epc, to = handler */
	NT_EV_SYNC,		/* decoder (re)synchronised at to */
	NT_EV_OWNERSHIP,	/* privilege / context change */
	NT_EV_GAP,		/* trace lost or undecodable: skip to next sync */
	NT_EV_STOP,		/* trace stopped; from = last instruction */
};

/* NT_EV_INSNS flags */
#define NT_EVF_TAKEN	(1u << 0)	/* last instruction changed the flow */
#define NT_EVF_INFERRED	(1u << 1)	/* target inferred (return, seq. jump) */
#define NT_EVF_NO_NEXT	(1u << 2)	/* trace stopped: next PC unknown */

/*
 * NT_EV_INSNS: ninsn instructions from 'from' to 'last' (inclusive)
 * executed in address order, then the last one went to 'to'; itype is
 * what the last instruction reported (NONE when the run was cut by a
 * trap, a sync or the end of trace).
 */
struct nt_event {
	uint8_t kind;
	uint8_t itype;		/* INSNS */
	uint8_t btype;		/* TRAP */
	uint8_t sync;		/* SYNC */
	uint8_t priv;		/* OWNERSHIP, and the current privilege */
	uint8_t evcode;		/* STOP */
	uint16_t flags;
	uint16_t src;
	uint64_t from, last, to;
	uint64_t ninsn;
	uint64_t context;
	uint64_t time;		/* timestamp of the message */
	uint64_t offset;	/* byte offset of the message behind it */
	const char *error;	/* GAP: why */
	/*
	 * INSNS: the instruction bytes from 'from' to 'last' inclusive;
	 * TRAP: the bytes at 'from' when an image covers it, else NULL.
	 * Valid during the callback only.
	 */
	const uint8_t *code;
};

struct nt_decoder_cfg {
	struct nt_stream_cfg stream;
	uint8_t mode;		/* 0: auto, NT_MODE_BTM or NT_MODE_HTM (strict) */
	bool all_jumps;		/* trTeInstEnAllJumps was set */
	unsigned int isa;	/* NT_ISA_* */
	uint16_t ir_depth;	/* decoder return stack, 0 = 64; max 1024 */
	int src;		/* -1: every SRC; else only this one */
	uint64_t max_repeat;	/* half-words one message may replay, 0 = 2^32 */
	uint64_t max_icnt;	/* largest I-CNT field accepted, 0 = 2^32 */
	/*
	 * The images hold all the code the trace runs through: an address
	 * a message gives outside them is damage, reported at that message.
	 * Otherwise only a walk from there is an error (the code of a
	 * kernel or a library may just not have been given).
	 */
	bool images_complete;
	/*
	 * Remember how each short branch message decoded from each PC and
	 * take it again from its bytes (the run cache; not for SiFive's
	 * TSTAMP): the same events, many times faster. On by default;
	 * off only to compare.
	 */
	bool run_cache;
	/*
	 * Streams with SRC, every source (src -1): decode each source's
	 * messages of a window (up to 1 MiB of a nt_decoder_feed() call)
	 * in a row, with a decoder of its own, and hand its events over
	 * before the next source's, in SRC order (the sources past the
	 * fifteenth share one decoder, in stream order). Each source's
	 * events and the statistics are those of stream order; only the
	 * sources' events are not interleaved within a window. Interleaved
	 * sources cost the decoder its branch predictions: this is 1.4 to
	 * 2 times as fast on a funnel's BTM trace.
	 */
	bool by_source;
};

/*
 * Departures from the ratified specification that real encoders make,
 * which the decoder takes as those encoders meant them and counts.
 */
enum nt_deviation {
	NT_DEV_WIDE_ICNT,	/* I-CNT over NTRACE_MAX_ICNT (22 bits) */
	NT_DEV_ECALL_RETIRED,	/* ecall/ebreak counted in I-CNT (rc7) */
	NT_DEV__COUNT
};

const char *nt_deviation_name(unsigned int dev);

struct nt_decoder_stats {
	uint64_t msgs, bytes;
	uint64_t insns, halfwords;
	uint64_t transfers;	/* taken branches, jumps, traps */
	uint64_t traps, syncs;
	uint64_t gaps, errors;
	uint64_t skipped_msgs;	/* before the first sync or after a gap */
	uint64_t last_time;
	uint64_t deviations[NT_DEV__COUNT];	/* messages, per kind */
	uint64_t deviation_at[NT_DEV__COUNT];	/* offset of the first one */
	uint64_t cached_msgs;	/* of msgs, those the run cache took */
	uint64_t chained_msgs;	/* of cached_msgs, those taken in chains */
};

typedef void (*nt_event_fn)(void *ctx, const struct nt_event *ev);
/* evs[0 .. n-1], in order; valid during the call only */
typedef void (*nt_events_fn)(void *ctx, const struct nt_event *evs, size_t n);

struct nt_decoder;

void nt_decoder_cfg_default(struct nt_decoder_cfg *cfg);
struct nt_decoder *nt_decoder_new(const struct nt_decoder_cfg *cfg,
				  nt_event_fn fn, void *ctx, const char **err);
/*
 * The same, events handed over in batches: what the run cache takes
 * from one message, or from two it takes at once, comes in one call,
 * without a call per event.
 */
struct nt_decoder *nt_decoder_new_batch(const struct nt_decoder_cfg *cfg,
					nt_events_fn fn, void *ctx,
					const char **err);
void nt_decoder_free(struct nt_decoder *d);
/*
 * Code the trace runs through. An image with any_context applies to every
 * process; otherwise only while Ownership says context is running. The
 * image must outlive the decoder.
 */
int nt_decoder_add_image(struct nt_decoder *d, const struct nt_image *img,
			 bool any_context, uint64_t context);
void nt_decoder_feed(struct nt_decoder *d, const uint8_t *data, size_t len);
void nt_decoder_finish(struct nt_decoder *d);
const struct nt_decoder_stats *nt_decoder_stats(const struct nt_decoder *d);

/* ---- Output writers on top of the event stream ----------------------- */

enum nt_out_format {
	NT_OUT_PCS,		/* one executed PC per line, 0x... */
	NT_OUT_BRANCHES,	/* one control transfer per line */
	NT_OUT_BRSTACK,		/* perf script -F ip,brstack */
	NT_OUT_FLOW,		/* every event, readable */
	NT_OUT_BLUESPEC,	/* Bluespec tandem trace */
};

struct nt_out_cfg {
	uint8_t format;
	unsigned int brstack_depth;	/* entries per sample, default 32 */
	uint64_t sample_period;		/* default 10000 */
	bool sample_branches;		/* period counts taken branches */
	unsigned int isa;
};

struct nt_out;

struct nt_out *nt_out_new(const struct nt_out_cfg *cfg, FILE *f);
/* An nt_event_fn: pass nt_out_event and the writer to nt_decoder_new. */
void nt_out_event(void *out, const struct nt_event *ev);
/* The same as an nt_events_fn, for nt_decoder_new_batch. */
void nt_out_events(void *out, const struct nt_event *evs, size_t n);
/* Flush; returns -1 if writing failed. */
int nt_out_finish(struct nt_out *o);
void nt_out_free(struct nt_out *o);

#ifdef __cplusplus
}
#endif

#endif /* NTRACE_H */
