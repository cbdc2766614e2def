// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * setjmp/longjmp: non-local exits from a few frames deep. The longjmp
 * return lands after the setjmp call site without a matching ret,
 * which upsets any return-address-stack model that trusts call/return
 * pairing.
 */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static volatile int depth_hits;

__attribute__((noinline)) static void dive(int n, int bail)
{
	depth_hits++;
	if (n == bail)
		longjmp(env, n + 1);
	if (n > 0)
		dive(n - 1, bail);
	depth_hits++;	/* keep dive() from becoming a tail call */
}

int main(void)
{
	volatile int total = 0, round;

	for (round = 0; round < 200; round++) {
		int r = setjmp(env);

		if (r == 0)
			dive(12, round % 15);	/* bail >= 13 returns normally */
		else
			total += r;
	}
	printf("longjmp total=%d hits=%d\n", total, depth_hits);
	return 0;
}
