#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Find which form of a moved kernel API a kernel tree has, by compiling a
# probe per form (tools/lab/conftest/HAVE_*.c) against it, as out-of-tree
# driver projects do: stable and vendor kernels backport API changes, so
# the version number cannot tell. Runs inside the lab chroot:
#
#   conftest.sh <kernel source> <configured build dir> <scratch dir> MAKEARGS...
#
# An empty build dir: the source is the build tree itself (a
# distribution's linux-headers package).
#
# Prints the compiler flags to build with, e.g.
# "-DHAVE_PMU_SCHED_TASK_NO_TASK", on stdout (empty for mainline forms).
set -euo pipefail
SRC=$1 BUILD=$2 TMP=$3
shift 3
HERE=$(cd "$(dirname "$0")/conftest" && pwd)

rm -rf "$TMP"
mkdir -p "$TMP"
cp "$HERE"/Kbuild "$HERE"/*.c "$TMP/"
probe() { # name, make arguments
	local name=$1
	shift
	make -C "$SRC" ${BUILD:+O="$BUILD"} M="$TMP" "$@" "$name.o" \
		> "$TMP/$name.log" 2>&1 && [ -f "$TMP/$name.o" ]
}
if ! probe conftest-sanity "$@"; then
	cat "$TMP/conftest-sanity.log" >&2
	echo "conftest: even the sanity probe does not compile" >&2
	exit 1
fi
flags=()
for c in "$TMP"/HAVE_*.c; do
	name=$(basename "$c" .c)
	if probe "$name" "$@"; then
		flags+=("-D$name")
	fi
done
echo "${flags[*]}"
