// SPDX-License-Identifier: GPL-2.0-only
/*
 * Encoder throughput: records of a real program, replayed until each
 * option set has seen at least -n records, through nt_encoder_retire()
 * and, cut into blocks as an emulator runs them, nt_encoder_retire_block().
 *
 *   bench_encoder [-n RECORDS] [-s SET] ELF PCS
 *	throughput table, plus a baseline row that only walks the records;
 *	-s runs only the option set named SET (for profiling)
 *   bench_encoder --bits ELF PCS [ELF PCS ...]
 *	bits per instruction of every option set for each program (one
 *	pass, no replay: the numbers a user of 'ntrace encode' would see)
 *
 * The records are built once (image + pcgen) so the timed loop measures
 * the encoder alone, not PC parsing or instruction classification.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "ntrace.h"

struct recs {
	struct nt_record *r;
	size_t n, cap;
	uint64_t insns;		/* retired instructions (traps excluded) */
};

/*
 * The same stream as blocks: each ends at a control transfer and says
 * where it went; a trap stays a record (n == 0).
 */
struct step {
	struct nt_block b;
	uint64_t next;
	const struct nt_record *trap;
};

struct steps {
	struct step *s;
	size_t n;
};

static void push(struct recs *rs, const struct nt_record *r)
{
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? 2 * rs->cap : 1 << 16;
		rs->r = realloc(rs->r, rs->cap * sizeof(*rs->r));
		if (!rs->r)
			die("out of memory");
	}
	rs->r[rs->n++] = *r;
	if (r->itype != NT_ITYPE_EXCEPTION && r->itype != NT_ITYPE_INTERRUPT)
		rs->insns++;
}

/*
 * PCs outside the ELF (qemu's sigreturn trampoline) become one interrupt
 * record: the encoder then reports the discontinuity the way a filtered
 * gap would look, instead of resolving a branch to a PC it never saw.
 */
