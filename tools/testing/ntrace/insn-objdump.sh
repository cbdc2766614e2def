#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Cross-check the instruction classifier against GNU objdump on whole
# text sections of real RISC-V binaries.
#
# usage: insn-objdump.sh CHECK_BIN SCRATCH_DIR
#   CHECK_BIN    built tools/testing/ntrace/insn_objdump_check
#   SCRATCH_DIR  where the sample binaries and listings are written
#
# Output is TAP (from insn_objdump_check). Without a RISC-V cross
# toolchain the whole test is skipped.

set -eu

CHECK=${1:?usage: $0 CHECK_BIN SCRATCH_DIR}
OUT=${2:?usage: $0 CHECK_BIN SCRATCH_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$HERE/insn-samples
CROSS=${CROSS:-riscv64-linux-gnu-}
CC=${CROSS}gcc
OBJDUMP=${CROSS}objdump
# Minimum instructions for the statically linked libc program.
MIN_STATIC=${MIN_STATIC:-10000}

have_tools() {
	command -v "$CC" >/dev/null 2>&1 &&
	command -v "$OBJDUMP" >/dev/null 2>&1 &&
	[ -e /usr/riscv64-linux-gnu/lib/libc.a ]
}

if ! have_tools && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	apt-get install -y binutils-riscv64-linux-gnu gcc-riscv64-linux-gnu \
		libc6-dev-riscv64-cross >&2 || true
fi
if ! have_tools; then
	echo "1..0 # SKIP no ${CROSS} toolchain with static libc"
	exit 0
fi

mkdir -p "$OUT"

# "no-aliases": one mnemonic per encoding (c.jr x1, not ret);
# "numeric": x0..x31, so link registers need no ABI-name table.
dis() {
	"$OBJDUMP" -d -M no-aliases,numeric "$OUT/$1" >"$OUT/$1.dis"
}

build() {
	name=$1
	shift
	"$CC" "$@" -o "$OUT/$name"
	dis "$name"
}

FREE="-ffreestanding -nostdlib -static -Wl,--no-warn-rwx-segments"
RV32="-march=rv32gc -mabi=ilp32"

# Hosted, static: brings in all of libc's text.
build hello64 -O2 -static "$SRC/hello.c"
# Freestanding, linked (relaxation yields jal/c.j), RV64 and RV32; only
# linked RV32 code has c.jal.
build fs64 -O2 $FREE "$SRC/freestanding.c"
build fs32 -O2 $RV32 $FREE "$SRC/freestanding.c"
build fs32-Os -Os $RV32 $FREE "$SRC/freestanding.c"
build fs32-imac -O2 -march=rv32imac_zicsr -mabi=ilp32 $FREE \
	"$SRC/freestanding.c"
# Unlinked RV32 objects: calls stay as auipc+jalr pairs.
build fs32.o -O2 $RV32 -ffreestanding -c "$SRC/freestanding.c"

# Negative control: a listing with one corrupted branch target must
# fail, or a silently broken checker would pass everything.
sed '0,/\tjal\tx1,[0-9a-f]*/s//\tjal\tx1,4/' "$OUT/fs64.dis" \
	>"$OUT/corrupt.dis"
if "$CHECK" "$OUT/corrupt.dis" >/dev/null 2>&1; then
	echo "Bail out! insn_objdump_check missed a corrupted jal target"
	exit 1
fi

set -- -m "$MIN_STATIC" "$OUT/hello64.dis"
for f in fs64 fs32 fs32-Os fs32-imac fs32.o; do
	set -- "$@" "$OUT/$f.dis"
done
exec "$CHECK" "$@"
