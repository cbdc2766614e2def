/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Minimal TAP producer for the host tests. Each test program prints
 * "ok N - ..." / "not ok N - ..." lines and a plan; run-tests.sh sums
 * them up into the project's "N passed, N failed" line.
 */
#ifndef NTRACE_TAP_H
#define NTRACE_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_count, tap_failed;

__attribute__((format(printf, 2, 3), unused))
static int tap_ok(int ok, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	if (!ok)
		tap_failed++;
	printf("%sok %d - ", ok ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return ok;
}

__attribute__((format(printf, 1, 2), unused))
static void tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

__attribute__((unused))
static int tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif /* NTRACE_TAP_H */
