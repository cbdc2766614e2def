#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Resolve, download and unpack riscv64 packages for the board, in an apt
# root of their own: riscv64 only, with its own lists, state and empty
# dpkg status. Nothing ties the closure to the host chroot's amd64
# versions, so it is consistent by construction.
#
# Runs inside the lab chroot (it needs trixie's apt and dpkg-deb):
#
#   guest-apt.sh --root DIR --mirror URL --suites "trixie forky sid"
#                [--keyring FILE] [--resolve-only] --dest DIR PKG...
#
# Tries the suites in order. A suite whose riscv64 index does not verify
# against its Release file, or that cannot satisfy the packages, is
# skipped with the reason logged; transient network errors are retried
# with back-off first. On success prints "suite=<name>", a "skipped
# <suite>: <why>" line per suite passed over, and one "<pkg>=<version>"
# line per package of the closure on stdout, and (unless
# --resolve-only) leaves the unpacked tree in --dest.
set -euo pipefail

ROOT='' MIRROR='' SUITES='' KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
DEST='' RESOLVE_ONLY=0
while [ $# -gt 0 ]; do
	case "$1" in
	--root) ROOT=$2; shift ;;
	--mirror) MIRROR=$2; shift ;;
	--suites) SUITES=$2; shift ;;
	--keyring) KEYRING=$2; shift ;;
	--dest) DEST=$2; shift ;;
	--resolve-only) RESOLVE_ONLY=1 ;;
	--) shift; break ;;
	-*) echo "guest-apt: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ -n "$ROOT" ] && [ -n "$MIRROR" ] && [ -n "$SUITES" ] && [ $# -gt 0 ] ||
	{ echo "guest-apt: --root, --mirror, --suites and packages are needed" >&2; exit 2; }
[ "$RESOLVE_ONLY" = 1 ] || [ -n "$DEST" ] ||
	{ echo "guest-apt: --dest is needed" >&2; exit 2; }
PKGS=("$@")
# Transient failures get this many tries, sleeping 2, 4, 8... seconds.
TRIES=${GUEST_APT_TRIES:-3}

log() { printf '[lab %(%H:%M:%S)T] guest apt: %s\n' -1 "$*" >&2; }

# One apt configuration per suite: lists from one suite never mix with
# another's, and a suite that failed once cannot leave stale lists that a
# later run would take as verified.
apt_conf() { # suite
	local d=$ROOT/$1
	mkdir -p "$d/state/lists/partial" "$d/cache/archives/partial" \
		"$d/etc/apt.conf.d" "$d/etc/sources.list.d" "$d/etc/preferences.d"
	: > "$d/state/status"
	printf 'deb [arch=riscv64 signed-by=%s] %s %s main\n' \
		"$KEYRING" "$MIRROR" "$1" > "$d/etc/sources.list"
	cat > "$d/apt.conf" <<-CONF
	Dir::State "$d/state";
	Dir::State::status "$d/state/status";
	Dir::Cache "$d/cache";
	Dir::Etc::SourceList "$d/etc/sources.list";
	Dir::Etc::SourceParts "$d/etc/sources.list.d";
	Dir::Etc::Parts "$d/etc/apt.conf.d";
	Dir::Etc::Preferences "$d/etc/preferences";
	Dir::Etc::PreferencesParts "$d/etc/preferences.d";
	APT::Architecture "riscv64";
	APT::Architectures { "riscv64"; };
	APT::Install-Recommends "false";
	APT::Install-Suggests "false";
	APT::Sandbox::User "root";
	Acquire::Retries "2";
	Acquire::Languages "none";
	Acquire::Check-Valid-Until "false";
	Acquire::http::Timeout "30";
	CONF
	printf '%s\n' "$d/apt.conf"
}

