// SPDX-License-Identifier: GPL-2.0-only
/*
 * ntrace encode: executed PCs (or a Bluespec tandem trace) -> N-Trace.
 * ntrace bluespec: executed PCs -> Bluespec tandem trace.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bluespec.h"
#include "cli.h"

/* ---- inputs -------------------------------------------------------- */

/* Executed-PC text: one "0x..." per line; blank lines and # comments. */
struct pc_file {
	char *data;
	size_t len, pos;
	uint64_t line;
	const char *path;
};

static int next_pc(struct pc_file *f, uint64_t *pc)
{
	while (f->pos < f->len) {
		char *s = f->data + f->pos, *end;
		char *nl = memchr(s, '\n', f->len - f->pos);
		size_t linelen = nl ? (size_t)(nl - s) : f->len - f->pos;
		unsigned long long v;

		f->pos += linelen + (nl ? 1 : 0);
		f->line++;
		while (linelen && isspace((unsigned char)*s)) {
			s++;
			linelen--;
		}
		if (!linelen || *s == '#')
			continue;
		if (linelen < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
			die_data("%s:%" PRIu64 ": expected a 0x... PC", f->path,
				 f->line);
		errno = 0;
		v = strtoull(s, &end, 16);
		while (end < s + linelen && isspace((unsigned char)*end))
			end++;
		if (end != s + linelen || end == s + 2)
			die_data("%s:%" PRIu64 ": expected a 0x... PC", f->path,
				 f->line);
		if (errno == ERANGE)
			die_data("%s:%" PRIu64 ": PC wider than 64 bits",
				 f->path, f->line);
		/* Instructions start on 16-bit boundaries, even with C. */
		if (v & 1)
			die_data("%s:%" PRIu64 ": PC 0x%llx is not 2-byte aligned",
				 f->path, f->line, v);
		*pc = v;
		return 1;
	}
	return 0;
}

/*
 * A source of records: executed PCs classified against the images, or
 * Bluespec events classified from their own instruction bits.
 */
struct record_source {
	struct nt_pcgen *gen;
	struct pc_file pcs;
	struct nt_bsv_reader bsv;
	bool bluespec;
	bool skip_unknown;	/* PCs outside the images are a filtered gap */
	bool done;
	bool in_gap;
	bool gap_pending;	/* stop/restart once the pending records are out */
	struct nt_record pending[2];
	int npending, ipending;
};

/*
 * Next record; returns 1, 0 at the end, or 2 when a gap starts (the
 * caller stops and restarts tracing around it).
 */
static int next_record(struct record_source *s, struct nt_record *rec)
{
	const char *err = NULL;

	for (;;) {
		uint64_t pc;
		int n;

		if (s->ipending < s->npending) {
			*rec = s->pending[s->ipending++];
			return 1;
		}
		if (s->gap_pending) {
			s->gap_pending = false;
			return 2;
		}
		if (s->done)
			return 0;
		s->ipending = 0;
		if (s->bluespec) {
			struct nt_bsv_event ev;
			uint8_t bytes[4];
			int got = nt_bsv_next(&s->bsv, &ev);

			if (got < 0)
				die_data("bluespec input: %s at byte %zu",
					 s->bsv.err_msg, s->bsv.err_off);
			if (got == 0) {
				s->npending = nt_pcgen_finish(s->gen, s->pending,
							      &err);
				s->done = true;
				continue;
			}
			/* interrupts carry no instruction: the PC jump says it */
			if (!ev.insn_size || !ev.pc_valid) {
				s->npending = 0;
				continue;
			}
			memcpy(bytes, &ev.insn, sizeof(bytes));
			n = nt_pcgen_next_bytes(s->gen, ev.pc, bytes,
						ev.insn_size, s->pending, &err);
			if (err)
				die_data("bluespec input at byte %zu: pc 0x%" PRIx64
					 ": %s", ev.offset, ev.pc, err);
			s->npending = n;
			continue;
		}
		if (!next_pc(&s->pcs, &pc)) {
			s->npending = nt_pcgen_finish(s->gen, s->pending, &err);
			s->done = true;
			continue;
		}
		/* the records of the PC before are good even if pc is not */
		s->npending = nt_pcgen_next(s->gen, pc, s->pending, &err);
		if (!err) {
			s->in_gap = false;
			continue;
		}
		if (!s->skip_unknown)
			die_data("%s:%" PRIu64 ": pc 0x%" PRIx64 ": %s",
				 s->pcs.path, s->pcs.line, pc, err);
		if (!s->in_gap)
			s->in_gap = s->gap_pending = true;
	}
}

/* ---- encode -------------------------------------------------------- */

enum {
	OPT_ELF = OPT_FIRST_PRIVATE, OPT_PCS, OPT_BSV, OPT_OUT, OPT_MODE,
	OPT_ICNT_BITS, OPT_HIST_BITS, OPT_IR, OPT_IR_DEPTH, OPT_IR_PARTIAL,
	OPT_REPEAT_HIST, OPT_REPEAT_BRANCH, OPT_SEQ_JUMP, OPT_ALL_JUMPS,
	OPT_SYNC_PERIOD, OPT_SYNC_MODE, OPT_SRC_ID, OPT_CONTEXT,
	OPT_BTYPE1, OPT_STATS, OPT_SKIP_UNKNOWN, OPT_RV32, OPT_RAW,
};

static const char encode_help[] =
	"usage: ntrace encode --elf PROG[@BIAS] [--elf ...] --pc-trace PCS -o TRACE [OPTIONS]\n"
	"       ntrace encode --bluespec FILE -o TRACE [OPTIONS]\n"
	"\n"
	"Run the software N-Trace encoder over executed instructions. PCS has one\n"
	"executed PC per line (0x...); each instruction is classified from the ELF\n"
	"images and its outcome inferred from the next PC.\n"
	"\n"
	"inputs:\n"
	"  --elf PROG[@BIAS]    program image (executable segments, moved by BIAS)\n"
	"  --raw FILE@ADDR      raw code image loaded at ADDR\n"
	"  --pc-trace PCS       executed PCs, one per line\n"
	"  --bluespec FILE      Bluespec tandem trace (carries its own instructions)\n"
	"  --skip-unknown       PCs outside the images are a filtered gap\n"
	"                       (trace stops and restarts with SYNC=5)\n"
	"  --rv32               RV32 instruction set (default RV64)\n"
	"  -o, --output TRACE   N-Trace bytes\n"
	"  --stats              print message and size statistics to stderr\n"
	"\n"
	"encoder controls (trTe* names in brackets):\n"
	"  --mode btm|htm       [trTeInstMode 3|6] default htm\n"
	"  --icnt-bits N        I-CNT counter width 2..22 (default 16)\n"
	"  --hist-bits N        HIST register width 2..32 incl. stop bit (default 32)\n"
	"  --implicit-return M  [trTeInstImplicitReturnMode] 0..3 (default 0)\n"
	"  --ir-depth N         return stack depth 1..32 (default 32)\n"
	"  --ir-partial-bits N  mode 2: low return-address bits compared (default 16)\n"
	"  --repeat-history     [trTeInstEnRepeatedHistory] RCODE 2 + HREPEAT\n"
	"  --repeat-branch      RepeatBranch messages for identical branches\n"
	"  --sequential-jump    [trTeInstEnSequentialJump]\n"
	"  --all-jumps          [trTeInstEnAllJumps]\n"
	"  --sync-period N      periodic sync every N units (power of 2, 16..2^19)\n"
	"  --sync-mode M        [trTeInstSyncMode] messages|cycles|icnt (default icnt)\n"
	"  --src-id N           [trTeSrcID] (with --src-bits)\n"
	"  --context            [trTeContext] Ownership messages\n"
	"  --btype-trap-only    report traps as B-TYPE 1 instead of 2/3\n"
	STREAM_HELP;

static unsigned int sync_max_for(uint64_t period)
{
	unsigned int k;

	for (k = 0; k <= 15; k++)
		if ((1ull << (k + 4)) == period)
			return k;
	die_usage("--sync-period must be a power of two from 16 to 524288");
}

static void drain(struct nt_encoder *enc, FILE *out, const char *path)
{
	size_t len;
	const uint8_t *p = nt_encoder_output(enc, &len);

	if (len && fwrite(p, 1, len, out) != len)
		die_data("%s: write error", path);
	nt_encoder_consume(enc, len);
}

static void print_encode_stats(const struct nt_encoder *enc,
			       const struct nt_pcgen *gen)
{
	const struct nt_encoder_stats *es = nt_encoder_stats(enc);
	const struct nt_pcgen_stats *gs = nt_pcgen_stats(gen);
	uint64_t msgs = 0;
	unsigned int t;

	for (t = 0; t < 64; t++) {
		if (!es->msgs[t])
			continue;
		fprintf(stderr, "  %-24s %10" PRIu64 "\n", nt_tcode_name(t),
			es->msgs[t]);
		msgs += es->msgs[t];
	}
	fprintf(stderr, "pcs %" PRIu64 " retired %" PRIu64 " half-words %"
		PRIu64 " exceptions %" PRIu64 " interrupts %" PRIu64
		" seq-jumps %" PRIu64 "\n", gs->pcs, gs->retired,
		gs->halfwords, gs->exceptions, gs->interrupts, gs->seq_jumps);
	fprintf(stderr, "messages %" PRIu64 " bytes %" PRIu64
		" bits/instruction %.4f overflows %" PRIu64 "\n", msgs,
		es->bytes, gs->pcs ? 8.0 * (double)es->bytes / (double)gs->pcs
				   : 0.0, es->overflows);
}

int cmd_encode(int argc, char **argv)
{
	static const struct option opts[] = {
		STREAM_LONG_OPTIONS,
		{ "elf", required_argument, NULL, OPT_ELF },
		{ "raw", required_argument, NULL, OPT_RAW },
		{ "pc-trace", required_argument, NULL, OPT_PCS },
		{ "bluespec", required_argument, NULL, OPT_BSV },
		{ "output", required_argument, NULL, 'o' },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "icnt-bits", required_argument, NULL, OPT_ICNT_BITS },
		{ "hist-bits", required_argument, NULL, OPT_HIST_BITS },
		{ "implicit-return", required_argument, NULL, OPT_IR },
		{ "ir-depth", required_argument, NULL, OPT_IR_DEPTH },
		{ "ir-partial-bits", required_argument, NULL, OPT_IR_PARTIAL },
		{ "repeat-history", no_argument, NULL, OPT_REPEAT_HIST },
		{ "repeat-branch", no_argument, NULL, OPT_REPEAT_BRANCH },
		{ "sequential-jump", no_argument, NULL, OPT_SEQ_JUMP },
		{ "all-jumps", no_argument, NULL, OPT_ALL_JUMPS },
		{ "sync-period", required_argument, NULL, OPT_SYNC_PERIOD },
		{ "sync-mode", required_argument, NULL, OPT_SYNC_MODE },
		{ "src-id", required_argument, NULL, OPT_SRC_ID },
		{ "context", no_argument, NULL, OPT_CONTEXT },
		{ "btype-trap-only", no_argument, NULL, OPT_BTYPE1 },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "skip-unknown", no_argument, NULL, OPT_SKIP_UNKNOWN },
		{ "rv32", no_argument, NULL, OPT_RV32 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct nt_encoder_cfg cfg;
	struct record_source src = { 0 };
	struct nt_image *img = nt_image_new();
	const char *pcs_path = NULL, *bsv_path = NULL, *out_path = NULL;
	const char *err = NULL;
	unsigned int isa = 0, sync_mode = 3;
	uint64_t ts = 0;
	int sync_max = -1;	/* no periodic sync */
	bool stats = false, nelf = false;
	struct nt_encoder *enc;
	struct nt_record rec;
	uint8_t *bsv_data = NULL;
	FILE *out;
	int opt, got;

	if (!img)
		die_data("out of memory");
	nt_encoder_cfg_default(&cfg);
	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		if (stream_option(opt, optarg, &cfg.stream))
			continue;
		switch (opt) {
		case OPT_ELF:
		case OPT_RAW:
			cli_add_image(img, optarg, opt == OPT_RAW);
			nelf = true;
			break;
		case OPT_PCS:
			pcs_path = optarg;
			break;
		case OPT_BSV:
			bsv_path = optarg;
			break;
		case 'o':
			out_path = optarg;
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "btm"))
				cfg.mode = NT_MODE_BTM;
			else if (!strcmp(optarg, "htm"))
				cfg.mode = NT_MODE_HTM;
			else
				die_usage("--mode must be btm or htm");
			break;
		case OPT_ICNT_BITS:
			cfg.icnt_bits = (uint8_t)parse_u64("--icnt-bits", optarg,
							   NT_MAX_ICNT_BITS);
			break;
		case OPT_HIST_BITS:
			cfg.hist_bits = (uint8_t)parse_u64("--hist-bits", optarg,
							   NT_MAX_HIST_BITS);
			break;
		case OPT_IR:
			cfg.implicit_return =
				(uint8_t)parse_u64("--implicit-return", optarg, 3);
			break;
		case OPT_IR_DEPTH:
			cfg.ir_depth = (uint8_t)parse_u64("--ir-depth", optarg,
							  NT_MAX_IR_DEPTH);
			break;
		case OPT_IR_PARTIAL:
			cfg.ir_partial_bits =
				(uint8_t)parse_u64("--ir-partial-bits", optarg, 63);
			break;
		case OPT_REPEAT_HIST:
			cfg.repeat_history = true;
			break;
		case OPT_REPEAT_BRANCH:
			cfg.repeat_branch = true;
			break;
		case OPT_SEQ_JUMP:
			cfg.sequential_jump = true;
			break;
		case OPT_ALL_JUMPS:
			cfg.all_jumps = true;
			break;
		case OPT_SYNC_PERIOD:
			sync_max = (int)sync_max_for(parse_u64("--sync-period",
							       optarg, UINT64_MAX));
			break;
		case OPT_SYNC_MODE:
			if (!strcmp(optarg, "messages"))
				sync_mode = 1;
			else if (!strcmp(optarg, "cycles"))
				sync_mode = 2;
			else if (!strcmp(optarg, "icnt"))
				sync_mode = 3;
			else
				die_usage("--sync-mode must be messages, cycles or icnt");
			break;
		case OPT_SRC_ID:
			cfg.src_id = (uint16_t)parse_u64("--src-id", optarg, 4095);
			break;
		case OPT_CONTEXT:
			cfg.context = true;
			break;
		case OPT_BTYPE1:
			cfg.btype_trap_only = true;
			break;
		case OPT_STATS:
			stats = true;
			break;
		case OPT_SKIP_UNKNOWN:
			src.skip_unknown = true;
			break;
		case OPT_RV32:
			isa |= NT_ISA_RV32;
			cfg.stream.xlen = 32;
			break;
		case 'h':
			fputs(encode_help, stdout);
			nt_image_free(img);
			return 0;
		default:
			die_bad_option(argv);
		}
	}
	if (optind != argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!!pcs_path == !!bsv_path)
		die_usage("give exactly one of --pc-trace and --bluespec");
	if (pcs_path && !nelf)
		die_usage("--pc-trace needs at least one --elf or --raw");
	if (!out_path)
		die_usage("missing -o TRACE");
	if (sync_max >= 0) {
		cfg.sync_mode = (uint8_t)sync_mode;
		cfg.sync_max = (uint8_t)sync_max;
	}
	enc = nt_encoder_new(&cfg, &err);
	if (!enc)
		die_usage("%s", err);

	src.gen = nt_pcgen_new(img, isa);
	if (!src.gen)
		die_data("out of memory");
	if (pcs_path) {
		src.pcs.data = read_whole_file(pcs_path, &src.pcs.len);
		src.pcs.path = pcs_path;
	} else {
		struct nt_bsv_config bc;
		size_t len;

		nt_bsv_config_rv64(&bc);
		if (isa & NT_ISA_RV32)
			bc.xlen = bc.flen = bc.mlen = 32;
		bsv_data = read_whole_file(bsv_path, &len);
		if (nt_bsv_reader_init(&src.bsv, &bc, bsv_data, len))
			die_usage("unsupported Bluespec configuration");
		src.bluespec = true;
	}

	out = open_output(out_path);
	nt_encoder_start(enc, NT_SYNC_TRACE_ENABLE);
	while ((got = next_record(&src, &rec))) {
		if (got == 2) {
			nt_encoder_stop(enc, NT_EVCODE_TRACE_DISABLED, ts);
			nt_encoder_start(enc, NT_SYNC_TRACE_ENABLE);
			continue;
		}
		/* one time unit per record: a stand-in for a cycle counter */
		rec.tstamp = ++ts;
		if (nt_encoder_retire(enc, &rec))
			die_data("invalid record at pc 0x%" PRIx64, rec.addr);
		if ((ts & 0xffff) == 0)
			drain(enc, out, out_path);
	}
	nt_encoder_stop(enc, NT_EVCODE_TRACE_DISABLED, ts + 1);
	drain(enc, out, out_path);
	close_output(out, out_path);
	if (stats)
		print_encode_stats(enc, src.gen);

	nt_encoder_free(enc);
	nt_pcgen_free(src.gen);
	nt_image_free(img);
	free(src.pcs.data);
	free(bsv_data);
	return 0;
}

