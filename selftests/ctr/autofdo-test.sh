#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# AutoFDO from branch stacks, end to end, from both sources the project
# has: CTR (perf record -b) and N-Trace (perf record -e ntrace//u, then
# perf inject --itrace=...l64 on the host). On the lab board with the
# emulated trace hardware, record workload/brwork both ways; on the host
# side (in the lab chroot), turn each recording into profiles with
# llvm-profgen (Debian llvm) and create_gcov (Debian autofdo), check what
# the tools report about their input (the same checks for both sources),
# and that the two profiles name the same hot functions. Then close the
# loop with N-Trace: a clang build of workload/icall, its profile, a rebuild with
# -fprofile-sample-use, and both builds counted on the board.
#
# Needs the lab built (tools/lab/lab-test or make -C tools/lab build).
# Prints TAP-style lines and one "N passed, N failed" line; exit status 0
# only when everything passed. make check runs it after the lab tests.
#
# Usage: selftests/ctr/autofdo-test.sh [--kernel 6.12|7.x]
#        [--variant default|debug] [--keep DIR] [--build DIR]
# NTRACE_LAB_PERF_OUT and NTRACE_LAB_HOST_PERF_OUT: where the riscv64
# and the host's perf are built ($WORK/perf-riscv64, $WORK/perf-host).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tools/lab/lib.sh"
# boards of their own (make check runs suites side by side)
export NTRACE_LAB_RUN_TAG=${NTRACE_LAB_RUN_TAG:-autofdo}
need_root

VARIANT=default KEEP='' SERIES='' O=$REPO/build
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) SERIES=$2; shift ;;
	--variant) VARIANT=$2; shift ;;
	--keep) KEEP=$2; shift ;;
	--build) O=$2; shift ;;
	*) die "usage: $0 [--kernel 6.12|7.x] [--variant default|debug] [--keep DIR] [--build DIR]" ;;
	esac
	shift
