// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Software N-Trace encoder: the rules of N-Trace 1.0 chapter 10 applied to
 * one ingress-port record at a time, with the optional optimisations of
 * chapter 8 and the trTe* controls of chapter 4.
 *
 * A message that reports where control went next (indirect jumps, traps,
 * and every branch message so it can be upgraded to a sync or folded into
 * a RepeatBranch) is held as "pending" until the next record arrives: its
 * address is the target, as the ingress-port tables say ("an address
 * emitted is known at the next valid ingress port cycle").
 *
 * The per-record path must stay tiny: the QEMU plugin runs it for every
 * retired instruction. It does no I/O; output accumulates in a buffer the
 * caller drains.
 */
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"
#include "pack.h"

enum pend_kind {
	PEND_NONE,
	PEND_DIRECT,		/* BTM taken branch (or all-jumps jump) */
	PEND_INDIRECT,		/* uninferable jump or trap return */
	PEND_TRAP,		/* exception / interrupt */
	PEND_RETURN,		/* return: inferable if the stack agrees */
	PEND_SWAP,		/* co-routine swap: pop, then push */
};

struct nt_encoder {
	struct nt_encoder_cfg cfg;
	struct nt_encoder_stats stats;

	uint8_t *out;
	size_t olen, ocap, ohead;

	bool running;
	bool need_sync;
	uint8_t sync_reason;
	bool lost;		/* messages were dropped: Error + SYNC=7 owed */
	bool slow;		/* any of the above, or a pending message */
	/*
	 * Branch messages may go straight out (put_branch()): no TSTAMP,
	 * address extension or FIFO limit.
	 */
	bool pack_branches;

	uint64_t icnt, icnt_full_at;
	uint64_t hist;
	uint64_t hist_lim;	/* HIST bit that calls hist_limit() */
	uint64_t since_msg;	/* instructions since the last message */

	uint8_t pend;
	uint8_t pend_btype;
	uint64_t pend_ts;
	uint64_t pend_ret;	/* swap: return address to push */

	uint64_t last_addr;	/* U-ADDR reference */
	uint64_t last_ts;

	/* repeated history (RCODE 2): periods counted, not yet reported */
	bool rh_valid;
	uint64_t rh_hist;
	uint64_t hrepeat, hrepeat_max;
	uint64_t rh_ts;

	/* RepeatBranch */
	bool rb_valid;
	uint8_t rb_tcode, rb_btype;
	uint64_t rb_icnt, rb_hist, rb_target;
	uint64_t bcnt, bcnt_max;
	uint64_t rb_ts;

	/* implicit return: circular stack of return addresses or a counter */
	uint64_t ir_stack[NT_MAX_IR_DEPTH];
	unsigned int ir_top, ir_count;
	uint64_t ir_mask;

	/* periodic synchronisation */
	uint64_t sync_period, sync_count, sync_ts;
	bool sync_due;

	/* Ownership */
	bool own_known;
	uint8_t cur_priv;
	uint64_t cur_ctx;

	/*
	 * The rest of the repeated-history pattern (rh_hist is one period,
	 * stop bit included): rh_len bits a period, rh_hist_k the period
	 * rh_k times to compare HIST with at once, and the full register.
	 * Kept apart from the fields every record touches.
	 */
	uint64_t rh_hist_k, hist_full;
	unsigned int rh_len, rh_k;
};

void nt_encoder_cfg_default(struct nt_encoder_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->stream.xlen = 64;
	cfg->mode = NT_MODE_HTM;
	cfg->icnt_bits = 16;
	cfg->hist_bits = 32;
	cfg->ir_depth = NT_MAX_IR_DEPTH;
	cfg->ir_partial_bits = 16;
	cfg->hrepeat_bits = NT_MAX_HREPEAT_BITS;
	cfg->bcnt_bits = NT_MAX_BCNT_BITS;
}

static const char *check_cfg(const struct nt_encoder_cfg *c)
{
	if (c->mode != NT_MODE_BTM && c->mode != NT_MODE_HTM)
		return "mode must be BTM (3) or HTM (6)";
	if (c->icnt_bits < 2 || c->icnt_bits > NT_MAX_ICNT_BITS)
		return "I-CNT width must be 2..22 bits";
	if (c->hist_bits < 2 || c->hist_bits > NT_MAX_HIST_BITS)
		return "HIST width must be 2..32 bits";
	if (c->implicit_return > 3)
		return "implicit return mode must be 0..3";
	if (c->implicit_return && (c->ir_depth < 1 ||
				   c->ir_depth > NT_MAX_IR_DEPTH))
		return "implicit return depth must be 1..32";
	if (c->implicit_return == 2 &&
	    (c->ir_partial_bits < 2 || c->ir_partial_bits > 63))
		return "partial return address bits must be 2..63";
	if (c->sync_mode > 3 || c->sync_max > 15)
		return "sync mode must be 0..3 and sync max 0..15";
	if (c->stream.src_bits > NT_MAX_SRC_BITS ||
	    (c->stream.src_bits && c->src_id >> c->stream.src_bits) ||
	    (!c->stream.src_bits && c->src_id))
		return "SRC ID does not fit in the SRC width";
	if (c->stream.xlen && c->stream.xlen != 32 && c->stream.xlen != 64)
		return "xlen must be 32 or 64";
	if (c->stream.quirks)
		return "the encoder writes N-Trace 1.0 only, no vendor quirks";
	if (c->hrepeat_bits < 1 || c->hrepeat_bits > NT_MAX_HREPEAT_BITS ||
	    c->bcnt_bits < 1 || c->bcnt_bits > NT_MAX_BCNT_BITS)
		return "HREPEAT and B-CNT widths must be 1..18 bits";
	if (c->repeat_history && c->mode != NT_MODE_HTM)
		return "repeated history needs HTM";
	if (c->fifo_bytes && c->fifo_bytes < 4 * NT_MAX_MSG_BYTES)
		return "FIFO must hold at least four maximal messages";
	return NULL;
}

struct nt_encoder *nt_encoder_new(const struct nt_encoder_cfg *cfg,
				  const char **err)
{
	struct nt_encoder *e;
	const char *msg = check_cfg(cfg);

	if (msg) {
		if (err)
			*err = msg;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		if (err)
			*err = "out of memory";
		return NULL;
	}
	e->cfg = *cfg;
	if (!e->cfg.stream.xlen)
		e->cfg.stream.xlen = 64;
	/*
	 * The top bit of the I-CNT counter is its overflow flag, as in the
	 * I-CNT full example of section 7.3: the count that sets it is
	 * reported, including the instruction that set it.
	 */
	e->icnt_full_at = 1ull << (cfg->icnt_bits - 1);
	e->hist_full = 1ull << (cfg->hist_bits - 1);
	e->hist_lim = e->hist_full;
	e->hist = 1;
	e->hrepeat_max = (1ull << cfg->hrepeat_bits) - 1;
	e->bcnt_max = (1ull << cfg->bcnt_bits) - 1;
	e->ir_mask = cfg->implicit_return == 2 ?
		     (1ull << cfg->ir_partial_bits) - 1 : ~0ull;
	e->sync_period = cfg->sync_mode ? 1ull << (cfg->sync_max + 4) : 0;
	e->pack_branches = !cfg->stream.timestamps &&
			   !cfg->stream.extend_addr_msb && !cfg->fifo_bytes;
	return e;
}

void nt_encoder_free(struct nt_encoder *e)
{
	if (!e)
		return;
	free(e->out);
	free(e);
}

const struct nt_encoder_stats *nt_encoder_stats(const struct nt_encoder *e)
{
	return &e->stats;
}

const uint8_t *nt_encoder_output(const struct nt_encoder *e, size_t *len)
{
	*len = e->olen - e->ohead;
	return e->out + e->ohead;
}

void nt_encoder_consume(struct nt_encoder *e, size_t n)
{
	if (n > e->olen - e->ohead)
		n = e->olen - e->ohead;
	e->ohead += n;
	if (e->ohead == e->olen)
		e->ohead = e->olen = 0;
}

static void update_slow(struct nt_encoder *e)
{
	e->slow = e->pend != PEND_NONE || e->need_sync || e->lost ||
		  e->sync_due;
}

void nt_encoder_lost(struct nt_encoder *e)
{
	e->olen = e->ohead = 0;
	e->lost = true;
	e->stats.overflows++;
	update_slow(e);
}

/* ---- output ----------------------------------------------------------- */

/* reserve() past its common case: a FIFO limit, or the buffer is full. */
static __attribute__((noinline)) bool make_room(struct nt_encoder *e,
						size_t need)
{
	size_t cap;
	uint8_t *p;

	if (e->cfg.fifo_bytes && e->olen - e->ohead + need > e->cfg.fifo_bytes)
		return false;
	if (e->olen + need <= e->ocap)
		return true;
	if (e->ohead) {
		memmove(e->out, e->out + e->ohead, e->olen - e->ohead);
		e->olen -= e->ohead;
		e->ohead = 0;
		if (e->olen + need <= e->ocap)
			return true;
	}
	cap = e->ocap ? e->ocap * 2 : 4096;
	while (cap < e->olen + need)
		cap *= 2;
	p = realloc(e->out, cap);
	if (!p)
		return false;
	e->out = p;
	e->ocap = cap;
	return true;
}

/* Room for need more bytes of output, within the FIFO limit if any. */
static inline bool reserve(struct nt_encoder *e, size_t need)
{
	if (e->ohead && e->ohead == e->olen)
		e->ohead = e->olen = 0;
	if (!e->cfg.fifo_bytes && e->olen + need <= e->ocap)
		return true;
	return make_room(e, need);
}

/* A message of n bytes with tcode went out at ts. */
static inline void sent(struct nt_encoder *e, unsigned int tcode, size_t n,
			uint64_t ts)
{
	e->olen += n;
	e->stats.bytes += n;
	e->stats.msgs[tcode & 63]++;
	if (e->cfg.stream.timestamps)
		e->last_ts = ts;
	e->since_msg = 0;
	if (e->cfg.sync_mode == 1 && ++e->sync_count >= e->sync_period)
		e->sync_due = e->slow = true;
}

/*
 * Write one message. Timestamps are absolute in sync messages and relative
 * to the previous reported one otherwise (section 7.5). A full FIFO drops
 * the message and everything after it until Error + SYNC=7 can be sent.
 */
static void put_msg(struct nt_encoder *e, struct nt_msg *m, uint64_t ts)
{
	int n;

	if (e->lost)
		return;
	m->src = e->cfg.src_id;
	if (e->cfg.stream.timestamps) {
		m->fields |= NT_F_TSTAMP;
		m->tstamp = nt_tcode_is_sync(m->tcode) ? ts : ts - e->last_ts;
	}
	if (!reserve(e, NT_MAX_MSG_BYTES)) {
		e->lost = true;
		e->stats.overflows++;
		update_slow(e);
		return;
	}
	n = nt_write_msg(&e->cfg.stream, m, e->out + e->olen,
			 e->ocap - e->olen);
	if (n > 0)
		sent(e, m->tcode, (size_t)n, ts);
}

/*
 * A copy from a zero object, not memset: under GCC's generic tuning the
 * 232-byte memset becomes "rep stos", which costs more to start than the
 * rest of a branch message.
 */
static const struct nt_msg zero_msg;

static void msg_init(struct nt_msg *m, unsigned int tcode)
{
	*m = zero_msg;
	m->tcode = tcode;
}

/*
 * Message paths run for a few percent of the records. Kept out of line,
 * they no longer give nt_encoder_retire() a 200-byte frame and six saved
 * registers that every plain instruction paid for.
 */
#define NT_COLD __attribute__((cold, noinline))

/* RepeatBranch for the identical branch messages counted so far. */
static void flush_repeat_branch(struct nt_encoder *e)
{
	struct nt_msg m;

	if (e->rb_valid && e->bcnt) {
		msg_init(&m, NT_TCODE_REPEAT_BRANCH);
		m.bcnt = e->bcnt;
		e->bcnt = 0;
		put_msg(e, &m, e->rb_ts);
	}
	e->rb_valid = false;
	e->bcnt = 0;
}

/*
 * The periods of the history pattern counted so far (see hist_limit()),
 * as ResourceFull messages: RCODE 1 for a single copy of the pattern,
 * RCODE 2 with HREPEAT for more. More periods than HREPEAT holds go out
 * rh_k periods a copy, and several messages if need be (the notes that
 * end "Repeated History Optimization").
 */
static __attribute__((noinline)) void put_hist_repeats(struct nt_encoder *e)
{
	struct nt_msg m;

	while (e->hrepeat) {
		uint64_t pat = e->rh_hist, n = e->hrepeat, per = 1;

		if (n > e->hrepeat_max && n >= e->rh_k) {
			pat = e->rh_hist_k;
			per = e->rh_k;
			n /= per;
		}
		if (n > e->hrepeat_max)
			n = e->hrepeat_max;

		msg_init(&m, NT_TCODE_RESOURCE_FULL);
		m.rdata[0] = pat;
		m.nrdata = 1;
		m.rcode = NT_RCODE_HIST;
		if (n > 1) {
			m.rcode = NT_RCODE_HIST_REPEAT;
			m.rdata[1] = n;
			m.nrdata = 2;
		}
		e->hrepeat -= n * per;
		put_msg(e, &m, e->rh_ts);
	}
}

/* The test inline: every branch message passes here. */
static inline void flush_hist_repeat(struct nt_encoder *e)
{
	if (e->hrepeat)
		put_hist_repeats(e);
}

/*
 * Everything owed before a message that is not a repeatable branch. The
 * repeated-history pattern stays valid: RCODE 2 stands on its own.
 */
static void flush_repeats(struct nt_encoder *e)
{
	flush_repeat_branch(e);
	flush_hist_repeat(e);
}

static void reset_spans(struct nt_encoder *e)
{
	e->icnt = 0;
	e->hist = 1;
}

/* Section 7.4: a sync resets the encoder state the decoder relies on. */
static void sync_reset(struct nt_encoder *e, uint64_t ts)
{
	e->sync_ts = ts;
	e->ir_top = e->ir_count = 0;
	e->rb_valid = false;
	e->rh_valid = false;
	e->hist_lim = e->hist_full;
	/* counts owed before the sync were flushed or are lost with it */
	e->hrepeat = 0;
	e->bcnt = 0;
	e->sync_due = false;
	e->sync_count = 0;
	e->own_known = false;
}

static NT_COLD void emit_ownership(struct nt_encoder *e, uint8_t priv,
				   uint64_t ctx, bool with_ctx, uint64_t ts)
{
	struct nt_msg m;

	flush_repeats(e);
	msg_init(&m, NT_TCODE_OWNERSHIP);
	/* PROCESS = {CONTEXT, V, PRV[1:0], FORMAT[1:0]} (chapter 6.1) */
	m.process = ((uint64_t)(priv & 7) << 2) |
		    (with_ctx ? NT_OWN_SCONTEXT : NT_OWN_PRIV);
	if (with_ctx)
		m.process |= (ctx & ((1ull << 58) - 1)) << 5;
	put_msg(e, &m, ts);
	e->own_known = true;
	e->cur_priv = priv;
	e->cur_ctx = ctx;
}

static void emit_prog_sync(struct nt_encoder *e, unsigned int reason,
			   const struct nt_record *rec)
{
	struct nt_msg m;

	msg_init(&m, NT_TCODE_PROG_TRACE_SYNC);
	m.sync = reason;
	m.icnt = 0;
	m.addr_field = rec->addr >> 1;
	reset_spans(e);
	put_msg(e, &m, rec->tstamp);
	e->last_addr = rec->addr;
	sync_reset(e, rec->tstamp);
	if (e->cfg.context)
		emit_ownership(e, rec->priv, rec->context, true, rec->tstamp);
}

/*
 * Most messages: a branch message that packs in a word, repeats folded
 * and flushed already, written straight into the output - what put_msg()
 * would do, without building a struct nt_msg. False when it does not
 * apply; nothing is done then.
 */
static bool put_branch(struct nt_encoder *e, unsigned int tcode,
		       unsigned int btype, uint64_t target, uint64_t ts)
{
	uint64_t addr;
	int n;

	if (!e->pack_branches || e->lost || !reserve(e, 8))
		return false;
	addr = tcode == NT_TCODE_DIRECT_BRANCH ? 0 :
	       (target ^ e->last_addr) >> 1;
	n = nt_pack_branch(&e->cfg.stream, tcode, e->cfg.src_id, btype,
			   e->icnt, addr, e->hist, e->out + e->olen, true);
	if (!n)
		return false;
	sent(e, tcode, (size_t)n, ts);
	reset_spans(e);
	if (tcode != NT_TCODE_DIRECT_BRANCH)
		e->last_addr = target;
	return true;
}

/*
 * Emit the message for a pending branch (or a linear-code sync, kind
 * PEND_NONE) whose next PC is target.
 */
static void emit_branch(struct nt_encoder *e, unsigned int kind,
			unsigned int btype, uint64_t target, uint64_t ts,
			bool sync)
{
	bool htm = e->cfg.mode == NT_MODE_HTM;
	bool with_hist = htm && e->hist != 1;
	unsigned int tcode;
	struct nt_msg m;

	if (sync) {
		flush_repeats(e);
		if (kind == PEND_DIRECT)
			msg_init(&m, NT_TCODE_DIRECT_BRANCH_SYNC);
		else
			msg_init(&m, with_hist ?
				 NT_TCODE_INDIRECT_BRANCH_HIST_SYNC :
				 NT_TCODE_INDIRECT_BRANCH_SYNC);
		m.sync = NT_SYNC_PERIODIC;
		m.btype = btype;
		m.icnt = e->icnt;
		m.hist = e->hist;
		m.addr_field = target >> 1;
		reset_spans(e);
		put_msg(e, &m, ts);
		e->last_addr = target;
		sync_reset(e, ts);
		return;
	}

	tcode = kind == PEND_DIRECT ? NT_TCODE_DIRECT_BRANCH :
		with_hist ? NT_TCODE_INDIRECT_BRANCH_HIST :
		NT_TCODE_INDIRECT_BRANCH;
	flush_hist_repeat(e);
	if (e->cfg.repeat_branch) {
		if (e->rb_valid && e->rb_tcode == tcode &&
		    e->rb_btype == btype && e->rb_icnt == e->icnt &&
		    e->rb_hist == e->hist && e->rb_target == target &&
		    e->bcnt < e->bcnt_max) {
			e->bcnt++;
			e->rb_ts = ts;
			reset_spans(e);
			e->since_msg = 0;
			return;
		}
		flush_repeat_branch(e);
		e->rb_valid = true;
		e->rb_tcode = tcode;
		e->rb_btype = btype;
		e->rb_icnt = e->icnt;
		e->rb_hist = e->hist;
		e->rb_target = target;
	}
	if (put_branch(e, tcode, btype, target, ts))
		return;
	msg_init(&m, tcode);
	m.btype = btype;
	m.icnt = e->icnt;
	m.hist = e->hist;
	if (kind != PEND_DIRECT)
		m.addr_field = (target ^ e->last_addr) >> 1;
	reset_spans(e);
	put_msg(e, &m, ts);
	if (kind != PEND_DIRECT)
		e->last_addr = target;
}

static void ir_push(struct nt_encoder *e, uint64_t ret)
{
	if (e->cfg.implicit_return == 1) {
		if (e->ir_count < e->cfg.ir_depth)
			e->ir_count++;
		return;
	}
	/*
	 * A full stack forgets its oldest entry; that return is reported.
	 * Wrapped by compare, not %: a division per call and return was a
	 * tenth of the plugin's encoding time.
	 */
	e->ir_stack[e->ir_top] = ret;
	if (++e->ir_top == e->cfg.ir_depth)
		e->ir_top = 0;
	if (e->ir_count < e->cfg.ir_depth)
		e->ir_count++;
}

/* Pop and say whether the return to target may stay implicit. */
static bool ir_pop_matches(struct nt_encoder *e, uint64_t target)
{
	uint64_t top;

	if (!e->ir_count)
		return false;
	e->ir_count--;
	if (e->cfg.implicit_return == 1)
		return true;
	e->ir_top = (e->ir_top ? e->ir_top : e->cfg.ir_depth) - 1;
	top = e->ir_stack[e->ir_top];
	return ((top ^ target) & e->ir_mask) == 0;
}

/*
 * A pending return (or swap) went to target: pop (and push the swap's own
 * return address). Returns whether the return may stay implicit.
 */
static bool pop_return(struct nt_encoder *e, unsigned int kind,
		       uint64_t target)
{
	bool implicit = ir_pop_matches(e, target);

	if (kind == PEND_SWAP)
		ir_push(e, e->pend_ret);
	return implicit;
}

/* Resolve the pending message now that the next PC is known. */
static void resolve_pending(struct nt_encoder *e, uint64_t target)
{
	unsigned int kind = e->pend;
	bool sync = e->sync_due;

	e->pend = PEND_NONE;
	switch (kind) {
	case PEND_NONE:
		if (sync)
			emit_branch(e, PEND_NONE, NT_BTYPE_INDIRECT, target,
				    e->pend_ts, true);
		return;
	case PEND_RETURN:
	case PEND_SWAP:
		if (pop_return(e, kind, target) && !sync)
			return;
		kind = PEND_INDIRECT;
		break;
	default:
		break;
	}
	emit_branch(e, kind, e->pend_btype, target, e->pend_ts, sync);
}

/* HIST, stop bit included, as ResourceFull RCODE 1; HIST empties. */
static void put_hist(struct nt_encoder *e, uint64_t ts)
{
	struct nt_msg m;

	msg_init(&m, NT_TCODE_RESOURCE_FULL);
	m.rcode = NT_RCODE_HIST;
	m.rdata[0] = e->hist;
	m.nrdata = 1;
	put_msg(e, &m, ts);
	e->hist = 1;
}

/*
 * Repeated history: where the encoder cuts the branch history.
 *
 * The split of the history bits into ResourceFull messages is the
 * encoder's choice, as long as their bits, stop bits left out, join up
 * to the same sequence (the IMPORTANT note of "Repeated History
 * Optimization"). RCODE 1 may carry any number of bits from one up
 * ("ResourceFull Message", explanations and notes), and RCODE 2 stands
 * for HREPEAT copies of its pattern, however short (the HREPEAT=150
 * example there). A loop body with p branches never fills a 31-bit HIST
 * in step with itself unless p divides 31, so comparing full registers
 * finds few repeats; cutting HIST at period boundaries finds them all.
 *
 * When HIST fills with no pattern being counted, find_period() looks for
 * a period p in its bits. One period becomes the pattern, the periods
 * seen are counted, and what is left past the last whole one (the start
 * of the next) stays in HIST. Bits in front of the periodic ones go out
 * first as RCODE 1, so a loop is caught in the register it starts in.
 * A register with no period is held back in case it repeats; if the
 * next one differs, the two together may still show a period too long
 * for one register to confirm (two_register_period()).
 *
 * From then on HIST is compared with the pattern repeated k times,
 * k*p <= the HIST width, each time it holds k*p bits (hist_lim), so the
 * per-branch cost is what it was: one test of one bit. A match counts k
 * periods. A mismatch counts the whole periods in front of the first bit
 * that differs, reports the count, and HIST fills on from there.
 *
 * The count goes out with one period as the pattern (RCODE 1 for a single
 * period, RCODE 2 with HREPEAT for more) when the pattern stops, when
 * HREPEAT is at its maximum, or when any message with history in it or
 * after it must go out (flush_repeats()). A period found in the register
 * that found it and then gone at the first compare may have been chance:
 * if its periods cost more bytes per bit than full registers, unsplit()
 * sends them as full registers instead.
 */

/* Bits that must agree with a period before it is trusted. */
static unsigned int rh_confirm(const struct nt_encoder *e)
{
	unsigned int d = e->cfg.hist_bits - 1;

	return d >= 16 ? 8 : (d + 1) / 2;
}

/*
 * The period of the latest of the d bits of data that covers the most
 * of them, 0 if none: *len is then the bits it covers. A period must be
 * confirmed by as many bits past its first occurrence as confirm says,
 * twice that if other bits come before it. For each p, the lowest bit
 * that differs from the one p further back says at once how far back the
 * period holds; the first p that holds for all d bits is the shortest.
 */
static unsigned int find_period(uint64_t data, unsigned int d,
				unsigned int confirm, unsigned int *len)
{
	unsigned int p, best = 0, most = 0, n, j;
	uint64_t cand = ((1ull << (d - confirm + 1)) - 1) & ~1ull;

	/*
	 * Any period agrees with the latest confirm bits at least: bit p of
	 * cand says bits p.. repeat them. All p at once, a bit at a time,
	 * and random history seldom leaves one to look at.
	 */
	for (j = 0; j < confirm; j++)
		cand &= (data >> j) ^ (((data >> j) & 1) - 1);
	while (cand) {
		uint64_t x;

		p = (unsigned int)__builtin_ctzll(cand);
		cand &= cand - 1;
		x = (data ^ (data >> p)) & ((1ull << (d - p)) - 1);

		n = x ? p + (unsigned int)__builtin_ctzll(x) : d;
		if (n >= p + (n < d ? 2 * confirm : confirm) && n > most) {
			most = n;
			best = p;
			if (n == d)
				break;
		}
	}
	*len = most;
	return best;
}

/*
 * Count periods; report them when HREPEAT is at its maximum, counting
 * rh_k periods a copy (so that trace still comes out of a long loop as
 * often as with full registers compared).
 */
static void count_periods(struct nt_encoder *e, uint64_t n, uint64_t ts)
{
	e->hrepeat += n;
	e->rh_ts = ts;
	if (e->hrepeat >= e->hrepeat_max * e->rh_k)
		flush_hist_repeat(e);
}

/*
 * Bytes of a ResourceFull message with bits of history (and HREPEAT for
 * a count above one), SRC and TSTAMP left out: TCODE, RCODE with the
 * first two HIST bits, then six bits a byte in each field.
 */
static unsigned int rf_bytes(unsigned int bits, uint64_t count)
{
	unsigned int n = 2 + (bits + 1 - 2 + 5) / 6;

	if (count > 1)
		n += (64 - (unsigned int)__builtin_clzll(count) + 5) / 6;
	return n;
}

/* Whether the periods counted cost fewer bytes a bit than full HISTs. */
static bool worth_keeping(const struct nt_encoder *e)
{
	unsigned int d = e->cfg.hist_bits - 1;

	return (uint64_t)rf_bytes(e->rh_len, e->rh_k) * d <=
	       (uint64_t)rf_bytes(d, 1) * e->rh_k * e->rh_len;
}

/*
 * The periods counted, rh_k of them, and the k*p bits of HIST that did
 * not repeat them, as a full HIST register and the rest left in HIST.
 */
static void unsplit(struct nt_encoder *e, uint64_t ts)
{
	unsigned int d = e->cfg.hist_bits - 1;
	unsigned int len = e->rh_len * e->rh_k, t = 2 * len;
	uint64_t all = (e->rh_hist_k << len) | (e->hist & ((1ull << len) - 1));

	/* len > d - p and p <= d - confirm: t > d, and t <= 2 * d */
	e->hrepeat = 0;
	e->hist = all >> (t - d);
	put_hist(e, ts);
	e->hist = (1ull << (t - d)) | (all & ((1ull << (t - d)) - 1));
}

/*
 * Count the low len of the bits of data as periods of p, the pattern,
 * after sending the bits in front of them (at most a register's worth)
 * as RCODE 1; the bits past the last whole period stay in HIST.
 */
static void start_pattern(struct nt_encoder *e, uint64_t data,
			  unsigned int bits, unsigned int p, unsigned int len,
			  uint64_t ts)
{
	unsigned int d = e->cfg.hist_bits - 1, k = d / p, n = len / p;
	unsigned int r = len - n * p;
	uint64_t unit = (data >> (len - p)) & ((1ull << p) - 1);

	if (len < bits) {
		e->hist = (1ull << (bits - len)) | (data >> len);
		put_hist(e, ts);
	}
	e->rh_valid = true;
	e->rh_len = p;
	e->rh_k = k;
	e->rh_hist = (1ull << p) | unit;
	e->rh_hist_k = 1;
	for (; k; k--)
		e->rh_hist_k = (e->rh_hist_k << p) | unit;
	e->hist_lim = 1ull << (p * e->rh_k);
	/* past the whole periods: the start of the next one */
	e->hist = (1ull << r) | (data & ((1ull << r) - 1));
	count_periods(e, n, ts);
}

/* HIST is full and no pattern is being counted: start one. */
static void new_pattern(struct nt_encoder *e, uint64_t ts)
{
	unsigned int d = e->cfg.hist_bits - 1, p, len;
	uint64_t data = e->hist & (e->hist_full - 1);

	p = find_period(data, d, rh_confirm(e), &len);
	if (!p)
		p = len = d;	/* the whole register, in case it repeats */
	start_pattern(e, data, d, p, len, ts);
}

/*
 * A full register with no period in it, held in case it repeats, and the
 * next one, different: a period longer than half a register may still
 * run through both (a loop body of 24 to 30 branches). The two are a
 * long enough sample to trust any period found in them.
 */
static bool two_register_period(struct nt_encoder *e, uint64_t ts)
{
	unsigned int d = e->cfg.hist_bits - 1, p;
	uint64_t all = ((e->rh_hist & (e->hist_full - 1)) << d) |
		       (e->hist & (e->hist_full - 1));

	if (2 * d > 63)
		return false;
	/* shorter periods the registers would have shown on their own */
	for (p = d - rh_confirm(e) + 1; p < d; p++)
		if (!((all ^ (all >> p)) & ((1ull << (2 * d - p)) - 1)))
			break;
	if (p >= d)
		return false;
	e->hrepeat = 0;
	start_pattern(e, all, 2 * d, p, 2 * d, ts);
	return true;
}

/*
 * HIST reached hist_lim: full, or as long as the pattern repeated rh_k
 * times.
 */
static NT_COLD void hist_limit(struct nt_encoder *e, uint64_t ts)
{
	unsigned int d = e->cfg.hist_bits - 1, len, p, m, left;
	uint64_t diff;

	/* branch messages counted before these bits go first */
	flush_repeat_branch(e);
	if (!e->cfg.repeat_history) {
		put_hist(e, ts);
		return;
	}
	if (e->rh_valid) {
		if (e->hist == e->rh_hist_k) {
			e->hist = 1;
			count_periods(e, e->rh_k, ts);
			return;
		}
		/*
		 * The whole periods in front of the first bit that differs
		 * count too, if a count goes out anyway; the rest stays.
		 */
		p = e->rh_len;
		len = p * e->rh_k;
		diff = (e->hist ^ e->rh_hist_k) & ((1ull << len) - 1);
		m = (len - 64 + (unsigned int)__builtin_clzll(diff)) / p;
		if (!e->hrepeat)
			m = 0;
		if (p == d && e->hrepeat == 1 && two_register_period(e, ts))
			return;
		if (!m && e->hrepeat == e->rh_k && !worth_keeping(e)) {
			unsplit(e, ts);
		} else {
			left = len - m * p;
			if (m)
				count_periods(e, m, ts);
			e->hist = (1ull << left) |
				  (e->hist & ((1ull << left) - 1));
			flush_hist_repeat(e);
		}
		e->rh_valid = false;
		e->hist_lim = e->hist_full;
		if (!(e->hist & e->hist_full))
			return;
	}
	flush_hist_repeat(e);
	new_pattern(e, ts);
}

static void add_hist(struct nt_encoder *e, unsigned int taken, uint64_t ts)
{
	e->hist = (e->hist << 1) | taken;
	if (e->hist & e->hist_lim)
		hist_limit(e, ts);
}

static NT_COLD void icnt_full(struct nt_encoder *e, uint64_t ts)
{
	struct nt_msg m;

	/*
	 * A history count may stay pending across it: I-CNT and HIST are
	 * separate resources the decoder adds up until the next branch
	 * message, as it does with the HIST register left unreported
	 * here. With timestamps, though, the count's own (earlier) time
	 * must not follow this message's.
	 */
	if (e->cfg.stream.timestamps)
		flush_repeats(e);
	else
		flush_repeat_branch(e);
	msg_init(&m, NT_TCODE_RESOURCE_FULL);
	m.rcode = NT_RCODE_ICNT;
	m.rdata[0] = e->icnt;
	m.nrdata = 1;
	put_msg(e, &m, ts);
	e->icnt = 0;
}

void nt_encoder_start(struct nt_encoder *e, unsigned int sync_reason)
{
	e->running = true;
	e->need_sync = true;
	e->sync_reason = sync_reason & 0xf;
	e->pend = PEND_NONE;
	update_slow(e);
}

void nt_encoder_stop(struct nt_encoder *e, unsigned int evcode,
		     uint64_t tstamp)
{
	struct nt_msg m;

	if (!e->running)
		return;
	e->running = false;
	if (e->need_sync || e->lost) {
		/* nothing was reported since the start or the loss */
		e->pend = PEND_NONE;
		update_slow(e);
		return;
	}
	/* a direct branch needs no address; others lose their target */
	if (e->pend == PEND_DIRECT)
		emit_branch(e, PEND_DIRECT, 0, 0, e->pend_ts, false);
	e->pend = PEND_NONE;
	flush_repeats(e);
	msg_init(&m, NT_TCODE_PROG_TRACE_CORRELATION);
	m.evcode = evcode & 0xf;
	m.icnt = e->icnt;
	if (e->cfg.mode == NT_MODE_HTM) {
		m.cdf = 1;
		m.hist = e->hist;
	}
	reset_spans(e);
	put_msg(e, &m, tstamp);
	update_slow(e);
}

/* itype 7 is reserved; PRV 2 (with or without V) does not exist */
#define VALID_ITYPES	0xff7fu
#define VALID_PRIVS	0xbbu

/* Bit tests, not a chain of compares: this runs for every record. */
static bool record_valid(const struct nt_record *rec)
{
	unsigned int it = rec->itype, pv = rec->priv;

	if (it > 15 || pv > 7 ||
	    !((VALID_ITYPES >> it) & (VALID_PRIVS >> pv) & 1))
		return false;
	return rec->size == 2 || rec->size == 4 ||
	       it == NT_ITYPE_EXCEPTION || it == NT_ITYPE_INTERRUPT;
}

/* Work owed at an instruction boundary before rec itself is counted. */
static NT_COLD void boundary(struct nt_encoder *e, const struct nt_record *rec)
{
	if (e->lost) {
		struct nt_msg m;

		/* chapter 6.4: Error right before the SYNC=7 message */
		if (!reserve(e, 2 * NT_MAX_MSG_BYTES))
			return;
		e->lost = false;
		e->pend = PEND_NONE;
		msg_init(&m, NT_TCODE_ERROR);
		m.etype = 0;
		m.ecode = 1u << 2;	/* program trace messages lost */
		put_msg(e, &m, rec->tstamp);
		emit_prog_sync(e, NT_SYNC_FIFO_OVERRUN, rec);
		e->need_sync = false;
	} else if (e->need_sync) {
		e->need_sync = false;
		emit_prog_sync(e, e->sync_reason, rec);
	} else {
		if (e->sync_due && e->pend == PEND_NONE)
			e->pend_ts = rec->tstamp;
		resolve_pending(e, rec->addr);
	}
	update_slow(e);
}

/* A message of kind waits for the next PC (see the top of this file). */
static void hold(struct nt_encoder *e, unsigned int kind, unsigned int btype,
		 uint64_t ts)
{
	e->pend = kind;
	e->pend_btype = btype;
	e->pend_ts = ts;
	e->slow = true;
}

/*
 * What a retired control transfer leaves for the encoder to do (rec is
 * counted already): history, return stack, or a message pending until the
 * next PC is known.
 */
static inline void control(struct nt_encoder *e, const struct nt_record *rec)
{
	unsigned int kind;

	switch (rec->itype) {
	case NT_ITYPE_BRANCH_NOT_TAKEN:
		if (e->cfg.mode == NT_MODE_HTM)
			add_hist(e, 0, rec->tstamp);
		return;
	case NT_ITYPE_DIRECT_CALL:
		if (e->cfg.implicit_return)
			ir_push(e, rec->addr + rec->size);
		/* all-jumps mode reports direct jumps like taken branches */
		if (!e->cfg.all_jumps)
			return;
		/* fall through */
	case NT_ITYPE_DIRECT_JUMP:
	case NT_ITYPE_OTHER_DIRECT_JUMP:
		if (!e->cfg.all_jumps)
			return;
		/* fall through */
	case NT_ITYPE_BRANCH_TAKEN:
		if (e->cfg.mode == NT_MODE_HTM) {
			add_hist(e, 1, rec->tstamp);
			return;
		}
		kind = PEND_DIRECT;
		break;
	case NT_ITYPE_INDIRECT_CALL:
		if (e->cfg.implicit_return)
			ir_push(e, rec->addr + rec->size);
		/* fall through */
	case NT_ITYPE_INDIRECT_JUMP:
	case NT_ITYPE_OTHER_INDIRECT_JUMP:
		/* section 8.1: lui/auipc + jalr in the same message */
		if (e->cfg.sequential_jump &&
		    (rec->flags & NT_REC_SEQ_INFERABLE) && e->since_msg >= 2)
			return;
		/* fall through */
	case NT_ITYPE_INDIRECT_3BIT:
	case NT_ITYPE_TRAP_RETURN:
		kind = PEND_INDIRECT;
		break;
	case NT_ITYPE_RETURN:
		kind = e->cfg.implicit_return ? PEND_RETURN : PEND_INDIRECT;
		break;
	case NT_ITYPE_COROUTINE_SWAP:
		if (!e->cfg.implicit_return) {
			kind = PEND_INDIRECT;
			break;
		}
		kind = PEND_SWAP;
		e->pend_ret = rec->addr + rec->size;
		break;
	default:
		return;
	}
	hold(e, kind, NT_BTYPE_INDIRECT, rec->tstamp);
}

/*
 * A record past its boundary work: Ownership, then what it retires. The
 * caller counted it in the statistics.
 */
static inline void retire_settled(struct nt_encoder *e,
				  const struct nt_record *rec)
{
	unsigned int half;

	if (e->cfg.context && (!e->own_known || rec->priv != e->cur_priv ||
			       rec->context != e->cur_ctx))
		emit_ownership(e, rec->priv, rec->context,
			       !e->own_known || rec->context != e->cur_ctx,
			       rec->tstamp);

	if (rec->itype == NT_ITYPE_EXCEPTION ||
	    rec->itype == NT_ITYPE_INTERRUPT) {
		/* the trapping instruction did not retire: no I-CNT */
		hold(e, PEND_TRAP, e->cfg.btype_trap_only ? NT_BTYPE_TRAP :
			rec->itype == NT_ITYPE_EXCEPTION ?
			NT_BTYPE_EXCEPTION : NT_BTYPE_INTERRUPT, rec->tstamp);
		return;
	}

	half = rec->size >> 1;
	e->stats.halfwords += half;
	e->icnt += half;
	if (e->icnt >= e->icnt_full_at)
		icnt_full(e, rec->tstamp);
	e->since_msg++;
	if (e->cfg.sync_mode == 3) {
		e->sync_count += half;
		if (e->sync_count >= e->sync_period)
			e->sync_due = e->slow = true;
	} else if (e->cfg.sync_mode == 2) {
		if (rec->tstamp - e->sync_ts >= e->sync_period) {
			e->sync_ts = rec->tstamp;
			e->sync_due = e->slow = true;
		}
	}

	/*
	 * Most records are plain instructions: one well predicted compare
	 * instead of the jump table in control().
	 */
	if (__builtin_expect(rec->itype != NT_ITYPE_NONE, 0))
		control(e, rec);
}

int nt_encoder_retire(struct nt_encoder *e, const struct nt_record *rec)
{
	if (!record_valid(rec))
		return -1;
	if (!e->running)
		return 0;
	e->stats.records++;

	if (e->slow) {
		boundary(e, rec);
		if (e->lost)
			return 0;
	}
	retire_settled(e, rec);
	return 0;
}

/*
 * n more plain instructions, halfwords in all, right after one that went
 * through nt_encoder_retire(): nothing but I-CNT overflow and periodic
 * sync can come of them.
 */
static void retire_more_plain(struct nt_encoder *e, uint64_t n,
			      uint64_t halfwords, uint64_t tstamp)
{
	e->stats.records += n;
	e->stats.halfwords += halfwords;
	e->icnt += halfwords;
	e->since_msg += n;
	if (e->cfg.sync_mode == 3) {
		e->sync_count += halfwords;
		if (e->sync_count >= e->sync_period)
			e->sync_due = e->slow = true;
	}
	if (e->icnt >= e->icnt_full_at)
		icnt_full(e, tstamp);
}

int nt_encoder_retire_plain(struct nt_encoder *e, const struct nt_record *first,
			    unsigned int n, uint64_t halfwords)
{
	if (!n)
		return 0;
	if (first->itype != NT_ITYPE_NONE || halfwords < n ||
	    halfwords - (first->size >> 1) < n - 1 ||
	    nt_encoder_retire(e, first))
		return -1;
	if (!e->running || n == 1 || e->lost)
		return 0;
	retire_more_plain(e, n - 1, halfwords - (first->size >> 1),
			  first->tstamp);
	return 0;
}

/* traps are records of their own; conditional branches say TAKEN */
#define BLOCK_ITYPES	(VALID_ITYPES & ~((1u << NT_ITYPE_EXCEPTION) | \
					  (1u << NT_ITYPE_INTERRUPT) | \
					  (1u << NT_ITYPE_BRANCH_NOT_TAKEN)))
