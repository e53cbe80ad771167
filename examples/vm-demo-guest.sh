#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/vm-demo-guest.sh: inside the VM, the same workloads over cdc_ncm and over libncm, side by side.
set -eu
. "$VM_LIB"

secs=${DEMO_SECS:-5}
size=1472
frames=${DEMO_FRAMES:-40000}

gadget_setup ncm
host_use_kernel
host_addr_setup 0
wait_for "$VM_WAIT" "IPv4 path" ping -c 1 -W 1 "$(peer_ip4)" || fail "no IPv4 path over cdc_ncm"
peer_iperf3_server
ifn=$(gadget_ifname 0)

# --- cdc_ncm: iperf3, counted by the receiver ---------------------------------
iperf3 -c "$(peer_ip4)" -t "$secs" -J >"$VM_OUT/cdc_ncm-tcp_up.json" || fail "iperf3 up"
iperf3 -c "$(peer_ip4)" -t "$secs" -J -R >"$VM_OUT/cdc_ncm-tcp_down.json" || fail "iperf3 down"
iperf3 -c "$(peer_ip4)" -t "$secs" -J -u -b 0 -l $size >"$VM_OUT/cdc_ncm-udp_up.json" || fail "iperf3 -u up"
iperf3 -c "$(peer_ip4)" -t "$secs" -J -u -b 0 -l $size -R >"$VM_OUT/cdc_ncm-udp_down.json" || fail "iperf3 -u down"
k_tcp_up=$(iperf3_mbits "$VM_OUT/cdc_ncm-tcp_up.json")
k_tcp_down=$(iperf3_mbits "$VM_OUT/cdc_ncm-tcp_down.json")
k_udp_up=$(iperf3_mbits "$VM_OUT/cdc_ncm-udp_up.json")
k_udp_down=$(iperf3_mbits "$VM_OUT/cdc_ncm-udp_down.json")

# --- libncm from userspace: the same UDP datagrams, counted by the receiver ----
host_unbind_ncm
before=$(peer_run cat "/sys/class/net/$ifn/statistics/rx_bytes")
vmtest-driver tx -c "$frames" -s $size -r 0 >"$VM_OUT/libncm-udp_up.txt" || fail "libncm tx"
after=$(peer_run cat "/sys/class/net/$ifn/statistics/rx_bytes")
us=$(awk '/^tx_elapsed_us:/ { print $2 }' "$VM_OUT/libncm-udp_up.txt")
l_udp_up=$(( (after - before) * 8 / us ))

peer_run $IP neigh replace "$(host_ip4)" lladdr "$VM_HOST_MAC" dev "$ifn" nud permanent
vmtest-driver rx -c "$frames" -s $size -r 0 -t 30 >"$VM_OUT/libncm-udp_down.txt" 2>&1 &
pid=$!
wait_for 30 "libncm receiver" grep -q '^ready' "$VM_OUT/libncm-udp_down.txt" || fail "libncm rx did not start"
peer_run vmtest-driver peer-send -c "$frames" -s $size -r 0
wait $pid || true
got=$(awk -F'[= ]' '/^rx: unique=/ { print $3 }' "$VM_OUT/libncm-udp_down.txt")
us=$(awk '/^rx_elapsed_us:/ { print $2 }' "$VM_OUT/libncm-udp_down.txt")
l_udp_down=$(( us > 0 ? got * (size + 42) * 8 / us : 0 ))

cat >"$VM_OUT/results.json" <<JSON
{"env": {"kernel": "$(uname -r)", "usb_mbit_s": $(usb_speed), "profile": "ncm"},
 "results": [
  {"path": "cdc_ncm", "test": "tcp_up", "mbit_s": $k_tcp_up},
  {"path": "cdc_ncm", "test": "tcp_down", "mbit_s": $k_tcp_down},
  {"path": "cdc_ncm", "test": "udp_up", "mbit_s": $k_udp_up},
  {"path": "cdc_ncm", "test": "udp_down", "mbit_s": $k_udp_down},
  {"path": "libncm", "test": "udp_up", "mbit_s": $l_udp_up},
  {"path": "libncm", "test": "udp_down", "mbit_s": $l_udp_down, "received": $got, "sent": $frames}
 ]}
JSON
{
	echo "kernel $(uname -r), USB $(usb_speed) Mbit/s, f_ncm gadget, QEMU TCG"
	echo "receiver-counted Mbit/s      cdc_ncm   libncm"
	printf '%-26s %9s %8s\n' "TCP up (iperf3)" "$k_tcp_up" "-"
	printf '%-26s %9s %8s\n' "TCP down (iperf3 -R)" "$k_tcp_down" "-"
	printf '%-26s %9s %8s\n' "UDP 1472 B up, flood" "$k_udp_up" "$l_udp_up"
	printf '%-26s %9s %8s\n' "UDP 1472 B down, flood" "$k_udp_down" "$l_udp_down"
} | tee "$VM_OUT/table.txt"
