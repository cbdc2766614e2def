// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Encoder model tests on hand-made record streams: the spec's worked
 * examples (sections 7.3, 7.2) and each trTe* option.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"
#include "tap.h"
#include "xorshift.h"

#define MAXM 256

static struct nt_msg msgs[MAXM];
static size_t nmsgs;

static struct nt_record R(uint64_t addr, unsigned int size, unsigned int itype)
{
	struct nt_record r = { .addr = addr, .size = (uint8_t)size,
			       .itype = (uint8_t)itype };
	return r;
}

/* Encode recs from a fresh start, stop with evcode, parse the bytes. */
static size_t run(const struct nt_encoder_cfg *cfg, const struct nt_record *recs,
		  size_t n, unsigned int start, unsigned int evcode)
{
	const char *err = NULL;
	struct nt_encoder *e = nt_encoder_new(cfg, &err);
	struct nt_reader *r;
	const uint8_t *out;
	size_t len, i;

	nmsgs = 0;
	if (!e) {
		tap_diag("encoder config rejected: %s", err);
		return 0;
	}
	nt_encoder_start(e, start);
	for (i = 0; i < n; i++)
		nt_encoder_retire(e, &recs[i]);
	nt_encoder_stop(e, evcode, n ? recs[n - 1].tstamp + 1 : 1);
	out = nt_encoder_output(e, &len);
	r = nt_reader_new(&cfg->stream);
	nt_reader_feed(r, out, len);
	nt_reader_finish(r);
	while (nmsgs < MAXM && nt_reader_next(r, &msgs[nmsgs]))
		nmsgs++;
	nt_reader_free(r);
	nt_encoder_free(e);
	return nmsgs;
}

static void dump_msgs(void)
{
	char line[512];

	for (size_t i = 0; i < nmsgs; i++) {
		nt_msg_format(&msgs[i], line, sizeof(line));
		tap_diag("  %s", line);
	}
}

static int expect(int ok, const char *what)
{
	if (!tap_ok(ok, "%s", what))
		dump_msgs();
	return ok;
}

static bool is(size_t i, unsigned int tcode)
{
	return i < nmsgs && !msgs[i].err && msgs[i].tcode == tcode;
}

/* Section 7.3 code: 0x100 c.add, 0x102 b 0x200, 0x106 add, 0x10a b 0x300,
 * 0x10e c.add, 0x110 add, 0x114 c.ebreak; 0x200 c.add; 0x300 add. */
static void icnt_examples(void)
{
	struct nt_encoder_cfg cfg;
	struct nt_record run1[] = {
		R(0x100, 2, 0), R(0x102, 4, NT_ITYPE_BRANCH_TAKEN), R(0x200, 2, 0),
	};
	struct nt_record run2[] = {
		R(0x100, 2, 0), R(0x102, 4, NT_ITYPE_BRANCH_NOT_TAKEN),
		R(0x106, 4, 0), R(0x10a, 4, NT_ITYPE_BRANCH_TAKEN), R(0x300, 4, 0),
	};
	struct nt_record run3[] = {
		R(0x100, 2, 0), R(0x102, 4, NT_ITYPE_BRANCH_NOT_TAKEN),
		R(0x106, 4, 0), R(0x10a, 4, NT_ITYPE_BRANCH_NOT_TAKEN),
		R(0x10e, 2, 0), R(0x110, 4, 0),
	};

	nt_encoder_cfg_default(&cfg);
	cfg.mode = NT_MODE_BTM;
	run(&cfg, run1, 3, NT_SYNC_DEBUG_EXIT, NT_EVCODE_DEBUG_ENTRY);
	expect(nmsgs == 3 && is(0, NT_TCODE_PROG_TRACE_SYNC) &&
	       msgs[0].sync == 3 && msgs[0].icnt == 0 &&
	       msgs[0].addr_field == 0x80 &&
	       is(1, NT_TCODE_DIRECT_BRANCH) && msgs[1].icnt == 3 &&
	       is(2, NT_TCODE_PROG_TRACE_CORRELATION) && msgs[2].icnt == 1 &&
	       msgs[2].cdf == 0 && msgs[2].evcode == 0,
	       "BTM 7.3 run 1: sync F-ADDR 0x80, DirectBranch I-CNT 3, correlation I-CNT 1");
	run(&cfg, run2, 5, NT_SYNC_DEBUG_EXIT, NT_EVCODE_DEBUG_ENTRY);
	expect(nmsgs == 3 && is(1, NT_TCODE_DIRECT_BRANCH) &&
	       msgs[1].icnt == 7 && msgs[2].icnt == 2,
	       "BTM 7.3 run 2: DirectBranch I-CNT 7, correlation I-CNT 2");
	run(&cfg, run3, 6, NT_SYNC_DEBUG_EXIT, NT_EVCODE_DEBUG_ENTRY);
	expect(nmsgs == 2 && is(1, NT_TCODE_PROG_TRACE_CORRELATION) &&
	       msgs[1].icnt == 10,
	       "BTM 7.3 run 3: correlation I-CNT 10");

	cfg.mode = NT_MODE_HTM;
	run(&cfg, run1, 3, NT_SYNC_DEBUG_EXIT, NT_EVCODE_DEBUG_ENTRY);
	expect(nmsgs == 2 && msgs[1].icnt == 4 && msgs[1].hist == 0x3 &&
	       msgs[1].cdf == 1,
	       "HTM 7.3 run 1: I-CNT 4, HIST 0x3");
	run(&cfg, run2, 5, NT_SYNC_DEBUG_EXIT, NT_EVCODE_DEBUG_ENTRY);
	expect(nmsgs == 2 && msgs[1].icnt == 9 && msgs[1].hist == 0x5,
	       "HTM 7.3 run 2: I-CNT 9, HIST 0x5");
	run(&cfg, run3, 6, NT_SYNC_DEBUG_EXIT, NT_EVCODE_DEBUG_ENTRY);
	expect(nmsgs == 2 && msgs[1].icnt == 10 && msgs[1].hist == 0x4,
	       "HTM 7.3 run 3: I-CNT 10, HIST 0x4");
}

