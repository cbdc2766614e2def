// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Flow decoder tests.
 *
 * Ground truth round trips: real programs executed under qemu-riscv64,
 * encoded with every option set of the encoder model, decoded, compared
 * with the executed PCs instruction for instruction; the same through
 * the Bluespec input path. The spec's I-CNT and HIST worked examples.
 * Damage: bit flips, dropped and inserted bytes, truncation; how many
 * single flips and dropped bytes decode without a word to wrong PCs.
 *
 * usage: test_decode DIR [NAME...]   (DIR holds NAME and NAME.pcs)
 */
#include <inttypes.h>

#include "bluespec.h"
#include "progs.h"
#include "tap.h"
#include "xorshift.h"

/* ---- collecting decoded PCs ----------------------------------------- */

struct sync_point {
	uint64_t offset;	/* byte offset of the sync message */
	size_t index;		/* PCs decoded before it */
};

/*
 * A damaged trace may legally decode to billions of instructions (an
 * I-CNT near 2^32 is within max_icnt): keep the first this many PCs and
 * count the rest. A clean decode of the test programs is under 300,000.
 */
#define MAX_KEPT_PCS	((size_t)1 << 24)

struct collect {
	uint64_t *pcs;
	size_t n, cap;
	uint64_t not_kept;	/* PCs past MAX_KEPT_PCS */
	struct sync_point *syncs;
	size_t nsyncs, capsyncs;
	size_t gaps;
	uint64_t first_gap_offset;
	bool ended_in_exception;
	uint64_t last_exception_pc;
	struct nt_decoder_stats st;
	/* when set, PCs are compared with these instead of kept */
	const uint64_t *truth;
	size_t ntruth;
	bool differs;
};

/*
 * Array p of n elements of size bytes, *cap of them allocated: room for
 * one more, the allocation doubled (first elements at first) if full.
 */
static void *grow(void *p, size_t n, size_t *cap, size_t first, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? 2 * *cap : first;
	p = realloc(p, *cap * size);
	if (!p)
		abort();
	return p;
}

static void push_pc(struct collect *c, uint64_t pc)
{
	if (c->truth) {
		c->differs |= c->n >= c->ntruth || c->truth[c->n] != pc;
		c->n++;
		return;
	}
	if (c->n == MAX_KEPT_PCS) {
		c->not_kept++;
		return;
	}
	c->pcs = grow(c->pcs, c->n, &c->cap, 1 << 16, sizeof(*c->pcs));
	c->pcs[c->n++] = pc;
}

static void on_event(void *ctx, const struct nt_event *ev)
{
	struct collect *c = ctx;
	const uint8_t *p = ev->code;
	uint64_t pc = ev->from, k;

	switch (ev->kind) {
	case NT_EV_INSNS:
		if (!c->truth && c->n == MAX_KEPT_PCS) {
			/* billions of them, in a damaged trace's replay */
			c->not_kept += ev->ninsn;
			break;
		}
		for (k = 0; k < ev->ninsn; k++) {
			unsigned int sz = (p[0] & 3) == 3 ? 4 : 2;

			push_pc(c, pc);
			p += sz;
			pc += sz;
		}
		break;
	case NT_EV_TRAP:
		if (ev->itype == NT_ITYPE_EXCEPTION)
			push_pc(c, ev->from);
		break;
	case NT_EV_SYNC:
		c->syncs = grow(c->syncs, c->nsyncs, &c->capsyncs, 256,
				sizeof(*c->syncs));
		c->syncs[c->nsyncs].offset = ev->offset;
		c->syncs[c->nsyncs].index = c->n;
		c->nsyncs++;
		break;
	case NT_EV_GAP:
		if (!c->gaps++)
			c->first_gap_offset = ev->offset;
		break;
	default:
		break;
	}
}

static void collect_free(struct collect *c)
{
	free(c->pcs);
	free(c->syncs);
	memset(c, 0, sizeof(*c));
}

/* The statistics' last_time after each feed of a decode. */
struct time_trail {
	uint64_t *t;
	size_t n, cap;
};

static bool same_trail(const struct time_trail *a, const struct time_trail *b)
{
	return a->n == b->n && !memcmp(a->t, b->t, a->n * sizeof(*a->t));
}

/*
 * A chunk size for feed_all() that is not one: feeds end where messages
 * do, at about every fourth message end, drawn the same way for every
 * decode. Such feeds end right after a run the cache took far more
 * often than feeds of a size do, and a by-source decoder orders its
 * sources' last times by where each one's last run ends.
 */
#define FEED_AT_ENDS	SIZE_MAX

/* The size of the feed from pos. */
static size_t feed_size(const uint8_t *buf, size_t len, size_t pos,
			size_t chunk, uint64_t *state)
{
	size_t end;

	if (chunk != FEED_AT_ENDS)
		return chunk && chunk < len - pos ? chunk : len - pos;
	for (end = pos; end < len; end++)
		/* MSEO 11: the byte ends a message (or is idle) */
		if ((buf[end] & 3) == 3 && xorshift64(state) % 4 == 0)
			return end + 1 - pos;
	return len - pos;
}

/*
 * Feed buf to d, chunk bytes at a time (0: at once; FEED_AT_ENDS), the
 * time after each feed to trail (NULL: none), finish and free it.
 */
static void feed_all(struct nt_decoder *d, const uint8_t *buf, size_t len,
		     size_t chunk, struct nt_decoder_stats *st,
		     struct time_trail *trail)
{
	uint64_t state = 0x510e527fade682d1ull;
	size_t pos = 0;

	while (pos < len) {
		size_t n = feed_size(buf, len, pos, chunk, &state);

		nt_decoder_feed(d, buf + pos, n);
		pos += n;
		if (trail) {
			trail->t = grow(trail->t, trail->n, &trail->cap, 1024,
					sizeof(*trail->t));
			trail->t[trail->n++] = nt_decoder_stats(d)->last_time;
		}
	}
	nt_decoder_finish(d);
	*st = *nt_decoder_stats(d);
	nt_decoder_free(d);
}

/* The decoder settings for what ecfg encoded, all of the program known. */
static void decoder_cfg_for(const struct nt_encoder_cfg *ecfg,
			    struct nt_decoder_cfg *cfg)
{
	nt_decoder_cfg_default(cfg);
	cfg->stream = ecfg->stream;
	cfg->all_jumps = ecfg->all_jumps;
	cfg->mode = ecfg->mode;
	cfg->images_complete = true;
	/* as deep as the encoder's: both drop the oldest return the same */
	cfg->ir_depth = ecfg->ir_depth;
}

/* Decode buf with the settings ecfg encoded it with, chunk bytes a feed. */
static void run_decoder(const struct nt_encoder_cfg *ecfg,
			const struct nt_image *img, const uint8_t *buf,
			size_t len, size_t chunk, nt_event_fn fn, void *ctx,
			struct nt_decoder_stats *st)
{
	struct nt_decoder_cfg cfg;
	struct nt_decoder *d;
	const char *err = NULL;

	decoder_cfg_for(ecfg, &cfg);
	d = nt_decoder_new(&cfg, fn, ctx, &err);
	if (!d)
		return;
	nt_decoder_add_image(d, img, true, 0);
	feed_all(d, buf, len, chunk, st, NULL);
}

static void decode(const struct nt_encoder_cfg *ecfg, const struct nt_image *img,
		   const uint8_t *buf, size_t len, size_t chunk,
		   struct collect *c)
{
	memset(c, 0, sizeof(*c));
	run_decoder(ecfg, img, buf, len, chunk, on_event, c, &c->st);
}

/*
 * The decoded PCs must equal want, the n that p ran. One instruction
 * may be missing at the very end: the program exits through an ecall
 * whose trap handler is never traced, and N-Trace has no message for a
 * trap whose destination is unknown.
 */
static bool same_pcs(const struct prog *p, const uint64_t *want, size_t n,
		     const struct collect *c, size_t *first_diff)
{
	size_t common = c->n < n ? c->n : n, i;

	for (i = 0; i < common; i++)
		if (c->pcs[i] != want[i])
			break;
	*first_diff = i;
	if (i < common)
		return false;
	if (c->n == n)
		return true;
	return c->n + 1 == n && p->recs[p->nrecs - 1].itype ==
	       NT_ITYPE_EXCEPTION;
}

/* The decoded PCs against the executed ones (same_pcs()). */
static bool same_as_truth(const struct prog *p, const struct collect *c,
			  size_t *first_diff)
{
	return same_pcs(p, p->pcs, p->npcs, c, first_diff);
}

/* ---- code supplied on demand ------------------------------------------- */

struct filler {
	const struct nt_image *from;	/* where the "process memory" is */
	unsigned int calls;
};

/* Adds the whole segment of f->from around addr, as perf adds a map. */
static int fill_from_image(void *ctx, struct nt_image *img, uint64_t addr)
{
	struct filler *f = ctx;
	const uint8_t *p, *q;
	size_t avail, before;
	const char *err;
	uint64_t start = addr;

	f->calls++;
	p = nt_image_lookup(f->from, addr, &avail);
	if (!p)
		return -1;
	for (;;) {
		q = nt_image_lookup(f->from, start - 2, &before);
		if (!q || q + 2 != p - (addr - start) || start < 2)
			break;
		start -= 2;
	}
	return nt_image_add_mem(img, p - (addr - start), avail + (addr - start),
				start, &err);
}

/*
 * An image that starts empty and is filled by a callback decodes like the
 * image itself, asking once per segment, and once per missing page.
 */
static void image_fill(struct prog *p)
{
	struct filler f = { .from = p->img };
	struct nt_image *img = nt_image_new();
	struct nt_encoder_cfg cfg;
	struct collect c;
	const uint8_t *got;
	size_t len, diff = 0, avail;
	uint8_t *buf;
	unsigned int calls;
	bool same;

	nt_encoder_cfg_default(&cfg);
	buf = prog_encode(p, &cfg, &len);
	if (!img || !buf) {
		tap_ok(0, "%s: image filled on demand: encode", p->name);
		free(buf);
		nt_image_free(img);
		return;
	}
	nt_image_set_fill(img, fill_from_image, &f);
	decode(&cfg, img, buf, len, 0, &c);
	same = same_as_truth(p, &c, &diff);
	tap_ok(same && !c.gaps && f.calls >= 1 && f.calls <= 4,
	       "%s: image filled on demand decodes exactly (%u fills; %zu of %zu PCs agree)",
	       p->name, f.calls, diff, p->npcs);
	collect_free(&c);

	calls = f.calls;
	got = nt_image_lookup(img, 8, &avail);
	got = got ? got : nt_image_lookup(img, 8, &avail);
	tap_ok(!got && !avail && f.calls == calls + 1,
	       "%s: a missing page is asked for once (%u calls)", p->name,
	       f.calls - calls);
	free(buf);
	nt_image_free(img);
}

/* ---- round trips ------------------------------------------------------- */

/* Programs that leave functions through longjmp or a signal return. */
static bool well_behaved(const struct prog *p)
{
	return strcmp(p->name, "longjmp") && strcmp(p->name, "signal");
}

static void round_trips(struct prog *p)
{
	size_t k;

	for (k = 0; k < N_OPTION_SETS; k++) {
		struct nt_encoder_cfg cfg;
		struct collect c, c2;
		uint8_t *buf;
		size_t len, diff = 0;
		bool ok;

		nt_encoder_cfg_default(&cfg);
		option_sets[k].apply(&cfg);
		buf = prog_encode(p, &cfg, &len);
		if (!buf) {
			tap_ok(0, "%s %s: encode", p->name, option_sets[k].name);
			continue;
		}
		decode(&cfg, p->img, buf, len, 0, &c);
		if (cfg.implicit_return == 1 && !well_behaved(p)) {
			/*
			 * Section 8.2: a return counter cannot follow programs
			 * that leave functions other than by returning. The
			 * decoder must notice, not decode garbage.
			 */
			same_as_truth(p, &c, &diff);
			tap_ok(c.gaps > 0,
			       "%s %s: not a well-behaved program; the decoder "
			       "reports a gap (exact for %zu PCs)", p->name,
			       option_sets[k].name, diff);
			collect_free(&c);
			free(buf);
			continue;
		}
		ok = !c.gaps && same_as_truth(p, &c, &diff);
		if (!tap_ok(ok, "%s %s: %zu of %zu PCs decoded exactly",
			    p->name, option_sets[k].name, c.n, p->npcs))
			tap_diag("first difference at #%zu (decoded 0x%" PRIx64
				 ", executed 0x%" PRIx64 "), %zu gaps, first at byte %"
				 PRIu64, diff, diff < c.n ? c.pcs[diff] : 0,
				 diff < p->npcs ? p->pcs[diff] : 0, c.gaps,
				 c.first_gap_offset);
		/* AUX data arrives in pieces of any size */
		if (k == 2 || k == 7) {
			decode(&cfg, p->img, buf, len, 7, &c2);
			tap_ok(c2.n == c.n && !memcmp(c2.pcs, c.pcs, c.n * 8),
			       "%s %s: 7-byte chunks decode the same", p->name,
			       option_sets[k].name);
			collect_free(&c2);
		}
		collect_free(&c);
		free(buf);
	}
}

/* ---- repeated history against the reference encoder ------------------ */

/*
 * Trace sizes in bytes of the N-Trace task group's reference encoder
 * (github.com/riscv-non-isa/tg-nexus-trace, refcode/c at e0f02c6, built
 * outside this tree) on the traces of these programs, measured on
 * 2026-11-25: objdump -d of the ELF and the .pcs file through its
 * "NexRv -conv", then "NexRv -enco ... -rpt 2" (repeated history, HTM)
 * with "-cs 0" (no implicit return) and with "-cs 32" (a return stack of
 * 32 addresses: its own decoder, which keeps 32, decodes the traces of
 * its default 8 wrongly). The programs were built by
 * riscv64-linux-gnu-gcc 12.2.0 (Debian 12.2.0-13) against glibc 2.36
 * and traced by qemu-riscv64 7.2.22; the number of PCs identifies those
 * traces. Other traces get other figures, and the comparison is
 * skipped.
 */
static const struct {
	const char *name;
	size_t npcs;
	size_t ref_plain, ref_ir;
} reference_sizes[] = {
	{ "rsort", 127603, 1341, 852 },
	{ "vvadd", 35006, 1160, 657 },
	{ "median", 16350, 1549, 1005 },
	{ "quicksort", 238288, 9076, 8577 },
};

/*
 * With repeated history, our trace of each benchmark is no larger than
 * the reference encoder's with the same options (default widths: 16-bit
 * I-CNT, whose RCODE 0 messages the reference never sends, 32-bit HIST,
 * 18-bit HREPEAT, a 32-deep return stack), and decodes exactly.
 */
static void against_reference(struct prog *p)
{
	size_t k;

	for (k = 0; k < sizeof(reference_sizes) / sizeof(reference_sizes[0]);
	     k++)
		if (!strcmp(p->name, reference_sizes[k].name))
			break;
	if (k == sizeof(reference_sizes) / sizeof(reference_sizes[0]))
		return;
	if (p->npcs != reference_sizes[k].npcs) {
		tap_ok(1, "%s: # SKIP not the traces the reference was measured "
		       "on (%zu PCs, not %zu)", p->name, p->npcs,
		       reference_sizes[k].npcs);
		return;
	}
	for (unsigned int ir = 0; ir <= 3; ir += 3) {
		size_t ref = ir ? reference_sizes[k].ref_ir :
				  reference_sizes[k].ref_plain;
		struct nt_encoder_cfg cfg;
		struct collect c;
		size_t len, diff = 0;
		uint8_t *buf;
		bool exact;

		nt_encoder_cfg_default(&cfg);
		cfg.repeat_history = true;
		cfg.implicit_return = (uint8_t)ir;
		buf = prog_encode(p, &cfg, &len);
		if (!buf) {
			tap_ok(0, "%s: encode", p->name);
			continue;
		}
		decode(&cfg, p->img, buf, len, 0, &c);
		exact = !c.gaps && same_as_truth(p, &c, &diff);
		if (!tap_ok(len <= ref && exact,
			    "%s htm+repeat-history%s: %zu bytes, reference %zu; "
			    "%zu of %zu PCs decoded exactly", p->name,
			    ir ? "+ir3" : "", len, ref, exact ? c.n : diff,
			    p->npcs))
			tap_diag("%zu gaps, first difference at #%zu", c.gaps,
				 diff);
		collect_free(&c);
		free(buf);
	}
}

/* Records -> Bluespec bytes -> records -> N-Trace -> decode. */
static void bluespec_path(struct prog *p)
{
	struct nt_bsv_config bc;
	struct nt_bsv_writer w;
	struct nt_bsv_reader r;
	struct nt_bsv_event ev;
	struct nt_pcgen *g = nt_pcgen_new(NULL, 0);
	struct prog q = *p;
	const uint8_t *data;
	size_t len, i, nrecs = 0, diff = 0;
	struct nt_encoder_cfg cfg;
	struct collect c;
	uint8_t *buf;
	const char *err = NULL;
	int got;

	nt_bsv_config_rv64(&bc);
	nt_bsv_writer_init(&w, &bc);
	for (i = 0; i < p->npcs; i++) {
		size_t avail;
		const uint8_t *code = nt_image_lookup(p->img, p->pcs[i], &avail);

		memset(&ev, 0, sizeof(ev));
		ev.pc = p->pcs[i];
		ev.pc_valid = true;
		ev.next_pc = i + 1 < p->npcs ? p->pcs[i + 1] : p->pcs[i] + 4;
		ev.next_pc_valid = true;
		ev.insn_size = (code[0] & 3) == 3 ? 4 : 2;
		memcpy(&ev.insn, code, ev.insn_size);
		nt_bsv_write(&w, &ev);
	}
	data = nt_bsv_writer_data(&w, &len);
	nt_bsv_reader_init(&r, &bc, data, len);
	q.recs = malloc((2 * p->npcs + 2) * sizeof(*q.recs));
	while ((got = nt_bsv_next(&r, &ev)) == 1) {
		uint8_t bytes[4];

		memcpy(bytes, &ev.insn, 4);
		nrecs += (size_t)nt_pcgen_next_bytes(g, ev.pc, bytes,
						     ev.insn_size, q.recs + nrecs,
						     &err);
		if (err)
			break;
	}
	nrecs += (size_t)nt_pcgen_finish(g, q.recs + nrecs, &err);
	for (i = 0; i < nrecs; i++)
		q.recs[i].tstamp = i + 1;
	q.nrecs = nrecs;
	tap_ok(got == 0 && !err && nrecs == p->nrecs &&
	       !memcmp(q.recs, p->recs, nrecs * sizeof(*q.recs)),
	       "%s: Bluespec trace gives the same %zu records", p->name, nrecs);

	nt_encoder_cfg_default(&cfg);
	os_htm_ir3_rh(&cfg);
	buf = prog_encode(&q, &cfg, &len);
	decode(&cfg, p->img, buf, len, 0, &c);
	tap_ok(!c.gaps && same_as_truth(p, &c, &diff),
	       "%s: Bluespec input path decodes to the executed PCs", p->name);
	collect_free(&c);
	free(buf);
	free(q.recs);
	nt_pcgen_free(g);
	nt_bsv_writer_free(&w);
}

