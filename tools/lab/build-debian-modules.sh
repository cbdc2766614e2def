#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the project's out-of-tree modules (modules.list) against Debian's
# linux-headers for riscv64, the way a user of a Debian board would. The
# headers come from the board's own apt root (guest-apt.sh, with its suite
# fallback) and are unpacked into the chroot; the Kbuild tools they point
# to come from the amd64 linux-kbuild package of the same ABI.
# Prints one "ok|not ok - ..." line per module on stdout.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

resolved=$(guest_apt --resolve-only linux-headers-riscv64) ||
	die "cannot resolve Debian's riscv64 linux-headers (see above)"
suite=$(sed -n 's/^suite=//p' <<< "$resolved")
# The metapackage names the current ABI, e.g. linux-headers-6.12.117+deb13-riscv64.
HDRPKG=$(sed -n 's/^\(linux-headers-[0-9][^=]*-riscv64\)=.*/\1/p' <<< "$resolved" | head -n 1)
[ -n "$HDRPKG" ] || die "cannot tell the ABI of Debian's riscv64 linux-headers"
ABI=${HDRPKG#linux-headers-}
ABI=${ABI%-riscv64}
HDR=/usr/src/$HDRPKG
KEY=$(hash_inputs "debhdr-v2" "$(grep -v '^skipped ' <<< "$resolved")" "$(cat "$STAMPS/packages")")

if ! stamp_ok debian-headers "$KEY" || [ ! -f "$CHROOT$HDR/Makefile" ]; then
	log "fetching Debian $HDRPKG from $suite"
	lab_chroot apt-get install -y -q "linux-kbuild-$ABI" >&2 ||
		die "no amd64 linux-kbuild-$ABI for the $suite riscv64 headers"
	guest_apt --dest "$CWORK/dl-hdr" "$HDRPKG" > /dev/null ||
		die "cannot fetch $HDRPKG (see above)"
	rm -rf "$CHROOT"/usr/src/linux-headers-*
	cp -a "$WORK/dl-hdr/usr/src/." "$CHROOT/usr/src/"
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
	if lab_chroot make -C "$HDR" M="$CWORK/debmod/$name" W=1 $args modules \
		> "$out/build.log" 2>&1 &&
	   ! grep -q 'warning:' "$out/build.log" &&
	   ls "$out"/*.ko >/dev/null 2>&1; then
		echo "ok - $dir builds against Debian $HDRPKG ($suite)"
	else
		sed 's/^/# /' "$out/build.log"
		echo "not ok - $dir builds against Debian $HDRPKG ($suite)"
		status=1
	fi
done < "$LAB_DIR/modules.list"
exit "$status"
