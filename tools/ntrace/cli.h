/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef NTRACE_CLI_H
#define NTRACE_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ntrace.h"

/* long-option codes shared by several commands */
enum {
	OPT_SRC_BITS = 0x100,
	OPT_TIMESTAMPS,
	OPT_EXTEND_ADDR,
	OPT_XLEN,
	OPT_QUIRKS,
	OPT_FIRST_PRIVATE,	/* commands number their own options from here */
};

#define STREAM_LONG_OPTIONS						\
	{ "src-bits", required_argument, NULL, OPT_SRC_BITS },		\
	{ "timestamps", no_argument, NULL, OPT_TIMESTAMPS },		\
	{ "extend-addr-msb", no_argument, NULL, OPT_EXTEND_ADDR },	\
	{ "xlen", required_argument, NULL, OPT_XLEN },			\
	{ "quirks", required_argument, NULL, OPT_QUIRKS }

#define STREAM_HELP							\
	"  --src-bits N         SRC field width (trTeSrcBits), 0..12\n"	\
	"  --timestamps         messages may end with TSTAMP (trTsEnable)\n" \
	"  --extend-addr-msb    addresses use trTeInstExtendAddrMSB\n"	\
	"  --xlen 32|64         hart XLEN (default 64)\n"			\
	"  --quirks sifive|none a pre-1.0 encoder's format (reading only)\n"

__attribute__((noreturn, format(printf, 1, 2)))
void die_usage(const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2)))
void die_data(const char *fmt, ...);
__attribute__((noreturn))
void die_bad_option(char **argv);
uint64_t parse_u64(const char *what, const char *s, uint64_t max);
/*
 * Bytes of trace read and handed over at a time: perf's AUX data comes
 * in pieces too, and memory does not grow with the trace.
 */
#define INPUT_CHUNK (1u << 20)

/* "-" is stdin; *size is the file's size, 0 when it is not a file. */
FILE *open_input(const char *path, uint64_t *size);
void *read_whole_file(const char *path, size_t *len);
FILE *open_output(const char *path);
void close_output(FILE *f, const char *path);
int stream_option(int opt, const char *arg, struct nt_stream_cfg *cfg);
void cli_add_image(struct nt_image *img, const char *spec, bool raw);

int cmd_dump(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_encode(int argc, char **argv);
int cmd_bluespec(int argc, char **argv);
int cmd_decode(int argc, char **argv);

#endif
