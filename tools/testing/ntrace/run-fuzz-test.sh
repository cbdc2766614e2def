#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# run-fuzz-test.sh: run-fuzz.sh's verdicts, with a stand-in for the
# libFuzzer binary that ends the way a fuzzer does (a wall-clock
# timeout, a crash) and replays its input fast or not at all. TAP.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ntrace-fuzz-test.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
n=0 failed=0

# FAKE_END: timeout or crash; FAKE_REPLAY: fast or spin
cat >"$work/fuzz_fake" <<'FAKE'
#!/usr/bin/env bash
if [[ $1 == -max_total_time=* ]]; then
	for a; do
		[[ $a == -artifact_prefix=* ]] && prefix=${a#-artifact_prefix=}
	done
	echo "stat::number_of_executed_units: 1234"
	echo x >"${prefix}$FAKE_END-0123"
	[[ $FAKE_END == timeout ]] && exit 70
	exit 1
fi
[[ $FAKE_REPLAY == spin ]] && while :; do :; done
exit 0
FAKE
chmod +x "$work/fuzz_fake"
mkdir -p "$work/seeds"
echo seed >"$work/seeds/a"

# case END REPLAY WANT_STATUS WANT_LINE WHAT
case_() {
	local out st
	out=$(FAKE_END=$1 FAKE_REPLAY=$2 TMPDIR=$work \
		bash "$here/run-fuzz.sh" "$work/fuzz_fake" 1 "$work/seeds")
	st=$?
	n=$((n + 1))
	if [[ $st -eq $3 ]] && grep -q -- "$4" <<<"$out"; then
		echo "ok $n - $5"
	else
		echo "not ok $n - $5 (status $st)"
		while IFS= read -r line; do echo "# $line"; done <<<"$out"
		failed=$((failed + 1))
	fi
}

case_ timeout fast 0 "^ok 1 - fuzz_fake: 1234 runs, no crash; stopped at a wall-clock timeout" \
	"a timeout whose input replays at once is the machine's load: ok"
case_ timeout spin 1 "did not finish in 5 s of CPU time either" \
	"a timeout whose input spins when replayed alone is a hang: not ok"
case_ crash fast 1 "^not ok 1 - fuzz_fake: exit status 1, 1234 runs, crash file" \
	"a crash is not replayed: not ok"
echo "1..$n"
[[ $failed -eq 0 ]]