/* 2 and 4 bytes */
#define VALID_SIZES	0x14u

/*
 * Bit tests, as for records; the sizes bound the half-words in front of
 * the last instruction.
 */
static bool block_valid(const struct nt_block *b)
{
	unsigned int it = b->last_itype, pv = b->priv;
	unsigned int fs = b->first_size, ls = b->last_size;
	uint64_t before = (uint64_t)b->halfwords - (ls >> 1);
	uint64_t n = b->n;

	if ((it | pv | ls) > 15 ||
	    !((BLOCK_ITYPES >> it) & (VALID_PRIVS >> pv) &
	      (VALID_SIZES >> ls) & 1))
		return false;
	if (n == 1)
		return b->halfwords == ls >> 1;
	return n && fs <= 15 && ((VALID_SIZES >> fs) & 1) &&
	       before >= n - 2 + (fs >> 1) && before <= 2 * n - 4 + (fs >> 1);
}

int nt_block_check(const struct nt_block *b)
{
	return block_valid(b) ? 0 : -1;
}

/* The first instruction of b as a record (its boundary needs no more). */
static struct nt_record block_first(const struct nt_block *b,
				    uint64_t context, uint64_t tstamp)
{
	struct nt_record r = { .addr = b->addr, .size = b->first_size,
			       .priv = b->priv, .context = context,
			       .tstamp = tstamp };

	return r;
}

