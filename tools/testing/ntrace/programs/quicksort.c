// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Iterative quicksort in the style of the riscv-tests "qsort" benchmark
 * (median-of-three pivot, an explicit stack, insertion sort below a
 * small partition size) on fixed pseudo-random input: data-dependent
 * branches in partition loops of every length.
 */
#include <stdio.h>

#define N 2048
#define INSERTION_THRESHOLD 10
#define STACK 64

static int data[N];

static inline void swap(int *a, int *b)
{
	int t = *a;

	*a = *b;
	*b = t;
}

__attribute__((noinline)) static void sort(int n, int *arr)
{
	int stack[STACK], sp = 0;
	int l = 0, ir = n - 1;

	for (;;) {
		if (ir - l < INSERTION_THRESHOLD) {
			int i, j;

			for (j = l + 1; j <= ir; j++) {
				int a = arr[j];

				for (i = j - 1; i >= l && arr[i] > a; i--)
					arr[i + 1] = arr[i];
				arr[i + 1] = a;
			}
			if (!sp)
				break;
			ir = stack[--sp];
			l = stack[--sp];
		} else {
			int k = (l + ir) >> 1, i = l + 1, j = ir, a;

			swap(&arr[k], &arr[l + 1]);
			if (arr[l] > arr[ir])
				swap(&arr[l], &arr[ir]);
			if (arr[l + 1] > arr[ir])
				swap(&arr[l + 1], &arr[ir]);
			if (arr[l] > arr[l + 1])
				swap(&arr[l], &arr[l + 1]);
			a = arr[l + 1];
			for (;;) {
				do
					i++;
				while (arr[i] < a);
				do
					j--;
				while (arr[j] > a);
				if (j < i)
					break;
				swap(&arr[i], &arr[j]);
			}
			arr[l + 1] = arr[j];
			arr[j] = a;
			if (ir - i + 1 >= j - l) {
				stack[sp++] = i;
				stack[sp++] = ir;
				ir = j - 1;
			} else {
				stack[sp++] = l;
				stack[sp++] = j - 1;
				l = i;
			}
		}
	}
}

int main(void)
{
	unsigned int s = 4242;
	int i;

	for (i = 0; i < N; i++) {
		s = s * 1103515245u + 12345u;
		data[i] = (int)(s >> 8) & 0xffffff;
	}
	sort(N, data);
	for (i = 1; i < N; i++)
		if (data[i - 1] > data[i])
			return 1;
	printf("quicksort %d ok\n", N);
	return 0;
}
