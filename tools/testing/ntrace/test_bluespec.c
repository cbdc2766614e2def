// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests for the Bluespec tandem trace reader/writer (bluespec.c).
 *
 * Build:
 *   gcc -std=c11 -Wall -Wextra -Werror -O2 -fsanitize=address,undefined \
 *       -I tools/lib/ntrace -I tools/testing/ntrace \
 *       tools/lib/ntrace/bluespec.c tools/testing/ntrace/test_bluespec.c \
 *       -o /tmp/tb && /tmp/tb
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bluespec.h"
#include "tap.h"

/* xorshift64*: fixed seed so failures reproduce. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static unsigned int rnd_below(unsigned int n)
{
	return (unsigned int)(rnd() % n);
}

struct run {
	struct nt_bsv_event ev[64];
	int nev;
	int nerr;
	size_t err_off[16];
	const char *err_msg[16];
	int calls;
	int stuck;		/* a call that neither advanced nor ended */
	int bad_off;		/* error offset outside the buffer */
};

/* Drain a reader, recording events and errors, checking progress. */
static void drain(const struct nt_bsv_config *cfg, const uint8_t *buf,
		  size_t len, struct run *out)
{
	struct nt_bsv_reader r;
	struct nt_bsv_event ev;
	size_t before;
	int ret;

	memset(out, 0, sizeof(*out));
	if (nt_bsv_reader_init(&r, cfg, buf, len)) {
		out->stuck = 1;
		return;
	}
	for (;;) {
		before = r.pos;
		ret = nt_bsv_next(&r, &ev);
		out->calls++;
		if (ret == 0)
			break;
		if (r.pos <= before)
			out->stuck = 1;
		if (ret > 0 && out->nev < 64)
			out->ev[out->nev] = ev;
		if (ret > 0)
			out->nev++;
		if (ret < 0) {
			if (r.err_off >= len || !r.err_msg)
				out->bad_off = 1;
			if (out->nerr < 16) {
				out->err_off[out->nerr] = r.err_off;
				out->err_msg[out->nerr] = r.err_msg;
			}
			out->nerr++;
		}
		if (out->stuck || out->calls > (int)len + 2)
			break;
	}
	if (out->calls > (int)len + 2)
		out->stuck = 1;
}

static int ev_equal(const struct nt_bsv_event *a, const struct nt_bsv_event *b)
{
	return a->pc == b->pc && a->next_pc == b->next_pc &&
	       a->cause == b->cause && a->tval == b->tval &&
	       a->insn == b->insn && a->insn_size == b->insn_size &&
	       a->priv == b->priv && a->pc_valid == b->pc_valid &&
	       a->next_pc_valid == b->next_pc_valid && a->trap == b->trap &&
	       a->interrupt == b->interrupt &&
	       a->tval_valid == b->tval_valid && a->priv_valid == b->priv_valid;
}

/* ------------------------------------------------------------------ */
/* Appendix C examples, byte for byte (rv64gc, MLEN 64). */

