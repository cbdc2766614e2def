// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Message codec tests: the spec's golden vectors, writer -> reader round
 * trips for every TCODE and stream configuration, chunked parsing and the
 * error model.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"
#include "tap.h"
#include "xorshift.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return xorshift64(&rng);
}

/* A value of a random bit length up to bits, so short fields are common. */
static uint64_t rnd_bits(unsigned int bits)
{
	unsigned int n = (unsigned int)(rnd() % (bits + 1));

	if (!n)
		return 0;
	return rnd() & (n >= 64 ? ~0ull : (1ull << n) - 1);
}

#define MAX_MSGS 4096

/*
 * Parse data in chunks of chunk bytes (0: all at once), batch records a
 * call of nt_reader_next_batch() (0: nt_reader_next()). A batch that
 * writes past what it was given makes the result 0. Each chunk is fed
 * from a copy of its own size, so that under AddressSanitizer a read
 * outside the bytes fed fails.
 */
static size_t parse_batch(const struct nt_stream_cfg *cfg,
			  const uint8_t *data, size_t len, size_t chunk,
			  size_t batch, struct nt_msg *out, size_t max)
{
	struct nt_reader *r = nt_reader_new(cfg);
	size_t n = 0, pos = 0, k;

	if (!r)
		return 0;
	/* fields a message does not carry are left as they were */
	memset(out, 0, max * sizeof(*out));
	do {
		size_t c = chunk && chunk < len - pos ? chunk : len - pos;
		uint8_t *copy = malloc(c ? c : 1);

		if (!copy) {
			nt_reader_free(r);
			return 0;
		}
		memcpy(copy, data + pos, c);
		nt_reader_feed(r, copy, c);
		pos += c;
		if (pos == len)
			nt_reader_finish(r);
		while (n < max) {
			size_t want = max - n;

			if (batch && batch < want)
				want = batch;

			k = batch ? nt_reader_next_batch(r, &out[n], want) :
				    (size_t)nt_reader_next(r, &out[n]);
			if (k > want) {
				free(copy);
				nt_reader_free(r);
				return 0;
			}
			n += k;
			if (!k)
				break;
		}
		free(copy);
	} while (pos < len);
	nt_reader_free(r);
	return n;
}

static size_t parse(const struct nt_stream_cfg *cfg, const uint8_t *data,
		    size_t len, size_t chunk, struct nt_msg *out, size_t max)
{
	return parse_batch(cfg, data, len, chunk, 0, out, max);
}

static void golden_message_example(void)
{
	/* N-Trace 1.0 section 3.5, "MDO and MSEO Encoding Example" */
	static const uint8_t bytes[] = {
		0xff, 0x70, 0xd0, 0x1d, 0x1d, 0xf8, 0xff, 0xff
	};
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_msg m[4], w;
	uint8_t out[64];
	size_t n = parse(&cfg, bytes, sizeof(bytes), 0, m, 4);
	int len;

	tap_ok(n == 1 && !m[0].err, "spec example: one message");
	tap_ok(m[0].tcode == NT_TCODE_INDIRECT_BRANCH_HIST && m[0].btype == 0 &&
	       m[0].icnt == 0x7d && m[0].addr_field == 0x7 &&
	       m[0].hist == 0xffe && m[0].offset == 1 && m[0].size == 6,
	       "spec example: TCODE 28, B-TYPE 0, I-CNT 0x7D, U-ADDR 0x7, HIST 0xFFE");

	memset(&w, 0, sizeof(w));
	w.tcode = NT_TCODE_INDIRECT_BRANCH_HIST;
	w.icnt = 0x7d;
	w.addr_field = 0x7;
	w.hist = 0xffe;
	len = nt_write_msg(&cfg, &w, out, sizeof(out));
	tap_ok(len == 6 && !memcmp(out, bytes + 1, 6),
	       "spec example: writer produces the same six bytes");
}

static int put(const struct nt_stream_cfg *cfg, struct nt_msg *m,
	       uint8_t *buf, size_t *len)
{
	int n = nt_write_msg(cfg, m, buf + *len, 4096 - *len);

	if (n > 0)
		*len += (size_t)n;
	return n;
}

static void golden_xor_example(void)
{
	/* section 7.1, "Address XOR Calculation Examples" */
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_msg m, got[4];
	uint8_t buf[4096];
	size_t len = 0, n;

	memset(&m, 0, sizeof(m));
	m.tcode = NT_TCODE_PROG_TRACE_SYNC;
	m.addr_field = 0x1fe02;
	put(&cfg, &m, buf, &len);
	memset(&m, 0, sizeof(m));
	m.tcode = NT_TCODE_INDIRECT_BRANCH;
	m.addr_field = 0x7b6;
	put(&cfg, &m, buf, &len);
	m.addr_field = 0x934;
	put(&cfg, &m, buf, &len);
	n = parse(&cfg, buf, len, 0, got, 4);
	tap_ok(n == 3 && got[0].target == 0x3fc04 && got[1].target == 0x3f368 &&
	       got[2].target == 0x3e100,
	       "XOR example: 0x3FC04, 0x3F368, 0x3E100");
}

