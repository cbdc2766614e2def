# SPDX-License-Identifier: GPL-2.0
# Whether each branch stack of perf script -F cpu,ip,brstack is its
# hart's: oldest to newest, transfers that came one after the other on
# the sample's hart. A stack that took another hart's transfers in
# (harts tracing at once) is not.
#
# awk -f brstack-chains.awk h=0 HART0 h=1 HART1 ... brs=STACKS STACKS
# HARTn: the hart's taken transfers in order, "0xFROM 0xTO" a line.
# Prints: samples, stacks that are not a run of their hart's
# transfers, and the first such (cpu, ip, depth).
FILENAME != brs { n[h]++; t[h, n[h]] = $1 "/" $2; next }
{
	hart = substr($1, 2, length($1) - 2) + 0
	samples++
	depth = NF - 2
	if (!depth)
		next
	for (j = 3; j <= NF; j++) {
		split($j, e, "/")
		want[j - 2] = e[1] "/" e[2]
	}
	# the newest entry at i, the older ones before it; samples come
	# in their hart's order, so from the last one found on
	from = cur[hart] > depth ? cur[hart] : depth
	at = find(hart, from, n[hart])
	if (!at && from > depth)
		at = find(hart, depth, from - 1)
	if (at)
		cur[hart] = at
	else if (!bad++)
		first = $1 " " $2 " " depth " entries"
}
function find(hart, lo, hi,    i, k) {
	for (i = lo; i <= hi; i++) {
		if (t[hart, i] != want[1])
			continue
		for (k = 2; k <= depth; k++)
			if (t[hart, i - k + 1] != want[k])
				break
		if (k > depth)
			return i
	}
	return 0
}
END { printf "%d %d %s\n", samples, bad, first }