done
[ -n "$SERIES" ] || SERIES=$(default_kernel)
case $O in /*) ;; *) O=$PWD/$O ;; esac

BIN=$WORK/selftests-$VARIANT/workload/brwork
[ -x "$BIN" ] || die "no $BIN: build the lab first (make -C tools/lab build)"
DIR=$WORK/afdo-test
rm -rf "$DIR"
mkdir -p "$DIR/ctr" "$DIR/ntrace" "$DIR/clang"
CDIR=$CWORK/afdo-test
PERF_OUT=${NTRACE_LAB_PERF_OUT:-$WORK/perf-riscv64}
HOST_PERF_OUT=${NTRACE_LAB_HOST_PERF_OUT:-$WORK/perf-host}
hperf() { LAB_PIDNS=1 lab_chroot "$CWORK/${HOST_PERF_OUT#"$(realpath "$WORK")"/}/perf" "$@"; }
pass=0 fail=0 n=0
result() { # ok|"not ok", text
	n=$((n + 1))
	printf '%s %d - %s\n' "$1" "$n" "$2"
	if [ "$1" = ok ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}
finish() {
	if [ -n "$KEEP" ]; then
		mkdir -p "$KEEP"
		cp -a "$DIR/." "$KEEP/"
	fi
	printf '%d passed, %d failed\n' "$pass" "$fail"
	[ "$fail" -eq 0 ]
	exit
}
# All hot functions of brwork must be named in a profile.
HOT="brwork_mix brwork_leaf brwork_even brwork_odd brwork_chain"
names_ok() { # file, tool
	local f missing=''
	for f in $HOT; do
		grep -aq "$f" "$1" || missing="$missing $f"
	done
	[ -z "$missing" ] && return 0
	echo "# $2 profile lacks:$missing"
	return 1
}

# What the N-Trace leg needs on top of the lab: the emulated trace
# hardware, the driver for this kernel, our perf for the board (it
# records -e ntrace//) and the host's perf with the decoder (it injects).
# The perfs are keyed by content: normally nothing is rebuilt.
if ! make -s -C "$REPO" O="$O" "$O/ntrace-plugin.so" > "$DIR/plugin.log" 2>&1 ||
   ! "$LAB_DIR/build-perf.sh" "$PERF_OUT" > "$DIR/perf.log" 2>&1 ||
   ! "$LAB_DIR/build-perf.sh" --host "$HOST_PERF_OUT" > "$DIR/perf-host.log" 2>&1 ||
   ! build_ntrace_module "$SERIES" "$DIR/mod"; then
	cat "$DIR/plugin.log" "$DIR/perf.log" "$DIR/perf-host.log" \
		"$DIR/mod/build.log" 2> /dev/null | tail -n 20 | sed 's/^/# /'
	result "not ok" "the plugin, both perfs and the driver for linux $SERIES build"
	finish
fi
result ok "the plugin, both perfs and the driver for linux $SERIES build"
cp "$BIN" "$DIR/brwork"
cp "$PERF_OUT/perf" "$DIR/mod/ntrace.ko" "$DIR/"

# workload/icall built by clang for the AutoFDO loop of the N-Trace leg: clang
# reads llvm-profgen's profile (-fprofile-sample-use); the lab chroot has
# no clang, the host's (make check installs it) cross-compiles with the
# chroot's riscv64 C library headers, the chroot's gcc links.
# -fdebug-info-for-profiling: the discriminators that profile lines need.
CLANG_FLAGS=(--target=riscv64-linux-gnu --sysroot="$CHROOT/usr/riscv64-linux-gnu"
	-O2 -g -fno-omit-frame-pointer -fdebug-info-for-profiling)
clang_icall() { # variant [clang args...]: $DIR/clang/VARIANT/icall
	local v=$1
	shift
	mkdir -p "$DIR/clang/$v"
	clang "${CLANG_FLAGS[@]}" "$@" -c "$REPO/selftests/workload/icall.c" \
		-o "$DIR/clang/$v/icall.o" > "$DIR/clang/$v.log" 2>&1 &&
	lab_chroot riscv64-linux-gnu-gcc -static -o "$CDIR/clang/$v/icall" \
		"$CDIR/clang/$v/icall.o" >> "$DIR/clang/$v.log" 2>&1
}
CLANG=''
if command -v clang > /dev/null && clang_icall base; then
	CLANG=$(clang --version | head -n 1)
fi

# One boot for both recordings. CTR: AutoFDO wants the whole ring: the
# driver cuts each stack to the event's sample_max_stack, whose default,
# kernel.perf_event_max_stack, is 127; raised to 256, perf record gets all
# 256 entries (perf script and the AutoFDO tools take them; only perf
# report --branch-history would not). brwork runs from /tmp with its
# output there too: run from the 9p share and printing on the serial
# console, it spent more time in the kernel, and every overflow the
# emulated counter raises while the task is in the kernel is a sample
# create_gcov cannot map (see Documentation/ctr.rst). perf script shows
# the mmap events, so llvm-profgen learns where brwork was loaded.
# perf.data is written to /tmp and copied: on 7.3, 9p fails perf's writes
# straight from its ring buffer with EFAULT.
# N-Trace: the board runs brwork from the share mounted at the path it
# has in the chroot ($1), so that the mmap events name the file the
# host's perf decodes with (perf inject has no --symfs). The trace is
# exact, so 200,000 iterations (5.8 M instructions, 1.9 MB of trace)
# give a profile as good as CTR's 1,000,000 do.
# The emulated cycle counter sometimes overflows only a handful of times
# in a run (1 sample once; ctr_perf_test has seen 0, 2 and 6 in a row),
# and the overflows it takes in the kernel (exec, exit, ticks: a score
# or so a run) are then a larger share: 20 of 326 in a cold run on
# 2026-12-01, where create_gcov wants 95% mapped. Up to three tries for a
# recording with 200 samples, under 5% of them in the kernel. brwork
# sleeps 50 ms before its loops (BRWORK_PAUSE_MS), which switches the
# event out and in: without it a warm CI run on 2026-12-03 got 78, 21
# and 28 samples on the one-hart 7.x board (see ctr_perf_test's
# record_brwork() and Documentation/lab.rst, "Known limits").
# kernel-ips.awk counts those in perf script -F ip,brstack output: their
# IP is a kernel address (6.12) or 0 (7.x hides the kernel IPs of a
# user-only event). The board picks its recording with it, the host
# checks create_gcov's count against it.
cat > "$DIR/kernel-ips.awk" <<'AWK'
!/PERF_RECORD_/ && ($1 == "0" || $1 ~ /^ffffffff/) { n++ }
END { print n + 0 }
AWK
cat > "$DIR/go.sh" <<'EOF'
cd /mnt/host || exit 1
cp brwork /tmp/brwork &&
echo 256 > /proc/sys/kernel/perf_event_max_stack || exit 1
for try in 1 2 3; do
	BRWORK_PAUSE_MS=50 perf record -b -e cycles:u -c 20011 \
		-o /tmp/perf.data -- /tmp/brwork 1000000 > /tmp/brwork.out &&
	cat /tmp/brwork.out && cp /tmp/perf.data ctr/perf.data &&
	perf script -i ctr/perf.data -F ip,brstack --show-mmap-events \
		> ctr/brstack.txt || exit 1
	rm /tmp/perf.data
	n=$(grep -c /0x ctr/brstack.txt)
	k=$(awk -f kernel-ips.awk ctr/brstack.txt)
	[ "$n" -lt 200 ] || [ $((k * 20)) -ge "$n" ] || break
	echo "try $try: $n samples, $k of them in the kernel"
done
echo 127 > /proc/sys/kernel/perf_event_max_stack
mkdir -p "$1" && mount --bind /mnt/host "$1" && cd "$1" || exit 1
insmod ./ntrace.ko || exit 1
ntrec() { # out args...
	out=$1
	shift
	./perf record -e ntrace//u -m ,16M -o /tmp/nt.data -- "$@" \
		> "$out.out" 2>&1
	echo $? > "$out.rc"
	cp /tmp/nt.data "$out.data"
	rm -f /tmp/nt.data
}
ntrec ntrace/nt ./brwork 200000
[ ! -x clang/base/icall ] || ntrec clang/prof ./clang/base/icall 100000
rmmod ntrace
EOF
"$LAB_DIR/run" --kernel "$SERIES" --variant "$VARIANT" --share "$DIR" \
	--ntrace "$O/ntrace-plugin.so" --timeout 600 \
	--cmd "sh /mnt/host/go.sh $CDIR" >&2 ||
	result "not ok" "board (linux $SERIES): perf record -b, perf record -e ntrace//u"
longest=$(awk -F/0x '{ if (NF - 1 > m) m = NF - 1 } END { print m + 0 }' \
	"$DIR/ctr/brstack.txt" 2>/dev/null || echo 0)
if [ -s "$DIR/ctr/brstack.txt" ] && [ "$longest" -gt 127 ]; then
	result ok "CTR (linux $SERIES): $(grep -c /0x "$DIR/ctr/brstack.txt") samples with branch stacks in brstack.txt, up to $longest entries"
else
	result "not ok" "CTR (linux $SERIES): brstack.txt is empty or its stacks are cut ($longest entries at most)"
fi

# N-Trace: last-branch stacks synthesized from the trace. brwork makes a
# taken transfer every 7.4 instructions; 64 of them (l64) cover about
# 470 instructions, so a sample every 401 instructions (a prime, so
# that samples do not lock to the loop's phase) puts every transfer in
# one stack or two: some 15,000 samples and 960,000 branch records, more
# than CTR's 1,200 to 5,000 samples of 256 give. The recording must be
# whole: no decoding error.
ITRACE=i401il64
NDEPTH=64
if [ "$(cat "$DIR/ntrace/nt.rc" 2> /dev/null)" = 0 ] &&
   hperf inject -i "$CDIR/ntrace/nt.data" --itrace="$ITRACE" \
	-o "$CDIR/ntrace/perf.data" > "$DIR/ntrace/inject.log" 2>&1 &&
   hperf script -i "$CDIR/ntrace/perf.data" -F ip,brstack --show-mmap-events \
	> "$DIR/ntrace/brstack.txt" 2>> "$DIR/ntrace/inject.log"; then
	:
fi
longest=$(awk -F/0x '{ if (NF - 1 > m) m = NF - 1 } END { print m + 0 }' \
	"$DIR/ntrace/brstack.txt" 2>/dev/null || echo 0)
nterr=$(hperf script -i "$CDIR/ntrace/nt.data" --itrace=e 2> /dev/null |
	grep -c 'instruction trace error' || true)
if [ -s "$DIR/ntrace/brstack.txt" ] && [ "$longest" -eq "$NDEPTH" ] && [ "$nterr" -eq 0 ]; then
	result ok "N-Trace (linux $SERIES): perf inject --itrace=$ITRACE: $(grep -c /0x "$DIR/ntrace/brstack.txt") samples, stacks of $longest entries, no decoding error"
else
	sed 's/^/# /' "$DIR/ntrace/nt.out" "$DIR/ntrace/inject.log" 2> /dev/null | tail -n 20
	result "not ok" "N-Trace (linux $SERIES): perf inject --itrace=$ITRACE gives stacks of $NDEPTH ($longest), $nterr decoding errors"
fi

# create_gcov reads perf.data itself, but autofdo 0.19's DWARF reader
# knows only DWARF <= 4 (GCC 14 writes 5: the profile comes out empty).
# Rebuild brwork with -gdwarf-4 and make sure the code is the same.
# (The board's perf resolves fewer branch symbols of a DWARF 4 brwork,
# which is why the board keeps the DWARF 5 one.) It keeps the name
# brwork: create_gcov takes the samples of the mmaps of that name.
lab_chroot make -s -C "$CREPO/selftests" \
	KSRC="$CWORK/linux-$(newest_kernel)" \
	OUT="$CDIR/dwarf4" \
	BRWORK_CFLAGS="-g -gdwarf-4 -fno-inline -fno-omit-frame-pointer" \
	"$CDIR/dwarf4/workload/brwork" > "$DIR/dwarf4.log" 2>&1 || true
for b in brwork dwarf4/workload/brwork; do
	lab_chroot riscv64-linux-gnu-objcopy -O binary -j .text "$CDIR/$b" \
		"$CDIR/$(echo "$b" | tr / _).text" 2>/dev/null || true
done
if cmp -s "$DIR/brwork.text" "$DIR/dwarf4_workload_brwork.text"; then
	result ok "brwork rebuilt with -gdwarf-4 has the same code"
else
	sed 's/^/# /' "$DIR/dwarf4.log"
	result "not ok" "brwork rebuilt with -gdwarf-4 has the same code"
fi
lab_chroot riscv64-linux-gnu-objdump -d -M no-aliases --no-show-raw-insn \
	"$CDIR/brwork" > "$DIR/brwork.dis" 2>/dev/null || true

# check_profiles LEG NAME: the same checks on what each source gives.
# $DIR/LEG holds brstack.txt (perf script -F ip,brstack with the mmap
# events) and perf.data (what create_gcov reads: perf record's file for
# CTR, perf inject's for N-Trace).
check_profiles() {
	local name=$2 d=$DIR/$1 cd=$CDIR/$1 ranges boundary nofunc other
	local errors warns nsamples nmapped skid switches unknown14

	# Every record's source must be a control transfer instruction of
	# brwork and every target an instruction start (CTR's ctrsource is
	# the address of the transfer instruction itself, 2 or 4 bytes long,
	# and so is the decoder's branch address), and so must every
	# fall-through range the tools build from consecutive records.
	ranges=$(awk -f "$REPO/selftests/ctr/afdo-ranges.awk" "$DIR/brwork.dis" \
		"$d/brstack.txt" 2>/dev/null || true)
	fig() { # key: value from $ranges
		printf '%s\n' "$ranges" | tr ' ' '\n' | sed -n "s/^$1=//p"
	}
	echo "# $name ranges: $ranges"
	if [ "$(fig entries)" -gt 0 ] 2>/dev/null && [ "$(fig bad_from)" = 0 ] &&
	   [ "$(fig bad_to)" = 0 ] && [ "$(fig bad_range)" = 0 ]; then
		result ok "$name brstack: $(fig entries) records and $(fig ranges) ranges, all on instruction boundaries of brwork"
	else
		result "not ok" "$name brstack: records or ranges off brwork's instruction boundaries ($ranges)"
	fi

	# llvm-profgen: the mmap events and the samples that carry branches
	# (a sample without any makes it take the file for a stack+LBR
	# profile).
	grep -E 'PERF_RECORD_MMAP|/0x' "$d/brstack.txt" > "$d/lbr.txt" || true
	if lab_chroot /usr/lib/llvm-19/bin/llvm-profgen --binary "$CDIR/brwork" \
		--perfscript "$cd/lbr.txt" --format=text \
		--output "$cd/llvm.prof" > "$d/llvm-profgen.log" 2>&1 &&
	   names_ok "$d/llvm.prof" "$name llvm-profgen" &&
	   grep -q '^brwork_mix:[1-9]' "$d/llvm.prof"; then
		result ok "$name llvm-profgen: profile names the hot functions ($(grep -c '^[a-z_]*:' "$d/llvm.prof") functions)"
	else
		sed 's/^/# /' "$d/llvm-profgen.log"
		[ -f "$d/llvm.prof" ] && head -n 20 "$d/llvm.prof" | sed 's/^/# /'
		result "not ok" "$name llvm-profgen: profile names the hot functions"
	fi
	sed "s/^/# $name llvm-profgen: /" "$d/llvm-profgen.log"

	# What llvm-profgen says about its input. It must have found brwork's
	# mmap event (no "will use preferred address"), and warn about nothing
	# but the two figures below.
	pg_pct() { # words of its warning: the percentage it prints, 0 if none
		sed -n "s/^warning: \([0-9.]*\)%([0-9]*\/[0-9]*) of samples are from ranges that $1.*/\1/p" \
			"$d/llvm-profgen.log" | grep . || echo 0
	}
	other=$(grep -v -e 'of samples are from ranges that are not on instruction boundary' \
		-e 'of samples are from ranges that do not belong to any functions' \
		"$d/llvm-profgen.log" | grep -c . || true)
	if [ -s "$d/llvm.prof" ] && [ "$other" -eq 0 ]; then
		result ok "$name llvm-profgen: brwork's mmap event matched, no other warning"
	else
		result "not ok" "$name llvm-profgen: $other unexpected lines in its output (mmap event not matched?)"
	fi
	# "not on instruction boundary": the ranges that end at a jal, jalr
	# or c.jr, which LLVM 19's RISC-V instruction table does not mark as
	# calls, returns or branches (llvm-profgen reads only those marks),
	# and nothing else: the records themselves are all on boundaries
	# (checked above).
	boundary=$(pg_pct 'are not on instruction boundary')
	if awk -v t="$boundary" -v u="$(fig unflagged_pct)" \
		'BEGIN { d = t - u; exit !(t <= 0.5 || (u != "" && d <= 0.5 && d >= -0.5)) }'; then
		result ok "$name llvm-profgen: its $boundary% of ranges \"not on instruction boundary\" are the $(fig unflagged_pct)% that end at jal, jalr or c.jr (LLVM marks none as a transfer); really off a boundary: $(fig bad_range_pct)%"
	else
		result "not ok" "$name llvm-profgen: $boundary% of ranges \"not on instruction boundary\", but only $(fig unflagged_pct)% end at jal, jalr or c.jr"
	fi
	# "do not belong to any functions": C library code before main() and
	# after it returns, which has no DWARF in the static brwork. CTR: 1
	# to 13% of the ranges in most runs, 30.8% on a slow, busy host; the
	# emulated cycle counter follows host time, and QEMU translating the
	# code run for the first time makes the start and exit long in host
	# time, so how many samples land there varies from run to run.
	# N-Trace samples count instructions: the C library's share of them,
	# the same every run. A sanity bound, not a figure of either source:
	# a profile that maps nothing to brwork is near 100%.
	nofunc=$(pg_pct 'do not belong to any functions')
	if awk -v p="$nofunc" 'BEGIN { exit !(p < 50) }'; then
		result ok "$name llvm-profgen: $nofunc% of ranges outside brwork's DWARF functions (C library start and exit), under 50%"
	else
		result "not ok" "$name llvm-profgen: $nofunc% of ranges outside brwork's DWARF functions"
	fi

	# create_gcov logs to stderr (--logtostderr) what its perf.data
	# reader, quipper, made of the file: "Parser processed: ... N SAMPLE
	# events, M of these were mapped". Without the flag only errors show.
	if lab_chroot create_gcov --binary="$CDIR/dwarf4/workload/brwork" \
		--profile="$cd/perf.data" --gcov="$cd/brwork.afdo" \
		-gcov_version=1 --logtostderr > "$d/create_gcov.log" 2>&1 &&
	   [ -s "$d/brwork.afdo" ] && names_ok "$d/brwork.afdo" "$name create_gcov"; then
		result ok "$name create_gcov: AutoFDO profile names the hot functions ($(stat -c %s "$d/brwork.afdo") bytes)"
	else
		grep -v 'reserved bits' "$d/create_gcov.log" | sed 's/^/# /' | head -n 40 || true
		result "not ok" "$name create_gcov: AutoFDO profile names the hot functions"
	fi
	grep -v -e 'reserved bits' -e 'Unknown event type: 14$' "$d/create_gcov.log" |
		sed "s/^/# $name create_gcov: /" || true
	# Its errors: "Unknown event type: 82", PERF_RECORD_FINISHED_INIT,
	# which perf record (5.19 and later) always writes after its
	# synthesized events, a header without payload that quipper, older,
	# skips; and "Unknown event type: 14", PERF_RECORD_SWITCH, once for
	# every context switch record: perf record -e ntrace// asks for them
	# (perf 4.3 and later; the decoder learns from them who ran), perf
	# record -b does not, and quipper skips them too. Its warnings: the
	# branch type perf puts in a field quipper has as reserved ("Ignoring
	# branch stack entry reserved bits") and GCC not recording
	# compilation info (a Google GCC option).
	switches=$(hperf report --stats -i "$cd/perf.data" 2> /dev/null |
		sed -n 's/^ *SWITCH events: *\([0-9]*\).*/\1/p' | head -n 1)
	unknown14=$(grep -c 'Unknown event type: 14$' "$d/create_gcov.log" || true)
	errors=$(grep '^E' "$d/create_gcov.log" | grep -v -c -e 'Unknown event type: 82$' \
		-e 'Unknown event type: 14$' || true)
	warns=$(grep '^W' "$d/create_gcov.log" | grep -v -e 'Ignoring branch stack entry reserved bits' \
		-e 'Cannot read compilation info from binary' -c || true)
	if [ "$errors" -eq 0 ] && [ "$warns" -eq 0 ] && [ "$unknown14" -eq "${switches:-0}" ]; then
		result ok "$name create_gcov: no error but the records its reader predates (FINISHED_INIT, and $unknown14 SWITCH for the file's ${switches:-0}), no unexpected warning"
	else
		result "not ok" "$name create_gcov: $errors unexpected errors, $warns unexpected warnings, $unknown14 SWITCH records skipped of ${switches:-0}"
	fi
	# Samples mapped: every sample whose address lies in brwork. With CTR
	# the rest are overflows taken while the task was in the kernel (the
	# emulated counter overflows on a host timer, whatever the mode):
	# perf gives them the kernel address (6.12) or 0 (7.x hides kernel
	# addresses of user-only events). Their branch stacks are user
	# branches and create_gcov uses them all the same. N-Trace samples
	# are decoded user instructions: all in brwork. Quipper fails below
	# 95% of samples mapped.
	read -r nsamples nmapped < <(sed -n \
		's/.*Parser processed: .* \([0-9]*\) SAMPLE events, \([0-9]*\) of these were mapped.*/\1 \2/p' \
		"$d/create_gcov.log" | tail -n 1 | grep . || echo "0 0")
	skid=$(awk -f "$DIR/kernel-ips.awk" "$d/brstack.txt" 2> /dev/null || echo 0)
	if [ "$nsamples" -gt 0 ] && [ $((nmapped * 100)) -ge $((nsamples * 95)) ] &&
	   [ $((nsamples - nmapped)) -eq "$skid" ]; then
		result ok "$name create_gcov: mapped $nmapped of $nsamples samples ($((nmapped * 100 / nsamples))%, at least 95%); the $skid others overflowed in the kernel"
	else
		result "not ok" "$name create_gcov: mapped $nmapped of $nsamples samples, $skid overflowed in the kernel"
	fi
}
check_profiles ctr CTR
check_profiles ntrace N-Trace

