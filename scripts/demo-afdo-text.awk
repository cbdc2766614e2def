# SPDX-License-Identifier: GPL-2.0
# make demo: perf script -F ip,brstack --show-mmap-events output of one
# program -> AutoFDO's text sample format (create_gcov --profiler=text):
# the ranges between consecutive taken branches, the sampled addresses
# and the branches, counted as autofdo's perf.data reader counts them,
# as offsets into the program's file. -v bin=PATH: the program as the
# mmap events name it.
#
# Why: create_gcov of autofdo 0.19 cannot read what perf inject writes
# from an N-Trace recording (its reader predates the hw_idx word of the
# branch stacks perf synthesizes: "Read/skipped 1600 bytes, expected
# 1608"). Fed the CTR recording, this gives the very profile create_gcov
# makes of that perf.data itself.
/PERF_RECORD_MMAP/ && index($0, bin) {
	m = $0
	sub(/.*\[/, "", m)	# 0x10000(0x6a000) @ 0 ...
	split(m, f, /[()@ ]+/)
	base = hex(f[1]); size = hex(f[2]); pgoff = hex(f[3])
	next
}
/PERF_RECORD_/ || !size { next }
{
	ip = hex($1)
	if (ip >= base && ip < base + size)
		addr[ip - base + pgoff]++
	n = 0
	for (i = 2; i <= NF; i++) {
		split($i, e, "/")
		from[n] = hex(e[1]); to[n] = hex(e[2]); n++
	}
	for (i = 0; i < n; i++) {
		if (!in_bin(to[i]))
			continue
		if (i > 0) {
			b = to[i]; en = from[i - 1]
			if (en < b || en - b > 1048576 || !in_bin(en))
				continue
			range[off(b) "-" off(en)]++
		}
		if (in_bin(from[i]))
			branch[off(from[i]) "->" off(to[i])]++
	}
}
function in_bin(a) { return a >= base && a < base + size }
function off(a) { return sprintf("%x", a - base + pgoff) }
END {
	c = 0; for (k in range) c++; print c
	for (k in range) print k ":" range[k]
	c = 0; for (k in addr) c++; print c
	for (k in addr) printf "%x:%d\n", k, addr[k]
	c = 0; for (k in branch) c++; print c
	for (k in branch) print k ":" branch[k]
}
function hex(s,   i, c, v) {
	v = 0
	sub(/^0x/, "", s)
	for (i = 1; i <= length(s); i++) {
		c = index("0123456789abcdef", tolower(substr(s, i, 1)))
		if (!c)
			break
		v = v * 16 + c - 1
	}
	return v
}
