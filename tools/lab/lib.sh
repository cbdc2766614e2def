# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the lab scripts; sourced, never executed.
# shellcheck shell=bash

# The sourcing script's arguments, for need_root's re-exec.
LAB_ARGS=("$@")
LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$LAB_DIR/../.." && pwd)
CACHE=${NTRACE_LAB_CACHE:-/var/cache/ntrace-lab}
CHROOT=$CACHE/chroot
WORK=$CACHE/work
STAMPS=$CACHE/stamps
# Used by setup.sh.
# shellcheck disable=SC2034
{
	MIRROR=${NTRACE_LAB_MIRROR:-http://deb.debian.org/debian}
	SUITE=${NTRACE_LAB_SUITE:-trixie}
	# The key the board's riscv64 packages are checked with, as seen
	# from inside the chroot (a private mirror may sign with its own).
	GUEST_KEYRING=${NTRACE_LAB_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
	# Suites tried in turn for the riscv64 packages (guest-apt.sh).
	GUEST_SUITES=${NTRACE_LAB_GUEST_SUITES:-$SUITE forky sid}
}
# Paths as seen from inside the chroot (see lab_chroot).
CWORK=/lab
CREPO=/src
# Where the emulated trace hardware sits on a 1 GiB board: the register
# windows from NT_BASE, the trace buffer NT_MEM..NT_MEM+NT_MEMSIZE. The
# plugin takes them as arguments, tools/qemu/ntrace-dt.sh describes them
# in the device tree, the bare-metal test has them compiled in.
# shellcheck disable=SC2034
{
	NT_BASE=0xbf000000
	NT_MEM=0xbf100000
	NT_MEMSIZE=0xf00000
}

log() { printf '[lab %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { printf '[lab] ERROR: %s\n' "$*" >&2; exit 1; }

# The lab needs root for debootstrap, chroot and mounts. Where sudo works
# without a password (typical CI), re-run through it instead of failing.
need_root() {
	[ "$(id -u)" -eq 0 ] && return
	if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		exec sudo -n --preserve-env=NTRACE_LAB_CACHE,NTRACE_LAB_MIRROR,NTRACE_LAB_SUITE,NTRACE_LAB_GUEST_SUITES,NTRACE_LAB_KEYRING,NTRACE_LAB_KERNELS,NTRACE_LAB_PERF_OUT,NTRACE_LAB_HOST_PERF_OUT,NTRACE_LAB_VARIANT,NTRACE_LAB_SMP,NTRACE_LAB_TIMEOUT \
			"$0" "${LAB_ARGS[@]}"
	fi
	die "the lab needs root (debootstrap, chroot, mounts)"
}

# Hash of files and strings given as arguments; directories are walked in a
# stable order so the key depends on content only, never on mtimes.
hash_inputs() {
	local a
	for a in "$@"; do
		if [ -d "$a" ]; then
			(cd "$a" && find . -type f ! -name '*.o' ! -name '*.ko' \
				! -name '*.cmd' ! -name '*.mod*' ! -name '.*' \
				-print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
		elif [ -f "$a" ]; then
			printf '%s ' "$(basename "$a")"; sha256sum < "$a"
		else
			printf 'str %s\n' "$a"
		fi
	done | sha256sum | cut -c1-16
}

stamp_ok() { [ -f "$STAMPS/$1" ] && [ "$(cat "$STAMPS/$1")" = "$2" ]; }
stamp_set() { mkdir -p "$STAMPS"; printf '%s\n' "$2" > "$STAMPS/$1.tmp"; mv "$STAMPS/$1.tmp" "$STAMPS/$1"; }

# Run a command inside the trixie chroot, with the cache's work dir at
# /lab, the repository read-only at /src and $LAB_SHARE (if set) at /share. A private mount namespace means
# the bind mounts vanish with the process, even when it is killed, so a
# failed run never leaves stale mounts behind. LAB_PIDNS=1 adds a PID
# namespace: perf reading the board's recording looks its PIDs up in
# /proc (for their mount namespaces), and must not find this machine's
# processes there.
lab_chroot() {
	local ns=(--mount --propagation private)
	[ -n "${LAB_PIDNS:-}" ] && ns+=(--pid --fork --kill-child)
	mkdir -p "$WORK" "$CHROOT$CWORK" "$CHROOT$CREPO"
	unshare "${ns[@]}" -- /bin/bash -euo pipefail -c '
		c=$1; w=$2; r=$3; cw=$4; cr=$5; shift 5
		mount -t proc proc "$c/proc"
		mount --rbind /dev "$c/dev"
		mount -t sysfs sysfs "$c/sys" 2>/dev/null || true
		mount -t tmpfs tmpfs "$c/tmp"
		mount --bind "$w" "$c$cw"
		mount --bind "$r" "$c$cr"
		mount -o remount,bind,ro "$c$cr"
		if [ -n "${LAB_SHARE:-}" ]; then
			mkdir -p "$c/share"
			mount --bind "$LAB_SHARE" "$c/share"
		fi
		exec chroot "$c" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" \
			LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
			DEBIAN_FRONTEND=noninteractive "$@"
	' lab-chroot "$CHROOT" "$WORK" "$REPO_DIR" "$CWORK" "$CREPO" "$@"
}

# The version of PKG in forky, which the chroot lists (pinned low) for
# what trixie lacks; empty if forky has none. awk reads to the end: an
# early exit could kill apt-cache with SIGPIPE, which pipefail reports.
forky_version() { # pkg
	lab_chroot apt-cache madison "$1" |
		awk -F' *[|] *' '/ forky\// && v == "" { v = $2 } END { if (v != "") print v }'
}

# forky_sparse LOG [VERSION]: forky's sparse, unpacked into the work
# cache once per version; prints its path inside the chroot (LOG says
# why not). A caller that keyed its work by the version passes it, so
# that the sparse which runs is the one keyed (and apt is asked once).
# trixie's 0.6.4 stops on RISC-V's -march string and kbuild refuses it
# for 7.x's headers; forky's package wants forky's gcc, but the program
# needs only libc, so it is unpacked rather than installed.
forky_sparse() {
	local log=$1 ver=${2-} dir tmp st
	[ $# -ge 2 ] || ver=$(forky_version sparse)
	[ -n "$ver" ] || { echo "no sparse in forky (apt-cache madison)" > "$log"; return 1; }
	dir=sparse-forky/$(printf '%s' "$ver" | tr -c 'A-Za-z0-9.+~-' _)
	if [ ! -x "$WORK/$dir/usr/bin/sparse" ]; then
		# two runs may fetch at once (the default and debug pmu-test,
		# a kernel build): each its own copy, renamed into place
		mkdir -p "$WORK/sparse-forky"
		tmp=$(mktemp -d "$WORK/sparse-forky/fetch.XXXXXX") || return 1
		retry 3 "$log" lab_chroot sh -c "cd $CWORK/sparse-forky/${tmp##*/} &&
			apt-get download -q sparse=$ver && dpkg-deb -x sparse_*.deb root" &&
			{ mv -T "$tmp/root" "$WORK/$dir" 2> /dev/null ||
			  [ -x "$WORK/$dir/usr/bin/sparse" ]; }
		st=$?
		rm -rf "$tmp"
		[ $st -eq 0 ] || return 1
	fi
	echo "$CWORK/$dir/usr/bin/sparse"
}

# Whether a kbuild log holds nothing but kbuild's own lines ("  CC  x.o",
# make's directory lines); prints any other. Such a line is a compiler's
# or sparse's word, or a refusal: a CHECK kbuild will not run is only a
# make message, "... is not available or not up to date".
kbuild_log_clean() { # log
	! grep -vE '^  [A-Z]+ |^make(\[[0-9]+\])?: (Entering|Leaving) directory ' "$1"
}

# Versions of the chroot packages that feed the builds; part of every key.
pkg_versions() {
	lab_chroot dpkg-query -W -f '${Package}:${Architecture}=${Version}\n' "$@"
}

# The line of an apt log that says why it failed.
apt_reason() { # log file
	grep -m1 -E '^(E|W): ' "$1" || tail -n 1 "$1"
}

# retry TRIES LOG CMD...: run CMD with its output in LOG, again after 5,
# 10, 20... seconds while it fails (a mirror that hiccups); the last
# status counts.
retry() {
	local tries=$1 out=$2 try=1 delay=5
	shift 2
	until "$@" > "$out" 2>&1; do
		[ "$try" -lt "$tries" ] || return 1
		log "'$*' failed, retrying in ${delay}s: $(apt_reason "$out")"
		sleep "$delay"
		try=$((try + 1)) delay=$((delay * 2))
	done
}

# debootstrap_into DIR SUITE: a minbase Debian SUITE in DIR, made aside
# and moved into place, so a failed run leaves no half tree. A suite
# newer than the host's debootstrap knows is made with sid's script.
debootstrap_into() {
	local dir=$1 suite=$2 script=/usr/share/debootstrap/scripts/$2
	local lg=$CACHE/debootstrap-$2.log

	[ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
	rm -rf "$dir" "$dir.tmp"
	mkdir -p "$CACHE"
	debootstrap --variant=minbase "$suite" "$dir.tmp" "$MIRROR" "$script" \
		> "$lg" 2>&1 ||
		{ tail -n 30 "$lg" >&2; rm -rf "$dir.tmp"; die "debootstrap $suite failed"; }
	mv "$dir.tmp" "$dir"
}

# How apt runs in a lab chroot: downloads land in the root-owned cache,
# which _apt cannot write; snapshot mirrors serve Release files past
# their Valid-Until date; a mirror that hiccups gets retries.
lab_apt_conf() { # chroot
	printf '%s\n' 'APT::Install-Recommends "false";' \
		'APT::Install-Suggests "false";' 'APT::Sandbox::User "root";' \
		'Acquire::Retries "3";' 'Acquire::Check-Valid-Until "false";' \
		> "$1/etc/apt/apt.conf.d/90lab"
}

# The kernels the lab builds, as "<series> <source package>" lines:
# series 6.12 is Debian's LTS, 7.x the newest mainline in backports.
# NTRACE_LAB_KERNELS="6.12" (or "7.x") builds and tests only those.
lab_kernels() {
	[ -f "$WORK/kernels" ] || die "run tools/lab/setup.sh first"
	local want=${NTRACE_LAB_KERNELS:-}
	if [ -z "$want" ]; then
		cat "$WORK/kernels"
		return
	fi
	awk -v want=" $want " 'index(want, " " $1 " ")' "$WORK/kernels"
}

# The series a command boots when not told (the first, 6.12), and the
# newest one, whose source tools such as checkpatch.pl come from.
default_kernel() { lab_kernels | awk 'NR == 1 {print $1}'; }
newest_kernel() { lab_kernels | awk 'END {print $1}'; }

# The source package of a kernel series.
kernel_pkg() { # series
	awk -v k="$1" '$1 == k {print $2}' "$WORK/kernels"
}

# The upstream version of a kernel series' source, e.g. 6.12.117.
kernel_version() { # series
	local v
	v=$(pkg_versions "$(kernel_pkg "$1")" | cut -d= -f2)
	printf '%s\n' "${v%%-*}"
}

# Where a chroot package's installed version came from, e.g.
# "trixie-backports/main".
pkg_origin() { # package
	lab_chroot apt-cache policy "$1" | awk '
		/^ \*\*\* / {mine = 1; next}
		mine && /^ +[0-9]+ / {print $3; exit}
		/^ {5}[^ ]/ {mine = 0}'
}

# Record what this lab is built from, so that a failure can name what
# moved: $WORK/manifest.
write_manifest() {
	local p v out=$WORK/manifest.tmp
	{
		printf 'lab manifest, %(%Y-%m-%d %H:%M UTC)T\n' -1
		printf 'mirror %s, host chroot %s\n' "$MIRROR" "$SUITE"
		for p in $(awk '{print $2}' "$WORK/kernels") qemu-system-riscv \
			gcc-riscv64-linux-gnu binutils-riscv64-linux-gnu gcc; do
			v=$(lab_chroot dpkg-query -W -f '${Version}' "$p")
			printf '%-28s %-26s %s\n' "$p" "$v" "$(pkg_origin "$p")"
		done
		printf '%-28s %-26s %s\n' opensbi \
			"$(sed 's/^opensbi_//; s/_all\.deb$//' "$WORK/firmware/VERSION")" forky
		sed -n 's/^suite=/riscv64 packages from /p; s/^skipped /  passed over /p' \
			"$WORK/rvroot/.packages"
		grep -v -e '^suite=' -e '^skipped ' "$WORK/rvroot/.packages" |
			sed 's/^/  riscv64 /'
		if [ -f "$RV_SYSROOT/.packages" ]; then
			sed -n 's/^suite=/riscv64 sysroot (perf) from /p' "$RV_SYSROOT/.packages"
			grep -E '^[^=]*-dev=' "$RV_SYSROOT/.packages" | sed 's/^/  riscv64 /'
		fi
	} > "$out"
	mv "$out" "$WORK/manifest"
}

# What guest-apt.sh resolved, less the suites it passed over: the part
# that decides what gets built, and so the part stamps are keyed on.
closure_of() { # guest-apt.sh output
	grep -v '^skipped ' <<< "$1"
}

# guest_apt ARGS...: tools/lab/guest-apt.sh in the chroot, with the lab's
# mirror, suites and key and the apt root under the cache. setup.sh and
# build-perf.sh (the sysroot) share that apt root, and apt's lists and
# archives are no place for two runs at once: one at a time.
guest_apt() {
	(
		flock 8
		lab_chroot bash "$CREPO/tools/lab/guest-apt.sh" --root "$CWORK/rvapt" \
			--mirror "$MIRROR" --suites "$GUEST_SUITES" \
			--keyring "$GUEST_KEYRING" "$@"
	) 8> "$CACHE/rvapt.lock"
}

# The riscv64 libraries the board's perf links with (build-perf.sh),
# headers and static archives: libelf (symbols, build-ids), libdw
# (DWARF: source lines, probes), zlib, zstd, xz and bzip2 (what libelf
# and libdw read compressed sections with; zstd also perf.data
# compression), libtraceevent (tracepoint formats). Unpacked, never
# installed, into RV_SYSROOT; its .packages lists the closure apt chose.
RV_SYSROOT_PKGS=(libelf-dev libdw-dev zlib1g-dev libzstd-dev liblzma-dev
	libbz2-dev libtraceevent-dev)
RV_SYSROOT=$WORK/rv-sysroot
# What a static riscv64 program using libdw links, each library before
# what it needs. perf's own static libdw list lacks zstd, which Debian's
# libelf is built with.
RV_STATIC_DWARF_LIBS="-ldw -lelf -lz -llzma -lbz2 -lzstd -ldl"

# rv_sysroot_links: whether a static riscv64 program links with the
# sysroot's libelf and libdw the way the board's perf does. Not every
# suite's static archives do: trixie's libelf.a (elfutils 0.192) lacks
# eu_search_tree_init, which its elf_begin() calls.
rv_sysroot_links() {
	local csr=$CWORK/${RV_SYSROOT#"$WORK"/}
	cat > "$RV_SYSROOT/probe.c" <<'PROBE'
#include <elfutils/libdw.h>
#include <libelf.h>
int main(void)
{
	Elf *elf = elf_begin(0, ELF_C_READ, 0);

	return dwarf_begin_elf(elf, DWARF_C_READ, 0) != 0;
}
PROBE
	# shellcheck disable=SC2086 # the libraries are words
	lab_chroot riscv64-linux-gnu-gcc --sysroot="$csr" -static -o "$csr/probe" \
		"$csr/probe.c" $RV_STATIC_DWARF_LIBS \
		> "$RV_SYSROOT/probe.log" 2>&1
}

# rv_sysroot_update: (re)make RV_SYSROOT when the closure apt resolves
# now differs from the one it was made from, as step_rvroot does for the
# board's userspace, from the first guest suite whose archives link
# (rv_sysroot_links); a suite's closure that did not is remembered and
# passed over. A build that uses the sysroot takes a hard-linked copy of
# it first: a replaced sysroot then never changes under it.
rv_sysroot_update() {
	local key resolved suite suites=$GUEST_SUITES
	while :; do
		resolved=$(GUEST_SUITES=$suites guest_apt --resolve-only "${RV_SYSROOT_PKGS[@]}") ||
			die "cannot resolve the riscv64 sysroot's packages (see above)"
		suite=$(sed -n 's/^suite=//p' <<< "$resolved")
		suites=$(tr ' ' '\n' <<< "$suites" | awk -v s="$suite" 'after; $0 == s { after = 1 }' | tr '\n' ' ')
		key=$(hash_inputs "rv-sysroot-v2" "$(closure_of "$resolved")")
		if stamp_ok "rv-sysroot-unlinkable-$suite" "$key" && [ -n "${suites// }" ]; then
			continue
		fi
		if stamp_ok rv-sysroot "$key" && [ -f "$RV_SYSROOT/.packages" ]; then
			return
		fi
		log "fetching the riscv64 sysroot from $suite: ${RV_SYSROOT_PKGS[*]}"
		resolved=$(GUEST_SUITES=$suite guest_apt --dest "$CWORK/${RV_SYSROOT#"$WORK"/}" \
			"${RV_SYSROOT_PKGS[@]}") ||
			die "cannot fetch the riscv64 sysroot's packages (see above)"
		if rv_sysroot_links; then
			printf '%s\n' "$resolved" > "$RV_SYSROOT/.packages"
			stamp_set rv-sysroot "$key"
			return
		fi
		stamp_set "rv-sysroot-unlinkable-$suite" "$key"
		[ -n "${suites// }" ] ||
			die "no guest suite's riscv64 libelf and libdw link statically: $(tail -n 3 "$RV_SYSROOT/probe.log")"
		log "the riscv64 sysroot from $suite does not link statically ($(grep -m1 -o 'undefined reference to .*' "$RV_SYSROOT/probe.log")); trying $suites"
	done
}

# What the kernel logs when something went wrong that it survived, for
# grep -E. Lockdep reports start with "WARNING:" or "INFO:", KASAN ones
# with "BUG:"; the plain words "lockdep" and "kmemleak" also appear in
# harmless boot messages of the debug kernels.
LAB_SPLAT_RE='Kernel panic|Oops|WARNING:|BUG:|cut here|Unable to handle kernel|'
LAB_SPLAT_RE+='KASAN:|INFO: possible|inconsistent lock state|DEBUG_LOCKS_WARN_ON|'
LAB_SPLAT_RE+='turning off the locking correctness validator|'
LAB_SPLAT_RE+='kmemleak: [0-9]+ new suspected|self-detected stall|blocked for more than'

# The N-Trace driver, out of tree against a lab kernel's build tree (the
# default variant, with its API probe results), as a user with that
# kernel's build tree would build it: DIR/ntrace.ko, the log in
# DIR/build.log. DIR must lie under $WORK.
build_ntrace_module() { # series dir
	local kb=$WORK/kbuild-$1-default dir
	mkdir -p "$2"
	dir=$(realpath "$2")
	case "$dir/" in
	"$(realpath "$WORK")"/*) ;;
	*) die "$2: the module directory must be under $WORK" ;;
	esac
	cp "$REPO_DIR"/drivers/hwtracing/ntrace/* "$dir/"
	[ -f "$kb/compat.cflags" ] || { echo "no $kb: build the lab first" > "$dir/build.log"; return 1; }
	lab_chroot make -C "$CWORK/kbuild-$1-default" ARCH=riscv \
		CROSS_COMPILE=riscv64-linux-gnu- KCFLAGS="$(cat "$kb/compat.cflags")" \
		M="$CWORK/${dir#"$(realpath "$WORK")"/}" CONFIG_RISCV_NTRACE=m modules \
		> "$dir/build.log" 2>&1
}
