// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * N-Trace message codec: bytes <-> messages (N-Trace 1.0 chapter 3 and the
 * message tables of chapters 5 and 6).
 *
 * Every byte carries MSEO in bits [1:0] and six MDO bits in [7:2]; fields
 * are packed LSB first. Fixed fields may share an MDO with the first bits
 * of the following variable field; a variable field always ends on a byte
 * boundary, marked by MSEO=01 (end of field) or MSEO=11 (end of message).
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"
#include "pack.h"
#include "reader.h"

#define MSEO_NORMAL	0u
#define MSEO_END_FIELD	1u
#define MSEO_RESERVED	2u
#define MSEO_END_MSG	3u
#define IDLE_BYTE	0xffu

/* Variable fields one message may carry before it is malformed. */
#define MAX_VAR_FIELDS	(NT_MAX_RAW_FIELDS + 2)

static const char *const tcode_names[64] = {
	[NT_TCODE_OWNERSHIP] = "Ownership",
	[NT_TCODE_DIRECT_BRANCH] = "DirectBranch",
	[NT_TCODE_INDIRECT_BRANCH] = "IndirectBranch",
	[NT_TCODE_DATA_ACQUISITION] = "DataAcquisition",
	[NT_TCODE_ERROR] = "Error",
	[NT_TCODE_PROG_TRACE_SYNC] = "ProgTraceSync",
	[NT_TCODE_DIRECT_BRANCH_SYNC] = "DirectBranchSync",
	[NT_TCODE_INDIRECT_BRANCH_SYNC] = "IndirectBranchSync",
	[NT_TCODE_RESOURCE_FULL] = "ResourceFull",
	[NT_TCODE_INDIRECT_BRANCH_HIST] = "IndirectBranchHist",
	[NT_TCODE_INDIRECT_BRANCH_HIST_SYNC] = "IndirectBranchHistSync",
	[NT_TCODE_REPEAT_BRANCH] = "RepeatBranch",
	[NT_TCODE_PROG_TRACE_CORRELATION] = "ProgTraceCorrelation",
	[NT_TCODE_IN_CIRCUIT_TRACE] = "InCircuitTrace",
};

const char *nt_tcode_name(unsigned int tcode)
{
	if (tcode >= NT_TCODE_VENDOR_FIRST && tcode <= NT_TCODE_VENDOR_LAST)
		return "VendorDefined";
	if (tcode < 64 && tcode_names[tcode])
		return tcode_names[tcode];
	return "Reserved";
}

const char *nt_err_name(unsigned int err)
{
	static const char *const names[NT_ERR__COUNT] = {
		[NT_OK] = "ok",
		[NT_ERR_MSEO_RESERVED] = "reserved MSEO sequence",
		[NT_ERR_GARBAGE] = "bytes outside any message",
		[NT_ERR_FIELD_TOO_LONG] = "field longer than 64 bits",
		[NT_ERR_MSG_TOO_LONG] = "message longer than the maximum",
		[NT_ERR_TRUNCATED] = "truncated message",
		[NT_ERR_BAD_LAYOUT] = "fields do not match the TCODE",
		[NT_ERR_UNKNOWN_TCODE] = "reserved TCODE",
	};

	return err < NT_ERR__COUNT ? names[err] : "unknown error";
}

const char *nt_sync_name(unsigned int sync)
{
	static const char *const names[16] = {
		[NT_SYNC_EXTERNAL_TRIGGER] = "external-trigger",
		[NT_SYNC_RESET] = "reset-exit",
		[NT_SYNC_PERIODIC] = "periodic",
		[NT_SYNC_DEBUG_EXIT] = "debug-exit",
		[NT_SYNC_ICNT_FULL] = "icnt-full",
		[NT_SYNC_TRACE_ENABLE] = "trace-enable",
		[NT_SYNC_TRACE_EVENT] = "trace-event",
		[NT_SYNC_FIFO_OVERRUN] = "fifo-overrun",
		[NT_SYNC_POWER_DOWN_EXIT] = "power-down-exit",
	};

	if (sync < 16 && names[sync])
		return names[sync];
	return sync >= 14 && sync < 16 ? "vendor" : "reserved";
}

bool nt_tcode_is_sync(unsigned int tcode)
{
	return tcode == NT_TCODE_PROG_TRACE_SYNC ||
	       tcode == NT_TCODE_DIRECT_BRANCH_SYNC ||
	       tcode == NT_TCODE_INDIRECT_BRANCH_SYNC ||
	       tcode == NT_TCODE_INDIRECT_BRANCH_HIST_SYNC;
}

uint64_t nt_msg_halfwords(const struct nt_msg *m, uint64_t *last_branch_icnt)
{
	if (m->err && m->err != NT_ERR_UNKNOWN_TCODE)
		return 0;
	switch (m->tcode) {
	case NT_TCODE_DIRECT_BRANCH:
	case NT_TCODE_INDIRECT_BRANCH:
	case NT_TCODE_INDIRECT_BRANCH_HIST:
		*last_branch_icnt = m->icnt;
		return m->icnt;
	case NT_TCODE_REPEAT_BRANCH:
		return m->bcnt * *last_branch_icnt;
	case NT_TCODE_RESOURCE_FULL:
		return m->rcode == NT_RCODE_ICNT ? m->rdata[0] : 0;
	default:
		return (m->fields & NT_F_ICNT) ? m->icnt : 0;
	}
}

static bool tcode_is_known(unsigned int tcode)
{
	return tcode < 64 && tcode_names[tcode];
}

static unsigned int addr_field_bits(const struct nt_stream_cfg *cfg)
{
	return cfg->xlen == 32 ? 31 : 63;
}

