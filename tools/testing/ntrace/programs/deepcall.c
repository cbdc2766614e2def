// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Call chain far deeper than a 32-entry return-address stack: descend
 * 100 frames, then unwind. The work after the recursive call prevents
 * gcc from turning it into a loop or tail call.
 */
#include <stdio.h>

static volatile unsigned sink;

__attribute__((noinline)) static unsigned descend(unsigned depth, unsigned acc)
{
	unsigned r;

	if (depth == 0)
		return acc;
	r = descend(depth - 1, acc * 3 + depth);
	sink += depth;
	return r ^ depth;
}

int main(void)
{
	unsigned r = 0;
	int i;

	for (i = 0; i < 20; i++)
		r += descend(100, (unsigned)i);
	printf("deepcall r=%08x sink=%u\n", r, sink);
	return 0;
}
