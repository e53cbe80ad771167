#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/csum-vm.sh BUILDDIR: tests/bench/bench-csum's and bench-syscall's figures inside the VM (QEMU's TCG), three runs. Take the VM lock around it.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:?usage: csum-vm.sh BUILDDIR}")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat >"$out/guest.sh" <<'GUEST'
. "$VM_LIB"
for i in 1 2 3; do bench-csum 32; bench-syscall; done >"$VM_OUT/csum.txt" 2>&1
GUEST
tests/vm/run-vm.sh --script "$out/guest.sh" --out "$out/vm" --timeout 300 \
	--bin "$build/tests/bench/bench-csum" --bin "$build/tests/bench/bench-syscall" >"$out/log" 2>&1 || { tail -20 "$out/log"; exit 1; }
cat "$out/vm/csum.txt"
