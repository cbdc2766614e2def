// SPDX-License-Identifier: GPL-2.0
/*
 * perf_aux: the N-Trace byte stream of a perf.data file that perf record
 * made with the ntrace PMU, for the host's ntrace decoder. Host tool of
 * selftests/ntrace/perf-test.
 *
 * perf keeps the AUX data as PERF_RECORD_AUXTRACE records: a header,
 * then "size" bytes of one AUX buffer, from "offset" in the buffer's
 * running byte count, padded with zeros to 8 bytes. Zeros are not
 * N-Trace idle bytes, and the bytes of one session may sit in the AUX
 * buffer of any of its events, so the stream is put together from the
 * PERF_RECORD_AUX records instead: in time order, each names the bytes
 * [aux_offset, aux_offset + aux_size) of the buffer of its event (its
 * CPU, from the sample_id); in overwrite (snapshot) mode the record's
 * offset is where its bytes end. What no AUXTRACE record holds (the
 * older bytes of a snapshot) is counted and left out.
 *
 * Usage: perf_aux [-v] PERF.DATA OUT   write the stream to OUT, print a
 *                                     summary (and -v: every record)
 *        perf_aux -i PERF.DATA        print the AUXTRACE_INFO words
 *        perf_aux -d AT,LEN PERF.DATA OUT
 *                                     write the stream to OUT.aux and a
 *                                     copy of PERF.DATA to OUT whose
 *                                     stream bytes [AT, AT + LEN) are
 *                                     inverted: damage where perf's
 *                                     decoder must report it
 *        perf_aux -2 PERF.DATA OUT    write a copy of PERF.DATA whose
 *                                     first PERF_RECORD_AUX is there
 *                                     twice, as a perf without patch
 *                                     0013 may write it; for perf_aux
 *                                     only (the feature sections after
 *                                     the data are not moved)
 *        perf_aux -l PERF.DATA OUT    write a copy of PERF.DATA whose
 *                                     PERF_RECORD_AUX records come as
 *                                     late as their order allows: each
 *                                     one 1 ns before the next, as if
 *                                     every drain's record were written
 *                                     long after it read the sink
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PERF_MAGIC2		0x32454c4946524550ULL	/* "PERFILE2" */
#define REC_AUX			11
#define REC_AUXTRACE_INFO	70
#define REC_AUXTRACE		71
#define REC_HEADER_SIZE		8
#define AUXTRACE_HDR_SIZE	48

#define SAMPLE_TID		(1ULL << 1)
#define SAMPLE_TIME		(1ULL << 2)
#define SAMPLE_ID		(1ULL << 6)
#define SAMPLE_CPU		(1ULL << 7)
#define SAMPLE_STREAM_ID	(1ULL << 9)
#define SAMPLE_IDENTIFIER	(1ULL << 16)
#define ATTR_SAMPLE_ID_ALL	(1ULL << 18)
#define AUX_FLAG_OVERWRITE	0x2ULL

struct trace_rec {		/* PERF_RECORD_AUXTRACE */
	uint64_t offset, size;
	long long pos;		/* of the payload in the file */
	int cpu;
};

struct aux_rec {		/* PERF_RECORD_AUX */
	uint64_t offset, size, flags, time;
	long long time_pos;	/* of the time in the file, or -1 */
	int cpu;
	unsigned int seq;	/* file order, for equal times */
};

static FILE *in;
static const char *in_name;

static void __attribute__((noreturn)) die(const char *what)
{
	fprintf(stderr, "perf_aux: %s: %s\n", in_name, what);
	exit(2);
}

