// SPDX-License-Identifier: GPL-2.0-only
/*
 * Flow decoder throughput and memory.
 *
 *   bench_decode [-n INSNS] [-r REPS] [-t TRACE [-s SRC_BITS]] ELF PCS
 *
 * The program's records are replayed through the encoder until the trace
 * holds at least INSNS instructions (default 300M), for three option sets,
 * for two of them again with two sources (two harts through a funnel,
 * SRC 1 bit wide), tracing at once and in turns (one task that moves
 * between the harts), and again with TSTAMP (a time unit a record, as
 * `ntrace encode` stamps them). Or TRACE, an HTM or BTM trace of the ELF
 * without TSTAMP (its SRC SRC_BITS wide, default none), is decoded as it
 * is. Each trace is written to a file and decoded in a
 * child process reading 1 MiB at a time, so the child's peak RSS is the
 * decoder's own memory: it is measured on the full trace and on a tenth
 * of it to show that it does not grow with the trace. Rows: events only
 * (a counting callback per event), the same in batches
 * (nt_decoder_new_batch()), for traces with SRC both again decoded by
 * source (cfg.by_source), events only without the run cache (the
 * general path alone, for comparison), with the PC-list writer to
 * /dev/null (with SRC also by source, as 'ntrace decode --by-source
 * --format pcs' writes it), the message reader alone, a record at a
 * time and in batches of 64 (nt_reader_next_batch()), and the baseline,
 * a sum of every byte read the same way; the /base column is each row's MB/s over the
 * baseline's.
 * Times are the child's CPU time, the best of REPS runs (default 3), the
 * rows taking turns run by run; spread is the slowest run's time over
 * the best's, which shows how much the host's load moved the figures.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "progs.h"

/* messages per nt_reader_next_batch() call in the reader-batch row */
#define MSG_BATCH	64

static uint64_t events_insns;

static void count_event(void *ctx, const struct nt_event *ev)
{
	(void)ctx;
	if (ev->kind == NT_EV_INSNS)
		events_insns += ev->ninsn;
}

static void count_events(void *ctx, const struct nt_event *ev, size_t n)
{
	size_t i;

	(void)ctx;
	for (i = 0; i < n; i++)
		if (ev[i].kind == NT_EV_INSNS)
			events_insns += ev[i].ninsn;
}

/* Trace bytes on their way to the file, written a MiB at a time. */
struct sink {
	int fd;
	size_t len, total;
	uint8_t buf[1 << 20];
};

static void sink_flush(struct sink *k)
{
	if (write(k->fd, k->buf, k->len) != (ssize_t)k->len)
		exit(1);
	k->len = 0;
}

/* Take what e has made so far. */
static void drain(struct nt_encoder *e, struct sink *k)
{
	size_t len;
	const uint8_t *out = nt_encoder_output(e, &len);

	if (k->len + len > sizeof(k->buf))
		sink_flush(k);
	if (len > sizeof(k->buf)) {
		if (write(k->fd, out, len) != (ssize_t)len)
			exit(1);
	} else {
		memcpy(k->buf + k->len, out, len);
		k->len += len;
	}
	k->total += len;
	nt_encoder_consume(e, len);
}

/*
 * Encode p's records again and again until min_insns have retired. With
 * two sources, a second encoder (SRC 1) traces p a third of the way
 * ahead, and each writes what it made after every record, as a funnel
 * merges two harts that trace at once: their messages alternate as
 * finely as they come. With two sources in turns, they trace one task
 * that the scheduler moves to the other hart after every run of p: the
 * encoder it leaves stops (a ProgTraceCorrelation), the one it comes to
 * starts with a sync, as the driver switches them (driver.rst). That is
 * `perf record -e ntrace//u -- ./app` on a board with a funnel.
 */
