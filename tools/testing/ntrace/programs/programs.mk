# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# RISC-V test programs for ntrace, with ground-truth PC traces from
# qemu-user. Meant to be included from the top-level Makefile:
#
#   NT_PROG_OUT := build/programs
#   include tools/testing/ntrace/programs/programs.mk
#
# Targets defined here: nt-programs (all ELFs), nt-pctraces (all .pcs
# files) and the pattern rules behind them. Everything is written under
# $(NT_PROG_OUT) with per-target temporary names, so -j is safe.

# Where this fragment lives, fixed at include time (MAKEFILE_LIST grows
# with later includes, so this must be a simple assignment).
NT_PROG_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

NT_PROG_OUT ?= build/ntrace-programs
NT_CROSS_CC ?= riscv64-linux-gnu-gcc
# -static: the ELF must contain every instruction the trace can reach
# (libc included), otherwise a decoder has nothing to walk.
NT_PROG_CFLAGS ?= -O2 -g -static -Wall -Wextra
NT_PCTRACE ?= $(NT_PROG_DIR)/../pctrace.sh

NT_PROGRAMS := recursion dispatch jumptable qsort_cb longjmp checksum \
	deepcall rle interp strings signal rsort vvadd median quicksort

NT_PROG_BINS := $(addprefix $(NT_PROG_OUT)/,$(NT_PROGRAMS))
NT_PROG_PCS := $(addsuffix .pcs,$(NT_PROG_BINS))

.PHONY: nt-programs nt-pctraces
nt-programs: $(NT_PROG_BINS)
nt-pctraces: $(NT_PROG_PCS)

$(NT_PROG_OUT)/%: $(NT_PROG_DIR)/%.c $(NT_PROG_DIR)/programs.mk
	@mkdir -p $(@D)
	$(NT_CROSS_CC) $(NT_PROG_CFLAGS) -o $@.tmp $<
	@mv -f $@.tmp $@

# One executed guest PC per line; see pctrace.sh for the format.
$(NT_PROG_OUT)/%.pcs: $(NT_PROG_OUT)/% $(NT_PCTRACE)
	$(NT_PCTRACE) $< $@
