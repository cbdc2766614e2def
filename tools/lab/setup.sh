#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepare everything the lab needs: host tools, a Debian trixie chroot with
# QEMU >= 11 and the riscv64 cross toolchain, OpenSBI >= 1.7 firmware and
# the riscv64 userspace (busybox, perf and its libraries) and the riscv64
# sysroot the project's perf for the board is built against.
# Every step is stamped with a hash of its inputs, so a re-run after a
# failure resumes at the first step that did not finish.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

# Bump to force a rebuild of the chroot when the recipe below changes.
CHROOT_KEY=$(hash_inputs "chroot-v1" "$SUITE" "$MIRROR")

# Packages installed in the chroot (amd64 only: the board's riscv64
# userspace has an apt root of its own, see step_rvroot). qemu
# (qemu-system-riscv, split out of qemu-system-misc since QEMU 10) and the
# 7.x kernel source come from $SUITE-backports: QEMU 10.0 never delivers
# the counter overflow interrupt to S-mode.
# llvm (llvm-profgen) and autofdo (create_gcov) turn the board's branch
# stacks into AutoFDO profiles on the host side (selftests/ctr/autofdo-test).
# gpg, apt-utils (apt-ftparchive) and python3 serve the bad-mirror test
# (tools/lab/mirror-test) its own small signed archive.
CHROOT_PKGS=(
	build-essential bc flex bison libssl-dev libelf-dev cpio kmod
	xz-utils rsync patch file ccache python3 perl git
	gcc-riscv64-linux-gnu binutils-riscv64-linux-gnu
	libc6-dev-riscv64-cross linux-source-6.12
	llvm autofdo gpg gpg-agent apt-utils
)
BPO_PKGS=(qemu-system-riscv)
# dt-schema (dt-doc-validate, dt-validate) checks the trace components'
# binding and the tree the lab gives the board (tools/qemu/ntrace-dt-test).
# Nothing is built with it, so it stays out of the packages stamp that the
# Debian headers build is keyed on; trixie has it only in backports.
DT_PKGS=(dt-schema)
# The host's perf (tools/lab/build-perf-host.sh: decoding and reporting
# on the host what the board recorded) builds with these; like DT_PKGS,
# outside the packages stamp, since no kernel build uses them.
PERF_HOST_PKGS=(pkgconf libtraceevent-dev libdw-dev libzstd-dev zlib1g-dev)
# Guest userspace, unpacked rather than installed. binutils: perf report
# runs addr2line for source lines (--branch-history) and dies of SIGPIPE
# when it is missing.
RV_PKGS=(busybox-static linux-perf binutils-riscv64-linux-gnu)
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
	rm -f "$STAMPS"/*
	debootstrap_into "$CHROOT" "$SUITE"
	stamp_set chroot "$CHROOT_KEY"
}

step_packages() {
	log "configuring apt in the chroot"
	rm -f "$CHROOT/etc/apt/sources.list"
	cat > "$CHROOT/etc/apt/sources.list.d/debian.sources" <<-SRC
	Types: deb
	URIs: $MIRROR
	Suites: $SUITE $SUITE-updates $SUITE-backports forky
	Components: main
	Architectures: amd64
	Check-Valid-Until: no
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	SRC
	# forky is there only for the opensbi firmware and the sparse that
	# selftests/ntrace/pmu-test unpacks; it never wins over $SUITE.
	# Snapshot mirrors serve Release files past their Valid-Until date,
	# hence Check-Valid-Until: no.
	cat > "$CHROOT/etc/apt/preferences.d/lab" <<-PIN
	Package: *
	Pin: release n=forky
	Pin-Priority: 50
	PIN
	lab_apt_conf "$CHROOT"
	# A chroot made when it still had riscv64 in its architectures.
	if lab_chroot dpkg --print-foreign-architectures | grep -qx riscv64; then
		lab_chroot dpkg --remove-architecture riscv64 ||
			die "cannot drop riscv64 from the chroot's dpkg"
	fi
	# Every run looks at what the mirror has now, so that a package that
	# moved is installed and every stamp keyed on versions notices.
	if ! retry 3 "$CACHE/apt-update.log" lab_chroot apt-get update -q; then
		log "apt-get update failed ($(apt_reason "$CACHE/apt-update.log")); using the lists it left"
	fi
	KSRC7=$(lab_chroot apt-cache pkgnames linux-source-7. |
		grep -E '^linux-source-7\.[0-9]+$' | sort -V | tail -n 1)
	[ -n "$KSRC7" ] || die "no linux-source-7.x package in $SUITE-backports"
	log "installing or upgrading the chroot packages"
	retry 3 "$CACHE/apt-install.log" lab_chroot apt-get install -y -q \
		"${CHROOT_PKGS[@]}" ||
		{ tail -n 30 "$CACHE/apt-install.log" >&2; die "cannot install the chroot packages"; }
	retry 3 "$CACHE/apt-install.log" lab_chroot apt-get install -y -q \
		-t "$SUITE-backports" "${BPO_PKGS[@]}" "$KSRC7" ||
		{ tail -n 30 "$CACHE/apt-install.log" >&2; die "cannot install ${BPO_PKGS[*]} $KSRC7 from $SUITE-backports"; }
	retry 3 "$CACHE/apt-install.log" lab_chroot apt-get install -y -q \
		-t "$SUITE-backports" "${DT_PKGS[@]}" ||
		{ tail -n 30 "$CACHE/apt-install.log" >&2; die "cannot install ${DT_PKGS[*]} from $SUITE-backports"; }
	retry 3 "$CACHE/apt-install.log" lab_chroot apt-get install -y -q \
		"${PERF_HOST_PKGS[@]}" ||
		{ tail -n 30 "$CACHE/apt-install.log" >&2; die "cannot install ${PERF_HOST_PKGS[*]}"; }
	local qv
	qv=$(lab_chroot dpkg-query -W -f '${Version}' qemu-system-riscv)
	lab_chroot dpkg --compare-versions "$qv" ge 1:11 ||
		die "qemu-system-riscv $qv is older than 11: perf sampling would not work"
	# The kernels the lab builds: one per patch series (patches/linux-*).
	printf '6.12 linux-source-6.12\n7.x %s\n' "$KSRC7" > "$WORK/kernels.tmp"
	mv "$WORK/kernels.tmp" "$WORK/kernels"
	stamp_set packages "$(hash_inputs pkgs-v2 "$(pkg_versions "${CHROOT_PKGS[@]}" "${BPO_PKGS[@]}" "$KSRC7")")"
}

step_firmware() {
	local ver key
	ver=$(forky_version opensbi)
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

# The riscv64 userspace, from an apt root of its own (guest-apt.sh). The
# closure apt resolves now is the key: a package that moved on the mirror
# rebuilds the tree and everything packed from it.
step_rvroot() {
	local key resolved
	resolved=$(guest_apt --resolve-only "${RV_PKGS[@]}") ||
		die "cannot resolve the board's riscv64 packages (see above)"
	key=$(hash_inputs "rv-v2" "$(closure_of "$resolved")")
	if stamp_ok rvroot "$key" && [ -f "$WORK/rvroot/.packages" ]; then
		return
	fi
	log "fetching riscv64 userspace: ${RV_PKGS[*]}"
	resolved=$(guest_apt --dest "$CWORK/rvroot" "${RV_PKGS[@]}") ||
		die "cannot fetch the board's riscv64 packages (see above)"
	printf '%s\n' "$resolved" > "$WORK/rvroot/.packages"
	stamp_set rvroot "$(hash_inputs "rv-v2" "$(closure_of "$resolved")")"
}

# The riscv64 -dev packages the board's perf is built against
# (build-perf.sh); made here so that a mirror that moved is noticed on
# every run, as for the userspace.
step_sysroot() {
	rv_sysroot_update
}

step_host
step_chroot
step_packages
step_firmware
step_rvroot
step_sysroot
write_manifest
log "setup complete: $(lab_chroot dpkg-query -W -f '${Version}' qemu-system-riscv) qemu, $(cat "$WORK/firmware/VERSION")"
