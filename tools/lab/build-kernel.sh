#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the lab kernel: Debian's linux-source-6.12 plus the project's
# overlay (drivers/, include/) and patches, configured from tinyconfig and
# the fragments in this directory, cross-built inside the chroot.
#
# Usage: build-kernel.sh [default|debug]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

VARIANT=${1:-${NTRACE_LAB_VARIANT:-default}}
FRAGS=("$LAB_DIR/kernel.config")
case "$VARIANT" in
default) ;;
debug) FRAGS+=("$LAB_DIR/kernel-debug.config") ;;
*) die "unknown kernel variant '$VARIANT'" ;;
esac

[ -f "$STAMPS/packages" ] || die "run tools/lab/setup.sh (make -C tools/lab setup) first"

OVERLAY=()
for d in drivers include; do
	[ -d "$REPO_DIR/$d" ] && OVERLAY+=("$REPO_DIR/$d")
done
PATCHDIR=$REPO_DIR/patches/linux-6.12
[ -d "$PATCHDIR" ] && OVERLAY+=("$PATCHDIR")

VERS=$(pkg_versions linux-source-6.12 gcc-riscv64-linux-gnu | tr '\n' ' ')
SRC_KEY=$(hash_inputs "src-v1" "$VERS" "${OVERLAY[@]}")
KEY=$(hash_inputs "kernel-v1" "$SRC_KEY" "$VARIANT" "${FRAGS[@]}" "$LAB_DIR/build-kernel.sh")
OUT=$WORK/kernel-$VARIANT

if stamp_ok "kernel-$VARIANT" "$KEY" && [ -f "$OUT/Image" ]; then
	log "kernel ($VARIANT) is up to date"
	exit 0
fi

# The source tree is shared by all variants and rebuilt only when the
# Debian source or the overlay changes; ccache keeps that cheap.
if ! stamp_ok linux-src "$SRC_KEY" || [ ! -f "$WORK/linux/Makefile" ]; then
	log "unpacking linux-source-6.12 and applying the overlay"
	rm -rf "$WORK/linux" "$WORK/linux.tmp"
	mkdir -p "$WORK/linux.tmp"
	# --touch: a file the overlay no longer changes must look newer than
	# its old object, or make would keep the stale object. ccache makes
	# the resulting full rebuild cheap.
	lab_chroot tar -C "$CWORK/linux.tmp" --strip-components=1 --touch \
		-xf /usr/src/linux-source-6.12.tar.xz
	for d in drivers include; do
		[ -d "$REPO_DIR/$d" ] && cp -R "$REPO_DIR/$d/." "$WORK/linux.tmp/$d/"
	done
	if [ -d "$PATCHDIR" ]; then
		for p in "$PATCHDIR"/*.patch; do
			[ -e "$p" ] || continue
			log "applying $(basename "$p")"
			patch -d "$WORK/linux.tmp" -p1 --forward --batch < "$p"
		done
	fi
	mv "$WORK/linux.tmp" "$WORK/linux"
	stamp_set linux-src "$SRC_KEY"
fi

BUILD=$CWORK/kbuild-$VARIANT
mkdir -p "$WORK/kbuild-$VARIANT" "$WORK/ccache" "$OUT"
cp "${FRAGS[@]}" "$WORK/kbuild-$VARIANT/"
FRAG_NAMES=()
for f in "${FRAGS[@]}"; do FRAG_NAMES+=("$BUILD/$(basename "$f")"); done

KMAKE=(make -C "$CWORK/linux" O="$BUILD" ARCH=riscv
	CROSS_COMPILE=riscv64-linux-gnu- "CC=ccache riscv64-linux-gnu-gcc"
	"-j$(nproc)")

log "configuring the $VARIANT kernel"
lab_chroot env CCACHE_DIR=$CWORK/ccache "${KMAKE[@]}" -s tinyconfig
lab_chroot env KCONFIG_CONFIG="$BUILD/.config" \
	"$CWORK/linux/scripts/kconfig/merge_config.sh" -m -O "$BUILD" \
	"$BUILD/.config" "${FRAG_NAMES[@]}" >/dev/null
lab_chroot env CCACHE_DIR=$CWORK/ccache "${KMAKE[@]}" -s olddefconfig

# merge_config only warns when Kconfig drops an option; a missing
# dependency must stop the build instead of producing a kernel that
# boots but lacks what the tests need.
missing=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		grep -qxF "$line" "$WORK/kbuild-$VARIANT/.config" ||
			{ log "config option lost: $line"; missing=1; }
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }; opt=${opt%% *}
		grep -q "^$opt=" "$WORK/kbuild-$VARIANT/.config" &&
			{ log "config option should be off: $opt"; missing=1; }
		;;
	esac
done < <(cat "${FRAGS[@]}")
[ "$missing" -eq 0 ] || die "kernel config fragment does not apply cleanly"

log "building the $VARIANT kernel (log: $WORK/kbuild-$VARIANT/build.log)"
start=$SECONDS
if ! lab_chroot env CCACHE_DIR=$CWORK/ccache "${KMAKE[@]}" Image modules \
	> "$WORK/kbuild-$VARIANT/build.log" 2>&1; then
	grep -E 'error|Error' "$WORK/kbuild-$VARIANT/build.log" | head -n 40 >&2 || true
	tail -n 20 "$WORK/kbuild-$VARIANT/build.log" >&2
	die "kernel build failed"
fi
cp "$WORK/kbuild-$VARIANT/arch/riscv/boot/Image" "$WORK/kbuild-$VARIANT/.config" \
	"$WORK/kbuild-$VARIANT/System.map" "$OUT/"
log "kernel ($VARIANT) built in $((SECONDS - start)) s"
stamp_set "kernel-$VARIANT" "$KEY"