static const uint8_t ex_add[] = {		/* C.1 add gp, t0, t1 */
	0x01, 0x03, 0x11, 0xb3, 0x81, 0x62, 0x00,
	0x04, 0x03, 0x10, 0x34, 0x12, 0, 0, 0, 0, 0, 0, 0x02,
};
static const uint8_t ex_jr[] = {		/* C.2 jr 256(sp) */
	0x01, 0x07, 0x10, 0x00, 0x01, 0x00, 0x0c, 0, 0, 0, 0,
	0x11, 0x67, 0x00, 0x01, 0x10, 0x02,
};
static const uint8_t ex_fadd[] = {		/* C.3 fadd.s ft7, fa3, fa7 */
	0x01, 0x03, 0x11, 0xd3, 0xf3, 0x16, 0x01,
	0x04, 0x27, 0x10, 0xf9, 0xf4, 0xfe, 0x66, 0xff, 0xff, 0xff, 0xff,
	0x06, 0x03, 0x00, 0x01, 0x02,
};
static const uint8_t ex_csub[] = {		/* C.4 c.sub a0, a1 */
	0x01, 0x03, 0x10, 0x0d, 0x8d,
	0x04, 0x10, 0x10, 0x78, 0x56, 0x34, 0x12, 0xff, 0xff, 0xff, 0xff, 0x02,
};
/* C.5 lw tp, 8(t0), as printed: a 32-bit opcode behind the 16-bit item */
static const uint8_t ex_lw[] = {
	0x01, 0x03, 0x10, 0x03, 0xa2, 0x82, 0x00,
	0x04, 0x04, 0x10, 0xaa, 0x55, 0xaa, 0x55, 0xaa, 0x55, 0xaa, 0x55,
	0x07, 0x02, 0x08, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0x02,
};
static const uint8_t ex_csrrc[] = {		/* C.6 csrrc s1, mie, a1 */
	0x01, 0x03, 0x11, 0xf3, 0xb4, 0x45, 0x30,
	0x04, 0x09, 0x10, 0x88, 0x08, 0, 0, 0, 0, 0, 0,
	0x04, 0x04, 0x03, 0x80, 0x08, 0, 0, 0, 0, 0, 0, 0x02,
};
static const uint8_t ex_illegal[] = {		/* C.7 illegal instruction */
	0x01, 0x07, 0x10, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0,
	0x11, 0, 0, 0, 0,
	0x04, 0x41, 0x03, 0x34, 0x12, 0x08, 0, 0, 0, 0, 0,
	0x04, 0x42, 0x03, 0x02, 0, 0, 0, 0, 0, 0, 0,
	0x04, 0x00, 0x03, 0xb0, 0x18, 0, 0, 0x0a, 0, 0, 0,
	0x04, 0x43, 0x03, 0, 0, 0, 0, 0, 0, 0, 0,
	0x07, 0x01, 0x03, 0x02,
};
static const uint8_t ex_irq[] = {		/* C.8 interrupt */
	0x01, 0x07, 0x10, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0,
	0x04, 0x41, 0x03, 0x56, 0x12, 0x08, 0, 0, 0, 0, 0,
	0x04, 0x42, 0x03, 0x03, 0, 0, 0, 0, 0, 0, 0x80,
	0x04, 0x00, 0x03, 0xb0, 0x18, 0, 0, 0x0a, 0, 0, 0,
	0x04, 0x43, 0x03, 0, 0, 0, 0, 0, 0, 0, 0,
	0x07, 0x01, 0x03, 0x02,
};

