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
# libFuzzer's -timeout is wall time: beside the lab's boards, or with
# the process stopped, an input that takes milliseconds can miss it. A
# timeout's input is replayed alone under the same limit in CPU time;
# only one that does not finish there is a hang. One that finishes is
# the machine's load: the fuzzer is started again on the corpus it has
# grown, for the time left, so that a loaded machine still fuzzes for
# the time asked (at most max_rounds rounds).
max_rounds=5
deadline=$((SECONDS + secs))
runs=0 rounds=0 passed=false replay=""
alone_ms=()
left=$secs
while :; do
	rounds=$((rounds + 1))
	"$bin" -max_total_time="$left" -timeout=$limit -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/artifacts/" \
		"$work/corpus" >"$work/log" 2>&1
	st=$?
	n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
	runs=$((runs + ${n:-0}))
	crash=$(find "$work/artifacts" -type f | head -1)
	if [[ $st -eq 0 && -z $crash ]]; then
		passed=true
		break
	fi
	[[ $st -eq 70 && $crash == */timeout-* ]] || break
	start=$(date +%s%N)
	# the braces keep bash's "Killed" out of the log
	if ! { (ulimit -t $limit && exec "$bin" "$crash") >"$work/replay" 2>&1; } 2>/dev/null; then
		replay="# replayed alone, it did not finish in $limit s of CPU time either"
		break
	fi
	alone_ms+=($((($(date +%s%N) - start) / 1000000)))
	rm -f "$crash"
	if ((SECONDS >= deadline || rounds >= max_rounds)); then
		passed=true
		break
	fi
	# SECONDS ticks on the wall clock's second, not the script's: the
	# first round gets the whole time asked, later ones what is left.
	left=$((deadline - SECONDS))
	((left < 1)) && left=1
done

note=""
if ((${#alone_ms[@]})); then
	printf -v ms '%s, ' "${alone_ms[@]}"
	ms=${ms%, }
	if ((${#alone_ms[@]} == 1)); then
		note="; 1 wall-clock timeout whose input then ran alone in $ms ms"
	else
		note="; ${#alone_ms[@]} wall-clock timeouts whose inputs then ran alone in $ms ms"
	fi
	note+=" (the machine's load, not a hang)"
	# the last round ended at a timeout: was it cut short?
	left=$((deadline - SECONDS))
	if ((${#alone_ms[@]} == rounds && left > 0)); then
		note+="; stopped after $rounds rounds with $left of $secs s left"
	fi
fi

if $passed; then
	echo "ok 1 - $name: $runs runs in $rounds rounds, no crash$note"
	echo "1..1"
	rm -rf "$work"
	exit 0
fi

echo "not ok 1 - $name: exit status $st, $runs runs in $rounds rounds, crash file ${crash:-none} (kept $work)"
[[ -n $replay ]] && echo "$replay"
if [[ -n $crash ]]; then
	echo "# input bytes (hex):"
	od -An -tx1 -v "$crash" | head -20 | sed 's/^/#/'
fi
grep -E '^(fuzz_reader:|==[0-9]+==ERROR|SUMMARY)' "$work/log" | head -5 | sed 's/^/# /'
grep -E '^ +#[0-9]+ .* in ' "$work/log" | grep -v -e libFuzzer -e 'fuzzer::' -e libc | head -10 | sed 's/^/# /'
echo "1..1"
exit 1
