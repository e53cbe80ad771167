#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-tun.sh: guest test: ncm-tun as the host interface: ping, iperf3 both ways (next to cdc_ncm), --persist replug, SIGTERM hand-back, --pcap, --tun.
set -eu
. "$VM_LIB"

command -v ncm-tun >/dev/null || fail "ncm-tun is not on PATH (run-vm.sh --bin)"
min_mbits=${VM_MIN_MBITS:-2}
TUN=ncmt0
TUN_LOG=$VM_OUT/ncm-tun.log
# In the guest's RAM: written over 9p (/out), the capture would slow the link tenfold.
TUN_PCAP=/tmp/ncm-tun.pcap
# VM_TUN_NO_PCAP=1 measures throughput without the capture's cost.
pcap_args="--pcap $TUN_PCAP"
[ -z "${VM_TUN_NO_PCAP:-}" ] || pcap_args=

# iperf3_both LABEL: one run each way against the peer; prints and checks Mbit/s.
iperf3_both() {
	local dir flag mbits
	for dir in tx rx; do
		flag=
		[ $dir = rx ] && flag=-R
		iperf3 -c "$(peer_ip4)" -t 5 -J $flag >"$VM_OUT/iperf3-$1-$dir.json" ||
			fail "$1 iperf3 $dir failed: $(grep -m1 '"error"' "$VM_OUT/iperf3-$1-$dir.json")"
		mbits=$(iperf3_mbits "$VM_OUT/iperf3-$1-$dir.json")
		echo "iperf3 $1 $dir (host $( [ $dir = tx ] && echo '->' || echo '<-' ) gadget): $mbits Mbit/s"
		check "$1 iperf3 $dir above $min_mbits Mbit/s" [ "${mbits:-0}" -ge "$min_mbits" ]
	done
}

tun_carrier() { host_carrier "$TUN"; }
tun_mac_is() { [ "$(cat "/sys/class/net/$TUN/address")" = "$1" ]; }
cdc_ncm_back() { host_netdevs_up; }

wait_tun_carrier() { carrier_wait "$TUN"; }

wait_ping() { # WHAT: both address families answer
	wait_for "$VM_WAIT" "IPv4 reply from $(peer_ip4) $1" ping -c 1 -W 1 "$(peer_ip4)" ||
		fail "no IPv4 path $1"
	wait_for "$VM_WAIT" "IPv6 reply from $(peer_ip6) $1" ping -6 -c 1 -W 1 "$(peer_ip6)" ||
		fail "no IPv6 path $1"
}

gadget_setup ncm

# The reference: cdc_ncm in this same boot.
host_use_kernel
host_addr_setup 0
wait_ping "through cdc_ncm"
check "ping $(peer_ip4) x3 through cdc_ncm" ping -c 3 -W 2 "$(peer_ip4)"
peer_iperf3_server
iperf3_both cdc_ncm
$IP addr flush dev "$(host_netdev 0)"

ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" --persist $pcap_args \
	--ipv4 "$(host_ip4)/24" --ipv6 "$(host_ip6)/64" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
wait_for "$VM_WAIT" "interface $TUN" tun_iface || { cat "$TUN_LOG"; fail "ncm-tun made no $TUN"; }
check "cdc_ncm let go of the function" wait_for 10 "cdc_ncm release" cdc_ncm_gone
check "$TUN has the function's MAC" wait_for 10 "MAC $VM_HOST_MAC on $TUN" tun_mac_is "$VM_HOST_MAC"
wait_tun_carrier
wait_ping "through ncm-tun"
check "ping $(peer_ip4) x3 through ncm-tun" ping -c 3 -W 2 "$(peer_ip4)"
check "ping $(peer_ip6) x3 through ncm-tun" ping -6 -c 3 -W 2 "$(peer_ip6)"
iperf3_both ncm-tun
# Nothing to carry: neither ncm-tun nor libncm wakes on a timer of its own.
# Long after the carrier came, so that the kernel's own router
# solicitations and MLD reports for the new link are over.
sleep 2
idle_check ncm-tun "$TUN_PID"

gadget_unplug
check "ncm-tun survives the unplug" tun_alive
check "$TUN survives the unplug" tun_iface
gadget_replug
wait_tun_carrier
wait_ping "after replug"
check "ping $(peer_ip4) x3 after replug" ping -c 3 -W 2 "$(peer_ip4)"

# Renamed by its owner (down for it, as the kernel wants): the statistics
# follow the interface, and so does the cleanup at exit.
ip link set "$TUN" down
ip link set "$TUN" name ncmren0
TUN=ncmren0
ip link set "$TUN" up
tun_stats
check "ncm-tun counted two device sessions, under the new name" \
	grep -q "^ncm-tun: ncmren0, 2 device session" "$TUN_LOG"

