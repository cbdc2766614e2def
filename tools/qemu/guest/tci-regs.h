/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RISC-V Trace Control Interface 1.0: the register offsets
 * (within a component's window) and control bits that the lab's trace
 * tests program, for the test module (guest/ntrace_hw.c) and the
 * bare-metal program (baremetal/traced-bm.c) alike. Plain C: it is built
 * both in the kernel and freestanding.
 */
#ifndef NTRACE_TCI_REGS_H
#define NTRACE_TCI_REGS_H

/* trace encoder */
#define TE_CONTROL	0x000
#define TE_IMPL		0x004
#define TE_FEATURES	0x008
#define TE_FILTERS	0x00c
#define TS_CONTROL	0x040
#define TE_F0_CONTROL	0x400
#define TE_F0_MATCHINST	0x404

/* trace RAM sink */
#define RAM_CONTROL	0x000
#define RAM_IMPL	0x004
#define RAM_START_LO	0x010
#define RAM_START_HI	0x014
#define RAM_LIMIT_LO	0x018
#define RAM_LIMIT_HI	0x01c
#define RAM_WP_LO	0x020
#define RAM_WP_HI	0x024

/* trace funnel */
#define FUN_CONTROL	0x000
#define FUN_IMPL	0x004
#define FUN_DISINPUT	0x008

/* tr??Impl.CompType, bits 11:8 */
#define COMP_TYPE(impl)	(((impl) >> 8) & 0xf)
#define COMP_ENCODER	0x1
#define COMP_FUNNEL	0x8
#define COMP_RAM_SINK	0x9

/* trTeControl, trRamControl and trFunnelControl */
#define ACTIVE		(1u << 0)
#define ENABLE		(1u << 1)
#define TRACING		(1u << 2)
#define EMPTY		(1u << 3)
#define OVERFLOW	(1u << 12)
#define RAM_SMEM	(1u << 4)
#define RAM_STOPWRAP	(1u << 8)

#endif