# Errors worth a retry: the network, not the content.
transient() { # log file
	grep -qE 'Temporary failure|Could not connect|Connection (failed|timed out|refused)|timed out|50[0-9] |Undetermined Error|Could not resolve' "$1" &&
		! grep -qE 'unexpected size|Hash Sum mismatch|Hashes do not match|404 ' "$1"
}

# Runs apt with the suite's configuration; retries transient failures.
apt_try() { # conf, log, apt-get arguments...
	local conf=$1 out=$2 try=1 delay=2
	shift 2
	while :; do
		if APT_CONFIG=$conf apt-get -q "$@" > "$out" 2>&1 &&
		   ! grep -qE '^(E|W): .*(Failed to fetch|failed to download|is not signed)' "$out"; then
			return 0
		fi
		if [ "$try" -ge "$TRIES" ] || ! transient "$out"; then
			return 1
		fi
		log "transient error, retrying in ${delay}s (try $try of $TRIES): $(reason "$out")"
		sleep "$delay"
		try=$((try + 1)) delay=$((delay * 2))
	done
}

# The first line that says why apt failed.
reason() { # log file
	local r
	r=$(grep -m1 -E '^E: |^W: .*(Failed|failed|not signed)' "$1" ||
	    grep -m1 -E 'unexpected size|Hash Sum|[Ss]ignature|Unable to' "$1" ||
	    tail -n 1 "$1")
	printf '%s' "${r:-apt failed without a message}" | cut -c1-300
}

tried=()
for suite in $SUITES; do
	conf=$(apt_conf "$suite")
	out=$ROOT/$suite/apt.log
	if ! apt_try "$conf" "$out" update; then
		why=$(reason "$out")
		log "suite $suite: riscv64 index unusable: $why"
		tried+=("$suite: index: $why")
		continue
	fi
	# The closure, exactly as apt resolves it against an empty system.
	if ! APT_CONFIG=$conf apt-get -s -q install "${PKGS[@]}" > "$out" 2>&1; then
		why=$(reason "$out")
		log "suite $suite: cannot resolve ${PKGS[*]}: $why"
		tried+=("$suite: resolve: $why")
		continue
	fi
	closure=$(sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p' "$out" | LC_ALL=C sort)
	if [ -z "$closure" ]; then
		tried+=("$suite: resolve: apt listed nothing to install")
		continue
	fi
	if [ "$RESOLVE_ONLY" = 0 ]; then
		arch=$ROOT/$suite/cache/archives
		rm -f "$arch"/*.deb
		if ! apt_try "$conf" "$out" install -y --download-only "${PKGS[@]}"; then
			why=$(reason "$out")
			log "suite $suite: download failed: $why"
			tried+=("$suite: download: $why")
			continue
		fi
		rm -rf "$DEST.tmp"
		mkdir -p "$DEST.tmp"
		for deb in "$arch"/*.deb; do
			dpkg-deb -x "$deb" "$DEST.tmp"
		done
		rm -rf "$DEST"
		mv "$DEST.tmp" "$DEST"
		rm -f "$arch"/*.deb
	fi
	if [ ${#tried[@]} -gt 0 ]; then
		log "using $suite for riscv64, after: ${tried[*]}"
	else
		log "using $suite for riscv64"
	fi
	printf 'suite=%s\n' "$suite"
	for t in "${tried[@]}"; do printf 'skipped %s\n' "$t"; done
	printf '%s\n' "$closure"
	exit 0
done

{
	echo "[lab] ERROR: no suite gives the riscv64 packages ${PKGS[*]}"
	echo "[lab]   mirror: $MIRROR"
	for t in "${tried[@]}"; do echo "[lab]   tried $t"; done
	echo "[lab]   what to do: wait for the mirror to finish syncing and run again,"
	echo "[lab]   point NTRACE_LAB_MIRROR at another Debian mirror, or name the"
	echo "[lab]   suites to try in NTRACE_LAB_GUEST_SUITES (default: NTRACE_LAB_SUITE,"
	echo "[lab]   then forky, then sid)"
} >&2
exit 1
