#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the project's out-of-tree modules (modules.list) against Debian's
# linux-headers-6.12 for riscv64, the way a user of a Debian board would.
# The riscv64 headers package cannot be installed next to amd64 tools by
# dpkg, so it is unpacked into the chroot; the Kbuild tools it points to
# come from the amd64 linux-kbuild package of the same version.
# Prints one "ok|not ok - ..." line per module on stdout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

# linux-headers-riscv64 names the current ABI, e.g. 6.12.107+deb13.
dep=$(lab_chroot apt-cache show linux-headers-riscv64:riscv64 |
	sed -n 's/^Depends: *linux-headers-\([^ ,]*\)-riscv64 .*/\1/p' | head -n 1)
[ -n "$dep" ] || die "cannot tell the ABI of Debian's riscv64 linux-headers"
ABI=$dep
HDR=/usr/src/linux-headers-$ABI-riscv64
KEY=$(hash_inputs "debhdr-v1" "$ABI" "$(cat "$STAMPS/packages")")

if ! stamp_ok debian-headers "$KEY" || [ ! -f "$CHROOT$HDR/Makefile" ]; then
	log "fetching Debian linux-headers-$ABI-riscv64"
	rm -rf "$WORK/dl-hdr"
	mkdir -p "$WORK/dl-hdr"
	lab_chroot apt-get install -y -q "linux-kbuild-$ABI" >&2
	lab_chroot sh -c "cd $CWORK/dl-hdr && apt-get download -q \
		linux-headers-$ABI-riscv64:riscv64 linux-headers-$ABI-common" >&2
	lab_chroot sh -c "for d in $CWORK/dl-hdr/*.deb; do dpkg-deb -x \"\$d\" /; done"
	rm -rf "$WORK/dl-hdr"
	stamp_set debian-headers "$KEY"
fi

status=0
while read -r dir args; do
	case "$dir" in ''|'#'*) continue ;; esac
	name=$(echo "$dir" | tr / _)
	out=$WORK/debmod/$name
	rm -rf "$out"
	mkdir -p "$out"
	cp -a "$REPO_DIR/$dir/." "$out/"
	# shellcheck disable=SC2086 # extra make arguments are word lists
	if lab_chroot make -C "$HDR" M="$CWORK/debmod/$name" $args modules \
		> "$out/build.log" 2>&1 &&
	   ! grep -q 'warning:' "$out/build.log" &&
	   ls "$out"/*.ko >/dev/null 2>&1; then
		echo "ok - $dir builds against Debian linux-headers-$ABI-riscv64"
	else
		sed 's/^/# /' "$out/build.log"
		echo "not ok - $dir builds against Debian linux-headers-$ABI-riscv64"
		status=1
	fi
done < "$LAB_DIR/modules.list"
exit "$status"
