// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * LSD radix sort in the style of the riscv-tests "rsort" benchmark: 8-bit
 * digits, a counting pass, a prefix sum over 256 buckets and a scatter
 * per digit. The loops have fixed trip counts and few data-dependent
 * branches: long runs of identical branch history.
 */
#include <stdio.h>
#include <string.h>

#define N 1024
#define RADIX 256

static unsigned int data[N], tmp[N];
static unsigned int bucket[RADIX];

__attribute__((noinline)) static void rsort(unsigned int *a, unsigned int *t,
					     int n)
{
	unsigned int *from = a, *to = t, *sw;
	int shift, i;

	for (shift = 0; shift < 32; shift += 8) {
		memset(bucket, 0, sizeof(bucket));
		for (i = 0; i < n; i++)
			bucket[(from[i] >> shift) & (RADIX - 1)]++;
		for (i = 1; i < RADIX; i++)
			bucket[i] += bucket[i - 1];
		for (i = n - 1; i >= 0; i--)
			to[--bucket[(from[i] >> shift) & (RADIX - 1)]] = from[i];
		sw = from;
		from = to;
		to = sw;
	}
}

int main(void)
{
	unsigned int s = 31337;
	int i;

	for (i = 0; i < N; i++) {
		s = s * 1103515245u + 12345u;
		data[i] = s ^ (s >> 13);
	}
	rsort(data, tmp, N);
	for (i = 1; i < N; i++)
		if (data[i - 1] > data[i])
			return 1;
	printf("rsort %d ok\n", N);
	return 0;
}
