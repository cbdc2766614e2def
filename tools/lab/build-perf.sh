#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build perf from tools/perf of the newest lab kernel's Debian source with
# the project's perf series (patches/perf/: RISC-V AUX area tracing for
# the ntrace PMU, the N-Trace decoder), for one of two places:
#
# - the board (default): cross-built inside the chroot as a static
#   riscv64 binary against a sysroot of riscv64 Debian packages
#   ($WORK/rv-sysroot, lib.sh: rv_sysroot_update) with libelf, libdw,
#   libtraceevent, zstd and libntrace (built from this repository for
#   riscv64): it records with build-ids, reports with symbols and
#   decodes N-Trace on the board;
# - the host (--host): built natively in the chroot (Debian trixie) with
#   libelf, libdw, libtraceevent and libntrace (built from this
#   repository, found through pkg-config), to decode and report what the
#   board recorded. It runs in the chroot: lab_chroot OUTDIR/perf ...
#
# Usage: build-perf.sh [--host] [OUTDIR]
# OUTDIR (default $WORK/perf-riscv64 or $WORK/perf-host,
# NTRACE_LAB_PERF_OUT) must lie under the cache's work directory; the
# binary lands in OUTDIR/perf, rebuilt only when the source package, the
# patches, libntrace, the packages built with (the sysroot's too) or this
# script change.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

TARGET=riscv64
if [ "${1:-}" = --host ]; then
	TARGET=host
	shift