static void load(struct recs *rs, const char *elf, const char *pcs_path)
{
	struct nt_image *img = nt_image_new();
	struct nt_pcgen *gen;
	struct nt_record out[2];
	const char *err = NULL;
	bool in_gap = false;
	size_t len;
	char *text, *s, *end;
	int n, k;

	if (!img || nt_image_add_elf(img, elf, 0, &err))
		die("%s: %s", elf, err ? err : "out of memory");
	gen = nt_pcgen_new(img, nt_image_xlen(img) == 32 ? NT_ISA_RV32 : 0);
	if (!gen)
		die("out of memory");
	text = (char *)slurp(pcs_path, &len);
	for (s = text; *s; s = end) {
		uint64_t pc;

		while (*s == '\n' || *s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (!*s)
			break;
		if (*s == '#') {
			end = strchr(s, '\n');
			if (!end)
				break;
			continue;
		}
		errno = 0;
		pc = strtoull(s, &end, 16);
		if (end == s || errno)
			die("%s: bad PC near byte %zu", pcs_path,
			    (size_t)(s - text));
		n = nt_pcgen_next(gen, pc, out, &err);
		if (n < 0) {
			if (!in_gap) {
				struct nt_record t = { 0 };

				t.addr = pc;
				t.itype = NT_ITYPE_INTERRUPT;
				push(rs, &t);
			}
			in_gap = true;
			continue;
		}
		in_gap = false;
		for (k = 0; k < n; k++)
			push(rs, &out[k]);
	}
	n = nt_pcgen_finish(gen, out, &err);
	for (k = 0; k < n; k++)
		push(rs, &out[k]);
	if (!rs->n)
		die("%s: no records", pcs_path);
	free(text);
	nt_pcgen_free(gen);
	nt_image_free(img);
}

/*
 * Replay wrap: the last record continues at the first one's address via
 * an interrupt, so a cyclic replay is one valid, unbroken ingress stream.
 */
static void close_cycle(struct recs *rs)
{
	const struct nt_record *last = &rs->r[rs->n - 1];
	bool trap = last->itype == NT_ITYPE_EXCEPTION ||
		    last->itype == NT_ITYPE_INTERRUPT;
	struct nt_record t = { .itype = NT_ITYPE_INTERRUPT };

	t.addr = last->addr + (trap ? 0 : last->size);
	push(rs, &t);
}

/* Cut the records into blocks; records past the last transfer close one. */
static void cut_blocks(const struct recs *rs, struct steps *ss)
{
	size_t i = 0, start;

	ss->s = calloc(rs->n, sizeof(*ss->s));
	if (!ss->s)
		die("out of memory");
	ss->n = 0;
	while (i < rs->n) {
		const struct nt_record *r = &rs->r[i];
		struct step *st = &ss->s[ss->n++];
		struct nt_block *b = &st->b;

		if (r->itype == NT_ITYPE_EXCEPTION ||
		    r->itype == NT_ITYPE_INTERRUPT) {
			st->trap = r;
			i++;
			continue;
		}
		start = i;
		b->addr = r->addr;
		b->first_size = r->size;
		b->priv = r->priv;
		while (i + 1 < rs->n && rs->r[i].itype == NT_ITYPE_NONE &&
		       rs->r[i + 1].itype != NT_ITYPE_EXCEPTION &&
		       rs->r[i + 1].itype != NT_ITYPE_INTERRUPT)
			b->halfwords += rs->r[i++].size / 2;
		r = &rs->r[i++];
		b->halfwords += r->size / 2;
		b->n = (uint32_t)(i - start);
		b->last = r->addr;
		b->last_size = r->size;
		b->last_itype = r->itype;
		st->next = i < rs->n ? rs->r[i].addr : rs->r[0].addr;
		/* a target that says taken or not, as a translator knows it */
		b->target = st->next;
		if (r->itype == NT_ITYPE_BRANCH_NOT_TAKEN) {
			b->last_itype = NT_ITYPE_BRANCH_TAKEN;
			b->target = st->next + 2;
		}
		if (r->flags & NT_REC_SEQ_INFERABLE)
			b->flags = NT_BLOCK_SEQ;
	}
}

/* ---- option sets ----------------------------------------------------- */

struct optset {
	const char *name;
	const char *col;	/* short name for the --bits table */
	void (*apply)(struct nt_encoder_cfg *c);
};

static void o_btm(struct nt_encoder_cfg *c)
{
	c->mode = NT_MODE_BTM;
}

static void o_htm(struct nt_encoder_cfg *c)
{
	c->mode = NT_MODE_HTM;
}

static void o_htm_ir3_rh(struct nt_encoder_cfg *c)
{
	c->implicit_return = 3;
	c->repeat_history = true;
}

static void o_htm_seq_all(struct nt_encoder_cfg *c)
{
	c->sequential_jump = true;
	c->all_jumps = true;
}

static void o_btm_rb(struct nt_encoder_cfg *c)
{
	c->mode = NT_MODE_BTM;
	c->repeat_branch = true;
}

static void o_htm_sync_ts_ctx(struct nt_encoder_cfg *c)
{
	c->sync_mode = 3;		/* I-CNT based */
	c->sync_max = 8;		/* every 4096 half-words */
	c->stream.timestamps = true;
	c->context = true;
}

static const struct optset sets[] = {
	{ "btm", "btm", o_btm },
	{ "htm", "htm", o_htm },
	{ "htm+ir3+repeat-hist", "htm+ir3+rh", o_htm_ir3_rh },
	{ "htm+seq-jump+all-jumps", "htm+seq+aj", o_htm_seq_all },
	{ "btm+repeat-branch", "btm+rb", o_btm_rb },
	{ "htm+sync4k+ts+context", "htm+sy+ts+ctx", o_htm_sync_ts_ctx },
};
#define NSETS (sizeof(sets) / sizeof(sets[0]))

static struct nt_encoder *make_encoder(const struct optset *o)
{
	struct nt_encoder_cfg cfg;
	struct nt_encoder *e;
	const char *err = NULL;

	nt_encoder_cfg_default(&cfg);
	o->apply(&cfg);
	e = nt_encoder_new(&cfg, &err);
	if (!e)
		die("%s: %s", o->name, err);
	return e;
}

/* ---- timing -------------------------------------------------------- */

struct clocks {
	double wall, cpu;
};

static void clocks_now(struct clocks *c)
{
	c->wall = wall_now();
	c->cpu = cpu_now();
}

/*
 * Drain often enough that the output buffer stays cache resident, as a
 * plugin writing to a pipe or file would.
 */
#define DRAIN_EVERY 65536

static uint64_t drain(struct nt_encoder *e)
{
	size_t len;

	nt_encoder_output(e, &len);
	nt_encoder_consume(e, len);
	return len;
}

struct result {
	uint64_t records, insns, bytes;
	double cpu, wall;
};

/* One replay record by record. */
static uint64_t replay_records(struct nt_encoder *e, struct recs *rs,
			       uint64_t *ts)
{
	uint64_t bytes = 0;
	size_t i = 0;

	while (i < rs->n) {
		size_t end = i + DRAIN_EVERY < rs->n ? i + DRAIN_EVERY : rs->n;

		/*
		 * A stand-in cycle counter, as 'ntrace encode' uses; written
		 * in place, as a copy of the record would cost the loop more
		 * than the store.
		 */
		for (; i < end; i++) {
			rs->r[i].tstamp = ++*ts;
			nt_encoder_retire(e, &rs->r[i]);
		}
		bytes += drain(e);
	}
	return bytes;
}

/* One replay block by block, every instruction counting on the clock. */
static uint64_t replay_blocks(struct nt_encoder *e, const struct steps *ss,
			      uint64_t *ts)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < ss->n; i++) {
		const struct step *st = &ss->s[i];

		if (st->trap) {
			nt_encoder_retire(e, st->trap);
			continue;
		}
		nt_encoder_retire_block(e, &st->b, st->next, 0, *ts);
		*ts += st->b.n;
		if (!(i % (DRAIN_EVERY / 4)))
			bytes += drain(e);
	}
	return bytes;
}

