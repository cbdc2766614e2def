# SPDX-License-Identifier: GPL-2.0
# Check CTR branch stacks against the program's code, the way llvm-profgen
# reads them, and say how much of llvm-profgen's "not on instruction
# boundary" figure its RISC-V instruction classes explain.
#
#   awk -f afdo-ranges.awk DISASSEMBLY BRSTACK
#
# DISASSEMBLY: objdump -d -M no-aliases --no-show-raw-insn of the binary
# (no aliases: c.jalr and jalr, c.j and jal must stay apart).
# BRSTACK: perf script -F ip,brstack (mmap lines and samples without
# branches are skipped).
#
# Prints one line of key=value figures:
#   entries    branch records read
#   bad_from   records whose source is not a control transfer instruction
#   bad_to     records whose target is not the start of an instruction
#   ranges     fall-through ranges, target of a record to the source of
#              the next newer one (llvm-profgen's ranges, by occurrence)
#   bad_range  ranges that start or end off an instruction or whose end
#              is not a control transfer: really not on a boundary
#   unflagged  ranges that end at a jal, jalr or c.jr: LLVM's RISC-V
#              instruction table marks none of them as a call, return or
#              branch, so llvm-profgen takes them for range ends that are
#              not control transfers
#   unflagged_pct, bad_range_pct  the same as a percentage of ranges

function hex(s) {
	sub(/^0x0*/, "", s)
	return s == "" ? "0" : s
}

function transfer(m) {
	return m ~ /^(beq|bne|blt|bge|bltu|bgeu|c\.beqz|c\.bnez|jal|jalr|c\.j|c\.jr|c\.jalr|c\.jal)$/
}

FNR == NR {
	if ($0 ~ /^ +[0-9a-f]+:\t/) {
		split($0, f, "\t")
		a = $1
		sub(/:$/, "", a)
		split(f[2], m, " ")
		insn[a] = m[1]
	}
	next
}

$0 ~ /PERF_RECORD_/ { next }

{
	prev_from = ""
	for (i = 2; i <= NF; i++) {
		if (split($i, e, "/") < 2)
			continue
		from = hex(e[1])
		to = hex(e[2])
		entries++
		if (!(from in insn) || !transfer(insn[from]))
			bad_from++
		if (!(to in insn))
			bad_to++
		if (prev_from != "") {
			ranges++
			if (!(to in insn) || !(prev_from in insn) ||
			    !transfer(insn[prev_from]))
				bad_range++
			else if (insn[prev_from] ~ /^(jal|jalr|c\.jr)$/)
				unflagged++
		}
		prev_from = from
	}
}

END {
	printf "entries=%d bad_from=%d bad_to=%d ranges=%d bad_range=%d unflagged=%d",
		entries, bad_from, bad_to, ranges, bad_range, unflagged
	printf " unflagged_pct=%.2f bad_range_pct=%.2f\n",
		ranges ? 100 * unflagged / ranges : 0,
		ranges ? 100 * bad_range / ranges : 0
}
