// SPDX-License-Identifier: GPL-2.0
/*
 * AutoFDO workload whose profile saves instructions: a hot loop calls
 * through a table of small operations, one of which it picks 15 times
 * in 16. Without a profile the compiler sees an indirect call it cannot
 * inline; with one (clang -fprofile-sample-use, gcc -fauto-profile) it
 * compares the pointer against the hot target and inlines it, saving
 * the call, the return and the callee's frame on most iterations. The
 * targets are not marked noinline, unlike brwork's, whose profile can
 * only reorder blocks.
 *
 * Usage: icall [iterations]
 */
#include <stdio.h>
#include <stdlib.h>

typedef unsigned long (*icall_fn)(unsigned long);

static unsigned long icall_add(unsigned long x) { return x + 3; }
static unsigned long icall_mul(unsigned long x) { return x * 5 + 1; }
static unsigned long icall_xor(unsigned long x) { return x ^ (x >> 7); }
static unsigned long icall_rot(unsigned long x) { return x << 13 | x >> 51; }

/* volatile: the compiler must not resolve the targets without a profile */
static icall_fn volatile icall_ops[4] = {
	icall_add, icall_mul, icall_xor, icall_rot
};

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000;
	unsigned long x = 27, acc = 0, i;

	for (i = 0; i < n; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		acc += icall_ops[(x >> 40) & 15 ? 0 : (x >> 44) & 3](acc);
	}
	printf("icall: %lu iterations, checksum %lu\n", n, acc);
	return 0;
}
