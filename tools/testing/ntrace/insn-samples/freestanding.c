// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Control-flow heavy freestanding code for the classifier cross-check:
 * calls (direct, through pointers, tail), loops, dense switches (jump
 * tables) and sparse ones (branch chains). Built without libc, linked
 * with -nostdlib so the linker relaxes calls into jal / c.jal / c.j.
 */
typedef unsigned long ulong;

static volatile ulong sink;

typedef ulong (*op_fn)(ulong, ulong);

__attribute__((noinline)) static ulong op_add(ulong a, ulong b)
{
	return a + b;
}

__attribute__((noinline)) static ulong op_xor(ulong a, ulong b)
{
	return a ^ (b << 3);
}

__attribute__((noinline)) static ulong op_mix(ulong a, ulong b)
{
	return (a * 2654435761u) ^ (b >> 7);
}

static op_fn const ops[] = { op_add, op_xor, op_mix };

__attribute__((noinline)) static ulong dense(ulong v, ulong k)
{
	switch (k % 9) {
	case 0: return v + 1;
	case 1: return v - 7;
	case 2: return v << 2;
	case 3: return v >> 1;
	case 4: return v * 13;
	case 5: return ~v;
	case 6: return v & 0xff00;
	case 7: return v | 0x11;
	default: return v ^ k;
	}
}

__attribute__((noinline)) static ulong sparse(ulong v)
{
	switch (v & 0xffff) {
	case 3: return 1;
	case 100: return 2;
	case 1000: return 3;
	case 40000: return 4;
	default: return v < 12345 ? 5 : 6;
	}
}

__attribute__((noinline)) static ulong fib(ulong n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) ulong walk(const unsigned char *p, ulong n)
{
	ulong acc = 0, i;

	for (i = 0; i < n; i++) {
		if (p[i] == 0)
			break;
		if (p[i] & 1)
			acc = ops[p[i] % 3](acc, p[i]);
		else if ((signed char)p[i] < 0)
			acc -= dense(acc, p[i]);
		else
			acc += sparse(acc + p[i]);
	}
	return acc;
}

ulong tail(ulong x)
{
	return dense(x, x >> 3);	/* tail call: jal x0 / c.j */
}

void _start(void)
{
	static const unsigned char data[] = "some bytes \x81\x93\xf0 to walk";
	ulong i;

	for (i = 0; i < 4; i++)
		sink = walk(data, sizeof(data)) + fib(i) + tail(i);
	for (;;)
		;
}