# Both sources must find the same hot spots: llvm-profgen's five
# functions with the most samples are brwork's five hot ones in both
# profiles, and each one's share of their total agrees within 3 points
# (CTR samples on a timer, N-Trace every 401 instructions; measured
# apart by less than 0.2).
top5() { # llvm.prof -> "name share%" lines, the five largest totals
	awk -F: '/^[A-Za-z_][A-Za-z0-9_.]*:[0-9]+:/ { print $2, $1 }' "$1" |
		sort -nr | head -n 5 |
		awk '{ c[NR] = $1; f[NR] = $2; t += $1 }
		     END { for (i = 1; i <= NR; i++) printf "%s %.2f\n", f[i], 100 * c[i] / t }'
}
top5 "$DIR/ctr/llvm.prof" > "$DIR/ctr/top5" 2> /dev/null || true
top5 "$DIR/ntrace/llvm.prof" > "$DIR/ntrace/top5" 2> /dev/null || true
paste "$DIR/ctr/top5" "$DIR/ntrace/top5" | sed 's/^/# top functions, CTR and N-Trace: /'
if awk -v hot="$HOT" 'BEGIN { n = split(hot, h, " "); for (i = 1; i <= n; i++) want[h[i]] = 1 }
	NR == FNR { if (!($1 in want)) bad = 1; a[$1] = $2; na++; next }
	{ if (!($1 in a) || $2 - a[$1] > 3 || a[$1] - $2 > 3) bad = 1; nb++ }
	END { exit bad || na != 5 || nb != 5 }' "$DIR/ctr/top5" "$DIR/ntrace/top5"; then
	result ok "CTR and N-Trace profiles: the same five hottest functions ($(awk '{ printf "%s%s %s%%", s, $1, $2; s = ", " }' "$DIR/ntrace/top5")), shares within 3 points"
