// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Output writers on top of the decoder's events: executed-PC lists (the
 * same text as the QEMU-derived ground truth, so the two compare with
 * cmp), branch lists, perf script -F ip,brstack samples for llvm-profgen
 * and create_gcov, a readable flow, and the Bluespec tandem trace.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bluespec.h"
#include "ntrace.h"

/* Output goes out in chunks this large: few write calls. */
#define OUTBUF (1u << 18)

struct br {
	uint64_t from, to;
};

/* Longest PC line: "0x", 16 digits, newline; lines are copied this wide. */
#define PC_LINE 24

/*
 * The PC list of a run as it was written last time: a basic block's
 * lines are the same every time it runs.
 */
#define RUN_CACHE	1024		/* entries, a power of two */
#define RUN_TEXT	256		/* bytes of text one holds */

struct run_text {
	uint64_t from;
	const uint8_t *code;
	uint32_t ninsn;
	uint32_t len;			/* 0: empty */
	char text[RUN_TEXT];
};

struct nt_out {
	struct nt_out_cfg cfg;
	FILE *f;
	bool failed;
	char buf[OUTBUF];
	size_t n;
	uint64_t flushes;
	struct run_text *runs;		/* RUN_CACHE of them, PC list only */
	/*
	 * PC list: the line of line_pc as pc_line() makes it, kept from
	 * one event to the next (line_len 0: none); see set_line().
	 */
	union {
		char text[PC_LINE];
		uint64_t words[PC_LINE / 8];	/* copied out a word at a time */
	} line;
	uint64_t line_pc;
	unsigned int line_len;
	/* brstack sampling */
	struct br *ring;
	unsigned int ring_pos, ring_len;
	uint64_t since_sample;
	/* bluespec */
	struct nt_bsv_writer bsv;
	bool have_prev;
	struct nt_bsv_event prev;
};

static void flush(struct nt_out *o)
{
	if (o->n && fwrite(o->buf, 1, o->n, o->f) != o->n)
		o->failed = true;
	o->n = 0;
	o->flushes++;
}

static void put_str(struct nt_out *o, const char *s, size_t len)
{
	/* An empty Bluespec trace has no buffer at all: s may be NULL. */
	if (!len)
		return;
	if (o->n + len > OUTBUF)
		flush(o);
	if (len > OUTBUF) {
		if (fwrite(s, 1, len, o->f) != len)
			o->failed = true;
		return;
	}
	memcpy(o->buf + o->n, s, len);
	o->n += len;
}

__attribute__((format(printf, 2, 3)))
static void put_fmt(struct nt_out *o, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (len > 0)
		put_str(o, line, (size_t)len < sizeof(line) ? (size_t)len :
			sizeof(line) - 1);
}

/* "0x" + lowercase hex without leading zeros + c: the PC-list format. */
static void put_hex(struct nt_out *o, uint64_t v, char c)
{
	static const char digits[] = "0123456789abcdef";
	unsigned int nd = (67 - (unsigned int)__builtin_clzll(v | 1)) / 4;
	char *p;

	if (o->n + 20 > OUTBUF)
		flush(o);
	p = o->buf + o->n;
	p[0] = '0';
	p[1] = 'x';
	p[2 + nd] = c;
	for (unsigned int i = nd; i > 0; i--) {
		p[1 + i] = digits[v & 15];
		v >>= 4;
	}
	o->n += nd + 3;
}

static unsigned int insn_size(const uint8_t *p)
{
	return (p[0] & 3) == 3 ? 4 : 2;
}

/* Two lowercase hex digits for every byte value. */
static const char hex2[256][2] = {
#define H2(i) { "0123456789abcdef"[(i) >> 4], "0123456789abcdef"[(i) & 15] }
#define H2x16(i) H2(i), H2(i + 1), H2(i + 2), H2(i + 3), H2(i + 4),	\
	H2(i + 5), H2(i + 6), H2(i + 7), H2(i + 8), H2(i + 9), H2(i + 10), \
	H2(i + 11), H2(i + 12), H2(i + 13), H2(i + 14), H2(i + 15)
	H2x16(0x00), H2x16(0x10), H2x16(0x20), H2x16(0x30), H2x16(0x40),
	H2x16(0x50), H2x16(0x60), H2x16(0x70), H2x16(0x80), H2x16(0x90),
	H2x16(0xa0), H2x16(0xb0), H2x16(0xc0), H2x16(0xd0), H2x16(0xe0),
	H2x16(0xf0),
#undef H2x16
#undef H2
};


