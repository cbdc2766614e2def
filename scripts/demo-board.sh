#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make demo, on the lab board (busybox sh, one hart, the emulated N-Trace
# hardware loaded): record brwork with N-Trace and with CTR using the
# project's perf, and leave the recordings in the share for the host.
# What it prints is the demo's "on the board" part.
#
# Usage: sh /mnt/host/demo-board.sh CHROOT_PATH ITERATIONS
# CHROOT_PATH is where the share is in the lab chroot (/lab/demo/...):
# the board runs the programs from there, so that the paths perf's mmap
# events name are the files the host's perf reads.
path=$1 iters=$2

say() { echo "board# $*"; }
fail() { echo "board: $*"; exit 1; }

cd /mnt/host || fail "no share"
mkdir -p "$path" && mount --bind /mnt/host "$path" && cd "$path" ||
	fail "cannot mount the share at $path"
# CTR's recording runs brwork from the board's own RAM file system, at a
# path the host mirrors: run from 9p it spends more time in the kernel,
# and create_gcov gives up when more than 5% of the samples are kernel
# addresses (selftests/ctr/autofdo-test.sh).
lpath=${path%/*}/local
mkdir -p "$lpath" && cp brwork "$lpath/brwork" || fail "cannot copy brwork"

echo "isa: $(grep -m1 '^isa' /proc/cpuinfo | cut -d: -f2 | cut -c1-60)..."
say insmod ntrace.ko
insmod ./ntrace.ko || fail "insmod failed"
dmesg | grep -m3 -E 'ntrace' | sed 's/^\[[ 0-9.]*\] /  /'

# perf writes to /tmp and the file is copied: writing perf.data into the
# 9p share failed with EFAULT on 7.3 (Documentation/ntrace/perf.rst).
# an AUX buffer that holds the whole trace: perf on the emulated hart
# cannot always empty the default 4 MiB one in time, and a full buffer
# is a gap in the trace
say perf record -e ntrace//u -m ,16M -- ./brwork "$iters"
./perf record -e ntrace//u -m ,16M -o /tmp/ntrace.data -- ./brwork "$iters" \
	> /tmp/rec.out 2>&1
rc=$?
# perf without libbpf complains of what it cannot save; that is harmless
grep -v -e bpf -e btf -e schedstat /tmp/rec.out
[ $rc -eq 0 ] || fail "perf record -e ntrace//u failed ($rc)"
cp /tmp/ntrace.data ntrace.data
say 'perf report -D | grep -A2 AUXTRACE_INFO'
./perf report -D -i /tmp/ntrace.data 2>/dev/null | grep -A2 'AUXTRACE_INFO type' |
	sed 's/^[0-9]* [0-9]* 0x[0-9a-f]* \[0x[0-9a-f]*\]: //'
rmmod ntrace || fail "rmmod failed"

# AutoFDO wants CTR's whole 256-entry ring: perf record asks for
# kernel.perf_event_max_stack entries per sample (127 by default).
say sysctl kernel.perf_event_max_stack=256
echo 256 > /proc/sys/kernel/perf_event_max_stack
# 256 entries a sample fill the default ring buffer faster than perf
# empties it on the emulated hart: a bigger one loses nothing
say perf record -b -e cycles:u -c 20011 -m 8M -- "$lpath/brwork" "$iters"
./perf record -b -e cycles:u -c 20011 -m 8M -o /tmp/ctr.data -- \
	"$lpath/brwork" "$iters" > /tmp/rec.out 2>&1
rc=$?
grep -v -e bpf -e btf -e schedstat /tmp/rec.out
[ $rc -eq 0 ] || fail "perf record -b failed ($rc)"
cp /tmp/ctr.data ctr.data
./perf script -i /tmp/ctr.data -F ip,brstack --show-mmap-events > ctr.brstack ||
	fail "perf script -F ip,brstack failed"
echo "  $(grep -c /0x ctr.brstack) samples, up to $(awk -F/0x \
	'{ if (NF - 1 > m) m = NF - 1 } END { print m + 0 }' ctr.brstack) branches each"
exit 0
