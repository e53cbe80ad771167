#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/perf-stages.sh [OUT.md]: where the CPU goes, per path and TCP test, in one VM boot.
# Builds a release build with frame pointers (build-perf), boots the VM with the
# host's perf (linux-perf, 6.1 like the guest's kernel), runs tests/bench/guest-perf.sh
# and groups the samples by stage with tests/bench/perf-stages.py. Writes the
# report to OUT.md (default tests/bench/PERF.md) and keeps the raw folded stacks
# in build-perf/perf/. PERF_TESTS, PERF_PATHS (comma-separated), PERF_SECS, PERF_HZ and
# PERF_RECORD_ARGS (default -g) pass through to the guest.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
report=${1:-$top/tests/bench/PERF.md}

command -v perf >/dev/null || { echo "perf-stages: needs perf (apt-get install linux-perf)" >&2; exit 1; }
netstack/lwip/fetch-lwip.sh "$top/.cache/lwip"
build=${NCM_PERF_BUILDDIR:-$top/build-perf}
if [ ! -f "$build/build.ninja" ]; then
	# Frame pointers: perf's call graphs through our code, without DWARF unwinding.
	meson setup "$build" --buildtype=release -Dc_args=-fno-omit-frame-pointer \
		-Dlwip=enabled -Dlwip_src="$top/.cache/lwip" >/dev/null
fi
ninja -C "$build" >/dev/null

out=$build/perf
envs=()
for v in PERF_TESTS PERF_PATHS PERF_SECS PERF_HZ PERF_RECORD_ARGS; do
	[ -z "${!v:-}" ] || envs+=(--env "$v=${!v}")
done
# The libraries' detached symbols where the host has them (libc6-dbg:
# glibc's internal names, such as which memcpy runs, instead of "?"), at
# the build-id path perf looks up in the guest.
debug_files=()
for lib in $(ldd "$build/examples/ncm-bench/ncm-bench" "$build/examples/ncm-tun/ncm-tun" |
	     awk '$3 ~ /^\// { print $3 }' | sort -u); do
	id=$(readelf -n "$lib" 2>/dev/null | awk '/Build ID:/ { print $3 }')
	dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
	[ -z "$id" ] || [ ! -f "$dbg" ] || debug_files+=(--file "$dbg:$dbg")
done
rm -rf "$out.prev"; [ ! -d "$out" ] || mv "$out" "$out.prev"
echo "perf-stages: booting the VM (3 paths x ${PERF_TESTS:-3 tests}, ${PERF_SECS:-6} s each)..." >&2
tests/vm/run-vm.sh --script tests/bench/guest-perf.sh --out "$out" --timeout 2400 \
	"${envs[@]}" "${debug_files[@]+"${debug_files[@]}"}" \
	--bin "$(command -v perf)" --bin "$build/examples/ncm-bench/ncm-bench" \
	--bin "$build/examples/ncm-tun/ncm-tun" --bin "$build/examples/ncm-proxy/ncm-proxy" \
	>"$out.log" 2>&1 || {
	tail -30 "$out.log"
	echo "perf-stages: the VM run failed; log: $out.log" >&2
	exit 1
}
python3 tests/bench/perf-stages.py "$out" >"$report"
echo "perf-stages: $report (folded stacks in $out)" >&2