/* Replay until want records went in; as blocks if ss is given. */
static void run_encoder(const struct optset *o, struct recs *rs,
			const struct steps *ss, uint64_t want,
			struct result *res)
{
	struct nt_encoder *e = make_encoder(o);
	uint64_t ts = 0, bytes = 0, done = 0, replays = 0;
	struct clocks t0, t1;

	clocks_now(&t0);
	nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
	while (done < want) {
		bytes += ss ? replay_blocks(e, ss, &ts) :
			      replay_records(e, rs, &ts);
		done += rs->n;
		replays++;
	}
	nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, ts + 1);
	bytes += drain(e);
	clocks_now(&t1);

	if (nt_encoder_stats(e)->records != done)
		die("%s: encoder counted %" PRIu64 " records, fed %" PRIu64,
		    o->name, nt_encoder_stats(e)->records, done);
	res->records = done;
	res->insns = rs->insns * replays;
	res->bytes = bytes;
	res->cpu = t1.cpu - t0.cpu;
	res->wall = t1.wall - t0.wall;
	nt_encoder_free(e);
}

/* The floor: touch every record as the encoder loop does, nothing else. */
static void run_baseline(const struct recs *rs, uint64_t want,
			 struct result *res)
{
	volatile uint64_t sink;
	uint64_t sum = 0, done = 0, replays = 0;
	struct clocks t0, t1;

	clocks_now(&t0);
	while (done < want) {
		const struct nt_record *p = rs->r;
		size_t i;

		/* keep the compiler from folding the replays into one */
		__asm__ volatile("" : "+r"(p) : : "memory");
		for (i = 0; i < rs->n; i++)
			sum += p[i].addr + p[i].size;
		done += rs->n;
		replays++;
	}
	clocks_now(&t1);
	sink = sum;
	(void)sink;
	res->records = done;
	res->insns = rs->insns * replays;
	res->bytes = 0;
	res->cpu = t1.cpu - t0.cpu;
	res->wall = t1.wall - t0.wall;
}