static uint64_t low_mask(unsigned int bits)
{
	return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

/*
 * Section 8.2: with trTeInstExtendAddrMSB the top bit of the last MDO is
 * replicated up to the top of the address field. A field as wide as the
 * address is never extended.
 */
static inline __attribute__((always_inline))
uint64_t extend_addr(const struct nt_stream_cfg *cfg, uint64_t v,
			    unsigned int nbits)
{
	unsigned int width = addr_field_bits(cfg);

	if (cfg->extend_addr_msb && nbits && nbits < width &&
	    (v >> (nbits - 1)) & 1)
		v |= ~low_mask(nbits);
	return v & low_mask(width);
}

/* ---- message layouts -------------------------------------------------- */

/*
 * The layout of each standard TCODE: fixed fields after TCODE/SRC, and the
 * variable fields before the optional TSTAMP.
 */
enum var_kind { V_ICNT, V_FADDR, V_UADDR, V_HIST, V_PROCESS, V_ECODE,
		V_BCNT, V_RDATA0, V_RDATA1, V_IDTAG, V_DQDATA, V_CKDATA0,
		V_CKDATA1 };

struct layout {
	uint8_t known;
	/* 4-bit: ETYPE/RCODE/EVCODE/CKSRC; 2-bit: B-TYPE, CDF/CKDF */
	uint8_t fixed_sync, fixed_btype, fixed_4bit;
	uint8_t fixed_cdf;
	uint8_t nvar;
	uint8_t var[3];
};

#define LAYOUT(sync, btype, four, cdf, n, v0, v1, v2)			\
	{ .known = 1, .fixed_sync = sync, .fixed_btype = btype,		\
	  .fixed_4bit = four, .fixed_cdf = cdf, .nvar = n,		\
	  .var = { v0, v1, v2 } }

/*
 * Indexed by TCODE; RCODE, CDF and CKDF decide the rest at parse time.
 *
 * The Nexus standard leaves the widths of IDTAG, CKSRC and CKDF to the
 * vendor (IEEE-ISTO 5001-2012, tables 4-31 and 4-33). These are the
 * widths of the only RISC-V encoders known to send the messages (SiFive's
 * trace encoder, as libnexus-rv reads it): IDTAG a variable field, CKSRC
 * 4 bits and CKDF 2 bits, CKDF being the number of CKDATA fields after
 * the first.
 */
static const struct layout layouts[64] = {
	[NT_TCODE_OWNERSHIP] = LAYOUT(0, 0, 0, 0, 1, V_PROCESS, 0, 0),
	[NT_TCODE_DIRECT_BRANCH] = LAYOUT(0, 0, 0, 0, 1, V_ICNT, 0, 0),
	[NT_TCODE_INDIRECT_BRANCH] = LAYOUT(0, 1, 0, 0, 2, V_ICNT, V_UADDR, 0),
	[NT_TCODE_DATA_ACQUISITION] = LAYOUT(0, 0, 0, 0, 2, V_IDTAG, V_DQDATA, 0),
	[NT_TCODE_ERROR] = LAYOUT(0, 0, 1, 0, 1, V_ECODE, 0, 0),
	[NT_TCODE_PROG_TRACE_SYNC] = LAYOUT(1, 0, 0, 0, 2, V_ICNT, V_FADDR, 0),
	[NT_TCODE_DIRECT_BRANCH_SYNC] = LAYOUT(1, 0, 0, 0, 2, V_ICNT, V_FADDR, 0),
	[NT_TCODE_INDIRECT_BRANCH_SYNC] =
		LAYOUT(1, 1, 0, 0, 2, V_ICNT, V_FADDR, 0),
	[NT_TCODE_RESOURCE_FULL] = LAYOUT(0, 0, 1, 0, 1, V_RDATA0, 0, 0),
	[NT_TCODE_INDIRECT_BRANCH_HIST] =
		LAYOUT(0, 1, 0, 0, 3, V_ICNT, V_UADDR, V_HIST),
	[NT_TCODE_INDIRECT_BRANCH_HIST_SYNC] =
		LAYOUT(1, 1, 0, 0, 3, V_ICNT, V_FADDR, V_HIST),
	[NT_TCODE_REPEAT_BRANCH] = LAYOUT(0, 0, 0, 0, 1, V_BCNT, 0, 0),
	[NT_TCODE_PROG_TRACE_CORRELATION] = LAYOUT(0, 0, 1, 1, 1, V_ICNT, 0, 0),
	[NT_TCODE_IN_CIRCUIT_TRACE] =
		LAYOUT(0, 0, 1, 1, 2, V_CKDATA0, V_CKDATA1, 0),
};

static bool get_layout(unsigned int tcode, struct layout *l)
{
	*l = layouts[tcode & 63];
	return l->known;
}

/* ---- parsing one complete message ---------------------------------- */

struct src_state {
	uint64_t addr;
	uint64_t time;
};

struct nt_reader {
	struct nt_stream_cfg cfg;
	const uint8_t *chunk;
	size_t len, pos;
	uint64_t chunk_base;	/* stream offset of chunk[0] */
	bool finished;
	bool after_end;		/* previous byte had MSEO=11 (or none yet) */
	bool skipping;		/* resynchronising: wait for MSEO=11 */
	/* partial message carried across chunks */
	bool in_msg;
	uint32_t blen;
	uint64_t msg_off;
	/* error being accumulated until the next resynchronisation point */
	bool perr;
	uint8_t perr_kind;
	uint64_t perr_off, perr_at, perr_end;
	struct src_state *src;
	uint8_t fixed_bits[64];		/* per TCODE, for this configuration */
	uint16_t max_bytes[64];		/* per TCODE */
	/* the lean path (lean_branch()): variable fields per TCODE, 0 = none */
	uint8_t lean_nvar[64];
	/* per TCODE: MSEO bit 0 of the bytes its fixed fields fill */
	uint64_t lean_fixed_ends[64];
	/* the shapes short_shape() takes: streams without SRC ... */
	bool short_direct;
	bool short_indirect;		/* ... nor address extension */
	uint64_t addr_mask;		/* reconstructed addresses: XLEN bits */
	uint64_t addr_field_mask;	/* address fields: XLEN - 1 bits */
	struct memo *memo;		/* MEMO_SLOTS; NULL: none */
	uint8_t buf[NT_MAX_VENDOR_MSG_BYTES];
};

/*
 * The message memo. A trace is the same few thousand short branch
 * messages again and again (the decoder's run cache counts on it too),
 * and the lean path makes the same record of the same bytes every
 * time, but for the offset and what the reader's state adds: the
 * target (the address history XOR U-ADDR) and the time (the last one
 * plus TSTAMP). So the record the lean path made of a message of up to
 * eight bytes is kept under its bytes, and the next time they come it
 * is copied and those three filled in: no split into fields, no
 * decision on the shape. A message's SRC is among its bytes, so the
 * memo also tells which source's history and time it takes. Branch
 * messages of nine to sixteen bytes (a long HIST, a far U-ADDR) are
 * kept as well, from the general path's records.
 *
 * The slots are direct-mapped. A funnel's SRC doubles the kinds of
 * messages (qsort_cb's BTM from two harts: 625), and 1024 slots missed
 * 1.3% of them there, 2048 slots 0.6%.
 */
#define MEMO_SLOTS_LOG2		11

/*
 * The parts of the record a memo copies: from err_at to target, and
 * from hist to time, 16 bytes a move; what lies between is filled in.
 */
#define MEMO_COPY1	offsetof(struct nt_msg, err_at)
#define MEMO_COPY1_END	offsetof(struct nt_msg, target)
#define MEMO_COPY2	offsetof(struct nt_msg, hist)
#define MEMO_COPY2_END	offsetof(struct nt_msg, time)
_Static_assert(offsetof(struct nt_msg, offset) == 0 &&
	       MEMO_COPY1 == sizeof(uint64_t) &&
	       (MEMO_COPY1_END - MEMO_COPY1) % 16 == 0 &&
	       MEMO_COPY2 == MEMO_COPY1_END + sizeof(uint64_t) &&
	       MEMO_COPY2_END - MEMO_COPY2 == 16 &&
	       MEMO_COPY2_END + sizeof(uint64_t) == NT_MSG_CLEARED_BYTES,
	       "struct nt_msg head changed");

struct memo {
	/*
	 * The message, first byte lowest (0: none); if it is longer than
	 * eight bytes, bytes has the first eight, none of which ends it,
	 * and bytes2 the rest. A message of up to eight bytes ends in its
	 * last one, so no other message has its bytes.
	 */
	uint64_t bytes, bytes2;
	/*
	 * U-ADDR: flip is U-ADDR << 1, XORed into the address history,
	 * which is then the target; take, the XLEN bits of the target.
	 * No U-ADDR: both 0 (the history stays, no target). The history
	 * never has bits above XLEN (every target is masked to them, and
	 * the decoder's run cache only XORs targets), so the XOR needs no
	 * mask of its own. tstamp is added to the time.
	 *
	 * Where SRC has one bit, flip, take and tstamp are for source 0
	 * and flip1, take1 and tstamp1 for source 1, those of the other
	 * source all 0: both are applied to the two sources' state with
	 * no choice between them (memo_take_two()). Elsewhere flip1,
	 * take1 and tstamp1 are 0.
	 */
	uint64_t flip, take, tstamp, flip1;
	/*
	 * The record's parts that are copied as they are; each 16-byte
	 * move stays within one cache line.
	 */
	unsigned char copy1[MEMO_COPY1_END - MEMO_COPY1];
	uint64_t take1;
	unsigned char copy2[MEMO_COPY2_END - MEMO_COPY2];
	uint64_t tstamp1;
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct memo) == 128 &&
	       offsetof(struct memo, copy1) % 16 == 0 &&
	       offsetof(struct memo, copy1) / 64 ==
	       (offsetof(struct memo, copy1) + 15) / 64 &&
	       offsetof(struct memo, copy2) / 64 ==
	       (offsetof(struct memo, copy2) + 15) / 64 &&
	       offsetof(struct nt_msg, src) >= MEMO_COPY1 &&
	       offsetof(struct nt_msg, src) + 2 <= MEMO_COPY1_END,
	       "two cache lines a memo, SRC among what it copies");

struct var_field {
	uint64_t v;
	unsigned int nbits;
};

static uint16_t max_msg_bytes(const struct nt_stream_cfg *cfg,
			      unsigned int tcode)
{
	if (!tcode_is_known(tcode))
		return NT_MAX_VENDOR_MSG_BYTES;
	if (cfg->max_msg_bytes && cfg->max_msg_bytes < NT_MAX_VENDOR_MSG_BYTES)
		return cfg->max_msg_bytes;
	return NT_MAX_MSG_BYTES;
}

/*
 * Most messages are at most ten bytes: their 60 MDO bits fit one word
 * (acc), with bit i of ends set where byte i ended a field, and every
 * field is a shift and a mask away.
 */
#define SHORT_MSG_BYTES 10

static int split_word(uint64_t acc, unsigned int ends, uint32_t n,
		      unsigned int fixed_bits, uint64_t *fixed,
		      struct var_field *vf, unsigned int *nvf)
{
	unsigned int start = fixed_bits, k;

	/* a byte filled by fixed bits cannot end a field */
	if (fixed_bits > 6 * n || (ends & ((1u << (fixed_bits / 6)) - 1)))
		return NT_ERR_BAD_LAYOUT;
	*fixed = acc & low_mask(fixed_bits);
	*nvf = 0;
	while (ends) {
		unsigned int end = 6 * ((unsigned int)__builtin_ctz(ends) + 1);

		ends &= ends - 1;
		if (end <= start)
			continue;
		if (*nvf == MAX_VAR_FIELDS)
			return NT_ERR_BAD_LAYOUT;
		k = (*nvf)++;
		vf[k].v = (acc >> start) & low_mask(end - start);
		vf[k].nbits = end - start;
		start = end;
	}
	return start == 6 * n ? NT_OK : NT_ERR_BAD_LAYOUT;
}

/*
 * Split a complete message (last byte has MSEO=11) into TCODE, SRC, the
 * requested fixed bits and its variable fields. Returns an NT_ERR_* code.
 */
static int split_msg(const struct nt_stream_cfg *cfg, const uint8_t *p,
		     uint32_t n, unsigned int fixed_bits, uint64_t *fixed,
		     struct var_field *vf, unsigned int *nvf)
{
	uint32_t i = 0;
	unsigned int bit = 0;	/* next MDO bit of p[i] */
	unsigned int got = 0;
	uint64_t acc = 0;

	if (n <= SHORT_MSG_BYTES) {
		unsigned int ends = 0;

		for (i = 0; i < n; i++) {
			acc |= (uint64_t)(p[i] >> 2) << (6 * i);
			ends |= (p[i] & 1u) << i;
		}
		return split_word(acc, ends, n, fixed_bits, fixed, vf, nvf);
	}

	/* fixed fields, TCODE included, may cross MDO boundaries */
	while (got < fixed_bits) {
		unsigned int take = 6 - bit;
		uint64_t mdo;

		if (i >= n)
			return NT_ERR_BAD_LAYOUT;
		if (take > fixed_bits - got)
			take = fixed_bits - got;
		mdo = (uint64_t)(p[i] >> (2 + bit)) & low_mask(take);
		acc |= mdo << got;
		got += take;
		bit += take;
		if (bit == 6) {
			/* a byte filled by fixed bits cannot end a field */
			if ((p[i] & 3) != MSEO_NORMAL)
				return NT_ERR_BAD_LAYOUT;
			bit = 0;
			i++;
		}
	}
	*fixed = acc;

	*nvf = 0;
	while (i < n) {
		uint64_t v = 0;
		unsigned int nbits = 0;
		unsigned int mseo;

		if (*nvf == MAX_VAR_FIELDS)
			return NT_ERR_BAD_LAYOUT;
		do {
			uint64_t mdo = (uint64_t)(p[i] >> (2 + bit));
			unsigned int take = 6 - bit;

			mseo = p[i] & 3;
			if (nbits >= 64) {
				if (mdo)
					return NT_ERR_FIELD_TOO_LONG;
			} else {
				if (nbits + take > 64 && (mdo >> (64 - nbits)))
					return NT_ERR_FIELD_TOO_LONG;
				v |= mdo << nbits;
			}
			nbits += take;
			bit = 0;
			i++;
		} while (mseo == MSEO_NORMAL && i < n);
		if (mseo == MSEO_NORMAL)
			return NT_ERR_TRUNCATED;
		vf[*nvf].v = v;
		vf[*nvf].nbits = nbits > 64 ? 64 : nbits;
		(*nvf)++;
		if (mseo == MSEO_END_MSG)
			break;
	}
	(void)cfg;
	return i == n ? NT_OK : NT_ERR_BAD_LAYOUT;
}

static struct src_state *src_state(struct nt_reader *r, unsigned int src)
{
	return &r->src[src];
}

/* Fixed bits (TCODE and SRC included) in front of the variable fields. */
static unsigned int fixed_bits_of(const struct nt_stream_cfg *cfg,
				  unsigned int tcode)
{
	const struct layout *l = &layouts[tcode & 63];

	return 6 + cfg->src_bits + 4 * (l->fixed_sync + l->fixed_4bit) +
	       2 * (l->fixed_btype + l->fixed_cdf);
}

