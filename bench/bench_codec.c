// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reader throughput: an N-Trace file (as 'ntrace encode' writes it) is
 * repeated in memory up to -m MiB and parsed with nt_reader_feed() and
 * nt_reader_next(), once as a single buffer and once in 64 KiB chunks,
 * and with nt_reader_next_batch(), 64 records a call, as a single buffer.
 *
 *   bench_codec [-m MIB] [-r REPS] [--timestamps] [--src-bits N]
 *		 [--extend-addr-msb] [--xlen 32|64] [--label NAME] TRACE
 *
 * Each copy of the file starts with a sync message and ends with a
 * ProgTraceCorrelation, so the concatenation is itself a valid stream and
 * the reader keeps its address and timestamp state across copies. The
 * best of -r repetitions is printed: the machine may be shared. Beside
 * the figures, the baseline: a sum of every byte of the same buffer;
 * the last column is each row's MB/s over the baseline's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "ntrace.h"

#define CHUNK (64 * 1024)

struct count {
	uint64_t msgs, errs, icnt;
};

/* messages per nt_reader_next_batch() call in the whole-batch row */
#define BATCH 64

static void count(struct count *c, const struct nt_msg *m)
{
	c->msgs++;
	if (m->err)
		c->errs++;
	c->icnt += m->icnt;
}

/* Pull everything the reader has; icnt keeps the fields live. */
static void drain(struct nt_reader *r, struct count *c, bool batch)
{
	static struct nt_msg m[BATCH];
	size_t n, i;

	if (!batch) {
		while (nt_reader_next(r, &m[0]))
			count(c, &m[0]);
		return;
	}
	do {
		n = nt_reader_next_batch(r, m, BATCH);
		for (i = 0; i < n; i++)
			count(c, &m[i]);
	} while (n == BATCH);
}

static void parse(const struct nt_stream_cfg *cfg, const uint8_t *buf,
		  size_t len, size_t chunk, bool batch, struct count *c)
{
	struct nt_reader *r = nt_reader_new(cfg);
	size_t off;

	if (!r)
		die("bad stream configuration");
	memset(c, 0, sizeof(*c));
	for (off = 0; off < len; off += chunk) {
		nt_reader_feed(r, buf + off, len - off < chunk ? len - off
							      : chunk);
		drain(r, c, batch);
	}
	nt_reader_finish(r);
	drain(r, c, batch);
	nt_reader_free(r);
}

struct timing {
	double cpu, wall;
};

static void keep_best(struct timing *best, double cpu0, double wall0)
{
	double cpu = cpu_now() - cpu0, wall = wall_now() - wall0;

	if (!best->cpu || cpu < best->cpu) {
		best->cpu = cpu;
		best->wall = wall;
	}
}

/* base: the byte-sum row's timing; the last column is the rate over its */
static void row(const char *label, const char *how, size_t len,
		uint64_t msgs, const struct timing *t, const struct timing *base)
{
	char rate[32] = "-";

	if (msgs)
		snprintf(rate, sizeof(rate), "%.2f", (double)msgs / t->cpu / 1e6);
	printf("%-22s %-14s %8.1f %7.3f %7.3f %8.1f %8s %8.3f\n", label, how,
	       (double)len / (1 << 20), t->cpu, t->wall,
	       (double)len / t->cpu / 1e6, rate, base->cpu / t->cpu);
}

static void usage(void)
{
	fputs("usage: bench_codec [-m MIB] [-r REPS] [--timestamps] [--src-bits N]\n"
	      "                   [--extend-addr-msb] [--xlen 32|64] [--label NAME] TRACE\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	struct nt_stream_cfg cfg = { .xlen = 64 };
	const char *label = NULL, *path = NULL;
	unsigned long mib = 256, reps = 3, k;
	struct count one, whole, batched, chunked;
	struct timing tb = { 0 }, tw = { 0 }, tbatch = { 0 }, tc = { 0 };
	uint64_t copies;
	uint8_t *file, *buf;
	size_t flen, len, off;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--timestamps")) {
			cfg.timestamps = true;
		} else if (!strcmp(a, "--extend-addr-msb")) {
			cfg.extend_addr_msb = true;
		} else if (i + 1 < argc && !strcmp(a, "--src-bits")) {
			cfg.src_bits = (uint8_t)strtoul(argv[++i], NULL, 0);
		} else if (i + 1 < argc && !strcmp(a, "--xlen")) {
			cfg.xlen = (uint8_t)strtoul(argv[++i], NULL, 0);
		} else if (i + 1 < argc && !strcmp(a, "--label")) {
			label = argv[++i];
		} else if (i + 1 < argc && !strcmp(a, "-m")) {
			mib = strtoul(argv[++i], NULL, 0);
		} else if (i + 1 < argc && !strcmp(a, "-r")) {
			reps = strtoul(argv[++i], NULL, 0);
		} else if (a[0] == '-' || path) {
			usage();
		} else {
			path = a;
		}
	}
	if (!path || !mib || !reps)
		usage();
	if (!label)
		label = path;

	file = slurp(path, &flen);
	if (!flen)
		die("%s: empty", path);
	/* a stream that does not parse cleanly would time the error path */
	parse(&cfg, file, flen, flen, false, &one);
	if (one.errs)
		die("%s: %" PRIu64 " error records: wrong stream options?",
		    path, one.errs);

	copies = ((uint64_t)mib << 20) / flen + 1;
	len = copies * flen;
	buf = malloc(len);
	if (!buf)
		die("out of memory for %zu bytes", len);
	for (off = 0; off < len; off += flen)
		memcpy(buf + off, file, flen);

	for (k = 0; k < reps; k++) {
		double c0 = cpu_now(), w0 = wall_now();

		byte_sum(buf, len);
		keep_best(&tb, c0, w0);

		c0 = cpu_now();
		w0 = wall_now();
		parse(&cfg, buf, len, len, false, &whole);
		keep_best(&tw, c0, w0);

		c0 = cpu_now();
		w0 = wall_now();
		parse(&cfg, buf, len, len, true, &batched);
		keep_best(&tbatch, c0, w0);

		c0 = cpu_now();
		w0 = wall_now();
		parse(&cfg, buf, len, CHUNK, false, &chunked);
		keep_best(&tc, c0, w0);
	}
	if (whole.msgs != copies * one.msgs || whole.errs ||
	    chunked.msgs != whole.msgs || chunked.errs ||
	    chunked.icnt != whole.icnt || batched.msgs != whole.msgs ||
	    batched.errs || batched.icnt != whole.icnt)
		die("%s: whole %" PRIu64 "/%" PRIu64 " chunked %" PRIu64 "/%"
		    PRIu64 " messages/errors, expected %" PRIu64, path,
		    whole.msgs, whole.errs, chunked.msgs, chunked.errs,
		    copies * one.msgs);

	printf("# %s: %zu bytes x %" PRIu64 " copies, %" PRIu64
	       " messages, %.2f bytes/message; best of %lu, rates use CPU time\n",
	       path, flen, copies, whole.msgs,
	       (double)len / (double)whole.msgs, reps);
	printf("%-22s %-14s %8s %7s %7s %8s %8s %8s\n", "stream", "how", "MiB",
	       "cpu-s", "wall-s", "MB/s", "Mmsg/s", "/base");
	row(label, "baseline-sum", len, 0, &tb, &tb);
	row(label, "whole", len, whole.msgs, &tw, &tb);
	row(label, "whole-batch", len, batched.msgs, &tbatch, &tb);
	row(label, "chunks-64KiB", len, chunked.msgs, &tc, &tb);
	free(buf);
	free(file);
	return 0;
}
