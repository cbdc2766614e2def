#!/usr/bin/env bash
# The project's whole test run (`make check`): installs what is missing,
# builds with gcc, clang and the sanitizers, runs every TAP test program
# and the bounded fuzzer, then the lab tests when the lab is present, and
# ends with one "N passed, N failed" line.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root" || exit 1
T=tools/testing/ntrace
FUZZ_SECONDS=${NTRACE_FUZZ_SECONDS:-60}
# Every program's full output stays here after the run, for the failures
# whose lines below are not enough.
logs=$root/build/test-logs
rm -rf "$logs"
mkdir -p "$logs"
passed=0
failed=0

# run_tap NAME CMD...: count the TAP lines CMD prints; a non-zero exit
# without a failing line, or no line at all, is one failure more. A
# failing line brings the diagnostics ("# ...") that follow it. With
# SHOW_TAP=1 every TAP and diagnostic line is shown (the board tests:
# they name the kernel that ran and print the lab's manifest).
run_tap() {
	tap_start "$@"
	tap_report "$1"
}

# tap_start NAME CMD...: run_tap's command, in the background; its lines
# come out at tap_report NAME. The board suites each keep one core busy
# (QEMU's single TCG thread) on a 2-core machine, so two of them side
# by side take about the time of one.
declare -A tap_pid tap_show
tap_log() { # NAME: where its output goes
	echo "$logs/${1//[^A-Za-z0-9_.-]/_}.log"
}

tap_start() {
	tap_after -- "$@"
}

any_exists() { # FILE...
	local f
	for f; do
		[[ -e $f ]] && return 0
	done
	return 1
}

