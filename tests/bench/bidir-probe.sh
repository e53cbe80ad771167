#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/bidir-probe.sh BUILD: tcp_bidir over cdc_ncm and ncm-tun in one boot with the
# TCP senders sampled (tests/bench/guest-bidir-probe.sh). Take the VM lock around it.
set -euo pipefail
cd "$(dirname "$0")/../.."
b=$(realpath "$1")
out=${PROBE_OUT:-$b/bidir-probe}
rm -rf "$out"
cache=${VM_CACHE_DIR:-.cache/vm}
kmods=$(echo "$cache"/kernel-*/lib/modules/*/kernel/net/ipv4)
tests/vm/run-vm.sh --script tests/bench/guest-bidir-probe.sh --out "$out" --timeout 600 \
	--env "PROBE_SECS=${PROBE_SECS:-8}" --bin /usr/bin/ss --bin /usr/sbin/tc \
	--file "$kmods/inet_diag.ko:/tmp/inet_diag.ko" --file "$kmods/tcp_diag.ko:/tmp/tcp_diag.ko" \
	--bin "$b/examples/ncm-bench/ncm-bench" --bin "$b/examples/ncm-tun/ncm-tun" >"$out.log" 2>&1 || {
	tail -30 "$out.log"
	exit 1
}
echo "$out"
