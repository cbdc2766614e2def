#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepare everything the lab needs: host tools, a Debian trixie chroot with
# QEMU >= 11 and the riscv64 cross toolchain, OpenSBI >= 1.7 firmware and
# the riscv64 userspace (busybox, perf and its libraries).
# Every step is stamped with a hash of its inputs, so a re-run after a
# failure resumes at the first step that did not finish.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

# Bump to force a rebuild of the chroot when the recipe below changes.
CHROOT_KEY=$(hash_inputs "chroot-v1" "$SUITE" "$MIRROR")

# Packages installed in the chroot. qemu (qemu-system-riscv, split out of
# qemu-system-misc since QEMU 10) comes from trixie-backports:
# QEMU 10.0 never delivers the counter overflow interrupt to S-mode.
CHROOT_PKGS=(
	build-essential bc flex bison libssl-dev libelf-dev cpio kmod
	xz-utils rsync patch file ccache python3 perl
	gcc-riscv64-linux-gnu binutils-riscv64-linux-gnu
	libc6-dev-riscv64-cross linux-source-6.12
	llvm autofdo
)
BPO_PKGS=(qemu-system-riscv)
# llvm (llvm-profgen) and autofdo (create_gcov) turn the board's branch
# stacks into AutoFDO profiles on the host side (selftests/ctr/autofdo-test).
# Guest userspace, unpacked rather than installed. binutils: perf report
# runs addr2line for source lines (--branch-history) and dies of SIGPIPE
# when it is missing.
RV_PKGS=(busybox-static linux-perf binutils-riscv64-linux-gnu)
PKG_KEY=$(hash_inputs "pkgs-v1" "$CHROOT_KEY" "${CHROOT_PKGS[*]}" "${BPO_PKGS[*]}")

step_host() {
	command -v debootstrap >/dev/null && command -v unshare >/dev/null && return
	log "installing debootstrap on the host"
	# Third-party sources on the host may be unreachable; only the Debian
	# ones matter, and the install below tells whether they worked.
	apt-get update || log "apt-get update reported errors; trying anyway"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		debootstrap debian-archive-keyring util-linux
}