fi
OUT=${1:-${NTRACE_LAB_PERF_OUT:-$WORK/perf-$TARGET}}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
case "$OUT/" in
"$(realpath "$WORK")"/*) ;;
*) die "$OUT: the output directory must be under $WORK" ;;
esac
COUT=$CWORK/${OUT#"$(realpath "$WORK")"/}
# one build at a time per output directory: a second one would unpack
# the source under the first one's compiler
exec 9> "$OUT/.lock"
flock 9

[ -f "$WORK/kernels" ] || die "run tools/lab/setup.sh (make -C tools/lab setup) first"
# patches/perf is a series against the newest kernel's tools/perf: that
# one, whichever kernels NTRACE_LAB_KERNELS selects to build and boot
SERIES=$(NTRACE_LAB_KERNELS='' newest_kernel)
KPKG=$(kernel_pkg "$SERIES")
PATCHDIR=$REPO_DIR/patches/perf
[ -d "$PATCHDIR" ] || die "no perf patch series in $PATCHDIR"

# what the host's perf links with (tools/lab/setup.sh: PERF_HOST_PKGS)
HOST_PKGS=(gcc libelf-dev libdw-dev libtraceevent-dev libzstd-dev zlib1g-dev pkgconf)
if [ "$TARGET" = host ]; then
	VERS=$(pkg_versions "$KPKG" "${HOST_PKGS[@]}" | tr '\n' ' ')
	KEY=$(hash_inputs "perf-v2-host" "$VERS" "$PATCHDIR" "$LAB_DIR/build-perf.sh" \
		"$REPO_DIR/tools/lib/ntrace" "$REPO_DIR/Makefile")
else
	# A lab set up before the sysroot step existed gets it here, once;
	# setup.sh keeps it up to date.
	[ -f "$RV_SYSROOT/.packages" ] || rv_sysroot_update
	VERS=$(pkg_versions "$KPKG" gcc-riscv64-linux-gnu pkgconf | tr '\n' ' ')
	VERS+=$(closure_of "$(cat "$RV_SYSROOT/.packages")" | tr '\n' ' ')
	KEY=$(hash_inputs "perf-v2" "$VERS $RV_STATIC_DWARF_LIBS" "$PATCHDIR" \
		"$LAB_DIR/build-perf.sh" "$REPO_DIR/tools/lib/ntrace" "$REPO_DIR/Makefile")
fi
if [ -x "$OUT/perf" ] && [ -f "$OUT/stamp" ] && [ "$(cat "$OUT/stamp")" = "$KEY" ]; then
	log "perf in $OUT is up to date"
	exit 0
fi
rm -f "$OUT/stamp" "$OUT/perf"

# Only what tools/perf builds from. git apply takes no fuzz: a base that
# moved under a patch fails here instead of building something unreviewed.
log "unpacking tools/perf of $KPKG and applying patches/perf"
rm -rf "$OUT/src" "$OUT/build"
mkdir -p "$OUT/src" "$OUT/build"
lab_chroot tar -C "$COUT/src" --strip-components=1 -xf "/usr/src/$KPKG.tar.xz" \
	"$KPKG/tools" "$KPKG/scripts" "$KPKG/include" "$KPKG/arch/riscv" \
	"$KPKG/lib" "$KPKG/Makefile" "$KPKG/arch/arm64/tools" "$KPKG/kernel/bpf" \
	"$KPKG/COPYING" "$KPKG/LICENSES/preferred" "$KPKG/MAINTAINERS"
PATCHES=()
for p in "$PATCHDIR"/*.patch; do
	[ -e "$p" ] && PATCHES+=("$CREPO/${p#"$REPO_DIR"/}")
done
[ ${#PATCHES[@]} -gt 0 ] || die "no patches in $PATCHDIR"
lab_chroot sh -c 'cd "$1" && shift && for p; do
		git apply --check "$p" && git apply "$p" || exit 1
	done' apply "$COUT/src" "${PATCHES[@]}" ||
	die "patches/perf does not apply to $KPKG $(pkg_versions "$KPKG" | cut -d= -f2)"

LOG=$OUT/build.log
MAKE_ENV=()
if [ "$TARGET" = host ]; then
	# libntrace, static only: perf then needs no library path to run
	log "building libntrace for the host's perf"
	rm -rf "$OUT/libntrace" "$OUT/libntrace-build"
	lab_chroot make -C "$CREPO" O="$COUT/libntrace-build" \
		PREFIX="$COUT/libntrace" install > "$OUT/libntrace.log" 2>&1 ||
		{ tail -n 20 "$OUT/libntrace.log" >&2; die "libntrace build failed"; }
	rm -f "$OUT"/libntrace/lib/libntrace.so*
	# features the lab chroot has no packages for stay off
	MAKE_ARGS=(PKG_CONFIG_PATH="$COUT/libntrace/lib/pkgconfig"
		NO_LIBPYTHON=1 NO_LIBPERL=1 NO_LIBBPF=1 NO_SLANG=1 NO_GTK2=1
		NO_LIBUNWIND=1 NO_BABELTRACE2=1 NO_LIBLLVM=1 NO_CAPSTONE=1
		NO_LIBPFM4=1 NO_LIBNUMA=1 NO_LIBCAP=1 NO_LIBDEBUGINFOD=1 NO_JEVENTS=1
		NO_SDT=1)
else
	# The build's own sysroot: a hard-linked copy of the shared one
	# (cheap, and setup.sh replacing that one leaves this build alone)
	# plus libntrace for riscv64 in /usr/local. The cross gcc searches
	# its own glibc (/usr/riscv64-linux-gnu, trixie's) before the
	# sysroot, so the sysroot's libc6-dev is never used: perf and the
	# libraries link against the cross toolchain's glibc.
	SR=$OUT/sysroot CSR=$COUT/sysroot
	rm -rf "$SR"
	cp -al "$RV_SYSROOT" "$SR"
	# pkg-config (pkgconf) for the sysroot: its .pc files only, their
	# paths under it, and its system directories left out, so that no
	# -I puts the sysroot's glibc headers before the cross toolchain's.
	PC_ENV=(PKG_CONFIG_LIBDIR="$CSR/usr/local/lib/pkgconfig:$CSR/usr/lib/riscv64-linux-gnu/pkgconfig:$CSR/usr/share/pkgconfig"
		PKG_CONFIG_SYSROOT_DIR="$CSR"
		PKG_CONFIG_SYSTEM_INCLUDE_PATH="$CSR/usr/include"
		PKG_CONFIG_SYSTEM_LIBRARY_PATH="$CSR/usr/lib/riscv64-linux-gnu:$CSR/usr/lib")
	log "building libntrace for riscv64 against the sysroot"
	rm -rf "$OUT/libntrace-build"
	lab_chroot env "${PC_ENV[@]}" make -C "$CREPO" O="$COUT/libntrace-build" \
		CC="riscv64-linux-gnu-gcc --sysroot=$CSR" AR=riscv64-linux-gnu-ar \
		PREFIX=/usr/local DESTDIR="$CSR" -j"${NTRACE_LAB_JOBS:-2}" install \
		> "$OUT/libntrace.log" 2>&1 ||
		{ tail -n 20 "$OUT/libntrace.log" >&2; die "libntrace build failed"; }
	# static only, as perf is
	rm -f "$SR"/usr/local/lib/libntrace.so*
	# -static: every library its dependencies after it (lib.sh)
	MAKE_ENV=("${PC_ENV[@]}")
	MAKE_ARGS=(ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu- PKG_CONFIG=pkg-config
		EXTRA_CFLAGS="--sysroot=$CSR"
		LDFLAGS="-static --sysroot=$CSR"
		DWARFLIBS="$RV_STATIC_DWARF_LIBS"
		NO_LIBPYTHON=1 NO_LIBPERL=1 NO_JEVENTS=1 NO_LIBUNWIND=1 NO_SLANG=1
		NO_LIBNUMA=1 NO_BABELTRACE2=1 NO_LIBBPF=1 NO_LIBPFM4=1
		NO_DEMANGLE=1 NO_LIBLLVM=1 NO_CAPSTONE=1 NO_LIBDEBUGINFOD=1
		NO_JVMTI=1 NO_RUST=1 NO_AIO=1 NO_BACKTRACE=1 NO_LIBCAP=1 NO_SDT=1)
fi
log "building the $TARGET perf (log: $LOG)"
start=$SECONDS
if ! lab_chroot env "${MAKE_ENV[@]}" make -C "$COUT/src/tools/perf" O="$COUT/build" \
	WERROR=0 "${MAKE_ARGS[@]}" -j"${NTRACE_LAB_JOBS:-2}" "$COUT/build/perf" \
	> "$LOG" 2>&1; then
	grep -E 'error|Error' "$LOG" | head -n 30 >&2 || true
	tail -n 20 "$LOG" >&2
	die "perf build failed"
fi
cp "$OUT/build/perf" "$OUT/perf"
if [ "$TARGET" = host ]; then
	lab_chroot "$COUT/perf" check feature libntrace > "$OUT/features" 2>&1 ||
		{ cat "$OUT/features" >&2; die "the host's perf was built without libntrace"; }
	strip "$OUT/perf" 2>/dev/null || lab_chroot strip "$COUT/perf"
else
	# What the sysroot is for: a perf that keeps build-ids and the vDSO,
	# resolves symbols and decodes N-Trace on the board. perf check
	# feature fails when one is off; qemu-riscv64 (qemu-user, which
	# scripts/install-deps.sh installs on the host) runs it here.
	if command -v qemu-riscv64 > /dev/null; then
		qemu-riscv64 "$OUT/perf" check feature \
			libelf,dwarf,libtraceevent,zlib,zstd,lzma,libntrace > "$OUT/features" 2>&1 ||
			{ cat "$OUT/features" >&2; die "the riscv64 perf lacks a feature of the sysroot"; }
	else
		log "no qemu-riscv64 on the host: perf's features are not checked"
	fi
	lab_chroot riscv64-linux-gnu-strip "$COUT/perf"
fi
log "perf built in $((SECONDS - start)) s: $OUT/perf"
printf '%s\n' "$KEY" > "$OUT/stamp"