/*
 * The PC-list line of pc into line[PC_LINE] (the bytes after the
 * newline are don't-care); returns its length.
 */
static unsigned int pc_line(char line[PC_LINE], uint64_t v)
{
	unsigned int nd = (67 - (unsigned int)__builtin_clzll(v | 1)) / 4;

	line[0] = '0';
	line[1] = 'x';
	line[2 + nd] = '\n';
	for (unsigned int i = nd; i > 1; i -= 2) {
		memcpy(line + i, hex2[v & 0xff], 2);
		v >>= 8;
	}
	if (nd & 1)
		line[2] = hex2[v & 0xff][1];
	return nd + 3;
}

/*
 * The writer's line made the line of pc; returns its length. The lines
 * of a 256-byte page differ only in their last two digits, which the
 * caller writes; those of a 64 KiB page (of at least five digits) only
 * in their last four, two of which are rewritten here. Anything else is
 * formatted anew.
 */
static inline unsigned int set_line(struct nt_out *o, uint64_t pc)
{
	uint64_t old = o->line_pc;

	if (o->line_len > 4 && pc >= 0x10 && pc >> 8 == old >> 8)
		;
	else if (o->line_len && pc >= 0x10000 && pc >> 16 == old >> 16)
		memcpy(o->line.text + o->line_len - 5, hex2[(pc >> 8) & 0xff],
		       2);
	else
		o->line_len = pc_line(o->line.text, pc);
	o->line_pc = pc;
	return o->line_len;
}

/*
 * One line per instruction of a straight run: the line is copied, a
 * fixed PC_LINE bytes at a time from three words kept in registers,
 * with only its last two digits rewritten; most PC lines cost three
 * stores, a table load and a store. The inner loop ends at a new
 * 256-byte page or when the buffer needs a flush.
 */
static void pcs_run(struct nt_out *o, uint64_t pc, const uint8_t *p,
		    uint64_t n, uint64_t mask)
{
	while (n) {
		uint64_t room, w0, w1, w2, next;
		unsigned int len, sz;
		char *out;

		if (pc < 0x10) {
			/* one digit: none to patch */
			put_hex(o, pc, '\n');
			sz = insn_size(p);
			p += sz;
			pc = (pc + sz) & mask;
			n--;
			continue;
		}
		/* lines that fit in the buffer before it needs a flush */
		room = n;
		if (n > OUTBUF / PC_LINE || o->n + n * PC_LINE > OUTBUF) {
			room = (OUTBUF - o->n) / PC_LINE;
			if (!room) {
				flush(o);
				continue;
			}
			if (room > n)
				room = n;
		}
		len = set_line(o, pc);
		w0 = o->line.words[0];
		w1 = o->line.words[1];
		w2 = o->line.words[2];
		out = o->buf + o->n;
		n -= room;
		do {
			sz = insn_size(p);
			next = (pc + sz) & mask;
			memcpy(out, &w0, 8);
			memcpy(out + 8, &w1, 8);
			memcpy(out + 16, &w2, 8);
			memcpy(out + len - 3, hex2[pc & 0xff], 2);
			out += len;
			p += sz;
			room--;
			if ((next ^ pc) >> 8) {
				pc = next;
				break;
			}
			pc = next;
		} while (room);
		n += room;	/* the lines a new page left */
		o->n = (size_t)(out - o->buf);
	}
}

/*
 * len bytes from src to dst, 16 at a time (len rounded up), and never
 * fewer than COPY_FIRST: both have RUN_TEXT bytes of room. A memcpy of
 * RUN_TEXT bytes became a slow string instruction here, and a loop
 * from 0 cost a test and a jump each 16 bytes: most runs' text (five
 * PCs of eight characters, on qsort_cb) is under COPY_FIRST bytes.
 */
