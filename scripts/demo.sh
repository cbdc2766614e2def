#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make demo: the journey of a perf user on RISC-V, on the virtual board.
#
#  1. the host tools: a RISC-V program run under qemu-riscv64, encoded to
#     N-Trace by the encoder model, dumped and decoded by `ntrace`;
#  2. the board (newest lab kernel, the emulated N-Trace hardware, the
#     driver module, the project's perf): perf record -e ntrace//u and
#     perf record -b with CTR's whole 256-entry ring, of brwork;
#  3. the host's perf with the N-Trace decoder: perf script --itrace=b,
#     perf report --itrace=i1000i, perf report --branch-history;
#  4. AutoFDO profiles from both recordings, llvm-profgen and
#     create_gcov, their hot functions side by side.
#
# It installs and builds whatever is missing (Debian 12 host, the lab in
# /var/cache/ntrace-lab), one progress line per step; the steps' output
# goes to a log whose path it prints, and whose tail it shows when a
# step fails. Parts 2 to 4 need root or password-less sudo; without
# either the demo stops after part 1 and says so.
#
# Environment: NTRACE_DEMO_ITERS (brwork's iterations, 500000),
# NTRACE_LAB_PERF_OUT and NTRACE_LAB_HOST_PERF_OUT (where the two perfs
# are built, as for selftests/ntrace/perf-test), NTRACE_LAB_CACHE.
# Its files: build/demo (host part, the log), $WORK/demo (the board's).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT=$REPO/build/demo
LOG=$OUT/demo.log
ITERS=${NTRACE_DEMO_ITERS:-500000}
# the start time, kept when the board part runs again through sudo
T0=${NTRACE_DEMO_T0:-$(date +%s)}

now() {
	local s=$(($(date +%s) - T0))
	printf '%02d:%02d' $((s / 60)) $((s % 60))
}

# step DESCRIPTION ESTIMATE COMMAND...: one line for the step, its
# output in the log; on failure the log's tail and exit.
step() {
	local what=$1 est=$2 t rc
	shift 2
	t=$(date +%s)
	printf '[%s] %s%s ... ' "$(now)" "$what" "${est:+ ($est)}"
	printf '\n=== [%s] %s: %s\n' "$(now)" "$what" "$*" >> "$LOG"
	# not under "if": bash ignores set -e in a function called there
	set +e
	(set -e; "$@") >> "$LOG" 2>&1
	rc=$?
	set -e
	if [ "$rc" -eq 0 ]; then
		printf 'done (%ds)\n' $(($(date +%s) - t))
		return
	fi
	printf 'FAILED\n--- the last lines of %s:\n' "$LOG"
	tail -n 30 "$LOG"
	exit 1
}

# The first N lines of perf's --stdio output less comments and blank
# lines; awk reads it all, so that nothing upstream dies of SIGPIPE.
lines() { awk -v n="$1" '!/^#/ && NF && ++c <= n' "$2"; }

# A section heading, and a command as the user would type it.
section() { printf '\n== %s\n' "$*"; }
typed() { printf 'host$ %s\n' "$*"; }

host_part() {
	mkdir -p "$OUT"
	: > "$LOG"
	echo "make demo: N-Trace and CTR through perf on a virtual RISC-V board"
	echo "build log: $LOG"
	step "host packages (scripts/install-deps.sh)" "" bash scripts/install-deps.sh
	step "libntrace, ntrace, the trace hardware plugin, qsort_cb under qemu-riscv64" \
		"about 1 min the first time" \
		make -j2 O=build all build/ntrace-plugin.so build/programs/qsort_cb.pcs

	local prog=build/programs/qsort_cb opts
	section "1. ntrace on the host: $prog, $(wc -l < "$prog.pcs") instructions run under qemu-riscv64"
	# the encoder model, plain and with every compression option
	for opts in "--mode btm" \
		"--mode htm --implicit-return 3 --repeat-history --sequential-jump"; do
		typed "ntrace encode --elf $prog --pc-trace $prog.pcs $opts -o qsort_cb.nt --stats"
		# shellcheck disable=SC2086 # the options are words
		build/ntrace encode --elf "$prog" --pc-trace "$prog.pcs" \
			-o "$OUT/qsort_cb.nt" --stats $opts 2>&1 | tail -n 1 | sed 's/^/  /'
	done
	typed "ntrace dump qsort_cb.nt | head -5"
	build/ntrace dump "$OUT/qsort_cb.nt" > "$OUT/qsort_cb.dump"
	head -n 5 "$OUT/qsort_cb.dump"
	typed "ntrace decode --elf $prog qsort_cb.nt --format branches | head -5"
	build/ntrace decode --elf "$prog" "$OUT/qsort_cb.nt" --format branches \
		-o "$OUT/qsort_cb.branches"
	head -n 5 "$OUT/qsort_cb.branches"
}