/* ---- damage ---------------------------------------------------------- */

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	return xorshift64(&rng);
}

/*
 * Damage one copy of the trace at offset off, with random numbers from
 * *st; bytes after the damage move by *shift. Returns the damaged length.
 */
static size_t damage(const uint8_t *in, size_t len, uint8_t *out, int kind,
		     size_t off, long *shift, uint64_t *st)
{
	size_t n;

	*shift = 0;
	switch (kind) {
	case 0:	/* bit flip */
		memcpy(out, in, len);
		out[off] ^= (uint8_t)(1u << (xorshift64(st) % 8));
		return len;
	case 1:	/* dropped bytes */
		n = 1 + xorshift64(st) % 8;
		if (off + n > len)
			n = len - off;
		memcpy(out, in, off);
		memcpy(out + off, in + off + n, len - off - n);
		*shift = -(long)n;
		return len - n;
	case 2:	/* inserted bytes */
		n = 1 + xorshift64(st) % 8;
		memcpy(out, in, off);
		for (size_t i = 0; i < n; i++)
			out[off + i] = (uint8_t)xorshift64(st);
		memcpy(out + off + n, in + off, len - off);
		*shift = (long)n;
		return len + n;
	default: /* truncation */
		memcpy(out, in, off);
		return off;
	}
}

static void damage_tests(struct prog *p)
{
	static const char *const kinds[] = {
		"bit flips", "dropped bytes", "inserted bytes", "truncations"
	};
	struct nt_encoder_cfg cfg;
	struct collect clean;
	uint8_t *buf, *bad;
	size_t len, kind;

	nt_encoder_cfg_default(&cfg);
	os_htm_ir3_rh(&cfg);
	cfg.sync_mode = 3;
	cfg.sync_max = 8;	/* a sync every 4096 half-words */
	buf = prog_encode(p, &cfg, &len);
	decode(&cfg, p->img, buf, len, 0, &clean);
	bad = malloc(len + 16);

	for (kind = 0; kind < 4; kind++) {
		unsigned int trial, wrong = 0, unreported = 0, trials = 60;
		unsigned int too_long = 0;
		uint64_t recovered = 0, total = 0;

		for (trial = 0; trial < trials; trial++) {
			size_t off = 8 + rnd() % (len - 16), blen, i, j;
			struct collect c;
			long shift;

			blen = damage(buf, len, bad, (int)kind, off, &shift,
				      &rng);
			decode(&cfg, p->img, bad, blen, 1 + rnd() % 4096, &c);
			total += clean.n;

			if (c.not_kept) {
				/* too long to keep: nothing to compare */
				too_long++;
				collect_free(&c);
				continue;
			}
			if (kind == 3) {
				/* everything before the cut is exact */
				for (i = 0; i < c.n && i < clean.n; i++)
					if (c.pcs[i] != clean.pcs[i])
						break;
				wrong += i != c.n;
				unreported += !c.gaps;
				recovered += i;
				collect_free(&c);
				continue;
			}
			/* the first sync well after the damage, in both runs */
			for (i = 0; i < c.nsyncs; i++)
				if (c.syncs[i].offset > off + NT_MAX_MSG_BYTES)
					break;
			for (j = 0; i < c.nsyncs && j < clean.nsyncs; j++)
				if ((long)clean.syncs[j].offset + shift ==
				    (long)c.syncs[i].offset)
					break;
			if (i < c.nsyncs && j < clean.nsyncs) {
				size_t a = c.syncs[i].index;
				size_t b = clean.syncs[j].index;

				if (c.n - a != clean.n - b ||
				    memcmp(c.pcs + a, clean.pcs + b,
					   (c.n - a) * sizeof(uint64_t)))
					wrong++;
				recovered += clean.n - b;
			}
			/* an error is never reported before the damage */
			if (c.gaps && c.first_gap_offset + NT_MAX_MSG_BYTES < off)
				wrong++;
			/* a count of PCs before the damage that still match */
			for (i = 0; i < c.n && i < clean.n; i++)
				if (c.pcs[i] != clean.pcs[i])
					break;
			recovered += i < clean.n ? i : 0;
			if (c.n != clean.n || memcmp(c.pcs, clean.pcs, c.n * 8))
				unreported += !c.gaps;
			collect_free(&c);
		}
		tap_ok(!wrong && too_long < trials / 10,
		       "%s %s: %u trials, every PC after the next sync exact, "
		       "%.1f%% of instructions recovered, %u undetected, "
		       "%u too long to compare",
		       p->name, kinds[kind], trials,
		       100.0 * (double)recovered / (double)total, unreported,
		       too_long);
	}
	collect_free(&clean);
	free(bad);
	free(buf);
}

/* ---- the run cache: the same events as without it -------------------- */

struct evlog {
	struct nt_event *ev;
	size_t n, cap;
	struct time_trail times;
};

static void evlog_free(struct evlog *l)
{
	free(l->ev);
	free(l->times.t);
}

static void log_event(void *ctx, const struct nt_event *ev)
{
	struct evlog *l = ctx;

	l->ev = grow(l->ev, l->n, &l->cap, 1024, sizeof(*l->ev));
	l->ev[l->n++] = *ev;
}

static void log_events(void *ctx, const struct nt_event *ev, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		log_event(ctx, &ev[i]);
}

static bool same_event(const struct nt_event *a, const struct nt_event *b)
{
	return a->kind == b->kind && a->itype == b->itype &&
	       a->btype == b->btype && a->sync == b->sync &&
	       a->priv == b->priv && a->evcode == b->evcode &&
	       a->flags == b->flags && a->src == b->src &&
	       a->from == b->from && a->last == b->last && a->to == b->to &&
	       a->ninsn == b->ninsn && a->context == b->context &&
	       a->time == b->time && a->offset == b->offset &&
	       a->error == b->error && a->code == b->code;
}

static bool same_stats(const struct nt_decoder_stats *a,
		       const struct nt_decoder_stats *b)
{
	return a->msgs == b->msgs && a->bytes == b->bytes &&
	       a->insns == b->insns && a->halfwords == b->halfwords &&
	       a->transfers == b->transfers && a->traps == b->traps &&
	       a->syncs == b->syncs && a->gaps == b->gaps &&
	       a->errors == b->errors && a->skipped_msgs == b->skipped_msgs &&
	       a->last_time == b->last_time &&
	       !memcmp(a->deviations, b->deviations, sizeof(a->deviations)) &&
	       !memcmp(a->deviation_at, b->deviation_at,
		       sizeof(a->deviation_at));
}

/* Decode buf into l: the run cache on or off, singly or in batches. */
static void log_decode(const struct nt_decoder_cfg *base, bool run_cache,
		       bool batch, const struct nt_image *img,
		       const uint8_t *buf, size_t len, size_t chunk,
		       struct evlog *l, struct nt_decoder_stats *st)
{
	struct nt_decoder_cfg cfg = *base;
	const char *err = NULL;
	struct nt_decoder *d;

	cfg.run_cache = run_cache;
	d = batch ? nt_decoder_new_batch(&cfg, log_events, l, &err) :
		    nt_decoder_new(&cfg, log_event, l, &err);
	if (!d)
		abort();
	nt_decoder_add_image(d, img, true, 0);
	feed_all(d, buf, len, chunk, st, &l->times);
}

/* buf decoded by the general path alone and with the run cache */
struct cache_cmp {
	struct evlog off, on;
	struct nt_decoder_stats st_off, st_on;
	size_t first;		/* the first event that differs */
	bool same;		/* events, field by field, and statistics */
};

/*
 * Decode buf without the run cache and with it, singly or in batches,
 * both chunk bytes a feed (0: at once), and compare, the time the
 * statistics give between feeds too; c's logs are the caller's to free
 * (cache_cmp_free()).
 */
static void cache_cmp_run(struct cache_cmp *c, const struct nt_decoder_cfg *dc,
			  const struct nt_image *img, const uint8_t *buf,
			  size_t len, bool batch, size_t chunk)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	log_decode(dc, false, false, img, buf, len, chunk, &c->off, &c->st_off);
	log_decode(dc, true, batch, img, buf, len, chunk, &c->on, &c->st_on);
	for (i = 0; i < c->off.n && i < c->on.n; i++)
		if (!same_event(&c->off.ev[i], &c->on.ev[i]))
			break;
	c->first = i;
	c->same = i == c->off.n && c->off.n == c->on.n &&
		  same_stats(&c->st_off, &c->st_on) &&
		  same_trail(&c->off.times, &c->on.times);
}

static void cache_cmp_free(struct cache_cmp *c)
{
	evlog_free(&c->off);
	evlog_free(&c->on);
}

static void os_htm_ir3_rh_ts(struct nt_encoder_cfg *c)
{
	os_htm_ir3_rh(c);
	c->stream.timestamps = true;
}

static void os_htm_small_ts(struct nt_encoder_cfg *c)
{
	os_htm_small(c);
	c->stream.timestamps = true;
}

/*
 * Repeated history with TSTAMP, which no option set has, for the run
 * cache's tests: with an 8-bit HIST a ResourceFull and the message
 * after it make a pair run (with 32 bits the ResourceFull is too long
 * for one).
 */
static const struct option_set ts_sets[] = {
	{ "htm+ir3+repeat-history+ts", os_htm_ir3_rh_ts },
	{ "htm+icnt8+hist8+hrepeat3+ir3-depth2+ts", os_htm_small_ts },
};
#define N_TS_SETS (sizeof(ts_sets) / sizeof(ts_sets[0]))

/*
 * Every option set's trace of p, clean and damaged (the damage makes
 * the general path take over in the middle of runs the cache knows),
 * fed whole and in pieces, with the return stack as deep as the
 * encoder's and shallower: event for event, field for field, the same
 * with the run cache as without it.
 */
static void run_cache_same(struct prog *p)
{
	uint64_t state = 0x9e3779b97f4a7c15ull;
	size_t k;

	for (k = 0; k < N_OPTION_SETS + N_TS_SETS; k++) {
		const struct option_set *os = k < N_OPTION_SETS ?
					      &option_sets[k] :
					      &ts_sets[k - N_OPTION_SETS];
		struct nt_encoder_cfg ecfg;
		struct nt_decoder_cfg dc;
		unsigned int trial, differ = 0, trials = 12;
		size_t len, events = 0;
		uint64_t msgs = 0, cached = 0;
		bool must_cache;
		uint8_t *buf, *bad;

		nt_encoder_cfg_default(&ecfg);
		os->apply(&ecfg);
		buf = prog_encode(p, &ecfg, &len);
		if (!buf || len < 64) {
			tap_ok(0, "%s %s: encode", p->name, os->name);
			free(buf);
			continue;
		}
		bad = malloc(len + 16);
		for (trial = 0; trial < trials; trial++) {
			struct cache_cmp c;
			size_t blen = len, chunk;
			long shift;

			nt_decoder_cfg_default(&dc);
			dc.stream = ecfg.stream;
			dc.all_jumps = ecfg.all_jumps;
			dc.mode = ecfg.mode;
			dc.images_complete = trial & 1;
			dc.ir_depth = trial % 3 == 2 ? 2 : 0;
			if (trial) {
				size_t at = 8 + xorshift64(&state) % (len - 16);

				blen = damage(buf, len, bad,
					      (int)(xorshift64(&state) % 3), at,
					      &shift, &state);
			} else {
				memcpy(bad, buf, len);
			}
			chunk = trial % 4 == 1 ? 7 : trial % 4 == 3 ?
				1 + xorshift64(&state) % 4096 : 0;
			cache_cmp_run(&c, &dc, p->img, bad, blen,
				      trial % 2 == 0, chunk);
			if (!c.same && !differ++)
				tap_diag("trial %u: %zu and %zu events, first "
					 "difference #%zu", trial, c.off.n,
					 c.on.n, c.first);
			events += c.off.n;
			msgs += c.st_on.msgs;
			cached += c.st_on.cached_msgs;
			cache_cmp_free(&c);
		}
		/*
		 * A program's plain BTM and HTM traces repeat messages
		 * enough for it, and so do the option sets' with TSTAMP
		 * (one time unit a record: a loop's messages repeat
		 * theirs); with long histories a short program may not.
		 */
		must_cache = k < 2 ||
			     (k < N_OPTION_SETS && ecfg.stream.timestamps);
		tap_ok(!differ && (!must_cache || cached > 0),
		       "%s %s: the run cache changes none of %zu events in %u "
		       "traces (%u differ; it took %" PRIu64 " of %" PRIu64
		       " messages)", p->name, os->name, events,
		       trials, differ, cached, msgs);
		free(bad);
		free(buf);
	}
}

/*
 * An image added while decoding (perf adds one at each mmap event)
 * changes the image order of the sources it is for: here a copy of the
 * 8 KiB around the middle of p's run, for process 1, added a sixth of
 * the way into buf (see run_cache_states()). Its copy is searched
 * first from then on, so the events point at its bytes (ev->code), and
 * the runs made before it must not be taken again.
 */
static void run_cache_new_image(struct prog *p,
				const struct nt_decoder_cfg *dc,
				const uint8_t *buf, size_t len)
{
	uint64_t at = p->pcs[p->npcs / 2] & ~0xfffull;
	const uint8_t *code, *copied;
	struct evlog l[2] = { { 0 } };
	struct nt_image *copy;
	const char *err = NULL;
	size_t avail, n, i, in_copy = 0;
	unsigned int k;

	code = nt_image_lookup(p->img, at, &avail);
	n = avail < 8192 ? avail : 8192;
	copy = nt_image_new();
	if (!code || !copy || nt_image_add_mem(copy, code, n, at, &err))
		abort();
	copied = nt_image_lookup(copy, at, &avail);
	for (k = 0; k < 2; k++) {
		struct nt_decoder_cfg cfg = *dc;
		struct nt_decoder *d;

		cfg.run_cache = k;
		d = nt_decoder_new(&cfg, log_event, &l[k], &err);
		if (!d)
			abort();
		nt_decoder_add_image(d, p->img, true, 0);
		nt_decoder_feed(d, buf, len / 6);
		nt_decoder_add_image(d, copy, false, 1);
		nt_decoder_feed(d, buf + len / 6, len - len / 6);
		nt_decoder_finish(d);
		nt_decoder_free(d);
	}
	for (i = 0; i < l[0].n && i < l[1].n; i++) {
		if (!same_event(&l[0].ev[i], &l[1].ev[i]))
			break;
		in_copy += l[0].ev[i].code >= copied &&
			   l[0].ev[i].code < copied + n;
	}
	tap_ok(l[0].n == l[1].n && i == l[0].n && in_copy,
	       "%s: an image added while decoding, the run cache changes "
	       "none of %zu events (%zu walk the image's bytes)", p->name,
	       l[0].n, in_copy);
	evlog_free(&l[0]);
	evlog_free(&l[1]);
	nt_image_free(copy);
}

/*
 * p run three times in a row, each time entered from the trap the time
 * before ends with: by process 1 in user mode, by process 2 (another
 * scontext, so another image order) in user mode, and by process 2 in
 * supervisor mode. A run is taken only in the state it was made in
 * (context, privilege, image order, run_epoch()): were a change missed,
 * the runs of the state before would hand out their events, context
 * and privilege included.
 */
static void run_cache_states(struct prog *p)
{
	static const struct {
		uint64_t ctx;
		uint8_t priv;
	} passes[] = {
		{ 1, NT_PRIV_U }, { 2, NT_PRIV_U }, { 2, NT_PRIV_S },
	};
	const unsigned int npasses = sizeof(passes) / sizeof(passes[0]);
	/* p's records, once for each pass */
	struct prog thrice = *p;
	size_t k, i;
	unsigned int j;

	thrice.nrecs = npasses * p->nrecs;
	thrice.recs = malloc(thrice.nrecs * sizeof(*thrice.recs));
	if (!thrice.recs)
		abort();
	for (j = 0; j < npasses; j++) {
		for (i = 0; i < p->nrecs; i++) {
			struct nt_record *r = &thrice.recs[j * p->nrecs + i];

			*r = p->recs[i];
			r->context = passes[j].ctx;
			r->priv = passes[j].priv;
		}
	}
	for (k = 0; k < 2; k++) {
		struct nt_encoder_cfg ecfg;
		struct nt_decoder_cfg dc;
		struct cache_cmp c[2];
		unsigned int seen = 0;
		uint8_t *buf;
		size_t len;

		nt_encoder_cfg_default(&ecfg);
		option_sets[k].apply(&ecfg);
		ecfg.context = true;
		buf = prog_encode(&thrice, &ecfg, &len);
		if (!buf)
			abort();

		nt_decoder_cfg_default(&dc);
		dc.stream = ecfg.stream;
		dc.all_jumps = ecfg.all_jumps;
		dc.mode = ecfg.mode;
		cache_cmp_run(&c[0], &dc, p->img, buf, len, false, 0);
		cache_cmp_run(&c[1], &dc, p->img, buf, len, true, 4096);
		/* the runs of every state, each seen by the events */
		for (i = 0; i < c[0].off.n; i++)
			for (j = 0; j < npasses; j++)
				if (c[0].off.ev[i].kind == NT_EV_INSNS &&
				    c[0].off.ev[i].context == passes[j].ctx &&
				    c[0].off.ev[i].priv == passes[j].priv)
					seen |= 1u << j;
		tap_ok(c[0].same && c[1].same && seen == 7 &&
		       c[0].st_on.cached_msgs > 0,
		       "%s %s: three states in a row, the run cache changes "
		       "none of %zu events (it took %" PRIu64 " of %" PRIu64
		       " messages)", p->name, option_sets[k].name, c[0].off.n,
		       c[0].st_on.cached_msgs, c[0].st_on.msgs);
		cache_cmp_free(&c[0]);
		cache_cmp_free(&c[1]);
		if (!k)
			run_cache_new_image(p, &dc, buf, len);
		free(buf);
	}
	free(thrice.recs);
}

/*
 * What a funnel makes of two encoders' traces: their messages (up to
 * an MSEO=11 byte) interleaved in stretches of 1 to 64, so that the
 * two run out of step even when they trace the same program.
 */