step_chroot() {
	stamp_ok chroot "$CHROOT_KEY" && return
	log "debootstrapping $SUITE into $CHROOT"
	rm -rf "$CHROOT"
	rm -f "$STAMPS"/*
	mkdir -p "$CACHE"
	debootstrap --variant=minbase "$SUITE" "$CHROOT.tmp" "$MIRROR" \
		>"$CACHE/debootstrap.log" 2>&1 ||
		{ tail -n 30 "$CACHE/debootstrap.log" >&2; rm -rf "$CHROOT.tmp"; die "debootstrap failed"; }
	mv "$CHROOT.tmp" "$CHROOT"
	stamp_set chroot "$CHROOT_KEY"
}

step_packages() {
	stamp_ok packages "$PKG_KEY" && return
	log "configuring apt in the chroot and installing packages"
	rm -f "$CHROOT/etc/apt/sources.list"
	cat > "$CHROOT/etc/apt/sources.list.d/debian.sources" <<-SRC
	Types: deb
	URIs: $MIRROR
	Suites: $SUITE
	Components: main
	Architectures: amd64 riscv64
	Check-Valid-Until: no
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

	Types: deb
	URIs: $MIRROR
	Suites: $SUITE-updates $SUITE-backports forky
	Components: main
	Architectures: amd64
	Check-Valid-Until: no
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	SRC
	# forky is there only for the opensbi firmware; never install from it.
	# riscv64 comes from the main suite only: the guest userspace must match
	# the multiarch versions installed from it, and mirrors need not carry
	# riscv64 indexes for the other suites. Snapshot mirrors serve Release
	# files past their Valid-Until date, hence Check-Valid-Until: no.
	cat > "$CHROOT/etc/apt/preferences.d/lab" <<-PIN
	Package: *
	Pin: release n=forky
	Pin-Priority: 50
	PIN
	# Downloads land in the root-owned cache, which _apt cannot write.
	printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\nAPT::Sandbox::User "root";\n' \
		> "$CHROOT/etc/apt/apt.conf.d/90lab"
	lab_chroot dpkg --add-architecture riscv64
	lab_chroot apt-get update -q
	lab_chroot apt-get install -y -q "${CHROOT_PKGS[@]}"
	lab_chroot apt-get install -y -q -t "$SUITE-backports" "${BPO_PKGS[@]}"
	local qv
	qv=$(lab_chroot dpkg-query -W -f '${Version}' qemu-system-riscv)
	lab_chroot dpkg --compare-versions "$qv" ge 1:11 ||
		die "qemu-system-riscv $qv is older than 11: perf sampling would not work"
	stamp_set packages "$PKG_KEY"
}

step_firmware() {
	local ver key
	ver=$(lab_chroot apt-cache madison opensbi | awk -F' *[|] *' '/ forky\// {print $2; exit}')
	[ -n "$ver" ] || die "no opensbi package in forky"
	# Older firmware leaves mstateen0.CTR clear: S-mode CTR accesses trap.
	lab_chroot dpkg --compare-versions "$ver" ge 1.7 ||
		die "opensbi $ver is older than 1.7"
	key=$(hash_inputs "fw-v1" "$ver")
	stamp_ok firmware "$key" && [ -f "$WORK/firmware/fw_dynamic.bin" ] && return
	log "fetching opensbi $ver firmware"
	rm -rf "$WORK/firmware" "$WORK/dl-fw"
	mkdir -p "$WORK/dl-fw" "$WORK/firmware"
	lab_chroot sh -c "cd $CWORK/dl-fw && apt-get download -q opensbi/forky"
	lab_chroot sh -c "dpkg-deb -x $CWORK/dl-fw/opensbi_*.deb $CWORK/dl-fw/x"
	local fw
	fw=$(find "$WORK/dl-fw/x" -path '*generic*' -name fw_dynamic.bin | head -n 1)
	[ -n "$fw" ] || die "fw_dynamic.bin not found in the opensbi package"
	cp "$fw" "$WORK/firmware/fw_dynamic.bin"
	printf '%s\n' "$(basename "$WORK"/dl-fw/opensbi_*.deb)" > "$WORK/firmware/VERSION"
	rm -rf "$WORK/dl-fw"
	stamp_set firmware "$key"
}

# Resolve the riscv64 dependency closure with apt itself (download only, in
# an empty archive dir), then unpack every package into one tree.
step_rvroot() {
	local key
	key=$(hash_inputs "rv-v1" "$PKG_KEY" "${RV_PKGS[*]}")
	stamp_ok rvroot "$key" && return
	log "fetching riscv64 userspace: ${RV_PKGS[*]}"
	rm -rf "$WORK/rvroot" "$WORK/dl-rv"
	mkdir -p "$WORK/dl-rv/partial" "$WORK/rvroot"
	local p pkgs=()
	for p in "${RV_PKGS[@]}"; do pkgs+=("$p:riscv64"); done
	lab_chroot apt-get install -y -q --download-only \
		-o Dir::Cache::Archives="$CWORK/dl-rv" "${pkgs[@]}"
	lab_chroot sh -c "for d in $CWORK/dl-rv/*.deb; do dpkg-deb -x \"\$d\" $CWORK/rvroot; done"
	(cd "$WORK/dl-rv" && ls -1 ./*.deb) > "$WORK/rvroot/.packages"
	rm -rf "$WORK/dl-rv"
	stamp_set rvroot "$key"
}

step_host
step_chroot
step_packages
step_firmware
step_rvroot
log "setup complete: $(lab_chroot dpkg-query -W -f '${Version}' qemu-system-riscv) qemu, $(cat "$WORK/firmware/VERSION")"