else
	result "not ok" "CTR and N-Trace profiles name different hot functions"
fi

# The loop closed with N-Trace: the clang build's trace, its profile, a
# rebuild with it, both builds counted on the board. The instruction
# count comes from the trace: in the lab both hardware counters follow
# host time (QEMU without -icount), and the trace is exact.
if [ -z "$CLANG" ]; then
	result ok "AutoFDO rebuild with clang -fprofile-sample-use # SKIP no clang on the host"
	finish
fi
if hperf inject -i "$CDIR/clang/prof.data" --itrace="$ITRACE" \
	-o "$CDIR/clang/prof.inj" > "$DIR/clang/inject.log" 2>&1 &&
   hperf script -i "$CDIR/clang/prof.inj" -F ip,brstack --show-mmap-events 2> /dev/null |
	grep -E 'PERF_RECORD_MMAP|/0x' > "$DIR/clang/lbr.txt" &&
   lab_chroot /usr/lib/llvm-19/bin/llvm-profgen --binary "$CDIR/clang/base/icall" \
	--perfscript "$CDIR/clang/lbr.txt" --format=text \
	--output "$CDIR/clang/icall.prof" > "$DIR/clang/llvm-profgen.log" 2>&1 &&
   grep -qE ' icall_add:[0-9]+' "$DIR/clang/icall.prof" &&
   clang_icall fdo -fprofile-sample-use="$DIR/clang/icall.prof" &&
   ! cmp -s "$DIR/clang/base/icall" "$DIR/clang/fdo/icall"; then
	result ok "$CLANG: icall rebuilt with -fprofile-sample-use of its N-Trace profile (the call site's targets: $(grep -oE 'icall_add:[0-9]+.*' "$DIR/clang/icall.prof" | head -n 1))"
