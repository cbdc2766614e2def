// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Text form of a message, shared by `ntrace dump` and the tests.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "ntrace.h"

struct out {
	char *buf;
	size_t len, pos;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->pos < o->len ? o->buf + o->pos : NULL,
		      o->pos < o->len ? o->len - o->pos : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n;
}

static const char *const priv_names[8] = {
	"U", "S", "reserved", "M", "VU", "VS", "reserved", "reserved"
};

int nt_msg_format(const struct nt_msg *m, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len };
	unsigned int k;

	if (len)
		buf[0] = '\0';
	if (m->err && m->err != NT_ERR_UNKNOWN_TCODE) {
		put(&o, "ERROR %s at 0x%" PRIx64 " (%u bytes skipped)",
		    nt_err_name(m->err), m->err_at, m->size);
		return (int)o.pos;
	}
	put(&o, "%s", nt_tcode_name(m->tcode));
	if (m->err)
		put(&o, "(%u)", m->tcode);
	if (m->fields & NT_F_SRC)
		put(&o, " src=%u", m->src);
	if (m->fields & NT_F_SYNC)
		put(&o, " sync=%u(%s)", m->sync, nt_sync_name(m->sync));
	if (m->fields & NT_F_ETYPE)
		put(&o, " etype=%u", m->etype);
	if (m->fields & NT_F_ECODE)
		put(&o, " ecode=0x%" PRIx64, m->ecode);
	if (m->fields & NT_F_RCODE)
		put(&o, " rcode=%u", m->rcode);
	if (m->fields & NT_F_EVCODE)
		put(&o, " evcode=%u", m->evcode);
	if (m->fields & NT_F_CDF)
		put(&o, " cdf=%u", m->cdf);
	if (m->fields & NT_F_CKSRC)
		put(&o, " cksrc=%u", m->cksrc);
	if (m->fields & NT_F_CKDF)
		put(&o, " ckdf=%u", m->ckdf);
	if (m->fields & NT_F_BTYPE)
		put(&o, " btype=%u", m->btype);
	if (m->fields & NT_F_PROCESS) {
		unsigned int fmt = m->process & 3;

		put(&o, " process=0x%" PRIx64 " (%s", m->process,
		    priv_names[(m->process >> 2) & 7]);
		if (fmt >= NT_OWN_SCONTEXT)
			put(&o, " %ccontext=0x%" PRIx64,
			    fmt == NT_OWN_SCONTEXT ? 's' : 'h', m->process >> 5);
		put(&o, ")");
	}
	if (m->fields & NT_F_ICNT)
		put(&o, " icnt=%" PRIu64, m->icnt);
	if (m->fields & NT_F_FADDR)
		put(&o, " faddr=0x%" PRIx64 " -> 0x%" PRIx64, m->addr_field,
		    m->target);
	if (m->fields & NT_F_UADDR)
		put(&o, " uaddr=0x%" PRIx64 " -> 0x%" PRIx64, m->addr_field,
		    m->target);
	if (m->fields & NT_F_HIST)
		put(&o, " hist=0x%" PRIx64, m->hist);
	if (m->fields & NT_F_RDATA) {
		put(&o, " rdata=0x%" PRIx64, m->rdata[0]);
		if (m->nrdata > 1)
			put(&o, " %s=%" PRIu64,
			    m->rcode == NT_RCODE_HIST_REPEAT ? "hrepeat" : "rdata1",
			    m->rdata[1]);
	}
	if (m->fields & NT_F_BCNT)
		put(&o, " bcnt=%" PRIu64, m->bcnt);
	if (m->fields & NT_F_IDTAG)
		put(&o, " idtag=0x%" PRIx64, m->idtag);
	if (m->fields & NT_F_DQDATA)
		put(&o, " dqdata=0x%" PRIx64, m->dqdata);
	if (m->fields & NT_F_CKDATA)
		for (k = 0; k <= m->ckdf && k < 2; k++)
			put(&o, " ckdata%u=0x%" PRIx64, k, m->ckdata[k]);
	if (m->fields & NT_F_RAW)
		for (k = 0; k < m->nraw; k++)
			put(&o, " field%u=0x%" PRIx64, k, m->raw[k]);
	if (m->fields & NT_F_TSTAMP)
		put(&o, " tstamp=%" PRIu64 " time=%" PRIu64, m->tstamp, m->time);
	return (int)o.pos;
}