/* ProgTraceSync, SYNC=5, I-CNT=0, then the given F-ADDR bytes. */
static void check_ext(const char *what, const uint8_t *faddr, size_t nf,
		      uint64_t field, uint64_t addr)
{
	struct nt_stream_cfg cfg = { .xlen = 64, .extend_addr_msb = true };
	uint8_t buf[32] = { (NT_TCODE_PROG_TRACE_SYNC << 2), 0x15 };
	struct nt_msg m[2], w;
	uint8_t out[32];
	size_t n;
	int len;

	memcpy(buf + 2, faddr, nf);
	buf[1 + nf] |= 3;	/* the field's last byte ends the message */
	n = parse(&cfg, buf, 2 + nf, 0, m, 2);
	tap_ok(n == 1 && !m[0].err && m[0].target == addr &&
	       (m[0].addr_field & ((1ull << (6 * nf)) - 1)) == field,
	       "extended address: %s -> 0x%" PRIx64, what, addr);
	/* and the writer picks the same, shortest, form */
	w = m[0];
	len = nt_write_msg(&cfg, &w, out, sizeof(out));
	tap_ok(len == (int)(2 + nf) && !memcmp(out, buf, 2 + nf),
	       "extended address: %s re-encodes identically", what);
}

static void golden_extended_addresses(void)
{
	/* section 8.4, "Example Encodings" */
	static const uint8_t ex1[] = { 0xfc, 0xfc, 0xfc, 0xfc, 0xfc, 0x7d };
	static const uint8_t ex2[] = { 0xfc, 0xfc, 0xfc, 0xfc, 0x7c, 0xf1 };
	static const uint8_t ex3[] = { 0xfc, 0xfc, 0xfc, 0xfc, 0xfc, 0xfc, 0x01 };
	struct nt_stream_cfg cfg = { .xlen = 64, .extend_addr_msb = true };
	struct nt_stream_cfg plain = { .xlen = 64 };
	struct nt_msg m, got[2];
	uint8_t buf[64];
	int a, b;

	check_ext("MSB 0, not extended", ex1, sizeof(ex1), 0x7ffffffffull,
		  0xffffffffeull);
	check_ext("MSB 1, extended", ex2, sizeof(ex2), 0xf1fffffffull,
		  0xfffffffe3ffffffeull);
	check_ext("extra zero MDO", ex3, sizeof(ex3), 0xfffffffffull,
		  0x1ffffffffeull);

	/* the kernel address of section 8.4's note: 11 bytes without */
	memset(&m, 0, sizeof(m));
	m.tcode = NT_TCODE_PROG_TRACE_SYNC;
	m.addr_field = 0xffffffff800031f4ull >> 1;
	a = nt_write_msg(&plain, &m, buf, sizeof(buf));
	b = nt_write_msg(&cfg, &m, buf, sizeof(buf));
	tap_ok(a == 13 && b == 8,
	       "kernel address 0xffffffff800031f4: %d bytes plain, %d extended",
	       a, b);
	tap_ok(parse(&cfg, buf, (size_t)b, 0, got, 2) == 1 &&
	       got[0].target == 0xffffffff800031f4ull,
	       "kernel address decodes back with extension");
}

/* Fill a random but valid message for tcode under cfg. */
static void random_msg(const struct nt_stream_cfg *cfg, unsigned int tcode,
		       struct nt_msg *m)
{
	unsigned int abits = cfg->xlen == 32 ? 31 : 63;

	memset(m, 0, sizeof(*m));
	m->tcode = tcode;
	if (cfg->src_bits) {
		m->src = rnd() & ((1u << cfg->src_bits) - 1);
		m->fields |= NT_F_SRC;
	}
	m->sync = rnd() & 15;
	m->btype = rnd() & 3;
	m->etype = rnd() & 15;
	m->rcode = rnd() % 3;
	m->evcode = rnd() & 15;
	m->cdf = rnd() & 1;
	m->icnt = rnd_bits(22);
	m->addr_field = rnd_bits(abits);
	m->hist = rnd_bits(32) | 1;
	m->rdata[0] = rnd_bits(32);
	m->rdata[1] = rnd_bits(18);
	m->nrdata = m->rcode == NT_RCODE_HIST_REPEAT ? 2 : 1;
	m->process = rnd_bits(40);
	m->ecode = rnd_bits(8);
	m->bcnt = rnd_bits(18);
	m->cksrc = rnd() & 15;
	m->ckdf = rnd() & 1;
	m->ckdata[0] = rnd_bits(64);
	m->ckdata[1] = rnd_bits(64);
	m->idtag = rnd_bits(16);
	m->dqdata = rnd_bits(64);
	m->nraw = 1 + rnd() % 4;
	for (unsigned int k = 0; k < m->nraw; k++)
		m->raw[k] = rnd_bits(64);
	/* a vendor message's layout is unknown: TSTAMP would be a raw field */
	if (cfg->timestamps && (rnd() & 3) && tcode < NT_TCODE_VENDOR_FIRST) {
		m->tstamp = rnd_bits(64);
		m->fields |= NT_F_TSTAMP;
	}
}