#define COPY_FIRST	48
static void copy_text(char *dst, const char *src, size_t len)
{
	typedef uint64_t u64x2 __attribute__((vector_size(16)));
	u64x2 v0, v1, v2;
	size_t i;

	_Static_assert(COPY_FIRST == 3 * sizeof(v0) && COPY_FIRST <= RUN_TEXT,
		       "copy_text() copies three vectors first");
	memcpy(&v0, src, sizeof(v0));
	memcpy(&v1, src + 16, sizeof(v1));
	memcpy(&v2, src + 32, sizeof(v2));
	memcpy(dst, &v0, sizeof(v0));
	memcpy(dst + 16, &v1, sizeof(v1));
	memcpy(dst + 32, &v2, sizeof(v2));
	for (i = COPY_FIRST; i < len; i += 16) {
		u64x2 v;

		memcpy(&v, src + i, sizeof(v));
		memcpy(dst + i, &v, sizeof(v));
	}
}

/* Where a run from "from" is kept, if it is. */
static inline struct run_text *run_slot(const struct nt_out *o, uint64_t from)
{
	return &o->runs[((from >> 1) ^ (from >> 11)) & (RUN_CACHE - 1)];
}

/* Whether c holds the text of ev's run: same place, code and length. */
static inline bool run_kept(const struct run_text *c, const struct nt_event *ev)
{
	return c->len && c->from == ev->from && c->code == ev->code &&
	       c->ninsn == ev->ninsn;
}

/*
 * The common case of pcs_cached(): the run's text is kept and fits.
 * Calls nothing, so that nt_out_event() saves no registers for it.
 */
static inline bool pcs_copy_kept(struct nt_out *o, const struct nt_event *ev)
{
	const struct run_text *c;

	/* a run of over RUN_TEXT / 4 instructions is never kept: c->ninsn */
	if (OUTBUF - o->n < RUN_TEXT)
		return false;
	c = run_slot(o, ev->from);
	if (!run_kept(c, ev))
		return false;
	copy_text(o->buf + o->n, c->text, c->len);
	o->n += c->len;
	return true;
}

/*
 * A straight run for the PC list: the text of the run from the same
 * place with the same code and length, when it is kept, is copied in
 * one go (16 bytes at a time, the last ones partly past its end); else
 * it is written and kept for the next time.
 */
static void __attribute__((noinline))
pcs_cached(struct nt_out *o, const struct nt_event *ev, uint64_t mask)
{
	struct run_text *c;
	uint64_t flushes;
	size_t start, len;

	if (ev->ninsn > RUN_TEXT / 4) {
		pcs_run(o, ev->from, ev->code, ev->ninsn, mask);
		return;
	}
	c = run_slot(o, ev->from);
	if (run_kept(c, ev)) {
		if (OUTBUF - o->n < RUN_TEXT)
			flush(o);
		copy_text(o->buf + o->n, c->text, c->len);
		o->n += c->len;
		return;
	}
	/* room for all its lines: the text is written in one piece */
	if (OUTBUF - o->n < ev->ninsn * PC_LINE)
		flush(o);
	start = o->n;
	flushes = o->flushes;
	pcs_run(o, ev->from, ev->code, ev->ninsn, mask);
	len = o->n - start;
	if (o->flushes != flushes || len > RUN_TEXT) {
		c->len = 0;
		return;
	}
	c->from = ev->from;
	c->code = ev->code;
	c->ninsn = (uint32_t)ev->ninsn;
	c->len = (uint32_t)len;
	memcpy(c->text, o->buf + start, len);
}

/* The PC list's events but straight runs (nt_out_event() takes those). */
static void pcs_event(struct nt_out *o, const struct nt_event *ev)
{
	/* an exception's instruction was executed, if not retired */
	if (ev->kind == NT_EV_TRAP && ev->itype == NT_ITYPE_EXCEPTION)
		put_hex(o, ev->from, '\n');
}

