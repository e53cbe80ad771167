#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-lwip.sh: the lwIP netstack over libncm against f_ncm's Linux stack: TCP echo and bulk, UDP echo, concurrency.
# VM_LWIP_MIB (64), VM_LWIP_UDP (10000), VM_LWIP_CONNS (32) and VM_LWIP_ECHO_ROUNDS (1) size the run.
set -eu
. "$VM_LIB"

command -v vmtest-lwip >/dev/null || fail "vmtest-lwip is not on PATH (run-vm.sh --bin)"

gadget_setup "${VM_PROFILE:-ncm}"
host_use_userspace

# A starved TCG guest can stall the host side for longer than the default
# 1000-packet queue of the gadget's netdev covers; its qdisc then drops (and
# no netdev counter shows it), which TCP pays for with timeouts.
ifn=$(gadget_ifname 0)
peer_run $IP link set dev "$ifn" txqueuelen 10000

# Kernel sockets in the gadget's namespace answer; lwIP in this process is the host.
lwip_peer_start

# When vmtest-lwip's watchdog sees USB go quiet it dumps its threads; the
# peer's side of the story (socket queues, retransmit timers, drops) is
# captured here at the same moment.
(
	while sleep 2; do
		grep -q '^## thread' "$VM_OUT/lwip.txt" 2>/dev/null || continue
		{
			echo "== peer /proc/net/tcp, tcp6 (tx_queue:rx_queue, tr:when, retrnsmt)"
			peer_run cat /proc/net/tcp /proc/net/tcp6
			echo "== peer netdev"
			peer_run cat "/sys/class/net/$ifn/statistics/tx_dropped" "/sys/class/net/$ifn/statistics/tx_packets" "/sys/class/net/$ifn/statistics/rx_packets"
			echo "== peer qdisc"
			peer_run $IP -s link show dev "$ifn"
			peer_run cat /proc/net/snmp
		} >"$VM_OUT/peer-at-stall.txt" 2>&1
		break
	done
) &
monitor=$!

rc=0
vmtest-lwip host -s "${VM_LWIP_MIB:-64}" -u "${VM_LWIP_UDP:-10000}" -c "${VM_LWIP_CONNS:-32}" --echo-rounds "${VM_LWIP_ECHO_ROUNDS:-1}" \
	--peer4 "$(peer_ip4)" --peer6 "$(peer_ip6)" --host4 "$(host_ip4)" --host6 "$(host_ip6)" \
	>"$VM_OUT/lwip.txt" 2>&1 || rc=$?
kill "$monitor" 2>/dev/null || true
cat "$VM_OUT/lwip.txt"
[ -f "$VM_OUT/peer-at-stall.txt" ] && cat "$VM_OUT/peer-at-stall.txt"
# For stalls: the peer's view (retransmissions, timeouts, zero-window probes, drops).
peer_run cat /proc/net/snmp /proc/net/snmp6 /proc/net/netstat >"$VM_OUT/peer-tcp-stats.txt" 2>&1 || true
for f in rx_packets tx_packets rx_dropped tx_dropped rx_errors tx_errors; do
	echo "$f $(peer_run cat "/sys/class/net/$ifn/statistics/$f")"
done >"$VM_OUT/peer-netdev-stats.txt"
vm_info
check "every lwIP check passed" [ "$rc" = 0 ]
check "no FAIL line" sh -c "! grep -q '^FAIL' '$VM_OUT/lwip.txt'"
