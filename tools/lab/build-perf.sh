#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build a riscv64 perf for the lab board: tools/perf of the newest lab
# kernel's Debian source with the project's perf series
# (patches/perf/, RISC-V AUX area tracing for the ntrace PMU), cross-built
# inside the chroot as a static binary with few features (no libelf,
# libtraceevent, python, perl, jevents...): what recording needs.
#
# Usage: build-perf.sh [OUTDIR]
# OUTDIR (default $WORK/perf-riscv64, NTRACE_LAB_PERF_OUT) must lie under
# the cache's work directory; the binary lands in OUTDIR/perf, rebuilt
# only when the source package, the patches or this script change.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

OUT=${1:-${NTRACE_LAB_PERF_OUT:-$WORK/perf-riscv64}}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
case "$OUT/" in
"$(realpath "$WORK")"/*) ;;
*) die "$OUT: the output directory must be under $WORK" ;;
esac
COUT=$CWORK/${OUT#"$(realpath "$WORK")"/}

[ -f "$WORK/kernels" ] || die "run tools/lab/setup.sh (make -C tools/lab setup) first"
SERIES=$(newest_kernel)
KPKG=$(kernel_pkg "$SERIES")
PATCHDIR=$REPO_DIR/patches/perf
[ -d "$PATCHDIR" ] || die "no perf patch series in $PATCHDIR"

VERS=$(pkg_versions "$KPKG" gcc-riscv64-linux-gnu | tr '\n' ' ')
KEY=$(hash_inputs "perf-v1" "$VERS" "$PATCHDIR" "$LAB_DIR/build-perf.sh")
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

# Features off that need riscv64 libraries the chroot does not have;
# with them off perf still records (and reports -D). Only the perf
# binary: the dlfilter objects are shared libraries, which -static
# cannot link.
NO=(NO_LIBELF=1 NO_LIBDW=1 NO_LIBTRACEEVENT=1 NO_LIBPYTHON=1 NO_LIBPERL=1
    NO_JEVENTS=1 NO_LIBUNWIND=1 NO_SLANG=1 NO_LIBNUMA=1 NO_BABELTRACE2=1
    NO_LIBZSTD=1 NO_LZMA=1 NO_ZLIB=1 NO_LIBBPF=1 NO_LIBPFM4=1 NO_DEMANGLE=1
    NO_LIBLLVM=1 NO_CAPSTONE=1 NO_SDT=1 NO_LIBDEBUGINFOD=1 NO_JVMTI=1
    NO_RUST=1 NO_AIO=1 NO_BACKTRACE=1)
LOG=$OUT/build.log
log "building perf (log: $LOG)"
start=$SECONDS
if ! lab_chroot make -C "$COUT/src/tools/perf" O="$COUT/build" \
	ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu- LDFLAGS=-static \
	WERROR=0 "${NO[@]}" -j"${NTRACE_LAB_JOBS:-2}" "$COUT/build/perf" \
	> "$LOG" 2>&1; then
	grep -E 'error|Error' "$LOG" | head -n 30 >&2 || true
	tail -n 20 "$LOG" >&2
	die "perf build failed"
fi
cp "$OUT/build/perf" "$OUT/perf"
lab_chroot riscv64-linux-gnu-strip "$COUT/perf"
log "perf built in $((SECONDS - start)) s: $OUT/perf"
printf '%s\n' "$KEY" > "$OUT/stamp"