static void test_examples(void)
{
	struct nt_bsv_config cfg;
	struct run r;
	uint8_t buf[256];
	const struct nt_bsv_event *e = r.ev;

	nt_bsv_config_rv64(&cfg);

	drain(&cfg, ex_add, sizeof(ex_add), &r);
	tap_ok(r.nev == 1 && !r.nerr && e->insn == 0x006281b3 &&
	       e->insn_size == 4 && !e->pc_valid && !e->next_pc_valid &&
	       !e->trap, "C.1 add: 32-bit insn, pc unknown without history");

	drain(&cfg, ex_jr, sizeof(ex_jr), &r);
	tap_ok(r.nev == 1 && !r.nerr && e->insn == 0x10010067 &&
	       e->next_pc_valid && e->next_pc == 0x0c000100,
	       "C.2 jr: new pc via the example's 0x10 identifier");

	/* C.2 then C.1: the absolute pc makes the increment resolvable */
	memcpy(buf, ex_jr, sizeof(ex_jr));
	memcpy(buf + sizeof(ex_jr), ex_add, sizeof(ex_add));
	drain(&cfg, buf, sizeof(ex_jr) + sizeof(ex_add), &r);
	tap_ok(r.nev == 2 && !r.nerr && r.ev[1].pc_valid &&
	       r.ev[1].pc == 0x0c000100 && r.ev[1].next_pc == 0x0c000104 &&
	       r.ev[1].offset == sizeof(ex_jr),
	       "C.2+C.1: running pc carried into the next group");

	drain(&cfg, ex_fadd, sizeof(ex_fadd), &r);
	tap_ok(r.nev == 1 && !r.nerr && e->insn == 0x0116f3d3 && e->insn_size == 4,
	       "C.3 fadd.s: FLEN register write and OR update skipped");

	drain(&cfg, ex_csub, sizeof(ex_csub), &r);
	tap_ok(r.nev == 1 && !r.nerr && e->insn == 0x8d0d && e->insn_size == 2,
	       "C.4 c.sub: 16-bit instruction");

	drain(&cfg, ex_lw, sizeof(ex_lw), &r);
	tap_ok(r.nerr >= 1 && r.err_off[0] == 5 && !r.stuck && !r.bad_off,
	       "C.5 as printed (opcode 0x10 with 4 bytes) is an error at offset 5");
	tap_diag("C.5 literal: %d error(s), first \"%s\" at %zu",
		 r.nerr, r.nerr ? r.err_msg[0] : "", r.nerr ? r.err_off[0] : 0);

	memcpy(buf, ex_lw, sizeof(ex_lw));
	buf[2] = NT_BSV_OP_INSTR32;
	drain(&cfg, buf, sizeof(ex_lw), &r);
	tap_ok(r.nev == 1 && !r.nerr && e->insn == 0x0082a203 && e->insn_size == 4,
	       "C.5 with the 32-bit opcode: paddr state skipped");

	drain(&cfg, ex_csrrc, sizeof(ex_csrrc), &r);
	tap_ok(r.nev == 1 && !r.nerr && e->insn == 0x3045b4f3 && !e->trap,
	       "C.6 csrrc: CSR write is not a trap");

	drain(&cfg, ex_illegal, sizeof(ex_illegal), &r);
	tap_ok(r.nev == 1 && !r.nerr && e->trap && !e->interrupt &&
	       e->cause == 2 && e->pc_valid && e->pc == 0x81234 &&
	       e->next_pc == 0x10000 && e->insn_size == 4 && e->insn == 0 &&
	       e->tval_valid && e->tval == 0 && e->priv_valid && e->priv == 3,
	       "C.7 illegal instruction: exception, pc from mepc");

	drain(&cfg, ex_irq, sizeof(ex_irq), &r);
	tap_ok(r.nev == 1 && !r.nerr && e->trap && e->interrupt &&
	       e->cause == 3 && e->pc == 0x81256 && e->insn_size == 0 &&
	       e->next_pc == 0x10000 && e->priv == 3,
	       "C.8 interrupt: no instruction, interrupt bit split off");

	/* C.7 after C.2: running pc wins over mepc when known */
	memcpy(buf, ex_jr, sizeof(ex_jr));
	memcpy(buf + sizeof(ex_jr), ex_illegal, sizeof(ex_illegal));
	drain(&cfg, buf, sizeof(ex_jr) + sizeof(ex_illegal), &r);
	tap_ok(r.nev == 2 && r.ev[1].pc == 0x0c000100,
	       "trap pc is the running pc when it is known");
}

/* ------------------------------------------------------------------ */
/* Every item type inside groups, plus reset and state-init groups. */

static size_t put(uint8_t *b, size_t n, const uint8_t *src, size_t k)
{
	memcpy(b + n, src, k);
	return n + k;
}

#define PUT(...) do {						\
	static const uint8_t t_[] = { __VA_ARGS__ };		\
	n = put(buf, n, t_, sizeof(t_));			\
} while (0)