/* The last instruction of b as a record, its outcome taken from next. */
static struct nt_record block_last(const struct nt_block *b, uint64_t next,
				   uint64_t context, uint64_t tstamp)
{
	struct nt_record r = { .addr = b->last, .size = b->last_size,
			       .itype = b->last_itype, .priv = b->priv,
			       .context = context, .tstamp = tstamp };

	if (r.itype == NT_ITYPE_BRANCH_TAKEN && next != b->target)
		r.itype = NT_ITYPE_BRANCH_NOT_TAKEN;
	if ((b->flags & NT_BLOCK_SEQ) && next == b->target)
		r.flags = NT_REC_SEQ_INFERABLE;
	return r;
}

/*
 * Whether b, past its first instruction's boundary, could emit anything
 * but its own control transfer's work: a sync owed, an Ownership change,
 * a full I-CNT or a periodic sync falling due inside it. Those take the
 * record path.
 */
static inline bool block_needs_records(const struct nt_encoder *e,
				       const struct nt_block *b,
				       uint64_t context, uint64_t tstamp)
{
	if (e->slow || e->icnt + b->halfwords >= e->icnt_full_at)
		return true;
	if (e->cfg.context && (!e->own_known || b->priv != e->cur_priv ||
			       context != e->cur_ctx))
		return true;
	switch (e->cfg.sync_mode) {
	case 2:
		return tstamp - e->sync_ts >= e->sync_period;
	case 3:
		return e->sync_count + b->halfwords >= e->sync_period;
	default:
		return false;
	}
}

