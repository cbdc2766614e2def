// SPDX-License-Identifier: GPL-2.0-only
/*
 * ntrace dump / ntrace stat: look at N-Trace bytes without program images.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct trace_stats {
	uint64_t msgs[64], bytes[64];
	uint64_t errors[NT_ERR__COUNT];
	uint64_t total_msgs, total_bytes;
	uint64_t halfwords;	/* I-CNT, RCODE 0 and RepeatBranch */
	uint64_t last_branch_icnt;
	uint64_t stream_bytes;
};

static void account(struct trace_stats *s, const struct nt_msg *m)
{
	if (m->err && m->err != NT_ERR_UNKNOWN_TCODE) {
		s->errors[m->err]++;
		return;
	}
	if (m->err)
		s->errors[m->err]++;
	s->msgs[m->tcode]++;
	s->bytes[m->tcode] += m->size;
	s->total_msgs++;
	s->total_bytes += m->size;
	s->halfwords += nt_msg_halfwords(m, &s->last_branch_icnt);
}

static void print_stats(FILE *f, const struct trace_stats *s, uint64_t insns)
{
	unsigned int t;
	uint64_t nerr = 0;

	fprintf(f, "%-24s %10s %12s %10s\n", "message", "count", "bytes",
		"bytes/msg");
	for (t = 0; t < 64; t++) {
		if (!s->msgs[t])
			continue;
		fprintf(f, "%-24s %10" PRIu64 " %12" PRIu64 " %10.2f\n",
			t == NT_TCODE_RESOURCE_FULL ? "ResourceFull" :
			nt_tcode_name(t), s->msgs[t], s->bytes[t],
			(double)s->bytes[t] / (double)s->msgs[t]);
	}
	fprintf(f, "%-24s %10" PRIu64 " %12" PRIu64 "\n", "total",
		s->total_msgs, s->total_bytes);
	fprintf(f, "stream bytes: %" PRIu64 " (%" PRIu64
		" idle or skipped)\n", s->stream_bytes,
		s->stream_bytes - s->total_bytes);
	for (t = 1; t < NT_ERR__COUNT; t++) {
		if (s->errors[t])
			fprintf(f, "errors: %-32s %" PRIu64 "\n",
				nt_err_name(t), s->errors[t]);
		nerr += s->errors[t];
	}
	fprintf(f, "errors: %" PRIu64 "\n", nerr);
	fprintf(f, "I-CNT half-words: %" PRIu64 "\n", s->halfwords);
	if (s->halfwords)
		fprintf(f, "bits per I-CNT half-word: %.4f\n",
			8.0 * (double)s->stream_bytes / (double)s->halfwords);
	if (insns)
		fprintf(f, "bits per instruction: %.4f (%" PRIu64
			" instructions)\n",
			8.0 * (double)s->stream_bytes / (double)insns, insns);
}

/*
 * Where --bytes finds a message's bytes: the chunk being read, or the
 * bytes just before it, kept from the chunks before (a message may start
 * in one and end in the next). The reader returns no message longer
 * than NT_MAX_VENDOR_MSG_BYTES, so that many are enough.
 */
struct recent {
	uint8_t tail[NT_MAX_VENDOR_MSG_BYTES];
	size_t ntail;		/* bytes in tail, the last before the chunk */
	const uint8_t *chunk;
	size_t len;
	uint64_t base;		/* stream offset of chunk[0] */
};

/* The byte at stream offset off, or -1 if it is no longer at hand. */
static int recent_byte(const struct recent *b, uint64_t off)
{
	if (off >= b->base)
		return b->chunk[off - b->base];
	if (b->base - off > b->ntail)
		return -1;
	return b->tail[b->ntail - (b->base - off)];
}

/* The reader is done with the chunk: keep its last bytes. */
static void recent_advance(struct recent *b)
{
	size_t keep = sizeof(b->tail), old;

	if (b->len >= keep) {
		memcpy(b->tail, b->chunk + b->len - keep, keep);
		b->ntail = keep;
	} else {
		old = b->ntail + b->len > keep ? keep - b->len : b->ntail;
		memmove(b->tail, b->tail + b->ntail - old, old);
		memcpy(b->tail + old, b->chunk, b->len);
		b->ntail = old + b->len;
	}
	b->base += b->len;
	b->len = 0;
}