static void test_all_items(void)
{
	struct nt_bsv_config cfg;
	struct run r;
	uint8_t buf[512];
	size_t n = 0;
	int op, ok;

	nt_bsv_config_rv64(&cfg);

	/* state-init group: program load writes memory and sets the pc */
	PUT(0x01, 0x0b, 0x08, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x21,
	    0xef, 0xbe, 0xad, 0xde, 0x09, 0x02,		/* store 32 + rsp */
	    0x07, 0x0a, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x02);
	/* ungrouped mtime and priv: applied, no event */
	PUT(0x07, 0x08, 1, 2, 3, 4, 5, 6, 7, 8, 0x07, 0x01, 0x03);
	/* insn with every kind of side item (begin implied-ends below) */
	PUT(0x01, 0x03, 0x11, 0x13, 0x00, 0x00, 0x00,
	    0x04, 0x01, 0x10, 1, 2, 3, 4, 5, 6, 7, 8,		/* ra */
	    0x04, 0x21, 0x10, 1, 2, 3, 4, 5, 6, 7, 8,		/* f1 */
	    0x05, 0x00, 0x0b, 0xff,				/* minstret-ish add */
	    0x06, 0x44, 0x03, 0x80,				/* mip OR */
	    0x07, 0x02, 1, 2, 3, 4, 5, 6, 7, 8,			/* paddr */
	    0x07, 0x03, 1, 2, 3, 4, 5, 6, 7, 8,			/* eaddr */
	    0x07, 0x04, 0xaa, 0x07, 0x05, 1, 2,
	    0x07, 0x06, 1, 2, 3, 4, 0x07, 0x07, 1, 2, 3, 4, 5, 6, 7, 8,
	    0x07, 0x09, 1, 2, 3, 4, 5, 6, 7, 8);		/* pc paddr */
	/* memory request/response for every operation, size 64 */
	for (op = 0; op <= 13; op++) {
		int wdata = op == 1 || op == 3 || (op >= 4 && op <= 12);
		int rdata = !(op == 1 || op == 3);

		buf[n++] = 0x08;
		memset(buf + n, 0x11, 8);
		n += 8;
		buf[n++] = (uint8_t)(op | 3 << 4);
		if (wdata) {
			memset(buf + n, 0x01, 8);	/* 0x01 inside payload */
			n += 8;
		}
		buf[n++] = 0x09;
		buf[n++] = 3;
		if (rdata) {
			memset(buf + n, 0x01, 8);
			n += 8;
		}
	}
	/* next group implies the end of the previous one */
	PUT(0x01, 0x03, 0x10, 0x01, 0x00, 0x0a);	/* hart reset, no end */
	PUT(0x01, 0x07, 0x0a, 0x00, 0x20, 0, 0, 0, 0, 0, 0, 0x02);
	PUT(0x01, 0x03, 0x10, 0x82, 0x80, 0x02);	/* c.ret-ish, pc+2 */

	drain(&cfg, buf, n, &r);
	ok = r.nev == 3 && !r.nerr && !r.stuck;
	ok = ok && r.ev[0].pc == 0x1000 && r.ev[0].next_pc == 0x1004 &&
	     r.ev[0].insn == 0x13;
	ok = ok && r.ev[1].insn == 0x0001 && r.ev[1].insn_size == 2 &&
	     r.ev[1].pc == 0x1004 && !r.ev[1].next_pc_valid;
	ok = ok && r.ev[2].pc == 0x2000 && r.ev[2].next_pc == 0x2002;
	tap_ok(ok, "every item type parsed and skipped (%d events, %d errors)",
	       r.nev, r.nerr);

	/* The same stream, response without a request */
	n = 0;
	PUT(0x01, 0x03, 0x11, 0x13, 0, 0, 0, 0x09, 0x03,
	    0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0x02);
	drain(&cfg, buf, n, &r);
	tap_ok(r.nerr == 1 && r.err_off[0] == 7 && r.nev == 0,
	       "orphan memory response is reported at its offset");

	n = 0;
	PUT(0x01, 0x03, 0x02, 0x01, 0x11, 1, 2, 3, 4, 0x02, 0x02);
	drain(&cfg, buf, n, &r);
	tap_ok(r.nerr == 2 && r.err_off[0] == 0 && r.err_off[1] == 10 &&
	       r.nev == 1 && !r.ev[0].pc_valid,
	       "incr pc without insn and stray end group are errors, reading goes on");

	/* RV32 with MLEN 34: 4-byte pc and register, 5-byte addresses */
	cfg.xlen = 32;
	cfg.flen = 64;
	cfg.mlen = 34;
	n = 0;
	PUT(0x01, 0x07, 0x0a, 0x00, 0x00, 0x00, 0x80, 0x02,
	    0x01, 0x03, 0x11, 0x13, 0, 0, 0,
	    0x04, 0x05, 0x10, 1, 2, 3, 4,
	    0x04, 0x22, 0x10, 1, 2, 3, 4, 5, 6, 7, 8,
	    0x07, 0x02, 1, 2, 3, 4, 5,
	    0x08, 1, 2, 3, 4, 5, 0x20, 0x09, 0x02, 1, 2, 3, 4, 0x02);
	drain(&cfg, buf, n, &r);
	tap_ok(r.nev == 1 && !r.nerr && r.ev[0].pc == 0x80000000 &&
	       r.ev[0].next_pc == 0x80000004,
	       "RV32/MLEN34 field widths");
}

/* ------------------------------------------------------------------ */
/* Random events through the writer and back. */

static void random_events(const struct nt_bsv_config *cfg,
			  struct nt_bsv_event *ev, int count)
{
	const uint64_t mask = cfg->xlen == 64 ? UINT64_MAX :
			      ((uint64_t)1 << cfg->xlen) - 1;
	uint64_t pc = (rnd() & mask) & ~(uint64_t)1;

