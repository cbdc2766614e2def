#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the kernel's checkpatch.pl --strict (from the newest kernel source
# the lab unpacks) over the project's kernel code: the overlay's C files
# and headers, and the patch series for every base.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
series=$(newest_kernel)
[ -f "$WORK/linux-$series/scripts/checkpatch.pl" ] ||
	"$LAB_DIR/build-kernel.sh" "$series" >&2

files=() patches=()
while IFS= read -r f; do
	files+=("$CREPO/${f#"$REPO_DIR"/}")
done < <(find "$REPO_DIR/drivers" "$REPO_DIR/include" \
	\( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)
while IFS= read -r f; do
	patches+=("$CREPO/${f#"$REPO_DIR"/}")
done < <(find "$REPO_DIR/patches" -name '*.patch' 2>/dev/null | sort)
[ ${#files[@]} -gt 0 ] || [ ${#patches[@]} -gt 0 ] || die "nothing to check"
status=0
if [ ${#files[@]} -gt 0 ]; then
	lab_chroot perl "$CWORK/linux-$series/scripts/checkpatch.pl" --strict -q \
		--no-tree --show-types -f "${files[@]}" || status=1
fi
for p in "${patches[@]}"; do
	lab_chroot perl "$CWORK/linux-$series/scripts/checkpatch.pl" --strict -q \
		--no-tree --show-types "$p" || status=1
done
exit "$status"