/* Give the split fields of a message their meaning. */
static int assign_fields(struct nt_reader *r, unsigned int tcode,
			 uint64_t fixed, const struct var_field *vf,
			 unsigned int nvf, struct nt_msg *m)
{
	const struct nt_stream_cfg *cfg = &r->cfg;
	unsigned int shift, nbase, k;
	struct layout l;
	struct src_state *st;
	bool known = get_layout(tcode, &l);
	bool has_ts;

	m->tcode = tcode;
	shift = 6;
	if (cfg->src_bits) {
		m->src = (fixed >> shift) & low_mask(cfg->src_bits);
		m->fields |= NT_F_SRC;
		shift += cfg->src_bits;
	}
	st = src_state(r, m->src);

	if (!known) {
		/* vendor or reserved: keep the raw fields for dumps */
		m->nraw = nvf > NT_MAX_RAW_FIELDS ? NT_MAX_RAW_FIELDS : nvf;
		for (k = 0; k < m->nraw; k++)
			m->raw[k] = vf[k].v;
		m->fields |= NT_F_RAW;
		m->time = st->time;
		if (tcode < NT_TCODE_VENDOR_FIRST || tcode > NT_TCODE_VENDOR_LAST)
			return NT_ERR_UNKNOWN_TCODE;
		return NT_OK;
	}

	if (l.fixed_sync) {
		m->sync = (fixed >> shift) & 0xf;
		m->fields |= NT_F_SYNC;
		shift += 4;
	}
	if (l.fixed_4bit) {
		unsigned int v = (fixed >> shift) & 0xf;

		shift += 4;
		if (tcode == NT_TCODE_ERROR) {
			m->etype = v;
			m->fields |= NT_F_ETYPE;
		} else if (tcode == NT_TCODE_RESOURCE_FULL) {
			m->rcode = v;
			m->fields |= NT_F_RCODE;
		} else if (tcode == NT_TCODE_IN_CIRCUIT_TRACE) {
			m->cksrc = v;
			m->fields |= NT_F_CKSRC;
		} else {
			m->evcode = v;
			m->fields |= NT_F_EVCODE;
		}
	}
	if (l.fixed_btype) {
		m->btype = (fixed >> shift) & 3;
		m->fields |= NT_F_BTYPE;
		shift += 2;
	}
	if (l.fixed_cdf && tcode == NT_TCODE_IN_CIRCUIT_TRACE) {
		m->ckdf = (fixed >> shift) & 3;
		m->fields |= NT_F_CKDF;
	} else if (l.fixed_cdf) {
		m->cdf = (fixed >> shift) & 3;
		m->fields |= NT_F_CDF;
	}

	/* how many variable fields precede TSTAMP */
	nbase = l.nvar;
	if (tcode == NT_TCODE_RESOURCE_FULL) {
		if (m->rcode == NT_RCODE_ICNT || m->rcode == NT_RCODE_HIST)
			nbase = 1;
		else if (m->rcode == NT_RCODE_HIST_REPEAT)
			nbase = 2;
		else	/* vendor/reserved RCODE: all but a TSTAMP */
			nbase = cfg->timestamps && nvf > 1 ? nvf - 1 : nvf;
		if (nbase > 2 || nbase < 1)
			return NT_ERR_BAD_LAYOUT;
	} else if (tcode == NT_TCODE_PROG_TRACE_CORRELATION) {
		/*
		 * CDF=1 announces HIST. Be lenient with peers that write CDF=0
		 * in HTM: without timestamps a second field can only be HIST.
		 */
		if (m->cdf == 1 || (!cfg->timestamps && nvf == 2))
			nbase = 2;
	} else if (tcode == NT_TCODE_IN_CIRCUIT_TRACE) {
		/* no known encoder sends more than two CKDATA fields */
		if (m->ckdf > 1)
			return NT_ERR_BAD_LAYOUT;
		nbase = 1u + m->ckdf;
	}
	if (nvf == nbase)
		has_ts = false;
	else if (nvf == nbase + 1 && cfg->timestamps)
		has_ts = true;
	else
		return NT_ERR_BAD_LAYOUT;

	for (k = 0; k < nbase; k++) {
		unsigned int kind = k < l.nvar ? l.var[k] : V_HIST;
		uint64_t v = vf[k].v;

		if (tcode == NT_TCODE_RESOURCE_FULL)
			kind = k ? V_RDATA1 : V_RDATA0;
		switch (kind) {
		case V_ICNT:
			m->icnt = v;
			m->fields |= NT_F_ICNT;
			break;
		case V_FADDR:
			m->addr_field = extend_addr(cfg, v, vf[k].nbits);
			m->target = m->addr_field << 1;
			m->fields |= NT_F_FADDR;
			break;
		case V_UADDR:
			m->addr_field = extend_addr(cfg, v, vf[k].nbits);
			m->target = (m->addr_field << 1) ^ st->addr;
			m->fields |= NT_F_UADDR;
			break;
		case V_HIST:
			m->hist = v;
			m->fields |= NT_F_HIST;
			break;
		case V_PROCESS:
			m->process = v;
			m->fields |= NT_F_PROCESS;
			break;
		case V_ECODE:
			m->ecode = v;
			m->fields |= NT_F_ECODE;
			break;
		case V_BCNT:
			m->bcnt = v;
			m->fields |= NT_F_BCNT;
			break;
		case V_RDATA0:
		case V_RDATA1:
			m->rdata[kind - V_RDATA0] = v;
			m->nrdata = kind - V_RDATA0 + 1;
			m->fields |= NT_F_RDATA;
			break;
		case V_IDTAG:
			m->idtag = v;
			m->fields |= NT_F_IDTAG;
			break;
		case V_DQDATA:
			m->dqdata = v;
			m->fields |= NT_F_DQDATA;
			break;
		case V_CKDATA0:
		case V_CKDATA1:
			m->ckdata[kind - V_CKDATA0] = v;
			m->fields |= NT_F_CKDATA;
			break;
		}
	}
	if (m->fields & (NT_F_FADDR | NT_F_UADDR)) {
		m->target &= low_mask(cfg->xlen == 32 ? 32 : 64);
		st->addr = m->target;
	}
	if (has_ts) {
		m->tstamp = vf[nbase].v;
		m->fields |= NT_F_TSTAMP;
		/* chapter 7.5: absolute in sync messages, else relative */
		if (nt_tcode_is_sync(tcode))
			st->time = m->tstamp;
		else if (cfg->quirks & NT_QUIRK_SIFIVE)
			st->time ^= m->tstamp;	/* the bits that changed */
		else
			st->time += m->tstamp;
	}
	m->time = st->time;
	return NT_OK;
}

static int parse_msg(struct nt_reader *r, const uint8_t *p, uint32_t n,
		     struct nt_msg *m)
{
	struct var_field vf[MAX_VAR_FIELDS];
	unsigned int nvf, tcode = p[0] >> 2;
	uint64_t fixed;
	int err = split_msg(&r->cfg, p, n, r->fixed_bits[tcode], &fixed, vf,
			    &nvf);

	m->tcode = tcode;
	return err ? err : assign_fields(r, tcode, fixed, vf, nvf, m);
}

/* ---- streaming reader ---------------------------------------------- */

struct nt_reader *nt_reader_new(const struct nt_stream_cfg *cfg)
{
	struct nt_reader *r;

	if (cfg->src_bits > NT_MAX_SRC_BITS ||
	    (cfg->xlen && cfg->xlen != 32 && cfg->xlen != 64) ||
	    (cfg->quirks & ~NT_QUIRK_SIFIVE))
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->cfg = *cfg;
	if (!r->cfg.xlen)
		r->cfg.xlen = 64;
	r->src = calloc((size_t)1 << cfg->src_bits, sizeof(*r->src));
	if (!r->src) {
		free(r);
		return NULL;
	}
	r->after_end = true;
	for (unsigned int t = 0; t < 64; t++) {
		r->fixed_bits[t] = (uint8_t)fixed_bits_of(&r->cfg, t);
		r->max_bytes[t] = max_msg_bytes(&r->cfg, t);
	}
	r->addr_mask = low_mask(r->cfg.xlen == 32 ? 32 : 64);
	r->addr_field_mask = low_mask(addr_field_bits(&r->cfg));
	/* branch messages of up to eight bytes go the lean way */
	r->lean_nvar[NT_TCODE_DIRECT_BRANCH] = 1;
	r->lean_nvar[NT_TCODE_INDIRECT_BRANCH] = 2;
	r->lean_nvar[NT_TCODE_INDIRECT_BRANCH_HIST] = 3;
	for (unsigned int t = 0; t < 64; t++) {
		if (r->max_bytes[t] < 8)
			r->lean_nvar[t] = 0;
		/* at most 24 fixed bits: never all eight bytes */
		r->lean_fixed_ends[t] = ~(~0ull << (8 * (r->fixed_bits[t] / 6))) &
					BYTES_EACH(1);
	}
	r->short_direct = !r->cfg.src_bits &&
			  r->lean_nvar[NT_TCODE_DIRECT_BRANCH];
	r->short_indirect = r->short_direct && !r->cfg.extend_addr_msb;
	/* without it the reader only runs slower */
	{
		size_t size = sizeof(*r->memo) << MEMO_SLOTS_LOG2;

		r->memo = aligned_alloc(alignof(struct memo), size);
		if (r->memo)
			memset(r->memo, 0, size);
	}
	return r;
}

void nt_reader_free(struct nt_reader *r)
{
	if (!r)
		return;
	free(r->src);
	free(r->memo);
	free(r);
}

void nt_reader_feed(struct nt_reader *r, const uint8_t *data, size_t len)
{
	r->chunk_base += r->len;
	r->chunk = data;
	r->len = len;
	r->pos = 0;
}

void nt_reader_finish(struct nt_reader *r)
{
	r->finished = true;
}

const uint8_t *nt_reader_peek(const struct nt_reader *r, size_t *avail,
			      uint64_t *offset)
{
	if (!r->after_end || r->in_msg || r->skipping || r->perr)
		return NULL;
	*avail = r->len - r->pos;
	*offset = r->chunk_base + r->pos;
	return r->chunk + r->pos;
}

uint64_t *nt_reader_addr_of(struct nt_reader *r, unsigned int src)
{
	return &r->src[src].addr;
}

uint64_t *nt_reader_time_of(struct nt_reader *r, unsigned int src)
{
	return &r->src[src].time;
}

void nt_reader_take(struct nt_reader *r, size_t n)
{
	r->pos += n;
}

void nt_reader_reset_state(struct nt_reader *r)
{
	memset(r->src, 0, ((size_t)1 << r->cfg.src_bits) * sizeof(*r->src));
}

static void error_begin(struct nt_reader *r, unsigned int kind, uint64_t off,
			uint64_t at)
{
	if (!r->perr) {
		r->perr = true;
		r->perr_kind = kind;
		r->perr_off = off;
		r->perr_at = at;
	}
	r->perr_end = at + 1;
}