	for (int i = 0; i < count; i++) {
		struct nt_bsv_event *e = &ev[i];
		unsigned int k = rnd_below(100);

		memset(e, 0, sizeof(*e));
		if (k < 3)	/* gap in the caller's sequence */
			pc = (rnd() & mask) & ~(uint64_t)1;
		e->pc = pc;
		e->pc_valid = e->next_pc_valid = true;
		e->insn_size = rnd_below(2) ? 4 : 2;
		e->insn = (uint32_t)rnd();
		if (e->insn_size == 2)
			e->insn &= 0xffff;
		if (k < 10) {
			e->trap = true;
			e->interrupt = rnd_below(2);
			if (e->interrupt) {
				e->insn_size = 0;
				e->insn = 0;
			}
			e->cause = rnd() & (mask >> 1);
			if (rnd_below(2)) {
				e->tval_valid = true;
				e->tval = rnd() & mask;
			}
			e->next_pc = (rnd() & mask) & ~(uint64_t)3;
		} else if (k < 35) {
			e->next_pc = (rnd() & mask) & ~(uint64_t)1;
		} else {
			e->next_pc = (pc + e->insn_size) & mask;
		}
		if (rnd_below(8) == 0) {
			static const uint8_t privs[] = { 0, 1, 3 };

			e->priv_valid = true;
			e->priv = privs[rnd_below(3)];
		}
		pc = e->next_pc;
	}
}

static int roundtrip(const struct nt_bsv_config *cfg, unsigned int sync,
		     int count, size_t *bytes)
{
	struct nt_bsv_event *in = calloc((size_t)count, sizeof(*in));
	struct nt_bsv_writer w;
	struct nt_bsv_reader r;
	struct nt_bsv_event ev;
	const uint8_t *data;
	size_t len;
	int i = 0, ret, ok = 1;

	if (!in || nt_bsv_writer_init(&w, cfg))
		return 0;
	w.sync_interval = sync;
	random_events(cfg, in, count);
	for (i = 0; i < count; i++)
		if (nt_bsv_write(&w, &in[i]))
			ok = 0;
	data = nt_bsv_writer_data(&w, &len);
	*bytes = len;
	nt_bsv_reader_init(&r, cfg, data, len);
	i = 0;
	while ((ret = nt_bsv_next(&r, &ev)) != 0) {
		if (ret < 0 || i >= count || !ev_equal(&ev, &in[i])) {
			ok = 0;
			break;
		}
		i++;
	}
	if (i != count)
		ok = 0;
	nt_bsv_writer_free(&w);
	free(in);
	return ok;
}

static void test_roundtrip(void)
{
	struct nt_bsv_config cfg;
	size_t bytes = 0;
	int ok = 1, iter;

	nt_bsv_config_rv64(&cfg);
	for (iter = 0; iter < 200 && ok; iter++)
		ok = roundtrip(&cfg, iter % 3 ? 0 : 16, 500, &bytes);
	tap_ok(ok, "rv64 writer->reader round trip, 200 x 500 random events (last %zu bytes)",
	       bytes);

	cfg.xlen = 32;
	cfg.flen = 32;
	cfg.mlen = 34;
	ok = 1;
	for (iter = 0; iter < 200 && ok; iter++)
		ok = roundtrip(&cfg, iter % 3 ? 0 : 7, 500, &bytes);
	tap_ok(ok, "rv32 writer->reader round trip, 200 x 500 random events");
}

/*
 * Draining the writer every few events gives the bytes of one undrained
 * run, and the buffer stays small however many events go through.
 */
