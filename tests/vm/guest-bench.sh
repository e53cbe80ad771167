#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-bench.sh: a short ncm-bench over cdc_ncm and the lwIP stack; checks the JSON's shape and that each path moved data.
# BENCH_TESTS picks the tests (default a quick subset); BENCH_ARGS adds options.
set -eu
. "$VM_LIB"

gadget_setup ncm
host_use_kernel
host_addr_setup 0
wait_for "$VM_WAIT" "IPv4 path" ping -c 1 -W 1 "$(peer_ip4)" || fail "no IPv4 path over cdc_ncm"
peer_run ncm-bench --server >"$VM_OUT/server.log" 2>&1 &
wait_for "$VM_WAIT" "ncm-bench server" peer_listening 5288 || fail "ncm-bench --server did not start"

ncm-bench --quick --tests "${BENCH_TESTS:-tcp_down,tcp_up,udp_rtt_64}" ${BENCH_ARGS:-} \
	--path "cdc_ncm=$(peer_ip4)%$(host_netdev 0)" \
	--path "lwip=$(peer_ip4),ipv4=192.168.77.3/24,dev=serial=$VM_SERIAL" \
	--json "$VM_OUT/bench.json" --plot "$VM_OUT/bench.svg" | tee "$VM_OUT/bench.txt"

# Shape: one object with env and results; each result names its path and test.
check "JSON has env and results" grep -q '"env"' "$VM_OUT/bench.json"
check "JSON has results" grep -q '"results"' "$VM_OUT/bench.json"
for p in cdc_ncm lwip; do
	check "$p moved data (tcp_down median > 0)" awk -v p="$p" '
		BEGIN { RS = "}," }
		index($0, "\"path\": \"" p "\"") && index($0, "\"test\": \"tcp_down\"") {
			if (match($0, /"median": *[0-9.]+/)) { v = substr($0, RSTART, RLENGTH); sub(/.*: */, "", v); if (v + 0 > 0) ok = 1 }
		}
		END { exit !ok }' "$VM_OUT/bench.json"
done
check "plot written" grep -q '<svg' "$VM_OUT/bench.svg"
vm_info
