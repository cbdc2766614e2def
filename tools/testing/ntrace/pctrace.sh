#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# pctrace.sh PROG OUT [ARGS...]
#
# Run a static RISC-V Linux program under qemu-riscv64 and write the
# ground-truth sequence of executed guest PCs to OUT.
#
# Output format (canonical, other tools compare it byte for byte):
# one line per executed instruction, in execution order, "0x" followed
# by the PC in lowercase hex without leading zeros ("0x10554", "0x0").
#
# How: qemu is forced to one guest instruction per translation block and
# block chaining is disabled, so "-d exec" logs every instruction as it
# is entered. The guest PC is the second field inside the brackets of
# each "Trace" line:
#   Trace 0: 0x7fbde8000100 [0000000000000000/0000000000010554/...] _start
#
# What the log was checked to contain (qemu 7.2, glibc static, all
# programs in programs/): every consecutive PC pair differs by the
# instruction's length (2 or 4) unless the first is a branch, jump or
# ecall; no instruction is logged twice, none is missing. In particular
# ecall, lr/sc, AMOs and 4-byte instructions straddling a page are each
# logged exactly once. Signal delivery shows up as an ecall (tgkill)
# followed by the handler's first instruction; the handler returns into
# the two-instruction sigreturn trampoline qemu maps outside the ELF
# (0x4000801000: li a7,139; 0x4000801004: ecall), after which execution
# resumes at the instruction following the interrupted ecall.
#
# The exit status of the program is propagated; a non-zero exit or a
# qemu failure leaves OUT untouched.

set -eu

usage() {
	echo "usage: $0 PROG OUT [ARGS...]" >&2
	exit 2
}

[ $# -ge 2 ] || usage
prog=$1
out=$2
shift 2

[ -f "$prog" ] || { echo "$0: $prog: no such file" >&2; exit 2; }

QEMU=${QEMU:-qemu-riscv64}
qemu_path=$(command -v "$QEMU") || { echo "$0: $QEMU not found" >&2; exit 2; }

# qemu 8.1 renamed -singlestep to -one-insn-per-tb and later releases
# dropped the old spelling; ask the binary which one it knows.
if "$qemu_path" -h 2>/dev/null | grep -q -- '-one-insn-per-tb'; then
	onestep=-one-insn-per-tb
else
	onestep=-singlestep
fi

# Deliberately not $TMPDIR: static glibc reads /proc/self/exe at start-up
# (_dl_get_origin), which qemu answers with the absolute path of the
# binary, and the length of that path shows up in the trace. A fixed
# /tmp/pctrace.XXXXXX/prog keeps it constant.
tmpdir=$(mktemp -d /tmp/pctrace.XXXXXX)
trap 'rm -rf "$tmpdir"' EXIT INT TERM HUP

log=$tmpdir/exec.log
rc=0
# Make the trace a function of the binary and its arguments only:
#  - qemu-user hands its own environment to the guest and glibc start-up
#    walks all of it several times, so a few extra variables move the
#    count by thousands: run with an empty environment;
#  - the path the program is started by ends up in argv[0] and
#    AT_EXECFN and is scanned too: always run a copy as "./prog" from
#    a directory whose name has a fixed length (see above);
#  - stdio asks whether stdout is a terminal (isatty) only when it is a
#    character device, so the same run traced by "make >/dev/null" took
#    75 instructions more than by "make | less": stdout always goes to a
#    regular file, shown once the program is done.
cp "$prog" "$tmpdir/prog"
(cd "$tmpdir" && env -i "$qemu_path" "$onestep" -d exec,nochain -D exec.log \
	./prog "$@" >stdout) || rc=$?
cat "$tmpdir/stdout"
if [ "$rc" -ne 0 ]; then
	echo "$0: $prog exited with status $rc" >&2
	exit "$rc"
fi

# Split on '[' and '/': field 3 is then the 16-digit guest PC. Strip the
# leading zeros as text so no awk implementation ever sees a 64-bit
# number (mawk would lose precision above 2^53).
LC_ALL=C awk -F'[[/]' '
	/^Trace / {
		pc = $3
		sub(/^0+/, "", pc)
		if (pc == "")
			pc = "0"
		print "0x" tolower(pc)
		n++
	}
	END { if (n == 0) exit 1 }
' "$log" > "$tmpdir/pcs" || {
	echo "$0: no exec trace lines in qemu log for $prog" >&2
	exit 1
}

# Rename into place so an interrupted run never leaves a partial OUT.
cp "$tmpdir/pcs" "$out.tmp.$$"
mv -f "$out.tmp.$$" "$out"