static const char *transfer_name(unsigned int itype)
{
	switch (itype) {
	case NT_ITYPE_BRANCH_TAKEN:
	case NT_ITYPE_BRANCH_NOT_TAKEN:
		return "branch";
	case NT_ITYPE_INDIRECT_CALL:
		return "indirect-call";
	case NT_ITYPE_DIRECT_CALL:
		return "call";
	case NT_ITYPE_INDIRECT_JUMP:
	case NT_ITYPE_OTHER_INDIRECT_JUMP:
	case NT_ITYPE_INDIRECT_3BIT:
		return "indirect-jump";
	case NT_ITYPE_DIRECT_JUMP:
	case NT_ITYPE_OTHER_DIRECT_JUMP:
		return "jump";
	case NT_ITYPE_COROUTINE_SWAP:
		return "coroutine-swap";
	case NT_ITYPE_RETURN:
		return "return";
	case NT_ITYPE_TRAP_RETURN:
		return "trap-return";
	case NT_ITYPE_EXCEPTION:
		return "exception";
	case NT_ITYPE_INTERRUPT:
		return "interrupt";
	default:
		return "none";
	}
}

static void branches_event(struct nt_out *o, const struct nt_event *ev)
{
	if (ev->kind == NT_EV_TRAP) {
		put_fmt(o, "0x%" PRIx64 " -> 0x%" PRIx64 " %s\n", ev->from,
			ev->to, transfer_name(ev->itype));
		return;
	}
	if (ev->kind != NT_EV_INSNS || ev->itype == NT_ITYPE_NONE)
		return;
	if (ev->flags & NT_EVF_NO_NEXT) {
		put_fmt(o, "0x%" PRIx64 " -> ? %s (trace stopped)\n", ev->last,
			transfer_name(ev->itype));
		return;
	}
	put_fmt(o, "0x%" PRIx64 " -> 0x%" PRIx64 " %s %s%s\n", ev->last, ev->to,
		transfer_name(ev->itype),
		(ev->flags & NT_EVF_TAKEN) ? "taken" : "not-taken",
		(ev->flags & NT_EVF_INFERRED) ? " inferred" : "");
}

static void ring_add(struct nt_out *o, uint64_t from, uint64_t to)
{
	o->ring[o->ring_pos].from = from;
	o->ring[o->ring_pos].to = to;
	o->ring_pos = (o->ring_pos + 1) % o->cfg.brstack_depth;
	if (o->ring_len < o->cfg.brstack_depth)
		o->ring_len++;
}

/* One perf-script sample: ip, then the branch stack newest first. */
static void brstack_sample(struct nt_out *o, uint64_t ip)
{
	unsigned int k;

	if (!o->ring_len)
		return;
	put_fmt(o, "%16" PRIx64, ip);
	for (k = 1; k <= o->ring_len; k++) {
		const struct br *b = &o->ring[(o->ring_pos + o->cfg.brstack_depth -
					       k) % o->cfg.brstack_depth];

		put_fmt(o, " 0x%" PRIx64 "/0x%" PRIx64 "/P/-/-/0", b->from,
			b->to);
	}
	put_str(o, "\n", 1);
}

static void brstack_event(struct nt_out *o, const struct nt_event *ev)
{
	uint64_t units = 0;

	switch (ev->kind) {
	case NT_EV_INSNS:
		if ((ev->flags & NT_EVF_TAKEN) && !(ev->flags & NT_EVF_NO_NEXT)) {
			ring_add(o, ev->last, ev->to);
			units = o->cfg.sample_branches ? 1 : 0;
		}
		if (!o->cfg.sample_branches)
			units = ev->ninsn;
		break;
	case NT_EV_TRAP:
		ring_add(o, ev->from, ev->to);
		units = o->cfg.sample_branches ? 1 : 0;
		break;
	case NT_EV_GAP:
	case NT_EV_STOP:
		/* branches from before a gap are not the sample's history */
		o->ring_len = 0;
		return;
	default:
		return;
	}
	o->since_sample += units;
	if (o->since_sample >= o->cfg.sample_period) {
		o->since_sample = 0;
		brstack_sample(o, ev->kind == NT_EV_INSNS ? ev->to : ev->to);
	}
}

