#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/qemu-trace.sh: what the emulated N-Trace hardware costs. One
# CPU-bound guest workload (tools/qemu/guest/traced.c, ROUNDS rounds) is
# timed inside the lab board four ways in the same run: without the
# plugin (baseline), with the plugin loaded but tracing off, and traced
# to the RAM sink in HTM (implicit return, repeated history) and in BTM,
# taking turns BENCH_TRACE_RUNS (5) times; slowdowns are of the minimums.
# Goal: under 2.5x.
# Needs the lab (tools/lab/lab-test) and root.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/tools/lab/lib.sh"
rounds=${BENCH_TRACE_ROUNDS:-2000}
runs=${BENCH_TRACE_RUNS:-5}
work=$WORK/qemu-trace-bench
rm -rf "$work"
mkdir -p "$work/share"

# the plugin of this tree; the module as the test built it against the
# lab's first kernel (the test builds it if it has not run yet)
make -s -C "$root" plugin
series=$(default_kernel)
ko=$WORK/ntrace-hw/mod-$series/ntrace_hw.ko
if [ ! -f "$ko" ]; then
	"$root/tools/qemu/ntrace-hw-test" >/dev/null || true
fi
cp "$ko" "$work/share/"
riscv64-linux-gnu-gcc -O2 -static -o "$work/share/traced" \
	"$root/tools/qemu/guest/traced.c"
cat > "$work/share/bench.sh" <<GUEST
cd /mnt/host
up() { awk '{ printf "%d", \$1 * 1000 }' /proc/uptime; }
t() { s=\$(up); "\$@" > /dev/null; e=\$(up); echo \$((e - s)); }
if [ "\$1" = htm ] || [ "\$1" = btm ]; then
	insmod ./ntrace_hw.ko
	if [ "\$1" = htm ]; then
		echo "mode=6 features=0x1c8 ctl=0x430000 size=1048576"
	else
		echo "mode=3 features=0 ctl=0x430000 size=1048576"
	fi > /proc/ntrace_hw/config
	t ./traced $rounds > ms
	cat /proc/ntrace_hw/status > status
else
	t ./traced $rounds notrace > ms
fi
GUEST

run_one() { # guest mode, extra run options... -> milliseconds
	local mode=$1
	shift
	rm -f "$work/share/ms"
	"$root/tools/lab/run" --kernel "$series" --smp 1 --share "$work/share" "$@" \
		--cmd "sh /mnt/host/bench.sh $mode" > "$work/run.log" 2>&1
	cat "$work/share/ms"
}

# Host timings drift (the same baseline has run 330 to 620 ms here): the
# four configurations take turns, $runs times, and the minimum counts.
plugin=(--ntrace "$root/build/ntrace-plugin.so")
echo "# workload: traced $rounds rounds (~$((rounds * 79))k user instructions), $runs runs each"
echo "# load: $(uptime | sed 's/.*load average/load average/')"
: > "$work/times"
for _ in $(seq "$runs"); do
	echo "$(run_one notrace) $(run_one notrace "${plugin[@]}")" \
	     "$(run_one htm "${plugin[@]}") $(run_one btm "${plugin[@]}")" \
		>> "$work/times"
done
awk '
function med(c,   n, i, v, t) {
	n = 0
	for (i = 1; i <= NR; i++) v[++n] = col[i, c]
	for (i = 1; i <= n; i++) for (t = i + 1; t <= n; t++)
		if (v[t] < v[i]) { x = v[i]; v[i] = v[t]; v[t] = x }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{ for (c = 1; c <= 4; c++) { col[NR, c] = $c; if (NR == 1 || $c < min[c]) min[c] = $c } }
END {
	split("baseline: no plugin|plugin loaded, not tracing|HTM+IR+RH traced to the sink|BTM traced to the sink", name, "|")
	printf "%-34s %8s %8s\n", "", "min ms", "median"
	for (c = 1; c <= 4; c++) printf "%-34s %8d %8d\n", name[c], min[c], med(c)
	printf "slowdown, plugin idle:      %.2fx\n", min[2] / min[1]
	printf "slowdown, tracing HTM+IR+RH: %.2fx (goal < 2.5x)\n", min[3] / min[1]
	printf "slowdown, tracing BTM:       %.2fx (goal < 2.5x)\n", min[4] / min[1]
}' "$work/times"