static uint8_t *funnel(const uint8_t *a, size_t alen, const uint8_t *b,
		       size_t blen, uint64_t *st, size_t *len)
{
	const uint8_t *in[2] = { a, b };
	size_t end[2] = { alen, blen }, at[2] = { 0, 0 };
	uint8_t *out = malloc(alen + blen);
	unsigned int k = 0;

	*len = 0;
	while (out && (at[0] < end[0] || at[1] < end[1])) {
		unsigned int log2 = (unsigned int)(xorshift64(st) % 7);
		unsigned int stretch = 1 + (unsigned int)(xorshift64(st) %
							  (1u << log2));

		if (at[k] == end[k])
			k ^= 1;
		while (stretch-- && at[k] < end[k]) {
			do
				out[(*len)++] = in[k][at[k]];
			while ((in[k][at[k]++] & 3) != 3 && at[k] < end[k]);
		}
		k ^= 1;
	}
	return out;
}

/*
 * The SRC of the two sources of a funnel test's k-th option set: 2 bits
 * wide, or the widest (12 bits, ids that differ only in SRC's second
 * byte), in turn; ids to ids[0] and ids[1], the width returned.
 */
static unsigned int funnel_ids(size_t k, uint16_t ids[2])
{
	ids[0] = k % 2 ? 0x8c1 : 1;
	ids[1] = k % 2 ? 0x3c1 : 2;
	return k % 2 ? NT_MAX_SRC_BITS : 2;
}

/* The settings of two encoders with option set os, SRC bits wide. */
static void funnel_cfgs(const struct option_set *os, unsigned int bits,
			const uint16_t ids[2], struct nt_encoder_cfg cfg[2])
{
	unsigned int j;

	for (j = 0; j < 2; j++) {
		nt_encoder_cfg_default(&cfg[j]);
		os->apply(&cfg[j]);
		cfg[j].stream.src_bits = (uint8_t)bits;
		cfg[j].src_id = ids[j];
	}
}

/*
 * p traced by two encoders with option set os, SRC bits wide, ids[0]
 * and ids[1], through a funnel: the trace (*flen bytes, the caller's
 * to free) and the first encoder's settings in ecfg; NULL if encoding
 * failed.
 */
static uint8_t *funnel_two(struct prog *p, const struct option_set *os,
			   unsigned int bits, const uint16_t ids[2],
			   uint64_t *state, struct nt_encoder_cfg *ecfg,
			   size_t *flen)
{
	struct nt_encoder_cfg cfg[2];
	uint8_t *buf[2], *mixed = NULL;
	size_t len[2];
	unsigned int j;

	funnel_cfgs(os, bits, ids, cfg);
	for (j = 0; j < 2; j++)
		buf[j] = prog_encode(p, &cfg[j], &len[j]);
	if (buf[0] && buf[1])
		mixed = funnel(buf[0], len[0], buf[1], len[1], state, flen);
	*ecfg = cfg[0];
	free(buf[0]);
	free(buf[1]);
	return mixed;
}

/*
 * mixed (flen bytes) into bad as it is, or with damage at a place
 * drawn from *state: its length.
 */
static size_t trial_trace(const uint8_t *mixed, size_t flen, uint8_t *bad,
			  bool damaged, uint64_t *state)
{
	/* a draw a statement: the same on every compiler */
	int kind;
	size_t at;
	long shift;

	if (!damaged) {
		memcpy(bad, mixed, flen);
		return flen;
	}
	kind = (int)(xorshift64(state) % 3);
	at = 8 + xorshift64(state) % (flen - 16);
	return damage(mixed, flen, bad, kind, at, &shift, state);
}

/*
 * Two sources of a multi-hart system through a funnel: p traced by two
 * encoders, SRC 2 bits wide or the widest (12 bits, ids that differ
 * only in SRC's second byte), their messages interleaved, clean and
 * damaged, fed whole and in pieces, every source or one: the run cache
 * changes no event and no statistic, and takes BTM's messages.
 */
static void run_cache_sources(struct prog *p)
{
	/* the last with TSTAMP: run_take()'s timed copy turns too */
	static const unsigned int sets[] = { 0, 2, 4, 5, 8 };
	uint64_t state = 0x2545f4914f6cdd1dull;
	size_t k;

	for (k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
		const struct option_set *os = &option_sets[sets[k]];
		uint16_t ids[2];
		unsigned int bits = funnel_ids(k, ids);
		unsigned int trial, differ = 0, trials = 8;
		uint64_t msgs = 0, cached = 0, by_src[2] = { 0, 0 };
		struct nt_encoder_cfg ecfg;
		size_t flen, events = 0, i;
		uint8_t *mixed, *bad = NULL;

		mixed = funnel_two(p, os, bits, ids, &state, &ecfg, &flen);
		if (mixed)
			bad = malloc(flen + 16);
		for (trial = 0; bad && trial < trials; trial++) {
			struct nt_decoder_cfg dc;
			struct cache_cmp c;
			size_t blen, chunk;

			nt_decoder_cfg_default(&dc);
			dc.stream = ecfg.stream;
			dc.all_jumps = ecfg.all_jumps;
			dc.mode = ecfg.mode;
			dc.ir_depth = trial % 3 == 2 ? 2 : 0;
			dc.src = trial % 4 == 3 ? ids[1] : -1;
			/*
			 * a flipped bit can make an I-CNT of a billion, which
			 * the decoder walks (a deviation): keep the log short
			 */
			dc.max_icnt = 1u << 20;
			dc.max_repeat = 1u << 20;
			blen = trial_trace(mixed, flen, bad, trial >= 2, &state);
			chunk = trial % 2 ? 1 + xorshift64(&state) % 4096 : 0;
			cache_cmp_run(&c, &dc, p->img, bad, blen, trial % 4 == 1,
				      chunk);
			if (!c.same && !differ++)
				tap_diag("%s: trial %u: %zu and %zu events, first "
					 "difference #%zu", os->name, trial,
					 c.off.n, c.on.n, c.first);
			for (i = 0; trial == 0 && i < c.on.n; i++)
				by_src[c.on.ev[i].src == ids[1]]++;
			events += c.off.n;
			msgs += c.st_on.msgs;
			cached += c.st_on.cached_msgs;
			cache_cmp_free(&c);
		}
		/* BTM's messages fit a run even with 12 bits of SRC */
		tap_ok(bad && !differ && by_src[0] && by_src[1] &&
		       (ecfg.mode != NT_MODE_BTM || cached > 0),
		       "%s %s, two sources through a funnel (SRC %u bits): "
		       "the run cache changes none of %zu events in %u traces "
		       "(%u differ; it took %" PRIu64 " of %" PRIu64
		       " messages)", p->name, os->name, bits, events, trials,
		       differ, cached, msgs);
		free(bad);
		free(mixed);
	}
}

/* Event i of a log, for a sort by source that keeps each one's order. */
struct src_at {
	uint16_t src;
	size_t i;
};