# --- parts 2 to 4: root from here on -----------------------------------

# The lab is set up when everything the demo uses is there; setup.sh is
# otherwise skipped, since a warm run of it refreshes every package from
# the mirror (a minute), which a demo does not need
# (make -C tools/lab setup does that).
lab_ready() {
	[ -f "$WORK/kernels" ] && [ -f "$WORK/firmware/fw_dynamic.bin" ] &&
		[ -f "$WORK/rvroot/.packages" ] && [ -f "$WORK/manifest" ] &&
		[ -x "$CHROOT/usr/bin/qemu-system-riscv64" ] &&
		[ -x "$CHROOT/usr/bin/create_gcov" ] &&
		[ -x "$CHROOT/usr/bin/dump_gcov" ] &&
		compgen -G "$CHROOT/usr/lib/llvm-*/bin/llvm-profgen" > /dev/null &&
		[ -e "$CHROOT/usr/include/traceevent/event-parse.h" ]
}

# brwork for the board, and a copy with DWARF 4 debug information for
# create_gcov, whose DWARF reader predates DWARF 5 (GCC 14's default);
# the code must be the same (Documentation/ctr.rst, AutoFDO recipe).
build_brwork() {
	local o
	for o in st dwarf4; do
		rm -rf "${D:?}/$o"
	done
	lab_chroot make -C "$CREPO/selftests" KSRC=/nonexistent \
		OUT="$CD/st" "$CD/st/workload/brwork"
	lab_chroot make -C "$CREPO/selftests" KSRC=/nonexistent OUT="$CD/dwarf4" \
		BRWORK_CFLAGS="-g -gdwarf-4 -fno-inline -fno-omit-frame-pointer" \
		"$CD/dwarf4/workload/brwork"
	for o in st dwarf4; do
		lab_chroot riscv64-linux-gnu-objcopy -O binary -j .text \
			"$CD/$o/workload/brwork" "$CD/$o/brwork.text"
	done
	cmp "$D/st/brwork.text" "$D/dwarf4/brwork.text"
}

# The host's perf, in the lab chroot, where $WORK is /lab, and in a PID
# namespace of its own: perf looks up the recorded task's PID in /proc to
# find its mount namespace, and when a host process has the PID the
# board's brwork had, it reads brwork in that process's namespace, where
# /lab is not mounted, and decodes nothing ("no code for ...").
hperf() {
	LAB_PIDNS=1 lab_chroot "$CWORK/${HOST_PERF_OUT#"$WORK"/}/perf" "$@"
}

# profile_table: each profile's functions as shares of its total, the
# functions of the first profile in its order; "-" where a profile
# lacks one. Input: "profile function total" lines.
profile_table() {
	awk '{ if (!($1 in seen)) { seen[$1] = 1; cols[++nc] = $1 }
	       if ($1 == cols[1] && !($2 in row)) { row[$2] = 1; rows[++nr] = $2 }
	       v[$1, $2] += $3; tot[$1] += $3 }
	     END {
		printf "  %-14s", "function"
		for (c = 1; c <= nc; c++) printf " %20s", cols[c]
		printf "\n"
		for (r = 1; r <= nr && r <= 8; r++) {
			printf "  %-14s", rows[r]
			for (c = 1; c <= nc; c++)
				if ((cols[c], rows[r]) in v && tot[cols[c]] > 0)
					printf " %19.1f%%", 100 * v[cols[c], rows[r]] / tot[cols[c]]
				else
					printf " %20s", "-"
			printf "\n"
		} }'
}

# llvm-profgen's text profile and dump_gcov's listing as
# "NAME function total" lines, hottest first.
llvm_funcs() { # name file
	sed -n 's/^\([A-Za-z_][A-Za-z0-9_.]*\):\([0-9]*\):[0-9]*$/\1 \2/p' "$2" |
		sort -k2,2nr | sed "s/^/$1 /"
}
gcov_funcs() { # name file
	sed -n 's/^\([A-Za-z_][A-Za-z0-9_.]*\) total:\([0-9]*\) .*/\1 \2/p' "$2" |
		sort -k2,2nr | sed "s/^/$1 /"
}