static const char *const kind_names[] = {
	[NT_EV_INSNS] = "insns", [NT_EV_TRAP] = "trap", [NT_EV_SYNC] = "sync",
	[NT_EV_OWNERSHIP] = "ownership", [NT_EV_GAP] = "gap",
	[NT_EV_STOP] = "stop",
};

static void flow_event(struct nt_out *o, const struct nt_event *ev)
{
	put_fmt(o, "%8" PRIx64 " t=%-8" PRIu64 " src=%u %-9s ", ev->offset,
		ev->time, ev->src, kind_names[ev->kind]);
	switch (ev->kind) {
	case NT_EV_INSNS:
		put_fmt(o, "0x%" PRIx64 "..0x%" PRIx64 " (%" PRIu64 ")", ev->from,
			ev->last, ev->ninsn);
		if (ev->itype != NT_ITYPE_NONE) {
			if (ev->flags & NT_EVF_NO_NEXT)
				put_fmt(o, " %s -> ?", transfer_name(ev->itype));
			else
				put_fmt(o, " %s %s-> 0x%" PRIx64,
					transfer_name(ev->itype),
					(ev->flags & NT_EVF_INFERRED) ?
					"(inferred) " : "", ev->to);
			if (ev->itype == NT_ITYPE_BRANCH_TAKEN ||
			    ev->itype == NT_ITYPE_BRANCH_NOT_TAKEN)
				put_fmt(o, " %s", (ev->flags & NT_EVF_TAKEN) ?
					"taken" : "not-taken");
		}
		break;
	case NT_EV_TRAP:
		put_fmt(o, "%s at 0x%" PRIx64 " -> 0x%" PRIx64 " (B-TYPE %u)",
			transfer_name(ev->itype), ev->from, ev->to, ev->btype);
		break;
	case NT_EV_SYNC:
		put_fmt(o, "at 0x%" PRIx64 " (%s)", ev->to, nt_sync_name(ev->sync));
		break;
	case NT_EV_OWNERSHIP:
		put_fmt(o, "priv=%u context=0x%" PRIx64, ev->priv, ev->context);
		break;
	case NT_EV_GAP:
		put_fmt(o, "%s (pc 0x%" PRIx64 ")", ev->error ? ev->error : "",
			ev->from);
		break;
	case NT_EV_STOP:
		put_fmt(o, "evcode=%u after 0x%" PRIx64, ev->evcode, ev->from);
		break;
	}
	put_str(o, "\n", 1);
}

/* Bytes of Bluespec trace held before they go to the output. */
#define BSV_CHUNK OUTBUF

/* Hands the encoded bytes on, so memory stays flat however long the trace. */
static void bsv_drain(struct nt_out *o)
{
	const uint8_t *data;
	size_t len;

	data = nt_bsv_writer_data(&o->bsv, &len);
	put_str(o, (const char *)data, len);
	nt_bsv_writer_drain(&o->bsv);
}

/* Bluespec: each event needs its next pc, so write one behind. */
static void bsv_put(struct nt_out *o, const struct nt_bsv_event *ev)
{
	if (o->have_prev) {
		o->prev.next_pc = ev->pc;
		o->prev.next_pc_valid = true;
		if (nt_bsv_write(&o->bsv, &o->prev))
			o->failed = true;
		if (o->bsv.len >= BSV_CHUNK)
			bsv_drain(o);
	}
	o->prev = *ev;
	o->have_prev = true;
}