/* ---- bluespec ------------------------------------------------------ */

static const char bluespec_help[] =
	"usage: ntrace bluespec --elf PROG[@BIAS] [--elf ...] [--raw FILE@ADDR ...]\n"
	"                       --pc-trace PCS -o FILE [--rv32]\n"
	"\n"
	"Write the Bluespec tandem-verification trace of executed PCs: one group\n"
	"per retired instruction (pc, instruction bits) and one per trap, with the\n"
	"traps inferred the same way 'ntrace encode' infers them.\n";

static uint32_t insn_bits(const struct nt_image *img, uint64_t pc,
			  unsigned int size)
{
	size_t avail;
	const uint8_t *p = nt_image_lookup(img, pc, &avail);
	uint32_t v = 0;

	if (!p || avail < size)
		die_data("pc 0x%" PRIx64 " outside the images", pc);
	memcpy(&v, p, size);
	return v;
}

static void bsv_event(struct nt_bsv_writer *w, const struct nt_image *img,
		      const struct nt_record *r, uint64_t next)
{
	struct nt_bsv_event ev = { 0 };
	bool trap = r->itype == NT_ITYPE_EXCEPTION ||
		    r->itype == NT_ITYPE_INTERRUPT;

	ev.pc = r->addr;
	ev.pc_valid = true;
	ev.next_pc = next;
	ev.next_pc_valid = true;
	if (!trap || r->itype == NT_ITYPE_EXCEPTION) {
		size_t avail;
		const uint8_t *p = nt_image_lookup(img, r->addr, &avail);
		struct nt_insn in;

		if (!p || nt_insn_classify(p, avail, r->addr, 0, &in) <= 0)
			die_data("pc 0x%" PRIx64 " not decodable", r->addr);
		ev.insn_size = in.size;
		ev.insn = insn_bits(img, r->addr, in.size);
	}
	if (trap) {
		ev.trap = true;
		ev.interrupt = r->itype == NT_ITYPE_INTERRUPT;
		ev.cause = ev.interrupt ? 0 : 8;	/* ecall from U-mode */
	}
	if (nt_bsv_write(w, &ev))
		die_data("cannot write Bluespec event at pc 0x%" PRIx64, r->addr);
}