# afdo NAME PERF.DATA: both tools' profiles of one recording: llvm-profgen
# from D/NAME.brstack (perf script -F ip,brstack --show-mmap-events),
# create_gcov from PERF.DATA (under CD).
afdo() {
	local name=$1 data=$2
	# llvm-profgen reads the mmap events and the samples with branches;
	# one without any makes it take the file for a stack+LBR profile
	grep -E 'PERF_RECORD_MMAP|/0x' "$D/$name.brstack" > "$D/$name.lbr"
	lab_chroot "$PROFGEN" --binary "$CD/st/workload/brwork" \
		--perfscript "$CD/$name.lbr" --format=text --output "$CD/$name.llvm.prof"
	lab_chroot create_gcov --binary="$CD/dwarf4/workload/brwork" \
		--profile="$CD/$data" --gcov="$CD/$name.afdo" -gcov_version=1 \
		--logtostderr
	lab_chroot dump_gcov -gcov_version=1 "$CD/$name.afdo" > "$D/$name.afdo.txt"
	grep -q '^brwork_mix total:[1-9]' "$D/$name.afdo.txt" &&
		grep -q '^brwork_mix:[1-9]' "$D/$name.llvm.prof"
}

record_on_board() {
	rm -rf "${D:?}/share" "${D:?}/local"
	mkdir -p "$D/share" "$D/local"
	cp scripts/demo-board.sh "$D/st/workload/brwork" "$D/mod/ntrace.ko" \
		"$PERF_OUT/perf" "$D/share/"
	# where the board runs CTR's brwork from (demo-board.sh)
	cp "$D/st/workload/brwork" "$D/local/"
	cp build/ntrace-plugin.so "$D/"
	# one hart: enough for per-task recordings, and the quickest board
	"$REPO/tools/lab/run" --kernel "$SERIES" --smp 1 --share "$D/share" \
		--ntrace "$D/ntrace-plugin.so" --timeout 900 \
		--cmd "sh /mnt/host/demo-board.sh $CD/share $ITERS" > "$D/board.out"
}