static void test_drain(void)
{
	enum { COUNT = 20000, CHUNK = 4096 };
	struct nt_bsv_event *in = calloc(COUNT, sizeof(*in));
	struct nt_bsv_writer whole, part;
	struct nt_bsv_config cfg;
	uint8_t *joined = NULL;
	size_t wlen, plen, n = 0, maxcap = 0;
	const uint8_t *wdata, *pdata;
	int i, ok = in != NULL;

	nt_bsv_config_rv64(&cfg);
	ok = ok && !nt_bsv_writer_init(&whole, &cfg) &&
	     !nt_bsv_writer_init(&part, &cfg);
	if (ok) {
		whole.sync_interval = part.sync_interval = 16;
		random_events(&cfg, in, COUNT);
	}
	for (i = 0; ok && i < COUNT; i++) {
		ok = !nt_bsv_write(&whole, &in[i]) && !nt_bsv_write(&part, &in[i]);
		pdata = nt_bsv_writer_data(&part, &plen);
		if (ok && (plen >= CHUNK || i == COUNT - 1)) {
			uint8_t *j = realloc(joined, n + plen);

			ok = j != NULL;
			if (ok) {
				memcpy(j + n, pdata, plen);
				joined = j;
				n += plen;
				nt_bsv_writer_drain(&part);
			}
		}
		if (part.cap > maxcap)
			maxcap = part.cap;
	}
	wdata = ok ? nt_bsv_writer_data(&whole, &wlen) : NULL;
	tap_ok(ok && wlen == n && !memcmp(wdata, joined, n),
	       "drained in %d-byte pieces, %d events give the same %zu bytes",
	       CHUNK, COUNT, n);
	tap_ok(ok && maxcap <= 2 * CHUNK && maxcap < wlen / 8,
	       "and the drained writer's buffer stays at %zu bytes", maxcap);
	nt_bsv_writer_free(&whole);
	nt_bsv_writer_free(&part);
	free(joined);
	free(in);
}

static void test_writer_rejects(void)
{
	struct nt_bsv_config cfg;
	struct nt_bsv_writer w;
	struct nt_bsv_event e;
	int bad = 0;

	cfg.xlen = 32;
	cfg.flen = 0;
	cfg.mlen = 32;
	nt_bsv_writer_init(&w, &cfg);
	memset(&e, 0, sizeof(e));
	e.pc_valid = e.next_pc_valid = true;
	e.insn_size = 4;
	e.pc = 0x100000000ull;			/* > XLEN */
	bad += nt_bsv_write(&w, &e) == -1;
	e.pc = 0x1000;
	e.insn_size = 3;
	bad += nt_bsv_write(&w, &e) == -1;
	e.insn_size = 0;			/* no insn and no trap */
	bad += nt_bsv_write(&w, &e) == -1;
	e.insn_size = 4;
	e.trap = e.interrupt = true;		/* interrupt with insn */
	bad += nt_bsv_write(&w, &e) == -1;
	e.insn_size = 0;
	e.cause = 0x80000000u;			/* collides with the flag */
	bad += nt_bsv_write(&w, &e) == -1;
	e.cause = 7;
	bad += nt_bsv_write(&w, &e) == 0;
	tap_ok(bad == 6 && w.len > 0, "writer rejects events it cannot represent");
	nt_bsv_writer_free(&w);

	cfg.mlen = 65;
	tap_ok(nt_bsv_writer_init(&w, &cfg) == -1, "bad configuration rejected");
}

/* ------------------------------------------------------------------ */
/* Damaged input. */

static uint8_t *sample_stream(const struct nt_bsv_config *cfg, unsigned int sync,
			      int count, struct nt_bsv_event *ev, size_t *len,
			      struct nt_bsv_writer *w)
{
	nt_bsv_writer_init(w, cfg);
	w->sync_interval = sync;
	random_events(cfg, ev, count);
	for (int i = 0; i < count; i++)
		nt_bsv_write(w, &ev[i]);
	return (uint8_t *)nt_bsv_writer_data(w, len);
}

static void test_truncation(void)
{
	struct nt_bsv_config cfg;
	struct nt_bsv_writer w;
	struct nt_bsv_event ev[40];
	struct run r;
	uint8_t *data;
	size_t len, cut;
	int ok = 1, prefix_ok = 1;

	nt_bsv_config_rv64(&cfg);
	data = sample_stream(&cfg, 0, 40, ev, &len, &w);
	for (cut = 0; cut < len; cut++) {
		drain(&cfg, data, cut, &r);
		if (r.stuck || r.bad_off || r.nerr > 1)
			ok = 0;
		/* a cut exactly at a group boundary is clean */
		if (cut && data[cut - 1] != NT_BSV_OP_END_GROUP && r.nerr != 1)
			ok = 0;
		for (int i = 0; i < r.nev && i < 40; i++)
			if (!ev_equal(&r.ev[i], &ev[i]))
				prefix_ok = 0;
	}
	tap_ok(ok, "every truncation of a %zu-byte stream: one error at most, offset in range",
	       len);
	tap_ok(prefix_ok, "events before the cut are decoded unchanged");
	nt_bsv_writer_free(&w);
}

