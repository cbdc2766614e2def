#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build a lab kernel: one of the Debian kernel sources setup.sh installed
# (6.12: linux-source-6.12, the LTS; 7.x: the newest linux-source-7.N in
# backports) plus the project's overlay (drivers/, include/) and its patch
# series for that base (patches/linux-<series>/), configured from
# tinyconfig and the fragments in this directory, cross-built inside the
# chroot.
#
# Usage: build-kernel.sh [6.12|7.x] [default|debug]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

SERIES=${1:-6.12}
VARIANT=${2:-${NTRACE_LAB_VARIANT:-default}}
FRAGS=("$LAB_DIR/kernel.config")
# Options whose names differ between the bases.
[ -f "$LAB_DIR/kernel-$SERIES.config" ] && FRAGS+=("$LAB_DIR/kernel-$SERIES.config")
case "$VARIANT" in
default) ;;
debug) FRAGS+=("$LAB_DIR/kernel-debug.config") ;;
*) die "unknown kernel variant '$VARIANT'" ;;
esac

[ -f "$STAMPS/packages" ] || die "run tools/lab/setup.sh (make -C tools/lab setup) first"
KPKG=$(kernel_pkg "$SERIES")
[ -n "$KPKG" ] || die "unknown kernel series '$SERIES' (known: $(awk '{print $1}' "$WORK/kernels" | xargs))"
TAG=$SERIES-$VARIANT

OVERLAY=()
for d in drivers include; do
	[ -d "$REPO_DIR/$d" ] && OVERLAY+=("$REPO_DIR/$d")
done
PATCHDIR=$REPO_DIR/patches/linux-$SERIES
[ -d "$PATCHDIR" ] || die "no patch series $PATCHDIR for the $SERIES kernel"

VERS=$(pkg_versions "$KPKG" gcc-riscv64-linux-gnu | tr '\n' ' ')
SRC_KEY=$(hash_inputs "src-v2" "$VERS" "${OVERLAY[@]}" "$PATCHDIR")
KEY=$(hash_inputs "kernel-v2" "$SRC_KEY" "$VARIANT" "${FRAGS[@]}" \
	"$LAB_DIR/build-kernel.sh" "$LAB_DIR/conftest.sh" "$LAB_DIR/conftest")
# The check of our files at W=1 and under sparse (check_ours) has inputs
# the image does not: lib.sh's rules and forky's sparse. Its own key
# re-runs it when they change, without rebuilding the kernel.
SPARSE_VER=$(forky_version sparse)
CHECK_KEY=$(hash_inputs "check-v1" "$KEY" "$LAB_DIR/lib.sh" "sparse=$SPARSE_VER")
SRC=linux-$SERIES
OUT=$WORK/kernel-$TAG

image_current=0
if stamp_ok "kernel-$TAG" "$KEY" && [ -f "$OUT/Image" ]; then
	if stamp_ok "check-$TAG" "$CHECK_KEY"; then
		log "kernel $TAG is up to date"
		exit 0
	fi
	image_current=1
fi

# The source tree is shared by the variants of a series and rebuilt only
# when the Debian source or the overlay changes; ccache keeps that cheap.
if ! stamp_ok "src-$SERIES" "$SRC_KEY" || [ ! -f "$WORK/$SRC/Makefile" ]; then
	log "unpacking $KPKG and applying the overlay"
	rm -rf "${WORK:?}/$SRC" "$WORK/$SRC.tmp"
	mkdir -p "$WORK/$SRC.tmp"
	# --touch: a file the overlay no longer changes must look newer than
	# its old object, or make would keep the stale object. ccache makes
	# the resulting full rebuild cheap.
	lab_chroot tar -C "$CWORK/$SRC.tmp" --strip-components=1 --touch \
		-xf "/usr/src/$KPKG.tar.xz"
	for d in drivers include; do
		[ -d "$REPO_DIR/$d" ] && cp -R "$REPO_DIR/$d/." "$WORK/$SRC.tmp/$d/"
	done
	# git apply takes no fuzz: a base that moved under a patch fails
	# here, naming the file and the hunk, instead of building something
	# nobody reviewed.
	for p in "$PATCHDIR"/*.patch; do
		[ -e "$p" ] || continue
		log "applying $(basename "$p")"
		if ! lab_chroot sh -c 'cd "$1" && git apply --check "$2" && git apply "$2"' \
			apply "$CWORK/$SRC.tmp" "$CREPO/${p#"$REPO_DIR"/}"; then
			die "$(basename "$p") does not apply to $KPKG $(pkg_versions "$KPKG" | cut -d= -f2): refresh patches/linux-$SERIES (Documentation/lab.rst)"
		fi
	done
	mv "$WORK/$SRC.tmp" "$WORK/$SRC"
	stamp_set "src-$SERIES" "$SRC_KEY"
	image_current=0
fi

BUILD=$CWORK/kbuild-$TAG
mkdir -p "$WORK/kbuild-$TAG" "$WORK/ccache" "$OUT"
cp "${FRAGS[@]}" "$WORK/kbuild-$TAG/"
FRAG_NAMES=()
for f in "${FRAGS[@]}"; do FRAG_NAMES+=("$BUILD/$(basename "$f")"); done

KARGS=(ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu- "CC=ccache riscv64-linux-gnu-gcc")
KMAKE=(make -C "$CWORK/$SRC" O="$BUILD" "${KARGS[@]}" "-j$(nproc)")

# W=1 and sparse: the project's code must build without a warning from
# either; the rest of the kernel is not held to that, so only our files
# are checked. They also get a stack frame limit far below the kernel's
# 2048: their code runs in hard interrupt context (the CTR sample path
# once had a 1008-byte frame). Each file's log must hold nothing but
# kbuild's own lines (kbuild_log_clean), its CHECK line among them.
# Needs COMPAT, the tree's API probe flags.
FRAME_MAX=512
check_ours() {
	local sparse f obj ours=() w1=$WORK/kbuild-$TAG/w1.log

	sparse=$(forky_sparse "$WORK/kbuild-$TAG/sparse-fetch.log" "$SPARSE_VER") ||
		die "kernel $TAG: forky's sparse: $(apt_reason "$WORK/kbuild-$TAG/sparse-fetch.log")"
	while IFS= read -r f; do
		ours+=("${f#"$REPO_DIR"/}")
	done < <(find "$REPO_DIR/drivers" -name '*.c' | sort)
	for f in "${ours[@]}"; do
		obj=${f%.c}.o
		rm -f "$WORK/kbuild-$TAG/$obj"
		if ! lab_chroot env CCACHE_DIR=$CWORK/ccache "${KMAKE[@]}" \
			KCFLAGS="$COMPAT -Wframe-larger-than=$FRAME_MAX" \
			W=1 C=1 CHECK="$sparse" "$obj" > "$w1" 2>&1 ||
		   ! kbuild_log_clean "$w1" > /dev/null ||
		   ! grep -qE "^  CHECK +(.*/)?$f\$" "$w1"; then
			cat "$w1" >&2
			die "kernel $TAG: $f is not clean at W=1 and under sparse"
		fi
	done
	stamp_set "check-$TAG" "$CHECK_KEY"
}

