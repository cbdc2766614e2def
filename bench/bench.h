/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What every benchmark program needs and nothing more: fatal errors
 * prefixed with the program's name, a whole input file in memory, and
 * the two clocks the figures are printed from.
 */
#ifndef NTRACE_BENCH_H
#define NTRACE_BENCH_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void __attribute__((noreturn, format(printf, 1, 2), unused))
die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", program_invocation_short_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/*
 * The whole of path, NUL-terminated so text inputs can be scanned with
 * the string functions; *len excludes the terminator.
 */
static __attribute__((unused))
uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		die("%s: %s", path, strerror(errno));
	for (;;) {
		size_t got;

		if (n + 1 >= cap) {
			cap = cap ? 2 * cap : 1 << 20;
			buf = realloc(buf, cap);
			if (!buf)
				die("out of memory");
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		if (!got)
			break;
		n += got;
	}
	if (ferror(f))
		die("%s: read error", path);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static double seconds(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU time of the calling thread: what the code under test cost. */
static __attribute__((unused)) double cpu_now(void)
{
	return seconds(CLOCK_THREAD_CPUTIME_ID);
}

/* Elapsed time: includes whatever else the machine was doing. */
static __attribute__((unused)) double wall_now(void)
{
	return seconds(CLOCK_MONOTONIC);
}

/*
 * The baseline every figure is printed beside: a sum of every byte of
 * the buffer, about as fast as the bytes can come from memory. A
 * decoder's MB/s over it says how close to that limit it runs.
 */
static __attribute__((unused))
uint64_t byte_sum(const uint8_t *buf, size_t len)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < len; i++)
		sum += buf[i];
	/* keep the loop from being hoisted out of repetitions */
	__asm__ volatile("" : "+r"(sum) : : "memory");
	return sum;
}

#endif