static int error_emit(struct nt_reader *r, struct nt_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->err = r->perr_kind;
	m->offset = r->perr_off;
	m->err_at = r->perr_at;
	m->size = (uint32_t)(r->perr_end - r->perr_off);
	r->perr = false;
	return 1;
}

/* A message that failed to parse becomes an error record. */
static int finish_deliver(struct nt_msg *m, int err, uint64_t off)
{
	if (err && err != NT_ERR_UNKNOWN_TCODE) {
		uint32_t size = m->size;

		memset(m, 0, sizeof(*m));
		m->offset = off;
		m->err_at = off;
		m->size = size;
	}
	m->err = (uint8_t)err;
	return 1;
}

/* Parse a whole message held in p; fills m (message or error record). */
static int deliver(struct nt_reader *r, const uint8_t *p, uint32_t n,
		   uint64_t off, struct nt_msg *m)
{
	int err;

	/* the tail of struct nt_msg is only valid with its NT_F_ bits */
	memset(m, 0, NT_MSG_CLEARED_BYTES);
	m->offset = off;
	m->size = n;
	err = parse_msg(r, p, n, m);
	return finish_deliver(m, err, off);
}

/*
 * The variable field of a short message that starts at MDO bit *pos and
 * ends with the first field end left in ends (nonzero); both move past
 * it. A short message has at most 48 MDO bits: no mask is 64 bits wide.
 */
static uint64_t take_field(uint64_t acc, unsigned int *ends,
			   unsigned int *pos)
{
	unsigned int end = 6 * ((unsigned int)__builtin_ctz(*ends) + 1);
	uint64_t v = (acc >> *pos) & ((1ull << (end - *pos)) - 1);

	*ends &= *ends - 1;
	*pos = end;
	return v;
}

/*
 * The messages branch trace is mostly made of (DirectBranch,
 * IndirectBranch, IndirectBranchHist), split and given their meaning in
 * one go when short, well formed and without TSTAMP: exactly what
 * split_word() and assign_fields() make of them, at a fraction of the
 * work. False leaves m untouched for the general path, which also
 * reports whatever is wrong.
 */
static bool read_branch_msg(struct nt_reader *r, uint64_t acc,
			    unsigned int ends, struct nt_msg *m)
{
	const struct nt_stream_cfg *cfg = &r->cfg;
	unsigned int tcode = acc & 63, nvar, pos;
	uint64_t icnt, uaddr = 0, hist = 0, target = 0;
	struct src_state *st;
	uint32_t fields = NT_F_ICNT;

	switch (tcode) {
	case NT_TCODE_DIRECT_BRANCH:
		nvar = 1;
		break;
	case NT_TCODE_INDIRECT_BRANCH:
		nvar = 2;
		break;
	case NT_TCODE_INDIRECT_BRANCH_HIST:
		nvar = 3;
		break;
	default:
		return false;
	}
	pos = r->fixed_bits[tcode];
	/* One field end (MSEO bit 0) per field, none among the fixed bits. */
	if (cfg->timestamps || (ends & ((1u << (pos / 6)) - 1)))
		return false;
	icnt = take_field(acc, &ends, &pos);
	if (nvar > 1) {
		unsigned int start = pos;

		if (!ends)
			return false;
		uaddr = take_field(acc, &ends, &pos);
		uaddr = extend_addr(cfg, uaddr, pos - start);
		if (nvar > 2) {
			if (!ends)
				return false;
			hist = take_field(acc, &ends, &pos);
			fields |= NT_F_HIST;
		}
		fields |= NT_F_BTYPE | NT_F_UADDR;
	}
	if (ends)
		return false;
	if (cfg->src_bits) {
		m->src = (acc >> 6) & low_mask(cfg->src_bits);
		fields |= NT_F_SRC;
	}
	st = src_state(r, m->src);
	if (nvar > 1) {
		m->btype = (acc >> (6 + cfg->src_bits)) & 3;
		target = ((uaddr << 1) ^ st->addr) &
			 low_mask(cfg->xlen == 32 ? 32 : 64);
		st->addr = target;
	}
	m->tcode = tcode;
	m->icnt = icnt;
	m->addr_field = uaddr;
	m->target = target;
	m->hist = hist;
	m->fields = fields;
	m->time = st->time;
	return true;
}

static int deliver_short(struct nt_reader *r, uint64_t acc,
			 unsigned int ends, uint32_t n, uint64_t off,
			 struct nt_msg *m)
{
	struct var_field vf[MAX_VAR_FIELDS];
	unsigned int nvf, tcode = acc & 63;
	uint64_t fixed;
	int err;

	memset(m, 0, NT_MSG_CLEARED_BYTES);
	m->offset = off;
	m->size = n;
	if (read_branch_msg(r, acc, ends, m))
		return 1;
	m->tcode = tcode;
	err = split_word(acc, ends, n, r->fixed_bits[tcode], &fixed, vf, &nvf);
	if (!err)
		err = assign_fields(r, tcode, fixed, vf, nvf, m);
	return finish_deliver(m, err, off);
}


/*
 * The common case, a message that starts at q and ends (MSEO=11) within
 * q's first eight bytes and lim, found and split with word operations
 * instead of a byte loop. Returns its length, or 0 when the byte loop
 * must decide (longer, or a reserved MSEO first). q[0] starts a message.
 */
static uint32_t short_msg_in_word(const uint8_t *q, size_t lim,
				  uint64_t *acc, unsigned int *ends)
{
	uint64_t w, bit0, bit1, last, keep, x;
	unsigned int j;

	w = load_bytes(q);
	bit0 = w & BYTES_EACH(1);
	bit1 = (w >> 1) & BYTES_EACH(1);
	last = bit0 & bit1 & ~0xffull;		/* MSEO=11 after q[0] */
	if (!last)
		return 0;
	j = (unsigned int)__builtin_ctzll(last) / 8;
	keep = ~0ull >> (56 - 8 * j);		/* bytes 0..j */
	if (j + 1 > lim || (bit1 & ~bit0 & keep))	/* MSEO=10 */
		return 0;
	/* the 6 MDO bits of each byte, packed: 8 x 6 -> 4 x 12 -> 2 x 24 */
	x = (w >> 2) & BYTES_EACH(0x3f) & keep;
	x = (x & 0x003f003f003f003full) | ((x >> 2) & 0x0fc00fc00fc00fc0ull);
	x = (x & 0x00000fff00000fffull) | ((x >> 4) & 0x00fff00000fff000ull);
	x = (x & 0x0000000000ffffffull) | ((x >> 8) & 0x0000ffffff000000ull);
	*acc = x;
	/* bit i: byte i ended a field (MSEO bit 0) */
	*ends = (unsigned int)(((bit0 & keep) * 0x0102040810204080ull) >> 56);
	return j + 1;
}

/* lean_branch() writes every field of the cleared head of struct nt_msg */
_Static_assert(offsetof(struct nt_msg, err) ==
	       offsetof(struct nt_msg, fields) + sizeof(uint32_t) &&
	       offsetof(struct nt_msg, time) + sizeof(uint64_t) ==
	       NT_MSG_CLEARED_BYTES, "struct nt_msg head changed");

/* MDO bits that end at the field end in byte ctz(e) / 8 of a word. */
static unsigned int field_end_bits(uint64_t e)
{
	return 6 * ((unsigned int)__builtin_ctzll(e) / 8 + 1);
}

/* What short_shape() needs of the reader. */
struct short_state {
	uint64_t offset;	/* of the message's first byte */
	uint64_t *addr;		/* SRC 0's last address, updated */
	uint64_t time;		/* SRC 0's time */
	uint64_t addr_mask;
	bool direct;		/* the reader's short_direct */
	bool indirect;		/* the reader's short_indirect */
};

/*
 * The commonest branch messages of streams without SRC, told from the
 * first byte and the MSEO bits of the next few, with the fields then
 * taken by shifts of the 64-bit word: no MDO gather, none of the lean
 * path's checks, which the shape makes needless. They are
 *
 *  - a DirectBranch of two bytes: an I-CNT under 64;
 *  - an IndirectBranch, with or without HIST, whose I-CNT takes one or
 *    two bytes (the four bits left after TCODE and B-TYPE, or ten),
 *    its U-ADDR one to three bytes and its HIST, if any, one byte (no
 *    U-ADDR then needs address extension, which is required off).
 *
 * qsort_cb's traces are 95% such messages in BTM and 82% in HTM,
 * interp's 99% and 98%. The record is the lean path's. Returns the
 * length, or 0 for the lean path.
 */
static inline __attribute__((always_inline))
uint32_t short_shape(struct short_state *ss, uint64_t w, struct nt_msg *m)
{
	uint64_t mseo, y, uaddr, hist = 0, icnt, target;
	uint32_t fields = NT_F_ICNT | NT_F_BTYPE | NT_F_UADDR;
	unsigned int first = w & 0xff, tcode, a, u, n;

	if (first == NT_TCODE_DIRECT_BRANCH << 2) {
		/* MSEO=11 in byte 1 */
		if (((w >> 8) & 3) != 3 || !ss->direct)
			return 0;
		memset(&m->err, 0, offsetof(struct nt_msg, icnt) -
				   offsetof(struct nt_msg, err));
		m->offset = ss->offset;
		m->err_at = 0;
		m->size = 2;
		m->fields = NT_F_ICNT;
		m->tcode = NT_TCODE_DIRECT_BRANCH;
		m->icnt = (w >> 10) & 63;
		m->addr_field = 0;
		m->target = 0;
		m->hist = 0;
		m->tstamp = 0;
		m->time = ss->time;
		return 2;
	}
	if (first == NT_TCODE_INDIRECT_BRANCH << 2)
		tcode = NT_TCODE_INDIRECT_BRANCH;
	else if (first == NT_TCODE_INDIRECT_BRANCH_HIST << 2)
		tcode = NT_TCODE_INDIRECT_BRANCH_HIST;
	else
		return 0;
	if (!ss->indirect)
		return 0;
	/* I-CNT ends (MSEO=01) in byte 1, or in byte 2 after a 00 */
	mseo = w & BYTES_EACH(3);
	if (((mseo >> 8) & 0xff) == 1)
		a = 1;
	else if (((mseo >> 8) & 0xffff) == 0x0100)
		a = 2;
	else
		return 0;
	/* U-ADDR: from byte a + 1 to the first byte with MSEO other than 00 */
	y = w >> (8 * (a + 1));
	mseo >>= 8 * (a + 1);
	if (!mseo)
		return 0;
	u = (unsigned int)__builtin_ctzll(mseo) / 8 + 1;
	if (u > 3)
		return 0;
	mseo >>= 8 * (u - 1);
	if (tcode == NT_TCODE_INDIRECT_BRANCH) {
		if ((mseo & 0xff) != 3)
			return 0;
		n = a + u + 1;
	} else {
		/* then a HIST of one byte ends the message */
		if ((mseo & 0xffff) != 0x0301)
			return 0;
		hist = (y >> (8 * u + 2)) & 63;
		fields |= NT_F_HIST;
		n = a + u + 2;
	}
	icnt = (w >> 12) & 15;
	if (a == 2)
		icnt |= ((w >> 18) & 63) << 4;
	/* the MDO bits of up to three bytes, then as many as there are */
	uaddr = ((y >> 2) & 0x3f) | ((y >> 4) & 0xfc0) | ((y >> 6) & 0x3f000);
	uaddr &= (1ull << (6 * u)) - 1;
	target = ((uaddr << 1) ^ *ss->addr) & ss->addr_mask;
	*ss->addr = target;
	memset(&m->err, 0, offsetof(struct nt_msg, icnt) -
			   offsetof(struct nt_msg, err));
	m->offset = ss->offset;
	m->err_at = 0;
	m->size = n;
	m->fields = fields;
	m->tcode = (uint8_t)tcode;
	m->btype = (w >> 10) & 3;
	m->icnt = icnt;
	m->addr_field = uaddr;
	m->target = target;
	m->hist = hist;
	m->tstamp = 0;
	m->time = ss->time;
	return n;
}