static int src_at_cmp(const void *a, const void *b)
{
	const struct src_at *x = a, *y = b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static struct src_at *by_src(const struct evlog *l)
{
	struct src_at *s = malloc((l->n + 1) * sizeof(*s));
	size_t i;

	if (!s)
		abort();
	for (i = 0; i < l->n; i++) {
		s[i].src = l->ev[i].src;
		s[i].i = i;
	}
	qsort(s, l->n, sizeof(*s), src_at_cmp);
	return s;
}

/* buf decoded in stream order and by source, compared source by source */
struct src_cmp {
	struct evlog log[2];		/* stream order, by source */
	struct nt_decoder_stats st[2];
	struct src_at *s[2];		/* each log sorted by source */
	size_t first;			/* the first that differs, sorted */
	bool same;
};

/*
 * Decode buf with dc in stream order, singly, and by source, singly or
 * in batches, both chunk bytes a feed (0: at once), and compare each
 * source's events and the statistics, the time they give between feeds
 * too; c's logs are the caller's to free (src_cmp_free()).
 */
static void src_cmp_run(struct src_cmp *c, const struct nt_decoder_cfg *dc,
			const struct nt_image *img, const uint8_t *buf,
			size_t len, bool batch, size_t chunk)
{
	struct nt_decoder_cfg cfg = *dc;
	size_t i;

	memset(c, 0, sizeof(*c));
	cfg.by_source = false;
	log_decode(&cfg, cfg.run_cache, false, img, buf, len, chunk,
		   &c->log[0], &c->st[0]);
	cfg.by_source = true;
	log_decode(&cfg, cfg.run_cache, batch, img, buf, len, chunk,
		   &c->log[1], &c->st[1]);
	c->s[0] = by_src(&c->log[0]);
	c->s[1] = by_src(&c->log[1]);
	c->same = c->log[0].n == c->log[1].n &&
		  same_stats(&c->st[0], &c->st[1]) &&
		  same_trail(&c->log[0].times, &c->log[1].times);
	for (i = 0; c->same && i < c->log[0].n; i++)
		if (c->s[0][i].src != c->s[1][i].src ||
		    !same_event(&c->log[0].ev[c->s[0][i].i],
				&c->log[1].ev[c->s[1][i].i]))
			break;
	c->first = i;
	c->same = c->same && i == c->log[0].n;
}

static void src_cmp_free(struct src_cmp *c)
{
	free(c->s[0]);
	free(c->s[1]);
	evlog_free(&c->log[0]);
	evlog_free(&c->log[1]);
}

/*
 * cfg.by_source against stream order, on two sources through a funnel
 * (SRC 2 bits and 12), clean and damaged, fed whole and in pieces (of a
 * size, and ending where messages do), singly and in batches: each
 * source's events, field for field and in order, and the statistics,
 * the same. A clean trace fed at once comes out one source after the
 * other.
 */
static void by_source_same(struct prog *p)
{
	static const unsigned int sets[] = { 0, 2, 5, 7, 8 };
	const size_t nsets = sizeof(sets) / sizeof(sets[0]);
	uint64_t state = 0x6a09e667f3bcc909ull;
	size_t k;

	for (k = 0; k < nsets + N_TS_SETS; k++) {
		const struct option_set *os = k < nsets ?
					      &option_sets[sets[k]] :
					      &ts_sets[k - nsets];
		uint16_t ids[2];
		unsigned int bits = funnel_ids(k, ids);
		unsigned int trial, differ = 0, trials = 12;
		size_t flen, events = 0, gaps = 0, i;
		bool grouped = false;
		struct nt_encoder_cfg ecfg;
		uint8_t *mixed, *bad = NULL;

		mixed = funnel_two(p, os, bits, ids, &state, &ecfg, &flen);
		if (mixed)
			bad = malloc(flen + 16);
		for (trial = 0; bad && trial < trials; trial++) {
			struct nt_decoder_cfg dc;
			struct src_cmp c;
			const struct evlog *l = &c.log[1];
			size_t blen, chunk;

			nt_decoder_cfg_default(&dc);
			dc.stream = ecfg.stream;
			dc.all_jumps = ecfg.all_jumps;
			dc.mode = ecfg.mode;
			dc.ir_depth = trial % 3 == 2 ? 2 : 0;
			dc.max_icnt = 1u << 20;
			dc.max_repeat = 1u << 20;
			dc.run_cache = trial % 5 != 4;
			blen = trial_trace(mixed, flen, bad,
					   trial >= 2 && trial != 10, &state);
			chunk = trial % 2 ? 1 + xorshift64(&state) % 4096 : 0;
			if (trial >= 10)
				chunk = FEED_AT_ENDS;
			src_cmp_run(&c, &dc, p->img, bad, blen, trial % 4 == 1,
				    chunk);
			if (!c.same && !differ++)
				tap_diag("%s: trial %u: %zu and %zu events, "
					 "%" PRIu64 " and %" PRIu64 " gaps, "
					 "first difference by source #%zu",
					 os->name, trial, c.log[0].n, l->n,
					 c.st[0].gaps, c.st[1].gaps, c.first);
			/* at once, clean: source 1's events, then source 2's */
			if (trial == 0) {
				for (i = 1; i < l->n; i++)
					if (l->ev[i].src < l->ev[i - 1].src)
						break;
				grouped = l->n && i == l->n &&
					  l->ev[0].src != l->ev[i - 1].src;
			}
			events += c.log[0].n;
			gaps += c.st[0].gaps;
			src_cmp_free(&c);
		}
		tap_ok(bad && !differ && grouped,
		       "%s %s, two sources through a funnel (SRC %u bits): "
		       "decoded by source, each source's events are those of "
		       "stream order (%zu events, %zu gaps in %u traces; "
		       "%u differ)", p->name, os->name, bits, events, gaps,
		       trials, differ);
		free(bad);
		free(mixed);
	}
}

/*
 * More sources than a by-source decoder makes decoders for: twenty
 * through one funnel (SRC 5 bits), the last five sharing one decoder
 * in stream order, clean and damaged, whole and in pieces, each
 * source's events as in stream order.
 */
static void by_source_many(struct prog *p)
{
	uint64_t state = 0xbb67ae8584caa73bull;
	struct nt_encoder_cfg ecfg;
	uint8_t *mixed = NULL, *bad = NULL;
	size_t flen = 0, events = 0, i;
	unsigned int j, trial, differ = 0, srcs = 0;

	for (j = 0; j < 20; j++) {
		uint8_t *one, *both;
		size_t len, blen;

		nt_encoder_cfg_default(&ecfg);
		os_btm(&ecfg);
		ecfg.stream.src_bits = 5;
		ecfg.src_id = (uint16_t)(j * 7 % 32);
		one = prog_encode(p, &ecfg, &len);
		if (!one)
			break;
		both = mixed ? funnel(mixed, flen, one, len, &state, &blen) :
			       one;
		if (both != one)
			free(one);
		free(mixed);
		mixed = both;
		flen = mixed ? (both == one ? len : blen) : 0;
		if (!mixed)
			break;
	}
	/*
	 * five times over, each copy starting with every source's sync:
	 * more than the 1 MiB a by-source decoder splits at a time, fed
	 * at once
	 */
	if (mixed && j == 20) {
		uint8_t *five = malloc(5 * flen);

		for (i = 0; five && i < 5; i++)
			memcpy(five + i * flen, mixed, flen);
		free(mixed);
		mixed = five;
		flen *= 5;
		bad = malloc(flen + 16);
	}
	for (trial = 0; bad && trial < 4; trial++) {
		struct nt_decoder_cfg dc;
		struct src_cmp c;
		size_t blen = flen;
		long shift;

		nt_decoder_cfg_default(&dc);
		dc.stream = ecfg.stream;
		dc.mode = ecfg.mode;
		if (trial >= 2)
			blen = damage(mixed, flen, bad, (int)trial % 3,
				      8 + xorshift64(&state) % (flen - 16),
				      &shift, &state);
		else
			memcpy(bad, mixed, flen);
		src_cmp_run(&c, &dc, p->img, bad, blen, trial & 1,
			    trial & 1 ? 3000 : 0);
		for (i = 1; trial == 0 && i < c.log[0].n; i++)
			srcs += c.s[0][i].src != c.s[0][i - 1].src;
		differ += !c.same;
		events += c.log[0].n;
		src_cmp_free(&c);
	}
	tap_ok(bad && !differ && srcs + 1 >= 20 && flen > (1u << 20),
	       "%s: twenty sources through a funnel, decoded by source: each "
	       "source's events are those of stream order (%zu bytes, %zu "
	       "events, %u sources, %u of 4 traces differ)", p->name, flen,
	       events, srcs + 1, differ);
	free(bad);
	free(mixed);
}

static bool is_trap(const struct nt_record *r)
{
	return r->itype == NT_ITYPE_EXCEPTION || r->itype == NT_ITYPE_INTERRUPT;
}

/*
 * p's records cut into stretches of 1 to nrecs/8 + 1 records, each
 * traced by the other of encoders e[0] and e[1] from a sync (trace
 * enabled) to a ProgTraceCorrelation (trace disabled), the stretches
 * one after the other, as a funnel passes them when one task moves
 * between two harts. A stretch ends between two instructions, never at
 * a trap (a hart is left from the scheduler's interrupt, which the
 * trace of the task's privilege level does not see). The trace is the
 * caller's to free, with truth, the PCs the task ran (*ntruth); NULL
 * if out of memory.
 */
static uint8_t *turns_trace(const struct prog *p, struct nt_encoder *e[2],
			    uint64_t *state, size_t *len, uint64_t **truth,
			    size_t *ntruth, unsigned int *stretches)
{
	uint8_t *buf = NULL;
	size_t cap = 0, i = 0;

	*len = 0;
	*ntruth = 0;
	*stretches = 0;
	*truth = malloc(p->nrecs * sizeof(**truth));
	while (*truth && i < p->nrecs) {
		struct nt_encoder *enc = e[*stretches % 2];
		size_t end = i + 1 + xorshift64(state) % (p->nrecs / 8 + 1);
		const uint8_t *out;
		size_t n;

		if (end > p->nrecs)
			end = p->nrecs;
		while (end < p->nrecs &&
		       (is_trap(&p->recs[end - 1]) || is_trap(&p->recs[end])))
			end++;
		nt_encoder_start(enc, NT_SYNC_TRACE_ENABLE);
		for (; i < end; i++) {
			nt_encoder_retire(enc, &p->recs[i]);
			/* an interrupt's record is no instruction of its own */
			if (p->recs[i].itype != NT_ITYPE_INTERRUPT)
				(*truth)[(*ntruth)++] = p->recs[i].addr;
		}
		nt_encoder_stop(enc, NT_EVCODE_TRACE_DISABLED,
				p->recs[end - 1].tstamp);
		out = nt_encoder_output(enc, &n);
		if (*len + n > cap) {
			cap = 2 * (*len + n);
			buf = realloc(buf, cap);
			if (!buf)
				abort();
		}
		memcpy(buf + *len, out, n);
		*len += n;
		nt_encoder_consume(enc, n);
		(*stretches)++;
	}
	return buf;
}

/*
 * One task that the scheduler moves between two harts whose encoders
 * share a funnel: the usual `perf record -e ntrace//u -- ./app` on a
 * board with two harts. Decoded in stream order, with the run cache
 * and without, fed at once and in pieces, the trace gives exactly the
 * PCs the task ran; decoded by source, each hart's events are those of
 * stream order. As for one encoder, the exit ecall may be missing at
 * the very end (same_pcs()).
 */
static void harts_in_turns(struct prog *p)
{
	static const unsigned int sets[] = { 0, 1, 2, 5, 8 };
	uint64_t state = 0x3c6ef372fe94f82bull;
	size_t k;

	for (k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
		const struct option_set *os = &option_sets[sets[k]];
		uint16_t ids[2];
		unsigned int bits = funnel_ids(k, ids);
		struct nt_encoder_cfg ecfg[2];
		struct nt_encoder *e[2] = { NULL, NULL };
		unsigned int j, stretches = 0, bad = 0;
		uint64_t *truth = NULL;
		size_t len = 0, ntruth = 0, syncs = 0;
		uint8_t *buf = NULL;

		funnel_cfgs(os, bits, ids, ecfg);
		for (j = 0; j < 2; j++)
			e[j] = nt_encoder_new(&ecfg[j], NULL);
		if (e[0] && e[1])
			buf = turns_trace(p, e, &state, &len, &truth, &ntruth,
					  &stretches);
		for (j = 0; buf && j < 3; j++) {
			struct nt_decoder_cfg dc;
			struct nt_decoder *d;
			struct collect c;
			struct src_cmp sc;
			size_t diff;

			decoder_cfg_for(&ecfg[0], &dc);
			dc.run_cache = j != 1;
			memset(&c, 0, sizeof(c));
			d = nt_decoder_new(&dc, on_event, &c, NULL);
			if (!d)
				abort();
			nt_decoder_add_image(d, p->img, true, 0);
			feed_all(d, buf, len, j ? 1 + xorshift64(&state) % 4096 : 0,
				 &c.st, NULL);
			if (c.gaps || c.nsyncs < stretches ||
			    !same_pcs(p, truth, ntruth, &c, &diff)) {
				if (!bad++)
					tap_diag("%s: decode %u: %zu of %zu PCs, "
						 "first difference #%zu, %zu "
						 "gaps, %zu syncs for %u "
						 "stretches", os->name, j, c.n,
						 ntruth, diff, c.gaps, c.nsyncs,
						 stretches);
			}
			syncs += c.nsyncs;
			collect_free(&c);
			src_cmp_run(&sc, &dc, p->img, buf, len, j == 2,
				    j ? FEED_AT_ENDS : 0);
			if (!sc.same && !bad++)
				tap_diag("%s: decode %u by source: first "
					 "difference #%zu", os->name, j,
					 sc.first);
			src_cmp_free(&sc);
		}
		tap_ok(buf && !bad && stretches > 2,
		       "%s %s, one task moving between two harts through a "
		       "funnel (SRC %u bits, %u stretches): the PCs it ran, "
		       "exactly, and by source as in stream order (%zu "
		       "syncs in 3 decodes)", p->name, os->name, bits,
		       stretches, syncs);
		free(truth);
		free(buf);
		nt_encoder_free(e[0]);
		nt_encoder_free(e[1]);
	}
}

/*
 * The PC list through the writers' batch entry, nt_out_events(), from
 * a decoder made for batches with its run cache: the same text as one
 * event at a time from the general path.
 */
static void batch_writer_same(struct prog *p)
{
	struct nt_out_cfg ocfg = { .format = NT_OUT_PCS };
	struct nt_decoder_stats st[2];
	struct nt_encoder_cfg ecfg;
	struct nt_decoder_cfg dc;
	char *text[2] = { NULL, NULL };
	size_t tlen[2] = { 0, 0 }, len;
	const char *err = NULL;
	uint8_t *buf;
	int k;

	nt_encoder_cfg_default(&ecfg);
	buf = prog_encode(p, &ecfg, &len);
	for (k = 0; buf && k < 2; k++) {
		FILE *f = open_memstream(&text[k], &tlen[k]);
		struct nt_out *o = nt_out_new(&ocfg, f);
		struct nt_decoder *d;

		nt_decoder_cfg_default(&dc);
		dc.stream = ecfg.stream;
		dc.run_cache = k;
		d = k ? nt_decoder_new_batch(&dc, nt_out_events, o, &err) :
			nt_decoder_new(&dc, nt_out_event, o, &err);
		if (!o || !d)
			abort();
		nt_decoder_add_image(d, p->img, true, 0);
		feed_all(d, buf, len, 4096, &st[k], NULL);
		nt_out_finish(o);
		nt_out_free(o);
		fclose(f);
	}
	tap_ok(buf && tlen[0] && tlen[0] == tlen[1] &&
	       !memcmp(text[0], text[1], tlen[0]) && st[1].cached_msgs,
	       "%s: the PC list in batches (nt_out_events) is the same %zu "
	       "bytes", p->name, tlen[0]);
	free(text[0]);
	free(text[1]);
	free(buf);
}

/* ---- damage that decodes without a word ------------------------------ */

/*
 * What a fuzzing campaign did to valid traces: one bit flipped or one
 * byte dropped, at fixed pseudo-random places of every program's trace
 * under every option set, each mutant decoded in full. One that decodes
 * without a gap to other PCs than the clean trace is silently wrong:
 * the decoder had nothing to tell the damage by. Its own random numbers
 * leave damage_tests()' inputs as they were.
 */
#define CENSUS_FLIPS	24
#define CENSUS_DROPS	12
/*
 * silently wrong mutants of the default programs, measured: 26 before
 * rsort, vvadd, median and quicksort joined, 35 after, 37 since repeated
 * history packs loops into fewer bits (a flipped HREPEAT or pattern bit
 * can still walk the program)
 */
#define CENSUS_SILENT_MAX	37
#define CENSUS_SHOWN	32

struct census {
	unsigned int mutants, silent, same;
	char shown[CENSUS_SHOWN][160];
};

static void census_prog(const struct prog *p, struct census *cs)
{
	static uint64_t state = 0x9e3779b97f4a7c15ull;
	size_t k;

	for (k = 0; k < N_OPTION_SETS; k++) {
		struct nt_encoder_cfg cfg;
		struct collect clean;
		uint8_t *buf, *bad;
		size_t len;
		unsigned int i;

		nt_encoder_cfg_default(&cfg);
		option_sets[k].apply(&cfg);
		buf = prog_encode(p, &cfg, &len);
		bad = malloc(len + 1);
		if (!buf || !bad)
			abort();
		decode(&cfg, p->img, buf, len, 0, &clean);
		/* a trace that does not decode cleanly has no truth to miss */
		for (i = 0; !clean.gaps && i < CENSUS_FLIPS + CENSUS_DROPS; i++) {
			size_t off = xorshift64(&state) % len, blen = len;
			unsigned int bit = (unsigned int)(xorshift64(&state) % 8);
			bool drop = i >= CENSUS_FLIPS;
			struct collect c;

			memcpy(bad, buf, len);
			if (drop) {
				memmove(bad + off, bad + off + 1, len - off - 1);
				blen--;
			} else {
				bad[off] ^= (uint8_t)(1u << bit);
			}
			memset(&c, 0, sizeof(c));
			c.truth = clean.pcs;
			c.ntruth = clean.n;
			run_decoder(&cfg, p->img, bad, blen, 0, on_event, &c,
				    &c.st);
			cs->mutants++;
			if (c.gaps) {
				collect_free(&c);
				continue;
			}
			if (c.n == clean.n && !c.differs) {
				cs->same++;
			} else if (cs->silent++ < CENSUS_SHOWN) {
				char *t = cs->shown[cs->silent - 1];

				if (drop)
					snprintf(t, sizeof(cs->shown[0]),
						 "%s %s: byte %zu dropped",
						 p->name, option_sets[k].name,
						 off);
				else
					snprintf(t, sizeof(cs->shown[0]),
						 "%s %s: bit %u of byte %zu",
						 p->name, option_sets[k].name,
						 bit, off);
			}
			collect_free(&c);
		}
		collect_free(&clean);
		free(bad);
		free(buf);
	}
}

static void census_report(const struct census *cs, bool all_programs)
{
	unsigned int i;

	if (tap_ok(!all_programs || cs->silent <= CENSUS_SILENT_MAX,
		   "single bit flips and dropped bytes: %u mutants, %u decode "
		   "as the clean trace, %u silently wrong (at most %u)",
		   cs->mutants, cs->same, cs->silent, CENSUS_SILENT_MAX))
		return;
	for (i = 0; i < cs->silent && i < CENSUS_SHOWN; i++)
		tap_diag("silently wrong: %s", cs->shown[i]);
}

/* ---- the spec's worked examples ------------------------------------- */

static uint32_t btype(uint32_t funct3, uint32_t rs1, uint32_t rs2, int32_t off)
{
	uint32_t o = (uint32_t)off;

	return ((o >> 12) & 1) << 31 | ((o >> 5) & 0x3f) << 25 | rs2 << 20 |
	       rs1 << 15 | funct3 << 12 | ((o >> 1) & 0xf) << 8 |
	       ((o >> 11) & 1) << 7 | 0x63;
}

static void put16(uint8_t *m, uint64_t a, uint16_t v)
{
	memcpy(m + a, &v, 2);
}

static void put32(uint8_t *m, uint64_t a, uint32_t v)
{
	memcpy(m + a, &v, 4);
}

static size_t msg(const struct nt_stream_cfg *cfg, uint8_t *buf, size_t len,
		  struct nt_msg m)
{
	int n = nt_write_msg(cfg, &m, buf + len, 64);

	return len + (n > 0 ? (size_t)n : 0);
}

/* Decoding settings for hand-built streams in cfg's layout. */
static void hand_built_cfg(struct nt_encoder_cfg *ecfg,
			   const struct nt_stream_cfg *cfg)
{
	nt_encoder_cfg_default(ecfg);
	ecfg->stream = *cfg;
	ecfg->mode = 0;	/* the decoder accepts BTM and HTM */
}

static void spec_examples(void)
{
	/* section 7.3 code: c.add, beq 0x200, add, beq 0x300, c.add, add,
	 * c.ebreak; 0x200: c.add, c.ebreak; 0x300: add, c.ebreak */
	static uint8_t mem[0x400];
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_encoder_cfg ecfg;
	struct nt_image *img = nt_image_new();
	const char *err = NULL;
	struct collect c;
	uint8_t buf[256];
	size_t len;

	put16(mem, 0x100, 0x952e);			/* c.add a0, a1 */
	put32(mem, 0x102, btype(0, 10, 11, 0xfe));	/* beq a0, a1, 0x200 */
	put32(mem, 0x106, 0x00b50533);			/* add a0, a0, a1 */
	put32(mem, 0x10a, btype(1, 10, 11, 0x1f6));	/* bne a0, a1, 0x300 */
	put16(mem, 0x10e, 0x952e);
	put32(mem, 0x110, 0x00b50533);
	put16(mem, 0x114, 0x9002);			/* c.ebreak */
	put16(mem, 0x200, 0x952e);
	put16(mem, 0x202, 0x9002);
	put32(mem, 0x300, 0x00b50533);
	put16(mem, 0x304, 0x9002);
	nt_image_add_mem(img, mem, sizeof(mem), 0, &err);
	hand_built_cfg(&ecfg, &cfg);

	/* BTM run 1: DirectBranch I-CNT=3, correlation I-CNT=1 */
	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 3,
		.addr_field = 0x80 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 3 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 1 });
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(c.n == 3 && c.pcs[0] == 0x100 && c.pcs[1] == 0x102 &&
	       c.pcs[2] == 0x200 && !c.gaps,
	       "spec 7.3 BTM run 1 decodes to 0x100 0x102 0x200");
	collect_free(&c);

	/* HTM run 2: I-CNT=9, HIST=0x5 */
	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 3,
		.addr_field = 0x80 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .cdf = 1, .icnt = 9,
		.hist = 0x5 });
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(c.n == 5 && c.pcs[3] == 0x10a && c.pcs[4] == 0x300 && !c.gaps,
	       "spec 7.3 HTM run 2 (I-CNT 9, HIST 0x5) ends at 0x300");
	collect_free(&c);

	/* HTM run 3: I-CNT=10, HIST=0x4 */
	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 3,
		.addr_field = 0x80 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .cdf = 1, .icnt = 10,
		.hist = 0x4 });
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(c.n == 6 && c.pcs[5] == 0x110 && !c.gaps,
	       "spec 7.3 HTM run 3 (I-CNT 10, HIST 0x4) ends at 0x110");
	collect_free(&c);

	/* a correlation with CDF=0 in HTM (lenient peers) */
	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 3,
		.addr_field = 0x80 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .cdf = 0, .icnt = 1 });
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(c.n == 1 && !c.gaps, "CDF=0 correlation accepted");
	collect_free(&c);

	/* I-CNT 4 or 6 would end inside a 32-bit instruction: reported */
	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 3,
		.addr_field = 0x80 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 4 });
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(c.gaps == 1 && c.first_gap_offset == 4,
	       "I-CNT=4 (inside an instruction) reported at byte 4");
	collect_free(&c);

	/* a stream that starts in the middle: skip to the first sync */
	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 3 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 2,
		.addr_field = 0x100 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 1 });
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(c.n == 1 && c.pcs[0] == 0x200 && !c.gaps,
	       "trace starting mid-stream: decoding begins at the first sync");
	collect_free(&c);

	/* In-Circuit Trace and DataAcquisition carry no flow: skipped */
	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 3,
		.addr_field = 0x80 });
	/* as bytes: the test must not depend on the writer knowing them */
	memcpy(buf + len, "\x88\x44\x95\x0f\x1c\x09\xd0\x20\x07", 9);
	len += 9;
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 3 });
	memcpy(buf + len, "\x88\x20\x0b", 3);
	len += 3;
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 1 });
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(c.n == 3 && c.pcs[2] == 0x200 && !c.gaps,
	       "In-Circuit Trace and DataAcquisition messages are skipped");
	collect_free(&c);

	/* I-CNT wider than 22 bits is accepted (here: nothing to walk) */
	{
		struct nt_decoder_stats st;
		struct nt_decoder_cfg dc;
		struct nt_decoder *d;

		len = msg(&cfg, buf, 0, (struct nt_msg){
			.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 3,
			.addr_field = 0x80, .icnt = 1ull << 30 });
		nt_decoder_cfg_default(&dc);
		d = nt_decoder_new(&dc, on_event, &c, &err);
		memset(&c, 0, sizeof(c));
		nt_decoder_add_image(d, img, true, 0);
		nt_decoder_feed(d, buf, len);
		nt_decoder_finish(d);
		st = *nt_decoder_stats(d);
		tap_ok(st.syncs == 1 && !st.errors,
		       "sync with a 31-bit I-CNT accepted");
		nt_decoder_free(d);
		collect_free(&c);
	}
	nt_image_free(img);
}

/* ---- what real encoders send beyond the ratified spec ---------------- */

/*
 * The stream an encoder with an I-CNT counter wider than the spec's
 * sends: no ResourceFull RCODE 0; their counts go into the next message
 * with an I-CNT, and their timestamps into the next relative one.
 */
static size_t fold_icnt_full(const struct nt_stream_cfg *cfg,
			     const uint8_t *in, size_t len, uint8_t *out,
			     size_t cap)
{
	struct nt_reader *r = nt_reader_new(cfg);
	uint64_t icnt = 0, dt = 0;
	struct nt_msg m;
	size_t n = 0;

	nt_reader_feed(r, in, len);
	nt_reader_finish(r);
	while (nt_reader_next(r, &m)) {
		int w;

		if (m.tcode == NT_TCODE_RESOURCE_FULL &&
		    m.rcode == NT_RCODE_ICNT) {
			icnt += m.rdata[0];
			dt += (m.fields & NT_F_TSTAMP) ? m.tstamp : 0;
			continue;
		}
		if (m.fields & NT_F_ICNT) {
			m.icnt += icnt;
			icnt = 0;
		}
		if (m.fields & NT_F_TSTAMP) {
			if (!nt_tcode_is_sync(m.tcode))
				m.tstamp += dt;
			dt = 0;
		}
		w = nt_write_msg(cfg, &m, out + n, cap - n);
		if (m.err || w <= 0)
			abort();
		n += (size_t)w;
	}
	nt_reader_free(r);
	return n;
}

/* Long enough that its I-CNT needs more than 22 bits. */
#define LOOP_TIMES	((1u << 21) + 1000)

struct word {
	uint64_t at;
	uint32_t insn;
};

/* An image of size bytes at base, zero but for the n words w. */
static struct nt_image *words_image(uint64_t base, size_t size,
				   const struct word *w, size_t n)
{
	struct nt_image *img = nt_image_new();
	uint8_t *mem = calloc(1, size);
	const char *err = NULL;
	size_t i;

	if (!img || !mem)
		abort();
	for (i = 0; i < n; i++)
		put32(mem, w[i].at - base, w[i].insn);
	if (nt_image_add_mem(img, mem, size, base, &err))
		abort();
	free(mem);
	return img;
}

/*
 * 0x1000: addi a0,a0,-1; bnez a0,0x1000; ret
 * 0x2000: addi a0,a0,1;  addi a0,a0,1
 */
static struct nt_image *loop_image(void)
{
	const struct word w[] = {
		{ 0x1000, 0xfff50513 }, { 0x1004, btype(1, 10, 0, -4) },
		{ 0x1008, 0x00008067 }, { 0x2000, 0x00150513 },
		{ 0x2004, 0x00150513 },
	};

	return words_image(0x1000, 0x1010, w, sizeof(w) / sizeof(w[0]));
}

/* The loop as a reference encoder with a 32-bit I-CNT reports it. */
static void wide_icnt_hand_built(void)
{
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_image *img = loop_image();
	struct nt_encoder_cfg ecfg;
	const uint64_t taken = LOOP_TIMES - 1, full = taken / 31;
	const uint64_t hist = ((1ull << (taken % 31 + 1)) - 1) << 1;
	const uint64_t icnt = 4ull * LOOP_TIMES + 2;
	struct collect c;
	uint8_t buf[256];
	size_t len, at;
	int rf0;

	hand_built_cfg(&ecfg, &cfg);
	/* the same instructions reported in the closing message or RCODE 0 */
	for (rf0 = 0; rf0 < 2; rf0++) {
		len = msg(&cfg, buf, 0, (struct nt_msg){
			.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 5,
			.addr_field = 0x1000 >> 1 });
		len = msg(&cfg, buf, len, (struct nt_msg){
			.tcode = NT_TCODE_RESOURCE_FULL, .rcode = NT_RCODE_HIST,
			.rdata = { 0xffffffff } });
		len = msg(&cfg, buf, len, (struct nt_msg){
			.tcode = NT_TCODE_RESOURCE_FULL,
			.rcode = NT_RCODE_HIST_REPEAT, .nrdata = 2,
			.rdata = { 0xffffffff, full - 1 } });
		at = len;
		if (rf0)
			len = msg(&cfg, buf, len, (struct nt_msg){
				.tcode = NT_TCODE_RESOURCE_FULL,
				.rcode = NT_RCODE_ICNT, .rdata = { icnt - 2 } });
		len = msg(&cfg, buf, len, (struct nt_msg){
			.tcode = NT_TCODE_INDIRECT_BRANCH_HIST,
			.icnt = rf0 ? 2 : icnt, .hist = hist,
			.addr_field = (0x1000 ^ 0x2000) >> 1 });
		len = msg(&cfg, buf, len, (struct nt_msg){
			.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 2 });
		decode(&ecfg, img, buf, len, 0, &c);
		tap_ok(!c.gaps && c.n == 2 * LOOP_TIMES + 2 &&
		       c.pcs[c.n - 3] == 0x1004 && c.pcs[c.n - 2] == 0x1008 &&
		       c.pcs[c.n - 1] == 0x2000,
		       "%s of %" PRIu64 " half-words after %" PRIu64
		       " HIST-only ResourceFull: all %zu instructions",
		       rf0 ? "RCODE 0" : "I-CNT", icnt - 2 * rf0, full, c.n);
		tap_ok(c.st.deviations[NT_DEV_WIDE_ICNT] == 1 &&
		       c.st.deviation_at[NT_DEV_WIDE_ICNT] == at,
		       "counted once as an I-CNT wider than 22 bits, at byte %zu",
		       at);
		collect_free(&c);
	}
	nt_image_free(img);
}

