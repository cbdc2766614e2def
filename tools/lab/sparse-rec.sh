#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Stands in for sparse as kbuild's CHECK: records how kbuild would run it
# (the directory, one argument per line, "--end--") in $SPARSE_REC, so
# that a newer sparse in another chroot can replay it (sparse-replay.sh).
# Prints nothing, which kbuild's checker-valid.sh takes for a sparse
# that knows the kernel's constructs.
[ -n "${SPARSE_REC:-}" ] || exit 0
{
	printf '%s\n' "$PWD"
	for a in "$@"; do
		printf '%s\n' "$a"
	done
	printf '%s\n' --end--
} >> "$SPARSE_REC"