static void icnt_full_example(void)
{
	/* section 7.3.3: 4-bit I-CNT with overflow flag, HTM */
	struct nt_record recs[] = {
		R(0x100, 2, 0), R(0x102, 4, NT_ITYPE_BRANCH_NOT_TAKEN),
		R(0x106, 4, 0), R(0x10a, 4, 0), R(0x10e, 4, 0), R(0x112, 4, 0),
		R(0x116, 4, 0), R(0x11a, 2, 0),
	};
	struct nt_encoder_cfg cfg;

	nt_encoder_cfg_default(&cfg);
	cfg.icnt_bits = 4;
	run(&cfg, recs, 8, NT_SYNC_DEBUG_EXIT, NT_EVCODE_DEBUG_ENTRY);
	expect(nmsgs == 3 && is(0, NT_TCODE_PROG_TRACE_SYNC) &&
	       msgs[0].addr_field == 0x80 &&
	       is(1, NT_TCODE_RESOURCE_FULL) && msgs[1].rcode == 0 &&
	       msgs[1].rdata[0] == 9 &&
	       is(2, NT_TCODE_PROG_TRACE_CORRELATION) && msgs[2].icnt == 5 &&
	       msgs[2].hist == 0x2 && msgs[2].cdf == 1,
	       "I-CNT full example: ResourceFull RDATA 9, correlation I-CNT 5 HIST 0x2");
}

static void hist_examples(void)
{
	static const struct {
		const char *pattern;
		uint64_t hist;
	} ex[] = {
		{ "01", 0x5 }, { "111", 0xf }, { "0000", 0x10 }, { "", 0x1 },
	};
	struct nt_encoder_cfg cfg;
	struct nt_record recs[8];

	nt_encoder_cfg_default(&cfg);
	for (size_t k = 0; k < sizeof(ex) / sizeof(ex[0]); k++) {
		size_t n = strlen(ex[k].pattern);

		for (size_t i = 0; i < n; i++)
			recs[i] = R(0x100 + 4 * i, 4, ex[k].pattern[i] == '1' ?
				    NT_ITYPE_BRANCH_TAKEN :
				    NT_ITYPE_BRANCH_NOT_TAKEN);
		recs[n] = R(0x200, 4, 0);
		run(&cfg, recs, n + 1, NT_SYNC_TRACE_ENABLE,
		    NT_EVCODE_TRACE_DISABLED);
		tap_ok(nmsgs == 2 && msgs[1].hist == ex[k].hist,
		       "HIST of branches '%s' is 0x%" PRIx64, ex[k].pattern,
		       ex[k].hist);
	}
}

static void hist_full_and_repeat(void)
{
	struct nt_encoder_cfg cfg;
	struct nt_record recs[64];
	size_t i;

	/* a 4-bit HIST register holds three outcomes */
	for (i = 0; i < 20; i++)
		recs[i] = R(0x100, 4, (i % 3 == 2) ? NT_ITYPE_BRANCH_NOT_TAKEN :
			    NT_ITYPE_BRANCH_TAKEN);
	nt_encoder_cfg_default(&cfg);
	cfg.hist_bits = 4;
	run(&cfg, recs, 20, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	{
		size_t rf = 0, ok = 1;

		for (i = 1; i + 1 < nmsgs; i++) {
			ok &= is(i, NT_TCODE_RESOURCE_FULL) &&
			      msgs[i].rcode == 1 && msgs[i].rdata[0] == 0xe;
			rf++;
		}
		expect(rf == 6 && ok && msgs[nmsgs - 1].hist == 0x7,
		       "4-bit HIST: six ResourceFull 0xE, correlation HIST 0x7");
	}
	cfg.repeat_history = true;
	run(&cfg, recs, 20, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 3 && is(1, NT_TCODE_RESOURCE_FULL) &&
	       msgs[1].rcode == 2 && msgs[1].rdata[0] == 0xe &&
	       msgs[1].rdata[1] == 6 && msgs[2].hist == 0x7,
	       "repeated history: the six registers in one RCODE 2, "
	       "HREPEAT 6");
	cfg.hrepeat_bits = 2;
	run(&cfg, recs, 20, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	{
		uint64_t total = 0;

		for (i = 0; i < nmsgs; i++)
			if (is(i, NT_TCODE_RESOURCE_FULL))
				total += msgs[i].rcode == 2 ? msgs[i].rdata[1] : 1;
		expect(total == 6, "2-bit HREPEAT splits, six patterns in total");
	}
}

/* ---- repeated history: periods --------------------------------------- */

/*
 * The branch history all messages carry, in order, as '0' and '1' (RCODE 2
 * patterns as many times as HREPEAT says); its length.
 */
static size_t history_of(char *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < nmsgs; i++) {
		const struct nt_msg *m = &msgs[i];
		uint64_t h, rep = 1;
		int top;

		if (m->err)
			continue;
		if (m->tcode == NT_TCODE_RESOURCE_FULL &&
		    (m->rcode == NT_RCODE_HIST ||
		     m->rcode == NT_RCODE_HIST_REPEAT)) {
			h = m->rdata[0];
			if (m->rcode == NT_RCODE_HIST_REPEAT)
				rep = m->rdata[1];
		} else if (m->fields & NT_F_HIST) {
			h = m->hist;
		} else {
			continue;
		}
		if (!h)
			continue;
		top = 63 - __builtin_clzll(h);
		for (uint64_t r = 0; r < rep; r++)
			for (int b = top - 1; b >= 0; b--)
				if (n < max)
					out[n++] = (char)('0' + ((h >> b) & 1));
	}
	out[n < max ? n : max - 1] = 0;
	return n;
}

#define MAXB	4096

/*
 * Branches with outcomes bits ('1' taken), one to an instruction, then
 * the run ends: whether the messages carry exactly that history. The
 * bytes the encoder wrote in *bytes.
 */
static bool carries(const struct nt_encoder_cfg *cfg, const char *bits,
		    size_t *bytes)
{
	static struct nt_record recs[MAXB + 1];
	static char got[MAXB + 1];
	struct nt_encoder *e = nt_encoder_new(cfg, NULL);
	size_t n = strlen(bits), i, len;
	struct nt_reader *r;

	for (i = 0; i < n; i++)
		recs[i] = R(0x100, 4, bits[i] == '1' ? NT_ITYPE_BRANCH_TAKEN :
			    NT_ITYPE_BRANCH_NOT_TAKEN);
	nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
	for (i = 0; i < n; i++)
		nt_encoder_retire(e, &recs[i]);
	nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, n + 1);
	nt_encoder_output(e, &len);
	*bytes = len;
	r = nt_reader_new(&cfg->stream);
	nt_reader_feed(r, nt_encoder_output(e, &len), len);
	nt_reader_finish(r);
	nmsgs = 0;
	while (nmsgs < MAXM && nt_reader_next(r, &msgs[nmsgs]))
		nmsgs++;
	nt_reader_free(r);
	nt_encoder_free(e);
	return history_of(got, sizeof(got)) == n && !strcmp(got, bits);
}