else
	cat "$DIR/clang/inject.log" "$DIR/clang/llvm-profgen.log" "$DIR/clang/fdo.log" \
		2> /dev/null | tail -n 20 | sed 's/^/# /'
	result "not ok" "$CLANG: icall rebuilt with -fprofile-sample-use of its N-Trace profile"
	finish
fi
# Each build twice, alternating. The code the profile changes, main()
# and the icall_* targets, must run the same instructions every time:
# the trace is exact. The whole run may not quite: libc's LR/SC loops
# (libgcc's version_lock at start-up, __run_exit_handlers at exit) go
# round once more when an interrupt lands between the lr and the sc,
# because the kernel's trap return clears the reservation
# (arch/riscv/kernel/entry.S). Each time is 4 instructions, a taken
# conditional branch and a taken transfer; up to 2 were seen in 20 runs
# of each build. The totals must then agree to 0.01% or to 16, which is
# what lets the profiled build's 17,750 taken conditional branches
# differ by two (one in 20 runs did).
cat > "$DIR/count.sh" <<'EOF'
mkdir -p "$1" && mount --bind /mnt/host "$1" && cd "$1" || exit 1
insmod ./ntrace.ko || exit 1
for r in 1 2; do
	for v in base fdo; do
		./perf record -e ntrace//u -m ,8M -o /tmp/c.data -- \
			"./clang/$v/icall" 100000 > "clang/$v.$r.out" 2>&1
		echo $? > "clang/$v.$r.rc"
		cp /tmp/c.data "clang/$v.$r.data"
		rm -f /tmp/c.data
	done