static char *make_trace(const struct prog *p, const struct nt_encoder_cfg *cfg,
			unsigned int sources, bool turns, uint64_t min_insns,
			uint64_t *insns, size_t *bytes)
{
	static char path[] = "/tmp/ntrace-bench-decode.XXXXXX";
	static struct sink sink;
	char *name = strdup(path);
	const char *err = NULL;
	struct nt_encoder *e[2] = { NULL, NULL };
	size_t i, ahead = p->nrecs / 3;
	unsigned int k;

	sink.fd = name ? mkstemp(name) : -1;
	sink.len = 0;
	sink.total = 0;
	for (k = 0; k < sources; k++) {
		struct nt_encoder_cfg c = *cfg;

		c.src_id = (uint16_t)k;
		e[k] = nt_encoder_new(&c, &err);
		if (!e[k])
			die("%s", err);
		/* in turns, each starts as the task comes to its hart */
		if (!turns)
			nt_encoder_start(e[k], NT_SYNC_TRACE_ENABLE);
	}
	if (sink.fd < 0)
		die("%s", strerror(errno));
	*insns = 0;
	/* the exit ecall's trap leads back to the entry: one long run */
	for (k = 0; turns && *insns < min_insns; k = !k) {
		nt_encoder_start(e[k], NT_SYNC_TRACE_ENABLE);
		for (i = 0; i < p->nrecs; i++) {
			nt_encoder_retire(e[k], &p->recs[i]);
			drain(e[k], &sink);
		}
		nt_encoder_stop(e[k], NT_EVCODE_TRACE_DISABLED, 0);
		drain(e[k], &sink);
		*insns += p->gen.retired;
	}
	while (!turns && *insns < min_insns) {
		for (i = 0; i < p->nrecs; i++) {
			for (k = 0; k < sources; k++) {
				nt_encoder_retire(e[k], &p->recs[k ?
					(i + ahead) % p->nrecs : i]);
				drain(e[k], &sink);
			}
		}
		*insns += sources * p->gen.retired;
	}
	for (k = 0; k < sources; k++) {
		nt_encoder_stop(e[k], NT_EVCODE_TRACE_DISABLED, 0);
		drain(e[k], &sink);
		nt_encoder_free(e[k]);
	}
	sink_flush(&sink);
	close(sink.fd);
	*bytes = sink.total;
	return name;
}

enum run_kind {
	RUN_EVENTS, RUN_BATCH, RUN_BY_SOURCE, RUN_BY_SOURCE_BATCH,
	RUN_NO_CACHE, RUN_PCS, RUN_PCS_BY_SOURCE, RUN_READER, RUN_READER_BATCH,
	RUN_SUM,
	RUN__COUNT
};

struct result {
	double secs, wall;
	double slowest;		/* the slowest run's CPU time */
	uint64_t insns;
	long maxrss_kb;
	int ok;
};

/* Decode up to limit bytes of path in a child; report through a pipe. */
static struct result run_child(const struct nt_stream_cfg *stream,
			       const struct prog *p, const char *path,
			       size_t limit, enum run_kind kind)
{
	struct result res = { 0 };
	int pfd[2];
	pid_t pid;

	if (pipe(pfd))
		exit(1);
	pid = fork();
	if (pid == 0) {
		static uint8_t chunk[1 << 20];
		static struct nt_msg batch[MSG_BATCH];
		struct nt_decoder_cfg cfg;
		struct nt_decoder *d = NULL;
		struct nt_reader *r = NULL;
		struct nt_out *o = NULL;
		struct nt_out_cfg ocfg = { .format = NT_OUT_PCS };
		FILE *null = fopen("/dev/null", "w");
		const char *err = NULL;
		struct rusage ru;
		struct nt_msg m;
		size_t done = 0;
		int fd = open(path, O_RDONLY);
		uint64_t sum = 0;
		double t0, w0;

		nt_decoder_cfg_default(&cfg);
		cfg.stream = *stream;
		if (kind == RUN_SUM) {
			/* nothing but the bytes */
		} else if (kind == RUN_READER || kind == RUN_READER_BATCH) {
			r = nt_reader_new(&cfg.stream);
		} else if (kind == RUN_PCS || kind == RUN_PCS_BY_SOURCE) {
			cfg.by_source = kind == RUN_PCS_BY_SOURCE;
			o = nt_out_new(&ocfg, null);
			d = nt_decoder_new(&cfg, nt_out_event, o, &err);
		} else if (kind == RUN_BATCH || kind == RUN_BY_SOURCE_BATCH) {
			cfg.by_source = kind == RUN_BY_SOURCE_BATCH;
			d = nt_decoder_new_batch(&cfg, count_events, NULL, &err);
		} else {
			cfg.by_source = kind == RUN_BY_SOURCE;
			cfg.run_cache = kind != RUN_NO_CACHE;
			d = nt_decoder_new(&cfg, count_event, NULL, &err);
		}
		if (d)
			nt_decoder_add_image(d, p->img, true, 0);
		t0 = cpu_now();
		w0 = wall_now();
		while (done < limit) {
			size_t want = limit - done < sizeof(chunk) ?
				      limit - done : sizeof(chunk);
			ssize_t n = read(fd, chunk, want);

			if (n <= 0)
				break;
			done += (size_t)n;
			if (kind == RUN_SUM) {
				sum += byte_sum(chunk, (size_t)n);
			} else if (r && kind == RUN_READER_BATCH) {
				nt_reader_feed(r, chunk, (size_t)n);
				while (nt_reader_next_batch(r, batch,
							    MSG_BATCH) == MSG_BATCH)
					;
			} else if (r) {
				nt_reader_feed(r, chunk, (size_t)n);
				while (nt_reader_next(r, &m))
					;
			} else {
				nt_decoder_feed(d, chunk, (size_t)n);
			}
		}
		if (d)
			nt_decoder_finish(d);
		if (o)
			nt_out_finish(o);
		res.secs = cpu_now() - t0;
		res.wall = wall_now() - w0;
		res.insns = d ? nt_decoder_stats(d)->insns : 0;
		res.ok = d ? !nt_decoder_stats(d)->gaps : 1;
		__asm__ volatile("" : : "r"(sum));
		getrusage(RUSAGE_SELF, &ru);
		res.maxrss_kb = ru.ru_maxrss;
		if (write(pfd[1], &res, sizeof(res)) != sizeof(res))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &res, sizeof(res)) != sizeof(res))
		res.ok = -1;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	return res;
}