static void read_at(long long pos, void *buf, size_t len)
{
	if (fseeko(in, pos, SEEK_SET) || fread(buf, 1, len, in) != len)
		die("short read");
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static int by_time(const void *a, const void *b)
{
	const struct aux_rec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct buffer_end {		/* how far the AUX records of a buffer got */
	int cpu;
	uint64_t end;
};

/* Append len bytes of the input from pos to out. */
static void copy_out(FILE *out, long long pos, uint64_t len)
{
	unsigned char buf[65536];

	while (len) {
		size_t n = len < sizeof(buf) ? (size_t)len : sizeof(buf);

		read_at(pos, buf, n);
		if (fwrite(buf, 1, n, out) != n)
			die("write failed");
		pos += (long long)n;
		len -= n;
	}
}

static long long input_size(void)
{
	long long size;

	if (fseeko(in, 0, SEEK_END) || (size = ftello(in)) < 0)
		die("cannot size the file");
	return size;
}

/*
 * A copy of the input at path whose record of size bytes at pos is
 * there twice; data_len is the input's data section size.
 */
static void write_twice(const char *path, long long pos, uint16_t size,
			uint64_t data_len)
{
	long long file_len = input_size();
	unsigned char patched[8];
	FILE *out;

	out = fopen(path, "wb");
	if (!out)
		die(strerror(errno));
	copy_out(out, 0, (uint64_t)(pos + size));
	copy_out(out, pos, size);
	copy_out(out, pos + size, (uint64_t)(file_len - pos - size));
	/* the data section's size, in the file header */
	data_len += size;
	memcpy(patched, &data_len, sizeof(patched));
	if (fseeko(out, 48, SEEK_SET) ||
	    fwrite(patched, 1, sizeof(patched), out) != sizeof(patched) ||
	    fclose(out))
		die("write failed");
}

/*
 * A copy of the input at path in which each of the na AUX records
 * (sorted by time) is timed 1 ns before the next one.
 */
static void write_late(const char *path, const struct aux_rec *a, size_t na)
{
	FILE *out = fopen(path, "wb");
	size_t i;

	if (!out)
		die(strerror(errno));
	copy_out(out, 0, (uint64_t)input_size());
	for (i = 0; i + 1 < na; i++) {
		uint64_t late = a[i + 1].time - 1;

		if (a[i].time_pos < 0 || a[i + 1].time <= a[i].time + 1)
			continue;
		if (fseeko(out, (off_t)a[i].time_pos, SEEK_SET) ||
		    fwrite(&late, 1, sizeof(late), out) != sizeof(late))
			die("write failed");
	}
	if (fclose(out))
		die("write failed");
}

static void *grow(void *p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return p;
	while (*cap <= n)
		*cap = *cap ? *cap * 2 : 64;
	p = realloc(p, *cap * elem);
	if (!p)
		die("out of memory");
	return p;
}

/*
 * The byte at pos of the buffer of cpu comes from the last AUXTRACE
 * record of that buffer that starts at or before pos and covers it: a
 * record's zero padding lies under the start of the next one.
 */
static const struct trace_rec *holder(const struct trace_rec *t, size_t nt,
				      int cpu, uint64_t pos, uint64_t *avail)
{
	const struct trace_rec *best = NULL;
	uint64_t next = UINT64_MAX;
	size_t i;

	for (i = 0; i < nt; i++) {
		if (t[i].cpu != cpu)
			continue;
		if (t[i].offset <= pos && pos < t[i].offset + t[i].size &&
		    (!best || t[i].offset >= best->offset))
			best = &t[i];
	}
	/* how far it holds the byte stream: up to the next record's start */
	for (i = 0; i < nt; i++)
		if (t[i].cpu == cpu && t[i].offset > pos && t[i].offset < next)
			next = t[i].offset;
	if (best) {
		uint64_t end = best->offset + best->size;

		*avail = (next < end ? next : end) - pos;
	} else {
		*avail = next == UINT64_MAX ? UINT64_MAX : next - pos;
	}
	return best;
}

int main(int argc, char **argv)
{
	unsigned char fh[104], rh[REC_HEADER_SIZE], *rec = NULL, *attrs;
	uint64_t attr_size, attrs_off, attrs_len, data_off, data_len;
	uint64_t sample_type = 0, pmu_type = UINT64_MAX, flags_or = 0;
	uint64_t written = 0, missing = 0, info_words = 0, *info = NULL;
	struct trace_rec *t = NULL;
	struct aux_rec *a = NULL;
	struct buffer_end *ends = NULL;
	size_t nt = 0, na = 0, capt = 0, capa = 0, reclen = 0, i;
	size_t nends = 0, capends = 0, e;
	int verbose = 0, info_only = 0, have_ntrace = 0, one_buffer;
	uint64_t dmg_at = 0, dmg_len = 0, ndmg = 0, *dmg_pos = NULL;
	int twice = 0, late = 0;
	long long pos, end, first_aux = -1;
	uint16_t first_aux_size = 0;
	FILE *out = NULL;
	unsigned int k;

	while (argc > 1 && argv[1][0] == '-') {
		if (!strcmp(argv[1], "-v"))
			verbose = 1;
		else if (!strcmp(argv[1], "-i"))
			info_only = 1;
		else if (!strcmp(argv[1], "-2"))
			twice = 1;
		else if (!strcmp(argv[1], "-l"))
			late = 1;
		else if (!strcmp(argv[1], "-d") && argc > 2 &&
			 sscanf(argv[2], "%" SCNu64 ",%" SCNu64, &dmg_at,
				&dmg_len) == 2 && dmg_len && dmg_len <= 4096) {
			argc--, argv++;
		} else {
			break;
		}
		argc--, argv++;
	}
	if (argc != (info_only ? 2 : 3)) {
		fprintf(stderr, "usage: perf_aux [-v] PERF.DATA OUT | perf_aux -i PERF.DATA |\n"
			"       perf_aux -d AT,LEN PERF.DATA OUT | perf_aux -2 PERF.DATA OUT |\n"
			"       perf_aux -l PERF.DATA OUT\n");
		return 2;
	}
	if (dmg_len) {
		dmg_pos = calloc(dmg_len, sizeof(*dmg_pos));
		if (!dmg_pos)
			die("out of memory");
	}
	in_name = argv[1];
	in = fopen(in_name, "rb");
	if (!in)
		die(strerror(errno));

	read_at(0, fh, sizeof(fh));
	if (get64(fh) != PERF_MAGIC2)
		die("not a little-endian perf.data (PERFILE2) file");
	attr_size = get64(fh + 16);
	attrs_off = get64(fh + 24);
	attrs_len = get64(fh + 32);
	data_off = get64(fh + 40);
	data_len = get64(fh + 48);
	if (attr_size < 64 + 16 || attrs_len % attr_size || attrs_len > 1 << 20)
		die("bad attribute section");

	attrs = malloc(attrs_len ? attrs_len : 1);
	if (!attrs)
		die("out of memory");
	read_at(attrs_off, attrs, attrs_len);

	pos = data_off;
	end = data_off + data_len;
	for (k = 0; pos < end; k++) {
		uint32_t type;
		uint16_t size;

		read_at(pos, rh, sizeof(rh));
		type = get32(rh);
		size = rh[6] | rh[7] << 8;
		if (size < REC_HEADER_SIZE || pos + size > end)
			die("bad record size");
		rec = grow(rec, &reclen, size, 1);
		read_at(pos, rec, size);

		if (type == REC_AUXTRACE_INFO) {
			if (size < 16 + 8 * 2 || get32(rec + 8) != 8)
				die("AUXTRACE_INFO of another type than RISC-V N-Trace (8)");
			info_words = (size - 16) / 8;
			info = calloc(info_words, 8);
			if (!info)
				die("out of memory");
			memcpy(info, rec + 16, info_words * 8);
			pmu_type = info[1];
			have_ntrace = 1;
		} else if (type == REC_AUXTRACE) {
			if (size != AUXTRACE_HDR_SIZE)
				die("bad AUXTRACE record");
			t = grow(t, &capt, nt, sizeof(*t));
			t[nt].size = get64(rec + 8);
			t[nt].offset = get64(rec + 16);
			t[nt].pos = pos + size;
			t[nt].cpu = (int)get32(rec + 40);
			if (verbose)
				printf("AUXTRACE size %#" PRIx64 " offset %#" PRIx64
				       " idx %u tid %d cpu %d\n", t[nt].size,
				       t[nt].offset, get32(rec + 32),
				       (int)get32(rec + 36), t[nt].cpu);
			pos += t[nt].size;
			nt++;
		} else if (type == REC_AUX) {
			size_t at = REC_HEADER_SIZE + 24;

			if (size < at)
				die("bad AUX record");
			if (first_aux < 0) {
				first_aux = pos;
				first_aux_size = size;
			}
			a = grow(a, &capa, na, sizeof(*a));
			a[na].offset = get64(rec + 8);
			a[na].size = get64(rec + 16);
			a[na].flags = get64(rec + 24);
			/* in overwrite mode the offset is where the bytes end */
			if (a[na].flags & AUX_FLAG_OVERWRITE) {
				if (a[na].size > a[na].offset)
					die("bad overwrite-mode AUX record");
				a[na].offset -= a[na].size;
			}
			a[na].time = 0;
			a[na].time_pos = -1;
			a[na].cpu = -1;
			a[na].seq = k;
			/* the sample_id of the ntrace event (sample_id_all) */
			if (sample_type & SAMPLE_TID)
				at += 8;
			if (sample_type & SAMPLE_TIME) {
				if (at + 8 <= size) {
					a[na].time = get64(rec + at);
					a[na].time_pos = pos + (long long)at;
				}
				at += 8;
			}
			if (sample_type & SAMPLE_ID)
				at += 8;
			if (sample_type & SAMPLE_STREAM_ID)
				at += 8;
			if ((sample_type & SAMPLE_CPU) && at + 8 <= size)
				a[na].cpu = (int)get32(rec + at);
			flags_or |= a[na].flags;
			if (verbose)
				printf("AUX offset %#" PRIx64 " size %#" PRIx64
				       " flags %#" PRIx64 " time %" PRIu64 " cpu %d\n",
				       a[na].offset, a[na].size, a[na].flags,
				       a[na].time, a[na].cpu);
			na++;
		}
		pos += size;

		/* the attribute of the ntrace event, once its type is known */
		if (have_ntrace == 1) {
			for (i = 0; i < attrs_len / attr_size; i++) {
				const unsigned char *at = attrs + i * attr_size;

				if (get32(at) != pmu_type)
					continue;
				if (!(get64(at + 40) & ATTR_SAMPLE_ID_ALL))
					die("the ntrace event has no sample_id_all");
				sample_type = get64(at + 24);
				break;
			}
			if (i == attrs_len / attr_size)
				die("no attribute of the ntrace PMU's type");
			have_ntrace = 2;
		}
	}

	if (twice) {
		if (first_aux < 0)
			die("no PERF_RECORD_AUX record");
		write_twice(argv[2], first_aux, first_aux_size, data_len);
	} else if (late) {
		qsort(a, na, sizeof(*a), by_time);
		write_late(argv[2], a, na);
	} else if (info_only) {
		if (!info)
			die("no AUXTRACE_INFO record");
		for (i = 0; i < info_words; i++)
			printf("%zu %#" PRIx64 "\n", i, info[i]);
	}
	if (twice || late || info_only) {
		free(t);
		free(a);
		free(rec);
		free(attrs);
		free(info);
		return 0;
	}
	if (!info)
		die("no AUXTRACE_INFO record");

	if (dmg_len) {
		char *aux_name = malloc(strlen(argv[2]) + 5);

		if (!aux_name)
			die("out of memory");
		sprintf(aux_name, "%s.aux", argv[2]);
		out = fopen(aux_name, "wb");
		free(aux_name);
	} else {
		out = fopen(argv[2], "wb");
	}
	if (!out)
		die(strerror(errno));
	/* one buffer: the AUX records need not say which */
	one_buffer = 1;
	for (i = 1; i < nt; i++)
		if (t[i].cpu != t[0].cpu)
			one_buffer = 0;
	qsort(a, na, sizeof(*a), by_time);
	for (i = 0; i < na; i++) {
		uint64_t p = a[i].offset, stop = a[i].offset + a[i].size;
		int cpu = one_buffer && nt ? t[0].cpu : a[i].cpu;

		/*
		 * Outside snapshot mode each byte of a buffer is named once, in
		 * order: a record that goes back is one perf wrote twice, and
		 * its bytes would be decoded twice.
		 */
		for (e = 0; e < nends && ends[e].cpu != cpu; e++)
			;
		if (e == nends) {
			ends = grow(ends, &capends, nends, sizeof(*ends));
			ends[nends].cpu = cpu;
			ends[nends++].end = 0;
		}
		if (!(a[i].flags & AUX_FLAG_OVERWRITE)) {
			if (p < ends[e].end) {
				char why[160];

				snprintf(why, sizeof(why),
					 "the AUX record of bytes %#" PRIx64 "..%#" PRIx64
					 " of buffer %d (time %" PRIu64 ") goes back before %#" PRIx64
					 ": a record written twice",
					 p, stop, cpu, a[i].time, ends[e].end);
				die(why);
			}
			ends[e].end = stop;
		}

		while (p < stop) {
			uint64_t avail, n;
			const struct trace_rec *h = holder(t, nt, cpu, p, &avail);
			unsigned char buf[65536];

			n = stop - p;
			if (n > avail)
				n = avail;
			if (!h) {
				missing += n;
				p += n;
				continue;
			}
			if (n > sizeof(buf))
				n = sizeof(buf);
			read_at(h->pos + (p - h->offset), buf, n);
			if (fwrite(buf, 1, n, out) != n)
				die("write failed");
			/* where in the file the bytes to damage are */
			for (k = 0; dmg_len && k < n; k++)
				if (written + k >= dmg_at &&
				    written + k < dmg_at + dmg_len)
					dmg_pos[ndmg++] = h->pos + (p - h->offset) + k;
			written += n;
			p += n;
		}
	}
	if (fclose(out))
		die("write failed");
	if (dmg_len) {
		FILE *copy = fopen(argv[2], "wb");

		if (!copy || ndmg != dmg_len)
			die(copy ? "the damage lies beyond the stream" : strerror(errno));
		copy_out(copy, 0, (uint64_t)input_size());
		for (k = 0; k < ndmg; k++) {
			unsigned char b;

			read_at((long long)dmg_pos[k], &b, 1);
			b = (unsigned char)~b;
			if (fseeko(copy, (off_t)dmg_pos[k], SEEK_SET) ||
			    fwrite(&b, 1, 1, copy) != 1)
				die("write failed");
		}
		if (fclose(copy))
			die("write failed");
		free(dmg_pos);
	}
	free(t);
	free(a);
	free(ends);
	free(rec);
	free(attrs);
	free(info);
	printf("info %" PRIu64 " words, %zu AUXTRACE, %zu AUX records, flags %#" PRIx64
	       ", %" PRIu64 " bytes out, %" PRIu64 " not in the file\n",
	       info_words, nt, na, flags_or, written, missing);
	return 0;
}
