#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-tun-reset.sh: guest test: the device reset under ncm-tun --persist (idle, then mid-upload): it takes the device back and a TCP stream survives.
set -eu
. "$VM_LIB"

# A reset by another program (usbreset, a daemon probing devices) or by the
# hub driver after errors ends usbfs's claims: the kernel unbinds them,
# resets, and binds cdc_ncm, the interfaces' driver, in their place. The
# node and the device stay: no hotplug event says it left or came back.
TUN=ncmt0
TUN_LOG=$VM_OUT/ncm-tun.log

gadget_setup ncm
host_use_kernel
ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" --persist \
	--ipv4 "$(host_ip4)/24" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
wait_for "$VM_WAIT" "interface $TUN" tun_iface || { cat "$TUN_LOG"; fail "ncm-tun made no $TUN"; }
carrier_wait "$TUN"
wait_for "$VM_WAIT" "reply from $(peer_ip4)" ping -c 1 -W 1 "$(peer_ip4)" || fail "no path before the reset"

# Idle.
reset_device
check "ncm-tun takes the device back after the reset" \
	wait_for "$VM_WAIT" "a second attach" attached 2
check "cdc_ncm, bound by the reset, let go of it again" wait_for 10 "cdc_ncm release" cdc_ncm_gone
carrier_wait "$TUN"
check "ping $(peer_ip4) x3 after the reset" \
	wait_for "$VM_WAIT" "reply after the reset" ping -c 3 -W 2 "$(peer_ip4)"

# Mid-upload: $TUN stays, so the kernel's TCP stream waits out the gap.
peer_iperf3_server
iperf3 -c "$(peer_ip4)" -t 8 -J >"$VM_OUT/iperf3-reset.json" &
iperf=$!
sleep 3
reset_device
rc=0
wait "$iperf" || rc=$?
check "an iperf3 upload survives a reset in its middle" [ "$rc" = 0 ]
echo "iperf3 across the reset: $(iperf3_mbits "$VM_OUT/iperf3-reset.json") Mbit/s"
check "ncm-tun took the device back again" wait_for "$VM_WAIT" "a third attach" attached 3
check "ncm-tun survived both resets" tun_alive

tun_stats
check "ncm-tun counted three device sessions" grep -q "^ncm-tun: $TUN, 3 device session" "$TUN_LOG"
tun_stop TERM ncm-tun
check "cdc_ncm has the function back" wait_for "$VM_WAIT" "cdc_ncm netdev" host_netdevs_up
vm_info