/*
 * The same loop through the encoder model, with the ResourceFull RCODE 0
 * it sends folded into the next I-CNT: every PC must come back.
 */
static void wide_icnt_encoded(void)
{
	struct nt_image *img = loop_image();
	struct nt_encoder_cfg cfg;
	struct nt_encoder *e;
	struct collect c;
	const char *err = NULL;
	const uint8_t *out;
	uint8_t *folded;
	size_t len, flen, i, bad = 0;
	uint64_t ts = 0;

	nt_encoder_cfg_default(&cfg);
	os_htm_ir3_rh(&cfg);
	cfg.stream.timestamps = true;
	e = nt_encoder_new(&cfg, &err);
	nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
	for (i = 0; i < LOOP_TIMES; i++) {
		struct nt_record r = { .addr = 0x1000, .size = 4,
				       .tstamp = ++ts };

		nt_encoder_retire(e, &r);
		r.addr = 0x1004;
		r.itype = i + 1 < LOOP_TIMES ? NT_ITYPE_BRANCH_TAKEN :
					       NT_ITYPE_BRANCH_NOT_TAKEN;
		r.tstamp = ++ts;
		nt_encoder_retire(e, &r);
	}
	nt_encoder_retire(e, &(struct nt_record){ .addr = 0x1008, .size = 4,
			  .itype = NT_ITYPE_RETURN, .tstamp = ++ts });
	nt_encoder_retire(e, &(struct nt_record){ .addr = 0x2000, .size = 4,
			  .tstamp = ++ts });
	nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, ++ts);
	out = nt_encoder_output(e, &len);
	folded = malloc(len + 64);
	flen = fold_icnt_full(&cfg.stream, out, len, folded, len + 64);
	decode(&cfg, img, folded, flen, 4096, &c);
	for (i = 0; i + 3 < c.n && i < 2 * LOOP_TIMES; i++)
		bad += c.pcs[i] != 0x1000 + 4 * (i & 1);
	tap_ok(!c.gaps && !bad && c.n == 2 * LOOP_TIMES + 2 &&
	       c.pcs[c.n - 1] == 0x2000 &&
	       c.st.deviations[NT_DEV_WIDE_ICNT] == 1,
	       "encoder model without RCODE 0 (%zu bytes, %zu before): "
	       "%zu PCs, all as executed, one wide I-CNT", flen, len, c.n);
	collect_free(&c);
	free(folded);
	nt_encoder_free(e);
	nt_image_free(img);
}

/*
 * 0x1000: beq a0,a1,0x100c; nop; nop; 0x100c: j 0x1000 - a loop whose
 * PCs show each outcome (taken skips the nops).
 */
static struct nt_image *skip_image(void)
{
	const struct word w[] = {
		{ 0x1000, btype(0, 10, 11, 12) }, { 0x1004, 0x00000013 },
		{ 0x1008, 0x00000013 }, { 0x100c, 0xff5ff06f },
	};

	return words_image(0x1000, 0x1010, w, sizeof(w) / sizeof(w[0]));
}

#define SPLIT_ITERS	700

/*
 * 0x1000: bnez a1,0x1008; addi a0,a0,1
 * 0x1008: bnez a0,0x1000
 * Both taken, a lap is two branches: three taken bits end at 0x1008 and
 * three more back at 0x1000.
 */
static struct nt_image *two_branch_image(void)
{
	const struct word w[] = {
		{ 0x1000, btype(1, 11, 0, 8) }, { 0x1004, 0x00150513 },
		{ 0x1008, btype(1, 10, 0, -8) },
	};

	return words_image(0x1000, 0x1010, w, sizeof(w) / sizeof(w[0]));
}

/* Sync at 0x1000, HIST bits hist repeated rep times, stop after icnt. */
static size_t replay_stream(const struct nt_stream_cfg *cfg, uint8_t *buf,
			    uint64_t hist, uint64_t rep, uint64_t icnt,
			    size_t *at)
{
	size_t len;

	len = msg(cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 5,
		.addr_field = 0x1000 >> 1 });
	*at = len;
	len = msg(cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_RESOURCE_FULL, .rcode = NT_RCODE_HIST_REPEAT,
		.nrdata = 2, .rdata = { hist, rep } });
	return msg(cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = icnt });
}

/* The gaps of a decode: how many, and the error and offset of the first. */
static size_t log_gaps(const struct evlog *l, const char **why, uint64_t *at)
{
	size_t i, n = 0;

	*why = "";
	*at = 0;
	for (i = 0; i < l->n; i++) {
		if (l->ev[i].kind != NT_EV_GAP)
			continue;
		if (!n++) {
			*why = l->ev[i].error ? l->ev[i].error : "";
			*at = l->ev[i].offset;
		}
	}
	return n;
}

/*
 * ResourceFull RCODE 2 over a loop. The replay limit (max_repeat)
 * counts the half-words walked, not the branches, and once the source
 * comes back to where a repetition started, the half-words of the rest
 * are known: a damaged HREPEAT fails before the second repetition
 * instead of walking billions of instructions. What comes round is
 * handed over again with the run cache and walked without it: the
 * same events.
 */
static void replay_limits(void)
{
	static const char limit[] = "repeated history beyond the replay limit";
	/* max_repeat and HREPEAT */
	static const struct {
		uint64_t max_repeat, rep;
	} laps[] = {
		{ 4000, 1000 },		/* 1000 laps of 4 half-words: fits */
		{ 3999, 1000 },		/* one half-word short */
		{ 1000, 1000 },		/* what counting branches allowed */
	};
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_image *img = loop_image(), *two = two_branch_image();
	struct nt_decoder_cfg dc;
	struct cache_cmp c;
	const char *why;
	uint8_t buf[256];
	uint64_t gap_at;
	size_t k, len, at, gaps;

	nt_decoder_cfg_default(&dc);
	dc.stream = cfg;
	dc.images_complete = true;
	for (k = 0; k < sizeof(laps) / sizeof(laps[0]); k++) {
		bool fits = k == 0;

		/* taken, taken, ...: addi, bnez back to 0x1000 */
		len = replay_stream(&cfg, buf, 0x3, laps[k].rep,
				    4 * laps[k].rep, &at);
		dc.max_repeat = laps[k].max_repeat;
		cache_cmp_run(&c, &dc, img, buf, len, false, 0);
		gaps = log_gaps(&c.on, &why, &gap_at);
		tap_ok(c.same && (fits ? !gaps && c.st_on.insns == 2 * laps[k].rep :
				  gaps == 1 && gap_at == at && !strcmp(why, limit) &&
				  c.st_on.insns == 2),
		       "HREPEAT %" PRIu64 " over a 4-half-word loop, max_repeat %"
		       PRIu64 ": %s (%" PRIu64 " instructions, %zu gaps: %s)",
		       laps[k].rep, laps[k].max_repeat,
		       fits ? "all of it" : "the limit, after the first lap",
		       c.st_on.insns, gaps, why);
		cache_cmp_free(&c);
	}

	/*
	 * Three taken bits, seven times: a round of two repetitions, two
	 * rounds handed over again and the seventh repetition walked, 21
	 * branches ending at 0x1008 after 42 half-words.
	 */
	dc.max_repeat = 0;
	len = replay_stream(&cfg, buf, 0xf, 7, 42, &at);
	cache_cmp_run(&c, &dc, two, buf, len, false, 0);
	gaps = log_gaps(&c.on, &why, &gap_at);
	{
		size_t i, n = 0;
		bool alternate = true;

		for (i = 0; i < c.on.n; i++) {
			const struct nt_event *ev = &c.on.ev[i];

			if (ev->kind != NT_EV_INSNS)
				continue;
			alternate &= ev->ninsn == 1 &&
				     ev->from == (n % 2 ? 0x1008u : 0x1000u);
			n++;
		}
		tap_ok(c.same && !gaps && n == 21 && alternate &&
		       c.st_on.insns == 21 && c.st_on.halfwords == 42,
		       "a round of two repetitions, seven of them: %zu branches, "
		       "each where the last one took it (%zu gaps: %s)", n,
		       gaps, why);
	}
	cache_cmp_free(&c);
	nt_image_free(two);
	nt_image_free(img);
}

/*
 * Repeated history cuts the history where it repeats: patterns of a few
 * bits, RCODE 1 with the bits in front of a loop, counts sent k periods
 * a copy when HREPEAT is narrow. Loops of several periods after a few
 * random outcomes and before some more, through HIST of 2 to 32 bits and
 * HREPEAT of 1 to 18: the decoder must follow every cut, PC for PC.
 */
static void history_splits(void)
{
	static const unsigned int periods[] = { 1, 2, 3, 5, 7, 12, 27, 31, 40 };
	struct nt_image *img = skip_image();
	uint64_t seed = 5, *pcs = malloc(4 * (SPLIT_ITERS + 64) * sizeof(*pcs));
	unsigned int runs = 0, bad = 0, w;
	size_t k;

	if (!pcs)
		abort();
	for (w = 2; w <= 32; w += w < 8 ? 1 : 3) {
		for (k = 0; k < sizeof(periods) / sizeof(periods[0]); k++) {
			unsigned int p = periods[k], pre = xorshift64(&seed) % 9;
			uint64_t pattern = xorshift64(&seed), ts = 0;
			struct nt_encoder_cfg cfg;
			struct nt_encoder *e;
			struct collect c;
			const uint8_t *out;
			size_t n = 0, len, i;

			nt_encoder_cfg_default(&cfg);
			cfg.repeat_history = true;
			cfg.hist_bits = (uint8_t)w;
			cfg.hrepeat_bits = (uint8_t)(1 + (7 * w + p) % 18);
			e = nt_encoder_new(&cfg, NULL);
			nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
			for (i = 0; i < pre + SPLIT_ITERS + 20; i++) {
				bool taken = i < pre || i >= pre + SPLIT_ITERS ?
					     xorshift64(&seed) & 1 :
					     (pattern >> ((i - pre) % p)) & 1;
				struct nt_record r = {
					.addr = 0x1000, .size = 4,
					.tstamp = ++ts,
					.itype = taken ? NT_ITYPE_BRANCH_TAKEN :
						 NT_ITYPE_BRANCH_NOT_TAKEN };

				nt_encoder_retire(e, &r);
				pcs[n++] = 0x1000;
				r.itype = NT_ITYPE_NONE;
				for (r.addr = 0x1004; !taken && r.addr < 0x100c;
				     r.addr += 4) {
					r.tstamp = ++ts;
					nt_encoder_retire(e, &r);
					pcs[n++] = r.addr;
				}
				r.addr = 0x100c;
				r.itype = NT_ITYPE_DIRECT_JUMP;
				r.tstamp = ++ts;
				nt_encoder_retire(e, &r);
				pcs[n++] = 0x100c;
			}
			nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, ++ts);
			out = nt_encoder_output(e, &len);
			decode(&cfg, img, out, len, 0, &c);
			if (c.gaps || c.n != n ||
			    memcmp(c.pcs, pcs, n * sizeof(*pcs))) {
				if (bad++ < 4)
					tap_diag("HIST %u bits, period %u, HREPEAT "
						 "%u bits: %zu of %zu PCs, %zu gaps",
						 w, p, cfg.hrepeat_bits, c.n, n,
						 c.gaps);
			}
			runs++;
			collect_free(&c);
			nt_encoder_free(e);
		}
	}
	tap_ok(!bad, "repeated history cut at periods: %u loops decoded PC "
	       "for PC (%u not)", runs, bad);
	free(pcs);
	nt_image_free(img);
}

/* A whole trace: it starts at addr and stops after icnt half-words. */
static size_t run_from(const struct nt_stream_cfg *cfg, uint8_t *buf,
		       uint64_t addr, uint64_t icnt)
{
	size_t len = msg(cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 5,
		.addr_field = addr >> 1 });

	return msg(cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = icnt });
}

/*
 * ecall and ebreak counted as retired, as rc7 had it. 0x100: addi;
 * ecall; addi; c.ebreak. 0x200 (a handler): addi; ret.
 */
static void ecall_hand_built(void)
{
	static uint8_t mem[0x210];
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_image *img = nt_image_new();
	struct nt_encoder_cfg ecfg;
	const char *err = NULL;
	struct collect c;
	uint8_t buf[64];
	size_t len, at;

	put32(mem, 0x100, 0x00150513);
	put32(mem, 0x104, 0x00000073);
	put32(mem, 0x108, 0x00150513);
	put16(mem, 0x10c, 0x9002);
	put32(mem, 0x200, 0x00150513);
	put32(mem, 0x204, 0x00008067);
	nt_image_add_mem(img, mem, sizeof(mem), 0, &err);
	hand_built_cfg(&ecfg, &cfg);

	/*
	 * The reference encoder's form: the ecall ends an IndirectBranch
	 * with B-TYPE 0 as an uninferable call would, and the handler's
	 * return to after it is implicit.
	 */
	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 5,
		.addr_field = 0x100 >> 1 });
	at = len;
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_INDIRECT_BRANCH, .icnt = 4,
		.addr_field = (0x100 ^ 0x200) >> 1 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 6 });
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(!c.gaps && c.n == 5 && c.pcs[0] == 0x100 && c.pcs[1] == 0x104 &&
	       c.pcs[2] == 0x200 && c.pcs[3] == 0x204 && c.pcs[4] == 0x108 &&
	       c.st.traps == 1 && c.st.insns == 4,
	       "ecall in I-CNT ending a B-TYPE 0 message: a trap to the "
	       "handler, whose return comes back after it");
	tap_ok(c.st.deviations[NT_DEV_ECALL_RETIRED] == 1 &&
	       c.st.deviation_at[NT_DEV_ECALL_RETIRED] == at &&
	       c.st.deviations[NT_DEV_WIDE_ICNT] == 0,
	       "counted once as an ecall counted as retired, at byte %zu", at);
	collect_free(&c);

	/* rc7 hardware's form: B-TYPE 2, c.ebreak counted */
	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 5,
		.addr_field = 0x108 >> 1 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_INDIRECT_BRANCH, .btype = NT_BTYPE_EXCEPTION,
		.icnt = 3, .addr_field = (0x108 ^ 0x200) >> 1 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 2 });
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(!c.gaps && c.n == 3 && c.pcs[1] == 0x10c && c.pcs[2] == 0x200 &&
	       c.st.deviations[NT_DEV_ECALL_RETIRED] == 1,
	       "c.ebreak in the I-CNT of an exception message: its trap");
	collect_free(&c);

	/* the last message of the trace counts it: nothing follows */
	len = run_from(&cfg, buf, 0x100, 4);
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(!c.gaps && c.n == 1 && c.pcs[0] == 0x100 &&
	       c.st.deviations[NT_DEV_ECALL_RETIRED] == 1,
	       "ecall counted by the final ProgTraceCorrelation: decoded "
	       "up to it, as when it is not counted");
	collect_free(&c);

	/* an I-CNT that goes on past an ecall is damage, not rc7 */
	len = run_from(&cfg, buf, 0x100, 6);
	decode(&ecfg, img, buf, len, 0, &c);
	tap_ok(c.gaps == 1 && !c.st.deviations[NT_DEV_ECALL_RETIRED],
	       "an I-CNT that goes on past an ecall is still a gap");
	collect_free(&c);
	nt_image_free(img);
}

/*
 * A real program as the task group's reference encoder reports it: an
 * ecall or ebreak retires, as an uninferable call, and the I-CNT counter
 * is never reported full. Every PC must come back.
 */
static void reference_form(struct prog *p)
{
	struct prog q = *p;
	uint64_t ecalls = 0;
	size_t i, k;

	q.recs = malloc(p->nrecs * sizeof(*q.recs));
	if (!q.recs)
		abort();
	for (i = 0; i < p->nrecs; i++) {
		struct nt_record *r = &q.recs[i];
		const uint8_t *code;
		struct nt_insn in;
		size_t avail;

		*r = p->recs[i];
		if (r->itype != NT_ITYPE_EXCEPTION)
			continue;
		code = nt_image_lookup(p->img, r->addr, &avail);
		if (!code || nt_insn_classify(code, avail, r->addr, 0, &in) <= 0 ||
		    in.iclass != NT_IC_ECALL)
			continue;
		r->itype = NT_ITYPE_INDIRECT_CALL;
		r->size = in.size;
		ecalls++;
	}
	for (k = 0; k < N_OPTION_SETS; k++) {
		struct nt_encoder_cfg cfg;
		struct collect c;
		uint8_t *buf, *folded;
		size_t len, flen, diff = 0;
		bool ok;

		nt_encoder_cfg_default(&cfg);
		option_sets[k].apply(&cfg);
		/*
		 * A return counter would take the ecall for a call and hide
		 * the next return, wherever it goes: nothing can follow that.
		 */
		if (cfg.implicit_return == 1)
			continue;
		buf = prog_encode(&q, &cfg, &len);
		folded = malloc(len + 64);
		if (!buf || !folded)
			abort();
		flen = fold_icnt_full(&cfg.stream, buf, len, folded, len + 64);
		decode(&cfg, p->img, folded, flen, 0, &c);
		ok = !c.gaps && same_as_truth(p, &c, &diff) &&
		     c.st.deviations[NT_DEV_ECALL_RETIRED] == ecalls;
		if (!tap_ok(ok, "%s %s, reference form: %zu of %zu PCs, %" PRIu64
			    " of %" PRIu64 " ecalls counted as retired", p->name,
			    option_sets[k].name, c.n, p->npcs,
			    c.st.deviations[NT_DEV_ECALL_RETIRED], ecalls))
			tap_diag("first difference at #%zu, %zu gaps, first at "
				 "byte %" PRIu64, diff, c.gaps,
				 c.first_gap_offset);
		collect_free(&c);
		free(folded);
		free(buf);
	}
	free(q.recs);
}

/*
 * SiFive's pre-1.0 ResourceFull RCODE 9 and 8: RDATA taken, then RDATA
 * not-taken branches in a row. The loop of loop_image() 100 times.
 */
