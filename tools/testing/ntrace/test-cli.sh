#!/usr/bin/env bash
# CLI behaviour: help, exit codes (0 ok, 1 bad data, 2 usage), and the
# encode -> dump/stat and Bluespec paths on a real program.
# usage: test-cli.sh NTRACE_BIN PROGRAMS_DIR
set -uo pipefail

nt=$1
progs=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

ok() {	# ok COND-STATUS DESCRIPTION
	n=$((n + 1))
	if [[ $1 -eq 0 ]]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

status() {	# status EXPECTED CMD... : run CMD, compare its exit status
	local want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	[[ $got -eq $want ]] || { echo "# exit $got, wanted $want: $*"; \
		sed 's/^/#   /' "$tmp/err" | head -5; }
	[[ $got -eq $want ]]
}

for c in "" dump stat encode bluespec; do
	status 0 "$nt" $c --help; ok $? "ntrace $c --help exits 0"
done
status 2 "$nt"; ok $? "no command: usage error"
status 2 "$nt" frobnicate; ok $? "unknown command: usage error"
status 2 "$nt" dump; ok $? "dump without a file: usage error"
status 2 "$nt" dump --src-bits 13 /dev/null; ok $? "--src-bits 13 rejected"
status 2 "$nt" dump --xlen 48 /dev/null; ok $? "--xlen 48 rejected"
status 1 "$nt" dump "$tmp/does-not-exist"; ok $? "missing trace file: data error"
status 2 "$nt" encode --elf "$progs/recursion" -o "$tmp/x"
ok $? "encode without input: usage error"
status 2 "$nt" encode --elf "$progs/recursion" --pc-trace "$progs/recursion.pcs" \
	-o "$tmp/x" --mode xtm; ok $? "--mode xtm rejected"
status 2 "$nt" encode --elf "$progs/recursion" --pc-trace "$progs/recursion.pcs" \
	-o "$tmp/x" --sync-period 100; ok $? "--sync-period 100 (not a power of 2) rejected"
status 2 "$nt" encode --elf "$progs/recursion" --pc-trace "$progs/recursion.pcs" \
	-o "$tmp/x" --implicit-return 4; ok $? "--implicit-return 4 rejected"
status 1 "$nt" encode --elf /etc/passwd --pc-trace "$progs/recursion.pcs" -o "$tmp/x"
ok $? "non-ELF image: data error"
{ head -3 "$progs/recursion.pcs"; echo banana; } >"$tmp/bad.pcs"
status 1 "$nt" encode --elf "$progs/recursion" --pc-trace "$tmp/bad.pcs" -o "$tmp/x"
ok $? "malformed PC line: data error"
grep -q 'bad.pcs:4' "$tmp/err"; ok $? "malformed PC line named by line number"
printf '0x1\n' >"$tmp/out.pcs"
status 1 "$nt" encode --elf "$progs/recursion" --pc-trace "$tmp/out.pcs" -o "$tmp/x"
ok $? "PC outside the image: data error"

# a real program, every message well formed
status 0 "$nt" encode --elf "$progs/qsort_cb" --pc-trace "$progs/qsort_cb.pcs" \
	-o "$tmp/q.nt" --implicit-return 3 --repeat-history --stats
ok $? "encode qsort_cb"
grep -q 'bits/instruction' "$tmp/err"; ok $? "encode --stats prints bits/instruction"
status 0 "$nt" dump "$tmp/q.nt"; ok $? "dump of an encoded trace exits 0"
head -1 "$tmp/out" | grep -q '^00000000 .*ProgTraceSync sync=5'
ok $? "dump starts with ProgTraceSync at offset 0"
cp "$tmp/out" "$tmp/whole"
status 0 "$nt" dump --chunk 3 "$tmp/q.nt"
cmp -s "$tmp/out" "$tmp/whole"; ok $? "dump --chunk 3 equals the whole-buffer dump"
status 0 "$nt" stat "$tmp/q.nt"
grep -q '^errors: 0' "$tmp/out"; ok $? "stat: no errors"

# damage: a corrupted copy still dumps, reports errors, exits 1
cp "$tmp/q.nt" "$tmp/bad.nt"
printf '\x02\x02\x02' | dd of="$tmp/bad.nt" bs=1 seek=100 conv=notrunc 2>/dev/null
status 1 "$nt" dump "$tmp/bad.nt"; ok $? "damaged trace: exit 1"
grep -q 'ERROR reserved MSEO sequence at 0x64' "$tmp/out"
ok $? "damaged trace: error reported at byte 0x64"
[[ $(grep -c ProgTraceCorrelation "$tmp/out") -eq 1 ]]
ok $? "damaged trace: decoding resumes and reaches the end"
head -c 5000 /dev/urandom >"$tmp/random.nt"
"$nt" dump "$tmp/random.nt" >/dev/null 2>&1
[[ $? -le 1 ]]; ok $? "random bytes: dump exits 0 or 1, no crash"

# Nexus messages outside N-Trace that SiFive's encoder sends: shown by
# name, not as reserved TCODEs, and skipped by decode
printf '\x88\x44\x95\x0f\x1c\x09\xd0\x20\x07' >"$tmp/ict.nt"
status 0 "$nt" dump "$tmp/ict.nt"
grep -q '^00000000   4  InCircuitTrace cksrc=1 ckdf=1 ckdata0=0x25 ckdata1=0x3$' \
	"$tmp/out" && grep -q '^00000004   5  DataAcquisition idtag=0x2 dqdata=0x1234$' \
	"$tmp/out"; ok $? "dump shows In-Circuit Trace and DataAcquisition fields"
status 0 "$nt" decode --elf "$progs/rle" "$tmp/ict.nt" --format pcs -o /dev/null
ok $? "decode skips them without an error"

# What real encoders send beyond the spec (issue 16): a sync with an
# I-CNT over 22 bits, then two ecalls counted as retired (B-TYPE 0), in
# code at 0x100: addi, ecall, addi, ecall, addi. Decoded through, one
# warning per kind at its first byte, counted by --stats, exit 0.
printf '\x13\x05\x15\x00\x73\x00\x00\x00\x13\x05\x15\x00\x73\x00\x00\x00\x13\x05\x15\x00' \
	>"$tmp/ecalls.bin"
printf '\x24\x14\x00\x00\x00\x11\x00\x0b\x10\x41\x13\x10\x41\x33\x84\x00\x0b' \
	>"$tmp/dev.nt"
status 0 "$nt" decode --raw "$tmp/ecalls.bin@0x100" "$tmp/dev.nt" --format pcs \
	-o "$tmp/dev.pcs" --stats
ok $? "decode through the deviations exits 0"
printf '0x100\n0x104\n0x108\n0x10c\n0x110\n' | cmp -s - "$tmp/dev.pcs"
ok $? "every instruction decoded, the ecalls included"
[[ $(grep -c 'warning' "$tmp/err") -eq 2 ]] &&
	grep -q '^ntrace decode: byte 0x0: warning: I-CNT wider than 22 bits (1 in all)$' \
	"$tmp/err" &&
	grep -q '^ntrace decode: byte 0x8: warning: ecall/ebreak counted as retired (2 in all)$' \
	"$tmp/err"
ok $? "one warning per kind, at the first one's byte"
grep -q '^deviation I-CNT wider than 22 bits: 1$' "$tmp/err" &&
	grep -q '^deviation ecall/ebreak counted as retired: 2$' "$tmp/err"
ok $? "decode --stats counts each kind"

# SiFive's pre-1.0 format, by hand (issue 16): timestamps XORed into the
# time; ResourceFull RCODE 9 and 8 (2 taken, 1 not-taken branches) around
# a loop at 0x1000: addi a0,a0,-1; bnez a0,0x1000; ret; addi
printf '\x24\x15\x00\x81\x3c\x13\x0c\x09\x0f' >"$tmp/sifive-ts.nt"
status 0 "$nt" dump --timestamps --quirks sifive "$tmp/sifive-ts.nt"
grep -q 'DirectBranch icnt=2 tstamp=3 time=268$' "$tmp/out"
ok $? "dump --quirks sifive XORs TSTAMP 3 into time 271"
printf '\x13\x05\xf5\xff\xe3\x1e\x05\xfe\x67\x80\x00\x00\x13\x05\x15\x00' \
	>"$tmp/loop.bin"
printf '\x24\x15\x00\x83\x6c\xa7\x6c\x63\x10\xe1\x1b\x84\x00\x0b' >"$tmp/rc89.nt"
status 0 "$nt" decode --quirks sifive --raw "$tmp/loop.bin@0x1000" "$tmp/rc89.nt" \
	--format pcs -o "$tmp/rc89.pcs"
printf '0x1000\n0x1004\n0x1000\n0x1004\n0x1000\n0x1004\n0x1008\n0x100c\n' |
	cmp -s - "$tmp/rc89.pcs"
ok $? "decode --quirks sifive follows ResourceFull RCODE 9 and 8"
status 1 "$nt" decode --raw "$tmp/loop.bin@0x1000" "$tmp/rc89.nt" --format pcs \
	-o /dev/null
ok $? "without --quirks they are vendor codes: a gap, exit 1"
status 2 "$nt" dump --quirks arm "$tmp/rc89.nt"; ok $? "--quirks arm rejected"
status 2 "$nt" encode --quirks sifive --elf "$progs/rle" --pc-trace "$progs/rle.pcs" \
	-o "$tmp/x"; ok $? "encode refuses to write a quirk"

# Bluespec input gives the same trace as the ELF path
status 0 "$nt" bluespec --elf "$progs/interp" --pc-trace "$progs/interp.pcs" \
	-o "$tmp/i.bsv"; ok $? "bluespec writes a tandem trace"
status 0 "$nt" encode --elf "$progs/interp" --pc-trace "$progs/interp.pcs" \
	-o "$tmp/a.nt" --mode btm --implicit-return 2
status 0 "$nt" encode --bluespec "$tmp/i.bsv" -o "$tmp/b.nt" --mode btm \
	--implicit-return 2
cmp -s "$tmp/a.nt" "$tmp/b.nt"; ok $? "encode --bluespec equals encode --pc-trace"

# decode: the executed PCs come back, byte for byte
status 0 "$nt" encode --elf "$progs/rle" --pc-trace "$progs/rle.pcs" -o "$tmp/r.nt" \
	--implicit-return 3 --repeat-history --sync-period 4096
status 0 "$nt" decode --elf "$progs/rle" "$tmp/r.nt" --format pcs -o "$tmp/r.pcs" --stats
ok $? "decode --format pcs exits 0"
grep -q 'instructions [1-9]' "$tmp/err"; ok $? "decode --stats counts instructions"
head -n -1 "$progs/rle.pcs" | cmp -s - "$tmp/r.pcs"
ok $? "decoded PCs equal the executed ones (but the final exit ecall)"
for f in branches brstack flow bluespec; do
	status 0 "$nt" decode --elf "$progs/rle" "$tmp/r.nt" --format $f -o "$tmp/r.$f"
	ok $? "decode --format $f exits 0"
done
grep -q ' 0x[0-9a-f]*/0x[0-9a-f]*/P/-/-/0' "$tmp/r.brstack"
ok $? "brstack lines carry perf-style from/to entries"
status 2 "$nt" decode "$tmp/r.nt" --format pcs; ok $? "decode without an image: usage error"
status 2 "$nt" decode --elf "$progs/rle" "$tmp/r.nt" --format xml
ok $? "decode --format xml: usage error"
status 1 "$nt" decode --elf "$progs/rle" "$tmp/random.nt" --format pcs -o /dev/null
ok $? "decode of random bytes: data error, no crash"
cp "$tmp/r.nt" "$tmp/rb.nt"
printf '\x02' | dd of="$tmp/rb.nt" bs=1 seek=300 conv=notrunc 2>/dev/null
status 1 "$nt" decode --elf "$progs/rle" "$tmp/rb.nt" --format pcs -o /dev/null
grep -q '^ntrace decode: byte 0x12c: reserved MSEO' "$tmp/err"
ok $? "decode names the damaged byte offset"

# A sync to 0x8000, where rle has no code, then the end: damage only if
# the images are complete
printf '\x24\x15\x00\x00\x13\x84\x10\x03' >"$tmp/out.nt"
status 0 "$nt" decode --elf "$progs/rle" "$tmp/out.nt" --format pcs -o /dev/null
ok $? "an address outside the images, nothing walked there: exit 0"
status 1 "$nt" decode --elf "$progs/rle" --images-complete "$tmp/out.nt" \
	--format pcs -o /dev/null
grep -q '^ntrace decode: byte 0x0: address outside every program image$' "$tmp/err"
ok $? "decode --images-complete reports it at its message"
status 0 "$nt" decode --elf "$progs/rle" --images-complete "$tmp/r.nt" \
	--format pcs -o "$tmp/r2.pcs"
cmp -s "$tmp/r.pcs" "$tmp/r2.pcs"; ok $? "decode --images-complete of rle: the same PCs"

# Reproducers from the fuzzing campaign (issue 16): each one failed before.
: >"$tmp/empty.nt"
status 0 "$nt" decode --elf "$progs/rle" "$tmp/empty.nt" --format bluespec \
	-o "$tmp/empty.bsv"
ok $? "decode of an empty trace to bluespec exits 0 (no NULL memcpy)"
status 2 "$nt" decode --bogus
[[ $(wc -l <"$tmp/err") -eq 1 ]] && grep -q "'--bogus'" "$tmp/err"
ok $? "a bad option gives one error line, naming it"
status 2 "$nt" dump -Z /dev/null
[[ $(wc -l <"$tmp/err") -eq 1 ]] && grep -q "'-Z'" "$tmp/err"
ok $? "a bad short option gives one error line, naming it"
{ head -3000 "$progs/recursion.pcs"; echo banana; } >"$tmp/late-bad.pcs"
status 1 "$nt" encode --elf "$progs/recursion" --pc-trace "$tmp/late-bad.pcs" \
	-o "$tmp/late.nt"
ok $? "a bad PC line after 3000 good ones: data error"
! ls "$tmp"/late.nt* >/dev/null 2>&1
ok $? "and no output file, not even a temporary one"
status 0 "$nt" encode --elf "$progs/recursion" --pc-trace "$progs/recursion.pcs" \
	-o "$tmp/late.nt"
[[ -s $tmp/late.nt && $(stat -c %a "$tmp/late.nt") = $(printf '%o' $((0666 & ~$(umask)))) ]]
ok $? "a good run leaves its output with the usual permissions"
status 1 "$nt" decode --elf "$progs/rle" "$tmp/random.nt" --format pcs -o /dev/null
[[ -c /dev/null ]]; ok $? "-o /dev/null writes to the device, never replaces it"
printf '0x10590\n0x10591\n0x10595\n' >"$tmp/odd.pcs"
status 1 "$nt" encode --elf "$progs/recursion" --pc-trace "$tmp/odd.pcs" -o "$tmp/odd.nt"
grep -q 'odd.pcs:2: PC 0x10591 is not 2-byte aligned' "$tmp/err"
ok $? "encode refuses a misaligned PC, naming its line"
status 1 "$nt" bluespec --elf "$progs/recursion" --pc-trace "$tmp/odd.pcs" -o "$tmp/odd.bsv"
ok $? "bluespec refuses a misaligned PC"
printf '0x100000000000000000\n' >"$tmp/wide.pcs"
status 1 "$nt" encode --elf "$progs/recursion" --pc-trace "$tmp/wide.pcs" -o "$tmp/w.nt"
grep -q 'wider than 64 bits' "$tmp/err"; ok $? "a PC wider than 64 bits is refused, not clamped"
status 2 "$nt" encode --elf "$progs/recursion" --pc-trace "$progs/recursion.pcs" \
	-o "$tmp/x" --sync-period 0; ok $? "--sync-period 0 rejected"
status 2 "$nt" dump --chunk 0 "$tmp/r.nt"; ok $? "dump --chunk 0 rejected"
status 2 "$nt" decode --elf "$progs/rle" --ir-depth 0 "$tmp/r.nt" --format pcs
ok $? "decode --ir-depth 0 rejected"
status 2 "$nt" decode --elf "$progs/rle" --src 7 "$tmp/r.nt" --format pcs
grep -q -- '--src 7 needs --src-bits of at least 3' "$tmp/err"
ok $? "decode --src 7 on a trace without SRC: usage error"
status 0 "$nt" decode --elf "$progs/rle" --src 7 --src-bits 3 "$tmp/empty.nt" --format pcs
ok $? "decode --src 7 with --src-bits 3 accepted"
# --by-source: source 1's trace, then source 0's, in one stream
for s in 0 1; do
	status 0 "$nt" encode --elf "$progs/rle" --pc-trace "$progs/rle.pcs" \
		--src-bits 1 --src-id $s -o "$tmp/s$s.nt"
	ok $? "encode rle as SRC $s"
	status 0 "$nt" decode --elf "$progs/rle" --src-bits 1 --src $s \
		"$tmp/s$s.nt" --format pcs -o "$tmp/s$s.pcs"
	ok $? "decode SRC $s alone"
done
cat "$tmp/s1.nt" "$tmp/s0.nt" >"$tmp/s10.nt"
status 0 "$nt" decode --elf "$progs/rle" --src-bits 1 "$tmp/s10.nt" \
	--format pcs -o "$tmp/order.pcs" --stats
ok $? "decode two sources in stream order"
cp "$tmp/err" "$tmp/order.err"
status 0 "$nt" decode --elf "$progs/rle" --src-bits 1 --by-source \
	"$tmp/s10.nt" --format pcs -o "$tmp/by.pcs" --stats
ok $? "decode two sources --by-source"
cat "$tmp/s1.pcs" "$tmp/s0.pcs" | cmp -s - "$tmp/order.pcs"
ok $? "in stream order, source 1's PCs come first"
cat "$tmp/s0.pcs" "$tmp/s1.pcs" | cmp -s - "$tmp/by.pcs"
ok $? "--by-source: source 0's PCs, then source 1's"
diff <(grep -v '^decode time\|^run cache' "$tmp/order.err") \
	<(grep -v '^decode time\|^run cache' "$tmp/err") >/dev/null
ok $? "--by-source: the same --stats"
status 2 "$nt" decode --elf "$progs/rle" --by-source "$tmp/s10.nt" --format pcs
grep -q -- '--by-source needs --src-bits' "$tmp/err"
ok $? "--by-source without SRC: usage error"
status 2 "$nt" decode --elf "$progs/rle" --src-bits 1 --src 0 --by-source \
	"$tmp/s10.nt" --format pcs
ok $? "--by-source with --src: usage error"
mkdir -p "$tmp/at@dir"
cp "$progs/recursion" "$tmp/at@dir/prog@v2"
status 0 "$nt" encode --elf "$tmp/at@dir/prog@v2" --pc-trace "$progs/recursion.pcs" \
	-o "$tmp/at.nt"
ok $? "an '@' not followed by a number is part of the --elf path"
status 1 "$nt" decode --elf "$progs/rle" "$tmp/random.nt" --format pcs -o /dev/null
# (random bytes may also hold deviations, each kind warned about once)
gaps=$(grep '^ntrace decode: byte 0x' "$tmp/err" | grep -vc ': warning: ')
more=$(sed -n 's/^ntrace decode: \([0-9]*\) more gaps not shown$/\1/p' "$tmp/err")
[[ $gaps -eq 20 && ${more:-0} -gt 0 ]]
ok $? "decode shows 20 gaps, then how many more there were (${more:-none})"

# decode reads the trace a chunk at a time: a trace of many chunks, from a
# file and from a pipe, decodes to the same PCs as its pieces
for i in $(seq 200); do cat "$tmp/r.nt"; done >"$tmp/long.nt"
status 0 "$nt" decode --elf "$progs/rle" "$tmp/long.nt" --format pcs -o "$tmp/long.pcs"
ok $? "a $(stat -c %s "$tmp/long.nt")-byte trace of 200 captures decodes"
for i in $(seq 200); do cat "$tmp/r.pcs"; done | cmp -s - "$tmp/long.pcs"
ok $? "to 200 times the PCs of one capture"
"$nt" decode --elf "$progs/rle" - --format pcs <"$tmp/long.nt" 2>/dev/null |
	cmp -s - "$tmp/long.pcs"
ok $? "and the same from standard input"

# dump and stat read it a chunk at a time as well: a message's raw bytes
# come out the same when it straddles chunks, and memory stays flat
whole=4194304	# --chunk: more than the file, read at once as before
status 0 "$nt" dump --bytes "$tmp/long.nt"
cp "$tmp/out" "$tmp/long.dump"
status 0 "$nt" dump --bytes --chunk $whole "$tmp/long.nt"
cmp -s "$tmp/out" "$tmp/long.dump"
ok $? "dump --bytes of a trace of two chunks equals the whole-file dump"
status 0 "$nt" dump --bytes --chunk 1 "$tmp/q.nt"
cp "$tmp/out" "$tmp/q1.dump"
status 0 "$nt" dump --bytes --chunk $whole "$tmp/q.nt"
cmp -s "$tmp/out" "$tmp/q1.dump"
ok $? "dump --bytes --chunk 1: every message across chunks, the same bytes"
if /usr/bin/time -f %M true >/dev/null 2>&1; then
	peak() {	# peak CMD...: the largest resident set of CMD, in KB
		/usr/bin/time -o "$tmp/rss" -f %M "$@" >/dev/null 2>&1
		tail -1 "$tmp/rss"
	}
	double() {	# double N: big.nt made 2^N times as long
		for _ in $(seq "$1"); do
			cat "$tmp/big.nt" "$tmp/big.nt" >"$tmp/big2.nt"
			mv "$tmp/big2.nt" "$tmp/big.nt"
		done
	}
	cp "$tmp/r.nt" "$tmp/big.nt"
	double 12
	small=$(peak "$nt" dump --bytes "$tmp/r.nt")
	large=$(peak "$nt" dump --bytes "$tmp/big.nt")
	(( large - small < 8192 ))
	ok $? "dump --bytes of $(($(stat -c %s "$tmp/big.nt") >> 20)) MB: peak RSS $large KB, of $(stat -c %s "$tmp/r.nt") bytes: $small KB"
	double 3
	small=$(peak "$nt" stat "$tmp/r.nt")
	large=$(peak "$nt" stat "$tmp/big.nt")
	(( large - small < 8192 ))
	ok $? "stat of $(($(stat -c %s "$tmp/big.nt") >> 20)) MB: peak RSS $large KB, of $(stat -c %s "$tmp/r.nt") bytes: $small KB"
	rm -f "$tmp/big.nt"
else
	n=$((n + 1))
	echo "ok $n - # SKIP no GNU time (/usr/bin/time) to measure dump's memory"
fi

echo "1..$n"
[[ $failed -eq 0 ]]
