#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/perf-decode.sh [PERF.DATA]
#
# What perf costs on top of the bare decoder: on one recording made on
# the lab board with the ntrace PMU, the host's perf (tools/lab/build-perf.sh
# --host) running 'perf script --itrace=b -F ip,addr' against libntrace's
# own 'ntrace decode --format branches', both to /dev/null, and 'perf
# inject --itrace=i1000il64' (the branch stacks AutoFDO reads) against
# 'ntrace decode --format brstack' with the same stacks, all built
# from this tree by the same compiler in the lab chroot. The baseline is
# the bare decoder; the figure is perf's time over it (the goal: at most
# 2x). Each is run 5 times and the fastest run counts; the time the
# chroot takes to start (the same command with 'true') is taken off.
#
# PERF.DATA defaults to the long recording selftests/ntrace/perf-test
# keeps ("bench": ntwork with many passes, per task, one hart). Needs
# root and the lab (it runs in the lab chroot). NTRACE_LAB_HOST_PERF_OUT
# (default $WORK/perf-host) is where the host's perf and libntrace are
# built and run from: a perf series under work can be timed without
# touching the lab's own.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/tools/lab/lib.sh"
need_root

series=$(newest_kernel)
data=${1:-$WORK/perf-test/$series-smp1/out/bench.data}
if [ ! -f "$data" ]; then
	echo "perf-decode: no recording $data: run selftests/ntrace/perf-test first" >&2
	exit 2
fi
data=$(realpath "$data")
case "$data" in
"$(realpath "$WORK")"/*) ;;
*) die "$data: the recording must be under $WORK (the chroot sees only that)" ;;
esac
cdata=$CWORK/${data#"$(realpath "$WORK")"/}
out=${NTRACE_LAB_HOST_PERF_OUT:-$WORK/perf-host}
# build-perf.sh refuses a directory the chroot does not see
"$root/tools/lab/build-perf.sh" --host "$out" > /dev/null
out=$(realpath "$out")
cperf=$CWORK/${out#"$(realpath "$WORK")"/}/perf
cntrace=$CWORK/${out#"$(realpath "$WORK")"/}/libntrace/bin/ntrace

tmp=$(mktemp -d "$WORK/perf-decode.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ctmp=$CWORK/${tmp#"$(realpath "$WORK")"/}
cc -O2 -Wall -Wextra -o "$tmp/perf_aux" "$root/selftests/ntrace/perf_aux.c"
"$tmp/perf_aux" "$data" "$tmp/stream" > /dev/null
src_bits=$("$tmp/perf_aux" -i "$data" | awk '$1 == 3 { print $2 + 0 }')
elf=$(dirname "$(dirname "$data")")/ntwork
# perf-test's layout: the workload the recording ran sits beside out/
[ -f "$elf" ] || die "$elf: no ntwork beside the recording's out/ directory"
celf=$CWORK/${elf#"$(realpath "$WORK")"/}

pin=()
if command -v taskset > /dev/null && [ "$(nproc)" -gt 1 ]; then
	pin=(taskset -c $(($(nproc) - 1)))
fi
best() { # command... -> fastest of 5 runs in the chroot, seconds
	local i t b=
	for i in 1 2 3 4 5; do
		t=$( { TIMEFORMAT=%R; time LAB_PIDNS=1 lab_chroot "${pin[@]}" "$@" > /dev/null 2>&1; } 2>&1)
		if [ -z "$b" ] || awk -v a="$t" -v b="$b" 'BEGIN { exit !(a < b) }'; then
			b=$t
		fi
	done
	echo "$b"
}

branches=$(lab_chroot "$cntrace" decode --elf "$celf" --src-bits "$src_bits" \
	--format branches --no-progress "$ctmp/stream" 2> /dev/null | grep -vc not-taken)
bytes=$(stat -c %s "$tmp/stream")

echo "== perf script --itrace=b against ntrace decode --format branches"
echo "recording: $data"
printf 'trace: %d bytes, %s taken transfers\n' "$bytes" "$branches"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
t_base=$(best "$cntrace" decode --elf "$celf" --src-bits "$src_bits" \
	--format branches --no-progress -o /dev/null "$ctmp/stream")
t_perf=$(best "$cperf" script -i "$cdata" --itrace=b -F ip,addr)
# what AutoFDO asks of perf: 64-entry stacks every 1000 instructions,
# against the same stacks printed by the bare decoder
t_base_stacks=$(best "$cntrace" decode --elf "$celf" --src-bits "$src_bits" \
	--format brstack --brstack-depth 64 --sample-period 1000 --no-progress \
	-o /dev/null "$ctmp/stream")
t_inject=$(best "$cperf" inject -i "$cdata" --itrace=i1000il64 -o "$ctmp/inj.data")
t_none=$(best true)
awk -v b="$t_base" -v p="$t_perf" -v s="$t_base_stacks" -v j="$t_inject" \
    -v z="$t_none" -v n="$branches" 'BEGIN {
	b -= z; p -= z; s -= z; j -= z
	if (b <= 0) b = 0.001
	if (s <= 0) s = 0.001
	printf "%-44s %8.3f s %10.2f M branches/s\n", "baseline: ntrace decode --format branches", b, n / b / 1e6
	printf "%-44s %8.3f s %10.2f M branches/s %6.2fx\n", "perf script --itrace=b -F ip,addr", p, n / p / 1e6, p / b
	printf "%-44s %8.3f s %10.2f M branches/s\n", "baseline: ntrace decode --format brstack", s, n / s / 1e6
	printf "%-44s %8.3f s %10.2f M branches/s %6.2fx\n", "perf inject --itrace=i1000il64", j, n / j / 1e6, j / s
	printf "(chroot start-up, %.3f s, taken off all; brstack: 64 entries every 1000 instructions)\n", z
}'