/* pattern repeated to n outcomes, after prefix */
static const char *periodic(const char *prefix, const char *pattern,
			    size_t n)
{
	static char buf[MAXB + 1];
	size_t i, k = strlen(prefix), p = strlen(pattern);

	memcpy(buf, prefix, k);
	for (i = 0; i < n; i++)
		buf[k + i] = pattern[i % p];
	buf[k + n] = 0;
	return buf;
}

static size_t count_rf(unsigned int rcode)
{
	size_t n = 0;

	for (size_t i = 0; i < nmsgs; i++)
		n += is(i, NT_TCODE_RESOURCE_FULL) && msgs[i].rcode == rcode;
	return n;
}

static void repeat_periods(void)
{
	struct nt_encoder_cfg cfg;
	size_t bytes, plain, i;
	uint64_t rng = 11;
	static char rnd[MAXB + 1];
	bool ok;

	nt_encoder_cfg_default(&cfg);
	cfg.repeat_history = true;

	/* five branches a period: never in step with a 31-bit HIST */
	ok = carries(&cfg, periodic("", "11110", 1000), &bytes);
	expect(ok && nmsgs == 3 && is(1, NT_TCODE_RESOURCE_FULL) &&
	       msgs[1].rcode == 2 && msgs[1].rdata[0] == 0x3e &&
	       msgs[1].rdata[1] == 198 && msgs[2].hist == 0x7de,
	       "period 5: one RCODE 2 of pattern 11110, HREPEAT 198, the "
	       "last two periods in the final HIST");

	/* a period longer than half a register: found across two */
	ok = carries(&cfg, periodic("", "110101110110111011110111101", 2700),
		     &bytes);
	expect(ok && count_rf(NT_RCODE_HIST_REPEAT) == 1 &&
	       count_rf(NT_RCODE_HIST) == 0 && msgs[1].rdata[0] ==
	       ((1ull << 27) | 0x6bb77bd) && msgs[1].rdata[1] == 100,
	       "period 27: one RCODE 2 of the 27 outcomes, HREPEAT 100");

	/* a loop that starts inside a register is caught in that register */
	ok = carries(&cfg, periodic("0110", "1", 2000), &bytes);
	expect(ok && count_rf(NT_RCODE_HIST) == 1 &&
	       msgs[1].rcode == 1 && msgs[1].rdata[0] == 0x16 &&
	       count_rf(NT_RCODE_HIST_REPEAT) == 1 && msgs[2].rdata[0] == 0x3,
	       "bits before a loop go out as RCODE 1 0x16, the loop as RCODE "
	       "2 of pattern 1");

	/* loops one after the other, each its own pattern */
	{
		static char two[MAXB + 1];

		strcpy(two, periodic("", "110", 600));
		strcat(two, periodic("", "1110100", 700));
		ok = carries(&cfg, two, &bytes);
		expect(ok && count_rf(NT_RCODE_HIST_REPEAT) == 2 &&
		       bytes < 30,
		       "two loops: two RCODE 2, under 30 bytes in all");
	}

	/* no pattern: what full registers cost, to the byte */
	for (i = 0; i < 31 * 60; i++)
		rnd[i] = (char)('0' + (xorshift64(&rng) & 1));
	rnd[i] = 0;
	ok = carries(&cfg, rnd, &bytes);
	cfg.repeat_history = false;
	ok = carries(&cfg, rnd, &plain) && ok;
	tap_ok(ok && bytes <= plain,
	       "random outcomes: %zu bytes with repeated history, %zu "
	       "without", bytes, plain);
	cfg.repeat_history = true;

	/* HREPEAT of two bits: several messages, each count at most 3 */
	cfg.hrepeat_bits = 2;
	ok = carries(&cfg, periodic("", "10", 400), &bytes);
	for (i = 0; i < nmsgs; i++)
		ok &= !is(i, NT_TCODE_RESOURCE_FULL) || msgs[i].rcode != 2 ||
		      msgs[i].rdata[1] <= 3;
	expect(ok, "2-bit HREPEAT: period 2 split in counts of at most 3");

	/* narrow HIST registers, every width and period */
	ok = true;
	for (unsigned int w = 2; w <= 32; w++) {
		for (unsigned int p = 1; p <= 12; p++) {
			char pat[16];

			for (i = 0; i < p; i++)
				pat[i] = (char)('0' + (xorshift64(&rng) & 1));
			pat[p] = 0;
			cfg.hist_bits = (uint8_t)w;
			cfg.hrepeat_bits = (uint8_t)(1 + (w + p) % 18);
			if (!carries(&cfg, periodic(pat, pat, 300 + w), &bytes)) {
				tap_diag("HIST %u bits, pattern %s", w, pat);
				ok = false;
			}
		}
	}
	tap_ok(ok, "HIST of 2 to 32 bits, periods of 1 to 12, HREPEAT of 1 "
	       "to 18 bits: the history comes back");
}

static void implicit_return(void)
{
	struct nt_encoder_cfg cfg;
	/* call f at 0x100 -> 0x200; f returns to 0x104; then a bad return */
	struct nt_record recs[] = {
		R(0x100, 4, NT_ITYPE_DIRECT_CALL), R(0x200, 4, 0),
		R(0x204, 2, NT_ITYPE_RETURN), R(0x104, 4, 0),
		R(0x108, 4, NT_ITYPE_DIRECT_CALL), R(0x200, 2, NT_ITYPE_RETURN),
		R(0x400, 4, 0),
	};
	size_t n = sizeof(recs) / sizeof(recs[0]);
	unsigned int mode;

	nt_encoder_cfg_default(&cfg);
	run(&cfg, recs, n, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 4 && is(1, NT_TCODE_INDIRECT_BRANCH) &&
	       msgs[1].target == 0x104 && is(2, NT_TCODE_INDIRECT_BRANCH) &&
	       msgs[2].target == 0x400,
	       "no implicit return: both returns reported");
	for (mode = 1; mode <= 3; mode++) {
		cfg.implicit_return = (uint8_t)mode;
		run(&cfg, recs, n, NT_SYNC_TRACE_ENABLE,
		    NT_EVCODE_TRACE_DISABLED);
		if (mode == 1)
			expect(nmsgs == 2,
			       "implicit return mode 1: counter hides both returns");
		else
			expect(nmsgs == 3 && is(1, NT_TCODE_INDIRECT_BRANCH) &&
			       msgs[1].target == 0x400 && msgs[1].icnt == 10,
			       mode == 2 ?
			       "implicit return mode 2: matching return hidden, wrong one reported" :
			       "implicit return mode 3: matching return hidden, wrong one reported");
	}
	/* a stack of depth 1 forgets the outer call */
	{
		struct nt_record nest[] = {
			R(0x100, 4, NT_ITYPE_DIRECT_CALL),
			R(0x200, 4, NT_ITYPE_DIRECT_CALL),
			R(0x300, 2, NT_ITYPE_RETURN),
			R(0x204, 2, NT_ITYPE_RETURN), R(0x104, 4, 0),
		};

		cfg.implicit_return = 3;
		cfg.ir_depth = 1;
		run(&cfg, nest, 5, NT_SYNC_TRACE_ENABLE,
		    NT_EVCODE_TRACE_DISABLED);
		expect(nmsgs == 3 && is(1, NT_TCODE_INDIRECT_BRANCH) &&
		       msgs[1].target == 0x104,
		       "depth-1 stack: inner return hidden, outer one reported");
	}
}