# tap_after [JOB...] -- NAME CMD...: tap_start, but CMD starts once any
# one of the JOBs has ended (all of them may have started already)
tap_after() {
	local after=() name log
	while [[ $1 != -- ]]; do
		after+=("$(tap_log "$1").end")
		shift
	done
	name=$2
	log=$(tap_log "$name")
	shift 2
	echo "== $name"
	tap_show[$name]=${SHOW_TAP:-0}
	# start and end times from the job itself: reports come in a fixed
	# order, and a job may wait for another before it starts
	{
		while ((${#after[@]})) && ! any_exists "${after[@]}"; do
			sleep 2
		done
		echo "$SECONDS" > "$log.start"
		"$@"
		st=$?
		echo "$SECONDS" > "$log.end"
		exit "$st"
	} >"$log" 2>"$log.stderr" &
	tap_pid[$name]=$!
}

tap_report() {
	local name=$1 log st okc notc start end
	log=$(tap_log "$1")
	wait "${tap_pid[$name]}"
	st=$?
	okc=$(grep -c '^ok ' "$log")
	notc=$(grep -c '^not ok ' "$log")
	if [[ ${tap_show[$name]} = 1 ]]; then
		grep -E '^(ok|not ok|Bail out|#)' "$log"
	else
		awk '/^(not ok|Bail out)/ { shown++; show = shown <= 20; if (show) print; next }
		     /^#/ && show { if (++lines[shown] <= 30) print; next }
		     { show = 0 }' "$log"
	fi
	if [[ $st -ne 0 && $notc -eq 0 ]] || [[ $okc -eq 0 && $notc -eq 0 ]]; then
		echo "$name: exit status $st without a TAP failure; last lines:"
		tail -20 "$log.stderr"
		tail -20 "$log"
		notc=$((notc + 1))
	fi
	[[ $notc -eq 0 ]] || echo "$name: full output in $log and $log.stderr"
	# the time each part takes, for whoever has to keep the whole under
	# CI's limit (Documentation/lab.rst, "Measured times")
	end=$(cat "$log.end" 2>/dev/null || echo "$SECONDS")
	# none: killed before its turn came
	start=$(cat "$log.start" 2>/dev/null || echo "$end")
	echo "# $name took $((end - start)) s"
	echo "$name: $okc passed, $notc failed"
	passed=$((passed + okc))
	failed=$((failed + notc))
}

# step NAME CMD...: one pass/fail item for a command that is not TAP
step() {
	local name=$1 log="$logs/step.log"
	shift
	echo "== $name"
	if "$@" >"$log" 2>&1; then
		passed=$((passed + 1))
	else
		echo "FAILED: $name; last lines:"
		tail -30 "$log"
		failed=$((failed + 1))
		return 1
	fi
}

jobs=$(nproc 2>/dev/null || echo 2)

if ! bash scripts/install-deps.sh; then
	echo "cannot install the build dependencies"
	echo "0 passed, 1 failed"
	exit 1
fi

if ! step "gcc build (-Wall -Wextra -Werror)" \
	make -j"$jobs" O=build all tests nt-pctraces; then
	echo "$passed passed, $failed failed"
	exit 1
fi
# The virtual RISC-V board, when this tree has it (NTRACE_SKIP_LAB=1 skips
# it for a quick host-only run). Its build (chroot, kernels, perf) and
# first board tests run beside the host tests below.
lab=
[[ -x tools/lab/lab-test && -z ${NTRACE_SKIP_LAB:-} ]] && lab=1
if [[ -n $lab ]]; then
	SHOW_TAP=1 tap_start lab tools/lab/lab-test
fi

step "Documentation (sphinx-build -W)" make O=build docs-check
step "clang build (-Wall -Wextra -Werror)" \
	make -j"$jobs" O=build-clang CC=clang all tests

for t in test_codec test_encoder test_insn test_bluespec; do
	run_tap "$t" build/tests/$t
done
run_tap test_programs build/tests/test_programs build/programs
run_tap test_decode build/tests/test_decode build/programs
run_tap insn-objdump bash $T/insn-objdump.sh build/tests/insn_objdump_check \
	build/insn-objdump
run_tap test-cli bash $T/test-cli.sh build/ntrace build/programs

# the same programs once more with AddressSanitizer and UBSan
if step "ASan/UBSan build" make -j"$jobs" O=build-san SAN=1 all tests; then
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
	for t in test_codec test_encoder test_insn test_bluespec; do
		run_tap "$t (asan)" build-san/tests/$t
	done
	run_tap "test_programs (asan)" build-san/tests/test_programs build/programs
	run_tap "test_decode (asan)" build-san/tests/test_decode build/programs
	run_tap "test-cli (asan)" bash $T/test-cli.sh build-san/ntrace build/programs
	unset ASAN_OPTIONS UBSAN_OPTIONS
fi

# run-fuzz.sh's verdicts (a wall-clock timeout replayed alone)
run_tap run-fuzz bash $T/run-fuzz-test.sh

if step "libFuzzer build" make O=build build/fuzz/fuzz_reader \
	build/fuzz/fuzz_decode; then
	run_tap "fuzz_reader ${FUZZ_SECONDS}s" bash $T/run-fuzz.sh \
		build/fuzz/fuzz_reader "$FUZZ_SECONDS"
	# the decoder walks one fixed program; the seeds are its traces
	NTRACE_FUZZ_ELF=build/programs/qsort_cb \
		run_tap "fuzz_decode ${FUZZ_SECONDS}s" bash $T/run-fuzz.sh \
		build/fuzz/fuzz_decode "$FUZZ_SECONDS"
fi

if [[ -n $lab ]]; then
	tap_report lab
	# the lab's package step against a mirror that serves a bad index
	run_tap lab-mirror tools/lab/mirror-test
	# the trace components' DT binding and the board's tree, dt-schema
	run_tap "ntrace-dt" tools/qemu/ntrace-dt-test
	# the emulated N-Trace hardware on that board (needs the lab built)
	run_tap "ntrace-hw" tools/qemu/ntrace-hw-test build
	# Three board suites, two of them on the debug kernel (lockdep,
	# KASAN, kmemleak), that kernel's build and the AutoFDO tests, in
	# two lanes side by side: a suite keeps one core busy, the build
	# two. Each lane starts its next job as soon as its last one ends,
	# so neither waits for the other's. What the suites build in build/
	# is built first.
	step "host tools for the board suites" \
		make -j"$jobs" O=build build/ntrace build/ntrace-plugin.so
	debug_env=(env NTRACE_LAB_VARIANT=debug NTRACE_LAB_SMP=2
		   NTRACE_LAB_KERNELS="$(bash -c '. tools/lab/lib.sh && newest_kernel')")
	# One lane: the N-Trace driver and its perf PMU on that hardware,
	# recordings decoded against the ground truth, on every lab kernel;
	# then the same through perf record with patches/perf, perf decoding
	# it on the host.
	tap_start "ntrace-pmu" selftests/ntrace/pmu-test build
	tap_after "ntrace-pmu" -- "ntrace-perf" selftests/ntrace/perf-test build
	# The other: the debug kernel of the newest base is built and runs
	# the CTR selftests on two harts, so that locking between harts is
	# checked, then the PMU suite.
	SHOW_TAP=1 tap_start "lab debug" "${debug_env[@]}" tools/lab/lab-test
	tap_after "lab debug" -- "ntrace-pmu debug" "${debug_env[@]}" \
		selftests/ntrace/pmu-test build
	# CTR and N-Trace branch stacks through perf into llvm-profgen and
	# create_gcov, the two profiles compared, a clang rebuild with the
	# N-Trace one counted on the board, on each kernel the lab built,
	# one after the other, in whichever lane ends first: never a third
	# board beside two, which made the emulated counters' host-timer
	# overflows land in the kernel often enough to take CTR's mapped
	# samples under 95%. On a warm cache the debug lane ends first, on a
	# cold one (the debug kernel's build) the other.
	prev=("ntrace-perf" "ntrace-pmu debug")
	afdo=()
	for k in $(bash -c '. tools/lab/lib.sh && lab_kernels' 2>/dev/null |
		awk '{print $1}'); do
		tap_after "${prev[@]}" -- "autofdo $k" \
			selftests/ctr/autofdo-test.sh --kernel "$k" --build build
		prev=("autofdo $k")
		afdo+=("autofdo $k")
	done
	for job in "ntrace-pmu" "lab debug" "ntrace-perf" "ntrace-pmu debug" \
		"${afdo[@]}"; do
		tap_report "$job"
	done
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