static void test_garbage(void)
{
	struct nt_bsv_config cfg;
	struct nt_bsv_writer w;
	struct nt_bsv_event ev[40];
	struct run r;
	uint8_t *data, *buf;
	size_t len, at, i, bound[40], nb, k;
	int ok = 1, seen = 0, recovered = 1;

	nt_bsv_config_rv64(&cfg);
	data = sample_stream(&cfg, 4, 40, ev, &len, &w);
	buf = malloc(len + 1);
	/* true record boundaries, from a clean decode */
	drain(&cfg, data, len, &r);
	nb = 0;
	for (i = 1; i < (size_t)r.nev && i < 40; i++)
		bound[nb++] = r.ev[i].offset;
	/* Insert an unknown opcode before each record in turn. */
	for (k = 0; k < nb; k++) {
		at = bound[k];
		memcpy(buf, data, at);
		buf[at] = 0xee;
		memcpy(buf + at + 1, data + at, len - at);
		drain(&cfg, buf, len + 1, &r);
		seen++;
		if (r.stuck || r.nerr != 1 || r.err_off[0] != at)
			ok = 0;
		/* all events survive; only pc knowledge may be lost */
		if (r.nev != 40)
			recovered = 0;
		for (i = 0; i < (size_t)r.nev && i < 40; i++)
			if (r.ev[i].insn != ev[i].insn || r.ev[i].trap != ev[i].trap)
				recovered = 0;
	}
	tap_ok(ok && seen > 0, "garbage byte before %d records: one error at its offset", seen);
	tap_ok(recovered, "reader resynchronises at the next begin group");

	/* Garbage inside a group: the record is lost, later ones are not. */
	ok = 1;
	for (k = 0; k < nb; k++) {
		at = bound[k] + 1;
		memcpy(buf, data, len);
		buf[at] = 0xee;
		drain(&cfg, buf, len, &r);
		if (r.stuck || r.nerr < 1 || r.err_off[0] != at || r.nev < 30)
			ok = 0;
	}
	tap_ok(ok, "corrupted opcode inside a group: error at its offset, rest decoded");
	free(buf);
	nt_bsv_writer_free(&w);
}

static void test_fuzz(void)
{
	struct nt_bsv_config cfg[2];
	struct nt_bsv_writer w;
	struct nt_bsv_event ev[40];
	struct run r;
	uint8_t buf[2048], *data;
	size_t len, n, j;
	long iter, stuck = 0, badoff = 0, events = 0, errors = 0;

	nt_bsv_config_rv64(&cfg[0]);
	cfg[1].xlen = 32;
	cfg[1].flen = 0;
	cfg[1].mlen = 34;
	data = sample_stream(&cfg[0], 5, 40, ev, &len, &w);

	for (iter = 0; iter < 100000; iter++) {
		const struct nt_bsv_config *c = &cfg[iter & 1];

		if (iter % 4 == 3 && len <= sizeof(buf)) {
			/* mutate a valid stream: flips, overwrites, cut */
			n = len;
			memcpy(buf, data, n);
			for (j = rnd_below(4) + 1; j; j--)
				buf[rnd_below((unsigned int)n)] = (uint8_t)rnd();
			n = rnd_below((unsigned int)n) + 1;
			c = &cfg[0];
		} else {
			/* random bytes biased towards valid opcodes */
			n = rnd_below(256);
			for (j = 0; j < n; j++)
				buf[j] = (uint8_t)(rnd_below(3) ? rnd_below(18) : rnd());
		}
		drain(c, buf, n, &r);
		stuck += r.stuck;
		badoff += r.bad_off;
		events += r.nev;
		errors += r.nerr;
	}
	tap_ok(!stuck && !badoff, "fuzz: 1e5 inputs, no stall, error offsets in range");
	tap_diag("fuzz: %ld events, %ld errors decoded", events, errors);
	nt_bsv_writer_free(&w);

	/* NULL/empty buffers */
	tap_ok(nt_bsv_reader_init((struct nt_bsv_reader[1]){ 0 }, &cfg[0], NULL, 0) == 0,
	       "empty buffer accepted");
}

int main(void)
{
	test_examples();
	test_all_items();
	test_roundtrip();
	test_drain();
	test_writer_rejects();
	test_truncation();
	test_garbage();
	test_fuzz();
	return tap_done();
}
