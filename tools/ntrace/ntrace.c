// SPDX-License-Identifier: GPL-2.0-only
/*
 * ntrace: command line front end of libntrace.
 *
 * Exit status: 0 success, 1 bad input data, 2 bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ntrace.h"
#include "bluespec.h"
#include "cli.h"

static const char *prog = "ntrace";

void die_usage(const char *fmt, ...)
{
	va_list ap;

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

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

uint64_t parse_u64(const char *what, const char *s, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		die_usage("%s: '%s' is not a number", what, s ? s : "");
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		die_usage("%s: '%s' is not a number in 0..%" PRIu64, what, s,
			  max);
	return v;
}

void *read_whole_file(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf;

	if (!f)
		die_data("%s: %s", path, strerror(errno));
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
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return stdout;
	f = fopen(path, "wb");
	if (!f)
		die_data("%s: %s", path, strerror(errno));
	return f;
}

void close_output(FILE *f, const char *path)
{
	if (fflush(f) || ferror(f) || (f != stdout && fclose(f)))
		die_data("%s: write error", path ? path : "stdout");
}

/* PATH[@ADDR]: an ELF moved by ADDR, or a raw binary loaded at ADDR. */
void cli_add_image(struct nt_image *img, const char *spec, bool raw)
{
	char path[4096];
	const char *at = strrchr(spec, '@');
	uint64_t addr = 0;
	const char *err = NULL;
	size_t n = at ? (size_t)(at - spec) : strlen(spec);

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
