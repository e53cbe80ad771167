#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-tun-fs.sh: guest test: ncm-tun with a full-speed device (12 Mbit/s, 64-byte packets): traffic both ways, and the OUT queue bounded by the bus.
set -eu
. "$VM_LIB"

# A microcontroller's NCM (TinyUSB, Zephyr) or a device behind a USB 1.1
# hub runs at full speed. f_ncm limited to it (configfs max_speed) has
# 64-byte bulk packets; dummy_hcd moves more than 12 Mbit/s through it,
# but libncm must still size its queue for the bus the device reports.
TUN=ncmt0
TUN_LOG=$VM_OUT/ncm-tun.log
rtt_under() { # LABEL IPERF3-ARGS...: ping's round trips beside a TCP stream
	local label=$1 ip
	shift
	iperf3 -c "$(peer_ip4)" -t 9 "$@" >"$VM_OUT/iperf3-$label.txt" &
	ip=$!
	sleep 2
	ping -c 10 -i 0.4 "$(peer_ip4)" >"$VM_OUT/ping-$label.txt" || true
	wait $ip || fail "iperf3 $label failed"
	echo "round trips beside $label: $(tail -n 1 "$VM_OUT/ping-$label.txt")"
}

gadget_setup ncm
check "the device runs at full speed" [ "$(usb_speed)" = 12 ]
host_use_kernel
peer_iperf3_server
ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" --ipv4 "$(host_ip4)/24" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
wait_for "$VM_WAIT" "interface $TUN" tun_iface || { cat "$TUN_LOG"; fail "ncm-tun made no $TUN"; }
carrier_wait "$TUN"
wait_for "$VM_WAIT" "reply from $(peer_ip4)" ping -c 1 -W 1 "$(peer_ip4)" || fail "no path"
check "ping $(peer_ip4) x3" ping -c 3 -W 2 "$(peer_ip4)"
for dir in up down; do
	flag=
	[ $dir = down ] && flag=-R
	iperf3 -c "$(peer_ip4)" -t 4 -J $flag >"$VM_OUT/iperf3-$dir.json" || fail "iperf3 $dir failed"
	mbits=$(iperf3_mbits "$VM_OUT/iperf3-$dir.json")
	echo "iperf3 $dir at full speed: $mbits Mbit/s"
	check "iperf3 $dir moved data" [ "${mbits:-0}" -ge 1 ]
done
# What a ping waits behind an upload is the OUT queue: 16 ms of the bus,
# at least 4 NTBs (f_ncm's are 16 KiB), not the 1 MiB of OUT transfers
# a high-speed device gets. Printed, not judged (a timing).
rtt_under upload
rtt_under download -R
tun_stats
grep "usb tx queue" "$TUN_LOG" || true
check "libncm bounds the OUT queue by the bus: 4 NTBs of 16 KiB" \
	grep -q "usb tx queue: at most 65536 bytes" "$TUN_LOG"
tun_stop TERM ncm-tun
vm_info
