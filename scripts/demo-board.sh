#!/bin/sh
# Runs on the lab board (busybox sh): what the board offers perf.
echo "isa: $(grep -m1 '^isa' /proc/cpuinfo | cut -d: -f2)"
dmesg | grep -m2 -i -E 'riscv-pmu-sbi|sscof'
perf stat -e cycles,instructions -- /bin/true 2>&1 |
	grep -E 'cycles|instructions'
# overflow interrupts reach the kernel: samples from a busy loop (QEMU
# sometimes delivers none to a run; see Documentation/lab.rst)
for try in 1 2 3; do
	perf record -o /tmp/perf.data -e cycles -c 20000 -- \
		/selftests/workload/spin 2000000 2>&1 | grep -E 'spin:|samples'
	perf report -i /tmp/perf.data --stdio --sort comm,sym 2>/dev/null |
		grep '%' | head -4 | grep . && break
done
