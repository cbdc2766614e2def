// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Recursion: naive Fibonacci and a small Ackermann. Both are kept
 * out-of-line so the trace shows genuine call/return pairs rather than
 * whatever gcc folds them into.
 */
#include <stdio.h>

static volatile int fib_n = 16;

__attribute__((noinline)) static unsigned long fib(int n)
{
	if (n < 2)
		return (unsigned long)n;
	return fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static unsigned long ack(unsigned long m, unsigned long n)
{
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ack(m - 1, 1);
	return ack(m - 1, ack(m, n - 1));
}

int main(void)
{
	unsigned long f = fib(fib_n);
	unsigned long a = ack(2, 3);

	printf("fib(%d)=%lu ack(2,3)=%lu\n", fib_n, f, a);
	return 0;
}
