#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Add the emulated trace components to a QEMU virt device tree:
#   ntrace-dt.sh IN.dtb OUT.dtb
# One trace encoder per hart, a trace funnel when there is more than one
# hart, a RAM sink, and the no-map reserved memory holding their register
# windows and the trace buffer, at NTRACE_BASE, NTRACE_MEM and
# NTRACE_MEMSIZE (tools/lab/run passes the lab's NT_* from lib.sh, as it
# passes them to the plugin). Every component is compatible
# "riscv,trace-component" with its 4 KiB window in reg (a driver reads
# its type from tr??Impl); how trace flows between them is an of_graph,
# as CoreSight describes it: encoder N -> funnel input N -> sink, or with
# one hart encoder 0 -> sink. Documentation/devicetree/bindings/riscv/
# riscv,trace-component.yaml is the binding.
set -euo pipefail

in=$1 out=$2
base=${NTRACE_BASE:?}
mem=${NTRACE_MEM:?}
memsize=${NTRACE_MEMSIZE:?}
dts=$(mktemp)
trap 'rm -f "$dts"' EXIT

# QEMU's tree has warnings of its own (its cpu interrupt controllers
# have no #address-cells): they are not ours to report
dtc -q -I dtb -O dts -o "$dts" "$in"

# the cpu@N nodes, in hart order (QEMU names them by hart ID)
mapfile -t cpus < <(awk '/^\t\tcpu@[0-9]+ \{/ { print $1 }' "$dts" | sort -t@ -k2,2n)
[ "${#cpus[@]}" -gt 0 ] || { echo "ntrace-dt: no cpu nodes in $in" >&2; exit 1; }
nharts=${#cpus[@]}

hex() { printf '0x%x' "$1"; }
# The labels exist only in the source appended here: dtc turns the
# references into phandles when it compiles the whole.
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
		remote=funnel_in$i
		[ "$nharts" -gt 1 ] || remote=sink_in
		printf '\ttrace-encoder@%x {\n' "$addr"
		echo '		compatible = "riscv,trace-component";'
		printf '\t\treg = <0x00 %s 0x00 0x1000>;\n' "$(hex "$addr")"
		printf '\t\tcpus = <&{/cpus/%s}>;\n' "${cpus[$i]}"
		echo '		out-ports {'
		echo '			port {'
		printf '\t\t\t\tte%d_out: endpoint {\n' "$i"
		printf '\t\t\t\t\tremote-endpoint = <&%s>;\n' "$remote"
		echo '				};'
		echo '			};'
		echo '		};'
		echo '	};'
	done
	addr=$((base + 0x10000))
	remote=funnel_out
	[ "$nharts" -gt 1 ] || remote=te0_out
	printf '\ttrace-ramsink@%x {\n' "$addr"
	echo '		compatible = "riscv,trace-component";'
	printf '\t\treg = <0x00 %s 0x00 0x1000>;\n' "$(hex "$addr")"
	echo '		memory-region = <&trace_buffer>;'
	echo '		in-ports {'
	echo '			port {'
	echo '				sink_in: endpoint {'
	printf '\t\t\t\t\tremote-endpoint = <&%s>;\n' "$remote"
	echo '				};'
	echo '			};'
	echo '		};'
	echo '	};'
	# the funnel's input N is hart N's encoder (the trFunnelDisInput bit)
	if [ "$nharts" -gt 1 ]; then
		addr=$((base + 0x18000))
		printf '\ttrace-funnel@%x {\n' "$addr"
		echo '		compatible = "riscv,trace-component";'
		printf '\t\treg = <0x00 %s 0x00 0x1000>;\n' "$(hex "$addr")"
		echo '		in-ports {'
		echo '			#address-cells = <1>;'
		echo '			#size-cells = <0>;'
		for i in "${!cpus[@]}"; do
			printf '\t\t\tport@%x {\n' "$i"
			printf '\t\t\t\treg = <%d>;\n' "$i"
			printf '\t\t\t\tfunnel_in%d: endpoint {\n' "$i"
			printf '\t\t\t\t\tremote-endpoint = <&te%d_out>;\n' "$i"
			echo '				};'
			echo '			};'
		done
		echo '		};'
		echo '		out-ports {'
		echo '			port {'
		echo '				funnel_out: endpoint {'
		echo '					remote-endpoint = <&sink_in>;'
		echo '				};'
		echo '			};'
		echo '		};'
		echo '	};'
	fi
	echo '};'
} >> "$dts"
# Only the warnings about QEMU's nodes are silenced (the one above, and
# its interrupts-extended cells, plain numbers once decompiled): one
# about what is added here, the graph checks above all, shows on stderr.
dtc -W no-interrupt_provider -W no-interrupts_extended_property \
	-I dts -O dtb -o "$out" "$dts"
