# SPDX-License-Identifier: GPL-2.0
# Sourced by the board suites (pmu-test, perf-test, drain-soak): reading
# the emulated hardware's ground truth (Documentation/lab.rst).

# The plugin keeps a truth file per hart, named by QEMU's vCPU index,
# which on the virt board is the hart ID. The driver's SRC, perf's cpu
# and whatever the board's programs say are Linux's CPU numbers, and
# Linux numbers its boot hart 0: the hart that won OpenSBI's lottery,
# hart 1 on some boots (a 7.3.4 board on 2026-12-04 logged
# "bf000000.trace-encoder: cpu 1"). Each go.sh first writes out/harts
# with cpu-harts.sh, a "CPU HART" line per CPU of /proc/cpuinfo.
truth_file() { # share cpu -> stdout: the plugin's file for that CPU
	local hart

	hart=$(awk -v c="$2" '$1 == c { print $2; exit }' "$1/out/harts" 2> /dev/null)
	# without the map, a file that does not exist: nothing compares equal
	echo "$1/ntrace-truth.${hart:-of-cpu-$2-unknown}"
}

# Whether out/harts names CPUs 0..n-1 once each and harts 0..n-1 once
# each; its lines as "cpuC=hartH" on stdout either way.
harts_ok() { # share n -> stdout, status
	awk -v n="$2" '
		{ printf "%scpu%s=hart%s", k++ ? " " : "", $1, $2 }
		NF == 2 && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ &&
			$1 < n && $2 < n && !c[$1]++ && !h[$2]++ { good++ }
		END { exit !(k == n && good == n) }' "$1/out/harts" 2> /dev/null
}

# The ground truth of session k (the k-th session a suite noted): the
# plugin marks every start of the sink from reset ("# sink"): the
# driver's probe once, then each session's first start. Session k starts
# at mark k + 1. With a third argument, that file gets how often another
# hart's drain paused the hart's encoder in the session and what the
# hart ran untraced meanwhile (the count and the sum of the plugin's
# "# untraced N" marks; Documentation/ntrace/driver.rst, "Draining").
truth_session() { # truth-file k [pauses-file] -> stdout
	awk -v want=$(($2 + 1)) -v pauses="${3:-}" '
		/^# sink/ { seg++; next }
		seg == want && /^# untraced / { k++; n += $3 }
		/^#/ { next }
		seg == want
		END { if (pauses != "") print k + 0, n + 0 > pauses }' "$1"
}

# The ecall of the vDSO's rt_sigreturn (li a7, 139; ecall) at every
# address the vDSO had ("vdso ADDR" lines): it never retires and no
# message says it ran (the signal's return goes elsewhere), as the
# exit_group ecall at the end of a trace, so a decoder cannot list it.
# Nothing when the image has no such pair.
sigreturn_ecalls() { # vdso-image images-file -> stdout
	local sigret

	sigret=$(od -An -tx4 -v -w4 "$1" 2> /dev/null | awk '
		prev == "08b00893" && $1 == "00000073" { print (NR - 1) * 4; exit }
		{ prev = $1 }')
	[ -n "$sigret" ] || return 0
	while read -r _ addr; do
		printf '0x%x\n' $((addr + sigret))
	done < "$2"
}
