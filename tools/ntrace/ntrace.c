// SPDX-License-Identifier: GPL-2.0-only
/*
 * ntrace: command line front end of libntrace.
 *
 * Exit status: 0 success, 1 bad input data, 2 bad usage.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ntrace.h"
#include "bluespec.h"
#include "cli.h"

static const char *prog = "ntrace";

/*
 * An output file is written under a temporary name and renamed when
 * complete, so a run that fails leaves no truncated file behind.
 */
static char *out_tmp;

static void drop_partial_output(void)
{
	if (out_tmp) {
		unlink(out_tmp);
		free(out_tmp);
		out_tmp = NULL;
	}
}

void die_usage(const char *fmt, ...)
{
	va_list ap;

	drop_partial_output();

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try '%s --help')\n", prog);
	exit(2);
}

void die_data(const char *fmt, ...)
{
	va_list ap;

	drop_partial_output();
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* getopt's own message is off (opterr = 0): one line, ours, names it. */
void die_bad_option(char **argv)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";

	if (optopt && optopt < 0x100 && arg[0] == '-' && arg[1] != '-')
		die_usage("unknown option or missing argument: '-%c'", optopt);
	die_usage("unknown option or missing argument: '%s'", arg);
}

/* A whole unsigned number, decimal or 0x...; false if s is not one. */
static bool scan_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && !*end;
}

uint64_t parse_u64(const char *what, const char *s, uint64_t max)
{
	uint64_t v;

	if (!s || !*s || *s == '-')
		die_usage("%s: '%s' is not a number", what, s ? s : "");
	if (!scan_u64(s, &v) || v > max)
		die_usage("%s: '%s' is not a number in 0..%" PRIu64, what, s,
			  max);
	return v;
}

FILE *open_input(const char *path, uint64_t *size)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	struct stat st;

	if (!f)
		die_data("%s: %s", path, strerror(errno));
	*size = !fstat(fileno(f), &st) && S_ISREG(st.st_mode) ?
		(uint64_t)st.st_size : 0;
	return f;
}

void *read_whole_file(const char *path, size_t *len)
{
	uint64_t size;
	FILE *f = open_input(path, &size);
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf;

	buf = malloc(cap);
	if (!buf)
		die_data("out of memory");
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (n < cap) {
			if (ferror(f))
				die_data("%s: read error", path);
			break;
		}
		cap *= 2;
		buf = realloc(buf, cap);
		if (!buf)
			die_data("out of memory");
	}
	if (f != stdin)
		fclose(f);
	*len = n;
	return buf;
}

FILE *open_output(const char *path)
{
	struct stat st;
	size_t n;
	FILE *f;
	int fd;

	if (!path || !strcmp(path, "-"))
		return stdout;
	/*
	 * /dev/null, a FIFO, a terminal, a symlink: written in place, never
	 * replaced.
	 */
	if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
		f = fopen(path, "wb");
		if (!f)
			die_data("%s: %s", path, strerror(errno));
		return f;
	}
	n = strlen(path) + sizeof(".XXXXXX");
	out_tmp = malloc(n);
	if (!out_tmp)
		die_data("out of memory");
	snprintf(out_tmp, n, "%s.XXXXXX", path);
	fd = mkstemp(out_tmp);
	if (fd < 0) {
		free(out_tmp);
		out_tmp = NULL;
		die_data("%s: %s", path, strerror(errno));
	}
	/* mkstemp's 0600 would outlive the rename: give what fopen gives. */
	{
		mode_t mask = umask(0);

		umask(mask);
		fchmod(fd, 0666 & ~mask);
	}
	f = fdopen(fd, "wb");
	if (!f)
		die_data("%s: %s", path, strerror(errno));
	return f;
}

void close_output(FILE *f, const char *path)
{
	if (fflush(f) || ferror(f) || (f != stdout && fclose(f)))
		die_data("%s: write error", path ? path : "stdout");
	if (f != stdout && out_tmp) {
		if (rename(out_tmp, path))
			die_data("%s: %s", path, strerror(errno));
		free(out_tmp);
		out_tmp = NULL;
	}
}

/* A bias: a number as parse_u64() takes it, with nothing before it. */
static bool is_number(const char *s)
{
	uint64_t v;

	return *s != '+' && !isspace((unsigned char)*s) && scan_u64(s, &v);
}

/*
 * PATH[@ADDR]: an ELF moved by ADDR, or a raw binary loaded at ADDR. An
 * '@' followed by something other than a number is part of the path.
 */
void cli_add_image(struct nt_image *img, const char *spec, bool raw)
{
	char path[4096];
	const char *at = strrchr(spec, '@');
	uint64_t addr = 0;
	const char *err = NULL;
	size_t n;

	if (at && !raw && !is_number(at + 1))
		at = NULL;
	n = at ? (size_t)(at - spec) : strlen(spec);

	if (n >= sizeof(path))
		die_usage("image path too long");
	memcpy(path, spec, n);
	path[n] = '\0';
	if (at)
		addr = parse_u64(raw ? "--raw FILE@ADDR" : "--elf PROG@BIAS",
				 at + 1, UINT64_MAX);
	else if (raw)
		die_usage("--raw needs FILE@ADDR");
	if ((raw ? nt_image_add_raw(img, path, addr, &err) :
		   nt_image_add_elf(img, path, addr, &err)))
		die_data("%s: %s", path, err);
}

/* Options shared by every command that reads N-Trace bytes. */
int stream_option(int opt, const char *arg, struct nt_stream_cfg *cfg)
{
	switch (opt) {
	case OPT_SRC_BITS:
		cfg->src_bits = (uint8_t)parse_u64("--src-bits", arg,
						   NT_MAX_SRC_BITS);
		return 1;
	case OPT_TIMESTAMPS:
		cfg->timestamps = true;
		return 1;
	case OPT_EXTEND_ADDR:
		cfg->extend_addr_msb = true;
		return 1;
	case OPT_XLEN:
		cfg->xlen = (uint8_t)parse_u64("--xlen", arg, 64);
		if (cfg->xlen != 32 && cfg->xlen != 64)
			die_usage("--xlen must be 32 or 64");
		return 1;
	case OPT_QUIRKS:
		if (!strcmp(arg, "sifive"))
			cfg->quirks = NT_QUIRK_SIFIVE;
		else if (!strcmp(arg, "none"))
			cfg->quirks = 0;
		else
			die_usage("--quirks must be sifive or none");
		return 1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ntrace COMMAND [OPTIONS] ...\n"
		"\n"
		"commands:\n"
		"  dump TRACE       one line per message with byte offsets\n"
		"  stat TRACE       messages per kind, bytes, bits per instruction\n"
		"  encode           encode executed PCs (or a Bluespec trace) to N-Trace\n"
		"  decode           reconstruct the executed instructions from N-Trace\n"
		"  bluespec         write a Bluespec tandem trace from executed PCs\n"
		"\n"
		"'ntrace COMMAND --help' describes each command's options.\n");
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "dump", cmd_dump },
		{ "stat", cmd_stat },
		{ "encode", cmd_encode },
		{ "decode", cmd_decode },
		{ "bluespec", cmd_bluespec },
	};
	size_t i;

	if (argc < 2)
		die_usage("missing command");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	opterr = 0;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (!strcmp(argv[1], cmds[i].name)) {
			static char name[64];

			snprintf(name, sizeof(name), "ntrace %s", cmds[i].name);
			prog = name;
			return cmds[i].fn(argc - 1, argv + 1);
		}
	}
	die_usage("unknown command '%s'", argv[1]);
	return 2;
}
