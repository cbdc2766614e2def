// SPDX-License-Identifier: GPL-2.0
/*
 * A small deterministic workload for sampling tests: enough calls and
 * branches that a cycles sampling period of 10000 fires many times even
 * on a slow emulated hart, and short enough to keep the lab run quick.
 */
#include <stdio.h>
#include <stdlib.h>

static unsigned long __attribute__((noinline)) step(unsigned long x)
{
	return (x & 1) ? 3 * x + 1 : x / 2;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 2000000;
	unsigned long acc = 0, x = 27, i;

	for (i = 0; i < n; i++) {
		x = step(x);
		if (x == 1)
			x = 27 + (i & 0xff);
		acc += x;
	}
	printf("spin: %lu iterations, checksum %lu\n", n, acc);
	return 0;
}
