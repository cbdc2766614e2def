#!/usr/bin/env bash
# The main job: trace a real RISC-V program and look at the N-Trace it
# produces. Installs what it needs on a fresh Debian 12 machine.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
make -j"$(nproc)" O=build all build/programs/qsort_cb.pcs >/dev/null

prog=build/programs/qsort_cb
out=build/demo
mkdir -p "$out"
echo "== $prog ran under qemu-riscv64: $(wc -l <"$prog.pcs") instructions"
for opts in "--mode btm" "--mode htm" \
	"--mode htm --implicit-return 3 --repeat-history --sequential-jump"; do
	echo "== ntrace encode $opts"
	# shellcheck disable=SC2086
	build/ntrace encode --elf "$prog" --pc-trace "$prog.pcs" \
		-o "$out/qsort_cb.nt" --stats $opts 2>&1 | tail -1
done
echo "== ntrace dump (first messages)"
build/ntrace dump "$out/qsort_cb.nt" >"$out/qsort_cb.dump"
head -12 "$out/qsort_cb.dump"
echo "== ntrace stat"
build/ntrace stat "$out/qsort_cb.nt"

# The same program's branches, back from the trace
echo "== ntrace decode --format branches (first transfers)"
build/ntrace decode --elf "$prog" "$out/qsort_cb.nt" --format branches \
	-o "$out/qsort_cb.branches"
head -8 "$out/qsort_cb.branches"

# The virtual RISC-V board: CTR, Sscofpmf, perf sampling on our kernel
echo "== the lab board (builds itself on the first run, a few minutes)"
if [[ $(id -u) -ne 0 ]] && ! sudo -n true 2>/dev/null; then
	echo "skipped: the board needs root or password-less sudo"
	exit 0
fi
tools/lab/lab-test >/dev/null
share=$(mktemp -d)
trap 'rm -rf "$share"' EXIT
cp scripts/demo-board.sh "$share/"
tools/lab/run --smp 2 --share "$share" --cmd 'sh /mnt/host/demo-board.sh'