/* Compare the fields a writer takes with what the reader gave back. */
static bool same_fields(const struct nt_msg *a, const struct nt_msg *b)
{
	uint32_t f = b->fields;

	if (a->tcode != b->tcode || a->src != b->src)
		return false;
	if (((f & NT_F_SYNC) && a->sync != b->sync) ||
	    ((f & NT_F_BTYPE) && a->btype != b->btype) ||
	    ((f & NT_F_ETYPE) && a->etype != b->etype) ||
	    ((f & NT_F_RCODE) && a->rcode != b->rcode) ||
	    ((f & NT_F_EVCODE) && a->evcode != b->evcode) ||
	    ((f & NT_F_CDF) && a->cdf != b->cdf) ||
	    ((f & NT_F_ICNT) && a->icnt != b->icnt) ||
	    ((f & (NT_F_FADDR | NT_F_UADDR)) && a->addr_field != b->addr_field) ||
	    ((f & NT_F_HIST) && a->hist != b->hist) ||
	    ((f & NT_F_PROCESS) && a->process != b->process) ||
	    ((f & NT_F_ECODE) && a->ecode != b->ecode) ||
	    ((f & NT_F_BCNT) && a->bcnt != b->bcnt) ||
	    ((f & NT_F_CKSRC) && a->cksrc != b->cksrc) ||
	    ((f & NT_F_CKDF) && a->ckdf != b->ckdf) ||
	    ((f & NT_F_CKDATA) && (a->ckdata[0] != b->ckdata[0] ||
				   (a->ckdf && a->ckdata[1] != b->ckdata[1]))) ||
	    ((f & NT_F_IDTAG) && a->idtag != b->idtag) ||
	    ((f & NT_F_DQDATA) && a->dqdata != b->dqdata) ||
	    ((f & NT_F_TSTAMP) && a->tstamp != b->tstamp))
		return false;
	if ((f & NT_F_RDATA) &&
	    (a->rdata[0] != b->rdata[0] || a->nrdata != b->nrdata ||
	     (a->nrdata > 1 && a->rdata[1] != b->rdata[1])))
		return false;
	if ((f & NT_F_RAW) &&
	    (a->nraw != b->nraw || memcmp(a->raw, b->raw,
					  a->nraw * sizeof(a->raw[0]))))
		return false;
	if (!!(a->fields & NT_F_TSTAMP) != !!(f & NT_F_TSTAMP))
		return false;
	return true;
}

static const unsigned int std_tcodes[] = {
	NT_TCODE_OWNERSHIP, NT_TCODE_DIRECT_BRANCH, NT_TCODE_INDIRECT_BRANCH,
	NT_TCODE_ERROR, NT_TCODE_PROG_TRACE_SYNC, NT_TCODE_DIRECT_BRANCH_SYNC,
	NT_TCODE_INDIRECT_BRANCH_SYNC, NT_TCODE_RESOURCE_FULL,
	NT_TCODE_INDIRECT_BRANCH_HIST, NT_TCODE_INDIRECT_BRANCH_HIST_SYNC,
	NT_TCODE_REPEAT_BRANCH, NT_TCODE_PROG_TRACE_CORRELATION,
	NT_TCODE_DATA_ACQUISITION, NT_TCODE_IN_CIRCUIT_TRACE,
	56, 62,		/* vendor defined */
};