static void sifive_rcode_8_9(void)
{
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_image *img = loop_image();
	struct nt_encoder_cfg ecfg;
	struct collect c;
	uint8_t buf[64];
	size_t len;
	int quirk;

	len = msg(&cfg, buf, 0, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 5,
		.addr_field = 0x1000 >> 1 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_RESOURCE_FULL,
		.rcode = NT_RCODE_SIFIVE_TAKEN, .nrdata = 1, .rdata = { 99 } });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_RESOURCE_FULL,
		.rcode = NT_RCODE_SIFIVE_NOT_TAKEN, .nrdata = 1,
		.rdata = { 1 } });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_INDIRECT_BRANCH, .icnt = 4 * 100 + 2,
		.addr_field = (0x1000 ^ 0x2000) >> 1 });
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 2 });
	for (quirk = 1; quirk >= 0; quirk--) {
		hand_built_cfg(&ecfg, &cfg);
		ecfg.stream.quirks = quirk ? NT_QUIRK_SIFIVE : 0;
		decode(&ecfg, img, buf, len, 0, &c);
		if (quirk)
			tap_ok(!c.gaps && c.n == 202 && c.pcs[197] == 0x1004 &&
			       c.pcs[198] == 0x1000 && c.pcs[200] == 0x1008 &&
			       c.pcs[201] == 0x2000,
			       "SiFive quirk: RCODE 9 RDATA 99 and RCODE 8 "
			       "RDATA 1 give 99 taken and one not-taken branch");
		else
			tap_ok(c.gaps == 1, "without the quirk they are vendor "
			       "RCODEs, and the branches go missing");
		collect_free(&c);
	}
	nt_image_free(img);
}

/* ---- damage the stream's own redundancy shows ----------------------- */

/*
 * 0x100: call 0x200; addi; ecall; addi. 0x200: ret. 0x300 (a handler):
 * addi; sret. The call's return is inferred in every implicit-return
 * mode.
 */
static struct nt_image *call_ret_image(void)
{
	static const struct word w[] = {
		{ 0x100, 0x100000ef },		/* jal ra, 0x200 */
		{ 0x104, 0x00150513 },		/* addi a0, a0, 1 */
		{ 0x108, 0x00000073 },		/* ecall */
		{ 0x10c, 0x00150513 },
		{ 0x200, 0x00008067 },		/* ret */
		{ 0x300, 0x00150513 },
		{ 0x304, 0x10200073 },		/* sret */
	};

	return words_image(0, 0x310, w, sizeof(w) / sizeof(w[0]));
}

#define SYNC_AT(a) \
	{ .tcode = NT_TCODE_PROG_TRACE_SYNC, .sync = 5, .addr_field = (a) >> 1 }
/* x: the target XOR the address before it, as U-ADDR has it */
#define IB(bt, n, x) { .tcode = NT_TCODE_INDIRECT_BRANCH, .btype = (bt), \
		       .icnt = (n), .addr_field = (x) >> 1 }
#define IBH(n, h, x) { .tcode = NT_TCODE_INDIRECT_BRANCH_HIST, .icnt = (n), \
		       .hist = (h), .addr_field = (x) >> 1 }
#define OWN(p)	{ .tcode = NT_TCODE_OWNERSHIP, .process = (p) }
#define STOP	{ .tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 2 }

/*
 * Streams damaged the way the census found, each beside the stream a
 * real encoder sends that looks most like it. The damaged one is a gap
 * at the message that shows it; the real one decodes to n PCs, the
 * last of them at last.
 */
static const struct {
	const char *what;
	bool loop;		/* loop_image(), not call_ret_image() */
	int bad;		/* the message reported, -1: none */
	size_t n;
	uint64_t last;
	struct nt_msg m[6];	/* up to a TCODE 0 */
} hand_built[] = {
	/*
	 * The return's own IndirectBranch with B-TYPE 0 flipped to 2: a
	 * trap from the return address to the return address. The same
	 * trap to a real handler is what an implicit-return encoder sends
	 * when the instruction after the return faults.
	 */
	{ "B-TYPE 2 on a return's message, the trap to the return address",
	  false, 1, 0, 0, { SYNC_AT(0x100), IB(2, 4, 0x100 ^ 0x104), STOP } },
	{ "an inferred return, then a trap to a handler",
	  false, -1, 4, 0x300, { SYNC_AT(0x100), IB(2, 4, 0x100 ^ 0x300),
	  STOP } },
	/*
	 * Two interrupts after the addi at 0x300, to the handler at 0x300:
	 * one encoder reports both with B-TYPE 1, or both with 3.
	 */
	{ "B-TYPE 1 after a B-TYPE 3 trap", false, 2, 0, 0,
	  { SYNC_AT(0x300), IB(3, 2, 0), IB(1, 2, 0), STOP } },
	{ "two traps with B-TYPE 1", false, -1, 3, 0x300,
	  { SYNC_AT(0x300), IB(1, 2, 0), IB(1, 2, 0), STOP } },
	/*
	 * Ownership messages no encoder sends: PROCESS is {CONTEXT, V,
	 * PRV[1:0], FORMAT[1:0]}.
	 */
	{ "Ownership with FORMAT 01 (reserved)", false, 1, 0, 0,
	  { SYNC_AT(0x104), OWN(0x5) } },
	{ "Ownership with PRV 2 (reserved)", false, 1, 0, 0,
	  { SYNC_AT(0x104), OWN(0xa), STOP } },
	{ "Ownership from U to M after a ResourceFull", false, 3, 0, 0,
	  { SYNC_AT(0x104), OWN(0x2), { .tcode = NT_TCODE_RESOURCE_FULL,
	    .rcode = NT_RCODE_ICNT, .rdata = { 2 } }, OWN(0xc), STOP } },
	{ "Ownership from U to S after a trap", false, -1, 2, 0x300,
	  { SYNC_AT(0x104), OWN(0x2), IB(3, 2, 0x104 ^ 0x300), OWN(0x4),
	    STOP } },
	{ "Ownership from S to U after an sret", false, -1, 3, 0x10c,
	  { SYNC_AT(0x300), OWN(0x6), IB(0, 4, 0x300 ^ 0x10c), OWN(0x0),
	    STOP } },
	{ "hcontext Ownership, then no scontext", false, 2, 0, 0,
	  { SYNC_AT(0x104), OWN(0x3), STOP } },
	{ "hcontext Ownership, then its scontext", false, -1, 1, 0x104,
	  { SYNC_AT(0x104), OWN(0x3), OWN(0x22), STOP } },
	/*
	 * Section "IndirectBranch Message": the last instruction its
	 * I-CNT covers is an indirect jump, call or return (or a trap
	 * follows it), not a direct jump, a conditional branch or any
	 * other instruction.
	 */
	{ "an indirect message ending at a direct call", false, 1, 0, 0,
	  { SYNC_AT(0x100), IB(0, 2, 0x100 ^ 0x2000), STOP } },
	{ "an indirect message ending at an addi", false, 1, 0, 0,
	  { SYNC_AT(0x104), IB(0, 2, 0x104 ^ 0x2000), STOP } },
	{ "an indirect message ending at a taken branch, with its HIST bit",
	  true, 1, 0, 0, { SYNC_AT(0x1000), IBH(4, 0x3, 0x1000 ^ 0x2000),
	  STOP } },
	{ "an indirect message ending at a return after a not-taken branch",
	  true, -1, 4, 0x2000, { SYNC_AT(0x1000),
	  IBH(6, 0x2, 0x1000 ^ 0x2000), STOP } },
};

static void hand_built_damage(void)
{
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_image *img = call_ret_image(), *loop = loop_image();
	struct nt_encoder_cfg ecfg;
	struct collect c;
	uint8_t buf[128];
	size_t i, k, len, at;

	hand_built_cfg(&ecfg, &cfg);
	for (i = 0; i < sizeof(hand_built) / sizeof(hand_built[0]); i++) {
		for (k = len = at = 0; hand_built[i].m[k].tcode; k++) {
			if ((int)k == hand_built[i].bad)
				at = len;
			len = msg(&cfg, buf, len, hand_built[i].m[k]);
		}
		decode(&ecfg, hand_built[i].loop ? loop : img, buf, len, 0, &c);
		if (hand_built[i].bad >= 0)
			tap_ok(c.gaps == 1 && c.first_gap_offset == at,
			       "%s: a gap at byte %zu", hand_built[i].what, at);
		else
			tap_ok(!c.gaps && c.n == hand_built[i].n &&
			       c.pcs[c.n - 1] == hand_built[i].last,
			       "%s: decoded", hand_built[i].what);
		collect_free(&c);
	}
	nt_image_free(loop);
	nt_image_free(img);
}


/*
 * The return stack holds ir_depth returns: a call onto a full stack
 * drops the oldest, as the encoder's does, and a return inferred past
 * what it holds is the stream's error, not a pop of a dropped entry
 * that the ring still happens to keep. 0x100 calls 0x200, which calls
 * 0x300; both return, the returns inferred inside one I-CNT.
 */
static void return_stack_depth(void)
{
	static const struct word w[] = {
		{ 0x100, 0x100000ef },		/* jal ra, 0x200 */
		{ 0x104, 0x00150513 },		/* addi a0, a0, 1 */
		{ 0x200, 0x100000ef },		/* jal ra, 0x300 */
		{ 0x204, 0x00008067 },		/* ret */
		{ 0x300, 0x00008067 },		/* ret */
	};
	static const uint64_t truth[] = { 0x100, 0x200, 0x300, 0x204, 0x104 };
	struct nt_image *img = words_image(0, 0x310, w, sizeof(w) /
					   sizeof(w[0]));
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_encoder_cfg ecfg;
	struct collect c;
	uint8_t buf[64];
	size_t len = 0;
	unsigned int depth;

	hand_built_cfg(&ecfg, &cfg);
	len = msg(&cfg, buf, len, (struct nt_msg)SYNC_AT(0x100));
	len = msg(&cfg, buf, len, (struct nt_msg){
		.tcode = NT_TCODE_PROG_TRACE_CORRELATION, .icnt = 10 });
	for (depth = 1; depth <= 3; depth++) {
		ecfg.ir_depth = (uint16_t)depth;
		decode(&ecfg, img, buf, len, 0, &c);
		if (depth == 1)
			tap_ok(c.gaps == 1 && c.n == 3 && c.st.errors == 1,
			       "return stack of 1: the second inferred return "
			       "is an error (%zu gaps, %zu PCs)", c.gaps, c.n);
		else
			tap_ok(!c.gaps && c.n == 5 &&
			       !memcmp(c.pcs, truth, sizeof(truth)),
			       "return stack of %u: both returns inferred",
			       depth);
		collect_free(&c);
	}
	nt_image_free(img);
}


static uint32_t jtype(uint32_t rd, int32_t off)
{
	uint32_t o = (uint32_t)off;

	return ((o >> 20) & 1) << 31 | ((o >> 1) & 0x3ff) << 21 |
	       ((o >> 11) & 1) << 20 | ((o >> 12) & 0xff) << 12 | rd << 7 |
	       0x6f;
}

/* One pass of run_pairs_stack()'s loop: what retires, in order. */
static const struct nt_record pairs_pass[] = {
	{ .addr = 0x1000, .itype = NT_ITYPE_DIRECT_CALL },	/* M */
	{ .addr = 0x1100, .itype = NT_ITYPE_DIRECT_CALL },	/* H */
	{ .addr = 0x1200, .itype = NT_ITYPE_BRANCH_TAKEN },
	{ .addr = 0x1208, .itype = NT_ITYPE_BRANCH_TAKEN },
	{ .addr = 0x1210 },
	{ .addr = 0x1214, .itype = NT_ITYPE_RETURN },	/* to 0x1108 */
	{ .addr = 0x1108, .itype = NT_ITYPE_DIRECT_CALL },	/* K */
	{ .addr = 0x1300, .itype = NT_ITYPE_BRANCH_TAKEN },
	{ .addr = 0x1308, .itype = NT_ITYPE_DIRECT_CALL },	/* G */
	{ .addr = 0x1400, .itype = NT_ITYPE_BRANCH_TAKEN },
	{ .addr = 0x1408 },
	{ .addr = 0x140c, .itype = NT_ITYPE_RETURN },	/* to 0x1310 */
	{ .addr = 0x1310, .itype = NT_ITYPE_RETURN },
	{ .addr = 0x110c, .itype = NT_ITYPE_DIRECT_CALL },	/* P */
	{ .addr = 0x1500, .itype = NT_ITYPE_BRANCH_TAKEN },
	{ .addr = 0x1508, .itype = NT_ITYPE_DIRECT_CALL },	/* F */
	{ .addr = 0x1600, .itype = NT_ITYPE_BRANCH_TAKEN },
	{ .addr = 0x1608, .itype = NT_ITYPE_DIRECT_CALL },	/* Q */
	{ .addr = 0x1700, .itype = NT_ITYPE_BRANCH_TAKEN },
	{ .addr = 0x1708, .itype = NT_ITYPE_RETURN },
	{ .addr = 0x160c, .itype = NT_ITYPE_RETURN },
	{ .addr = 0x150c, .itype = NT_ITYPE_RETURN },
	{ .addr = 0x1110, .itype = NT_ITYPE_RETURN },
	{ .addr = 0x1004 },
	{ .addr = 0x1008, .itype = NT_ITYPE_BRANCH_TAKEN },	/* the loop */
};

/*
 * The run cache takes a DirectBranch and the message after it as one
 * run when their stack operations come to one pop and one push at
 * most. A loop of BTM with implicit returns whose messages are, in
 * order (H, K, G, P, F and Q are called functions):
 *
 *   1. M and H called, H's first branch: two pushes, not paired;
 *   2. H's second branch, nothing on the stack, and 3. H returning
 *      elsewhere than its return address (so the return is explicit):
 *      a pair that pops the entry M pushed before it;
 *   4. K called, its branch; 5. G called, its branch: each pushes, so
 *      not a pair; 6. G returning elsewhere: 5 and 6 a pair that pops
 *      what it pushes;
 *   7. K's inferred return, P called, its branch;
 *   8. F called, its branch; 9. Q called, its branch: two pushes, not
 *      a pair;
 *   10. the inferred returns of Q, F, P and M, the loop's branch.
 *
 * A pair that popped or pushed one entry too many or too few, or the
 * wrong value, changes what the inferred returns after it find: each
 * is checked against the general path, and against what retired.
 */
static void run_pairs_stack(void)
{
	const uint32_t beq8 = btype(0, 0, 0, 8);	/* skips a nop */
	const uint32_t nop = 0x00000013, ret = 0x00008067;
	const uint32_t dec_a0 = 0xfff50513, ra_plus_4 = 0x00408093;
	const struct word code[] = {
		{ 0x1000, jtype(1, 0x100) },	/* jal ra, M */
		{ 0x1004, dec_a0 }, { 0x1008, btype(1, 10, 0, -8) },
		{ 0x100c, dec_a0 },
		{ 0x1100, jtype(1, 0x100) },	/* M: jal ra, H */
		{ 0x1104, nop },
		{ 0x1108, jtype(1, 0x1f8) },	/* jal ra, K */
		{ 0x110c, jtype(1, 0x3f4) },	/* jal ra, P */
		{ 0x1110, ret },
		{ 0x1200, beq8 }, { 0x1204, nop }, { 0x1208, beq8 },	/* H */
		{ 0x120c, nop }, { 0x1210, ra_plus_4 }, { 0x1214, ret },
		{ 0x1300, beq8 }, { 0x1304, nop },			/* K */
		{ 0x1308, jtype(1, 0xf8) },	/* jal ra, G */
		{ 0x130c, nop }, { 0x1310, ret },
		{ 0x1400, beq8 }, { 0x1404, nop }, { 0x1408, ra_plus_4 }, /* G */
		{ 0x140c, ret },
		{ 0x1500, beq8 }, { 0x1504, nop },			/* P */
		{ 0x1508, jtype(1, 0xf8) },	/* jal ra, F */
		{ 0x150c, ret },
		{ 0x1600, beq8 }, { 0x1604, nop },			/* F */
		{ 0x1608, jtype(1, 0xf8) },	/* jal ra, Q */
		{ 0x160c, ret },
		{ 0x1700, beq8 }, { 0x1704, nop }, { 0x1708, ret },	/* Q */
	};
	const size_t nw = sizeof(code) / sizeof(code[0]);
	const size_t npass = sizeof(pairs_pass) / sizeof(pairs_pass[0]);
	const unsigned int passes = 40;
	struct nt_image *img;
	unsigned int depth;

	img = words_image(0x1000, 0x1800, code, nw);
	for (depth = 2; depth <= 6; depth++) {
		struct nt_encoder_cfg ecfg;
		struct nt_decoder_cfg dc;
		struct nt_encoder *e;
		const char *err = NULL;
		const uint8_t *out;
		struct cache_cmp c[2];
		struct collect got;
		unsigned int pass, bad = 0;
		size_t len, k;

		nt_encoder_cfg_default(&ecfg);
		os_btm_rb_ir3(&ecfg);
		ecfg.repeat_branch = false;
		ecfg.ir_depth = (uint8_t)depth;
		e = nt_encoder_new(&ecfg, &err);
		if (!e)
			abort();
		nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
		for (pass = 0; pass < passes; pass++) {
			for (k = 0; k < npass; k++) {
				struct nt_record r = pairs_pass[k];

				r.size = 4;
				if (pass + 1 == passes && r.addr == 0x1008)
					r.itype = NT_ITYPE_BRANCH_NOT_TAKEN;
				nt_encoder_retire(e, &r);
			}
		}
		nt_encoder_retire(e, &(struct nt_record){ .addr = 0x100c,
				  .size = 4 });
		nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, 0);
		out = nt_encoder_output(e, &len);
		nt_decoder_cfg_default(&dc);
		dc.stream = ecfg.stream;
		dc.mode = ecfg.mode;
		dc.ir_depth = (uint16_t)depth;
		cache_cmp_run(&c[0], &dc, img, out, len, false, 0);
		cache_cmp_run(&c[1], &dc, img, out, len, true, 61);
		decode(&ecfg, img, out, len, 0, &got);
		for (k = 0; k < got.n; k++)
			bad += got.pcs[k] != (k / npass < passes ?
					      pairs_pass[k % npass].addr :
					      0x100c);
		tap_ok(c[0].same && c[1].same && !got.gaps && !bad &&
		       got.n == passes * npass + 1 &&
		       c[0].st_on.chained_msgs > passes &&
		       c[1].st_on.chained_msgs > passes,
		       "return stack of %u: pairs of runs that pop and push "
		       "decode as the general path does (%" PRIu64 " of %"
		       PRIu64 " messages chained) and as executed (%zu PCs, "
		       "%u wrong)", depth, c[0].st_on.chained_msgs,
		       c[0].st_on.msgs, got.n, bad);
		for (k = 0; k < 2; k++)
			cache_cmp_free(&c[k]);
		collect_free(&got);
		nt_encoder_free(e);
	}
	nt_image_free(img);
}

/*
 * A program for run_pairs_room(): its code, and its trace as I-CNTs of
 * DirectBranch messages (0: an IndirectBranch of I-CNT ib_icnt, to the
 * next of ib_to in turn), passes times the pass's messages, the last
 * time the last's instead.
 */
struct room_case {
	const char *what;
	uint64_t base;
	const struct word *code;
	size_t ncode;
	const uint64_t *pass, *last;
	size_t npass, nlast;
	uint64_t ib_icnt;
	const uint64_t *ib_to;
	size_t nib_to;
	unsigned int depth;
};

