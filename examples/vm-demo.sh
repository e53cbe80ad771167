#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/vm-demo.sh: the main job on a machine without an NCM device: install, build, boot
# the VM with the kernel's f_ncm gadget and run ncm-bench over cdc_ncm, ncm-tun, lwIP and ncm-proxy side by side,
# each TCP test also as a fraction of the usbfs ceiling (the raw path) measured in the same boot.
# DEMO_TESTS, DEMO_ROUNDS, DEMO_REPS and DEMO_ARGS go to the guest (examples/vm-demo-guest.sh
# says what each does), e.g. DEMO_TESTS=tcp_up DEMO_ROUNDS=3 examples/vm-demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
for v in DEMO_ROUNDS DEMO_REPS; do
	case ${!v:-1} in
	''|0|*[!0-9]*) echo "vm-demo: $v takes a whole number of at least 1, not '${!v}'" >&2; exit 2 ;;
	esac
done

tests/install-deps.sh
netstack/lwip/fetch-lwip.sh "$top/.cache/lwip"
build=${NCM_DEMO_BUILDDIR:-$top/build-demo}
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" --buildtype=release -Dlwip=enabled -Dlwip_src="$top/.cache/lwip" >/dev/null
fi
ninja -C "$build" >/dev/null

out=$build/demo
rm -rf "$out"
envs=()
for v in DEMO_TESTS DEMO_ROUNDS DEMO_REPS DEMO_ARGS; do
	[ -z "${!v:-}" ] || envs+=(--env "$v=${!v}")
done
# Most of the boot is the TCP runs: five of each test at the defaults; each
# round also runs the two round-trip tests on every path (~30 s).
rounds=${DEMO_ROUNDS:-5}
runs=$(( rounds * ${DEMO_REPS:-1} ))
timeout=$(( 240 + 84 * runs + 40 * rounds ))
echo "vm-demo: booting the VM (QEMU TCG; about $(( 1 + runs + rounds / 2 )) minutes: boot, then 4 paths x 4 tests, $runs runs per TCP test, round trips in each of $rounds rounds, and the raw ceiling)..." >&2
status=0
tests/vm/run-vm.sh "${envs[@]+"${envs[@]}"}" --script examples/vm-demo-guest.sh --out "$out" --timeout "$timeout" \
	--bin "$build/examples/ncm-bench/ncm-bench" --bin "$build/examples/ncm-tun/ncm-tun" \
	--bin "$build/examples/ncm-proxy/ncm-proxy" >"$out.log" 2>&1 || status=$?
if [ ! -s "$out/table.txt" ]; then
	tail -30 "$out.log"
	echo "vm-demo: the VM run failed; full log: $out.log" >&2
	exit 1
fi
echo
cat "$out/table.txt"
echo
echo "JSON: $out/bench.json   plot: $out/bench.svg"
echo "progress and ncm-tun's statistics: $out/bench.log   console: $out/console.log"
if [ "$status" != 0 ]; then
	echo "vm-demo: the guest script failed (status $status): see $out/guest.log" >&2
	exit 1
fi