/* ss for r, at its position */
static void short_state_of(struct nt_reader *r, struct short_state *ss)
{
	ss->offset = r->chunk_base + r->pos;
	ss->addr = &r->src[0].addr;
	ss->time = r->src[0].time;
	ss->addr_mask = r->addr_mask;
	ss->direct = r->short_direct;
	ss->indirect = r->short_indirect;
}

/*
 * The lean path past short_shape(): a DirectBranch, IndirectBranch or
 * IndirectBranchHist that starts word w (the next eight bytes) and ends
 * within it, well formed (one field end per field and one for a TSTAMP
 * if the stream has them, none among the fixed bits, no reserved MSEO).
 * Found, split and given its meaning with word operations straight
 * from the bytes: the same message as the general path makes of it, at
 * a fraction of the work. Returns its length, or 0 to leave it to the
 * general path (which also reports whatever is wrong).
 */
static inline __attribute__((always_inline))
uint32_t lean_general(struct nt_reader *r, uint64_t w, struct nt_msg *m)
{
	uint64_t bit0, bit1, last, keep, x, ends, icnt, uaddr = 0, hist = 0;
	uint64_t target = 0, tstamp = 0;
	unsigned int tcode, nvar, j, fb, end0, end1 = 0, end2, src = 0;
	uint32_t fields = NT_F_ICNT;
	struct src_state *st;

	/* MSEO=00 in the first byte: it starts a message, is not idle */
	if (w & 3)
		return 0;
	tcode = (w >> 2) & 63;
	nvar = r->lean_nvar[tcode];
	if (!nvar)
		return 0;
	bit0 = w & BYTES_EACH(1);
	bit1 = (w >> 1) & BYTES_EACH(1);
	last = bit0 & bit1;			/* MSEO=11 */
	if (!last)
		return 0;
	j = (unsigned int)__builtin_ctzll(last) / 8;
	keep = ~0ull >> (56 - 8 * j);		/* bytes 0..j */
	if (bit1 & ~bit0 & keep)		/* MSEO=10 */
		return 0;
	ends = bit0 & keep;
	fb = r->fixed_bits[tcode];
	/* a byte filled by fixed bits cannot end a field */
	if (ends & r->lean_fixed_ends[tcode])
		return 0;
	x = (w >> 2) & BYTES_EACH(0x3f) & keep;
	x = (x & 0x003f003f003f003full) | ((x >> 2) & 0x0fc00fc00fc00fc0ull);
	x = (x & 0x00000fff00000fffull) | ((x >> 4) & 0x00fff00000fff000ull);
	x = (x & 0x0000000000ffffffull) | ((x >> 8) & 0x0000ffffff000000ull);
	/* no field is wider than 48 bits here: no mask is 64 bits wide */
	end0 = field_end_bits(ends);
	icnt = (x >> fb) & ((1ull << (end0 - fb)) - 1);
	end2 = end0;
	if (nvar > 1) {
		ends &= ends - 1;
		if (!ends)
			return 0;
		end1 = field_end_bits(ends);
		uaddr = (x >> end0) & ((1ull << (end1 - end0)) - 1);
		uaddr = r->cfg.extend_addr_msb ?
			extend_addr(&r->cfg, uaddr, end1 - end0) :
			uaddr & r->addr_field_mask;
		end2 = end1;
		fields |= NT_F_BTYPE | NT_F_UADDR;
		if (nvar > 2) {
			ends &= ends - 1;
			if (!ends)
				return 0;
			end2 = field_end_bits(ends);
			hist = (x >> end1) & ((1ull << (end2 - end1)) - 1);
			fields |= NT_F_HIST;
		}
	}
	/* the field just taken must be the last one, or the TSTAMP follows */
	ends &= ends - 1;
	if (ends) {
		if (!r->cfg.timestamps || (ends & (ends - 1)))
			return 0;
		tstamp = (x >> end2) &
			 ((1ull << (field_end_bits(ends) - end2)) - 1);
		fields |= NT_F_TSTAMP;
	}
	if (r->cfg.src_bits) {
		src = (unsigned int)(x >> 6) & ((1u << r->cfg.src_bits) - 1);
		fields |= NT_F_SRC;
	}
	st = src_state(r, src);
	/*
	 * Field by field what memset(m, 0, NT_MSG_CLEARED_BYTES) and the
	 * general path leave: a memset of that size may become a slow
	 * string instruction here. The small fields, padding included,
	 * are cleared as one block.
	 */
	memset(&m->err, 0, offsetof(struct nt_msg, icnt) -
			   offsetof(struct nt_msg, err));
	if (nvar > 1) {
		m->btype = (x >> (6 + r->cfg.src_bits)) & 3;
		target = ((uaddr << 1) ^ st->addr) & r->addr_mask;
		st->addr = target;
	}
	m->offset = r->chunk_base + r->pos;
	m->err_at = 0;
	m->size = j + 1;
	m->fields = fields;
	m->tcode = (uint8_t)tcode;
	m->src = (uint16_t)src;
	m->icnt = icnt;
	m->addr_field = uaddr;
	m->target = target;
	m->hist = hist;
	m->tstamp = tstamp;
	if (fields & NT_F_TSTAMP) {
		/* chapter 7.5: relative in all but sync messages */
		if (r->cfg.quirks & NT_QUIRK_SIFIVE)
			st->time ^= tstamp;	/* the bits that changed */
		else
			st->time += tstamp;
	}
	m->time = st->time;
	return j + 1;
}

/* The lean path: short_shape(), then lean_general(). */
static inline uint32_t lean_branch(struct nt_reader *r, const uint8_t *q,
				   struct nt_msg *m)
{
	uint64_t w = load_bytes(q);
	struct short_state ss;
	uint32_t n;

	short_state_of(r, &ss);
	n = short_shape(&ss, w, m);
	return n ? n : lean_general(r, w, m);
}

/* Everything lean_branch() does not take: the byte loop. */
static int __attribute__((noinline))
reader_next_general(struct nt_reader *r, struct nt_msg *m)
{
	while (r->pos < r->len) {
		const uint8_t *c = r->chunk;
		uint64_t off = r->chunk_base + r->pos;
		uint8_t b = c[r->pos];
		unsigned int mseo = b & 3;

		if (r->in_msg) {
			/* continue a message that started in an earlier chunk */
			if (mseo == MSEO_RESERVED) {
				error_begin(r, NT_ERR_MSEO_RESERVED, r->msg_off,
					    off);
				r->in_msg = false;
				r->skipping = true;
				r->after_end = false;
				r->pos++;
				continue;
			}
			if (r->blen == r->max_bytes[r->buf[0] >> 2]) {
				error_begin(r, NT_ERR_MSG_TOO_LONG, r->msg_off,
					    off);
				r->in_msg = false;
				r->skipping = mseo != MSEO_END_MSG;
				r->after_end = mseo == MSEO_END_MSG;
				r->pos++;
				continue;
			}
			r->buf[r->blen++] = b;
			r->pos++;
			if (mseo == MSEO_END_MSG) {
				r->in_msg = false;
				r->after_end = true;
				return deliver(r, r->buf, r->blen, r->msg_off,
					       m);
			}
			continue;
		}

		if (r->skipping) {
			/* resynchronise: the next message follows an MSEO=11 */
			r->perr_end = off + 1;
			r->pos++;
			if (mseo == MSEO_END_MSG) {
				r->skipping = false;
				r->after_end = true;
			}
			continue;
		}

		if (b == IDLE_BYTE) {
			r->pos++;
			r->after_end = true;
			continue;
		}

		if (mseo == MSEO_NORMAL && r->after_end) {
			size_t lim, j;
			uint64_t acc8;
			unsigned int ends8;

			if (r->perr)
				return error_emit(r, m);
			/* fast path: the whole message is inside this chunk */
			lim = r->max_bytes[b >> 2];
			if (lim > r->len - r->pos)
				lim = r->len - r->pos;
			if (r->len - r->pos >= 8) {
				uint32_t n = short_msg_in_word(c + r->pos, lim,
							      &acc8, &ends8);

				if (n) {
					r->pos += n;
					return deliver_short(r, acc8, ends8, n,
							     off, m);
				}
			}
			/* a short message is split while it is scanned */
			{
				const uint8_t *q = c + r->pos;
				size_t short_lim = lim < SHORT_MSG_BYTES ?
						   lim : SHORT_MSG_BYTES;
				uint64_t acc = b >> 2;
				unsigned int ends = 0;

				for (j = 1; j < short_lim; j++) {
					unsigned int s = q[j] & 3;

					acc |= (uint64_t)(q[j] >> 2) << (6 * j);
					ends |= (q[j] & 1u) << j;
					if (s == MSEO_END_MSG)
						break;
					if (s == MSEO_RESERVED) {
						j = lim;
						break;
					}
				}
				if (j < short_lim) {
					r->pos += j + 1;
					return deliver_short(r, acc, ends,
							     (uint32_t)(j + 1),
							     off, m);
				}
			}
			for (j = 1; j < lim; j++) {
				unsigned int s = c[r->pos + j] & 3;

				if (s == MSEO_END_MSG) {
					uint32_t n = (uint32_t)(j + 1);

					r->pos += n;
					return deliver(r, c + r->pos - n, n, off,
						       m);
				}
				if (s == MSEO_RESERVED)
					break;
			}
			/* slow path: copy and let the byte loop decide */
			r->in_msg = true;
			r->msg_off = off;
			r->buf[0] = b;
			r->blen = 1;
			r->pos++;
			continue;
		}

		/* a byte that cannot start a message here */
		if (mseo == MSEO_END_MSG) {
			error_begin(r, NT_ERR_GARBAGE, off, off);
			r->after_end = true;
		} else {
			error_begin(r, mseo == MSEO_RESERVED ?
				    NT_ERR_MSEO_RESERVED : NT_ERR_GARBAGE,
				    off, off);
			r->skipping = true;
			r->after_end = false;
		}
		r->pos++;
	}

	if (!r->finished)
		return 0;
	if (r->in_msg) {
		error_begin(r, NT_ERR_TRUNCATED, r->msg_off,
			    r->chunk_base + r->len - 1);
		r->in_msg = false;
	}
	if (r->perr)
		return error_emit(r, m);
	return 0;
}

