#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the project's out-of-tree modules (modules.list) against Debian's
# linux-headers for riscv64, the way a user of a Debian board would. The
# headers come from the board's own apt root (guest-apt.sh, with its suite
# fallback). They are built where that suite's own cross compiler and
# amd64 linux-kbuild tools are: a minimal chroot of the headers' suite
# next to the lab chroot, even when the suite is the lab's. The headers
# name the compiler their kernel was built with (forky's gcc-16 does not
# install into trixie), and linux-kbuild pulls in pahole, which the lab
# kernels were built without: in the lab chroot it made every module
# build against them warn that pahole's version differs. The API probes
# (conftest.sh) run against these headers as against the lab kernels.
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
KEY=$(hash_inputs "debhdr-v4" "$(closure_of "$resolved")" "$(cat "$STAMPS/packages")")

HCHROOT=$CACHE/chroot-$suite
ckey=$(hash_inputs "chroot-v1" "$suite" "$MIRROR")
if ! stamp_ok "chroot-$suite" "$ckey" || [ ! -x "$HCHROOT/usr/bin/apt-get" ]; then
	log "debootstrapping $suite for its riscv64 cross compiler"
	debootstrap_into "$HCHROOT" "$suite"
	lab_apt_conf "$HCHROOT"
	stamp_set "chroot-$suite" "$ckey"
	rm -f "$STAMPS/debian-headers"
fi
# what an earlier version of this script installed into the lab chroot
if lab_chroot dpkg-query -W -f '${Status}\n' pahole 2> /dev/null | grep -q '^install ok'; then
	log "removing linux-kbuild and pahole from the lab chroot (the lab kernels have no pahole)"
	lab_chroot apt-get purge -y -q 'linux-kbuild-*' pahole >> "$CACHE/apt-headers.log" 2>&1 ||
		die "cannot remove pahole from the lab chroot (see $CACHE/apt-headers.log)"
fi

if ! stamp_ok debian-headers "$KEY" || [ ! -f "$HCHROOT$HDR/Makefile" ]; then
	log "fetching Debian $HDRPKG from $suite"
	rm -rf "$WORK/dl-hdr"
	guest_apt --dest "$CWORK/dl-hdr" "$HDRPKG" > /dev/null ||
		die "cannot fetch $HDRPKG (see above)"
	# CC = ... $(CROSS_COMPILE)gcc-16: the compiler the kernel was built with.
	gccv=$(sed -n 's/^CC = .*(CROSS_COMPILE)gcc\(-[0-9][0-9]*\)\{0,1\} *$/\1/p' \
		"$WORK/dl-hdr$HDR/.kernelvariables" | head -n 1)
	CCPKG=gcc${gccv}-riscv64-linux-gnu
	# perl: W=1 runs the headers' kernel-doc, a Perl script before 6.15
	log "installing $CCPKG, perl and linux-kbuild-$ABI (amd64) from $suite"
	CHROOT=$HCHROOT retry 3 "$CACHE/apt-headers.log" lab_chroot apt-get update -q ||
		log "apt-get update in $HCHROOT reported errors; trying anyway"
	CHROOT=$HCHROOT retry 3 "$CACHE/apt-headers.log" lab_chroot \
		apt-get install -y -q make perl "$CCPKG" "linux-kbuild-$ABI" ||
		{ tail -n 20 "$CACHE/apt-headers.log" >&2; die "cannot install $CCPKG linux-kbuild-$ABI from $suite"; }
	rm -rf "$HCHROOT"/usr/src/linux-headers-*
	cp -a "$WORK/dl-hdr/usr/src/." "$HCHROOT/usr/src/"
	rm -rf "$WORK/dl-hdr"
	stamp_set debian-headers "$KEY"
fi

compat=$(CHROOT=$HCHROOT lab_chroot bash "$CREPO/tools/lab/conftest.sh" "$HDR" "" \
	"$CWORK/debmod/conftest") || die "the API probes do not compile against $HDRPKG"
status=0
while read -r dir args; do
	case "$dir" in ''|'#'*) continue ;; esac
	name=$(echo "$dir" | tr / _)
	out=$WORK/debmod/$name
	rm -rf "$out"
	mkdir -p "$out"
	cp -a "$REPO_DIR/$dir/." "$out/"
	# shellcheck disable=SC2086 # extra make arguments are word lists
	if CHROOT=$HCHROOT lab_chroot make -C "$HDR" M="$CWORK/debmod/$name" W=1 \
		KCFLAGS="$compat" $args modules \
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