int cmd_bluespec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "elf", required_argument, NULL, OPT_ELF },
		{ "raw", required_argument, NULL, OPT_RAW },
		{ "pc-trace", required_argument, NULL, OPT_PCS },
		{ "output", required_argument, NULL, 'o' },
		{ "rv32", no_argument, NULL, OPT_RV32 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct record_source src = { 0 };
	struct nt_image *img = nt_image_new();
	const char *pcs_path = NULL, *out_path = NULL;
	struct nt_bsv_config bc;
	struct nt_bsv_writer w;
	struct nt_record rec, prev;
	bool have_prev = false, nelf = false;
	unsigned int isa = 0;
	const uint8_t *data;
	size_t len;
	FILE *out;
	int opt;

	if (!img)
		die_data("out of memory");
	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_ELF:
		case OPT_RAW:
			cli_add_image(img, optarg, opt == OPT_RAW);
			nelf = true;
			break;
		case OPT_PCS:
			pcs_path = optarg;
			break;
		case 'o':
			out_path = optarg;
			break;
		case OPT_RV32:
			isa |= NT_ISA_RV32;
			break;
		case 'h':
			fputs(bluespec_help, stdout);
			nt_image_free(img);
			return 0;
		default:
			die_bad_option(argv);
		}
	}
	if (optind != argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!pcs_path || !nelf || !out_path)
		die_usage("need --elf or --raw, --pc-trace and -o");
	nt_bsv_config_rv64(&bc);
	if (isa & NT_ISA_RV32)
		bc.xlen = bc.flen = bc.mlen = 32;
	if (nt_bsv_writer_init(&w, &bc))
		die_usage("unsupported Bluespec configuration");
	src.gen = nt_pcgen_new(img, isa);
	if (!src.gen)
		die_data("out of memory");
	src.pcs.data = read_whole_file(pcs_path, &src.pcs.len);
	src.pcs.path = pcs_path;

	/* each event needs the next record's address as its next pc */
	while (next_record(&src, &rec) == 1) {
		if (have_prev)
			bsv_event(&w, img, &prev, rec.addr);
		prev = rec;
		have_prev = true;
	}
	if (have_prev)
		bsv_event(&w, img, &prev, prev.addr + prev.size);
	data = nt_bsv_writer_data(&w, &len);
	if (w.failed)
		die_data("out of memory");
	out = open_output(out_path);
	if (len && fwrite(data, 1, len, out) != len)
		die_data("%s: write error", out_path);
	close_output(out, out_path);
	nt_bsv_writer_free(&w);
	nt_pcgen_free(src.gen);
	nt_image_free(img);
	free(src.pcs.data);
	return 0;
}