static void round_trips(void)
{
	static struct nt_msg sent[MAX_MSGS], got[MAX_MSGS], got2[MAX_MSGS];
	static uint8_t buf[MAX_MSGS * 40];
	const unsigned int nt = sizeof(std_tcodes) / sizeof(std_tcodes[0]);
	unsigned int src_bits, ts, ext, xlen;

	for (src_bits = 0; src_bits <= 12; src_bits += 3)
	for (ts = 0; ts < 2; ts++)
	for (ext = 0; ext < 2; ext++)
	for (xlen = 32; xlen <= 64; xlen += 32) {
		struct nt_stream_cfg cfg = {
			.src_bits = (uint8_t)src_bits, .timestamps = ts,
			.extend_addr_msb = ext, .xlen = (uint8_t)xlen,
		};
		size_t len = 0, n, i, bad = 0, chunk_bad = 0;
		uint64_t time[1 << 12] = { 0 };
		size_t nsent = 0, packed = 0, packed_bad = 0, short_bad = 0;

		for (i = 0; i < 2000; i++) {
			struct nt_msg *m = &sent[nsent];
			int w;

			random_msg(&cfg, std_tcodes[rnd() % nt], m);
			w = nt_write_msg(&cfg, m, buf + len, sizeof(buf) - len);
			if (w <= 0) {
				bad++;
				continue;
			}
			/*
			 * Short messages are packed in a word when there is
			 * room; with just the room they need the byte-wise
			 * writer does it: both must give the same bytes.
			 */
			if (w <= 8) {
				uint8_t ref[8];

				packed++;
				if (nt_write_msg(&cfg, m, ref, (size_t)w) != w ||
				    memcmp(ref, buf + len, (size_t)w))
					packed_bad++;
			}
			/* one byte short: refused, nothing past the room */
			{
				uint8_t small[64];

				memset(small, 0xa5, sizeof(small));
				if (nt_write_msg(&cfg, m, small, (size_t)w - 1) != -1 ||
				    small[w - 1] != 0xa5)
					short_bad++;
			}
			len += (size_t)w;
			nsent++;
			/* idle bytes between some messages */
			if (!(rnd() & 7))
				buf[len++] = 0xff;
		}
		n = parse(&cfg, buf, len, 0, got, MAX_MSGS);
		for (i = 0; i < n && i < nsent; i++) {
			const struct nt_msg *g = &got[i];

			if (g->err || !same_fields(&sent[i], g)) {
				bad++;
				continue;
			}
			if (g->fields & NT_F_TSTAMP)
				time[g->src] = nt_tcode_is_sync(g->tcode) ?
					       g->tstamp :
					       time[g->src] + g->tstamp;
			if (g->time != time[g->src])
				bad++;
		}
		tap_ok(n == nsent && !bad,
		       "round trip src=%u ts=%u ext=%u xlen=%u: %zu messages, %zu bad",
		       src_bits, ts, ext, xlen, nsent, bad);
		tap_ok(packed && !packed_bad,
		       "packed and byte-wise writing agree (src=%u ts=%u "
		       "ext=%u xlen=%u): %zu short messages, %zu differ",
		       src_bits, ts, ext, xlen, packed, packed_bad);
		tap_ok(!short_bad, "a byte too little room is refused and not "
		       "overrun (src=%u ts=%u ext=%u xlen=%u): %zu bad",
		       src_bits, ts, ext, xlen, short_bad);

		/* any chunking gives the same messages */
		for (size_t chunk = 1; chunk <= 67; chunk += 11) {
			size_t n2 = parse(&cfg, buf, len, chunk, got2, MAX_MSGS);

			if (n2 != n || memcmp(got, got2, n * sizeof(got[0])))
				chunk_bad++;
		}
		tap_ok(!chunk_bad, "chunked parsing equals whole parsing "
		       "(src=%u ts=%u ext=%u xlen=%u)", src_bits, ts, ext, xlen);
	}
}

static void error_cases(void)
{
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_msg m[16], w;
	uint8_t buf[256], good[16];
	size_t n, len;
	int glen;

	/* a valid DirectBranch to use around the damage */
	memset(&w, 0, sizeof(w));
	w.tcode = NT_TCODE_DIRECT_BRANCH;
	w.icnt = 5;
	glen = nt_write_msg(&cfg, &w, good, sizeof(good));
	tap_ok(glen == 2, "DirectBranch I-CNT=5 is two bytes");

	/* reserved MSEO=10 inside a message, then a good message */
	len = 0;
	buf[len++] = NT_TCODE_DIRECT_BRANCH << 2;
	buf[len++] = 0x02;
	buf[len++] = 0x03;
	memcpy(buf + len, good, 2);
	len += 2;
	n = parse(&cfg, buf, len, 0, m, 16);
	tap_ok(n == 2 && m[0].err == NT_ERR_MSEO_RESERVED && m[0].offset == 0 &&
	       m[0].err_at == 1 && !m[1].err && m[1].offset == 3 &&
	       m[1].icnt == 5,
	       "reserved MSEO: error at byte 1, resync at byte 3");

	/* a field with more than 64 significant bits */
	len = 0;
	buf[len++] = NT_TCODE_DIRECT_BRANCH << 2;
	for (int k = 0; k < 11; k++)
		buf[len++] = 0xfc;
	buf[len++] = 0xff;
	memcpy(buf + len, good, 2);
	len += 2;
	n = parse(&cfg, buf, len, 0, m, 16);
	tap_ok(n == 2 && m[0].err == NT_ERR_FIELD_TOO_LONG && m[0].offset == 0 &&
	       !m[1].err && m[1].offset == 13,
	       "field longer than 64 bits: error at 0, resync at 13");

	/* longer than the spec maximum of 38 bytes */
	len = 0;
	buf[len++] = NT_TCODE_DIRECT_BRANCH << 2;
	for (int k = 0; k < 60; k++)
		buf[len++] = 0x00;
	buf[len++] = 0x03;
	memcpy(buf + len, good, 2);
	len += 2;
	n = parse(&cfg, buf, len, 0, m, 16);
	tap_ok(n == 2 && m[0].err == NT_ERR_MSG_TOO_LONG && m[0].offset == 0 &&
	       m[0].err_at == 38 && !m[1].err && m[1].offset == 62,
	       "message over 38 bytes: error at 38, resync at 62");

	/* truncated at the end of the stream */
	len = 0;
	memcpy(buf, good, 2);
	buf[2] = NT_TCODE_DIRECT_BRANCH << 2;
	buf[3] = 0x00;
	n = parse(&cfg, buf, 4, 0, m, 16);
	tap_ok(n == 2 && !m[0].err && m[1].err == NT_ERR_TRUNCATED &&
	       m[1].offset == 2 && m[1].size == 2,
	       "truncated last message reported at byte 2");

	/* reserved TCODE is reported, not fatal */
	buf[0] = 5 << 2;
	buf[1] = 0x07;
	memcpy(buf + 2, good, 2);
	n = parse(&cfg, buf, 4, 0, m, 16);
	tap_ok(n == 2 && m[0].err == NT_ERR_UNKNOWN_TCODE && m[0].tcode == 5 &&
	       !m[1].err && m[1].offset == 2,
	       "reserved TCODE 5: reported, next message decoded");

	/* fields that do not match the TCODE */
	buf[0] = NT_TCODE_DIRECT_BRANCH << 2;
	buf[1] = 0x05;
	buf[2] = 0x07;
	memcpy(buf + 3, good, 2);
	n = parse(&cfg, buf, 5, 0, m, 16);
	tap_ok(n == 2 && m[0].err == NT_ERR_BAD_LAYOUT && !m[1].err &&
	       m[1].offset == 3, "two fields in a DirectBranch: bad layout");

	/* garbage before a message: 11 then 01 bytes */
	buf[0] = 0x07;
	buf[1] = 0x01;
	buf[2] = 0x05;
	buf[3] = 0xff;
	memcpy(buf + 4, good, 2);
	n = parse(&cfg, buf, 6, 0, m, 16);
	tap_ok(n == 2 && m[0].err && m[0].offset == 0 && m[0].size == 4 &&
	       !m[1].err && m[1].offset == 4,
	       "garbage bytes 0..3 reported as one error, then resync");

	/*
	 * All zeroes (erased trace memory) never end a message; TCODE 0 is
	 * reserved, so the vendor-size limit applies.
	 */
	{
		static uint8_t zero[600];

		n = parse(&cfg, zero, sizeof(zero), 7, m, 16);
		tap_ok(n == 1 && m[0].err == NT_ERR_MSG_TOO_LONG &&
		       m[0].offset == 0 && m[0].err_at == 256 &&
		       m[0].size == sizeof(zero),
		       "600 zero bytes: one error covering them all");
	}

	/* all idle */
	memset(buf, 0xff, sizeof(buf));
	n = parse(&cfg, buf, sizeof(buf), 0, m, 16);
	tap_ok(n == 0, "idle bytes produce nothing");
}

