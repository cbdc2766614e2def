// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Dense switch: 16 contiguous cases with unrelated bodies, which gcc
 * -O2 lowers to a bounds check plus an indirect jump through a table
 * in .rodata. The case bodies differ enough that they cannot be
 * turned into a value lookup table instead.
 */
#include <stdint.h>
#include <stdio.h>

__attribute__((noinline)) static uint32_t step(uint32_t op, uint32_t x)
{
	switch (op) {
	case 0: return x + 3;
	case 1: return x * 5;
	case 2: return x ^ 0x5a5a;
	case 3: return x >> 3 | x << 29;
	case 4: return x - 77;
	case 5: return ~x;
	case 6: return x * x;
	case 7: return x / 3 + 1;
	case 8: return x % 1000 + x;
	case 9: return x << 2;
	case 10: return x | 0x10001;
	case 11: return x & 0xfff0fff0;
	case 12: return x + (x >> 7);
	case 13: return x * 33 + 1;
	case 14: return (x >> 16) ^ x;
	case 15: return x - (x << 3);
	default: return 0;
	}
}

int main(void)
{
	uint32_t x = 1, r = 7;
	int i;

	for (i = 0; i < 4000; i++) {
		r = r * 1664525u + 1013904223u;
		x = step((r >> 24) & 15, x);
	}
	printf("jumptable x=%08x\n", x);
	return 0;
}
