// SPDX-License-Identifier: GPL-2.0-only
/*
 * Flow decoder throughput and memory.
 *
 *   bench_decode [-n INSNS] ELF PCS
 *
 * The program's records are replayed through the encoder until the trace
 * holds at least INSNS instructions (default 30M), for three option sets.
 * Each trace is written to a file and decoded in a child process reading
 * 1 MiB at a time, so the child's peak RSS is the decoder's own memory:
 * it is measured on the full trace and on a tenth of it to show that it
 * does not grow with the trace. Rows: events only (a counting callback),
 * with the PC-list writer to /dev/null, and the baseline, the message
 * reader alone over the same bytes.
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

static uint64_t events_insns;

static void count_event(void *ctx, const struct nt_event *ev)
{
	(void)ctx;
	if (ev->kind == NT_EV_INSNS)
		events_insns += ev->ninsn;
}

/* Encode p's records again and again until min_insns have retired. */
static char *make_trace(const struct prog *p, const struct nt_encoder_cfg *cfg,
			uint64_t min_insns, uint64_t *insns, size_t *bytes)
{
	static char path[] = "/tmp/ntrace-bench-decode.XXXXXX";
	char *name = strdup(path);
	const char *err = NULL;
	struct nt_encoder *e = nt_encoder_new(cfg, &err);
	int fd = name ? mkstemp(name) : -1;
	size_t i;

	if (!e || fd < 0)
		die("%s", e ? strerror(errno) : err);
	*insns = 0;
	*bytes = 0;
	nt_encoder_start(e, NT_SYNC_TRACE_ENABLE);
	/* the exit ecall's trap leads back to the entry: one long run */
	while (*insns < min_insns) {
		for (i = 0; i < p->nrecs; i++)
			nt_encoder_retire(e, &p->recs[i]);
		*insns += p->gen.retired;
		{
			size_t len;
			const uint8_t *out = nt_encoder_output(e, &len);

			if (write(fd, out, len) != (ssize_t)len)
				exit(1);
			*bytes += len;
			nt_encoder_consume(e, len);
		}
	}
	nt_encoder_stop(e, NT_EVCODE_TRACE_DISABLED, 0);
	{
		size_t len;
		const uint8_t *out = nt_encoder_output(e, &len);

		if (write(fd, out, len) != (ssize_t)len)
			exit(1);
		*bytes += len;
	}
	close(fd);
	nt_encoder_free(e);
	return name;
}

enum run_kind { RUN_EVENTS, RUN_PCS, RUN_READER };

struct result {
	double secs;
	uint64_t insns;
	long maxrss_kb;
	int ok;
};

/* Decode up to limit bytes of path in a child; report through a pipe. */
static struct result run_child(const struct nt_encoder_cfg *ecfg,
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
		double t0;

		nt_decoder_cfg_default(&cfg);
		cfg.stream = ecfg->stream;
		if (kind == RUN_READER) {
			r = nt_reader_new(&cfg.stream);
		} else if (kind == RUN_PCS) {
			o = nt_out_new(&ocfg, null);
			d = nt_decoder_new(&cfg, nt_out_event, o, &err);
		} else {
			d = nt_decoder_new(&cfg, count_event, NULL, &err);
		}
		if (d)
			nt_decoder_add_image(d, p->img, true, 0);
		t0 = wall_now();
		while (done < limit) {
			size_t want = limit - done < sizeof(chunk) ?
				      limit - done : sizeof(chunk);
			ssize_t n = read(fd, chunk, want);

			if (n <= 0)
				break;
			done += (size_t)n;
			if (r) {
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
		res.secs = wall_now() - t0;
		res.insns = d ? nt_decoder_stats(d)->insns : 0;
		res.ok = d ? !nt_decoder_stats(d)->gaps : 1;
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

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*apply)(struct nt_encoder_cfg *c);
	} sets[] = {
		{ "htm+ir3+repeat-history", os_htm_ir3_rh },
		{ "htm", os_htm_plain },
		{ "btm", os_btm },
	};
	uint64_t min_insns = 30000000;
	char dir[2048], *slash;
	struct prog p;
	size_t k;
	int opt;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt == 'n')
			min_insns = strtoull(optarg, NULL, 0);
		else
			return 2;
	}
	if (optind + 2 != argc) {
		fprintf(stderr, "usage: bench_decode [-n INSNS] ELF PCS\n");
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

	printf("%-24s %-8s %9s %9s %8s %10s %9s %10s\n", "option set", "run",
	       "M insns", "trace MB", "seconds", "M insns/s", "MB/s",
	       "maxrss KB");
	for (k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
		static const char *const names[] = {
			"events", "pcs", "reader",
		};
		struct nt_encoder_cfg cfg;
		uint64_t insns;
		size_t bytes;
		char *path;
		int run;

		nt_encoder_cfg_default(&cfg);
		sets[k].apply(&cfg);
		path = make_trace(&p, &cfg, min_insns, &insns, &bytes);
		for (run = RUN_EVENTS; run <= RUN_READER; run++) {
			struct result r = run_child(&cfg, &p, path, bytes, run);
			double mb = (double)bytes / 1e6;

			printf("%-24s %-8s %9.1f %9.2f %8.3f %10.1f %9.1f %10ld%s\n",
			       sets[k].name, names[run], (double)insns / 1e6, mb,
			       r.secs, run == RUN_READER ? 0.0 :
			       (double)r.insns / r.secs / 1e6, mb / r.secs,
			       r.maxrss_kb, r.ok == 1 ? "" : "  DECODE ERRORS");
		}
		{
			/* the same decoder on a tenth of the trace */
			struct result r = run_child(&cfg, &p, path, bytes / 10,
						    RUN_EVENTS);

			printf("%-24s %-8s %9.1f %9.2f %8.3f %10.1f %9.1f %10ld\n",
			       sets[k].name, "1/10", (double)r.insns / 1e6,
			       (double)bytes / 1e7, r.secs,
			       (double)r.insns / r.secs / 1e6,
			       (double)bytes / 1e7 / r.secs, r.maxrss_kb);
		}
		unlink(path);
		free(path);
	}
	printf("goal: >= 500 M insns/s events only, >= 100 M insns/s with the "
	       "PC list; maxrss the same for the full trace and a tenth\n");
	prog_free(&p);
	return 0;
}
