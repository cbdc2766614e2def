// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Function-pointer dispatch table: every iteration is an indirect call
 * whose target depends on data, so the trace is full of jalr targets
 * that cannot be inferred from the binary alone.
 */
#include <stdint.h>
#include <stdio.h>

typedef uint32_t (*op_fn)(uint32_t, uint32_t);

__attribute__((noinline)) static uint32_t op_add(uint32_t a, uint32_t b) { return a + b; }
__attribute__((noinline)) static uint32_t op_sub(uint32_t a, uint32_t b) { return a - b; }
__attribute__((noinline)) static uint32_t op_xor(uint32_t a, uint32_t b) { return a ^ b; }
__attribute__((noinline)) static uint32_t op_mul(uint32_t a, uint32_t b) { return a * (b | 1); }
__attribute__((noinline)) static uint32_t op_rol(uint32_t a, uint32_t b)
{
	b &= 31;
	return b ? (a << b) | (a >> (32 - b)) : a;
}
__attribute__((noinline)) static uint32_t op_and(uint32_t a, uint32_t b) { return (a & b) + 7; }

static op_fn const table[] = { op_add, op_sub, op_xor, op_mul, op_rol, op_and };
#define NOPS (sizeof(table) / sizeof(table[0]))

int main(void)
{
	uint32_t acc = 1, seed = 12345;
	int i;

	for (i = 0; i < 3000; i++) {
		seed = seed * 1103515245u + 12345u;
		acc = table[(seed >> 16) % NOPS](acc, seed >> 8);
	}
	printf("dispatch acc=%08x\n", acc);
	return 0;
}
