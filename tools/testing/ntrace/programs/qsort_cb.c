// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * qsort() with a comparison callback: libc calls back into the program
 * through a function pointer, so returns cross between libc and user
 * code many times.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 600

static int32_t v[N];

static int cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	uint32_t s = 2463534242u, sum = 0;
	int i;

	for (i = 0; i < N; i++) {
		s ^= s << 13;
		s ^= s >> 17;
		s ^= s << 5;
		v[i] = (int32_t)(s % 100000) - 50000;
	}
	qsort(v, N, sizeof(v[0]), cmp);
	for (i = 1; i < N; i++)
		if (v[i - 1] > v[i])
			return 1;
	for (i = 0; i < N; i += 37)
		sum = sum * 31 + (uint32_t)v[i];
	printf("qsort min=%d max=%d sum=%08x\n", v[0], v[N - 1], sum);
	return 0;
}
