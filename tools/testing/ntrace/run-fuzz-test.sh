#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# run-fuzz-test.sh: run-fuzz.sh's verdicts, with a stand-in for the
# libFuzzer binary that ends each round the way a fuzzer does (a
# wall-clock timeout, a crash, the time up) and replays its input fast
# or not at all. TAP.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ntrace-fuzz-test.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
n=0 failed=0

# FAKE_ENDS: how each round ends (timeout, crash or clean), the last
# one repeated; FAKE_REPLAY: fast or spin. Each round's time asked is
# appended to FAKE_ROUNDS.
cat >"$work/fuzz_fake" <<'FAKE'
#!/usr/bin/env bash
if [[ $1 == -max_total_time=* ]]; then
	for a; do
		[[ $a == -artifact_prefix=* ]] && prefix=${a#-artifact_prefix=}
	done
	echo "${1#-max_total_time=}" >>"$FAKE_ROUNDS"
	IFS=, read -r -a ends <<<"$FAKE_ENDS"
	round=$(wc -l <"$FAKE_ROUNDS")
	((round > ${#ends[@]})) && round=${#ends[@]}
	end=${ends[round - 1]}
	echo "stat::number_of_executed_units: 1000"
	[[ $end == clean ]] && exit 0
	echo x >"${prefix}$end-012$round"
	[[ $end == timeout ]] && exit 70
	exit 1
fi
[[ $FAKE_REPLAY == spin ]] && while :; do :; done
exit 0
FAKE
chmod +x "$work/fuzz_fake"
mkdir -p "$work/seeds"
echo seed >"$work/seeds/a"

# case ENDS REPLAY SECONDS WANT_STATUS WANT_LINE WANT_ROUNDS WHAT
case_() {
	local out st rounds
	: >"$work/rounds"
	out=$(FAKE_ENDS=$1 FAKE_REPLAY=$2 FAKE_ROUNDS=$work/rounds \
		TMPDIR=$work bash "$here/run-fuzz.sh" "$work/fuzz_fake" "$3" \
		"$work/seeds")
	st=$?
	rounds=$(paste -sd, "$work/rounds")
	n=$((n + 1))
	if [[ $st -eq $4 ]] && grep -q -- "$5" <<<"$out" &&
	   [[ $rounds =~ ^$6$ ]]; then
		echo "ok $n - $7"
	else
		echo "not ok $n - $7 (status $st, rounds asked for $rounds s)"
		while IFS= read -r line; do echo "# $line"; done <<<"$out"
		failed=$((failed + 1))
	fi
}

case_ clean fast 30 0 "^ok 1 - fuzz_fake: 1000 runs in 1 rounds, no crash$" "30" \
	"a clean run: ok, one round"
case_ timeout,clean fast 30 0 \
	"^ok 1 - fuzz_fake: 2000 runs in 2 rounds, no crash; 1 wall-clock timeout whose input then ran alone in [0-9]* ms (the machine's load, not a hang)$" \
	"30,(2[5-9]|30)" \
	"a timeout whose input replays at once is the machine's load: ok, and the fuzzer goes on for the time left"
case_ timeout fast 30 0 \
	"^ok 1 - fuzz_fake: 5000 runs in 5 rounds, no crash; 5 wall-clock timeouts whose inputs then ran alone in [0-9, ]* ms (the machine's load, not a hang); stopped after 5 rounds with [0-9]* of 30 s left$" \
	"30(,(2[5-9]|30)){4}" \
	"a timeout in every round stops after five, ok, saying how much time was left"
case_ timeout spin 30 1 "did not finish in 5 s of CPU time either" "30" \
	"a timeout whose input spins when replayed alone is a hang: not ok"
case_ crash fast 30 1 "^not ok 1 - fuzz_fake: exit status 1, 1000 runs in 1 rounds, crash file .*/crash-0121 " "30" \
	"a crash is not replayed: not ok"
case_ timeout,crash fast 30 1 "^not ok 1 - fuzz_fake: exit status 1, 2000 runs in 2 rounds, crash file .*/crash-0122 " \
	"30,(2[5-9]|30)" \
	"a crash in a round after a timeout: not ok, with its own input"
echo "1..$n"
[[ $failed -eq 0 ]]
