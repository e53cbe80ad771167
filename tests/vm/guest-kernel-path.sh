#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-kernel-path.sh: guest test: cdc_ncm against f_ncm carries ping (v4, v6) and iperf3 both ways.
set -eu
. "$VM_LIB"

# Below this the path is broken, not merely slow: TCG gives a few hundred
# Mbit/s on an idle machine, but a loaded one drops to tens.
min_mbits=${VM_MIN_MBITS:-2}

gadget_setup ncm
host_use_kernel
host_addr_setup 0
wait_for "$VM_WAIT" "IPv4 reply from $(peer_ip4)" ping -c 1 -W 1 "$(peer_ip4)" ||
	fail "no IPv4 path to the peer"
check "ping $(peer_ip4) x3" ping -c 3 -W 2 "$(peer_ip4)"
wait_for "$VM_WAIT" "IPv6 reply from $(peer_ip6)" ping -6 -c 1 -W 1 "$(peer_ip6)" ||
	fail "no IPv6 path to the peer"
check "ping $(peer_ip6) x3" ping -6 -c 3 -W 2 "$(peer_ip6)"

peer_iperf3_server
for dir in tx rx; do
	flag=
	[ $dir = rx ] && flag=-R
	iperf3 -c "$(peer_ip4)" -t 5 -J $flag >"$VM_OUT/iperf3-$dir.json" ||
		fail "iperf3 $dir failed: $(grep -m1 '"error"' "$VM_OUT/iperf3-$dir.json")"
	mbits=$(iperf3_mbits "$VM_OUT/iperf3-$dir.json")
	echo "iperf3 $dir (host $( [ $dir = tx ] && echo '->' || echo '<-' ) gadget): $mbits Mbit/s"
	check "iperf3 $dir above $min_mbits Mbit/s" [ "${mbits:-0}" -ge "$min_mbits" ]
done
vm_info