static void print_row(const char *name, const struct result *r)
{
	double t = r->cpu > 0 ? r->cpu : r->wall;

	printf("%-24s %11" PRIu64 " %7.3f %7.3f %9.1f %9.1f %12" PRIu64
	       " %8.4f\n", name, r->records, r->cpu, r->wall,
	       (double)r->records / t / 1e6, (double)r->insns / t / 1e6,
	       r->bytes, r->insns ? 8.0 * (double)r->bytes / (double)r->insns
				 : 0.0);
}

static int throughput(const char *elf, const char *pcs, uint64_t want,
		      const char *only)
{
	struct recs rs = { 0 };
	struct steps ss;
	struct result res;
	size_t k;

	load(&rs, elf, pcs);
	close_cycle(&rs);
	cut_blocks(&rs, &ss);
	printf("# encoder: %s, %zu records/replay (%" PRIu64
	       " instructions, %zu blocks), >= %" PRIu64 " records per row\n",
	       elf, rs.n, rs.insns, ss.n, want);
	printf("# seconds: thread CPU time, then wall; rates use CPU time\n");
	printf("%-24s %11s %7s %7s %9s %9s %12s %8s\n", "option set", "records",
	       "cpu-s", "wall-s", "Mrec/s", "Minsn/s", "out-bytes",
	       "bits/insn");
	run_baseline(&rs, want, &res);
	print_row("baseline (walk records)", &res);
	for (k = 0; k < NSETS; k++) {
		if (only && strcmp(only, sets[k].name))
			continue;
		run_encoder(&sets[k], &rs, NULL, want, &res);
		print_row(sets[k].name, &res);
		run_encoder(&sets[k], &rs, &ss, want, &res);
		print_row("  as blocks", &res);
		fflush(stdout);
	}
	free(ss.s);
	free(rs.r);
	return 0;
}

/* ---- bits per instruction ------------------------------------------ */

static double bits_once(const struct optset *o, struct recs *rs)
{
	struct nt_encoder *e = make_encoder(o);
	uint64_t ts = 0, bytes = 0;
	size_t i;

	nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
	for (i = 0; i < rs->n; i++) {
		rs->r[i].tstamp = ++ts;
		nt_encoder_retire(e, &rs->r[i]);
		if ((i & (DRAIN_EVERY - 1)) == 0)
			bytes += drain(e);
	}
	nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, ts + 1);
	bytes += drain(e);
	nt_encoder_free(e);
	return 8.0 * (double)bytes / (double)rs->insns;
}

static int bits_table(int argc, char **argv)
{
	size_t k;
	int i;

	if (argc < 2 || argc % 2)
		die("--bits needs ELF PCS pairs");
	printf("# bits per instruction (one pass, no replay)\n");
	printf("%-10s %9s", "program", "insns");
	for (k = 0; k < NSETS; k++)
		printf(" %13s", sets[k].col);
	printf("\n");
	for (i = 0; i < argc; i += 2) {
		struct recs rs = { 0 };
		const char *name = strrchr(argv[i], '/');

		load(&rs, argv[i], argv[i + 1]);
		printf("%-10s %9" PRIu64, name ? name + 1 : argv[i], rs.insns);
		for (k = 0; k < NSETS; k++)
			printf(" %13.4f", bits_once(&sets[k], &rs));
		printf("\n");
		fflush(stdout);
		free(rs.r);
	}
	return 0;
}

static void usage(void)
{
	fputs("usage: bench_encoder [-n RECORDS] [-s SET] ELF PCS\n"
	      "       bench_encoder --bits ELF PCS [ELF PCS ...]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	uint64_t want = 100000000;
	int i;

	if (argc > 1 && !strcmp(argv[1], "--bits"))
		return bits_table(argc - 2, argv + 2);
	for (i = 1; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		char *end;

		if (!strcmp(argv[i], "-n")) {
			want = strtoull(argv[i + 1], &end, 0);
			if (*end || !want)
				usage();
		} else if (!strcmp(argv[i], "-s")) {
			only = argv[i + 1];
		} else {
			usage();
		}
	}
	if (argc - i != 2)
		usage();
	return throughput(argv[i], argv[i + 1], want, only);
}
