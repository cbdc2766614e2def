// SPDX-License-Identifier: GPL-2.0
/*
 * Bare-metal capture for the emulated N-Trace hardware: no firmware and
 * no kernel. In M-mode hart 0 programs the RAM sink and, on a board with
 * several harts, the funnel between the encoders and the sink; then every
 * hart programs its own encoder (TCI 1.0 programming sequence: sink
 * first, then the funnel, encoders enabled last), traces its own run of
 * the workload filtered to M-mode and stops its encoder; hart 0 stops the
 * funnel and the sink after all of them and prints the captured bytes in
 * hex on the UART for the host (tools/qemu/ntrace-hw-test) to decode
 * against the ground truth.
 *
 * Build-time configuration: NHARTS (as QEMU's -smp), TRACE_MODE (3 BTM,
 * 6 HTM) and TRACE_FEATURES (trTeInstFeatures), as in guest/ntrace_hw.c's
 * "mode=" and "features=".
 */
#include <stdint.h>

#include "../guest/tci-regs.h"
#include "../guest/workload.h"

#ifndef NHARTS
#define NHARTS		1
#endif
#ifndef TRACE_MODE
#define TRACE_MODE	6
#endif
#ifndef TRACE_FEATURES
#define TRACE_FEATURES	0
#endif

/* where the plugin puts the components: NT_* in tools/lab/lib.sh */
#if !defined(NT_BASE) || !defined(NT_MEM)
#error "build with -DNT_BASE= and -DNT_MEM= (see tools/qemu/ntrace-hw-test)"
#endif
#define ENCODER(h)	(NT_BASE + 0x1000ul * (h))
#define SINK		(NT_BASE + 0x10000ul)
#define FUNNEL		(NT_BASE + 0x18000ul)
#define BUFFER		NT_MEM
#define BUFFER_SIZE	0x10000ul
#define UART		0x10000000ul
#define FINISHER	0x100000ul

#define PRIV_M		(1u << 3)	/* trTeFilter0MatchInst bit */
/* trTeControl as configured: N-Trace format, the build's mode */
#define TE_CONFIG	(ACTIVE | (TRACE_MODE << 4) | (1u << 24))

static void wr(uintptr_t reg, uint32_t v)
{
	*(volatile uint32_t *)reg = v;
}

static uint32_t rd(uintptr_t reg)
{
	return *(volatile uint32_t *)reg;
}

static void putc_uart(char c)
{
	*(volatile uint8_t *)UART = (uint8_t)c;
}

static void puts_uart(const char *s)
{
	while (*s)
		putc_uart(*s++);
}

static void put_hex(uint64_t v, int digits)
{
	while (digits--)
		putc_uart("0123456789abcdef"[(v >> (4 * digits)) & 0xf]);
}

/* ---- the workload: calls, returns, a jump table, a trap ---------------- */

static volatile unsigned int sink_value[NHARTS];
static unsigned int sink_ready, harts_done;

static unsigned int twice(unsigned int v) { return 2 * v; }
static unsigned int plus1(unsigned int v) { return v + 1; }
static unsigned int (*const calls[2])(unsigned int) = { twice, plus1 };

static void __attribute__((noinline)) trap_once(void)
{
	/* the vector at mtvec returns to the next instruction */
	__asm__ volatile("ecall" ::: "memory");
}

static unsigned int workload(void)
{
	unsigned int i, acc = 1;

	for (i = 0; i < 500; i++) {
		acc = op(i * 2654435761u >> 7, acc);
		acc = calls[acc & 1](acc);
		if (i % 100 == 0)
			trap_once();
	}
	return acc + fib(12);
}

/* ---- capture -------------------------------------------------------- */

static void trace_on(unsigned int hart)
{
	uintptr_t te = ENCODER(hart);
	uint32_t features = TRACE_FEATURES;

	/* several harts share the sink: SRC tells them apart */
	if (NHARTS > 1)
		features |= (4u << 28) | (hart << 16);
	wr(te + TE_CONTROL, 0);
	wr(te + TE_CONTROL, ACTIVE);
	wr(te + TE_FEATURES, features);
	wr(te + TE_FILTERS, 1);
	wr(te + TE_F0_CONTROL, 3);	/* enable, match privilege */
	wr(te + TE_F0_MATCHINST, PRIV_M);
	wr(te + TE_CONTROL, TE_CONFIG);
	wr(te + TE_CONTROL, TE_CONFIG | ENABLE);
	wr(te + TE_CONTROL, TE_CONFIG | ENABLE | TRACING);
}

