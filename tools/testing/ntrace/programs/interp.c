// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tiny stack-machine bytecode interpreter: the classic dispatch loop
 * with one hot indirect jump whose target changes every iteration
 * (16 opcodes, so gcc -O2 dispatches through a jump table).
 * The program computes the sum of i*i for i < 400 with a loop written
 * in bytecode.
 */
#include <stdint.h>
#include <stdio.h>

enum {
	PUSH, LOAD, STORE, ADD, MUL, DUP, LT, JNZ, JMP, HALT,
	SUB, AND, XOR, SWAP, DROP, JZ,
};

static const uint8_t code[] = {
	PUSH, 0, STORE, 0,		/* i = 0 */
	PUSH, 0, STORE, 1,		/* s = 0 */
	/* 8: loop head */
	LOAD, 0, DUP, MUL,		/* i*i */
	LOAD, 1, SWAP, ADD, STORE, 1,	/* s += i*i */
	PUSH, 7, PUSH, 7, XOR, DROP,	/* no-op, exercises XOR/DROP */
	LOAD, 0, PUSH, 1, ADD, DUP, STORE, 0,	/* i++ (leaves i) */
	PUSH, 200, PUSH, 200, ADD,	/* 400 */
	LT, JNZ, 8,			/* loop while i < 400 */
	LOAD, 1, HALT,
};

__attribute__((noinline)) static int64_t run(const uint8_t *pc)
{
	int64_t stack[16], var[4] = { 0 };
	int sp = 0;
	const uint8_t *base = pc;

	for (;;) {
		switch (*pc++) {
		case PUSH: stack[sp++] = *pc++; break;
		case LOAD: stack[sp++] = var[*pc++]; break;
		case STORE: var[*pc++] = stack[--sp]; break;
		case ADD: sp--; stack[sp - 1] += stack[sp]; break;
		case MUL: sp--; stack[sp - 1] *= stack[sp]; break;
		case DUP: stack[sp] = stack[sp - 1]; sp++; break;
		case LT: sp--; stack[sp - 1] = stack[sp - 1] < stack[sp]; break;
		case JNZ: if (stack[--sp]) pc = base + *pc; else pc++; break;
		case JMP: pc = base + *pc; break;
		case HALT: return stack[sp - 1];
		case SUB: sp--; stack[sp - 1] -= stack[sp]; break;
		case AND: sp--; stack[sp - 1] &= stack[sp]; break;
		case XOR: sp--; stack[sp - 1] ^= stack[sp]; break;
		case SWAP: {
			int64_t t = stack[sp - 1];

			stack[sp - 1] = stack[sp - 2];
			stack[sp - 2] = t;
			break;
		}
		case DROP: sp--; break;
		case JZ: if (!stack[--sp]) pc = base + *pc; else pc++; break;
		default: return -1;
		}
	}
}

int main(void)
{
	int64_t r = run(code);

	printf("interp sum=%lld\n", (long long)r);
	return r == 21253400 ? 0 : 1;
}