/*
 * Nexus messages outside N-Trace 1.0 that SiFive's encoder sends, from
 * hand-assembled bytes: In-Circuit Trace (CKSRC 4 bits, CKDF 2 bits,
 * one CKDATA field plus CKDF more) and DataAcquisition (IDTAG, DQDATA).
 */
static void nexus_extra_messages(void)
{
	static const uint8_t bytes[] = {
		0x88, 0x44, 0x95, 0x0f,		/* ICT 1, CKDF 1, 0x25, 0x3 */
		0x88, 0x20, 0x0b,		/* ICT 8, CKDF 0, 0x2 */
		0x1c, 0x09, 0xd0, 0x20, 0x07,	/* DQ tag 0x2, data 0x1234 */
		0x88, 0x84, 0x05, 0x07,		/* CKDF 2: not a known layout */
	};
	static const char *const text[] = {
		"InCircuitTrace cksrc=1 ckdf=1 ckdata0=0x25 ckdata1=0x3",
		"InCircuitTrace cksrc=8 ckdf=0 ckdata0=0x2",
		"DataAcquisition idtag=0x2 dqdata=0x1234",
	};
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_msg m[8];
	uint8_t out[64];
	char line[128];
	size_t n = parse(&cfg, bytes, sizeof(bytes), 0, m, 8), i, at = 0;
	bool same = n == 4;

	for (i = 0; i < 3 && i < n; i++) {
		int w = nt_write_msg(&cfg, &m[i], out, sizeof(out));

		nt_msg_format(&m[i], line, sizeof(line));
		if (!tap_ok(!m[i].err && !strcmp(line, text[i]),
			    "hand-assembled %s read as '%s'",
			    nt_tcode_name(m[i].tcode), text[i]))
			tap_diag("got '%s'", line);
		same &= w == (int)m[i].size && m[i].offset == at &&
			!memcmp(out, bytes + at, m[i].size);
		at += m[i].size;
	}
	tap_ok(same, "the writer gives the same bytes back");
	tap_ok(n == 4 && m[3].err == NT_ERR_BAD_LAYOUT && m[3].offset == 12,
	       "an ICT with CKDF 2 is a bad layout, not a guess");
}

/*
 * SiFive's pre-1.0 format sends the bits of the timestamp that changed
 * since the last message: the running time is XORed with TSTAMP, not
 * added to it. Sync messages carry the whole time either way.
 */
