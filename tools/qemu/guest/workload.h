/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The work both trace workloads repeat (guest/traced.c under Linux,
 * baremetal/traced-bm.c without it): recursion, and a switch compiled to
 * a jump table, so that every capture has calls, returns, indirect jumps
 * and data-dependent branches.
 */
#ifndef NTRACE_GUEST_WORKLOAD_H
#define NTRACE_GUEST_WORKLOAD_H

static unsigned int __attribute__((noinline)) fib(unsigned int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static unsigned int __attribute__((noinline)) op(unsigned int k,
						 unsigned int v)
{
	switch (k & 7) {
	case 0: return v + 3;
	case 1: return v ^ 0x55;
	case 2: return v * 5;
	case 3: return v >> 1;
	case 4: return v - 7;
	case 5: return v | 0x100;
	case 6: return v & 0xfff;
	default: return ~v;
	}
}

#endif