static void trace_off(unsigned int hart)
{
	uintptr_t te = ENCODER(hart);

	wr(te + TE_CONTROL, TE_CONFIG);
	while (!(rd(te + TE_CONTROL) & EMPTY))
		;
}

static void sink_on(void)
{
	wr(SINK + RAM_CONTROL, 0);
	wr(SINK + RAM_CONTROL, ACTIVE);
	wr(SINK + RAM_START_HI, 0);
	wr(SINK + RAM_START_LO, (uint32_t)BUFFER);
	wr(SINK + RAM_LIMIT_HI, 0);
	wr(SINK + RAM_LIMIT_LO, (uint32_t)(BUFFER + BUFFER_SIZE - 4));
	wr(SINK + RAM_WP_HI, 0);
	wr(SINK + RAM_WP_LO, (uint32_t)BUFFER);
	wr(SINK + RAM_CONTROL, ACTIVE | ENABLE);
}

/*
 * Nothing tells a bare-metal program the topology, so it looks: a board
 * with one hart has no funnel, and its window does not read back a
 * funnel's trFunnelImpl.
 */
static int funnel_on(void)
{
	wr(FUNNEL + FUN_CONTROL, 0);
	wr(FUNNEL + FUN_CONTROL, ACTIVE);
	if (COMP_TYPE(rd(FUNNEL + FUN_IMPL)) != COMP_FUNNEL)
		return 0;
	wr(FUNNEL + FUN_DISINPUT, 0);
	wr(FUNNEL + FUN_CONTROL, ACTIVE | ENABLE);
	return 1;
}

static void funnel_off(void)
{
	wr(FUNNEL + FUN_CONTROL, ACTIVE);
	while ((rd(FUNNEL + FUN_CONTROL) & (ENABLE | EMPTY)) != EMPTY)
		;
}

/* Stop the sink and print what it holds. */
static void sink_dump(void)
{
	uint64_t wp;
	uintptr_t p;

	wr(SINK + RAM_CONTROL, ACTIVE);
	while (!(rd(SINK + RAM_CONTROL) & EMPTY))
		;
	wp = ((uint64_t)rd(SINK + RAM_WP_HI) << 32) | rd(SINK + RAM_WP_LO);
	puts_uart("NTRACE-BM wp=");
	put_hex(wp, 16);
	puts_uart("\n");
	for (p = BUFFER; p < (wp & ~3ul); p++) {
		put_hex(*(volatile uint8_t *)p, 2);
		if ((p & 31) == 31)
			putc_uart('\n');
	}
	puts_uart("\nNTRACE-BM end\n");
}

int main(unsigned int hart)
{
	static int funnel;

	if (hart >= NHARTS)
		return 0;
	if (hart == 0) {
		sink_on();
		funnel = funnel_on();
		/* several harts need the funnel, one must not have it */
		if (funnel != (NHARTS > 1)) {
			puts_uart("NTRACE-BM funnel: not as the harts need\n");
			wr(FINISHER, 0x13333);	/* power off, status 1 */
		}
		__atomic_store_n(&sink_ready, 1, __ATOMIC_RELEASE);
	}
	while (!__atomic_load_n(&sink_ready, __ATOMIC_ACQUIRE))
		;
	trace_on(hart);
	sink_value[hart] = workload();
	/* encoders first, then the funnel, then the sink (TCI 5.4) */
	trace_off(hart);
	__atomic_fetch_add(&harts_done, 1, __ATOMIC_RELEASE);
	if (hart)
		return 0;
	while (__atomic_load_n(&harts_done, __ATOMIC_ACQUIRE) != NHARTS)
		;
	if (funnel)
		funnel_off();
	sink_dump();
	wr(FINISHER, 0x5555);	/* sifive_test: power off, status 0 */
	for (;;)
		;
}
