#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Cross-build the selftests and pack them with busybox and perf into the
# initramfs. Nothing in it depends on the kernel, so both kernels boot
# the same one; the kselftest harness header comes from the newest
# kernel source the lab has unpacked.
#
# Usage: build-userspace.sh [default|debug]
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

VARIANT=${1:-${NTRACE_LAB_VARIANT:-default}}
HSERIES=$(newest_kernel)
[ -f "$STAMPS/src-$HSERIES" ] || die "build a $HSERIES kernel first"

KEY=$(hash_inputs "userspace-v2" "$(cat "$STAMPS/src-$HSERIES")" \
	"$(cat "$STAMPS/rvroot")" "$REPO_DIR/selftests" "$LAB_DIR/init" \
	"$LAB_DIR/mkinitramfs.sh" "$LAB_DIR/build-userspace.sh")
OUT=$WORK/initramfs-$VARIANT.cpio

if stamp_ok "userspace-$VARIANT" "$KEY" && [ -f "$OUT" ]; then
	log "initramfs ($VARIANT) is up to date"
	exit 0
fi

log "building selftests ($VARIANT)"
rm -rf "$WORK/selftests-$VARIANT"
if ! lab_chroot make -C "$CREPO/selftests" OUT="$CWORK/selftests-$VARIANT" \
	KSRC="$CWORK/linux-$HSERIES" > "$WORK/selftests-$VARIANT.log" 2>&1; then
	cat "$WORK/selftests-$VARIANT.log" >&2
	die "selftests build failed"
fi
# The debug kernel's board leaves out ctr_perf_test: perf's own journeys
# (record -b, report --branch-history, script) reach no kernel code that
# ctr_test does not (branch-stack sampling, the CTR overflow path), and
# under KASAN they took 5 of the board's 11 minutes.
if [ "$VARIANT" = debug ]; then
	grep -vx 'ctr/ctr_perf_test' "$WORK/selftests-$VARIANT/list" \
		> "$WORK/selftests-$VARIANT/list.debug"
	mv "$WORK/selftests-$VARIANT/list.debug" "$WORK/selftests-$VARIANT/list"
fi
log "packing the initramfs"
lab_chroot bash "$CREPO/tools/lab/mkinitramfs.sh" "$CWORK/rvroot" \
	"$CWORK/selftests-$VARIANT" "$CREPO/tools/lab/init" \
	"$CWORK/initramfs-$VARIANT.cpio"
log "initramfs: $(du -h "$OUT" | cut -f1)"
stamp_set "userspace-$VARIANT" "$KEY"
