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
build/ntrace dump "$out/qsort_cb.nt" | head -12
echo "== ntrace stat"
build/ntrace stat "$out/qsort_cb.nt"
