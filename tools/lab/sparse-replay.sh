#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run sparse as kbuild recorded it (sparse-rec.sh): every source file
# checked, its messages printed. Exit 1 if sparse said anything.
#   sparse-replay.sh RECORD
set -u
status=0 dir= args=()
while IFS= read -r line; do
	if [ -z "$dir" ]; then
		dir=$line
		continue
	fi
	if [ "$line" != --end-- ]; then
		args+=("$line")
		continue
	fi
	src=${args[${#args[@]}-1]}
	# checker-valid.sh's probe of sparse itself, long gone
	if [ -f "$dir/$src" ] || [ -f "$src" ]; then
		out=$(cd "$dir" && sparse "${args[@]}" 2>&1)
		[ -z "$out" ] || { printf '%s\n' "$out"; status=1; }
		echo "sparse: checked $src" >&2
	fi
	dir= args=()
done < "$1"
exit "$status"
