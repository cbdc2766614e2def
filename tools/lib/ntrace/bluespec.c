// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Bluespec tandem-verification trace: reader and writer.
 *
 * Only libc and C11. The reader never trusts a length it has not
 * checked against the buffer, and every path through nt_bsv_next()
 * either consumes input or reports the end, so hostile input can
 * neither crash nor stall it.
 */
#include <stdlib.h>
#include <string.h>

#include "bluespec.h"

/* Memory request operations (opcode 8). */
enum {
	MEM_LOAD = 0,
	MEM_STORE = 1,
	MEM_LR = 2,
	MEM_SC = 3,
	MEM_AMO_FIRST = 4,
	MEM_AMO_LAST = 12,
	MEM_IFETCH = 13,
};

/* Trap CSRs per privilege level; index is the privilege (0 U, 1 S, 3 M). */
static const uint16_t csr_epc[4] = { 0x041, 0x141, 0, 0x341 };
static const uint16_t csr_cause[4] = { 0x042, 0x142, 0, 0x342 };
static const uint16_t csr_tval[4] = { 0x043, 0x143, 0, 0x343 };

void nt_bsv_config_rv64(struct nt_bsv_config *cfg)
{
	cfg->xlen = 64;
	cfg->flen = 64;
	cfg->mlen = 64;
}

static bool config_ok(const struct nt_bsv_config *cfg)
{
	if (cfg->xlen != 32 && cfg->xlen != 64)
		return false;
	if (cfg->flen != 0 && cfg->flen != 32 && cfg->flen != 64)
		return false;
	return cfg->mlen >= 32 && cfg->mlen <= 64;
}

static uint64_t xmask(const struct nt_bsv_config *cfg)
{
	return cfg->xlen == 64 ? UINT64_MAX : ((uint64_t)1 << cfg->xlen) - 1;
}

/* "MLEN width payload fields are rounded up to a multiple of 8 bits." */
static unsigned int mlen_bytes(const struct nt_bsv_config *cfg)
{
	return (cfg->mlen + 7) / 8;
}

static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	while (n--)
		v = (v << 8) | p[n];
	return v;
}