static void sifive_timestamps(void)
{
	struct nt_stream_cfg cfg = { .xlen = 64, .timestamps = true };
	static const uint64_t sent[] = { 0x10f, 0x3, 0x8 };
	static const uint64_t xored[] = { 0x10f, 0x10c, 0x104 };
	static const uint64_t added[] = { 0x10f, 0x112, 0x11a };
	struct nt_encoder_cfg ecfg;
	struct nt_encoder *enc;
	const char *err = NULL;
	struct nt_msg m[4];
	uint8_t buf[4096];
	size_t len = 0, n, i;
	bool x = true, a = true;

	for (i = 0; i < 3; i++) {
		struct nt_msg w = {
			.tcode = i ? NT_TCODE_DIRECT_BRANCH :
				     NT_TCODE_PROG_TRACE_SYNC,
			.icnt = 2, .tstamp = sent[i], .fields = NT_F_TSTAMP,
		};

		put(&cfg, &w, buf, &len);
	}
	n = parse(&cfg, buf, len, 0, m, 4);
	for (i = 0; i < n; i++)
		a &= m[i].time == added[i];
	cfg.quirks = NT_QUIRK_SIFIVE;
	n = parse(&cfg, buf, len, 0, m, 4) == 3 && n == 3 ? 3 : 0;
	for (i = 0; i < n; i++)
		x &= m[i].time == xored[i] && m[i].tstamp == sent[i];
	tap_ok(n == 3 && x && a, "SiFive quirk: TSTAMP 0x10f (sync), 0x3, 0x8 "
	       "gives times 0x10f, 0x10c, 0x104 (0x112, 0x11a without)");

	cfg.quirks = 0x80;
	tap_ok(!nt_reader_new(&cfg), "an unknown quirk is refused");
	nt_encoder_cfg_default(&ecfg);
	ecfg.stream.quirks = NT_QUIRK_SIFIVE;
	enc = nt_encoder_new(&ecfg, &err);
	tap_ok(!enc && err, "the encoder refuses to write a quirk: %s",
	       err ? err : "accepted");
	nt_encoder_free(enc);
}

static void random_garbage(void)
{
	static uint8_t buf[1 << 16];
	static struct nt_msg m[MAX_MSGS * 4];
	unsigned int round, bad = 0;

	for (round = 0; round < 200; round++) {
		struct nt_stream_cfg cfg = {
			.src_bits = (uint8_t)(rnd() % 13),
			.timestamps = rnd() & 1,
			.extend_addr_msb = rnd() & 1,
			.xlen = (rnd() & 1) ? 32 : 64,
		};
		size_t len = 1 + rnd() % sizeof(buf), n, i;
		uint64_t covered = 0;

		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd();
		n = parse(&cfg, buf, len, 1 + rnd() % 100, m, MAX_MSGS * 4);
		for (i = 0; i < n; i++) {
			if (m[i].offset < covered || m[i].offset + m[i].size > len)
				bad++;
			covered = m[i].offset + m[i].size;
		}
	}
	tap_ok(!bad, "random bytes: records in order, inside the input");
}

/*
 * Streams mostly of branch messages of the shapes the reader takes by
 * its first bytes in streams without SRC (a two-byte DirectBranch, an
 * IndirectBranch with or without HIST whose I-CNT takes one or two
 * bytes, U-ADDR one to three and HIST one) and of their neighbours (a
 * field a byte longer), whole and damaged: read as one buffer, and a
 * byte at a time, where every message goes the general way. Both must
 * give the same records, errors and offsets included.
 */
