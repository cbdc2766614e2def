#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the kernel's checkpatch.pl --strict (from the unpacked lab kernel
# source) over the lab's kernel-style sources.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
[ -f "$WORK/linux/scripts/checkpatch.pl" ] || "$LAB_DIR/build-kernel.sh" >&2

files=()
while IFS= read -r f; do
	files+=("$CREPO/${f#"$REPO_DIR"/}")
done < <(find "$REPO_DIR/selftests" -name '*.c' -path '*/ctr/*' ! -name '*_test.c' | sort)
[ ${#files[@]} -gt 0 ] || die "nothing to check"
lab_chroot perl "$CWORK/linux/scripts/checkpatch.pl" --strict --no-tree \
	--show-types -f "${files[@]}"