static int trap_level(uint16_t reg, const uint16_t table[4])
{
	for (int i = 0; i < 4; i++)
		if (table[i] && table[i] == reg)
			return i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Reader                                                             */

static const char err_truncated[] = "item truncated by end of buffer";

/* One decoded item; only the fields the reduction needs are kept. */
struct item {
	uint8_t op;
	uint8_t id;		/* additional-state identifier */
	uint16_t reg;
	uint64_t val;
	size_t size;		/* total bytes including the opcode */
	int rsp_len;		/* mem req: data bytes its response carries */
};

/*
 * Decode the item at @p. @rsp_len is the response data length the
 * previous item (a memory request) calls for, or -1 if the previous
 * item was not a memory request: "Notes" requires a response to follow
 * its request immediately, and the response alone does not say
 * whether it carries data.
 */
static const char *decode_item(const struct nt_bsv_reader *r, size_t p,
			       int rsp_len, struct item *it)
{
	const uint8_t *b = r->buf + p;
	size_t avail = r->len - p;
	unsigned int xb = r->cfg.xlen / 8, n;
	uint8_t sub;

	memset(it, 0, sizeof(*it));
	it->op = b[0];
	it->rsp_len = -1;

#define NEED(k) do { if (avail < (size_t)(k)) return err_truncated; } while (0)

	switch (it->op) {
	case NT_BSV_OP_BEGIN_GROUP:
	case NT_BSV_OP_END_GROUP:
	case NT_BSV_OP_INCR_PC:
	case NT_BSV_OP_HART_RESET:
	case NT_BSV_OP_STATE_INIT:
		it->size = 1;
		return NULL;
	case NT_BSV_OP_FULL_REG:
		NEED(3);
		it->reg = (uint16_t)get_le(b + 1, 2);
		n = xb;
		/* FPRs are FLEN wide even on RV32D, see table C.3. */
		if (it->reg >= NT_BSV_REG_FPR(0) && it->reg <= NT_BSV_REG_FPR(31)) {
			if (!r->cfg.flen)
				return "FPR write but FLEN is 0";
			n = r->cfg.flen / 8;
		}
		NEED(3 + n);
		it->val = get_le(b + 3, n);
		it->size = 3 + n;
		return NULL;
	case NT_BSV_OP_INCR_REG_ADD:
	case NT_BSV_OP_INCR_REG_OR:
		NEED(4);
		it->reg = (uint16_t)get_le(b + 1, 2);
		it->val = b[3];
		it->size = 4;
		return NULL;
	case NT_BSV_OP_ADDL_STATE:
		NEED(2);
		it->id = b[1];
		switch (it->id) {
		case NT_BSV_ADDL_PRIV:
		case NT_BSV_ADDL_DATA8:
			n = 1;
			break;
		case NT_BSV_ADDL_DATA16:
			n = 2;
			break;
		case NT_BSV_ADDL_DATA32:
			n = 4;
			break;
		case NT_BSV_ADDL_DATA64:
		case NT_BSV_ADDL_MTIME:
			n = 8;
			break;
		case NT_BSV_ADDL_PADDR:
		case NT_BSV_ADDL_EADDR:
		case NT_BSV_ADDL_PC_PADDR:
			n = mlen_bytes(&r->cfg);
			break;
		case NT_BSV_ADDL_PC:
		case NT_BSV_ADDL_PC_EXAMPLE:
			n = xb;
			break;
		default:
			return "unknown additional state identifier";
		}
		NEED(2 + n);
		it->val = get_le(b + 2, n);
		if (it->id == NT_BSV_ADDL_PRIV && it->val > 3)
			return "privilege mode out of range";
		it->size = 2 + n;
		return NULL;
	case NT_BSV_OP_MEM_REQ:
		n = mlen_bytes(&r->cfg);
		NEED(1 + n + 1);
		/*
		 * op then size, packed from the least significant bit
		 * ("Notes", sub-byte fields): op is the low nibble.
		 */
		sub = b[1 + n];
		if ((sub & 15) > MEM_IFETCH)
			return "unknown memory request operation";
		if ((sub >> 4) > 3)
			return "memory request size out of range";
		it->val = get_le(b + 1, n);
		it->size = 1 + n + 1;
		switch (sub & 15) {
		case MEM_LOAD:
		case MEM_LR:
		case MEM_IFETCH:
			it->rsp_len = 1 << (sub >> 4);
			break;
		case MEM_STORE:
		case MEM_SC:
			/* SC reports success in the result field only. */
			it->size += 1u << (sub >> 4);
			it->rsp_len = 0;
			break;
		default:	/* AMOs carry an operand and return old data */
			it->size += 1u << (sub >> 4);
			it->rsp_len = 1 << (sub >> 4);
			break;
		}
		NEED(it->size);
		return NULL;
	case NT_BSV_OP_MEM_RSP:
		if (rsp_len < 0)
			return "memory response without a preceding request";
		NEED(2);
		/* size then result, low nibble first */
		sub = b[1];
		if ((sub & 15) > 3)
			return "memory response size out of range";
		if ((sub >> 4) > 1)
			return "memory response result out of range";
		it->size = 2 + (rsp_len ? (1u << (sub & 15)) : 0);
		NEED(it->size);
		return NULL;
	case NT_BSV_OP_INSTR16:
		NEED(3);
		it->val = get_le(b + 1, 2);
		it->size = 3;
		return NULL;
	case NT_BSV_OP_INSTR32:
		NEED(5);
		it->val = get_le(b + 1, 4);
		it->size = 5;
		return NULL;
	default:
		return "unknown opcode";
	}
#undef NEED
}

/* What a group (or a lone ungrouped item) amounts to. */
struct group {
	size_t start;
	bool has_insn, incr_pc, new_pc, reset, init, trap, epc_set, tval_set;
	bool priv_set;
	uint8_t insn_size, priv;
	uint32_t insn;
	uint64_t pc, cause_raw, epc, tval;
	size_t bad_off;		/* first semantic problem, if any */
	const char *bad;
};

static void group_bad(struct group *g, size_t off, const char *why)
{
	if (!g->bad) {
		g->bad = why;
		g->bad_off = off;
	}
}

static void group_apply(struct group *g, const struct item *it, size_t off)
{
	int lvl;

	switch (it->op) {
	case NT_BSV_OP_INCR_PC:
		if (g->incr_pc)
			group_bad(g, off, "increment pc given twice");
		g->incr_pc = true;
		break;
	case NT_BSV_OP_INSTR16:
	case NT_BSV_OP_INSTR32:
		if (g->has_insn)
			group_bad(g, off, "two instructions in one group");
		g->has_insn = true;
		g->insn = (uint32_t)it->val;
		g->insn_size = it->op == NT_BSV_OP_INSTR16 ? 2 : 4;
		break;
	case NT_BSV_OP_HART_RESET:
		g->reset = true;
		break;
	case NT_BSV_OP_STATE_INIT:
		g->init = true;
		break;
	case NT_BSV_OP_ADDL_STATE:
		if (it->id == NT_BSV_ADDL_PC || it->id == NT_BSV_ADDL_PC_EXAMPLE) {
			if (g->new_pc && g->pc != it->val)
				group_bad(g, off, "conflicting pc values in one group");
			g->new_pc = true;
			g->pc = it->val;
		} else if (it->id == NT_BSV_ADDL_PRIV) {
			g->priv_set = true;
			g->priv = (uint8_t)it->val;
		}
		break;
	case NT_BSV_OP_FULL_REG:
		if ((lvl = trap_level(it->reg, csr_cause)) >= 0) {
			g->trap = true;
			g->cause_raw = it->val;
		} else if ((lvl = trap_level(it->reg, csr_epc)) >= 0) {
			g->epc_set = true;
			g->epc = it->val;
		} else if ((lvl = trap_level(it->reg, csr_tval)) >= 0) {
			g->tval_set = true;
			g->tval = it->val;
		}
		break;
	default:
		break;
	}
}

/* Give up on the current record: next begin-group byte after @off. */
static int reader_fail(struct nt_bsv_reader *r, size_t off, const char *why)
{
	const uint8_t *nb;

	r->err_off = off;
	r->err_msg = why;
	r->errors++;
	/* Whatever the lost record did to the pc is unknown now. */
	r->pc_valid = false;
	/*
	 * An item running past the end means the buffer was cut inside a
	 * record; the rest is that record's payload, and scanning it for
	 * 0x01 would only manufacture bogus records.
	 */
	if (why == err_truncated || off + 1 >= r->len) {
		r->pos = r->len;
		return -1;
	}
	nb = memchr(r->buf + off + 1, NT_BSV_OP_BEGIN_GROUP, r->len - off - 1);
	r->pos = nb ? (size_t)(nb - r->buf) : r->len;
	return -1;
}

/*
 * Turn a finished group into the new running pc and maybe an event.
 * Returns 1 if @ev was filled, 0 if the group had no event, -1 on a
 * semantic error (r->pos must already point past the group).
 */
static int group_finish(struct nt_bsv_reader *r, struct group *g,
			struct nt_bsv_event *ev)
{
	const uint64_t mask = xmask(&r->cfg);
	const uint64_t top = (uint64_t)1 << (r->cfg.xlen - 1);
	uint64_t next = 0;
	bool next_valid = false;
	size_t resume = r->pos;
	int ret;

	if (!g->bad && g->incr_pc && !g->has_insn)
		group_bad(g, g->start, "increment pc without an instruction");
	if (!g->bad && g->incr_pc && g->new_pc)
		group_bad(g, g->start, "both increment pc and a new pc");
	if (!g->bad && g->init && (g->has_insn || g->reset))
		group_bad(g, g->start, "state initialisation mixed with execution");
	if (g->bad) {
		/*
		 * The group was well formed byte-wise, so the next record
		 * starts exactly where this one ended.
		 */
		ret = reader_fail(r, g->bad_off, g->bad);
		r->pos = resume;
		return ret;
	}

	if (g->reset)
		r->resets++;
	if (g->new_pc) {
		next = g->pc & mask;
		next_valid = true;
	} else if (g->reset) {
		/* reset vector is implementation defined: pc unknown */
	} else if (g->incr_pc) {
		next = (r->pc + g->insn_size) & mask;
		next_valid = r->pc_valid;
	} else if (!g->has_insn && !g->trap) {
		/* pure state update: pc untouched */
		next = r->pc;
		next_valid = r->pc_valid;
	}

	ret = 0;
	if (g->has_insn || g->trap) {
		memset(ev, 0, sizeof(*ev));
		ev->offset = g->start;
		if (r->pc_valid) {
			ev->pc = r->pc;
			ev->pc_valid = true;
		} else if (g->trap && g->epc_set) {
			ev->pc = g->epc & mask;
			ev->pc_valid = true;
		}
		ev->next_pc = next;
		ev->next_pc_valid = next_valid;
		ev->insn = g->insn;
		ev->insn_size = g->has_insn ? g->insn_size : 0;
		if (g->trap) {
			ev->trap = true;
			ev->interrupt = (g->cause_raw & top) != 0;
			ev->cause = g->cause_raw & mask & ~top;
			ev->tval_valid = g->tval_set;
			ev->tval = g->tval_set ? g->tval & mask : 0;
		}
		ev->priv_valid = g->priv_set;
		ev->priv = g->priv_set ? g->priv : 0;
		ret = 1;
	}
	r->pc = next;
	r->pc_valid = next_valid;
	return ret;
}

int nt_bsv_reader_init(struct nt_bsv_reader *r, const struct nt_bsv_config *cfg,
		       const void *buf, size_t len)
{
	memset(r, 0, sizeof(*r));
	if (!cfg || !config_ok(cfg) || (!buf && len))
		return -1;
	r->cfg = *cfg;
	r->buf = buf;
	r->len = buf ? len : 0;
	return 0;
}

int nt_bsv_next(struct nt_bsv_reader *r, struct nt_bsv_event *ev)
{
	struct group g;
	struct item it;
	const char *why;
	int rsp_len, ret;
	size_t p;

	/* Ungrouped items and event-less groups are consumed here. */
	while (r->pos < r->len) {
		p = r->pos;
		memset(&g, 0, sizeof(g));
		g.start = p;

		if (r->buf[p] != NT_BSV_OP_BEGIN_GROUP) {
			/*
			 * Outside a group ("Notes": allowed, unordered state
			 * changes). A lone state item is applied; anything
			 * that only makes sense inside a group is an error.
			 */
			rsp_len = -1;
			while (p < r->len && r->buf[p] != NT_BSV_OP_BEGIN_GROUP) {
				why = decode_item(r, p, rsp_len, &it);
				if (why)
					return reader_fail(r, p, why);
				switch (it.op) {
				case NT_BSV_OP_END_GROUP:
					return reader_fail(r, p, "end group outside a group");
				case NT_BSV_OP_INCR_PC:
				case NT_BSV_OP_INSTR16:
				case NT_BSV_OP_INSTR32:
					return reader_fail(r, p, "instruction outside a group");
				default:
					break;
				}
				group_apply(&g, &it, p);
				rsp_len = it.rsp_len;
				p += it.size;
			}
			r->pos = p;
			/* A trap is only meaningful as part of a record. */
			g.trap = false;
			ret = group_finish(r, &g, ev);
			if (ret)
				return ret;
			continue;
		}

		r->groups++;
		p++;
		rsp_len = -1;
		for (;;) {
			if (p >= r->len) {
				/*
				 * No terminator: any 0x01 inside is payload, so
				 * there is nothing to resynchronise on.
				 */
				reader_fail(r, g.start, "group not closed before end of buffer");
				r->pos = r->len;
				return -1;
			}
			if (r->buf[p] == NT_BSV_OP_BEGIN_GROUP)
				break;	/* implied end group ("Notes") */
			why = decode_item(r, p, rsp_len, &it);
			if (why)
				return reader_fail(r, p, why);
			if (it.op == NT_BSV_OP_END_GROUP) {
				p++;
				break;
			}
			group_apply(&g, &it, p);
			rsp_len = it.rsp_len;
			p += it.size;
		}
		r->pos = p;
		ret = group_finish(r, &g, ev);
		if (ret)
			return ret;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Writer                                                             */

static bool wr_reserve(struct nt_bsv_writer *w, size_t n)
{
	size_t cap;
	uint8_t *nb;

	if (w->failed)
		return false;
	if (w->cap - w->len >= n)
		return true;
	cap = w->cap ? w->cap : 256;
	while (cap - w->len < n) {
		if (cap > SIZE_MAX / 2)
			goto fail;
		cap *= 2;
	}
	nb = realloc(w->buf, cap);
	if (!nb)
		goto fail;
	w->buf = nb;
	w->cap = cap;
	return true;
fail:
	w->failed = true;
	return false;
}

static void put_le(struct nt_bsv_writer *w, uint64_t v, unsigned int n)
{
	while (n--) {
		w->buf[w->len++] = (uint8_t)v;
		v >>= 8;
	}
}

static void put_op(struct nt_bsv_writer *w, uint8_t op)
{
	w->buf[w->len++] = op;
}

static void put_pc(struct nt_bsv_writer *w, uint64_t pc)
{
	put_op(w, NT_BSV_OP_ADDL_STATE);
	put_op(w, NT_BSV_ADDL_PC);
	put_le(w, pc, w->cfg.xlen / 8);
}

static void put_csr(struct nt_bsv_writer *w, uint16_t csr, uint64_t v)
{
	put_op(w, NT_BSV_OP_FULL_REG);
	put_le(w, csr, 2);
	put_le(w, v, w->cfg.xlen / 8);
}

int nt_bsv_writer_init(struct nt_bsv_writer *w, const struct nt_bsv_config *cfg)
{
	memset(w, 0, sizeof(*w));
	if (!cfg || !config_ok(cfg))
		return -1;
	w->cfg = *cfg;
	return 0;
}

static bool event_ok(const struct nt_bsv_writer *w, const struct nt_bsv_event *ev)
{
	const uint64_t mask = xmask(&w->cfg);
	const uint64_t top = (uint64_t)1 << (w->cfg.xlen - 1);

	if (!ev->pc_valid || !ev->next_pc_valid)
		return false;
	if ((ev->pc & ~mask) || (ev->next_pc & ~mask))
		return false;
	if (ev->insn_size != 0 && ev->insn_size != 2 && ev->insn_size != 4)
		return false;
	if (ev->insn_size == 2 && ev->insn > 0xffff)
		return false;
	if (ev->insn_size == 0 && (ev->insn || !ev->trap))
		return false;	/* only a trap can lack an instruction */
	if (ev->priv_valid ? ev->priv > 3 || ev->priv == 2 : ev->priv != 0)
		return false;
	if (!ev->trap)
		return !ev->interrupt && !ev->cause && !ev->tval_valid && !ev->tval;
	if (ev->interrupt && ev->insn_size)
		return false;	/* "Notes": no instruction for interrupts */
	if (ev->cause & ~(mask & ~top))
		return false;
	if (ev->tval_valid ? (ev->tval & ~mask) != 0 : ev->tval != 0)
		return false;
	return true;
}

int nt_bsv_write(struct nt_bsv_writer *w, const struct nt_bsv_event *ev)
{
	const unsigned int xb = w->cfg.xlen / 8;
	const uint64_t mask = xmask(&w->cfg);
	bool incr;
	int lvl;

	if (w->failed || !event_ok(w, ev))
		return -1;
	/* worst case: sync group + group with pc, insn, 3 CSRs, priv */
	if (!wr_reserve(w, (3 + xb) + 2 + (2 + xb) + 5 + 3 * (3 + xb) + 3 + 1))
		return -1;

	/*
	 * The format only records the pc after each group, so a
	 * discontinuity (first event, or a gap in the caller's sequence)
	 * needs a group of its own that sets the pc the event starts at.
	 */
	if (!w->pc_valid || w->pc != ev->pc) {
		put_op(w, NT_BSV_OP_BEGIN_GROUP);
		put_pc(w, ev->pc);
		put_op(w, NT_BSV_OP_END_GROUP);
		w->since_sync = 0;
	}

	put_op(w, NT_BSV_OP_BEGIN_GROUP);
	incr = !ev->trap && ev->insn_size &&
	       ev->next_pc == ((ev->pc + ev->insn_size) & mask) &&
	       !(w->sync_interval && w->since_sync + 1 >= w->sync_interval);
	if (incr) {
		put_op(w, NT_BSV_OP_INCR_PC);
		w->since_sync++;
	} else {
		put_pc(w, ev->next_pc);
		w->since_sync = 0;
	}
	if (ev->insn_size == 2) {
		put_op(w, NT_BSV_OP_INSTR16);
		put_le(w, ev->insn, 2);
	} else if (ev->insn_size == 4) {
		put_op(w, NT_BSV_OP_INSTR32);
		put_le(w, ev->insn, 4);
	}
	if (ev->trap) {
		/* The CSR set follows the privilege the trap goes to. */
		lvl = ev->priv_valid ? ev->priv : 3;
		put_csr(w, csr_epc[lvl], ev->pc);
		put_csr(w, csr_cause[lvl], ev->cause |
			(ev->interrupt ? (uint64_t)1 << (w->cfg.xlen - 1) : 0));
		if (ev->tval_valid)
			put_csr(w, csr_tval[lvl], ev->tval);
	}
	if (ev->priv_valid) {
		put_op(w, NT_BSV_OP_ADDL_STATE);
		put_op(w, NT_BSV_ADDL_PRIV);
		put_op(w, ev->priv);
	}
	put_op(w, NT_BSV_OP_END_GROUP);
	w->pc = ev->next_pc;
	w->pc_valid = true;
	return 0;
}

const uint8_t *nt_bsv_writer_data(const struct nt_bsv_writer *w, size_t *len)
{
	if (len)
		*len = w->len;
	return w->buf;
}

void nt_bsv_writer_drain(struct nt_bsv_writer *w)
{
	w->len = 0;
}

void nt_bsv_writer_free(struct nt_bsv_writer *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}
