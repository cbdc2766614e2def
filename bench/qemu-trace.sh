#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/qemu-trace.sh: what the emulated N-Trace hardware costs. One
# CPU-bound guest workload (tools/qemu/guest/traced.c, ROUNDS rounds) is
# timed inside the lab board three ways in the same run: without the
# plugin (baseline), with the plugin loaded but tracing off, and traced
# in HTM with the trace going to the RAM sink. Goal: under 2.5x.
# Needs the lab (tools/lab/lab-test) and root.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/tools/lab/lib.sh"
rounds=${BENCH_TRACE_ROUNDS:-2000}
work=$WORK/qemu-trace-bench
rm -rf "$work"
mkdir -p "$work/share"

# the test builds the plugin and the module; reuse what it leaves
if [ ! -f "$WORK/ntrace-hw/ntrace-plugin.so" ]; then
	"$root/tools/qemu/ntrace-hw-test" >/dev/null || true
fi
cp "$WORK/ntrace-hw/share/ntrace_hw.ko" "$work/share/"
riscv64-linux-gnu-gcc -O2 -static -o "$work/share/traced" \
	"$root/tools/qemu/guest/traced.c"
cat > "$work/share/bench.sh" <<GUEST
cd /mnt/host
up() { awk '{ printf "%d", \$1 * 1000 }' /proc/uptime; }
t() { s=\$(up); "\$@" > /dev/null; e=\$(up); echo \$((e - s)); }
if [ "\$1" = trace ]; then
	insmod ./ntrace_hw.ko
	echo "mode=6 features=0x1c8 ctl=0x430000 size=1048576" > /proc/ntrace_hw/config
	t ./traced $rounds > ms
	cat /proc/ntrace_hw/status > status
else
	t ./traced $rounds notrace > ms
fi
GUEST

run_one() { # label, extra run options..., guest mode
	local label=$1 mode=$2
	shift 2
	rm -f "$work/share/ms"
	"$root/tools/lab/run" --smp 1 --share "$work/share" "$@" \
		--cmd "sh /mnt/host/bench.sh $mode" > "$work/$label.log" 2>&1
	printf '%-34s %8s ms\n' "$label" "$(cat "$work/share/ms")"
}

echo "# workload: traced $rounds rounds (~$((rounds * 79))k user instructions)"
echo "# load: $(uptime | sed 's/.*load average/load average/')"
base=$(run_one "baseline: no plugin" notrace | tee /dev/stderr | awk '{print $(NF-1)}')
run_one "plugin loaded, not tracing" notrace --ntrace "$WORK/ntrace-hw/ntrace-plugin.so" |
	tee /dev/stderr | awk '{print $(NF-1)}' > "$work/idle"
run_one "HTM+IR+RH traced to the sink" trace --ntrace "$WORK/ntrace-hw/ntrace-plugin.so" |
	tee /dev/stderr | awk '{print $(NF-1)}' > "$work/traced"
echo "slowdown, plugin idle:  $(awk -v b="$base" '{printf "%.2fx", $1 / b}' "$work/idle")"
echo "slowdown, tracing:      $(awk -v b="$base" '{printf "%.2fx", $1 / b}' "$work/traced") (goal < 2.5x)"
