#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/run.sh BUILD_DIR
#
# All ntrace benchmarks in one run, each with its baseline row:
#   1. encoder throughput (records/s) on real programs, >= 100M records
#      per option set (BENCH_RECORDS overrides)
#   2. bits per instruction of every option set on every test program
#   3. reader throughput (MB/s, messages/s) on >= 256 MiB of N-Trace
#      (BENCH_MIB overrides), whole buffer (a record a call and 64 a
#      call) and 64 KiB chunks
#   4. flow decoder throughput and peak memory on >= 300M-instruction
#      traces (BENCH_DECODE_INSNS overrides), of one source and of two
#      through a funnel (SRC), tracing at once or in turns
#   5. 'ntrace decode --format pcs -o /dev/null' on such a trace
#   6. perf script --itrace=b against ntrace decode --format branches on
#      a recording the lab board made (bench/perf-decode.sh; root and
#      the lab needed, skipped otherwise)
#
# Every figure comes with a baseline measured in the same run over the
# same bytes: a sum of every byte, about as fast as memory delivers
# them; the /base column (and the ratio of section 5) is the figure's
# MB/s over the baseline's.
#
# Binaries come from the top-level Makefile (O=BUILD_DIR); the programs
# and their PC traces from its nt-pctraces target. Timed runs are pinned
# to one core when taskset exists; the load average is printed with each
# section because the figures mean little on a busy machine.
set -euo pipefail

if [[ $# -ne 1 ]]; then
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
O=$(cd "$1" && pwd)
# the Makefile names its targets after O as given: keep it relative when
# it is inside the tree, so "make bench" and this script agree on them
case $O in
"$root"/*) mk_O=${O#"$root"/} ;;
*) mk_O=$O ;;
esac

records=${BENCH_RECORDS:-100000000}
mib=${BENCH_MIB:-256}
enc_programs=(qsort_cb interp)
codec_program=qsort_cb
all_programs=(recursion dispatch jumptable qsort_cb longjmp checksum deepcall
	      rle interp strings signal rsort vvadd median quicksort)

make -s -C "$root" O="$mk_O" "$mk_O/bench/bench_encoder" \
	"$mk_O/bench/bench_codec" "$mk_O/ntrace" nt-pctraces >/dev/null

P=$O/programs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ntrace-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

pin=()
if command -v taskset >/dev/null && [[ $(nproc) -gt 1 ]]; then
	# the last CPU: the first one tends to take the interrupts
	pin=(taskset -c $(($(nproc) - 1)))
fi

load() {
	echo "# load: $(uptime | sed 's/.*load average/load average/')"
}

echo "# ntrace benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# cpu: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)," \
     "$(nproc) cpus; timed runs: ${pin[*]:-not pinned}"
echo "# compiler: $(${CC:-cc} --version | head -1)"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
	echo "# source: $(git -C "$root" describe --always --dirty)"
fi
echo

echo "## 1. encoder throughput (goal: > 200M instructions/s on one core)"
for p in "${enc_programs[@]}"; do
	load
	"${pin[@]}" "$O/bench/bench_encoder" -n "$records" "$P/$p" "$P/$p.pcs"
	echo
done

echo "## 2. bits per instruction"
args=()
for p in "${all_programs[@]}"; do
	args+=("$P/$p" "$P/$p.pcs")
done
"$O/bench/bench_encoder" --bits "${args[@]}"
echo

echo "## 3. reader throughput (goal: >= 1 GB/s)"
# stream options must match between 'ntrace encode' and the reader
enc() {
	local name=$1
	shift
	"$O/ntrace" encode --elf "$P/$codec_program" \
		--pc-trace "$P/$codec_program.pcs" -o "$tmp/$name.nt" "$@"
}
enc btm --mode btm
enc htm
enc htm-ts-ctx --timestamps --context --sync-period 4096
enc htm-src4-ir3 --src-bits 4 --src-id 9 --implicit-return 3 \
	--repeat-history --extend-addr-msb
load
"${pin[@]}" "$O/bench/bench_codec" -m "$mib" --label "$codec_program/btm" \
	"$tmp/btm.nt"
"${pin[@]}" "$O/bench/bench_codec" -m "$mib" --label "$codec_program/htm" \
	"$tmp/htm.nt"
"${pin[@]}" "$O/bench/bench_codec" -m "$mib" --timestamps \
	--label "$codec_program/htm+ts+ctx" "$tmp/htm-ts-ctx.nt"
"${pin[@]}" "$O/bench/bench_codec" -m "$mib" --src-bits 4 --extend-addr-msb \
	--label "$codec_program/htm+src4+ir3" "$tmp/htm-src4-ir3.nt"
load
echo

echo "## 4. flow decoder (goal: >= 1G instructions/s events only, >= 300M"
echo "##    with the PC list; peak memory independent of the trace length)"
make -s -C "$root" O="$mk_O" "$mk_O/bench/bench_decode" >/dev/null
for p in qsort_cb interp; do
	load
	"${pin[@]}" "$O/bench/bench_decode" \
		-n "${BENCH_DECODE_INSNS:-300000000}" "$P/$p" "$P/$p.pcs"
	echo
done

echo "## 5. ntrace decode --format pcs -o /dev/null (goal: >= 300M instructions/s)"
# copies of one trace, each from a sync to a ProgTraceCorrelation, are
# one long valid trace; the goal is for every option set, and BTM's has
# the most messages per instruction
insns=${BENCH_DECODE_INSNS:-300000000}
per=$(wc -l <"$P/$codec_program.pcs")
copies=$((insns / per + 1))
modes=(htm btm)
for mode in "${modes[@]}"; do
	for ((i = 0; i < copies; i++)); do
		cat "$tmp/$mode.nt"
	done >"$tmp/$codec_program-$mode.nt"
done
# the modes take turns, so that a burst of load on the host slows one
# run of each rather than every run of one (as bench_decode's rows)
load
for mode in "${modes[@]}"; do : >"$tmp/times-$mode"; done
for _ in 1 2 3; do
	for mode in "${modes[@]}"; do
		{ TIMEFORMAT='%U %S'; time "${pin[@]}" "$O/ntrace" decode \
			--elf "$P/$codec_program" --format pcs -o /dev/null \
			--stats --no-progress "$tmp/$codec_program-$mode.nt" \
			2>"$tmp/stats-$mode"; } 2>>"$tmp/times-$mode"
	done
done
for mode in "${modes[@]}"; do
	trace=$tmp/$codec_program-$mode.nt
	n=$(awk '/^instructions/ { print $2 }' "$tmp/stats-$mode")
	bytes=$(stat -c %s "$trace")
	# the same file through the library, with its byte-sum baseline
	"${pin[@]}" "$O/bench/bench_decode" -t "$trace" "$P/$codec_program" \
		"$P/$codec_program.pcs" | tee "$tmp/lib" | sed '$d'
	base=$(awk '$2 == "byte-sum" { print $8 }' "$tmp/lib")
	# user plus system time of each run, best and worst
	awk -v m="$mode" -v n="$n" -v b="$bytes" -v base="$base" '
	{ r = $1 + $2; if (NR == 1 || r < t) t = r; if (r > w) w = r }
	END {
		printf "cli pcs %s: %.1f M insns, %.2f MB, best of 3 %.3f cpu-s " \
		       "(spread %.2f): %.1f M insns/s, %.1f MB/s, /base %.3f\n",
		       m, n / 1e6, b / 1e6, t, w / t, n / t / 1e6, b / t / 1e6,
		       b / t / 1e6 / base
	}' "$tmp/times-$mode"
done
load

echo
echo "== 6. perf on the N-Trace of a lab recording"
if [[ $(id -u) -eq 0 ]]; then
	bash "$root/bench/perf-decode.sh" | grep -v '^\[lab' ||
		echo "skipped: no lab recording (selftests/ntrace/perf-test makes it)"
else
	echo "skipped: needs root and the lab"
fi