#define NELEMS(a)	(sizeof(a) / sizeof((a)[0]))
/* a room_case of program p: p's code, p_pass and p_last */
#define ROOM_CASE(what, base, p, ib_icnt, ib_to, nib_to, depth) \
	{ what, base, p, NELEMS(p), p##_pass, p##_last, NELEMS(p##_pass), \
	  NELEMS(p##_last), ib_icnt, ib_to, nib_to, depth }

/* 0x2000 (sync) */
static const struct word room_plain[] = {
	{ 0x2000, 0x500000ef },		/* jal ra, Y */
	{ 0x2004, 0x0fc000ef },		/* jal ra, N */
	{ 0x2008, 0xfe051ce3 },		/* bnez a0, 0x2000 */
	{ 0x200c, 0x3f4000ef },		/* jal ra, N2 */
	{ 0x2010, 0x00000063 },		/* beqz zero, . */
	{ 0x2100, 0x100000ef },		/* N: jal ra, Z */
	{ 0x2104, 0x00008067 },		/* ret */
	{ 0x2200, 0x00000463 },		/* Z: beqz zero, +8 */
	{ 0x2204, 0x00000013 },
	{ 0x2208, 0x00000463 },		/* beqz zero, +8 */
	{ 0x220c, 0x00000013 },
	{ 0x2210, 0x0f0000ef },		/* jal ra, W */
	{ 0x2214, 0x00008067 },		/* ret */
	{ 0x2300, 0x00000463 },		/* W: beqz zero, +8 */
	{ 0x2304, 0x00000013 },
	{ 0x2308, 0x00008067 },		/* ret */
	{ 0x2400, 0xd01ff0ef },		/* N2: jal ra, N */
	{ 0x2404, 0x00008067 },		/* ret */
	{ 0x2500, 0xd01ff0ef },		/* Y: jal ra, Z */
	{ 0x2504, 0x00008067 },		/* ret */
};
static const uint64_t room_plain_pass[] = { 6, 2, 4, 12, 2, 4, 8 };
static const uint64_t room_plain_last[] = { 6, 2, 4, 12, 2, 4, 16, 2, 4, 10 };

/* 0x3000 (sync); Z returns to its caller's return address + 4 */
static const struct word room_pop[] = {
	{ 0x3000, 0x500000ef },		/* jal ra, Y */
	{ 0x3004, 0x0fc000ef },		/* jal ra, N */
	{ 0x3008, 0xfe051ce3 },		/* bnez a0, 0x3000 */
	{ 0x300c, 0x3f4000ef },		/* jal ra, N2 */
	{ 0x3010, 0x00000063 },		/* beqz zero, . */
	{ 0x3100, 0x100000ef },		/* N: jal ra, Z */
	{ 0x3104, 0x00000013 },
	{ 0x3108, 0x00008067 },		/* ret */
	{ 0x3200, 0x00000463 },		/* Z: beqz zero, +8 */
	{ 0x3204, 0x00000013 },
	{ 0x3208, 0x0f8000ef },		/* jal ra, V */
	{ 0x320c, 0x00000463 },		/* beqz zero, +8 */
	{ 0x3210, 0x00000013 },
	{ 0x3214, 0x00408093 },		/* addi ra, ra, 4 */
	{ 0x3218, 0x00008067 },		/* ret */
	{ 0x3300, 0x00008067 },		/* V: ret */
	{ 0x3400, 0xd01ff0ef },		/* N2: jal ra, N */
	{ 0x3404, 0x00008067 },		/* ret */
	{ 0x3500, 0xd01ff0ef },		/* Y: jal ra, Z */
	{ 0x3504, 0x00000013 },
	{ 0x3508, 0x00008067 },		/* ret */
};
static const uint64_t room_pop_pass[] = { 6, 6, 0, 8, 6, 0, 4 };
static const uint64_t room_pop_last[] = { 6, 6, 0, 8, 6, 0, 12, 6, 0, 6 };
static const uint64_t room_pop_to[] = { 0x3508, 0x3108 };

/* 0x4000 (sync); V returns to its return address + 4 */
static const struct word room_push[] = {
	{ 0x4000, 0x500000ef },		/* jal ra, Y */
	{ 0x4004, 0xfe051ee3 },		/* bnez a0, 0x4000 */
	{ 0x4008, 0x3f8000ef },		/* jal ra, N2 */
	{ 0x400c, 0x00000063 },		/* beqz zero, . */
	{ 0x4100, 0x100000ef },		/* N: jal ra, Z */
	{ 0x4104, 0x00008067 },		/* ret */
	{ 0x4200, 0x00000463 },		/* Z: beqz zero, +8 */
	{ 0x4204, 0x00000013 },
	{ 0x4208, 0x3f8000ef },		/* jal ra, Z2 */
	{ 0x420c, 0x00008067 },		/* ret */
	{ 0x4300, 0x00408093 },		/* V: addi ra, ra, 4 */
	{ 0x4304, 0x00008067 },		/* ret */
	{ 0x4400, 0xd01ff0ef },		/* N2: jal ra, N */
	{ 0x4404, 0x00008067 },		/* ret */
	{ 0x4500, 0xd01ff0ef },		/* Y: jal ra, Z */
	{ 0x4504, 0x00008067 },		/* ret */
	{ 0x4600, 0x00000463 },		/* Z2: beqz zero, +8 */
	{ 0x4604, 0x00000013 },
	{ 0x4608, 0xcf9ff0ef },		/* jal ra, V */
	{ 0x460c, 0x00000013 },
	{ 0x4610, 0x00008067 },		/* ret */
};
static const uint64_t room_push_pass[] = { 6, 4, 0, 8 };
static const uint64_t room_push_last[] = { 6, 4, 0, 16, 4, 0, 10 };
static const uint64_t room_push_to[] = { 0x4610 };

/*
 * A pair of runs must never take the return stack past its depth where
 * its second run alone would not have been taken: the general path
 * then drops the oldest entry, as the encoder does. Each program calls
 * its pair (A, then B) a few times with room for both, then once with
 * the stack too full for B. The last message infers one return more
 * than the stack holds then, which is the stream's error; a pair taken
 * there would have kept the dropped entry and hidden it.
 *
 * - plain: Z's second branch (A, nothing on the stack), then W's call
 *   and branch (B, a push), on a stack of 3 holding 2, then 3;
 * - pop: V called and returned from within A, then Z returning
 *   elsewhere than its return address (B, an IndirectBranch popping
 *   the entry below): A's call needs room, on a stack of 3 holding 2,
 *   then 3;
 * - push: Z2 called in A, then V called and returning elsewhere in B
 *   (a push and its pop): B's call needs room above A's push, on a
 *   stack of 4 holding 2, then 3.
 */
static void run_pairs_room(void)
{
	static const struct room_case cases[] = {
		ROOM_CASE("a push after nothing", 0x2000, room_plain,
			  0, NULL, 0, 3),
		ROOM_CASE("a call and return, then a pop", 0x3000, room_pop,
			  4, room_pop_to, NELEMS(room_pop_to), 3),
		ROOM_CASE("a push, then a call and return", 0x4000, room_push,
			  6, room_push_to, NELEMS(room_push_to), 4),
	};
	const unsigned int passes = 4;
	size_t j;

	for (j = 0; j < NELEMS(cases); j++) {
		const struct room_case *rc = &cases[j];
		struct nt_stream_cfg cfg = { .xlen = 64 };
		struct nt_decoder_cfg dc;
		struct nt_image *img;
		struct cache_cmp c[2];
		uint64_t addr = rc->base;
		uint8_t buf[256];
		size_t len = 0, i, k, n, ib = 0;

		img = words_image(rc->base, 0x700, rc->code, rc->ncode);
		len = msg(&cfg, buf, len, (struct nt_msg)SYNC_AT(rc->base));
		for (k = 0; k < passes; k++) {
			const uint64_t *m = k + 1 < passes ? rc->pass : rc->last;

			n = k + 1 < passes ? rc->npass : rc->nlast;
			for (i = 0; i < n; i++) {
				uint64_t to;

				if (m[i]) {
					len = msg(&cfg, buf, len, (struct nt_msg){
						.tcode = NT_TCODE_DIRECT_BRANCH,
						.icnt = m[i] });
					continue;
				}
				to = rc->ib_to[ib++ % rc->nib_to];
				len = msg(&cfg, buf, len, (struct nt_msg)
					  IB(0, rc->ib_icnt, to ^ addr));
				addr = to;
			}
		}
		/* the cache takes a message with eight bytes from its start */
		len = msg(&cfg, buf, len, (struct nt_msg)SYNC_AT(rc->base));
		len = msg(&cfg, buf, len, (struct nt_msg){
			.tcode = NT_TCODE_DIRECT_BRANCH, .icnt = rc->pass[0] });
		nt_decoder_cfg_default(&dc);
		dc.stream = cfg;
		dc.ir_depth = (uint16_t)rc->depth;
		cache_cmp_run(&c[0], &dc, img, buf, len, false, 0);
		cache_cmp_run(&c[1], &dc, img, buf, len, true, 0);
		tap_ok(c[0].same && c[1].same && c[0].st_off.gaps == 1 &&
		       c[0].st_off.errors == 1 && c[0].st_on.cached_msgs,
		       "return stack full, %s: no pair of runs takes it "
		       "past its depth (%" PRIu64 " of %" PRIu64 " messages "
		       "cached, %" PRIu64 " chained; events the same: %d, %d)",
		       rc->what, c[0].st_on.cached_msgs, c[0].st_on.msgs,
		       c[0].st_on.chained_msgs, c[0].same, c[1].same);
		for (k = 0; k < 2; k++)
			cache_cmp_free(&c[k]);
		nt_image_free(img);
	}
}

/*
 * The messages of one source's loop for run_pair_last_time(): iters
 * passes of ten branches (the taken ones in taken's bits) and an
 * indirect jump back, a record every step time units from t0, up to
 * the last whole message (no stop message).
 */
static uint8_t *pair_loop_trace(const struct nt_encoder_cfg *cfg,
				unsigned int iters, uint64_t t0, uint64_t step,
				size_t *len)
{
	const unsigned int taken = 0x2b5;
	struct nt_encoder *e;
	const char *err = NULL;
	const uint8_t *out;
	uint8_t *copy;
	uint64_t t = t0;
	unsigned int k, i;

	e = nt_encoder_new(cfg, &err);
	if (!e)
		abort();
	nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
	for (k = 0; k < iters; k++) {
		for (i = 0; i < 10; i++)
			nt_encoder_retire(e, &(struct nt_record){
				.addr = 0x1000 + 4 * i, .size = 4,
				.tstamp = t += step,
				.itype = taken >> i & 1 ?
					 NT_ITYPE_BRANCH_TAKEN :
					 NT_ITYPE_BRANCH_NOT_TAKEN });
		nt_encoder_retire(e, &(struct nt_record){
			.addr = 0x1028, .size = 4, .tstamp = t += step,
			.itype = NT_ITYPE_INDIRECT_JUMP });
	}
	/* the record that shows where the jump went */
	nt_encoder_retire(e, &(struct nt_record){ .addr = 0x1000, .size = 4,
			  .tstamp = t += step,
			  .itype = NT_ITYPE_BRANCH_TAKEN });
	out = nt_encoder_output(e, len);
	copy = malloc(*len ? *len : 1);
	if (!copy)
		abort();
	memcpy(copy, out, *len);
	nt_encoder_free(e);
	return copy;
}

/* Where buf's last two messages start (*at), and their TCODEs. */
static bool last_two(const struct nt_stream_cfg *cfg, const uint8_t *buf,
		     size_t len, size_t at[2], unsigned int tcode[2])
{
	struct nt_reader *r = nt_reader_new(cfg);
	struct nt_msg m;
	size_t n = 0;

	if (!r)
		abort();
	nt_reader_feed(r, buf, len);
	nt_reader_finish(r);
	while (nt_reader_next(r, &m)) {
		at[0] = at[1];
		tcode[0] = tcode[1];
		at[1] = (size_t)m.offset;
		tcode[1] = m.tcode;
		n += !m.err;
	}
	nt_reader_free(r);
	return n >= 2;
}

/*
 * A pair run (a ResourceFull and the message after it) keeps where in
 * it the last TSTAMP is (time_off): by source, the decoder orders its
 * sources' last times by where each one's last timed message is in the
 * stream, and stream order's last time is that of the last message.
 * Every message of a timed stream has a TSTAMP, and the cache takes a
 * pair only with sixteen bytes in view, so this shows only where a
 * source's part of a feed ends with a pair of two eight-byte messages
 * and another source's last messages lie between the two: made here
 * from two encoders' loops, a time step that makes such messages, and
 * the second source's last pair put inside the first one's. Without
 * time_off, each source's last time would be placed at its pair's
 * first message, and the second source's time would be the last.
 */
static void run_pair_last_time(void)
{
	static const uint64_t steps[] = { 40000, 50000, 60000, 1u << 18,
					  1u << 19, 1u << 20 };
	struct word code[11];
	struct nt_encoder_cfg cfg[2];
	struct nt_decoder_cfg dc;
	struct nt_image *img;
	struct src_cmp c[2];
	uint8_t *a = NULL, *b = NULL, *mixed;
	size_t alen = 0, blen, at[2] = { 0, 0 }, bat[2] = { 0, 0 }, k, n;
	unsigned int tc[2] = { 0, 0 }, btc[2] = { 0, 0 }, j;
	uint64_t step = 0;

	for (j = 0; j < 10; j++)
		code[j] = (struct word){ 0x1000 + 4 * j, btype(1, 10, 11, 4) };
	code[10] = (struct word){ 0x1028, 0x00078067 };	/* jr a5 */
	img = words_image(0x1000, 0x100, code, NELEMS(code));
	for (j = 0; j < 2; j++) {
		nt_encoder_cfg_default(&cfg[j]);
		cfg[j].mode = NT_MODE_HTM;
		cfg[j].hist_bits = 8;
		cfg[j].stream.timestamps = true;
		cfg[j].stream.src_bits = 2;
		cfg[j].src_id = (uint16_t)(1 + j);
	}
	/* a step whose ResourceFull and IndirectBranchHist are eight bytes */
	for (k = 0; k < NELEMS(steps) && !step; k++) {
		free(a);
		a = pair_loop_trace(&cfg[0], 30, 0, steps[k], &alen);
		if (last_two(&cfg[0].stream, a, alen, at, tc) &&
		    tc[0] == NT_TCODE_RESOURCE_FULL &&
		    tc[1] == NT_TCODE_INDIRECT_BRANCH_HIST &&
		    at[1] - at[0] == 8 && alen - at[1] == 8)
			step = steps[k];
	}
	/* the other source's times differ from the first one's */
	b = pair_loop_trace(&cfg[1], 30, step / 3, step, &blen);
	mixed = malloc(alen + blen);
	if (!mixed || !step || !last_two(&cfg[1].stream, b, blen, bat, btc))
		abort();
	/*
	 * b but its last two messages, a up to its last, b's last two (a
	 * pair of b's own, not split), a's last
	 */
	n = 0;
	memcpy(mixed + n, b, bat[0]);
	n += bat[0];
	memcpy(mixed + n, a, at[1]);
	n += at[1];
	memcpy(mixed + n, b + bat[0], blen - bat[0]);
	n += blen - bat[0];
	memcpy(mixed + n, a + at[1], alen - at[1]);
	n += alen - at[1];
	nt_decoder_cfg_default(&dc);
	dc.stream = cfg[0].stream;
	dc.images_complete = true;
	src_cmp_run(&c[0], &dc, img, mixed, n, false, 0);
	src_cmp_run(&c[1], &dc, img, mixed, n, true, 0);
	tap_ok(step && c[0].same && c[1].same && !c[0].st[1].gaps &&
	       c[0].st[1].cached_msgs,
	       "two sources with TSTAMP, one's last pair of messages "
	       "split by the other's last pair: by source, the last time is "
	       "the split pair's (time step %" PRIu64 ", %" PRIu64 " of %"
	       PRIu64 " messages cached; the same: %d, %d)", step,
	       c[0].st[1].cached_msgs, c[0].st[1].msgs, c[0].same,
	       c[1].same);
	for (j = 0; j < 2; j++)
		src_cmp_free(&c[j]);
	free(mixed);
	free(a);
	free(b);
	nt_image_free(img);
}

/*
 * A phase of a hand-built stream: passes times its messages, the last
 * message of the last pass replaced by end, so that the next phase
 * starts where it should.
 */
struct chain_phase {
	const struct nt_msg *pass;
	size_t npass;
	struct nt_msg end;
};

struct chain_case {
	const char *what;
	uint64_t base;			/* of the code, and the sync's PC */
	const struct word *code;
	size_t ncode;
	const struct chain_phase *phases;
	size_t nphases, passes;
	uint64_t min_chained;		/* messages the run cache chains */
};

/*
 * Software's data, shown and skipped: the run cache stops before it,
 * and the message after it starts the next run the cache takes.
 */
#define DQ	{ .tcode = NT_TCODE_DATA_ACQUISITION, .idtag = 1, .dqdata = 2 }
#define PHASE(p, e)	{ p, NELEMS(p), e }

/* Decoded with the run cache and without, at once and 7 bytes a feed. */
static void chain_case_run(const struct chain_case *cc, struct cache_cmp *c)
{
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_decoder_cfg dc;
	struct nt_image *img;
	size_t nmsgs = 2, len = 0, ph, k, i;
	uint8_t *buf;

	for (ph = 0; ph < cc->nphases; ph++)
		nmsgs += cc->passes * cc->phases[ph].npass;
	/* msg() offers the writer 64 bytes at the end */
	buf = malloc(NT_MAX_MSG_BYTES * nmsgs + 64);
	if (!buf)
		abort();
	img = words_image(cc->base, 0x1000, cc->code, cc->ncode);
	len = msg(&cfg, buf, len, (struct nt_msg)SYNC_AT(cc->base));
	for (ph = 0; ph < cc->nphases; ph++) {
		const struct chain_phase *p = &cc->phases[ph];

		for (k = 0; k < cc->passes; k++)
			for (i = 0; i < p->npass; i++)
				len = msg(&cfg, buf, len,
					  k + 1 == cc->passes &&
					  i + 1 == p->npass ? p->end :
					  p->pass[i]);
	}
	len = msg(&cfg, buf, len, (struct nt_msg)STOP);
	nt_decoder_cfg_default(&dc);
	dc.stream = cfg;
	cache_cmp_run(&c[0], &dc, img, buf, len, false, 0);
	cache_cmp_run(&c[1], &dc, img, buf, len, true, 7);
	nt_image_free(img);
	free(buf);
}

/*
 * Chains of runs through IndirectBranches, whose targets depend on the
 * address history: X1's or X2's branch to Q, Q's to P, P's jump
 * (through x7) to F1 or F2, and its jump (through x6) back to X1 or
 * X2, the same bytes from X1 (history X1) as from X2 (history X2):
 * U-ADDR 0x300 leads P to F1 and F1 to X1, or P to F2 and F2 to X2.
 *
 * In the first four phases, a DataAcquisition message before Q's
 * branch makes it start a chain each time. The chain made from Q with
 * history X1 goes on to F1 and X1 and must not be taken with history
 * X2. The last pass of a phase leaves F1 for X2 (F2 for X1), U-ADDR
 * 0x310, whose bytes differ from 0x300's past the chain's first eight
 * bytes. In the last phase X1's branch, a run left untried, starts a
 * chain with Q's (12 bytes, made for history X1).
 */
static const struct word chain_hist_code[] = {
	{ 0x6000, 0x10000063 },		/* X1: beq zero, zero, Q */
	{ 0x6010, 0x0e000863 },		/* X2: beq zero, zero, Q */
	{ 0x6100, 0x10000063 },		/* Q: beq zero, zero, P */
	{ 0x6200, 0x00038067 },		/* P: jr x7 */
	{ 0x6300, 0x00030067 },		/* F1: jr x6 */
	{ 0x6310, 0x00030067 },		/* F2: jr x6 */
};
static const struct nt_msg chain_hist_split[] = {
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 2 },	/* X to Q */
	DQ,
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 2 },	/* Q to P */
	IB(0, 2, 0x300), IB(0, 2, 0x300),
};
static const struct nt_msg chain_hist_whole[] = {
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 2 },
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 2 },
	IB(0, 2, 0x300), IB(0, 2, 0x300),
};
static const struct chain_phase chain_hist[] = {
	PHASE(chain_hist_split, IB(0, 2, 0x310)),	/* to X2 */
	PHASE(chain_hist_split, IB(0, 2, 0x310)),	/* to X1 */
	PHASE(chain_hist_split, IB(0, 2, 0x310)),
	PHASE(chain_hist_split, IB(0, 2, 0x310)),
	PHASE(chain_hist_whole, IB(0, 2, 0x300)),
};

