#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Add the emulated trace components to a QEMU virt device tree:
#   ntrace-dt.sh IN.dtb OUT.dtb
# One trace encoder per hart (compatible "riscv,trace-component", reg, cpus),
# a RAM sink, and the no-map reserved memory holding their register
# windows and the trace buffer, at NTRACE_BASE, NTRACE_MEM and
# NTRACE_MEMSIZE (tools/lab/run passes the lab's NT_* from lib.sh, as it
# passes them to the plugin).
set -euo pipefail

in=$1 out=$2
base=${NTRACE_BASE:?}
mem=${NTRACE_MEM:?}
memsize=${NTRACE_MEMSIZE:?}
dts=$(mktemp)
trap 'rm -f "$dts"' EXIT

dtc -q -I dtb -O dts -o "$dts" "$in"

# phandles of the cpu@N nodes, in hart order
mapfile -t cpus < <(awk '/^\t\tcpu@[0-9]+ \{/ { incpu = 1; next }
	incpu && /^\t\t\tphandle = / { gsub(/[<>;]/, "", $3); print $3; incpu = 0 }' "$dts")
[ "${#cpus[@]}" -gt 0 ] || { echo "ntrace-dt: no cpu phandles in $in" >&2; exit 1; }

hex() { printf '0x%x' "$1"; }
{
	echo '/ {'
	echo '	reserved-memory {'
	echo '		#address-cells = <0x02>;'
	echo '		#size-cells = <0x02>;'
	echo '		ranges;'
	printf '\t\ttrace-regs@%x {\n' "$base"
	printf '\t\t\treg = <0x00 %s 0x00 0x100000>;\n' "$(hex "$base")"
	echo '			no-map;'
	echo '		};'
	printf '\t\ttrace_buffer: trace-buffer@%x {\n' "$mem"
	printf '\t\t\treg = <0x00 %s 0x00 %s>;\n' "$(hex "$mem")" "$(hex "$memsize")"
	echo '			no-map;'
	echo '		};'
	echo '	};'
	for i in "${!cpus[@]}"; do
		addr=$((base + 0x1000 * i))
		printf '\ttrace-encoder@%x {\n' "$addr"
		echo '		compatible = "riscv,trace-component";'
		printf '\t\treg = <0x00 %s 0x00 0x1000>;\n' "$(hex "$addr")"
		printf '\t\tcpus = <%s>;\n' "${cpus[$i]}"
		echo '	};'
	done
	addr=$((base + 0x10000))
	printf '\ttrace-ramsink@%x {\n' "$addr"
	echo '		compatible = "riscv,trace-component";'
	printf '\t\treg = <0x00 %s 0x00 0x1000>;\n' "$(hex "$addr")"
	echo '		memory-region = <&trace_buffer>;'
	echo '	};'
	echo '};'
} >> "$dts"
dtc -q -I dts -O dtb -o "$out" "$dts"
