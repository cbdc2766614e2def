// SPDX-License-Identifier: GPL-2.0-only
/*
 * ntrace decode: N-Trace + program images -> executed instructions.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

enum {
	OPT_ELF = OPT_FIRST_PRIVATE, OPT_RAW, OPT_FORMAT, OPT_SRC,
	OPT_DEPTH, OPT_PERIOD, OPT_PERIOD_BRANCHES, OPT_STATS, OPT_ALL_JUMPS,
	OPT_MODE, OPT_RV32, OPT_IR_DEPTH, OPT_NO_PROGRESS, OPT_IMAGES_COMPLETE,
	OPT_BY_SOURCE,
};

static const char decode_help[] =
	"usage: ntrace decode --elf PROG[@BIAS] [--elf ...] [--raw FILE@ADDR]\n"
	"                     TRACE --format pcs|branches|brstack|flow|bluespec\n"
	"                     [-o OUT] [OPTIONS]\n"
	"\n"
	"Reconstruct the executed instructions from N-Trace bytes and the\n"
	"program images. Decoding starts at the first sync message; damage is\n"
	"reported with its byte offset and decoding resumes at the next sync.\n"
	"\n"
	"  --elf PROG[@BIAS]    program image (executable segments, moved by BIAS)\n"
	"  --raw FILE@ADDR      raw code image loaded at ADDR\n"
	"  --images-complete    the images hold all code traced: an address\n"
	"                       outside them is damage\n"
	"  --format F           pcs: one executed PC per line (0x...)\n"
	"                       branches: one control transfer per line\n"
	"                       brstack: perf script -F ip,brstack samples\n"
	"                       flow: every decoder event\n"
	"                       bluespec: Bluespec tandem trace\n"
	"  -o, --output OUT     output file (default stdout)\n"
	"  --src N              decode only messages of SRC N\n"
	"  --by-source          with --src-bits: each 1 MiB of the trace, every\n"
	"                       source's instructions in turn, in SRC order\n"
	"                       (faster on a funnel's interleaved trace)\n"
	"  --brstack-depth N    branches per brstack sample (default 32)\n"
	"  --sample-period N    one brstack sample every N instructions\n"
	"                       (default 10000)\n"
	"  --sample-branches    count the period in taken branches instead\n"
	"  --all-jumps          the encoder had trTeInstEnAllJumps set\n"
	"  --mode btm|htm       be strict about the trace mode (default: accept both)\n"
	"  --ir-depth N         decoder return stack depth (default 64)\n"
	"  --rv32               RV32 instruction set\n"
	"  --stats              instructions, transfers, errors, gaps,\n"
	"                       deviations from the spec per kind, time\n"
	"  --no-progress        no progress line on a terminal\n"
	STREAM_HELP;

/* Gaps reported one by one; the rest are counted. */
#define MAX_GAPS_SHOWN 20

/* Errors go to stderr as they happen, the events to the writer. */
struct sink {
	struct nt_out *out;
	uint64_t gaps_shown;
};

static void __attribute__((noinline))
gap_event(struct sink *s, const struct nt_event *ev)
{
	if (s->gaps_shown++ < MAX_GAPS_SHOWN)
		fprintf(stderr, "ntrace decode: byte 0x%" PRIx64 ": %s\n",
			ev->offset, ev->error ? ev->error : "gap");
	nt_out_event(s->out, ev);
}

/*
 * The decoder's events, in batches (a run its run cache took comes in
 * one call): the gaps' reports apart, each goes on to the writer.
 */