static void os_htm_plain(struct nt_encoder_cfg *c)
{
	(void)c;
}

static void os_htm_ts(struct nt_encoder_cfg *c)
{
	c->stream.timestamps = true;
}

static void os_btm_ts(struct nt_encoder_cfg *c)
{
	os_btm(c);
	c->stream.timestamps = true;
}

/*
 * Fold run r into best, the fastest of the k runs before it (none when
 * k is 0): least CPU time, the largest peak RSS and the slowest time of
 * all, and not ok if any run was not.
 */
static void keep_best(struct result *best, const struct result *r,
		      unsigned long k)
{
	long rss = best->maxrss_kb;
	double slowest = best->slowest;
	int ok = best->ok;

	if (!k) {
		*best = *r;
		best->slowest = r->secs;
		return;
	}
	if (r->secs < best->secs)
		*best = *r;
	best->maxrss_kb = rss > r->maxrss_kb ? rss : r->maxrss_kb;
	best->slowest = slowest > r->secs ? slowest : r->secs;
	best->ok = ok == 1 ? r->ok : ok;
}

static struct result best_of(unsigned long reps,
			     const struct nt_stream_cfg *stream,
			     const struct prog *p, const char *path,
			     size_t limit, enum run_kind kind)
{
	struct result best = { 0 };
	unsigned long k;

	for (k = 0; k < reps; k++) {
		struct result r = run_child(stream, p, path, limit, kind);

		keep_best(&best, &r, k);
	}
	return best;
}

static void print_row(const char *set, const char *run, double insns,
		      size_t bytes, const struct result *r, double base_mbs)
{
	double mbs = (double)bytes / 1e6 / r->secs;
	char rate[32] = "-";

	if (insns)
		snprintf(rate, sizeof(rate), "%.1f", insns / r->secs / 1e6);
	printf("%-24s %-12s %8.1f %8.2f %7.3f %7.3f %10s %8.1f %6.3f %9ld %6.2f%s\n",
	       set, run, insns / 1e6, (double)bytes / 1e6, r->secs, r->wall,
	       rate, mbs, mbs / base_mbs, r->maxrss_kb, r->slowest / r->secs,
	       r->ok == 1 ? "" : "  DECODE ERRORS");
}

/* The rows of cfg.by_source: for traces with SRC. */
static bool by_source_run(int run)
{
	return run == RUN_BY_SOURCE || run == RUN_BY_SOURCE_BATCH ||
	       run == RUN_PCS_BY_SOURCE;
}