static void repeat_branch(void)
{
	struct nt_encoder_cfg cfg;
	struct nt_record recs[32];
	size_t n = 0, i;

	/* a loop 0x100..0x108 taken 5 times, then falls through */
	for (i = 0; i < 6; i++) {
		recs[n++] = R(0x100, 4, 0);
		recs[n++] = R(0x104, 4, 0);
		recs[n++] = R(0x108, 4, i < 5 ? NT_ITYPE_BRANCH_TAKEN :
			      NT_ITYPE_BRANCH_NOT_TAKEN);
	}
	recs[n++] = R(0x10c, 4, 0);
	nt_encoder_cfg_default(&cfg);
	cfg.mode = NT_MODE_BTM;
	run(&cfg, recs, n, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 7, "BTM loop: five DirectBranch messages");
	cfg.repeat_branch = true;
	run(&cfg, recs, n, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 4 && is(1, NT_TCODE_DIRECT_BRANCH) && msgs[1].icnt == 6 &&
	       is(2, NT_TCODE_REPEAT_BRANCH) && msgs[2].bcnt == 4 &&
	       msgs[3].icnt == 8,
	       "RepeatBranch: one DirectBranch then B-CNT 4");
	cfg.bcnt_bits = 2;
	run(&cfg, recs, n, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 5 && is(1, NT_TCODE_DIRECT_BRANCH) &&
	       is(2, NT_TCODE_REPEAT_BRANCH) && msgs[2].bcnt == 3 &&
	       is(3, NT_TCODE_DIRECT_BRANCH) && msgs[3].icnt == 6 &&
	       msgs[4].icnt == 8,
	       "RepeatBranch: a full 2-bit B-CNT starts over");
}

static void sequential_jump(void)
{
	struct nt_encoder_cfg cfg;
	struct nt_record recs[] = {
		R(0x100, 4, 0),			/* auipc t1, ... */
		R(0x104, 4, NT_ITYPE_INDIRECT_JUMP), /* jr t1 */
		R(0x800, 4, 0),
	};

	recs[1].flags = NT_REC_SEQ_INFERABLE;
	nt_encoder_cfg_default(&cfg);
	run(&cfg, recs, 3, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 3 && is(1, NT_TCODE_INDIRECT_BRANCH),
	       "without sequential jump: jr reported");
	cfg.sequential_jump = true;
	run(&cfg, recs, 3, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 2 && msgs[1].icnt == 6,
	       "sequential jump: auipc + jr inferred, no message");
	/* the constant load must be in the same message */
	recs[0] = R(0x100, 4, NT_ITYPE_INDIRECT_JUMP);
	recs[1].addr = 0x200;
	run(&cfg, recs, 3, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 4, "sequential jump right after a message is reported");
}

