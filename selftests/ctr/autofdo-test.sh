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
# llvm-profgen wants LBR-only lines: samples without branches dropped.
# perf.data is written to /tmp and copied: on 7.3, 9p fails perf's
# writes straight from its ring buffer with EFAULT.
"$LAB_DIR/run" --kernel "$SERIES" --variant "$VARIANT" --share "$DIR" --timeout 600 --cmd '
	cp /selftests/workload/brwork . &&
	echo 256 > /proc/sys/kernel/perf_event_max_stack &&
	perf record -b -e cycles:u -c 20011 -o /tmp/perf.data -- ./brwork 1000000 &&
	cp /tmp/perf.data perf.data &&
	perf script -i perf.data -F ip,brstack > brstack.txt' >&2 ||
	result "not ok" "board (linux $SERIES): perf record -b and perf script -F ip,brstack"
longest=$(awk -F/0x '{ if (NF - 1 > m) m = NF - 1 } END { print m + 0 }' \
	"$DIR/brstack.txt" 2>/dev/null || echo 0)
if [ -s "$DIR/brstack.txt" ] && [ "$longest" -gt 127 ]; then
	result ok "board (linux $SERIES): $(grep -c / "$DIR/brstack.txt") samples with branch stacks in brstack.txt, up to $longest entries"
else
	result "not ok" "board (linux $SERIES): brstack.txt is empty or its stacks are cut ($longest entries at most)"
fi

# llvm-profgen: LBR-only perf script lines (every line has from/to pairs).
grep / "$DIR/brstack.txt" > "$DIR/lbr.txt" || true
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
if lab_chroot create_gcov --binary="$CDIR/dwarf4/workload/brwork" \
	--profile="$CDIR/perf.data" --gcov="$CDIR/brwork.afdo" \
	-gcov_version=1 > "$DIR/create_gcov.log" 2>&1 &&
   [ -s "$DIR/brwork.afdo" ] && names_ok "$DIR/brwork.afdo" create_gcov; then
	result ok "create_gcov: AutoFDO profile names the hot functions ($(stat -c %s "$DIR/brwork.afdo") bytes)"
else
	grep -v 'Unknown event type' "$DIR/create_gcov.log" | sed 's/^/# /'
	result "not ok" "create_gcov: AutoFDO profile names the hot functions"
fi

if [ -n "$KEEP" ]; then
	mkdir -p "$KEEP"
	cp -a "$DIR/." "$KEEP/"
fi
printf '%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ]
