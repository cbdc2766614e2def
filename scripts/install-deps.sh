#!/usr/bin/env bash
# Install the Debian packages the host side needs (README.md says why each
# one is there), only when missing, so a warm machine never touches the
# network.
set -euo pipefail

pkgs=(
	build-essential
	pkg-config
	libelf-dev
	clang
	llvm
	gcc-riscv64-linux-gnu
	libc6-dev-riscv64-cross
	binutils-riscv64-linux-gnu
	qemu-user
	libglib2.0-dev
	device-tree-compiler
	time
	python3-sphinx
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done

if ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a \
	>/dev/null 2>&1; then
	missing+=(libclang-rt-dev)
fi
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}"
SUDO=
[[ $(id -u) -eq 0 ]] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