static void periodic_sync(void)
{
	struct nt_encoder_cfg cfg;
	struct nt_record recs[40];
	size_t i, syncs = 0, ok = 1;

	for (i = 0; i < 40; i++)
		recs[i] = R(0x1000 + 4 * i, 4, 0);
	nt_encoder_cfg_default(&cfg);
	cfg.sync_mode = 3;	/* I-CNT half-words */
	cfg.sync_max = 0;	/* every 16 */
	run(&cfg, recs, 40, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	for (i = 1; i < nmsgs; i++) {
		if (!nt_tcode_is_sync(msgs[i].tcode))
			continue;
		syncs++;
		ok &= msgs[i].sync == NT_SYNC_PERIODIC &&
		      msgs[i].target == 0x1000 + 32 * syncs &&
		      msgs[i].icnt == 16 && msgs[i].btype == 0;
	}
	expect(syncs == 4 && ok,
	       "periodic sync every 16 half-words on linear code, F-ADDR = next PC");

	cfg.mode = NT_MODE_BTM;
	cfg.sync_mode = 1;	/* messages */
	for (i = 0; i < 40; i++)
		recs[i] = R(0x100, 4, NT_ITYPE_BRANCH_TAKEN);
	run(&cfg, recs, 40, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	syncs = 0;
	for (i = 0; i < nmsgs; i++)
		syncs += is(i, NT_TCODE_DIRECT_BRANCH_SYNC) &&
			 msgs[i].target == 0x100;
	expect(syncs == 2, "BTM: every 16th message becomes DirectBranchSync");
}

static void timestamps_src_ownership(void)
{
	struct nt_encoder_cfg cfg;
	struct nt_record recs[] = {
		R(0x100, 4, NT_ITYPE_INDIRECT_JUMP), R(0x200, 4, 0),
		R(0x204, 4, 0), R(0x208, 4, NT_ITYPE_INDIRECT_JUMP),
		R(0x300, 4, 0),
	};
	size_t i, ok = 1;

	for (i = 0; i < 5; i++) {
		recs[i].tstamp = 1000 + 10 * i;
		recs[i].context = 42;
	}
	nt_encoder_cfg_default(&cfg);
	cfg.stream.timestamps = true;
	cfg.stream.src_bits = 4;
	cfg.src_id = 9;
	cfg.context = true;
	run(&cfg, recs, 5, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	for (i = 0; i < nmsgs; i++)
		ok &= !msgs[i].err && msgs[i].src == 9 &&
		      (msgs[i].fields & NT_F_TSTAMP);
	expect(ok && nmsgs == 5 && msgs[0].time == 1000 &&
	       is(1, NT_TCODE_OWNERSHIP) && msgs[1].process == ((42u << 5) | 2) &&
	       msgs[2].time == 1000 && msgs[3].time == 1030 &&
	       msgs[3].tstamp == 30 && msgs[4].time == 1041,
	       "SRC 9 on every message, absolute then relative timestamps, Ownership after sync");

	/* a trap into S-mode and back: Ownership with the new privilege */
	{
		struct nt_record t[] = {
			R(0x100, 4, 0), R(0x104, 4, NT_ITYPE_EXCEPTION),
			R(0x8000, 4, 0), R(0x8004, 4, NT_ITYPE_TRAP_RETURN),
			R(0x108, 4, 0),
		};

		t[2].priv = t[3].priv = NT_PRIV_S;
		cfg.stream.timestamps = false;
		run(&cfg, t, 5, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
		expect(nmsgs == 7 && is(2, NT_TCODE_INDIRECT_BRANCH) &&
		       msgs[2].btype == 2 && msgs[2].target == 0x8000 &&
		       is(3, NT_TCODE_OWNERSHIP) && msgs[3].process == (1u << 2) &&
		       is(4, NT_TCODE_INDIRECT_BRANCH) && msgs[4].btype == 0 &&
		       msgs[4].target == 0x108 && is(5, NT_TCODE_OWNERSHIP) &&
		       msgs[5].process == 0,
		       "exception B-TYPE 2, Ownership S, sret, Ownership U");
	}
}

static void traps(void)
{
	struct nt_encoder_cfg cfg;
	struct nt_record t[] = {
		R(0x100, 4, 0), R(0x104, 0, NT_ITYPE_INTERRUPT), R(0x9000, 4, 0),
		R(0x9004, 0, NT_ITYPE_EXCEPTION), R(0x9100, 2, 0),
	};

	nt_encoder_cfg_default(&cfg);
	run(&cfg, t, 5, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 4 && msgs[1].btype == 3 && msgs[1].icnt == 2 &&
	       msgs[1].target == 0x9000 && msgs[2].btype == 2 &&
	       msgs[2].icnt == 2 && msgs[2].target == 0x9100 &&
	       msgs[3].icnt == 1,
	       "interrupt B-TYPE 3, exception B-TYPE 2, trapping instruction not counted");
	cfg.btype_trap_only = true;
	run(&cfg, t, 5, NT_SYNC_TRACE_ENABLE, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 4 && msgs[1].btype == 1 && msgs[2].btype == 1,
	       "B-TYPE 1 for both when 2/3 are not implemented");
	/* back-to-back: exception at the first instruction after sync */
	t[0] = R(0x100, 0, NT_ITYPE_EXCEPTION);
	run(&cfg, t, 1, NT_SYNC_DEBUG_EXIT, NT_EVCODE_TRACE_DISABLED);
	expect(nmsgs == 2 && msgs[0].addr_field == 0x80,
	       "exception on the first instruction: sync at its address");
}

static void overflow(void)
{
	struct nt_encoder_cfg cfg;
	const char *err = NULL;
	struct nt_encoder *e;
	struct nt_reader *r;
	struct nt_record rec;
	const uint8_t *out;
	uint8_t saved[4096];
	size_t len, i, errors = 0, sync7 = 0, total = 0;

	nt_encoder_cfg_default(&cfg);
	cfg.fifo_bytes = 160;
	e = nt_encoder_new(&cfg, &err);
	nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
	/* indirect jumps to ever new places, never drained: FIFO fills */
	for (i = 0; i < 200; i++) {
		rec = R(0x1000 + 0x100 * i, 4, NT_ITYPE_INDIRECT_JUMP);
		nt_encoder_retire(e, &rec);
		if (i == 100) {
			out = nt_encoder_output(e, &len);
			memcpy(saved, out, len);
			total = len;
			nt_encoder_consume(e, len);
		}
	}
	nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, 0);
	out = nt_encoder_output(e, &len);
	memcpy(saved + total, out, len);
	total += len;
	r = nt_reader_new(&cfg.stream);
	nt_reader_feed(r, saved, total);
	nt_reader_finish(r);
	nmsgs = 0;
	while (nmsgs < MAXM && nt_reader_next(r, &msgs[nmsgs]))
		nmsgs++;
	for (i = 0; i < nmsgs; i++) {
		if (is(i, NT_TCODE_ERROR) && msgs[i].etype == 0 &&
		    msgs[i].ecode == 4 && is(i + 1, NT_TCODE_PROG_TRACE_SYNC) &&
		    msgs[i + 1].sync == NT_SYNC_FIFO_OVERRUN &&
		    msgs[i + 1].target == 0x1000 + 0x100 * 101)
			sync7++;
		errors += msgs[i].err != 0;
	}
	expect(sync7 == 1 && !errors && nt_encoder_stats(e)->overflows >= 1,
	       "FIFO overflow: Error ETYPE 0 then ProgTraceSync SYNC=7 after draining");
	nt_reader_free(r);
	nt_encoder_free(e);
}

static void bad_configs(void)
{
	struct nt_encoder_cfg cfg;
	const char *err;
	int rejected = 0, tried = 0;

#define TRY(stmt) do {							\
		nt_encoder_cfg_default(&cfg);				\
		stmt;							\
		err = NULL;						\
		tried++;						\
		if (!nt_encoder_new(&cfg, &err) && err)			\
			rejected++;					\
	} while (0)
	TRY(cfg.mode = 4);
	TRY(cfg.icnt_bits = 23);
	TRY(cfg.hist_bits = 1);
	TRY(cfg.hist_bits = 33);
	TRY(cfg.implicit_return = 4);
	TRY((cfg.implicit_return = 3, cfg.ir_depth = 33));
	TRY((cfg.stream.src_bits = 2, cfg.src_id = 4));
	TRY(cfg.stream.src_bits = 13);
	TRY(cfg.stream.xlen = 48);
	TRY((cfg.mode = NT_MODE_BTM, cfg.repeat_history = true));
	TRY(cfg.fifo_bytes = 10);
	TRY(cfg.sync_max = 16);
#undef TRY
	tap_ok(rejected == tried, "%d of %d bad configurations rejected",
	       rejected, tried);
	{
		struct nt_encoder *e;
		struct nt_record bad = R(0x100, 3, 0);

		nt_encoder_cfg_default(&cfg);
		e = nt_encoder_new(&cfg, &err);
		nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
		tap_ok(nt_encoder_retire(e, &bad) == -1 &&
		       (bad = R(0x100, 4, 7), nt_encoder_retire(e, &bad) == -1),
		       "records with size 3 or itype 7 are refused");
		nt_encoder_free(e);
	}
}

/* A run fed at once gives the same bytes as record by record. */
static void plain_runs(void)
{
	struct nt_encoder_cfg cfg;
	struct nt_record recs[64];
	const char *err = NULL;
	uint8_t a[512], b[512];
	size_t la = 0, lb = 0, i, n = 0;
	int k;

	for (i = 0; i < 6; i++) {
		for (k = 0; k < 7; k++)
			recs[n++] = R(0x1000 + 0x40 * i + 4 * k, k & 1 ? 2 : 4, 0);
		recs[n++] = R(0x1000 + 0x40 * i + 28, 4, NT_ITYPE_INDIRECT_JUMP);
	}
	for (k = 0; k < 2; k++) {
		struct nt_encoder *e;
		const uint8_t *out;
		size_t len;

		nt_encoder_cfg_default(&cfg);
		cfg.icnt_bits = 5;	/* overflows inside the runs */
		e = nt_encoder_new(&cfg, &err);
		nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
		for (i = 0; i < n; i += 8) {
			if (k) {
				uint64_t h = 0;

				for (size_t j = 0; j < 7; j++)
					h += recs[i + j].size / 2;
				nt_encoder_retire_plain(e, &recs[i], 7, h);
			} else {
				for (size_t j = 0; j < 7; j++)
					nt_encoder_retire(e, &recs[i + j]);
			}
			nt_encoder_retire(e, &recs[i + 7]);
		}
		nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, 0);
		out = nt_encoder_output(e, &len);
		memcpy(k ? b : a, out, len < sizeof(a) ? len : sizeof(a));
		*(k ? &lb : &la) = len;
		nt_encoder_free(e);
	}
	{
		struct nt_stream_cfg sc = { .xlen = 64 };
		struct nt_reader *r = nt_reader_new(&sc);
		struct nt_msg m;
		uint64_t last = 0, ha = 0, hb = 0;

		nt_reader_feed(r, a, la);
		nt_reader_finish(r);
		while (nt_reader_next(r, &m))
			ha += nt_msg_halfwords(&m, &last);
		nt_reader_free(r);
		r = nt_reader_new(&sc);
		nt_reader_feed(r, b, lb);
		nt_reader_finish(r);
		while (nt_reader_next(r, &m))
			hb += nt_msg_halfwords(&m, &last);
		nt_reader_free(r);
		tap_ok(ha == hb && ha == 6 * 13,
		       "retire_plain: same I-CNT total (%llu = %llu half-words) as record by record",
		       (unsigned long long)hb, (unsigned long long)ha);
	}
	tap_ok(nt_encoder_retire_plain(NULL, &(struct nt_record){ .itype = 5,
		.size = 4 }, 1, 2) == -1,
	       "retire_plain refuses a record that is not plain");
}

/* ---- blocks ----------------------------------------------------------- */

#define NBLOCKS	48

/* block ends a random program may have, conditional branches twice */
static const uint8_t block_ends[] = {
	NT_ITYPE_NONE, NT_ITYPE_BRANCH_TAKEN, NT_ITYPE_BRANCH_TAKEN,
	NT_ITYPE_DIRECT_CALL, NT_ITYPE_DIRECT_JUMP, NT_ITYPE_RETURN,
	NT_ITYPE_RETURN, NT_ITYPE_INDIRECT_CALL, NT_ITYPE_INDIRECT_JUMP,
	NT_ITYPE_COROUTINE_SWAP, NT_ITYPE_TRAP_RETURN,
	NT_ITYPE_OTHER_DIRECT_JUMP, NT_ITYPE_OTHER_INDIRECT_JUMP,
	NT_ITYPE_INDIRECT_3BIT,
};

/*
 * Blocks laid out back to back from 0x10000, so that falling through or
 * returning lands on the start of a block, and jumping to any block start.
 */
static void random_blocks(struct nt_block *blk, uint64_t *rng)
{
	uint64_t pc = 0x10000;
	unsigned int i;

	for (i = 0; i < NBLOCKS; i++) {
		struct nt_block *b = &blk[i];
		uint64_t r = xorshift64(rng);

		memset(b, 0, sizeof(*b));
		b->addr = pc;
		b->n = 1 + r % 9;
		b->priv = NT_PRIV_U;
		for (unsigned int k = 0; k < b->n; k++) {
			unsigned int size = xorshift64(rng) & 1 ? 2 : 4;

			if (k == 0)
				b->first_size = (uint8_t)size;
			b->last = pc;
			b->last_size = (uint8_t)size;
			b->halfwords += size / 2;
			pc += size;
		}
		b->last_itype = block_ends[(r >> 8) % sizeof(block_ends)];
		if (b->last_itype == NT_ITYPE_INDIRECT_JUMP ||
		    b->last_itype == NT_ITYPE_INDIRECT_CALL)
			b->flags = (r >> 24) & 1 ? NT_BLOCK_SEQ : 0;
	}
	/* the last block wraps around to the first */
	blk[NBLOCKS - 1].last_itype = NT_ITYPE_DIRECT_JUMP;
	for (i = 0; i < NBLOCKS; i++)
		blk[i].target = blk[xorshift64(rng) % NBLOCKS].addr;
	blk[NBLOCKS - 1].target = blk[0].addr;
}

static unsigned int block_at(const struct nt_block *blk, uint64_t addr)
{
	unsigned int i = 0;

	while (i + 1 < NBLOCKS && blk[i + 1].addr <= addr)
		i++;
	return i;
}

/*
 * Loops: each conditional branch taken but every period[i]-th time, so
 * that the history repeats (with periods of several branches, as the
 * walk goes round), for repeated history to find.
 */
static struct {
	bool on;
	unsigned int period[NBLOCKS], n[NBLOCKS];
} loops;

static void loops_init(bool on, uint64_t *rng)
{
	loops.on = on;
	for (unsigned int i = 0; i < NBLOCKS; i++) {
		loops.period[i] = 2 + xorshift64(rng) % 40;
		loops.n[i] = 0;
	}
}

/* Where b's last instruction goes, as a program with a call stack would. */
static uint64_t block_next(const struct nt_block *blk, const struct nt_block *b,
			   uint64_t *stack, unsigned int *depth, uint64_t *rng)
{
	unsigned int i = (unsigned int)(b - blk);

	uint64_t r = xorshift64(rng), any = blk[r % NBLOCKS].addr;
	uint64_t ret = b->last + b->last_size;

	if (b == &blk[NBLOCKS - 1])
		return b->target;
	switch (b->last_itype) {
	case NT_ITYPE_NONE:
		return ret;
	case NT_ITYPE_BRANCH_TAKEN:
		if (loops.on)
			return ++loops.n[i] % loops.period[i] ? b->target : ret;
		return (r >> 32) & 1 ? b->target : ret;
	case NT_ITYPE_DIRECT_CALL:
	case NT_ITYPE_INDIRECT_CALL:
		if (*depth < 64)
			stack[(*depth)++] = ret;
		return b->last_itype == NT_ITYPE_DIRECT_CALL ||
		       (b->flags & NT_BLOCK_SEQ) ? b->target : any;
	case NT_ITYPE_RETURN:
	case NT_ITYPE_COROUTINE_SWAP:
		/* mostly where the call came from, at times not */
		if (*depth && (r >> 32) % 8)
			return stack[--(*depth)];
		return any;
	case NT_ITYPE_DIRECT_JUMP:
	case NT_ITYPE_OTHER_DIRECT_JUMP:
		return b->target;
	default:
		return (b->flags & NT_BLOCK_SEQ) && (r >> 32) & 1 ? b->target :
								     any;
	}
}

/* b as the records nt_encoder_retire_block() promises to equal. */
static void retire_block_as_records(struct nt_encoder *e,
				    const struct nt_block *b, uint64_t next,
				    uint64_t ctx, uint64_t ts)
{
	struct nt_record r = { .addr = b->addr, .size = b->first_size,
			       .priv = b->priv, .context = ctx, .tstamp = ts };

	if (b->n > 1)
		nt_encoder_retire_plain(e, &r, b->n - 1,
					b->halfwords - b->last_size / 2);
	r.addr = b->last;
	r.size = b->last_size;
	r.itype = b->last_itype;
	if (r.itype == NT_ITYPE_BRANCH_TAKEN && next != b->target)
		r.itype = NT_ITYPE_BRANCH_NOT_TAKEN;
	if ((b->flags & NT_BLOCK_SEQ) && next == b->target)
		r.flags = NT_REC_SEQ_INFERABLE;
	nt_encoder_retire(e, &r);
}

/*
 * Both encoders' waiting output is the same; consume it, or with partly
 * only its first half (the rest is compared again next time).
 */
static bool same_output(struct nt_encoder *a, struct nt_encoder *b,
			size_t *bytes, bool partly)
{
	size_t la, lb;
	const uint8_t *pa = nt_encoder_output(a, &la);
	const uint8_t *pb = nt_encoder_output(b, &lb);
	bool same = la == lb && !memcmp(pa, pb, la);

	if (partly)
		la = lb = la / 2;
	*bytes += la;
	nt_encoder_consume(a, la);
	nt_encoder_consume(b, lb);
	return same &&
	       !memcmp(nt_encoder_stats(a), nt_encoder_stats(b),
		       sizeof(struct nt_encoder_stats));
}

/*
 * The options of a random configuration from r (bits 0-21): small
 * counters and return stacks that overflow, every sync mode.
 */
static void random_cfg(uint64_t r, struct nt_encoder_cfg *cfg)
{
	nt_encoder_cfg_default(cfg);
	cfg->mode = r & 1 ? NT_MODE_HTM : NT_MODE_BTM;
	cfg->icnt_bits = 5 + (r >> 1) % 12;
	cfg->hist_bits = 3 + (r >> 5) % 16;
	cfg->implicit_return = (r >> 9) % 4;
	cfg->ir_depth = 1 + (r >> 11) % 6;
	cfg->ir_partial_bits = 8;
	cfg->sequential_jump = (r >> 14) & 1;
	cfg->all_jumps = (r >> 15) & 1;
	cfg->sync_mode = (r >> 16) % 4;
	cfg->sync_max = (r >> 18) % 3;
	cfg->repeat_history = cfg->mode == NT_MODE_HTM && (r >> 21) & 1;
	cfg->hrepeat_bits = 1 + (r >> 40) % 18;
}

/*
 * One random configuration per seed, a random program run through it
 * block by block and, in a second encoder, record by record; with traps,
 * level and context changes, stops and lost trace in between.
 */
static bool blocks_match_records(uint64_t seed, size_t *bytes,
				 uint64_t *overflows)
{
	uint64_t rng = seed, stack[64], ts = 0, ctx = 0;
	unsigned int depth = 0, cur = 0, step;
	struct nt_block blk[NBLOCKS];
	struct nt_encoder_cfg cfg;
	struct nt_encoder *a, *b;
	uint64_t r = xorshift64(&rng);
	const char *err = NULL;
	bool ok = true;

	random_cfg(r, &cfg);
	cfg.context = (r >> 20) & 1;
	cfg.repeat_branch = (r >> 22) & 1;
	cfg.stream.timestamps = (r >> 23) & 1;
	/* a FIFO that overflows unless drained in time */
	cfg.fifo_bytes = (r >> 24) & 1 ? 0 : 4 * NT_MAX_MSG_BYTES + (r >> 25) % 64;
	a = nt_encoder_new(&cfg, &err);
	b = nt_encoder_new(&cfg, &err);
	if (!a || !b) {
		tap_diag("seed %" PRIu64 ": %s", seed, err);
		nt_encoder_free(a);
		nt_encoder_free(b);
		return false;
	}
	random_blocks(blk, &rng);
	loops_init((r >> 45) & 1, &rng);
	nt_encoder_start(a, NT_SYNC_TRACE_ENABLE);
	nt_encoder_start(b, NT_SYNC_TRACE_ENABLE);
	for (step = 0; step < 3000 && ok; step++) {
		const struct nt_block *x = &blk[cur];
		uint64_t next = block_next(blk, x, stack, &depth, &rng);
		uint64_t event = xorshift64(&rng) % 200;
		size_t waiting, len;

		ts += x->n;
		if (nt_block_check(x)) {
			tap_diag("seed %" PRIu64 ": block %u refused", seed, cur);
			ok = false;
		}
		waiting = nt_encoder_retire_block(a, x, next, ctx, ts);
		if (waiting != (nt_encoder_output(a, &len), len)) {
			tap_diag("seed %" PRIu64 ": %zu bytes waiting, said %zu",
				 seed, len, waiting);
			ok = false;
		}
		retire_block_as_records(b, x, next, ctx, ts);
		if (event == 0) {
			/* an exception at next, its handler in another block */
			struct nt_record t = { .addr = next, .tstamp = ts,
					       .priv = NT_PRIV_U, .context = ctx,
					       .itype = NT_ITYPE_EXCEPTION };

			nt_encoder_retire(a, &t);
			nt_encoder_retire(b, &t);
			next = blk[xorshift64(&rng) % NBLOCKS].addr;
		} else if (event == 1) {
			nt_encoder_stop(a, NT_EVCODE_TRACE_DISABLED, ts);
			nt_encoder_stop(b, NT_EVCODE_TRACE_DISABLED, ts);
			nt_encoder_start(a, NT_SYNC_TRACE_ENABLE);
			nt_encoder_start(b, NT_SYNC_TRACE_ENABLE);
		} else if (event == 2) {
			nt_encoder_lost(a);
			nt_encoder_lost(b);
		} else if (event == 3) {
			ctx ^= 0x55;
		} else if (event == 4) {
			for (unsigned int i = 0; i < NBLOCKS; i++)
				blk[i].priv ^= NT_PRIV_S;
		}
		if (!cfg.fifo_bytes || !(xorshift64(&rng) % 8))
			ok = ok && same_output(a, b, bytes,
					       !(xorshift64(&rng) % 4));
		cur = block_at(blk, next);
		if (blk[cur].addr != next) {
			tap_diag("seed %" PRIu64 ": no block at %#" PRIx64,
				 seed, next);
			ok = false;
		}
	}
	nt_encoder_stop(a, NT_EVCODE_TRACE_DISABLED, ts);
	nt_encoder_stop(b, NT_EVCODE_TRACE_DISABLED, ts);
	ok = ok && same_output(a, b, bytes, false);
	*overflows += nt_encoder_stats(a)->overflows;
	if (!ok)
		tap_diag("seed %" PRIu64 ": differs at step %u (mode %u, "
			 "return mode %u depth %u, seq %d, all jumps %d, sync "
			 "%u/%u, context %d, RH %d, RB %d, timestamps %d)",
			 seed, step, cfg.mode, cfg.implicit_return,
			 cfg.ir_depth, cfg.sequential_jump, cfg.all_jumps,
			 cfg.sync_mode, cfg.sync_max, cfg.context,
			 cfg.repeat_history, cfg.repeat_branch,
			 cfg.stream.timestamps);
	nt_encoder_free(a);
	nt_encoder_free(b);
	return ok;
}

/*
 * Branch messages that pack in a word skip struct nt_msg, but not with a
 * FIFO limit: a limit too large to be reached changes nothing else, so
 * the two encoders must agree byte for byte, RepeatBranch folding too.
 */
static bool packed_messages_match(uint64_t seed, size_t *bytes)
{
	uint64_t rng = seed, stack[64], ts = 0, r = xorshift64(&rng);
	unsigned int depth = 0, cur = 0, step;
	struct nt_block blk[NBLOCKS];
	struct nt_encoder_cfg cfg;
	struct nt_encoder *a, *b;
	bool ok = true;

	random_cfg(r, &cfg);
	cfg.stream.src_bits = (r >> 22) % 4;
	cfg.src_id = (uint16_t)((r >> 24) & ((1u << cfg.stream.src_bits) - 1));
	cfg.stream.xlen = (r >> 26) & 1 ? 32 : 64;
	cfg.repeat_branch = (r >> 27) & 1;
	cfg.bcnt_bits = 1 + (r >> 28) % 4;	/* B-CNT fills, too */
	a = nt_encoder_new(&cfg, NULL);
	cfg.fifo_bytes = 1u << 30;
	b = nt_encoder_new(&cfg, NULL);
	random_blocks(blk, &rng);
	loops_init((r >> 45) & 1, &rng);
	nt_encoder_start(a, NT_SYNC_TRACE_ENABLE);
	nt_encoder_start(b, NT_SYNC_TRACE_ENABLE);
	for (step = 0; step < 2000 && ok; step++) {
		const struct nt_block *x = &blk[cur];
		uint64_t next = block_next(blk, x, stack, &depth, &rng);

		ts += x->n;
		retire_block_as_records(a, x, next, 0, ts);
		retire_block_as_records(b, x, next, 0, ts);
		ok = same_output(a, b, bytes, false);
		cur = block_at(blk, next);
	}
	nt_encoder_stop(a, NT_EVCODE_TRACE_DISABLED, ts);
	nt_encoder_stop(b, NT_EVCODE_TRACE_DISABLED, ts);
	ok = ok && same_output(a, b, bytes, false);
	if (!ok)
		tap_diag("seed %" PRIu64 ": packed and general messages "
			 "differ at step %u", seed, step);
	nt_encoder_free(a);
	nt_encoder_free(b);
	return ok;
}

/* n instructions, the first and last this long, ending in itype at priv */
#define BLOCK(n_, hw, fs, ls, it, pv)					\
	{ .addr = 0x100, .last = 0x106, .n = n_, .halfwords = hw,	\
	  .first_size = fs, .last_size = ls, .last_itype = it, .priv = pv }

static const struct {
	struct nt_block b;
	int want;
	const char *what;
} checks[] = {
	{ BLOCK(3, 5, 4, 2, NT_ITYPE_NONE, 0), 0, "a consistent block" },
	{ BLOCK(3, 7, 4, 2, NT_ITYPE_NONE, 0), -1,
	  "more half-words than the sizes allow" },
	{ BLOCK(3, 3, 4, 2, NT_ITYPE_NONE, 0), -1,
	  "fewer half-words than the sizes allow" },
	{ BLOCK(0, 5, 4, 2, NT_ITYPE_NONE, 0), -1, "an empty block" },
	{ BLOCK(3, 5, 4, 2, NT_ITYPE_EXCEPTION, 0), -1,
	  "a trap as the last instruction" },
	{ BLOCK(3, 5, 4, 2, NT_ITYPE_NONE, 2), -1, "privilege level 2" },
	{ BLOCK(3, 5, 4, 3, NT_ITYPE_NONE, 0), -1, "a 3-byte instruction" },
	{ BLOCK(3, 5, 200, 2, NT_ITYPE_NONE, 0), -1,
	  "a 200-byte first instruction" },
	{ BLOCK(1, 1, 200, 2, NT_ITYPE_RETURN, 0), 0,
	  "a one-instruction block whatever its first size" },
};

static void blocks(void)
{
	unsigned int seed, failed = 0;
	uint64_t overflows = 0;
	size_t bytes = 0, k;

	for (seed = 1; seed <= 400; seed++)
		failed += !blocks_match_records(seed, &bytes, &overflows);
	tap_ok(!failed && bytes > 100000 && overflows > 100,
	       "retire_block: 400 random configurations and programs, "
	       "%zu bytes, %" PRIu64 " overflows, identical to the records "
	       "(%u differ)", bytes, overflows, failed);

	bytes = 0;
	failed = 0;
	for (seed = 1; seed <= 200; seed++)
		failed += !packed_messages_match(seed, &bytes);
	tap_ok(!failed && bytes > 100000,
	       "packed branch messages: 200 random configurations, %zu "
	       "bytes, identical to the general writer's (%u differ)", bytes,
	       failed);

	for (k = 0; k < sizeof(checks) / sizeof(checks[0]); k++)
		tap_ok(nt_block_check(&checks[k].b) == checks[k].want,
		       "block check %s %s", checks[k].want ? "refuses" : "takes",
		       checks[k].what);
}

int main(void)
{
	icnt_examples();
	icnt_full_example();
	hist_examples();
	hist_full_and_repeat();
	repeat_periods();
	implicit_return();
	repeat_branch();
	sequential_jump();
	periodic_sync();
	timestamps_src_ownership();
	traps();
	overflow();
	bad_configs();
	plain_runs();
	blocks();
	return tap_done();
}