static void short_shapes(void)
{
	static struct nt_msg whole[MAX_MSGS * 2], bytes[MAX_MSGS * 2];
	static struct nt_msg batched[MAX_MSGS * 2];
	static uint8_t buf[MAX_MSGS * 40];
	const unsigned int nt = sizeof(std_tcodes) / sizeof(std_tcodes[0]);
	unsigned int src_bits, ts, ext, damaged;

	for (src_bits = 0; src_bits <= 2; src_bits += 2)
	for (ts = 0; ts < 2; ts++)
	for (ext = 0; ext < 2; ext++)
	for (damaged = 0; damaged < 2; damaged++) {
		struct nt_stream_cfg cfg = {
			.src_bits = (uint8_t)src_bits, .timestamps = ts,
			.extend_addr_msb = ext, .xlen = ext ? 32 : 64,
		};
		size_t len = 0, n, nb, nbatch, chunk, i, differ = 0, bdiffer = 0;
		size_t shaped = 0, errs = 0;

		for (i = 0; i < 3000; i++) {
			static const unsigned int branches[] = {
				NT_TCODE_DIRECT_BRANCH, NT_TCODE_DIRECT_BRANCH,
				NT_TCODE_INDIRECT_BRANCH,
				NT_TCODE_INDIRECT_BRANCH_HIST,
			};
			unsigned int pick = (unsigned int)(rnd() % 10);
			struct nt_msg m;
			int w;

			if (pick < 8) {
				random_msg(&cfg, branches[pick % 4], &m);
				/* one byte, two, or a byte too many */
				m.icnt = rnd() % (m.tcode ==
					NT_TCODE_DIRECT_BRANCH ? 80 : 1100);
				/* one to four bytes */
				m.addr_field = rnd() & ((1u << (1 + rnd() % 19)) - 1);
				m.hist = 1 + rnd() % 127;
				if (rnd() & 3)
					m.fields &= ~NT_F_TSTAMP;
			} else {
				random_msg(&cfg, std_tcodes[rnd() % nt], &m);
			}
			w = nt_write_msg(&cfg, &m, buf + len, sizeof(buf) - len);
			if (w > 0)
				len += (size_t)w;
		}
		for (i = 0; damaged && i < len / 50; i++) {
			size_t at = rnd() % len;

			if (rnd() & 1)
				buf[at] ^= (uint8_t)(1u << (rnd() & 7));
			else
				buf[at] = (uint8_t)rnd();
		}
		n = parse(&cfg, buf, len, 0, whole, MAX_MSGS * 2);
		nb = parse(&cfg, buf, len, 1, bytes, MAX_MSGS * 2);
		/* in batches of 1 to 64, fed whole or 1 to 40 bytes a time */
		chunk = rnd() & 1 ? 0 : 1 + rnd() % 40;
		nbatch = parse_batch(&cfg, buf, len, chunk, 1 + rnd() % 64,
				     batched, MAX_MSGS * 2);
		for (i = 0; i < n && i < nb; i++) {
			const struct nt_msg *m = &whole[i];

			if (memcmp(m, &bytes[i], NT_MSG_CLEARED_BYTES) ||
			    !same_fields(m, &bytes[i]))
				differ++;
			if (i < nbatch &&
			    (memcmp(m, &batched[i], NT_MSG_CLEARED_BYTES) ||
			     !same_fields(m, &batched[i])))
				bdiffer++;
			shaped += !m->err && !(m->fields & NT_F_TSTAMP) &&
				  ((m->tcode == NT_TCODE_DIRECT_BRANCH &&
				    m->size == 2) ||
				   (m->tcode == NT_TCODE_INDIRECT_BRANCH &&
				    m->icnt < 1024 && m->addr_field < 1u << 18) ||
				   (m->tcode == NT_TCODE_INDIRECT_BRANCH_HIST &&
				    m->icnt < 1024 && m->addr_field < 1u << 18 &&
				    m->hist < 64));
			errs += m->err != NT_OK;
		}
		tap_ok(n == nb && !differ && (src_bits || shaped > 500) &&
		       (errs > 0) == damaged,
		       "src %u, timestamps %u, addr ext %u%s: %zu records "
		       "(%zu of a short shape, %zu errors) the same whole and "
		       "byte by byte (%zu and %zu, %zu differ)", src_bits, ts,
		       ext, damaged ? ", damaged" : "", n, shaped, errs, n, nb,
		       differ);
		tap_ok(nbatch == n && !bdiffer,
		       "src %u, timestamps %u, addr ext %u%s: the same %zu "
		       "records in batches (%zu, %zu differ)", src_bits, ts,
		       ext, damaged ? ", damaged" : "", n, nbatch, bdiffer);
	}
}

/*
 * A few branch messages, each written once and then sent again and
 * again in random order, sync messages among them to set the address
 * and the time: the reader takes a message it has read before from its
 * memo, with only the offset, target and time filled in anew. A third
 * of them are nine to sixteen bytes long, which the general path reads
 * the first time and the memo serves in batches after. Read as
 * one buffer, in batches and a byte at a time (never from the memo),
 * the records must be the same, targets and times included, in every
 * stream the memo serves (TSTAMP added, TSTAMP as SiFive's changed
 * bits, which it must not take, addresses extended) and with SRC: two
 * bits of it, and one bit (two sources, which the batch loop keeps in
 * registers) with TSTAMP and without.
 */
