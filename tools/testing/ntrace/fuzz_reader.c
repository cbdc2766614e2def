// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libFuzzer target for the N-Trace reader and writer.
 *
 * Input: byte 0 selects the stream configuration, the rest is trace
 * bytes. The bytes are parsed as one buffer, in batches
 * (nt_reader_next_batch()), and again in chunks whose sizes come from
 * the input, a record at a time; both must give the same records, and those
 * records must describe the input consistently. Every valid message is
 * then written back with nt_write_msg() and parsed alone: the transmitted
 * fields must survive the round trip.
 *
 * Each chunk is handed to the reader in its own allocation of exactly
 * its size, so ASan sees a read past a chunk or of a chunk the reader
 * should no longer hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct msgs {
	struct nt_msg *m;
	size_t n, cap;
};

static void fail(const char *what, size_t idx)
{
	fprintf(stderr, "fuzz_reader: %s (record %zu)\n", what, idx);
	abort();
}

static void push(struct msgs *v, const struct nt_msg *m)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 64;
		v->m = realloc(v->m, v->cap * sizeof(*v->m));
		if (!v->m)
			abort();
	}
	v->m[v->n++] = *m;
}

/*
 * Byte 0: bits 0-3 SRC width (mod 13), 4 timestamps, 5 extend-addr-msb,
 * 6 RV32, 7 a small message size limit (exercises MSG_TOO_LONG).
 */
static void config_from(uint8_t b, struct nt_stream_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->src_bits = (b & 0x0f) % (NT_MAX_SRC_BITS + 1);
	/* the SRC widths that wrap select SiFive's pre-1.0 format */
	cfg->quirks = (b & 0x0f) > NT_MAX_SRC_BITS ? NT_QUIRK_SIFIVE : 0;
	cfg->timestamps = b & 0x10;
	cfg->extend_addr_msb = b & 0x20;
	cfg->xlen = b & 0x40 ? 32 : 64;
	cfg->max_msg_bytes = b & 0x80 ? 12 : 0;
}

/*
 * Each record starts from a different byte pattern in the whole and the
 * chunked parse: a flagged field the reader forgot to set then shows up
 * as a difference instead of matching by luck. With batch, records come
 * batch at a time from nt_reader_next_batch().
 */
static void drain(struct nt_reader *r, struct msgs *v, uint8_t poison,
		  size_t batch)
{
	struct nt_msg m[17];
	size_t want = batch ? batch : 1, k, i;

	for (;;) {
		memset(m, poison, sizeof(m));
		k = batch ? nt_reader_next_batch(r, m, batch) :
			    (size_t)nt_reader_next(r, m);
		for (i = 0; i < k; i++)
			push(v, &m[i]);
		if (k < want)
			break;
	}
}

static void parse_whole(const struct nt_stream_cfg *cfg, const uint8_t *p,
			size_t n, struct msgs *v)
{
	struct nt_reader *r = nt_reader_new(cfg);

	if (!r)
		abort();
	/* the whole input in batches, of a size the input chooses */
	nt_reader_feed(r, p, n);
	drain(r, v, 0xa5, 1 + n % 17);
	nt_reader_finish(r);
	drain(r, v, 0xa5, 1 + n % 17);
	nt_reader_free(r);
}

/* Chunk sizes 0..31 (empty chunks included) from a generator seeded by
 * the input, so a crash reproduces from the file alone. */
static void parse_chunked(const struct nt_stream_cfg *cfg, const uint8_t *p,
			  size_t n, uint32_t seed, struct msgs *v)
{
	struct nt_reader *r = nt_reader_new(cfg);
	uint32_t x = seed | 1;
	size_t off = 0;

	if (!r)
		abort();
	while (off < n) {
		size_t len;
		uint8_t *copy;

		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		len = x % 32;
		if (len > n - off)
			len = n - off;
		/* malloc(0) may return NULL: keep one byte, feed none */
		copy = malloc(len ? len : 1);
		if (!copy)
			abort();
		memcpy(copy, p + off, len);
		nt_reader_feed(r, copy, len);
		drain(r, v, 0x5a, 0);
		free(copy);
		off += len;
	}
	nt_reader_finish(r);
	drain(r, v, 0x5a, 0);
	nt_reader_free(r);
}

/*
 * The fields as transmitted. The tail of struct nt_msg (RDATA, PROCESS,
 * ECODE, B-CNT, raw, IDTAG, DQDATA, CKDATA) is only defined when its NT_F_ bit is set, so only
 * then is it compared.
 */
static bool same_fields(const struct nt_msg *a, const struct nt_msg *b)
{
	uint32_t f = a->fields;

	if (!(f == b->fields && a->err == b->err && a->tcode == b->tcode &&
	      a->src == b->src && a->sync == b->sync && a->btype == b->btype &&
	      a->etype == b->etype && a->rcode == b->rcode &&
	      a->evcode == b->evcode && a->cdf == b->cdf &&
	      a->nrdata == b->nrdata && a->nraw == b->nraw &&
	      a->cksrc == b->cksrc && a->ckdf == b->ckdf &&
	      a->icnt == b->icnt && a->addr_field == b->addr_field &&
	      a->hist == b->hist && a->tstamp == b->tstamp))
		return false;
	if ((f & NT_F_RDATA) &&
	    (a->nrdata > 2 || memcmp(a->rdata, b->rdata,
				     a->nrdata * sizeof(a->rdata[0]))))
		return false;
	if (((f & NT_F_PROCESS) && a->process != b->process) ||
	    ((f & NT_F_ECODE) && a->ecode != b->ecode) ||
	    ((f & NT_F_BCNT) && a->bcnt != b->bcnt) ||
	    ((f & NT_F_IDTAG) && a->idtag != b->idtag) ||
	    ((f & NT_F_DQDATA) && a->dqdata != b->dqdata) ||
	    ((f & NT_F_CKDATA) &&
	     (a->ckdf > 1 || memcmp(a->ckdata, b->ckdata,
				    (a->ckdf + 1u) * sizeof(a->ckdata[0])))))
		return false;
	return !(f & NT_F_RAW) ||
	       (a->nraw <= NT_MAX_RAW_FIELDS &&
		!memcmp(a->raw, b->raw, a->nraw * sizeof(a->raw[0])));
}