done
rmmod ntrace
EOF
"$LAB_DIR/run" --kernel "$SERIES" --variant "$VARIANT" --share "$DIR" \
	--ntrace "$O/ntrace-plugin.so" --timeout 600 \
	--cmd "sh /mnt/host/count.sh $CDIR" >&2 ||
	result "not ok" "board (linux $SERIES): the two clang builds traced"
# count VARIANT RUN: "instructions conditional-taken taken errors
# main-instructions" of a run
count() {
	local f=$CDIR/clang/$1.$2.data
	hperf script -i "$f" --itrace=ei1 -F ip,sym 2> /dev/null |
		awk '/instruction trace error/ { e++; next } { i++ }
		     $2 == "main" || $2 ~ /^icall_/ { m++ }
		     END { printf "%d %d %d\n", i, e, m }' > "$DIR/clang/$1.$2.insns"
	hperf script -i "$f" --itrace=b -F ip,flags 2> /dev/null |
		awk '/jcc/ { c++ } { t++ } END { printf "%d %d\n", c, t }' \
		> "$DIR/clang/$1.$2.branches"
	read -r insns errs mains < "$DIR/clang/$1.$2.insns"
	read -r cond taken < "$DIR/clang/$1.$2.branches"
	echo "$insns $cond $taken $errs $mains"
}
declare -A got
for v in base fdo; do
	for r in 1 2; do
		if [ "$(cat "$DIR/clang/$v.$r.rc" 2> /dev/null)" = 0 ]; then
			got[$v.$r]=$(count "$v" "$r")
		else
			got[$v.$r]="0 0 0 1 0"
		fi
		echo "# $v run $r: instructions, taken conditional branches, taken transfers, errors, instructions in main and icall_*: ${got[$v.$r]}"
	done