/*
 * The record path settles a return when the next record comes. Its target
 * is known with the block, and an implicit return then leaves nothing
 * pending: blocks after returns stay on the fast path. One that needs a
 * message stays pending as an indirect branch; with a sync due it stays
 * as it is. (Lost trace drops whatever is pending; the sync after it
 * empties the return stack.)
 */
static void settle_return(struct nt_encoder *e, uint64_t next)
{
	if ((e->pend != PEND_RETURN && e->pend != PEND_SWAP) || e->sync_due)
		return;
	e->pend = pop_return(e, e->pend, next) ? PEND_NONE : PEND_INDIRECT;
	update_slow(e);
}

/*
 * A block that owes nothing and in which nothing falls due; the caller
 * counted its records.
 */
static inline __attribute__((always_inline)) void
retire_block_fast(struct nt_encoder *e, const struct nt_block *b,
		  uint64_t next, uint64_t context, uint64_t tstamp)
{
	struct nt_record last;

	e->stats.halfwords += b->halfwords;
	e->icnt += b->halfwords;
	e->since_msg += b->n;
	if (e->cfg.sync_mode == 3)
		e->sync_count += b->halfwords;

	/* the transfers most blocks end in, as control() would do them */
	switch (b->last_itype) {
	case NT_ITYPE_NONE:
		return;
	case NT_ITYPE_BRANCH_TAKEN:
		if (e->cfg.mode == NT_MODE_HTM)
			add_hist(e, next == b->target, tstamp);
		else if (next == b->target)
			hold(e, PEND_DIRECT, NT_BTYPE_INDIRECT, tstamp);
		return;
	case NT_ITYPE_RETURN:
		/*
		 * settle_return() at once; without implicit returns the
		 * stack stays empty and every return is reported
		 */
		if (!ir_pop_matches(e, next))
			hold(e, PEND_INDIRECT, NT_BTYPE_INDIRECT, tstamp);
		return;
	case NT_ITYPE_DIRECT_CALL:
		if (e->cfg.all_jumps)
			break;
		if (e->cfg.implicit_return)
			ir_push(e, b->last + b->last_size);
		return;
	default:
		break;
	}
	last = block_last(b, next, context, tstamp);
	control(e, &last);
	settle_return(e, next);
}