/* Everything, reconstructed state and positions included. */
static bool same_record(const struct nt_msg *a, const struct nt_msg *b)
{
	return same_fields(a, b) && a->offset == b->offset &&
	       a->err_at == b->err_at && a->size == b->size &&
	       a->target == b->target && a->time == b->time;
}

static void check_layout(const struct nt_stream_cfg *cfg, const uint8_t *p,
			 size_t n, const struct msgs *v)
{
	uint64_t next = 0;
	size_t i;

	for (i = 0; i < v->n; i++) {
		const struct nt_msg *m = &v->m[i];
		uint32_t limit;

		if (m->err >= NT_ERR__COUNT)
			fail("error code out of range", i);
		if (!m->size || m->offset < next || m->offset > n ||
		    m->size > n - m->offset)
			fail("record outside the input or out of order", i);
		next = m->offset + m->size;
		if (m->err && m->err != NT_ERR_UNKNOWN_TCODE) {
			if (m->err_at < m->offset || m->err_at >= next)
				fail("error position outside its record", i);
			continue;
		}
		/* a message is TCODE first and ends on MSEO=11 */
		if ((p[m->offset + m->size - 1] & 3) != 3 ||
		    m->tcode != p[m->offset] >> 2)
			fail("message bytes do not frame the message", i);
		/* vendor and reserved TCODEs have their own, larger limit */
		limit = NT_MAX_VENDOR_MSG_BYTES;
		if (!(m->fields & NT_F_RAW))
			limit = cfg->max_msg_bytes ? cfg->max_msg_bytes
						   : NT_MAX_MSG_BYTES;
		if (m->size > limit)
			fail("message longer than the limit", i);
		if ((m->fields & NT_F_SRC) != (cfg->src_bits ? NT_F_SRC : 0) ||
		    (cfg->src_bits && m->src >> cfg->src_bits))
			fail("SRC field does not match the configuration", i);
		if ((m->fields & NT_F_TSTAMP) && !cfg->timestamps)
			fail("TSTAMP without timestamps", i);
	}
}

static void check_round_trip(const struct nt_stream_cfg *cfg,
			     const struct msgs *v)
{
	uint8_t out[NT_MAX_VENDOR_MSG_BYTES + 8];
	/*
	 * One reader for all written messages: a new one per message costs
	 * a calloc of up to 4096 SRC states.
	 * Its address/time history differs from a fresh reader's, which is
	 * why only transmitted fields are compared.
	 */
	struct nt_reader *r = nt_reader_new(cfg);
	size_t i;

	if (!r)
		abort();
	for (i = 0; i < v->n; i++) {
		const struct nt_msg *m = &v->m[i];
		struct msgs again = { 0 };
		struct nt_msg want;
		int len;

		if (m->err)
			continue;
		/*
		 * The reader accepts HIST in a ProgTraceCorrelation whose CDF
		 * is not 1 (lenient towards such peers); the writer, as the
		 * spec says, sends HIST only with CDF=1. That conversion is
		 * one way, so HIST is not expected back in that case.
		 */
		want = *m;
		if (m->tcode == NT_TCODE_PROG_TRACE_CORRELATION &&
		    m->cdf != 1 && (m->fields & NT_F_HIST)) {
			want.fields &= ~NT_F_HIST;
			want.hist = 0;
		}
		len = nt_write_msg(cfg, m, out, sizeof(out));
		if (len <= 0)
			fail("a parsed message cannot be written", i);
		/* the writer drops leading zeroes: never longer than parsed */
		if ((uint32_t)len > m->size)
			fail("written message longer than the parsed one", i);
		nt_reader_feed(r, out, (size_t)len);
		drain(r, &again, 0x3c, 0);
		if (again.n != 1 || again.m[0].size != (uint32_t)len)
			fail("written message does not parse as one message",
			     i);
		if (!same_fields(&want, &again.m[0]))
			fail("fields changed in the write/parse round trip", i);
		free(again.m);
	}
	nt_reader_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nt_stream_cfg cfg;
	struct msgs whole = { 0 }, chunked = { 0 };
	uint32_t seed;
	size_t i;

	if (size < 1)
		return 0;
	config_from(data[0], &cfg);
	data++;
	size--;

	parse_whole(&cfg, data, size, &whole);
	check_layout(&cfg, data, size, &whole);

	seed = 2166136261u;
	for (i = 0; i < size && i < 16; i++)
		seed = (seed ^ data[i]) * 16777619u;
	parse_chunked(&cfg, data, size, seed ^ (uint32_t)size, &chunked);
	if (chunked.n != whole.n)
		fail("chunked parse gives a different number of records",
		     chunked.n < whole.n ? chunked.n : whole.n);
	for (i = 0; i < whole.n; i++)
		if (!same_record(&whole.m[i], &chunked.m[i]))
			fail("chunked parse differs from the whole parse", i);

	check_round_trip(&cfg, &whole);
	free(whole.m);
	free(chunked.m);
	return 0;
}