/* Account for, and unless stat_cmd print, every message r has ready. */
static void drain(struct nt_reader *r, struct trace_stats *st, bool stat_cmd,
		  bool show_bytes, const struct recent *rb)
{
	char line[1024];
	struct nt_msg m;

	while (nt_reader_next(r, &m)) {
		account(st, &m);
		if (stat_cmd)
			continue;
		nt_msg_format(&m, line, sizeof(line));
		printf("%08" PRIx64 " %3u  %s", m.offset, m.size, line);
		if (show_bytes && !(m.err && m.err != NT_ERR_UNKNOWN_TCODE)) {
			uint32_t k;

			fputs("  [", stdout);
			for (k = 0; k < m.size; k++) {
				int c = recent_byte(rb, m.offset + k);

				if (k)
					putchar(' ');
				if (c < 0)
					fputs("??", stdout);
				else
					printf("%02x", c);
			}
			fputs("]", stdout);
		}
		putchar('\n');
	}
}

enum { OPT_STATS = OPT_FIRST_PRIVATE, OPT_BYTES, OPT_INSNS, OPT_CHUNK };

static int run(int argc, char **argv, bool stat_cmd)
{
	static const struct option opts[] = {
		STREAM_LONG_OPTIONS,
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "bytes", no_argument, NULL, OPT_BYTES },
		{ "insns", required_argument, NULL, OPT_INSNS },
		{ "chunk", required_argument, NULL, OPT_CHUNK },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct nt_stream_cfg cfg = { .xlen = 64 };
	struct trace_stats st = { 0 };
	bool stats = stat_cmd, show_bytes = false;
	uint64_t insns = 0, size;
	size_t n, chunk = 0;
	struct recent rb = { .ntail = 0 };
	struct nt_reader *r;
	uint8_t *buf;
	FILE *in;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (stream_option(opt, optarg, &cfg))
			continue;
		switch (opt) {
		case OPT_STATS:
			stats = true;
			break;
		case OPT_BYTES:
			show_bytes = true;
			break;
		case OPT_INSNS:
			insns = parse_u64("--insns", optarg, UINT64_MAX);
			break;
		case OPT_CHUNK:
			chunk = parse_u64("--chunk", optarg, 1 << 30);
			if (!chunk)
				die_usage("--chunk must be 1..%u", 1u << 30);
			break;
		case 'h':
			printf("usage: ntrace %s [OPTIONS] TRACE\n\n%s"
			       "options:\n" STREAM_HELP
			       "  --stats              counts per TCODE, bytes, errors%s\n"
			       "  --bytes              show each message's raw bytes\n"
			       "  --insns N            instructions traced, for bits/instruction\n"
			       "  --chunk N            read and feed N bytes at a time (default 1 MiB)\n",
			       stat_cmd ? "stat" : "dump",
			       stat_cmd ? "Message statistics of an N-Trace stream.\n\n" :
			       "Print every message with its byte offset.\n\n",
			       stat_cmd ? " (always on)" : "");
			return 0;
		default:
			die_bad_option(argv);
		}
	}
	if (optind + 1 != argc)
		die_usage("expected exactly one TRACE file");
	/* read as decode reads: memory does not grow with the trace */
	in = open_input(argv[optind], &size);
	r = nt_reader_new(&cfg);
	if (!r)
		die_usage("bad stream configuration");
	if (!chunk)
		chunk = INPUT_CHUNK;
	buf = malloc(chunk);
	if (!buf)
		die_data("out of memory");
	while ((n = fread(buf, 1, chunk, in)) > 0) {
		st.stream_bytes += n;
		rb.chunk = buf;
		rb.len = n;
		nt_reader_feed(r, buf, n);
		drain(r, &st, stat_cmd, show_bytes, &rb);
		recent_advance(&rb);
	}
	if (ferror(in))
		die_data("%s: read error", argv[optind]);
	if (in != stdin)
		fclose(in);
	nt_reader_finish(r);
	drain(r, &st, stat_cmd, show_bytes, &rb);
	nt_reader_free(r);
	free(buf);

	if (stats)
		print_stats(stdout, &st, insns);
	close_output(stdout, NULL);
	for (opt = 1; opt < NT_ERR__COUNT; opt++)
		if (opt != NT_ERR_UNKNOWN_TCODE && st.errors[opt])
			return 1;
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	return run(argc, argv, false);
}

int cmd_stat(int argc, char **argv)
{
	return run(argc, argv, true);
}