/*
 * The first instruction's boundary work, past the common case: a sync or
 * lost trace to report.
 */
static NT_COLD void block_boundary(struct nt_encoder *e,
				   const struct nt_block *b, uint64_t context,
				   uint64_t tstamp)
{
	struct nt_record first = block_first(b, context, tstamp);

	boundary(e, &first);
}

/*
 * The block as its records, its first boundary done: something falls due
 * in it, or trace was lost there and not reported yet.
 */
static NT_COLD void retire_block_records(struct nt_encoder *e,
					 const struct nt_block *b,
					 uint64_t next, uint64_t context,
					 uint64_t tstamp)
{
	struct nt_record first = block_first(b, context, tstamp);
	struct nt_record last = block_last(b, next, context, tstamp);

	e->stats.records++;
	if (e->lost) {
		/* no room to report it: dropped, as is the run behind it */
		if (b->n > 1)
			nt_encoder_retire(e, &last);
	} else if (b->n == 1) {
		retire_settled(e, &last);
	} else {
		retire_settled(e, &first);
		if (b->n > 2 && !e->lost)
			retire_more_plain(e, b->n - 2, b->halfwords -
					  (b->last_size >> 1) -
					  (b->first_size >> 1), tstamp);
		nt_encoder_retire(e, &last);
	}
	settle_return(e, next);
}

size_t nt_encoder_retire_block(struct nt_encoder *e, const struct nt_block *b,
			       uint64_t next, uint64_t context, uint64_t tstamp)
{
	if (!e->running)
		return e->olen - e->ohead;
	if (e->slow) {
		/*
		 * What earlier instructions left owed, most often a message
		 * pending until the target is known (every taken branch's
		 * in BTM): boundary()'s case with neither lost trace nor a
		 * sync to report first, without building the record.
		 */
		if (e->pend != PEND_NONE && !e->need_sync && !e->lost) {
			resolve_pending(e, b->addr);
			update_slow(e);
		} else {
			block_boundary(e, b, context, tstamp);
		}
	}
	if (block_needs_records(e, b, context, tstamp)) {
		retire_block_records(e, b, next, context, tstamp);
	} else {
		e->stats.records += b->n;
		retire_block_fast(e, b, next, context, tstamp);
	}
	return e->olen - e->ohead;
}