/*
 * A chain must not hold a run that a popped value decided: Z's second
 * branch, after a DataAcquisition message so that it starts a chain,
 * then Z's return (inferred) and its caller's branch. Z is called from
 * A and from B, whose branches are as far from their calls, so that the
 * messages after Z's second branch are the same bytes for both, one run
 * for each return address.
 */
static const struct word chain_guard_code[] = {
	{ 0x7000, 0x100000ef },		/* A: jal ra, Z */
	{ 0x7004, 0x1e000e63 },		/* beq zero, zero, B */
	{ 0x7100, 0x00000463 },		/* Z: beq zero, zero, +8 */
	{ 0x7104, 0x00000013 },
	{ 0x7108, 0x00000463 },		/* beq zero, zero, +8 */
	{ 0x710c, 0x00000013 },
	{ 0x7110, 0x00008067 },		/* ret */
	{ 0x7200, 0xf01ff0ef },		/* B: jal ra, Z */
	{ 0x7204, 0xde000ee3 },		/* beq zero, zero, A */
};
static const struct nt_msg chain_guard_pass[] = {
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 4 },	/* to Z's first */
	DQ,
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 2 },	/* Z's second */
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 4 },	/* ret, to B */
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 4 },	/* to Z's first */
	DQ,
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 2 },	/* Z's second */
	{ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 4 },	/* ret, to A */
};
static const struct chain_phase chain_guard[] = {
	PHASE(chain_guard_pass,
	      ((struct nt_msg){ .tcode = NT_TCODE_DIRECT_BRANCH, .icnt = 4 })),
};

static void run_chains(void)
{
	static const struct chain_case cases[] = {
		{ "IndirectBranches under two address histories", 0x6000,
		  chain_hist_code, NELEMS(chain_hist_code), chain_hist,
		  NELEMS(chain_hist), 12, 150 },
		{ "a return inferred from two callers", 0x7000,
		  chain_guard_code, NELEMS(chain_guard_code), chain_guard,
		  NELEMS(chain_guard), 12, 0 },
	};
	size_t j, k;

	for (j = 0; j < NELEMS(cases); j++) {
		struct cache_cmp c[2];

		chain_case_run(&cases[j], c);
		tap_ok(c[0].same && c[1].same && !c[0].st_off.gaps &&
		       c[0].st_on.cached_msgs * 2 > c[0].st_on.msgs &&
		       c[0].st_on.chained_msgs >= cases[j].min_chained,
		       "chains of runs, %s: decoded as the general path does "
		       "(%" PRIu64 " of %" PRIu64 " messages cached, %" PRIu64
		       " chained; events the same: %d, %d)", cases[j].what,
		       c[0].st_on.cached_msgs, c[0].st_on.msgs,
		       c[0].st_on.chained_msgs, c[0].same, c[1].same);
		for (k = 0; k < 2; k++)
			cache_cmp_free(&c[k]);
	}
}

/*
 * IndirectBranchHist messages of 11 bytes, longer than the eight the
 * run cache compares first: 40 conditional branches, each past a
 * two-instruction detour either way (beq to a nop, or a jump over it),
 * then a jump back to the start. The messages differ only in the
 * outcomes of the oldest 16 branches, HIST's top bits, which are past
 * the first eight bytes: a thousand kinds, from the one PC, with the
 * same first eight bytes, each taken from its own run or from none.
 * Their runs' hash slots collide now and then, as random keys do.
 */
static void run_long_messages(void)
{
	enum { UNITS = 40, KINDS = 1024, SENT = 12000 };
	static uint64_t tops[KINDS];
	const uint64_t base = 0x9000;
	static struct word code[3 * UNITS + 1];
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_decoder_cfg dc;
	struct nt_image *img;
	struct cache_cmp c[2];
	size_t len = 0, i, n = 0;
	uint8_t *buf = malloc(NT_MAX_MSG_BYTES * (SENT + 2) + 64);
	uint8_t first[2][NT_MAX_MSG_BYTES];
	int size[2];

	if (!buf)
		abort();
	for (i = 0; i < UNITS; i++) {
		code[n++] = (struct word){ base + 12 * i, 0x00b50463 };
		code[n++] = (struct word){ base + 12 * i + 4, 0x0080006f };
		code[n++] = (struct word){ base + 12 * i + 8, 0x00000013 };
	}
	/* jr x6, back to base: the history's address, U-ADDR 0 */
	code[n++] = (struct word){ base + 12 * UNITS, 0x00030067 };
	img = words_image(base, 0x1000, code, n);
	for (i = 0; i < KINDS; i++)
		tops[i] = rnd() & ((1ull << (UNITS - 24)) - 1);
	len = msg(&cfg, buf, len, (struct nt_msg)SYNC_AT(base));
	for (i = 0; i < SENT; i++) {
		uint64_t top = tops[rnd() % KINDS];
		struct nt_msg m = IBH(2 * (2 * UNITS + 1),
				      1ull << UNITS | top << 24 | 0x5a5a5a,
				      0);

		len = msg(&cfg, buf, len, m);
		if (i < 2)
			size[i] = nt_write_msg(&cfg, &m, first[i],
					       sizeof(first[i]));
	}
	len = msg(&cfg, buf, len, (struct nt_msg)STOP);
	nt_decoder_cfg_default(&dc);
	dc.stream = cfg;
	cache_cmp_run(&c[0], &dc, img, buf, len, false, 0);
	cache_cmp_run(&c[1], &dc, img, buf, len, true, 7);
	tap_ok(c[0].same && c[1].same && !c[0].st_off.gaps &&
	       size[0] > 8 && size[0] <= 16 && !memcmp(first[0], first[1], 8) &&
	       c[0].st_on.cached_msgs * 2 > c[0].st_on.msgs,
	       "%d-byte IndirectBranchHist, %d kinds with the same first "
	       "eight bytes: decoded as the general path does (%" PRIu64
	       " of %" PRIu64 " messages cached; events the same: %d, %d)",
	       size[0], KINDS, c[0].st_on.cached_msgs, c[0].st_on.msgs,
	       c[0].same, c[1].same);
	for (i = 0; i < 2; i++)
		cache_cmp_free(&c[i]);
	nt_image_free(img);
	free(buf);
}

/*
 * The encoder model with Ownership messages on, through a system call:
 * U-mode addi, the ecall's trap to S-mode, the handler's addi and sret,
 * back to U-mode. Every privilege change comes after its trap or
 * return, under every option set.
 */
static void ownership_encoded(void)
{
	static const struct nt_record recs[] = {
		{ .addr = 0x104, .size = 4, .priv = NT_PRIV_U },
		{ .addr = 0x108, .itype = NT_ITYPE_EXCEPTION, .priv = NT_PRIV_U },
		{ .addr = 0x300, .size = 4, .priv = NT_PRIV_S },
		{ .addr = 0x304, .size = 4, .itype = NT_ITYPE_TRAP_RETURN,
		  .priv = NT_PRIV_S },
		{ .addr = 0x10c, .size = 4, .priv = NT_PRIV_U },
	};
	static const uint64_t want[] = { 0x104, 0x108, 0x300, 0x304, 0x10c };
	struct nt_image *img = call_ret_image();
	size_t k, i, bad = 0;

	for (k = 0; k < N_OPTION_SETS; k++) {
		struct nt_encoder_cfg cfg;
		struct nt_encoder *e;
		const uint8_t *out;
		const char *err = NULL;
		struct collect c;
		size_t len;

		nt_encoder_cfg_default(&cfg);
		option_sets[k].apply(&cfg);
		cfg.context = true;
		e = nt_encoder_new(&cfg, &err);
		if (!e)
			abort();
		nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
		for (i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
			struct nt_record r = recs[i];

			r.tstamp = i + 1;
			nt_encoder_retire(e, &r);
		}
		nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, i + 1);
		out = nt_encoder_output(e, &len);
		decode(&cfg, img, out, len, 0, &c);
		if (c.gaps || c.n != 5 || memcmp(c.pcs, want, sizeof(want))) {
			tap_diag("%s: %zu gaps, %zu PCs", option_sets[k].name,
				 c.gaps, c.n);
			bad++;
		}
		collect_free(&c);
		nt_encoder_free(e);
	}
	tap_ok(!bad, "a system call with Ownership messages, encoded under "
	       "every option set: decoded without a gap");
	nt_image_free(img);
}

/*
 * A return to 0x8000, where no image has code, then the end of the
 * trace or one more instruction: the decoder reports it at the return's
 * message when told its images are complete; otherwise only a walk
 * from there is an error, at the message that needs it.
 */
static void address_outside_images(void)
{
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct nt_image *img = call_ret_image();
	struct nt_decoder_cfg dc;
	uint8_t buf[64];
	size_t len, at, next;
	int complete, walk;

	for (walk = 0; walk < 2; walk++) {
		at = msg(&cfg, buf, 0, (struct nt_msg)SYNC_AT(0x200));
		next = msg(&cfg, buf, at,
			   (struct nt_msg)IB(0, 2, 0x200 ^ 0x8000));
		len = msg(&cfg, buf, next, (struct nt_msg){
			.tcode = NT_TCODE_PROG_TRACE_CORRELATION,
			.icnt = walk ? 2 : 0 });
		for (complete = 0; complete < 2; complete++) {
			struct collect c = { 0 };
			const char *err = NULL;
			struct nt_decoder *d;

			nt_decoder_cfg_default(&dc);
			dc.images_complete = complete;
			d = nt_decoder_new(&dc, on_event, &c, &err);
			nt_decoder_add_image(d, img, true, 0);
			nt_decoder_feed(d, buf, len);
			nt_decoder_finish(d);
			if (complete)
				tap_ok(c.gaps == 1 && c.first_gap_offset == at,
				       "images complete, a return outside them%s:"
				       " a gap at its message", walk ?
				       ", then a walk" : "");
			else if (walk)
				tap_ok(c.gaps == 1 && c.first_gap_offset == next,
				       "a return outside the images, then a "
				       "walk: a gap at the walk's message");
			else
				tap_ok(!c.gaps && c.n == 1,
				       "a return outside the images, then the "
				       "end: no gap (maybe code not given)");
			nt_decoder_free(d);
			collect_free(&c);
		}
	}
	nt_image_free(img);
}


/*
 * The PC-list writer formats a run's first PC and patches the last two
 * digits of the lines after it: runs across every digit count, across
 * 256-byte and digit-count boundaries, from 0 and to the top of the
 * RV32 space (where the PC wraps) must print what printf prints. Long
 * runs go across the writer's buffer flushes.
 */
static void pc_list_writer(void)
{
	static const struct {
		uint64_t from;
		bool rv32;
	} runs[] = {
		{ 0, false }, { 0x6, false }, { 0xf0, false }, { 0xfe0, false },
		{ 0xffffe, false }, { 0x10000, false }, { 0x7ffffff0, false },
		{ 0xfffffff0, false }, { 0xffffffffffffffe0ull, false },
		{ 0x123456789abcdef0ull, false }, { 0xffffffe0, true },
		{ 0x1f0, true },
	};
	/* sizes: 4, 2, 2, 4, 4, 2, 4, ... in a pattern */
	static const uint8_t pattern[] = { 0x13, 0x01, 0x01, 0x00, 0x01, 0x00,
					   0x13, 0x00, 0x01, 0x00, 0x13, 0x00,
					   0x00, 0x00, 0x01, 0x00 };
	static const uint64_t short_runs[] = {
		0x20, 0x4, 0x24, 0xf8, 0x1000, 0x10f8, 0x1010, 0xabc, 0x2, 0x0,
		0x10, 0xfffffff8, 0x12344, 0x1ab00, 0x10000, 0x1fffc, 0x2ff00,
	};
	uint8_t *code = malloc(1 << 20);
	size_t k, i;

	for (i = 0; i < (1u << 20); i++)
		code[i] = pattern[i % sizeof(pattern)];
	for (k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		struct nt_out_cfg ocfg = { .format = NT_OUT_PCS,
					   .isa = runs[k].rv32 ? NT_ISA_RV32 : 0 };
		uint64_t mask = runs[k].rv32 ? 0xffffffffull : ~0ull;
		char *got = NULL, *want = NULL;
		size_t gotlen = 0, wantlen = 0;
		FILE *f = open_memstream(&got, &gotlen);
		FILE *w = open_memstream(&want, &wantlen);
		struct nt_out *o = nt_out_new(&ocfg, f);
		struct nt_event ev = { .kind = NT_EV_INSNS };
		uint64_t pc = runs[k].from, n = 0;
		const uint8_t *p = code;

		/* 100000 instructions: a few MB of text, several flushes */
		while (n < 100000) {
			unsigned int sz = (p[0] & 3) == 3 ? 4 : 2;

			fprintf(w, "0x%" PRIx64 "\n", pc);
			pc = (pc + sz) & mask;
			p += sz;
			n++;
		}
		ev.from = runs[k].from;
		ev.ninsn = n;
		ev.code = code;
		nt_out_event(o, &ev);
		/*
		 * Short runs after it: the line of one run's page is kept
		 * for the next, and must not be for a PC of fewer digits.
		 */
		for (i = 0; i < sizeof(short_runs) / sizeof(short_runs[0]);
		     i++) {
			pc = short_runs[i];
			p = code;
			ev.from = pc;
			ev.ninsn = 3;
			nt_out_event(o, &ev);
			for (n = 0; n < 3; n++) {
				unsigned int sz = (p[0] & 3) == 3 ? 4 : 2;

				fprintf(w, "0x%" PRIx64 "\n", pc);
				pc = (pc + sz) & mask;
				p += sz;
			}
		}
		/*
		 * The same runs again and again, across buffer flushes: the
		 * writer keeps a run's text by its start, code and length,
		 * and must tell apart runs that differ in any of them (the
		 * code at code + 4 has other sizes), and not keep text
		 * longer than it holds.
		 */
		for (n = 0; n < 20000; n++) {
			static const struct {
				uint64_t from;
				size_t code_off;
				uint64_t ninsn;
			} again[] = {
				{ 0x10000, 0, 3 }, { 0x10000, 0, 5 },
				{ 0x10000, 4, 3 }, { 0x20000, 0, 3 },
				{ 0x10000, 0, 40 }, { 0x123456789abcdef0ull, 0, 7 },
				{ 0x8, 0, 4 }, { 0x10000, 0, 3 },
			};
			const struct nt_event *e = &ev;
			size_t a = n % (sizeof(again) / sizeof(again[0])), m;

			ev.from = again[a].from;
			ev.code = code + again[a].code_off;
			ev.ninsn = again[a].ninsn;
			nt_out_event(o, e);
			pc = ev.from;
			p = ev.code;
			for (m = 0; m < ev.ninsn; m++) {
				unsigned int sz = (p[0] & 3) == 3 ? 4 : 2;

				fprintf(w, "0x%" PRIx64 "\n", pc);
				pc = (pc + sz) & mask;
				p += sz;
			}
		}
		nt_out_finish(o);
		nt_out_free(o);
		fclose(f);
		fclose(w);
		tap_ok(gotlen == wantlen && !memcmp(got, want, gotlen),
		       "PC list from 0x%" PRIx64 "%s: %zu bytes as printf", runs[k].from,
		       runs[k].rv32 ? " (RV32)" : "", gotlen);
		free(got);
		free(want);
	}
	free(code);
}

int main(int argc, char **argv)
{
	const char *const *names = default_programs;
	size_t nnames = sizeof(default_programs) / sizeof(default_programs[0]);
	static struct census cs;
	size_t i;

	pc_list_writer();
	spec_examples();
	wide_icnt_hand_built();
	wide_icnt_encoded();
	replay_limits();
	history_splits();
	ecall_hand_built();
	sifive_rcode_8_9();
	hand_built_damage();
	return_stack_depth();
	run_pairs_stack();
	run_pairs_room();
	run_pair_last_time();
	run_chains();
	run_long_messages();
	ownership_encoded();
	address_outside_images();
	if (argc < 2) {
		fprintf(stderr, "usage: test_decode DIR [NAME...]\n");
		return tap_done();
	}
	if (argc > 2) {
		names = (const char *const *)argv + 2;
		nnames = (size_t)argc - 2;
	}
	for (i = 0; i < nnames; i++) {
		struct prog p;

		if (!tap_ok(!prog_load(&p, argv[1], names[i], 0),
			    "%s: ELF, %s.pcs and records", names[i], names[i])) {
			prog_free(&p);
			continue;
		}
		round_trips(&p);
		image_fill(&p);
		against_reference(&p);
		reference_form(&p);
		bluespec_path(&p);
		damage_tests(&p);
		run_cache_same(&p);
		run_cache_states(&p);
		run_cache_sources(&p);
		by_source_same(&p);
		harts_in_turns(&p);
		if (i == 0)
			by_source_many(&p);
		batch_writer_same(&p);
		census_prog(&p, &cs);
		prog_free(&p);
	}
	census_report(&cs, names == default_programs);
	return tap_done();
}