/* Nothing pending, and a word to read: where the lean path may start. */
static bool lean_ready(const struct nt_reader *r)
{
	return r->len - r->pos >= 8 && r->after_end && !r->in_msg &&
	       !r->skipping && !r->perr;
}

/* The bytes of the message that starts w and takes its first n <= 8. */
static inline uint64_t msg_bytes(uint64_t w, uint32_t n)
{
	return w & (~0ull >> (64 - 8 * n));
}

static inline struct memo *memo_slot(struct memo *memo, uint64_t bytes)
{
	return &memo[(bytes * 0x9e3779b97f4a7c15ull) >> (64 - MEMO_SLOTS_LOG2)];
}

/*
 * The second word of the memo's key for a message of nine to sixteen
 * bytes at q: the bytes after its first eight, low byte first, read as
 * the eight that end it so as not to read past it. The same as the
 * decoder's for a long run (mask2 in decoder.c).
 */
static inline uint64_t long_msg_rest(const uint8_t *q, uint64_t n)
{
	return load_bytes(q + n - 8) >> (8 * (16 - n));
}

/* Keep m, the record of the message of n bytes at q. */
static void memo_keep(struct nt_reader *r, const uint8_t *q, uint32_t n,
		      const struct nt_msg *m)
{
	uint64_t bytes, bytes2 = 0, take, flip, tstamp;
	struct memo *e;

	/* SiFive's TSTAMP gives the bits that changed: not an addition */
	if (!r->memo || n > NT_MEMO_MAX_BYTES ||
	    ((m->fields & NT_F_TSTAMP) &&
	     (r->cfg.quirks & NT_QUIRK_SIFIVE)))
		return;
	if (n > 8) {
		bytes = load_bytes(q);
		bytes2 = long_msg_rest(q, n);
	} else {
		bytes = msg_bytes(load_bytes(q), n);
	}
	take = m->fields & NT_F_UADDR ? r->addr_mask : 0;
	flip = (m->addr_field << 1) & take;
	tstamp = m->fields & NT_F_TSTAMP ? m->tstamp : 0;
	e = memo_slot(r->memo, bytes ^ bytes2);
	e->bytes = bytes;
	e->bytes2 = bytes2;
	if (r->cfg.src_bits == 1 && m->src) {
		e->flip = e->take = e->tstamp = 0;
		e->flip1 = flip;
		e->take1 = take;
		e->tstamp1 = tstamp;
	} else {
		e->flip = flip;
		e->take = take;
		e->tstamp = tstamp;
		e->flip1 = e->take1 = e->tstamp1 = 0;
	}
	memcpy(e->copy1, (const unsigned char *)m + MEMO_COPY1,
	       sizeof(e->copy1));
	memcpy(e->copy2, (const unsigned char *)m + MEMO_COPY2,
	       sizeof(e->copy2));
}


/*
 * The memo of the message of nine to sixteen bytes from stream offset
 * off to end, or NULL. Its bytes are read from at + off: see
 * memo_run_of().
 */
static inline const struct memo *memo_long(struct memo *memo,
					   uintptr_t at, uint64_t off,
					   uint64_t end)
{
	const uint8_t *q = (const uint8_t *)(at + off);
	uint64_t len = end - off + 1, bytes, bytes2;
	const struct memo *e;

	if (len > NT_MEMO_MAX_BYTES)
		return NULL;
	bytes = load_bytes(q);
	bytes2 = long_msg_rest(q, len);
	e = memo_slot(memo, bytes ^ bytes2);
	return e->bytes == bytes && e->bytes2 == bytes2 ? e : NULL;
}

/* What m takes from memo e as it is: all but offset, target and time. */
static inline __attribute__((always_inline))
void memo_copy_head(const struct memo *e, struct nt_msg *m)
{
	unsigned char *to = (unsigned char *)m;

	memcpy(to + MEMO_COPY1, e->copy1, sizeof(e->copy1));
	memcpy(to + MEMO_COPY2, e->copy2, sizeof(e->copy2));
}

/*
 * m from memo e, for a message at stream offset off: as the lean path.
 * Not for streams with one bit of SRC: see memo_take_two().
 */
static inline __attribute__((always_inline))
void memo_take(const struct memo *e, struct nt_msg *m, uint64_t off,
	       uint64_t *addr, uint64_t *time, bool timed)
{
	uint64_t target;

	*addr ^= e->flip;
	target = *addr & e->take;

	memo_copy_head(e, m);
	m->offset = off;
	m->target = target;
	if (timed)
		*time += e->tstamp;
	m->time = *time;
}

/* The SRC of the record memo e keeps. */
static inline unsigned int memo_src_of(const struct memo *e)
{
	uint16_t src;

	memcpy(&src, e->copy1 + offsetof(struct nt_msg, src) - MEMO_COPY1,
	       sizeof(src));
	return src;
}

/*
 * memo_take() for a stream of two sources (one bit of SRC), the address
 * history and time of source 0 in *a0 and *t0, of source 1 in *a1 and
 * *t1. The memo's fields for the other source are 0, so both are
 * applied with no choice of source, but for the time when it moves
 * (timed). Through memory, as memo_take_src() keeps them, the loop ran
 * 43 x86 instructions a message where it now runs 39, and each
 * message's source state was a load after the store of the one before.
 */
static inline __attribute__((always_inline))
void memo_take_two(const struct memo *e, struct nt_msg *m, uint64_t off,
		   uint64_t *a0, uint64_t *a1, uint64_t *t0, uint64_t *t1,
		   bool timed)
{
	*a0 ^= e->flip;
	*a1 ^= e->flip1;
	memo_copy_head(e, m);
	m->offset = off;
	m->target = (*a0 & e->take) | (*a1 & e->take1);
	if (timed) {
		uint64_t one = -(uint64_t)(memo_src_of(e) & 1);

		*t0 += e->tstamp;
		*t1 += e->tstamp1;
		m->time = *t0 ^ ((*t0 ^ *t1) & one);
	} else {
		/* the caller made sure *t0 == *t1 */
		m->time = *t0;
	}
}

/* The source whose address history and time memo e takes. */
static inline struct src_state *memo_src(struct src_state *srcs,
					 const struct memo *e)
{
	return &srcs[memo_src_of(e)];
}

/*
 * memo_take() from the source's history and time in srcs[] (the
 * reader's) if by_src, else from *addr and *time.
 */
static inline __attribute__((always_inline))
void memo_take_src(struct src_state *srcs, bool by_src,
		   const struct memo *e, struct nt_msg *m, uint64_t off,
		   uint64_t *addr, uint64_t *time, bool timed)
{
	if (by_src) {
		struct src_state *st = memo_src(srcs, e);

		memo_take(e, m, off, &st->addr, &st->time, timed);
	} else {
		memo_take(e, m, off, addr, time, timed);
	}
}

/* How memo_run_of() keeps the sources' address histories and times */
enum memo_srcs {
	MEMO_ONE,	/* no SRC */
	MEMO_TWO,	/* one bit of SRC: both sources' state in registers */
	MEMO_MANY,	/* each source's state in the reader */
};

static inline enum memo_srcs memo_srcs_of(const struct nt_reader *r)
{
	return r->cfg.src_bits > 1 ? MEMO_MANY :
	       r->cfg.src_bits ? MEMO_TWO : MEMO_ONE;
}

/*
 * memo_take() as the stream's sources need it: source 0's address
 * history and time in *addr and *time and source 1's in *addr1 and
 * *time1 (MEMO_TWO), the one source's in *addr and *time (MEMO_ONE),
 * each in srcs[] (MEMO_MANY).
 */
static inline __attribute__((always_inline))
void memo_take_of(struct src_state *srcs, enum memo_srcs how,
		  const struct memo *e, struct nt_msg *m, uint64_t off,
		  uint64_t *addr, uint64_t *time, uint64_t *addr1,
		  uint64_t *time1, bool timed)
{
	if (how == MEMO_TWO)
		memo_take_two(e, m, off, addr, addr1, time, time1, timed);
	else
		memo_take_src(srcs, how == MEMO_MANY, e, m, off, addr, time,
			      timed);
}

/*
 * The general path for a message that starts at the reader's position
 * with nothing pending: a branch message of up to sixteen bytes, read
 * whole from the chunk, goes to the memo. Its other kinds change more
 * than the address history and the time, or have fields the memo does
 * not copy.
 */
static int __attribute__((noinline))
reader_next_kept(struct nt_reader *r, struct nt_msg *m)
{
	size_t pos = r->pos;
	int ret = reader_next_general(r, m);
	uint32_t kinds = NT_F_SRC | NT_F_BTYPE | NT_F_ICNT | NT_F_UADDR |
			 NT_F_HIST | NT_F_TSTAMP;

	/* not after bytes it skipped: the message is at pos, whole */
	if (ret == 1 && !m->err && m->offset == r->chunk_base + pos &&
	    !(m->fields & ~kinds) &&
	    (m->tcode == NT_TCODE_DIRECT_BRANCH ||
	     m->tcode == NT_TCODE_INDIRECT_BRANCH ||
	     m->tcode == NT_TCODE_INDIRECT_BRANCH_HIST))
		memo_keep(r, r->chunk + pos, m->size, m);
	return ret;
}

/*
 * The memo of the message at q, the reader's position, w its first
 * eight bytes, and its length to *n; NULL if the memo does not know
 * it. The caller made sure lean_ready().
 */
