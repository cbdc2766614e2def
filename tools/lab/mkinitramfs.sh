#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Assemble the lab initramfs. Runs inside the chroot (it needs the riscv64
# readelf): mkinitramfs.sh <rvroot> <selftests dir> <init> <output.cpio>
set -euo pipefail

RV=$1 ST=$2 INIT=$3 OUT=$4
STAGE=$OUT.d
LIBDIR=usr/lib/riscv64-linux-gnu

rm -rf "$STAGE"
mkdir -p "$STAGE"/{bin,usr/bin,usr/sbin,sbin,etc,proc,sys,dev,tmp,root,mnt/host,$LIBDIR}
ln -s usr/lib "$STAGE/lib"
install -m 0755 "$INIT" "$STAGE/init"
install -m 0755 "$RV/usr/bin/busybox" "$STAGE/bin/busybox"
install -m 0755 "$RV/usr/bin/perf" "$STAGE/usr/bin/perf"
# perf report spawns addr2line for source lines.
install -m 0755 "$RV/usr/bin/riscv64-linux-gnu-addr2line" "$STAGE/usr/bin/addr2line"
cp -a "$ST" "$STAGE/selftests"
rm -rf "$STAGE/selftests/ctr-mod"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$STAGE/etc/passwd"
printf 'root:x:0:\n' > "$STAGE/etc/group"

# Copy the shared libraries perf and addr2line need, following DT_NEEDED
# transitively, instead of the whole unpacked package set.
find_lib() {
	local d
	for d in "$RV/$LIBDIR" "$RV/lib/riscv64-linux-gnu" "$RV/usr/lib" "$RV/lib"; do
		[ -e "$d/$1" ] && { printf '%s\n' "$d/$1"; return 0; }
	done
	return 1
}
declare -A seen=()
queue=("$RV/usr/bin/perf" "$RV/usr/bin/riscv64-linux-gnu-addr2line")
while [ ${#queue[@]} -gt 0 ]; do
	f=${queue[0]}
	queue=("${queue[@]:1}")
	while read -r lib; do
		[ -n "${seen[$lib]:-}" ] && continue
		seen[$lib]=1
		path=$(find_lib "$lib") || { echo "missing riscv64 library $lib" >&2; exit 1; }
		cp -L "$path" "$STAGE/$LIBDIR/$lib"
		queue+=("$path")
	done < <(riscv64-linux-gnu-readelf -d "$f" |
		 sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
# The ELF interpreter path is /lib/ld-linux-riscv64-lp64d.so.1.
cp -L "$(find_lib ld-linux-riscv64-lp64d.so.1)" "$STAGE/usr/lib/ld-linux-riscv64-lp64d.so.1"

# Uncompressed: decompressing on an emulated hart costs more boot time
# than the bigger file costs QEMU to load.
(cd "$STAGE" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
rm -rf "$STAGE"