static void bluespec_event(struct nt_out *o, const struct nt_event *ev)
{
	struct nt_bsv_event b;
	const uint8_t *p = ev->code;
	uint64_t pc = ev->from, k;

	memset(&b, 0, sizeof(b));
	b.pc_valid = true;
	if (ev->kind == NT_EV_TRAP) {
		b.pc = ev->from;
		b.trap = true;
		b.interrupt = ev->itype != NT_ITYPE_EXCEPTION;
		if (!b.interrupt && p) {
			b.insn_size = (uint8_t)insn_size(p);
			memcpy(&b.insn, p, b.insn_size);
			b.cause = 8;
		}
		bsv_put(o, &b);
		return;
	}
	if (ev->kind != NT_EV_INSNS)
		return;
	for (k = 0; k < ev->ninsn; k++) {
		b.pc = pc;
		b.insn_size = (uint8_t)insn_size(p);
		b.insn = 0;
		memcpy(&b.insn, p, b.insn_size);
		bsv_put(o, &b);
		p += b.insn_size;
		pc += b.insn_size;
	}
}

struct nt_out *nt_out_new(const struct nt_out_cfg *cfg, FILE *f)
{
	struct nt_out *o;

	if (cfg->format > NT_OUT_BLUESPEC)
		return NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->cfg = *cfg;
	o->f = f;
	if (cfg->format == NT_OUT_PCS) {
		/* the writer's fast path does not test for it */
		o->runs = calloc(RUN_CACHE, sizeof(*o->runs));
		if (!o->runs) {
			free(o);
			return NULL;
		}
	}
	if (!o->cfg.brstack_depth)
		o->cfg.brstack_depth = 32;
	if (!o->cfg.sample_period)
		o->cfg.sample_period = 10000;
	if (cfg->format == NT_OUT_BRSTACK) {
		o->ring = calloc(o->cfg.brstack_depth, sizeof(*o->ring));
		if (!o->ring) {
			free(o);
			return NULL;
		}
	}
	if (cfg->format == NT_OUT_BLUESPEC) {
		struct nt_bsv_config bc;

		nt_bsv_config_rv64(&bc);
		if (cfg->isa & NT_ISA_RV32)
			bc.xlen = bc.flen = bc.mlen = 32;
		if (nt_bsv_writer_init(&o->bsv, &bc)) {
			free(o);
			return NULL;
		}
	}
	return o;
}

/* Every event but the PC list's straight runs. */
static void __attribute__((noinline))
other_event(struct nt_out *o, const struct nt_event *ev)
{
	switch (o->cfg.format) {
	case NT_OUT_PCS:
		pcs_event(o, ev);
		break;
	case NT_OUT_BRANCHES:
		branches_event(o, ev);
		break;
	case NT_OUT_BRSTACK:
		brstack_event(o, ev);
		break;
	case NT_OUT_FLOW:
		flow_event(o, ev);
		break;
	case NT_OUT_BLUESPEC:
		bluespec_event(o, ev);
		break;
	}
}

void nt_out_event(void *out, const struct nt_event *ev)
{
	struct nt_out *o = out;

	/* most calls: a straight run for the PC list, kept short */
	if (o->cfg.format == NT_OUT_PCS && ev->kind == NT_EV_INSNS) {
		if (ev->ninsn && !pcs_copy_kept(o, ev))
			pcs_cached(o, ev, (o->cfg.isa & NT_ISA_RV32) ?
					  0xffffffffull : ~0ull);
		return;
	}
	other_event(o, ev);
}

void nt_out_events(void *out, const struct nt_event *evs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		nt_out_event(out, &evs[i]);
}

int nt_out_finish(struct nt_out *o)
{
	if (o->cfg.format == NT_OUT_BLUESPEC) {
		if (o->have_prev) {
			o->prev.next_pc = o->prev.pc + o->prev.insn_size;
			o->prev.next_pc_valid = true;
			if (nt_bsv_write(&o->bsv, &o->prev))
				o->failed = true;
			o->have_prev = false;
		}
		bsv_drain(o);
	}
	flush(o);
	if (fflush(o->f))
		o->failed = true;
	return o->failed ? -1 : 0;
}

void nt_out_free(struct nt_out *o)
{
	if (!o)
		return;
	if (o->cfg.format == NT_OUT_BLUESPEC)
		nt_bsv_writer_free(&o->bsv);
	free(o->ring);
	free(o->runs);
	free(o);
}
