/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A loop whose every control transfer sits at a known label, shared by the
 * CTR selftests and workload/brwork. Each iteration does, in this order:
 *
 *   ctr_wl_cond:  beqz  on data[i] & 1   -> ctr_wl_call      (taken branch,
 *                                           only for even data[i])
 *   ctr_wl_call:  jal   ra, ctr_wl_leaf  -> ctr_wl_leaf      (direct call)
 *   ctr_wl_leaf:  ret                    -> ctr_wl_ret1      (return)
 *   ctr_wl_icall: jalr  ra, t1           -> ctr_wl_leaf2     (indirect call)
 *   ctr_wl_leaf2: ret                    -> ctr_wl_ret2      (return)
 *   ctr_wl_ijmp:  jr    t1               -> ctr_wl_ijmp_to   (indirect jump)
 *   ctr_wl_jmp:   j                      -> ctr_wl_jmp_to    (direct jump)
 *   ctr_wl_back:  bnez  a0               -> ctr_wl_top       (taken branch,
 *                                           all but the last iteration)
 *
 * norvc keeps every instruction four bytes so that the labels are exact.
 * No other transfer happens between ctr_wl_top and ctr_wl_end, so every
 * user-mode record whose source lies in that range must be one of these.
 */
#ifndef CTR_WORKLOAD_H
#define CTR_WORKLOAD_H

#include <stdint.h>

/* ctr_wl_loop(iterations, data): returns the number of odd data[i] */
unsigned long ctr_wl_loop(unsigned long n, const unsigned long *data);

extern const char ctr_wl_top[], ctr_wl_cond[], ctr_wl_call[], ctr_wl_leaf[],
	ctr_wl_ret1[], ctr_wl_icall[], ctr_wl_leaf2[], ctr_wl_ret2[],
	ctr_wl_ijmp[], ctr_wl_ijmp_to[], ctr_wl_jmp[], ctr_wl_jmp_to[],
	ctr_wl_back[], ctr_wl_end[];

/* A call chain for CALL_STACK: ctr_cs_a -> ctr_cs_b -> ctr_cs_c (spins). */
unsigned long ctr_cs_a(unsigned long n);
extern const char ctr_cs_a_call[], ctr_cs_b[], ctr_cs_b_call[], ctr_cs_c[],
	ctr_cs_c_end[];

asm (".pushsection .text\n"
     ".option push\n"
     ".option norvc\n"
     ".globl ctr_wl_loop\n"
     ".type ctr_wl_loop, @function\n"
     "ctr_wl_loop:\n"
     "	addi sp, sp, -16\n"
     "	sd ra, 8(sp)\n"
     "	li a2, 0\n"
     "	beqz a0, ctr_wl_end\n"
     ".globl ctr_wl_top\n"
     "ctr_wl_top:\n"
     "	ld t0, 0(a1)\n"
     "	andi t0, t0, 1\n"
     "	add a2, a2, t0\n"
     ".globl ctr_wl_cond\n"
     "ctr_wl_cond:\n"
     "	beqz t0, ctr_wl_call\n"
     "	nop\n"
     ".globl ctr_wl_call\n"
     "ctr_wl_call:\n"
     "	jal ra, ctr_wl_leaf\n"
     ".globl ctr_wl_ret1\n"
     "ctr_wl_ret1:\n"
     "	lla t1, ctr_wl_leaf2\n"
     ".globl ctr_wl_icall\n"
     "ctr_wl_icall:\n"
     "	jalr ra, 0(t1)\n"
     ".globl ctr_wl_ret2\n"
     "ctr_wl_ret2:\n"
     "	lla t1, ctr_wl_ijmp_to\n"
     ".globl ctr_wl_ijmp\n"
     "ctr_wl_ijmp:\n"
     "	jr t1\n"
     "	nop\n"
     ".globl ctr_wl_ijmp_to\n"
     "ctr_wl_ijmp_to:\n"
     "	addi a1, a1, 8\n"
     ".globl ctr_wl_jmp\n"
     "ctr_wl_jmp:\n"
     "	j ctr_wl_jmp_to\n"
     "	nop\n"
     ".globl ctr_wl_jmp_to\n"
     "ctr_wl_jmp_to:\n"
     "	addi a0, a0, -1\n"
     ".globl ctr_wl_back\n"
     "ctr_wl_back:\n"
     "	bnez a0, ctr_wl_top\n"
     "	j ctr_wl_end\n"
     ".globl ctr_wl_leaf\n"
     "ctr_wl_leaf:\n"
     "	ret\n"
     ".globl ctr_wl_leaf2\n"
     "ctr_wl_leaf2:\n"
     "	ret\n"
     ".globl ctr_wl_end\n"
     "ctr_wl_end:\n"
     "	mv a0, a2\n"
     "	ld ra, 8(sp)\n"
     "	addi sp, sp, 16\n"
     "	ret\n"
     ".size ctr_wl_loop, . - ctr_wl_loop\n"
     /* the call chain: a calls b calls c, c counts down a0 */
     ".globl ctr_cs_a\n"
     ".type ctr_cs_a, @function\n"
     "ctr_cs_a:\n"
     "	addi sp, sp, -16\n"
     "	sd ra, 8(sp)\n"
     ".globl ctr_cs_a_call\n"
     "ctr_cs_a_call:\n"
     "	jal ra, ctr_cs_b\n"
     "	ld ra, 8(sp)\n"
     "	addi sp, sp, 16\n"
     "	ret\n"
     ".size ctr_cs_a, . - ctr_cs_a\n"
     ".globl ctr_cs_b\n"
     ".type ctr_cs_b, @function\n"
     "ctr_cs_b:\n"
     "	addi sp, sp, -16\n"
     "	sd ra, 8(sp)\n"
     ".globl ctr_cs_b_call\n"
     "ctr_cs_b_call:\n"
     "	jal ra, ctr_cs_c\n"
     "	ld ra, 8(sp)\n"
     "	addi sp, sp, 16\n"
     "	ret\n"
     ".size ctr_cs_b, . - ctr_cs_b\n"
     ".globl ctr_cs_c\n"
     ".type ctr_cs_c, @function\n"
     "ctr_cs_c:\n"
     "	addi a0, a0, -1\n"
     "	bnez a0, ctr_cs_c\n"
     "	ret\n"
     ".size ctr_cs_c, . - ctr_cs_c\n"
     /* not the address of whatever function the compiler puts next */
     ".globl ctr_cs_c_end\n"
     "ctr_cs_c_end:\n"
     "	unimp\n"
     ".option pop\n"
     /*
      * The assembler marks the return to the default ISA with a mapping
      * symbol ($x<isa>); keep it off the next function's address, or
      * perf names that function after it.
      */
     "	unimp\n"
     ".popsection\n");

#endif /* CTR_WORKLOAD_H */