tun_stop TERM ncm-tun
check "no $TUN left behind" [ ! -e "/sys/class/net/$TUN" ]
check "cdc_ncm has the function back" wait_for "$VM_WAIT" "cdc_ncm netdev" cdc_ncm_back

# TUN mode: an IP-only interface; ncm-tun answers the gadget's ARP and NDP.
TUN=ncmtun0
TUN_LOG=$VM_OUT/ncm-tun-l3.log
# The gadget must ask for our MAC again, so that the answers are ncm-tun's.
peer_run $IP neigh flush dev "$(gadget_ifname 0)"
grep -q '^ncmuser:' /etc/passwd 2>/dev/null || echo "ncmuser:x:4242:4242::/:/bin/sh" >>/etc/passwd
ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" --tun --user ncmuser \
	--ipv4 "$(host_ip4)/24" --ipv6 "$(host_ip6)/64" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
wait_for "$VM_WAIT" "interface $TUN" tun_iface || { cat "$TUN_LOG"; fail "ncm-tun --tun made no $TUN"; }
wait_tun_carrier
wait_ping "through ncm-tun --tun"
check "ping $(peer_ip4) x3 through ncm-tun --tun" ping -c 3 -W 2 "$(peer_ip4)"
check "ping $(peer_ip6) x3 through ncm-tun --tun" ping -6 -c 3 -W 2 "$(peer_ip6)"
iperf3_both ncm-tun-tun
tun_stop TERM "ncm-tun --tun"
check "ncm-tun --tun answered ARP/NDP" grep -q "tun: [1-9][0-9]* ARP/NDP answers" "$TUN_LOG"
check "no $TUN left behind" [ ! -e "/sys/class/net/$TUN" ]
check "cdc_ncm has the function back after --user" wait_for "$VM_WAIT" "cdc_ncm netdev" cdc_ncm_back

# Without root: root pre-creates and configures a TAP owned by uid 4242, which runs ncm-tun.
TUN=ncmu0
TUN_LOG=$VM_OUT/ncm-tun-unprivileged.log
$IP addr flush dev "$(host_netdev 0)"
$IP tuntap add mode tap user 4242 name "$TUN"
$IP link set "$TUN" address "$VM_HOST_MAC" mtu 1500 up
$IP addr add "$(host_ip4)/24" dev "$TUN"
$IP addr add "$(host_ip6)/64" dev "$TUN" nodad
chown 4242 "$(usb_node)"
chmod 666 /dev/net/tun   # what udev's default rule does; no udevd runs here
peer_run $IP neigh flush dev "$(gadget_ifname 0)"
su -s /bin/sh ncmuser -c "exec ncm-tun --device serial=$VM_SERIAL --name $TUN" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
wait_for "$VM_WAIT" "cdc_ncm release" cdc_ncm_gone || { cat "$TUN_LOG"; fail "unprivileged ncm-tun did not claim the function"; }
wait_tun_carrier
wait_ping "through unprivileged ncm-tun"
check "ping $(peer_ip4) x3 through unprivileged ncm-tun" ping -c 3 -W 2 "$(peer_ip4)"
# SIGHUP, as when the ssh session that started it closes: a stop like SIGTERM,
# which gives the function back (the default action would not).
tun_stop HUP "unprivileged ncm-tun"
check "unprivileged ncm-tun left the setup to root" grep -q "leaving its MTU" "$TUN_LOG"
check "... and said what root should run, with the device's MAC and MTU" \
	grep -q "ip link set $TUN address $VM_HOST_MAC mtu 1500 up" "$TUN_LOG"
check "the pre-created $TUN stays" tun_iface
check "cdc_ncm has the function back after the unprivileged run" \
	wait_for "$VM_WAIT" "cdc_ncm netdev" cdc_ncm_back
$IP link del "$TUN"

[ -n "$pcap_args" ] || { vm_info; exit 0; }
check "the pcap has the classic header" [ "$(od -An -tx1 -N4 "$TUN_PCAP" | tr -d ' ')" = d4c3b2a1 ]
check "the pcap holds records" [ "$(wc -c <"$TUN_PCAP")" -gt 1000 ]
cp "$TUN_PCAP" "$VM_OUT/"
if command -v tcpdump >/dev/null; then
	check "tcpdump reads the pcap" tcpdump -Z root -nn -r "$TUN_PCAP" -c 5
else
	echo "tcpdump is not in the image: the pcap was only checked for its header"
fi
vm_info