static inline const struct memo *memo_next(const struct nt_reader *r,
					   const uint8_t *q, uint64_t w,
					   uint32_t *n)
{
	uint64_t bytes, off;
	const struct memo *e;
	uint32_t n2;

	if (*n) {
		bytes = msg_bytes(w, *n);
		e = memo_slot(r->memo, bytes);
		return e->bytes == bytes ? e : NULL;
	}
	/* nine to sixteen bytes, all in the chunk */
	if (r->len - r->pos < 16)
		return NULL;
	n2 = msg_end_len(load_bytes(q + 8));
	if (!n2)
		return NULL;
	*n = 8 + n2;
	off = r->chunk_base + r->pos;
	return memo_long(r->memo, (uintptr_t)r->chunk - r->chunk_base, off,
			 off + *n - 1);
}

int nt_reader_next(struct nt_reader *r, struct nt_msg *m)
{
	/* the common case first: a short branch message, nothing pending */
	if (lean_ready(r)) {
		const uint8_t *q = r->chunk + r->pos;
		uint64_t w = load_bytes(q);
		uint32_t n = msg_end_len(w);

		if (r->memo) {
			const struct memo *e = memo_next(r, q, w, &n);

			if (e) {
				enum memo_srcs how = memo_srcs_of(r);
				struct src_state *st = r->src;
				/* source 1's, if there is one */
				struct src_state *st1 = &st[how == MEMO_TWO];

				memo_take_of(st, how, e, m,
					     r->chunk_base + r->pos,
					     &st->addr, &st->time,
					     &st1->addr, &st1->time, true);
				r->pos += n;
				return 1;
			}
		}
		n = lean_branch(r, q, m);
		if (n) {
			memo_keep(r, q, n, m);
			r->pos += n;
			return 1;
		}
		if (r->memo)
			return reader_next_kept(r, m);
	}
	return reader_next_general(r, m);
}

/*
 * The message memo e knows, from stream offset off to end and at q, to
 * its source's dst (nt_reader_split()): false, with nothing done, if
 * it starts after last (its copy would leave the chunk) or its source
 * has no dst or no room.
 */
static inline __attribute__((always_inline))
bool memo_split(const struct memo *e, struct nt_split_dst *const *dst,
		const uint8_t *q, uint64_t off, uint64_t end, uint64_t last,
		uint64_t origin)
{
	struct nt_split_dst *p = dst[memo_src_of(e)];
	size_t to;

	if (off > last || !p || p->len >= p->lim)
		return false;
	to = p->len;
	p->map[to] = (uint32_t)(off - origin);
	memcpy(p->buf + to, q, NT_MEMO_MAX_BYTES);
	p->len = to + (size_t)(end + 1 - off);
	return true;
}

/*
 * A stretch of messages the memo knows into m[0..max). Without SRC the
 * one source's address history and time are kept in locals: stores to
 * the records, which may alias the reader's fields, then do not reload
 * them. The caller made sure lean_ready().
 *
 * Where each message ends is read first, 64 bytes at a time, from the
 * MSEO bits alone: where the next message starts then does not wait
 * on the memo, and the work on several messages overlaps.
 *
 * The loop counts in stream offsets, which the records carry, and
 * reads the chunk at the offset less its base: one register for both.
 *
 * With dst (m NULL), each message is put where its source's dst says
 * instead of its record made, for as long as there are such messages
 * (max is not used), and the address histories and times stay as they
 * were: nt_reader_split().
 */
static inline __attribute__((always_inline))
size_t memo_run_of(struct nt_reader *r, struct nt_msg *m,
		   struct nt_split_dst *const *dst, uint64_t origin,
		   size_t max, enum memo_srcs srcs, bool timed)
{
	uintptr_t at = (uintptr_t)r->chunk - r->chunk_base;
	uint64_t off = r->chunk_base + r->pos;
	/* the last word the ends are read from starts here */
	uint64_t last = r->chunk_base + r->len - 8;
	/*
	 * dst: the last a message may start at, its copy in the chunk (0,
	 * which no message reaches here, for a chunk shorter than that)
	 */
	uint64_t split_last = r->chunk_base + r->len >= NT_MEMO_MAX_BYTES ?
			      r->chunk_base + r->len - NT_MEMO_MAX_BYTES : 0;
	uint64_t addr = r->src[0].addr, time = r->src[0].time;
	/* MEMO_TWO only */
	uint64_t addr1 = srcs == MEMO_TWO ? r->src[1].addr : 0;
	uint64_t time1 = srcs == MEMO_TWO ? r->src[1].time : 0;
	struct nt_msg *out = m, *out_end = dst ? NULL : m + max;
	struct memo *memo = r->memo;
	/* a local: the records' byte copies could change r->src */
	struct src_state *src = r->src;

	/*
	 * A message's bytes are loaded as the eight that end with it: from
	 * seven bytes into the chunk on, that load stays within it.
	 */
	if (off - r->chunk_base < 7)
		return 0;
	while ((dst || out != out_end) && off <= last) {
		const uint8_t *q = (const uint8_t *)(at + off);
		uint64_t block = off, ends;

		/* bit i: byte block + i ends a message; whole words only */
		if (last - block >= 56)
			ends = msg_end_bits64(q);
		else
			ends = msg_end_bits_words(q, (unsigned int)
						  ((last - block) / 8 + 1));
		if (!ends)
			break;	/* a long message: nt_reader_next()'s */
		for (;;) {
			uint64_t end = block + ctz64(ends);
			/*
			 * Of the eight bytes up to end, those before off: as
			 * an unsigned, more than seven if the message is
			 * longer than eight bytes.
			 */
			uint64_t before = off + 7 - end;
			const struct memo *e;
			uint64_t bytes;

			if (before > 7) {
				/* then on from a new block: fewer registers */
				e = memo_long(memo, at, off, end);
				if (!e)
					goto out;
				if (dst) {
					if (!memo_split(e, dst,
							(const uint8_t *)(at + off),
							off, end, split_last,
							origin))
						goto out;
				} else {
					memo_take_of(src, srcs, e, out++, off,
						     &addr, &time, &addr1,
						     &time1, timed);
				}
				off = end + 1;
				break;
			}
			bytes = load_bytes((const uint8_t *)(at + end - 7)) >>
				(8 * before);
			e = memo_slot(memo, bytes);
			if (e->bytes != bytes)
				goto out;
			if (dst) {
				if (!memo_split(e, dst, (const uint8_t *)(at + off),
						off, end, split_last, origin))
					goto out;
			} else {
				memo_take_of(src, srcs, e, out++, off, &addr,
					     &time, &addr1, &time1, timed);
			}
			off = end + 1;
			ends &= ends - 1;
			if (!ends)
				break;
			if (!dst && out == out_end)
				goto out;
		}
	}
out:
	r->pos = off - r->chunk_base;
	if (dst)
		return 0;
	if (srcs != MEMO_MANY) {
		r->src[0].addr = addr;
		r->src[0].time = time;
	}
	if (srcs == MEMO_TWO) {
		r->src[1].addr = addr1;
		r->src[1].time = time1;
	}
	return (size_t)(out - m);
}

/* Without TSTAMP a memo adds no time: one copy of the loop without it. */
static size_t memo_run(struct nt_reader *r, struct nt_msg *m, size_t max)
{
	enum memo_srcs how = memo_srcs_of(r);

	if (how == MEMO_MANY && r->cfg.timestamps)
		return memo_run_of(r, m, NULL, 0, max, MEMO_MANY, true);
	if (how == MEMO_MANY)
		return memo_run_of(r, m, NULL, 0, max, MEMO_MANY, false);
	/* without TSTAMP the times stay: no choice between them if alike */
	if (how == MEMO_TWO &&
	    (r->cfg.timestamps || r->src[0].time != r->src[1].time))
		return memo_run_of(r, m, NULL, 0, max, MEMO_TWO, true);
	if (how == MEMO_TWO)
		return memo_run_of(r, m, NULL, 0, max, MEMO_TWO, false);
	if (r->cfg.timestamps)
		return memo_run_of(r, m, NULL, 0, max, MEMO_ONE, true);
	return memo_run_of(r, m, NULL, 0, max, MEMO_ONE, false);
}

void nt_reader_split(struct nt_reader *r, struct nt_split_dst *const *dst,
		     uint64_t origin)
{
	if (r->memo && lean_ready(r))
		memo_run_of(r, NULL, dst, origin, 0, MEMO_ONE, false);
}

size_t nt_reader_next_batch(struct nt_reader *r, struct nt_msg *m,
			    size_t max)
{
	size_t k = 0;

	while (k < max) {
		if (r->memo && lean_ready(r)) {
			k += memo_run(r, m + k, max - k);
			if (k == max)
				break;
		}
		/* one the memo does not know yet, or nothing is pending */
		if (!nt_reader_next(r, &m[k]))
			break;
		k++;
	}
	return k;
}

/* ---- writer --------------------------------------------------------- */

/*
 * Eight 6-bit MDO groups (the low 48 bits of acc) spread to the top six
 * bits of eight bytes, first group in the lowest byte: 2 x 24 -> 4 x 12
 * -> 8 x 6 bits. MSEO goes in the low two bits of each byte.
 */
static uint64_t spread_groups(uint64_t acc)
{
	uint64_t b = (acc & 0xffffffull) | ((acc & 0xffffff000000ull) << 8);

	b = (b & 0x00000fff00000fffull) | ((b & 0x00fff00000fff000ull) << 4);
	b = (b & 0x003f003f003f003full) | ((b & 0x0fc00fc00fc00fc0ull) << 2);
	return b << 2;
}

/*
 * The low len (1..8) bytes of v to out, lowest first, in at most two
 * overlapping stores of register values: a copy of len bytes goes through
 * the stack, and loading part of a word just stored there stalls (a tenth
 * of the writer's time under QEMU).
 */
static void store_low_bytes(uint8_t *out, uint64_t v, unsigned int len)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	for (unsigned int i = 0; i < len; i++)
		out[i] = (uint8_t)(v >> (8 * i));
#else
	uint32_t w4;
	uint16_t w2;

	if (len == 8) {
		memcpy(out, &v, 8);
	} else if (len >= 4) {
		w4 = (uint32_t)v;
		memcpy(out, &w4, 4);
		w4 = (uint32_t)(v >> (8 * (len - 4)));
		memcpy(out + len - 4, &w4, 4);
	} else if (len >= 2) {
		w2 = (uint16_t)v;
		memcpy(out, &w2, 2);
		w2 = (uint16_t)(v >> (8 * (len - 2)));
		memcpy(out + len - 2, &w2, 2);
	} else {
		out[0] = (uint8_t)v;
	}
#endif
}

