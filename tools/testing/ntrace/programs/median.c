// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Three-point median filter in the style of the riscv-tests "median"
 * benchmark: data-dependent compares on pseudo-random input, so the
 * branch history has little to repeat, then a loop-only check.
 */
#include <stdio.h>

#define N 400

static int in[N], out[N];

__attribute__((noinline)) static void median(int n, const int *x, int *y)
{
	int i;

	y[0] = 0;
	y[n - 1] = 0;
	for (i = 1; i < n - 1; i++) {
		int a = x[i - 1], b = x[i], c = x[i + 1];

		if (a < b) {
			if (b < c)
				y[i] = b;
			else if (c < a)
				y[i] = a;
			else
				y[i] = c;
		} else {
			if (a < c)
				y[i] = a;
			else if (c < b)
				y[i] = b;
			else
				y[i] = c;
		}
	}
}

int main(void)
{
	unsigned int s = 12345;
	long sum = 0;
	int i;

	for (i = 0; i < N; i++) {
		s = s * 1103515245u + 12345u;
		in[i] = (int)(s >> 16) % 1000;
	}
	median(N, in, out);
	for (i = 0; i < N; i++)
		sum += out[i];
	printf("median %d sum %ld\n", N, sum);
	return 0;
}