done
read -r bi bc bt _ _ <<< "${got[base.1]}"
read -r pi pc pt _ _ <<< "${got[fdo.1]}"
sum() { grep -h 'checksum' "$DIR/clang/$1.$2.out" 2> /dev/null; }
# repeats VARIANT: what is wrong with the two runs of a build, or nothing
repeats() {
	local a=${got[$1.1]} b=${got[$1.2]}
	awk -v a="$a" -v b="$b" -v v="$1" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		if (x[1] == 0 || y[1] == 0) { printf "%s: a run failed or has no instructions; ", v; exit }
		if (x[4] || y[4]) { printf "%s: %d and %d trace errors; ", v, x[4], y[4]; exit }
		if (x[5] != y[5]) printf "%s: %d and %d instructions in main and icall_*; ", v, x[5], y[5]
		for (i = 1; i <= 3; i++) { d = x[i] - y[i]; if (d < 0) d = -d
			if (d > 16 && d * 10000 > x[i]) far = 1 }
		if (far) printf "%s: totals %s and %s; ", v, a, b }'
	[ -n "$(sum "$1" 1)" ] && [ "$(sum "$1" 1)" = "$(sum "$1" 2)" ] ||
		printf '%s: output of the two runs differs; ' "$1"
}
why="$(repeats base)$(repeats fdo)"
[ -n "$(sum base 1)" ] && [ "$(sum base 1)" = "$(sum fdo 1)" ] ||
	why="${why}the builds print different checksums; "
if [ -z "$why" ]; then
	result ok "both builds traced without error, same output, the same instructions in main and icall_* in each of two runs (totals to 0.01% or 16)"
else
	result "not ok" "the builds' traces: ${why%; }"
fi
ratio=$(awk -v a="$bi" -v b="$pi" 'BEGIN { if (a) printf "%.4f", b / a }')
echo "# instructions: baseline $bi, with the profile $pi, ratio $ratio"
echo "# taken conditional branches: baseline $bc, with the profile $pc; taken transfers: $bt, $pt"
# What the profile does to icall, measured: clang compares the pointer
# against the hot target the profile names and inlines it (the call,
# the return and the callee's frame go on 15 iterations in 16): 28%
# fewer instructions under qemu-riscv64 on the same profile.
if [ "$pi" -gt 0 ] && [ "$pi" -lt "$bi" ]; then
	result ok "with the profile: $pi instructions instead of $bi (ratio $ratio); taken conditional branches $pc instead of $bc"
else
	result "not ok" "with the profile: $pi instructions, baseline $bi (ratio $ratio)"
fi
finish