static unsigned int bit_length(uint64_t v)
{
	return v ? 64 - (unsigned int)__builtin_clzll(v) : 0;
}

/* A variable field carries at least one bit, even for 0. */
static unsigned int field_bits(uint64_t v)
{
	return v ? bit_length(v) : 1;
}

static unsigned int round_up6(unsigned int bits)
{
	return (bits + 5) / 6 * 6;
}

/*
 * Messages are written eight bytes at a time: MDO bits gather in acc, the
 * MSEO of each of its groups in mseo (two bits per byte, as they go out),
 * and every 48 bits become one word of output.
 */
struct bit_writer {
	uint8_t *out;
	size_t cap, n;
	uint64_t acc;		/* MDO bits not yet written */
	unsigned int nacc;	/* 0..47 */
	uint64_t mseo;
	bool overflow;
};

/* The first ngroups groups of acc go out. */
static void bw_put(struct bit_writer *w, unsigned int ngroups)
{
	uint64_t b = spread_groups(w->acc) | w->mseo;

	if (w->cap - w->n < ngroups) {
		/* as much as fits */
		for (unsigned int k = 0; w->n < w->cap; k++)
			w->out[w->n++] = (uint8_t)(b >> (8 * k));
		w->overflow = true;
		return;
	}
	store_low_bytes(w->out + w->n, b, ngroups);
	w->n += ngroups;
}

static void bw_flush_word(struct bit_writer *w)
{
	bw_put(w, 8);
	w->acc = 0;
	w->nacc = 0;
	w->mseo = 0;
}

/* A fixed field: nbits (at most 16) of v. */
static void bw_fixed(struct bit_writer *w, uint64_t v, unsigned int nbits)
{
	unsigned int room = 48 - w->nacc;

	v &= low_mask(nbits);
	if (nbits >= room) {
		w->acc |= (v & low_mask(room)) << w->nacc;
		bw_flush_word(w);
		v >>= room;
		nbits -= room;
	}
	w->acc |= v << w->nacc;
	w->nacc += nbits;
}

/* A variable field holding exactly the low nbits of v (nbits >= 1). */
static void bw_var_bits(struct bit_writer *w, uint64_t v, unsigned int nbits,
			bool last)
{
	for (;;) {
		unsigned int room = 48 - w->nacc;

		if (nbits <= room) {
			w->acc |= (v & low_mask(nbits)) << w->nacc;
			/* the field ends with its group, padded with zeroes */
			w->nacc = round_up6(w->nacc + nbits);
			w->mseo |= (uint64_t)(last ? MSEO_END_MSG :
					      MSEO_END_FIELD) <<
				   (8 * (w->nacc / 6 - 1));
			if (last)
				bw_put(w, w->nacc / 6);
			else if (w->nacc == 48)
				bw_flush_word(w);
			return;
		}
		w->acc |= (v & low_mask(room)) << w->nacc;
		bw_flush_word(w);
		v >>= room;
		nbits -= room;
	}
}

static void bw_var(struct bit_writer *w, uint64_t v, bool last)
{
	bw_var_bits(w, v, field_bits(v), last);
}

/*
 * Shortest encoding of an address field. Without the extension only
 * leading zeroes are dropped; with it (section 8.2) the decoder replicates
 * the top bit of the last MDO, so the field is cut after the MDO where
 * that replication reproduces the value.
 */
static void bw_addr(struct bit_writer *w, const struct nt_stream_cfg *cfg,
		    uint64_t v, bool last)
{
	unsigned int width = addr_field_bits(cfg);
	unsigned int nbits;

	v &= low_mask(width);
	if (!cfg->extend_addr_msb) {
		bw_var(w, v, last);
		return;
	}
	for (nbits = 6 - w->nacc % 6; nbits < width; nbits += 6)
		if (extend_addr(cfg, v & low_mask(nbits), nbits) == v)
			break;
	bw_var_bits(w, v, nbits < width ? nbits : width, last);
}

/*
 * Append variable field v at *end (the MDO bits so far) of a packed
 * message, marking the byte it ends in; false if it goes past 48 bits.
 */
static bool pack_field(uint64_t *acc, uint64_t *mseo, unsigned int *end,
		       uint64_t v)
{
	unsigned int e = round_up6(*end + field_bits(v));

	if (e > 48)
		return false;
	*acc |= v << *end;
	*mseo |= 1ull << (8 * (e / 6 - 1));
	*end = e;
	return true;
}

/*
 * The reader's short_msg_in_word() the other way round: the MDO bits of
 * every field in one word, spread to bytes, with MSEO set where fields
 * and the message end; the same bytes as the general writer's.
 */
int nt_pack_branch(const struct nt_stream_cfg *cfg, unsigned int tcode,
		   unsigned int src, unsigned int btype, uint64_t icnt,
		   uint64_t addr_field, uint64_t hist, uint8_t *out,
		   bool spare)
{
	unsigned int n = 6 + cfg->src_bits;
	uint64_t acc, mseo = 0;

	if (cfg->extend_addr_msb)
		return 0;
	switch (tcode) {
	case NT_TCODE_DIRECT_BRANCH:
		break;
	case NT_TCODE_INDIRECT_BRANCH:
	case NT_TCODE_INDIRECT_BRANCH_HIST:
		if (btype > 3)
			return 0;
		n += 2;
		break;
	default:
		return 0;
	}
	acc = tcode;
	if (cfg->src_bits)
		acc |= (uint64_t)src << 6;
	if (tcode != NT_TCODE_DIRECT_BRANCH)
		acc |= (uint64_t)btype << (6 + cfg->src_bits);
	if (!pack_field(&acc, &mseo, &n, icnt))
		return 0;
	if (tcode != NT_TCODE_DIRECT_BRANCH &&
	    !pack_field(&acc, &mseo, &n,
			addr_field & low_mask(addr_field_bits(cfg))))
		return 0;
	if (tcode == NT_TCODE_INDIRECT_BRANCH_HIST &&
	    !pack_field(&acc, &mseo, &n, hist))
		return 0;
	/* the last byte ends the message: MSEO=11 */
	mseo |= 2ull << (8 * (n / 6 - 1));
	store_low_bytes(out, spread_groups(acc) | mseo, spare ? 8 : n / 6);
	return (int)(n / 6);
}

int nt_write_msg(const struct nt_stream_cfg *cfg, const struct nt_msg *m,
		 uint8_t *out, size_t cap)
{
	struct bit_writer w = { .out = out, .cap = cap };
	uint64_t vars[MAX_VAR_FIELDS];
	int kinds[MAX_VAR_FIELDS];	/* 1 = address field */
	unsigned int nv = 0, k;
	struct layout l;
	bool ts = cfg->timestamps && (m->fields & NT_F_TSTAMP);
	int packed;

	if (m->tcode > 63 || cfg->src_bits > NT_MAX_SRC_BITS ||
	    (cfg->src_bits && m->src >> cfg->src_bits))
		return -1;
	/*
	 * Short branch messages go packed; with no more than eight bytes of
	 * room the general path below writes them (the tests compare both).
	 */
	if (cap > 8 && !ts) {
		packed = nt_pack_branch(cfg, m->tcode, m->src, m->btype,
					m->icnt, m->addr_field, m->hist, out,
					false);
		if (packed)
			return packed;
	}
	bw_fixed(&w, m->tcode, 6);
	if (cfg->src_bits)
		bw_fixed(&w, m->src, cfg->src_bits);

	if (!get_layout(m->tcode, &l)) {
		if (!m->nraw || m->nraw > NT_MAX_RAW_FIELDS)
			return -1;
		for (k = 0; k < m->nraw; k++) {
			kinds[nv] = 0;
			vars[nv++] = m->raw[k];
		}
		goto emit;
	}
	if (l.fixed_sync) {
		if (m->sync > 15)
			return -1;
		bw_fixed(&w, m->sync, 4);
	}
	if (l.fixed_4bit) {
		unsigned int v = m->tcode == NT_TCODE_ERROR ? m->etype :
				 m->tcode == NT_TCODE_RESOURCE_FULL ? m->rcode :
				 m->tcode == NT_TCODE_IN_CIRCUIT_TRACE ? m->cksrc :
				 m->evcode;
		if (v > 15)
			return -1;
		bw_fixed(&w, v, 4);
	}
	if (l.fixed_btype) {
		if (m->btype > 3)
			return -1;
		bw_fixed(&w, m->btype, 2);
	}
	if (l.fixed_cdf) {
		unsigned int v = m->tcode == NT_TCODE_IN_CIRCUIT_TRACE ? m->ckdf :
				 m->cdf;

		if (v > 3)
			return -1;
		bw_fixed(&w, v, 2);
	}
	if (m->tcode == NT_TCODE_IN_CIRCUIT_TRACE) {
		if (m->ckdf > 1)
			return -1;
		l.nvar = 1 + m->ckdf;
	}
	for (k = 0; k < l.nvar; k++) {
		uint64_t v = 0;
		int kind = 0;

		switch (l.var[k]) {
		case V_ICNT: v = m->icnt; break;
		case V_FADDR:
		case V_UADDR: v = m->addr_field; kind = 1; break;
		case V_HIST: v = m->hist; break;
		case V_PROCESS: v = m->process; break;
		case V_ECODE: v = m->ecode; break;
		case V_BCNT: v = m->bcnt; break;
		case V_RDATA0: v = m->rdata[0]; break;
		case V_IDTAG: v = m->idtag; break;
		case V_DQDATA: v = m->dqdata; break;
		case V_CKDATA0: v = m->ckdata[0]; break;
		case V_CKDATA1: v = m->ckdata[1]; break;
		}
		kinds[nv] = kind;
		vars[nv++] = v;
	}
	if (m->tcode == NT_TCODE_RESOURCE_FULL) {
		unsigned int want = m->rcode == NT_RCODE_HIST_REPEAT ? 2 :
				    m->rcode <= NT_RCODE_HIST ? 1 : m->nrdata;

		if (want < 1 || want > 2)
			return -1;
		if (want == 2) {
			kinds[nv] = 0;
			vars[nv++] = m->rdata[1];
		}
	}
	if (m->tcode == NT_TCODE_PROG_TRACE_CORRELATION && m->cdf == 1) {
		kinds[nv] = 0;
		vars[nv++] = m->hist;
	}
emit:
	if (ts) {
		kinds[nv] = 0;
		vars[nv++] = m->tstamp;
	}
	for (k = 0; k < nv; k++) {
		bool last = k + 1 == nv;

		if (kinds[k])
			bw_addr(&w, cfg, vars[k], last);
		else
			bw_var(&w, vars[k], last);
	}
	return w.overflow ? -1 : (int)w.n;
}