if [ "$image_current" = 1 ] && [ -f "$WORK/kbuild-$TAG/compat.cflags" ]; then
	log "kernel $TAG is up to date; checking our files again (lib.sh or sparse moved)"
	COMPAT=$(cat "$WORK/kbuild-$TAG/compat.cflags")
	check_ours
	exit 0
fi

log "configuring the $TAG kernel"
lab_chroot env CCACHE_DIR=$CWORK/ccache "${KMAKE[@]}" -s tinyconfig
lab_chroot env KCONFIG_CONFIG="$BUILD/.config" \
	"$CWORK/$SRC/scripts/kconfig/merge_config.sh" -m -O "$BUILD" \
	"$BUILD/.config" "${FRAG_NAMES[@]}" >/dev/null
lab_chroot env CCACHE_DIR=$CWORK/ccache "${KMAKE[@]}" -s olddefconfig

# merge_config only warns when Kconfig drops an option; a missing
# dependency must stop the build instead of producing a kernel that
# boots but lacks what the tests need.
missing=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		grep -qxF "$line" "$WORK/kbuild-$TAG/.config" ||
			{ log "config option lost: $line"; missing=1; }
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }; opt=${opt%% *}
		grep -q "^$opt=" "$WORK/kbuild-$TAG/.config" &&
			{ log "config option should be off: $opt"; missing=1; }
		;;
	esac
done < <(cat "${FRAGS[@]}")
[ "$missing" -eq 0 ] || die "kernel config fragment does not apply cleanly"

# Which form of moved API this base has (tools/lab/conftest.sh); the
# flags reach every object, and the out-of-tree modules built against
# this tree read them from compat.cflags.
LOG=$WORK/kbuild-$TAG/build.log
if ! lab_chroot env CCACHE_DIR=$CWORK/ccache "${KMAKE[@]}" prepare > "$LOG" 2>&1; then
	tail -n 30 "$LOG" >&2
	die "kernel $TAG: make prepare failed"
fi
COMPAT=$(lab_chroot env CCACHE_DIR=$CWORK/ccache bash "$CREPO/tools/lab/conftest.sh" \
	"$CWORK/$SRC" "$BUILD" "$CWORK/conftest-$TAG" "${KARGS[@]}") ||
	die "kernel $TAG: the API probes failed (see above)"
printf '%s\n' "$COMPAT" > "$WORK/kbuild-$TAG/compat.cflags"
log "API probes for $TAG: ${COMPAT:-mainline forms only}"

log "building the $TAG kernel (log: $LOG)"
start=$SECONDS
if ! lab_chroot env CCACHE_DIR=$CWORK/ccache "${KMAKE[@]}" KCFLAGS="$COMPAT" \
	Image modules >> "$LOG" 2>&1; then
	grep -E 'error|Error' "$LOG" | head -n 40 >&2 || true
	tail -n 20 "$LOG" >&2
	die "kernel $TAG build failed"
fi
check_ours
cp "$WORK/kbuild-$TAG/arch/riscv/boot/Image" "$WORK/kbuild-$TAG/.config" \
	"$WORK/kbuild-$TAG/System.map" "$OUT/"
log "kernel $TAG built in $((SECONDS - start)) s"
stamp_set "kernel-$TAG" "$KEY"