static void repeated_messages(void)
{
	static struct nt_msg whole[MAX_MSGS * 2], bytes[MAX_MSGS * 2];
	static struct nt_msg batched[MAX_MSGS * 2];
	static uint8_t buf[MAX_MSGS * 40];
	static const unsigned int kinds[] = {
		NT_TCODE_DIRECT_BRANCH, NT_TCODE_INDIRECT_BRANCH,
		NT_TCODE_INDIRECT_BRANCH_HIST, NT_TCODE_INDIRECT_BRANCH_SYNC,
	};
	unsigned int variant;

	for (variant = 0; variant < 7; variant++) {
		struct nt_stream_cfg cfg = {
			.timestamps = variant == 1 || variant == 2 ||
				      variant == 6,
			.quirks = variant == 2 ? NT_QUIRK_SIFIVE : 0,
			.extend_addr_msb = variant == 3,
			.xlen = variant == 3 ? 32 : 64,
			.src_bits = variant == 4 ? 2 : variant >= 5 ? 1 : 0,
		};
		uint8_t msg[24][40];
		int size[24];
		size_t len = 0, n, nb, nbatch, i, differ = 0, bdiffer = 0;
		size_t repeats = 0, longer = 0;
		uint64_t times = 0;

		for (i = 0; i < 24; i++) {
			struct nt_msg m;

			random_msg(&cfg, kinds[i % 4], &m);
			/* short fields: messages of up to eight bytes */
			m.icnt = rnd() % 300;
			m.addr_field = rnd() & 0x3fff;
			m.hist = 1 + rnd() % 127;
			m.tstamp &= 0xfff;
			if (i >= 16) {
				/* IndirectBranch[Hist]: nine to sixteen bytes */
				m.icnt = 1u << 17 | (rnd() & 0xffff);
				m.addr_field = 1u << 27 | (rnd() & 0xffffff);
				m.hist = 1u << 13 | (rnd() & 0xfff);
			}
			if (i % 4 == 3)
				m.addr_field = rnd_bits(31) << 1;
			size[i] = nt_write_msg(&cfg, &m, msg[i],
					       sizeof(msg[i]));
			longer += i % 4 != 3 && size[i] > 8 && size[i] <= 16;
		}
		while (repeats < MAX_MSGS && len + 40 < sizeof(buf)) {
			i = rnd() % 24;
			if (size[i] <= 0)
				continue;
			memcpy(buf + len, msg[i], (size_t)size[i]);
			len += (size_t)size[i];
			repeats++;
		}
		n = parse(&cfg, buf, len, 0, whole, MAX_MSGS * 2);
		nb = parse(&cfg, buf, len, 1, bytes, MAX_MSGS * 2);
		nbatch = parse_batch(&cfg, buf, len, rnd() & 1 ? 0 : 4096,
				     1 + rnd() % 64, batched, MAX_MSGS * 2);
		for (i = 0; i < n && i < nb; i++) {
			const struct nt_msg *m = &whole[i];

			if (memcmp(m, &bytes[i], NT_MSG_CLEARED_BYTES) ||
			    !same_fields(m, &bytes[i]))
				differ++;
			if (i >= nbatch ||
			    memcmp(m, &batched[i], NT_MSG_CLEARED_BYTES))
				bdiffer++;
			times += whole[i].time != 0;
		}
		tap_ok(n == repeats && nb == n && nbatch == n && !differ &&
		       !bdiffer && (times > 0) == cfg.timestamps &&
		       longer >= 4,
		       "%zu repeats of 24 messages, %zu branches of 9 to 16 "
		       "bytes (timestamps %u, quirks %u, addr ext %u, src "
		       "%u): the same records whole, in batches and byte by "
		       "byte (%zu, %zu and %zu; %zu and %zu differ)", repeats,
		       longer, cfg.timestamps, cfg.quirks,
		       cfg.extend_addr_msb, cfg.src_bits, n, nbatch, nb,
		       differ, bdiffer);
	}
}

/*
 * Long branch messages that share their first eight bytes (the same
 * I-CNT and U-ADDR) and differ after them (HIST), more of them than the
 * memo has slots, so that some share a slot: a message must not be
 * taken for another with the same first eight bytes. Some are longer
 * than the sixteen bytes the memo keeps. Read whole, in batches and a
 * byte at a time, which never takes from the memo.
 */
static void long_messages_alike(void)
{
	enum { KINDS = 3000, SENT = 9000 };
	static struct nt_msg whole[SENT], batched[SENT], bytes[SENT];
	static uint8_t msg[KINDS][24], buf[SENT * 24];
	static int size[KINDS];
	struct nt_stream_cfg cfg = { .xlen = 64 };
	size_t len = 0, n, nbatch, nb, i, differ = 0, over16 = 0;

	for (i = 0; i < KINDS; i++) {
		uint64_t hist_top;
		struct nt_msg m;

		memset(&m, 0, sizeof(m));
		m.tcode = NT_TCODE_INDIRECT_BRANCH_HIST;
		m.icnt = 0x2abcde;
		m.addr_field = 0x2345678;
		/* 12 to 44 bits of HIST: 11 to 18 bytes */
		hist_top = 1ull << (12 + i % 33);
		m.hist = hist_top | ((i * 0x9e3779b9ull) & (hist_top - 1));
		size[i] = nt_write_msg(&cfg, &m, msg[i], sizeof(msg[i]));
		over16 += size[i] > 16;
	}
	for (i = 0; i < SENT; i++) {
		unsigned int k = rnd() % KINDS;

		if (size[k] <= 0)
			continue;
		memcpy(buf + len, msg[k], (size_t)size[k]);
		len += (size_t)size[k];
	}
	n = parse(&cfg, buf, len, 0, whole, SENT);
	nbatch = parse_batch(&cfg, buf, len, 0, 64, batched, SENT);
	/* a byte at a time: never from the memo */
	nb = parse(&cfg, buf, len, 1, bytes, SENT);
	for (i = 0; i < n && i < nbatch && i < nb; i++)
		differ += memcmp(&whole[i], &batched[i],
				 NT_MSG_CLEARED_BYTES) != 0 ||
			  memcmp(&whole[i], &bytes[i],
				 NT_MSG_CLEARED_BYTES) != 0;
	tap_ok(n == SENT && nbatch == n && nb == n && !differ &&
	       over16 > 0 && !memcmp(msg[0], msg[1], 8),
	       "%d long messages with the same first eight bytes, %zu of "
	       "them over sixteen: %zu records, the same in batches and "
	       "byte by byte (%zu and %zu, %zu differ)", KINDS, over16, n,
	       nbatch, nb, differ);
}

int main(void)
{
	golden_message_example();
	golden_xor_example();
	golden_extended_addresses();
	round_trips();
	error_cases();
	nexus_extra_messages();
	sifive_timestamps();
	random_garbage();
	short_shapes();
	repeated_messages();
	long_messages_alike();
	return tap_done();
}
