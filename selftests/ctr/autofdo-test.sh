#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# AutoFDO from CTR branch stacks, end to end: on the lab board, record
# workload/brwork with perf record -b and write perf script -F ip,brstack
# to the shared folder; on the host side (in the lab chroot), turn that
# into profiles with llvm-profgen (Debian llvm) and create_gcov (Debian
# autofdo) and check that they name the workload's hot functions.
#
# Needs the lab built (tools/lab/lab-test or make -C tools/lab build).
# Prints TAP-style lines and one "N passed, N failed" line; exit status 0
# only when everything passed. make check runs it after the lab tests.
#
# Usage: selftests/ctr/autofdo-test.sh [--kernel 6.12|7.x]
#        [--variant default|debug] [--keep DIR]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/lab/lib.sh"
need_root

VARIANT=default KEEP='' SERIES=''
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) SERIES=$2; shift ;;
	--variant) VARIANT=$2; shift ;;
	--keep) KEEP=$2; shift ;;
	*) die "usage: $0 [--kernel 6.12|7.x] [--variant default|debug] [--keep DIR]" ;;
	esac
	shift
done
[ -n "$SERIES" ] || SERIES=$(default_kernel)

BIN=$WORK/selftests-$VARIANT/workload/brwork
[ -x "$BIN" ] || die "no $BIN: build the lab first (make -C tools/lab build)"
DIR=$WORK/afdo-test
rm -rf "$DIR"
mkdir -p "$DIR"
CDIR=$CWORK/afdo-test
pass=0 fail=0 n=0
result() { # ok|"not ok", text
	n=$((n + 1))
	printf '%s %d - %s\n' "$1" "$n" "$2"
	if [ "$1" = ok ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}
# All hot functions of brwork must be named in a profile.
HOT="brwork_mix brwork_leaf brwork_even brwork_odd brwork_chain"
names_ok() { # file, tool
	local f missing=''
	for f in $HOT; do
		grep -aq "$f" "$1" || missing="$missing $f"
	done
	[ -z "$missing" ] && return 0
	echo "# $2 profile lacks:$missing"
	return 1
}

# AutoFDO wants the whole ring: the driver cuts each stack to the event's
# sample_max_stack, whose default, kernel.perf_event_max_stack, is 127;
# raised to 256, perf record gets all 256 entries (perf script and the
# AutoFDO tools take them; only perf report --branch-history would not).
# brwork runs from /tmp with its output there too: run from the 9p share
# and printing on the serial console, it spent more time in the kernel,
# and every overflow the emulated counter raises while the task is in the
# kernel is a sample create_gcov cannot map (see Documentation/ctr.rst).
# perf script shows the mmap events, so llvm-profgen learns where brwork
# was loaded. perf.data is written to /tmp and copied: on 7.3, 9p fails
# perf's writes straight from its ring buffer with EFAULT.
"$LAB_DIR/run" --kernel "$SERIES" --variant "$VARIANT" --share "$DIR" --timeout 600 --cmd '
	cp /selftests/workload/brwork /tmp/brwork && cp /tmp/brwork brwork &&
	echo 256 > /proc/sys/kernel/perf_event_max_stack &&
	perf record -b -e cycles:u -c 20011 -o /tmp/perf.data -- \
		/tmp/brwork 1000000 > /tmp/brwork.out &&
	cat /tmp/brwork.out && cp /tmp/perf.data perf.data &&
	perf script -i perf.data -F ip,brstack --show-mmap-events \
		> brstack.txt' >&2 ||
	result "not ok" "board (linux $SERIES): perf record -b and perf script -F ip,brstack"
longest=$(awk -F/0x '{ if (NF - 1 > m) m = NF - 1 } END { print m + 0 }' \
	"$DIR/brstack.txt" 2>/dev/null || echo 0)
if [ -s "$DIR/brstack.txt" ] && [ "$longest" -gt 127 ]; then
	result ok "board (linux $SERIES): $(grep -c /0x "$DIR/brstack.txt") samples with branch stacks in brstack.txt, up to $longest entries"
else
	result "not ok" "board (linux $SERIES): brstack.txt is empty or its stacks are cut ($longest entries at most)"
fi

# Every record's source must be a control transfer instruction of brwork
# and every target an instruction start (CTR's ctrsource is the address of
# the transfer instruction itself, 2 or 4 bytes long), and so must every
# fall-through range the tools build from consecutive records.
lab_chroot riscv64-linux-gnu-objdump -d -M no-aliases --no-show-raw-insn \
	"$CDIR/brwork" > "$DIR/brwork.dis" 2>/dev/null || true
ranges=$(awk -f "$REPO/selftests/ctr/afdo-ranges.awk" "$DIR/brwork.dis" \
	"$DIR/brstack.txt" 2>/dev/null || true)
fig() { # key: value from $ranges
	printf '%s\n' "$ranges" | tr ' ' '\n' | sed -n "s/^$1=//p"
}
echo "# ranges: $ranges"
if [ "$(fig entries)" -gt 0 ] 2>/dev/null && [ "$(fig bad_from)" = 0 ] &&
   [ "$(fig bad_to)" = 0 ] && [ "$(fig bad_range)" = 0 ]; then
	result ok "brstack: $(fig entries) records and $(fig ranges) ranges, all on instruction boundaries of brwork"
else
	result "not ok" "brstack: records or ranges off brwork's instruction boundaries ($ranges)"
fi

# llvm-profgen: the mmap events and the samples that carry branches (a
# sample without any makes it take the file for a stack+LBR profile).
grep -E 'PERF_RECORD_MMAP|/0x' "$DIR/brstack.txt" > "$DIR/lbr.txt" || true
if lab_chroot /usr/lib/llvm-19/bin/llvm-profgen --binary "$CDIR/brwork" \
	--perfscript "$CDIR/lbr.txt" --format=text \
	--output "$CDIR/llvm.prof" > "$DIR/llvm-profgen.log" 2>&1 &&
   names_ok "$DIR/llvm.prof" llvm-profgen &&
   grep -q '^brwork_mix:[1-9]' "$DIR/llvm.prof"; then
	result ok "llvm-profgen: profile names the hot functions ($(grep -c '^[a-z_]*:' "$DIR/llvm.prof") functions)"
else
	sed 's/^/# /' "$DIR/llvm-profgen.log"
	[ -f "$DIR/llvm.prof" ] && head -n 20 "$DIR/llvm.prof" | sed 's/^/# /'
	result "not ok" "llvm-profgen: profile names the hot functions"
fi
sed 's/^/# llvm-profgen: /' "$DIR/llvm-profgen.log"

# What llvm-profgen says about its input. It must have found brwork's
# mmap event (no "will use preferred address"), and warn about nothing
# but the two figures below.
pg_pct() { # words of its warning: the percentage it prints, 0 if none
	sed -n "s/^warning: \([0-9.]*\)%([0-9]*\/[0-9]*) of samples are from ranges that $1.*/\1/p" \
		"$DIR/llvm-profgen.log" | grep . || echo 0
}
other=$(grep -v -e 'of samples are from ranges that are not on instruction boundary' \
	-e 'of samples are from ranges that do not belong to any functions' \
	"$DIR/llvm-profgen.log" | grep -c . || true)
if [ -s "$DIR/llvm.prof" ] && [ "$other" -eq 0 ]; then
	result ok "llvm-profgen: brwork's mmap event matched, no other warning"
else
	result "not ok" "llvm-profgen: $other unexpected lines in its output (mmap event not matched?)"
fi
# "not on instruction boundary": the ranges that end at a jal, jalr or
# c.jr, which LLVM 19's RISC-V instruction table does not mark as calls,
# returns or branches (llvm-profgen reads only those marks), and nothing
# else: the records themselves are all on boundaries (checked above).
boundary=$(pg_pct 'are not on instruction boundary')
if awk -v t="$boundary" -v u="$(fig unflagged_pct)" \
	'BEGIN { d = t - u; exit !(t <= 0.5 || (u != "" && d <= 0.5 && d >= -0.5)) }'; then
	result ok "llvm-profgen: its $boundary% of ranges \"not on instruction boundary\" are the $(fig unflagged_pct)% that end at jal, jalr or c.jr (LLVM marks none as a transfer); really off a boundary: $(fig bad_range_pct)%"
else
	result "not ok" "llvm-profgen: $boundary% of ranges \"not on instruction boundary\", but only $(fig unflagged_pct)% end at jal, jalr or c.jr"
fi
# "do not belong to any functions": C library code before main() and
# after it returns, which has no DWARF in the static brwork: 1 to 13% of
# the ranges in runs so far. The emulated cycle counter follows host
# time, and QEMU translating the code run for the first time makes the
# start and exit long in host time, so how many samples land there
# varies from run to run. A sanity bound, not a figure of CTR.
nofunc=$(pg_pct 'do not belong to any functions')
if awk -v p="$nofunc" 'BEGIN { exit !(p < 25) }'; then
	result ok "llvm-profgen: $nofunc% of ranges outside brwork's DWARF functions (C library start and exit), under 25%"
else
	result "not ok" "llvm-profgen: $nofunc% of ranges outside brwork's DWARF functions"
fi

# create_gcov reads perf.data itself, but autofdo 0.19's DWARF reader
# knows only DWARF <= 4 (GCC 14 writes 5: the profile comes out empty).
# Rebuild brwork with -gdwarf-4 and make sure the code is the same.
# (The board's perf resolves fewer branch symbols of a DWARF 4 brwork,
# which is why the board keeps the DWARF 5 one.)
lab_chroot make -s -C "$CREPO/selftests" \
	KSRC="$CWORK/linux-$(newest_kernel)" \
	OUT="$CDIR/dwarf4" \
	BRWORK_CFLAGS="-g -gdwarf-4 -fno-inline -fno-omit-frame-pointer" \
	"$CDIR/dwarf4/workload/brwork" > "$DIR/dwarf4.log" 2>&1 || true
for b in brwork dwarf4/workload/brwork; do
	lab_chroot riscv64-linux-gnu-objcopy -O binary -j .text "$CDIR/$b" \
		"$CDIR/$(echo "$b" | tr / _).text" 2>/dev/null || true
done
if cmp -s "$DIR/brwork.text" "$DIR/dwarf4_workload_brwork.text"; then
	result ok "brwork rebuilt with -gdwarf-4 has the same code"
else
	sed 's/^/# /' "$DIR/dwarf4.log"
	result "not ok" "brwork rebuilt with -gdwarf-4 has the same code"
fi
# create_gcov logs to stderr (--logtostderr) what its perf.data reader,
# quipper, made of the file: "Parser processed: ... N SAMPLE events, M of
# these were mapped". Without the flag only errors show.
if lab_chroot create_gcov --binary="$CDIR/dwarf4/workload/brwork" \
	--profile="$CDIR/perf.data" --gcov="$CDIR/brwork.afdo" \
	-gcov_version=1 --logtostderr > "$DIR/create_gcov.log" 2>&1 &&
   [ -s "$DIR/brwork.afdo" ] && names_ok "$DIR/brwork.afdo" create_gcov; then
	result ok "create_gcov: AutoFDO profile names the hot functions ($(stat -c %s "$DIR/brwork.afdo") bytes)"
else
	grep -v 'reserved bits' "$DIR/create_gcov.log" | sed 's/^/# /'
	result "not ok" "create_gcov: AutoFDO profile names the hot functions"
fi
grep -v 'reserved bits' "$DIR/create_gcov.log" | sed 's/^/# create_gcov: /'
# Its only error must be "Unknown event type: 82": PERF_RECORD_FINISHED_INIT,
# which perf record (5.19 and later) always writes after its synthesized
# events, a header without payload that quipper, older, skips. Its
# warnings: the branch type perf puts in a field quipper has as reserved
# ("Ignoring branch stack entry reserved bits") and GCC not recording
# compilation info (a Google GCC option).
errors=$(grep '^E' "$DIR/create_gcov.log" | grep -v -c 'Unknown event type: 82$' || true)
warns=$(grep '^W' "$DIR/create_gcov.log" | grep -v -e 'Ignoring branch stack entry reserved bits' \
	-e 'Cannot read compilation info from binary' -c || true)
if [ "$errors" -eq 0 ] && [ "$warns" -eq 0 ]; then
	result ok "create_gcov: no error but the FINISHED_INIT record (type 82) its reader predates, no unexpected warning"
else
	result "not ok" "create_gcov: $errors unexpected errors, $warns unexpected warnings"
fi
# Samples mapped: every sample whose address lies in brwork. The rest are
# overflows taken while the task was in the kernel (the emulated counter
# overflows on a host timer, whatever the mode): perf gives them the
# kernel address (6.12) or 0 (7.x hides kernel addresses of user-only
# events). Their branch stacks are user branches and create_gcov uses
# them all the same. Quipper fails below 95% of samples mapped.
read -r nsamples nmapped < <(sed -n \
	's/.*Parser processed: .* \([0-9]*\) SAMPLE events, \([0-9]*\) of these were mapped.*/\1 \2/p' \
	"$DIR/create_gcov.log" | tail -n 1 | grep . || echo "0 0")
skid=$(awk '!/PERF_RECORD_/ && ($1 == "0" || $1 ~ /^ffffffff/) { n++ } END { print n + 0 }' \
	"$DIR/brstack.txt")
if [ "$nsamples" -gt 0 ] && [ $((nmapped * 100)) -ge $((nsamples * 95)) ] &&
   [ $((nsamples - nmapped)) -eq "$skid" ]; then
	result ok "create_gcov: mapped $nmapped of $nsamples samples ($((nmapped * 100 / nsamples))%, at least 95%); the $skid others overflowed in the kernel"
else
	result "not ok" "create_gcov: mapped $nmapped of $nsamples samples, $skid overflowed in the kernel"
fi

if [ -n "$KEEP" ]; then
	mkdir -p "$KEEP"
	cp -a "$DIR/." "$KEEP/"
fi
printf '%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ]
