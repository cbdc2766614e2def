// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Vector add in the style of the riscv-tests "vvadd" benchmark: one
 * loop over fixed arrays, then a verification loop. Its only conditional
 * branches close the loops: the simplest repeated history there is.
 */
#include <stdio.h>

#define N 1000

static int a[N], b[N], c[N];

__attribute__((noinline)) static void vvadd(int n, const int *x, const int *y,
					     int *z)
{
	int i;

	for (i = 0; i < n; i++)
		z[i] = x[i] + y[i];
}

int main(void)
{
	unsigned int s = 7;
	int i;

	for (i = 0; i < N; i++) {
		s = s * 1103515245u + 12345u;
		a[i] = (int)(s >> 16) & 0xfff;
		b[i] = (int)(s >> 4) & 0xfff;
	}
	vvadd(N, a, b, c);
	for (i = 0; i < N; i++)
		if (c[i] != a[i] + b[i])
			return 1;
	printf("vvadd %d ok\n", N);
	return 0;
}
