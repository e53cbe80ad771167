#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/tcp-probe.sh BUILD: TCP tests over cdc_ncm and ncm-tun in one boot with the
# TCP senders sampled (tests/bench/guest-tcp-probe.sh), then a table of each run
# (tests/bench/tcp-probe-report.py). PROBE_TESTS (default tcp_bidir), PROBE_REPS
# (default 1), PROBE_SECS (default 8) and PROBE_TSO_SEGS pass through. Take the VM lock around it.
set -euo pipefail
cd "$(dirname "$0")/../.."
b=$(realpath "$1")
out=${PROBE_OUT:-$b/tcp-probe}
rm -rf "$out"
cache=${VM_CACHE_DIR:-.cache/vm}
kmods=$(echo "$cache"/kernel-*/lib/modules/*/kernel/net/ipv4)
reps=${PROBE_REPS:-1} secs=${PROBE_SECS:-8}
npaths=2
[ -z "${PROBE_TSO_SEGS:-}" ] || npaths=3
ntests=$(echo "${PROBE_TESTS:-tcp_bidir}" | tr , '\n' | wc -l)
tests/vm/run-vm.sh --script tests/bench/guest-tcp-probe.sh --out "$out" \
	--timeout $((300 + reps * ntests * npaths * (secs + 25))) \
	--env "PROBE_SECS=$secs" --env "PROBE_REPS=$reps" --env "PROBE_TESTS=${PROBE_TESTS:-tcp_bidir}" \
	--env "PROBE_TSO_SEGS=${PROBE_TSO_SEGS:-}" \
	--bin /usr/bin/ss --bin /usr/sbin/tc \
	--file "$kmods/inet_diag.ko:/tmp/inet_diag.ko" --file "$kmods/tcp_diag.ko:/tmp/tcp_diag.ko" \
	--bin "$b/examples/ncm-bench/ncm-bench" --bin "$b/examples/ncm-tun/ncm-tun" >"$out.log" 2>&1 || {
	tail -30 "$out.log"
	exit 1
}
python3 tests/bench/tcp-probe-report.py "$out"
