/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Entry of the bare-metal trace test (QEMU virt, -bios none): every hart
 * gets a stack of its own and runs main(hartid) in M-mode. The trap vector
 * steps over the ecall the workload makes, so that the trace holds a
 * trap and a trap return without any firmware in between.
 */
#define STACK_SIZE	8192
#define MAX_HARTS	4

	.section .text.start
	.globl _start
_start:
	csrr	a0, mhartid
	li	t0, STACK_SIZE
	mul	t0, t0, a0
	la	sp, stack_top
	sub	sp, sp, t0
	la	t0, trap_vector
	csrw	mtvec, t0
	call	main
park:
	wfi
	j	park

	.align	2
	.globl	trap_vector
trap_vector:
	csrrw	sp, mscratch, sp	/* any scratch register will do: t0 is live */
	csrr	sp, mepc
	addi	sp, sp, 4
	csrw	mepc, sp
	csrrw	sp, mscratch, sp
	mret

	.bss
	.align	4
	.space	STACK_SIZE * MAX_HARTS
stack_top:
