#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# run-fuzz.sh FUZZER_BIN SECONDS [CORPUS]
#
# CORPUS defaults to corpus/<name without fuzz_> beside this script.
# Bounded libFuzzer run of FUZZER_BIN over a copy of the seed corpus (the
# fuzzer adds to its corpus directory; the tree must stay untouched).
# Prints one TAP result. On a failure the work directory is kept and the
# crash file's path and hex bytes are printed, so the input can be
# replayed with "FUZZER_BIN FILE".
set -uo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
	echo "usage: $0 FUZZER_BIN SECONDS [CORPUS]" >&2
	exit 2
fi
bin=$1
secs=$2
name=$(basename "$bin")
seeds=${3:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/corpus/${name#fuzz_}}

if [[ ! -x $bin ]]; then
	echo "not ok 1 - $name: $bin is not executable"
	echo "1..1"
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ntrace-fuzz.XXXXXX") || exit 1
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"

# -timeout: a single input may not take seconds; the reader is linear.
limit=5
"$bin" -max_total_time="$secs" -timeout=$limit -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$work/artifacts/" \
	"$work/corpus" >"$work/log" 2>&1
st=$?

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
crash=$(find "$work/artifacts" -type f | head -1)

# libFuzzer's -timeout is wall time: beside the lab's boards, or with
# the process stopped, an input that takes milliseconds can miss it. A
# timeout's input is replayed alone under the same limit in CPU time;
# only one that does not finish there is a hang. The run stopped at
# it either way, so the runs reported are those before it.
passed=false note="" replay=""
if [[ $st -eq 0 && -z $crash ]]; then
	passed=true
elif [[ $st -eq 70 && $crash == */timeout-* ]]; then
	start=$(date +%s%N)
	# the braces keep bash's "Killed" out of the log
	if { (ulimit -t $limit && exec "$bin" "$crash") >"$work/replay" 2>&1; } 2>/dev/null; then
		ms=$((($(date +%s%N) - start) / 1000000))
		passed=true
		note="; stopped at a wall-clock timeout whose input then ran alone in $ms ms (the machine's load, not a hang)"
	else
		replay="# replayed alone, it did not finish in $limit s of CPU time either"
	fi
fi

if $passed; then
	echo "ok 1 - $name: ${runs:-?} runs, no crash$note"
	echo "1..1"
	rm -rf "$work"
	exit 0
fi

echo "not ok 1 - $name: exit status $st, ${runs:-?} runs, crash file ${crash:-none} (kept $work)"
[[ -n $replay ]] && echo "$replay"
if [[ -n $crash ]]; then
	echo "# input bytes (hex):"
	od -An -tx1 -v "$crash" | head -20 | sed 's/^/#/'
fi
grep -E '^(fuzz_reader:|==[0-9]+==ERROR|SUMMARY)' "$work/log" | head -5 | sed 's/^/# /'
grep -E '^ +#[0-9]+ .* in ' "$work/log" | grep -v -e libFuzzer -e 'fuzzer::' -e libc | head -10 | sed 's/^/# /'
echo "1..1"
exit 1
