#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/bench-ntb.sh BUILDDIR: instructions per datagram for NTB pack and parse, by callgrind.
set -euo pipefail
bench=${1:?usage: bench-ntb.sh BUILDDIR}/tests/bench/bench-ntb
command -v valgrind >/dev/null || { echo "bench-ntb: install valgrind" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ir() { # FUNC SIZE FORMAT -> total Ir inside FUNC and its callees
	valgrind --tool=callgrind --callgrind-out-file="$tmp/out" --toggle-collect="$1" \
		"$bench" "$2" 2000 "$3" >"$tmp/stdout" 2>/dev/null
	callgrind_annotate "$tmp/out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'
}

printf '%-6s %-6s %12s %12s\n' format size pack/dgram parse/dgram
for fmt in 16 32; do
	for size in 64 1514; do
		n=$(awk -F'[= ]' '{ print $2 }' <("$bench" "$size" 2000 "$fmt"))
		pack=$(( $(ir 'ncm_ntb_packer_*' "$size" "$fmt") / n ))
		parse=$(( $(ir ncm_ntb_parse "$size" "$fmt") / n ))
		printf 'NTB%-3s %-6s %12s %12s\n' "$fmt" "$size" "$pack" "$parse"
	done
done