board_part() {
	# shellcheck source=tools/lab/lib.sh
	. tools/lab/lib.sh
	D=$WORK/demo
	CD=$CWORK/demo
	# where the perfs are built: shared with lab-test and perf-test
	# unless told (the same knobs as selftests/ntrace/perf-test)
	PERF_OUT=${NTRACE_LAB_PERF_OUT:-$WORK/perf-riscv64}
	HOST_PERF_OUT=${NTRACE_LAB_HOST_PERF_OUT:-$WORK/perf-host}
	mkdir -p "$D"
	# lab-test holds this lock while it builds: two builds of one cache
	# would rebuild under each other's feet
	mkdir -p "$CACHE"
	exec 9> "$CACHE/lab-test.lock"
	if ! flock -n 9; then
		echo "[$(now)] waiting for a lab-test that is using $CACHE"
		flock 9
	fi
	if lab_ready; then
		echo "[$(now)] the lab is set up ($CACHE; make -C tools/lab setup refreshes it)"
	else
		step "the lab: Debian trixie chroot, QEMU 11, firmware, riscv64 userspace" \
			"about 10 min the first time" tools/lab/setup.sh
	fi
	SERIES=$(newest_kernel)
	local ver
	ver=$(kernel_version "$SERIES")
	step "the board's kernel, linux $ver with CTR" "about 6 min the first time" \
		tools/lab/build-kernel.sh "$SERIES" default
	step "the board's initramfs (busybox, selftests)" "about 1 min the first time" \
		tools/lab/build-userspace.sh default
	step "perf for the board (riscv64, patches/perf)" "about 2 min the first time" \
		tools/lab/build-perf.sh "$PERF_OUT"
	step "perf for the host, with the N-Trace decoder (libntrace)" \
		"about 2 min the first time" tools/lab/build-perf.sh --host "$HOST_PERF_OUT"
	step "the N-Trace driver, ntrace.ko, for linux $ver" "" \
		build_ntrace_module "$SERIES" "$D/mod"
	step "brwork, the workload (and a DWARF 4 copy for create_gcov)" "" build_brwork
	flock -u 9
	PROFGEN=$(compgen -G "$CHROOT/usr/lib/llvm-*/bin/llvm-profgen" | sort -V | tail -n 1)
	PROFGEN=${PROFGEN#"$CHROOT"}

	step "booting linux $ver with the emulated N-Trace hardware, recording" \
		"about 1 min" record_on_board
	section "2. on the board: linux $ver, QEMU virt with CTR and the N-Trace plugin, our perf"
	cat "$D/board.out"

	local data=$CD/share/ntrace.data
	section "3. on the host: the host's perf, with the N-Trace decoder, reads both recordings ($CD in the lab chroot)"
	typed "perf script -i ntrace.data --itrace=b | head -4"
	# head closes the pipe early: perf's status is of no interest there
	hperf script -i "$data" --itrace=b 2>> "$LOG" | head -n 4 | tr -s ' ' || true
	# the same transfers in the hot loop, with their kinds
	typed "perf script -i ntrace.data --itrace=b -F flags,ip,sym,symoff,addr --symbols=brwork_mix | head -6"
	hperf script -i "$data" --itrace=b -F flags,ip,sym,symoff,addr \
		--symbols=brwork_mix 2>> "$LOG" | head -n 6 | tr -s ' ' || true
	typed "perf report -i ntrace.data --stdio --itrace=i1000i | head"
	hperf report -i "$data" --stdio --itrace=i1000i --sort comm,dso,sym \
		> "$D/ntrace.report" 2>> "$LOG"
	lines 6 "$D/ntrace.report"
	# the board's perf has no libelf, so its reports name no symbols
	typed "perf report -i ctr.data --branch-history --stdio | head   # CTR, 256 entries a sample"
	hperf report -i "$CD/share/ctr.data" --branch-history --stdio \
		> "$D/ctr.history" 2> "$D/ctr.history.err"
	lines 12 "$D/ctr.history" | sed 's/ *$//'
	grep -m1 corrupted "$D/ctr.history.err" || true

	section "4. AutoFDO from both: llvm-profgen and create_gcov"
	echo "CTR: the board's perf script -F ip,brstack --show-mmap-events > ctr.brstack"
	typed "grep -E 'PERF_RECORD_MMAP|/0x' ctr.brstack > ctr.lbr"
	typed "llvm-profgen --binary brwork --perfscript ctr.lbr --format=text --output ctr.llvm.prof"
	typed "create_gcov --binary=brwork.dwarf4 --profile=ctr.data --gcov=ctr.afdo -gcov_version=1"
	cp "$D/share/ctr.brstack" "$D/ctr.brstack"
	step "CTR: llvm-profgen and create_gcov" "" afdo ctr share/ctr.data
	# a sample every 10000 instructions with the last 64 transfers, as
	# CTR or LBR would give them
	echo "N-Trace: branch stacks made of the decoded transfers"
	typed "perf inject -i ntrace.data --itrace=i10000il64 -o ntrace.inj"
	typed "perf script -i ntrace.inj -F ip,brstack --show-mmap-events > ntrace.brstack"
	typed "llvm-profgen ... (as above)"
	typed "create_gcov --binary=brwork.dwarf4 --profile=ntrace.inj --gcov=ntrace.afdo -gcov_version=1"
	step "N-Trace: perf inject, llvm-profgen and create_gcov" "" \
		afdo_ntrace
	echo
	echo "hot functions, share of each profile (CTR: $(grep -c /0x "$D/ctr.brstack") samples of up to 256 branches;"
	echo "N-Trace: $(grep -c /0x "$D/ntrace.brstack") samples of 64, from $(stat -c %s "$D/share/ntrace.data" | awk '{ printf "%.1f", $1 / 1048576 }') MB of perf.data):"
	{
		llvm_funcs "CTR:llvm-profgen" "$D/ctr.llvm.prof"
		llvm_funcs "N-Trace:llvm-profgen" "$D/ntrace.llvm.prof"
		gcov_funcs "CTR:create_gcov" "$D/ctr.afdo.txt"
		gcov_funcs "N-Trace:create_gcov" "$D/ntrace.afdo.txt"
	} | profile_table
	echo "profiles: $D/{ctr,ntrace}.llvm.prof (text), $D/{ctr,ntrace}.afdo (gcov)"
}

afdo_ntrace() {
	hperf inject -i "$CD/share/ntrace.data" --itrace=i10000il64 -o "$CD/ntrace.inj"
	hperf script -i "$CD/ntrace.inj" -F ip,brstack --show-mmap-events > "$D/ntrace.brstack"
	afdo ntrace ntrace.inj
}

if [ "${1:-}" = --board ]; then
	board_part
	echo
	echo "make demo took $(now) (min:s)"
	exit 0
fi

host_part
if [ "$(id -u)" -eq 0 ]; then
	board_part
elif command -v sudo > /dev/null && sudo -n true 2> /dev/null; then
	sudo -n NTRACE_DEMO_T0="$T0" NTRACE_DEMO_ITERS="$ITERS" \
		NTRACE_LAB_CACHE="${NTRACE_LAB_CACHE:-}" \
		NTRACE_LAB_PERF_OUT="${NTRACE_LAB_PERF_OUT:-}" \
		NTRACE_LAB_HOST_PERF_OUT="${NTRACE_LAB_HOST_PERF_OUT:-}" \
		bash scripts/demo.sh --board
	exit
else
	section "2. to 4. the virtual board: skipped"
	echo "The board (tools/lab) needs root or password-less sudo: it builds a"
	echo "Debian chroot and boots QEMU from it. Run make demo as root for the rest."
fi
echo
echo "make demo took $(now) (min:s)"