static void on_events(void *ctx, const struct nt_event *ev, size_t n)
{
	struct sink *s = ctx;
	size_t i;

	for (i = 0; i < n; i++) {
		if (ev[i].kind == NT_EV_GAP)
			gap_event(s, &ev[i]);
		else
			nt_out_event(s->out, &ev[i]);
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cmd_decode(int argc, char **argv)
{
	static const struct option opts[] = {
		STREAM_LONG_OPTIONS,
		{ "elf", required_argument, NULL, OPT_ELF },
		{ "raw", required_argument, NULL, OPT_RAW },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "src", required_argument, NULL, OPT_SRC },
		{ "brstack-depth", required_argument, NULL, OPT_DEPTH },
		{ "sample-period", required_argument, NULL, OPT_PERIOD },
		{ "sample-branches", no_argument, NULL, OPT_PERIOD_BRANCHES },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "all-jumps", no_argument, NULL, OPT_ALL_JUMPS },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "ir-depth", required_argument, NULL, OPT_IR_DEPTH },
		{ "rv32", no_argument, NULL, OPT_RV32 },
		{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
		{ "images-complete", no_argument, NULL, OPT_IMAGES_COMPLETE },
		{ "by-source", no_argument, NULL, OPT_BY_SOURCE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const formats[] = {
		[NT_OUT_PCS] = "pcs", [NT_OUT_BRANCHES] = "branches",
		[NT_OUT_BRSTACK] = "brstack", [NT_OUT_FLOW] = "flow",
		[NT_OUT_BLUESPEC] = "bluespec",
	};
	struct nt_decoder_cfg cfg;
	struct nt_out_cfg ocfg = { .format = 0xff };
	struct nt_image *img = nt_image_new();
	const char *out_path = NULL, *err = NULL;
	bool stats = false, progress, nimg = false;
	const struct nt_decoder_stats *st;
	struct nt_decoder *d;
	struct sink sink = { 0 };
	double t0, last_shown;
	uint64_t size, pos = 0;
	uint8_t *chunk;
	size_t n;
	FILE *in, *out;
	unsigned int k;
	int opt, rc;

	if (!img)
		die_data("out of memory");
	nt_decoder_cfg_default(&cfg);
	progress = isatty(STDERR_FILENO);
	while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		if (stream_option(opt, optarg, &cfg.stream))
			continue;
		switch (opt) {
		case OPT_ELF:
		case OPT_RAW:
			cli_add_image(img, optarg, opt == OPT_RAW);
			nimg = true;
			break;
		case OPT_FORMAT:
			for (k = 0; k < sizeof(formats) / sizeof(formats[0]); k++)
				if (!strcmp(optarg, formats[k]))
					ocfg.format = (uint8_t)k;
			if (ocfg.format == 0xff)
				die_usage("unknown --format '%s'", optarg);
			break;
		case 'o':
			out_path = optarg;
			break;
		case OPT_SRC:
			cfg.src = (int)parse_u64("--src", optarg, 4095);
			break;
		case OPT_DEPTH:
			ocfg.brstack_depth = (unsigned int)parse_u64(
				"--brstack-depth", optarg, 1024);
			if (!ocfg.brstack_depth)
				die_usage("--brstack-depth must be 1..1024");
			break;
		case OPT_PERIOD:
			ocfg.sample_period = parse_u64("--sample-period", optarg,
						       UINT64_MAX);
			if (!ocfg.sample_period)
				die_usage("--sample-period must be positive");
			break;
		case OPT_PERIOD_BRANCHES:
			ocfg.sample_branches = true;
			break;
		case OPT_STATS:
			stats = true;
			break;
		case OPT_ALL_JUMPS:
			cfg.all_jumps = true;
			break;
		case OPT_MODE:
			if (!strcmp(optarg, "btm"))
				cfg.mode = NT_MODE_BTM;
			else if (!strcmp(optarg, "htm"))
				cfg.mode = NT_MODE_HTM;
			else
				die_usage("--mode must be btm or htm");
			break;
		case OPT_IR_DEPTH:
			cfg.ir_depth = (uint16_t)parse_u64("--ir-depth", optarg,
							   1024);
			if (!cfg.ir_depth)
				die_usage("--ir-depth must be 1..1024");
			break;
		case OPT_RV32:
			cfg.isa |= NT_ISA_RV32;
			cfg.stream.xlen = 32;
			break;
		case OPT_NO_PROGRESS:
			progress = false;
			break;
		case OPT_IMAGES_COMPLETE:
			cfg.images_complete = true;
			break;
		case OPT_BY_SOURCE:
			cfg.by_source = true;
			break;
		case 'h':
			fputs(decode_help, stdout);
			nt_image_free(img);
			return 0;
		default:
			die_bad_option(argv);
		}
	}
	if (optind + 1 != argc)
		die_usage("expected exactly one TRACE file");
	if (!nimg)
		die_usage("need at least one --elf or --raw image");
	if (ocfg.format == 0xff)
		die_usage("missing --format");
	/* A SRC the messages cannot carry would select nothing, silently. */
	if (cfg.src >= 0 && (uint64_t)cfg.src >> cfg.stream.src_bits)
		die_usage("--src %d needs --src-bits of at least %d", cfg.src,
			  cfg.src ? 64 - __builtin_clzll((uint64_t)cfg.src) : 1);
	if (cfg.by_source && !cfg.stream.src_bits)
		die_usage("--by-source needs --src-bits");
	if (cfg.by_source && cfg.src >= 0)
		die_usage("--by-source decodes every source, --src only one");
	ocfg.isa = cfg.isa;

	/*
	 * The trace is read a chunk at a time, as perf hands over AUX data:
	 * memory does not grow with the trace. nt_decoder_feed() is done
	 * with a chunk when it returns.
	 */
	in = open_input(argv[optind], &size);
	chunk = malloc(INPUT_CHUNK);
	if (!chunk)
		die_data("out of memory");
	out = open_output(out_path);
	sink.out = nt_out_new(&ocfg, out);
	d = nt_decoder_new_batch(&cfg, on_events, &sink, &err);
	if (!sink.out || !d)
		die_usage("%s", err ? err : "cannot set up the output");
	nt_decoder_add_image(d, img, true, 0);

	t0 = last_shown = now();
	while ((n = fread(chunk, 1, INPUT_CHUNK, in)) > 0) {
		nt_decoder_feed(d, chunk, n);
		pos += n;
		if (progress && now() - last_shown > 0.5) {
			last_shown = now();
			if (size)
				fprintf(stderr, "\rdecoding: %3.0f%% (%" PRIu64
					" of %" PRIu64 " bytes)",
					100.0 * (double)pos / (double)size, pos,
					size);
			else
				fprintf(stderr, "\rdecoding: %" PRIu64 " bytes",
					pos);
		}
	}
	if (ferror(in))
		die_data("%s: read error", argv[optind]);
	if (in != stdin)
		fclose(in);
	free(chunk);
	nt_decoder_finish(d);
	if (progress && last_shown != t0)
		fputc('\n', stderr);
	if (sink.gaps_shown > MAX_GAPS_SHOWN)
		fprintf(stderr, "ntrace decode: %" PRIu64 " more gaps not shown\n",
			sink.gaps_shown - MAX_GAPS_SHOWN);
	/* decoded through, so said once per kind and not an error */
	st = nt_decoder_stats(d);
	for (k = 0; k < NT_DEV__COUNT; k++)
		if (st->deviations[k])
			fprintf(stderr, "ntrace decode: byte 0x%" PRIx64
				": warning: %s (%" PRIu64 " in all)\n",
				st->deviation_at[k], nt_deviation_name(k),
				st->deviations[k]);
	if (nt_out_finish(sink.out))
		die_data("%s: write error", out_path ? out_path : "stdout");
	close_output(out, out_path);

	if (stats) {
		double secs = now() - t0;

		fprintf(stderr,
			"messages %" PRIu64 " bytes %" PRIu64 "\n"
			"instructions %" PRIu64 " half-words %" PRIu64
			" transfers %" PRIu64 " traps %" PRIu64 "\n"
			"syncs %" PRIu64 " errors %" PRIu64 " gaps %" PRIu64
			" skipped-messages %" PRIu64 "\n"
			"last timestamp %" PRIu64 "\n"
			"run cache %" PRIu64 " messages (%.1f%%), %" PRIu64
			" in chains\n"
			"decode time %.3f s (%.1f M instructions/s)\n",
			st->msgs, st->bytes, st->insns, st->halfwords,
			st->transfers, st->traps, st->syncs, st->errors,
			st->gaps, st->skipped_msgs, st->last_time,
			st->cached_msgs, st->msgs ? 100.0 *
			(double)st->cached_msgs / (double)st->msgs : 0.0,
			st->chained_msgs, secs,
			secs > 0 ? (double)st->insns / secs / 1e6 : 0.0);
		for (k = 0; k < NT_DEV__COUNT; k++)
			fprintf(stderr, "deviation %s: %" PRIu64 "\n",
				nt_deviation_name(k), st->deviations[k]);
	}
	rc = st->errors || st->gaps ? 1 : 0;
	nt_decoder_free(d);
	nt_out_free(sink.out);
	nt_image_free(img);
	return rc;
}
