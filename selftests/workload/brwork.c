// SPDX-License-Identifier: GPL-2.0
/*
 * Branch stack workload for the CTR tests, perf's branch history and the
 * AutoFDO tools: a hot loop with a data-dependent branch (brwork_mix), an
 * indirect call through a table (brwork_even / brwork_odd), a direct call
 * chain (brwork_chain -> brwork_leaf) and, with "asm" as second argument,
 * the labelled asm loop of ctr/ctr_workload.h.
 *
 * Usage: brwork [iterations] [asm]
 *
 * With BRWORK_PAUSE_MS in the environment it first sleeps that long, for
 * a counter that must overflow in the lab: under QEMU, a sampling event
 * started once and never switched out may never overflow, and the sleep
 * switches it out and in again (Documentation/lab.rst, "Known limits").
 * It sleeps in brwork itself, not in a shell before it, so that every
 * sample is brwork's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ctr/ctr_workload.h"

typedef unsigned long (*brwork_fn)(unsigned long);

static unsigned long __attribute__((noinline)) brwork_leaf(unsigned long x)
{
	return x ^ (x >> 7);
}

static unsigned long __attribute__((noinline)) brwork_chain(unsigned long x)
{
	return brwork_leaf(x + 1) + 1;
}

static unsigned long __attribute__((noinline)) brwork_even(unsigned long x)
{
	return x / 2 + brwork_chain(x);
}

static unsigned long __attribute__((noinline)) brwork_odd(unsigned long x)
{
	return 3 * x + 1;
}

static brwork_fn volatile brwork_ops[2] = { brwork_even, brwork_odd };

static unsigned long __attribute__((noinline)) brwork_mix(unsigned long n)
{
	unsigned long x = 27, acc = 0, i;

	for (i = 0; i < n; i++) {
		/* data-dependent: the parity of a pseudo-random value */
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		if ((x >> 33) & 1)
			acc += brwork_ops[(x >> 40) & 1](x >> 20);
		else
			acc -= brwork_leaf(x);
	}
	return acc;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000000;
	static unsigned long data[1024];
	const char *pause = getenv("BRWORK_PAUSE_MS");
	unsigned long r, i;

	if (pause) {
		unsigned long ms = strtoul(pause, NULL, 0);
		struct timespec ts = { .tv_sec = ms / 1000,
				       .tv_nsec = (ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
	}
	if (argc > 2 && !strcmp(argv[2], "asm")) {
		for (i = 0; i < 1024; i++)
			data[i] = i * 2654435761UL >> 7;
		for (r = 0, i = 0; i < n; i += 1024)
			r += ctr_wl_loop(1024, data);
	} else {
		r = brwork_mix(n);
	}
	printf("brwork: %lu iterations, checksum %lu\n", n, r);
	return 0;
}