/* All rows for one trace file of bytes bytes. */
static void bench_trace(const char *set, const struct nt_stream_cfg *stream,
			const struct prog *p, const char *path, size_t bytes,
			unsigned long reps)
{
	static const char *const names[RUN__COUNT] = {
		"events", "batch", "by-source", "by-src-batch", "no-cache",
		"pcs", "pcs-by-src", "reader", "reader-batch", "byte-sum",
	};
	struct result res[RUN__COUNT], tenth;
	double base_mbs;
	unsigned long k;
	int run;

	/*
	 * A rep of every row, then the next: a burst of load on the host
	 * then slows one rep of many rows, not every rep of one row.
	 */
	for (k = 0; k < reps; k++)
		for (run = RUN_EVENTS; run <= RUN_SUM; run++)
			if (stream->src_bits || !by_source_run(run)) {
				struct result r = run_child(stream, p, path,
							    bytes, run);

				keep_best(&res[run], &r, k);
			}
	base_mbs = (double)bytes / 1e6 / res[RUN_SUM].secs;
	for (run = RUN_EVENTS; run <= RUN_SUM; run++)
		if (stream->src_bits || !by_source_run(run))
			print_row(set, names[run], run < RUN_READER ?
				  (double)res[run].insns : 0.0, bytes,
				  &res[run], base_mbs);
	/*
	 * The same decoder on a tenth of the trace: cut inside a message,
	 * whose gap at the end is no decoding error.
	 */
	tenth = best_of(reps, stream, p, path, bytes / 10, RUN_EVENTS);
	tenth.ok = 1;
	print_row(set, "1/10", (double)tenth.insns, bytes / 10, &tenth,
		  base_mbs);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*apply)(struct nt_encoder_cfg *c);
		unsigned int sources;	/* 2: SRC 1 bit, through a funnel */
		bool turns;		/* the sources trace one at a time */
	} sets[] = {
		{ "htm+ir3+repeat-history", os_htm_ir3_rh, 1, false },
		{ "htm", os_htm_plain, 1, false },
		{ "btm", os_btm, 1, false },
		{ "htm, 2 sources", os_htm_plain, 2, false },
		{ "btm, 2 sources", os_btm, 2, false },
		{ "htm, 2 in turns", os_htm_plain, 2, true },
		{ "btm, 2 in turns", os_btm, 2, true },
		{ "htm+ts", os_htm_ts, 1, false },
		{ "btm+ts", os_btm_ts, 1, false },
	};
	uint64_t min_insns = 300000000;
	unsigned long reps = 3;
	const char *trace = NULL;
	unsigned int src_bits = 0;
	char dir[2048], *slash;
	struct prog p;
	size_t k;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:s:t:")) != -1) {
		if (opt == 's')
			src_bits = (unsigned int)strtoul(optarg, NULL, 0);
		else if (opt == 'n')
			min_insns = strtoull(optarg, NULL, 0);
		else if (opt == 'r')
			reps = strtoul(optarg, NULL, 0);
		else if (opt == 't')
			trace = optarg;
		else
			return 2;
	}
	if (optind + 2 != argc || !reps) {
		fprintf(stderr, "usage: bench_decode [-n INSNS] [-r REPS] "
			"[-t TRACE [-s SRC_BITS]] ELF PCS\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s", argv[optind]);
	slash = strrchr(dir, '/');
	if (!slash) {
		fprintf(stderr, "bench_decode: give the ELF with a directory\n");
		return 2;
	}
	*slash = '\0';
	if (prog_load(&p, dir, slash + 1, 0))
		die("cannot load %s", argv[optind]);

	printf("# %s: best of %lu, rates use CPU time; /base: MB/s over the "
	       "byte-sum baseline's\n", slash + 1, reps);
	printf("%-24s %-12s %8s %8s %7s %7s %10s %8s %6s %9s %6s\n",
	       "option set", "run", "M insns", "trace MB", "cpu-s", "wall-s",
	       "M insns/s", "MB/s", "/base", "maxrss KB", "spread");
	if (trace) {
		struct nt_stream_cfg stream = { .xlen = 64 };

		if (src_bits > NT_MAX_SRC_BITS)
			die("-s %u: SRC is at most %u bits", src_bits,
			    NT_MAX_SRC_BITS);
		stream.src_bits = (uint8_t)src_bits;
		FILE *f = fopen(trace, "rb");
		long bytes;

		if (!f || fseek(f, 0, SEEK_END) || (bytes = ftell(f)) <= 0)
			die("%s: cannot read", trace);
		fclose(f);
		bench_trace(strrchr(trace, '/') ? strrchr(trace, '/') + 1 : trace,
			    &stream, &p, trace, (size_t)bytes, reps);
	}
	for (k = 0; !trace && k < sizeof(sets) / sizeof(sets[0]); k++) {
		struct nt_encoder_cfg cfg;
		uint64_t insns;
		size_t bytes;
		char *path;

		nt_encoder_cfg_default(&cfg);
		sets[k].apply(&cfg);
		if (sets[k].sources > 1)
			cfg.stream.src_bits = 1;
		path = make_trace(&p, &cfg, sets[k].sources, sets[k].turns,
				  min_insns, &insns, &bytes);
		bench_trace(sets[k].name, &cfg.stream, &p, path, bytes, reps);
		unlink(path);
		free(path);
	}
	printf("goal: >= 1000 M insns/s events only, >= 300 M insns/s with the "
	       "PC list; maxrss the same for the full trace and a tenth\n");
	prog_free(&p);
	return 0;
}
