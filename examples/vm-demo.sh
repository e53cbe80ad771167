#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/vm-demo.sh: the main job on a machine without an NCM device: install, build, boot
# the VM with the kernel's f_ncm gadget and compare libncm with cdc_ncm side by side.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

tests/install-deps.sh
netstack/lwip/fetch-lwip.sh "$top/.cache/lwip"
build=${NCM_DEMO_BUILDDIR:-$top/build-demo}
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" --buildtype=release -Dlwip_src="$top/.cache/lwip" >/dev/null
fi
ninja -C "$build" >/dev/null

out=$build/demo
rm -rf "$out"
echo "vm-demo: booting the VM (QEMU TCG, about a minute)..." >&2
tests/vm/run-vm.sh --script examples/vm-demo-guest.sh --out "$out" --timeout 400 \
	--bin "$build/tests/vm/vmtest-driver" >"$out.log" 2>&1 ||
	{ tail -30 "$out.log"; echo "vm-demo: the VM run failed; full log: $out.log" >&2; exit 1; }
echo
cat "$out/table.txt"
echo
echo "JSON: $out/results.json   console: $out/console.log   iperf3 reports: $out/*.json"
