#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-stress-flood.sh: guest test: the gadget floods UDP toward a host socket nobody reads, through ncm-tun; RSS stays flat, frames are counted, traffic works after.
set -eu
. "$VM_LIB"

command -v ncm-tun >/dev/null || fail "ncm-tun is not on PATH (run-vm.sh --bin)"
SECS=${STRESS_FLOOD_SECS:-20}
RSS_LIMIT_KB=${STRESS_RSS_LIMIT_KB:-2048}
PORT=5301
TUN=ncmfl0
TUN_LOG=$VM_OUT/ncm-tun.log
RSS_LOG=$VM_OUT/flood-rss.txt

tun_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$TUN_PID/status"; }
tun_sanitized() { grep -q 'libasan' "/proc/$TUN_PID/maps"; }
peer_answers() { ping -c 1 -W 2 "$(peer_ip4)"; }

# udp_rcvbuf_errors: datagrams the host's UDP dropped on full sockets,
# IPv4 and IPv6 (iperf3 listens on a dual-stack socket).
udp_rcvbuf_errors() {
	local v4 v6
	v4=$(awk '$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) if ($i == "RcvbufErrors") c = i; h = 1; next }
		  $1 == "Udp:" { print $c; exit }' /proc/net/snmp)
	v6=$(awk '$1 == "Udp6RcvbufErrors" { print $2 }' /proc/net/snmp6)
	echo $(( ${v4:-0} + ${v6:-0} ))
}
tun_rx_packets() { cat "/sys/class/net/$TUN/statistics/rx_packets"; }
tun_rx_packets_over() { [ "$(tun_rx_packets)" -gt "$1" ]; }
iperf3_received_bytes() {
	awk '/"sum_received"/ { f = 1 }
	     f && /"bytes"/ { sub(/.*:/, ""); sub(/,.*/, ""); print $0 + 0; exit }' "$1"
}
peer_tx_packets() {
	peer_run cat "/sys/class/net/$(gadget_ifname 0)/statistics/tx_packets"
}
host_bound() { # PROTO PORT: a socket (proto tcp or udp, v4 or v6) is bound to PORT
	cat "/proc/net/$1" "/proc/net/${1}6" |
		awk -v p="$(printf ':%04X' "$2")" 'substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'
}

# stats_snapshot: ncm-tun's statistics, fresh, as "datagrams tap_frames tap_drops".
stats_snapshot() {
	local n
	n=$(grep -c 'usb rx:' "$TUN_LOG" || true)
	kill -USR1 "$TUN_PID"
	wait_for 10 "statistics on SIGUSR1" sh -c "[ \$(grep -c 'usb rx:' '$TUN_LOG') -gt $n ]" ||
		fail "no statistics on SIGUSR1"
	wait_for 5 "the statistics' tap line" sh -c "[ \$(grep -c 'tap rx:' '$TUN_LOG') -gt $n ]" ||
		fail "incomplete statistics"
	echo "$(grep 'usb rx:' "$TUN_LOG" | tail -n 1 | sed -n 's/.* NTBs, \([0-9]*\) datagrams.*/\1/p')" \
	     "$(grep 'tap rx:' "$TUN_LOG" | tail -n 1 | sed -n 's/.*tap rx: \([0-9]*\) frames, \([0-9]*\) rx-drops.*/\1 \2/p')"
}

gadget_setup ncm
host_use_userspace

ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" --ipv4 "$(host_ip4)/24" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
wait_for "$VM_WAIT" "interface $TUN" tun_iface || { cat "$TUN_LOG"; fail "ncm-tun made no $TUN"; }
wait_for "$VM_WAIT" "reply from $(peer_ip4)" peer_answers || { cat "$TUN_LOG"; fail "no path through ncm-tun"; }

# The receiver: iperf3's UDP socket, stopped once bound, so that nothing
# reads it and the kernel drops what overflows its buffer.
iperf3 -s -p "$PORT" >/dev/null 2>&1 &
SRV_PID=$!
wait_for "$VM_WAIT" "iperf3 listener on the host" host_bound tcp "$PORT" ||
	fail "host iperf3 server did not start"

snap=$(stats_snapshot)
set -- $snap
dg0=$1 frames0=$2 drops0=$3
rcvbuf0=$(udp_rcvbuf_errors)
ptx0=$(peer_tx_packets)
rss_pre=$(tun_rss_kb)

# -b 0: as fast as the gadget's stack can send.
peer_run timeout $((SECS + 15)) iperf3 -c "$(host_ip4)" -p "$PORT" -u -b 0 -l 1400 -t "$SECS" \
	>"$VM_OUT/flood-client.txt" 2>&1 &
CLIENT_PID=$!
# Stopped only once datagrams flow: iperf3's UDP handshake needs the server.
rx0=$(tun_rx_packets)
wait_for "$VM_WAIT" "the flood's UDP socket" host_bound udp "$PORT" || fail "the flood did not start"
wait_for "$VM_WAIT" "the flood" tun_rx_packets_over $((rx0 + 500)) || fail "the flood did not start"
kill -STOP "$SRV_PID"
log "flooding for ${SECS}s; the receiving socket is never read"

: >"$RSS_LOG"
s=1
while [ "$s" -le "$SECS" ]; do
	sleep 1
	kill -0 "$TUN_PID" 2>/dev/null || { cat "$TUN_LOG"; fail "ncm-tun died during the flood"; }
	echo "$s $(tun_rss_kb) $(tun_rx_packets)" >>"$RSS_LOG"
	s=$((s + 1))
done
# Its datagrams are all sent by now; what is left is a wait for the
# stopped server's results.
kill "$CLIENT_PID" 2>/dev/null || true
wait "$CLIENT_PID" 2>/dev/null || true
kill -CONT "$SRV_PID"
kill "$SRV_PID" 2>/dev/null || true
wait "$SRV_PID" 2>/dev/null || true

snap=$(stats_snapshot)
set -- $snap
dg=$(( $1 - dg0 )) frames=$(( $2 - frames0 )) drops=$(( $3 - drops0 ))
rcvbuf=$(( $(udp_rcvbuf_errors) - rcvbuf0 ))
ptx=$(( $(peer_tx_packets) - ptx0 ))
rss_2=$(sed -n '2p' "$RSS_LOG" | cut -d' ' -f2)
rss_last=$(tail -n 1 "$RSS_LOG" | cut -d' ' -f2)
rss_max=$(cut -d' ' -f2 "$RSS_LOG" | sort -n | tail -n 1)
rate=$(awk 'NR == 1 { p = $3; n = $1 } END { if ($1 > n) printf "%d", ($3 - p) / ($1 - n) }' "$RSS_LOG")
echo "flood: ~${rate:-?} datagrams/s; the gadget sent $ptx NTBs (f_ncm counts them as tx_packets);" \
	"ncm-tun got $dg datagrams, wrote $frames to $TUN, dropped $drops (interface full);" \
	"the host's UDP dropped $rcvbuf (receive buffer full)"
echo "flood: ncm-tun RSS $rss_pre kB before, $rss_2 kB after 2 s, $rss_last kB at the end, max $rss_max kB"

check "ncm-tun received the flood (more than 1000 datagrams)" [ "$dg" -gt 1000 ]
check "every datagram went to $TUN or was counted as dropped" [ $((frames + drops)) = "$dg" ]
check "the unread socket overflowed (the flood outran the host)" [ "$rcvbuf" -gt 0 ]
if tun_sanitized; then
	echo "RSS not checked: ncm-tun runs under ASan (quarantine)"
else
	check "RSS grew less than $RSS_LIMIT_KB kB during the flood (from 2 s in to the max)" \
		[ $((rss_max - rss_2)) -lt "$RSS_LIMIT_KB" ]
fi

wait_for 10 "reply from $(peer_ip4) after the flood" peer_answers || fail "no ping right after the flood"
ok "ping $(peer_ip4) right after the flood"
peer_iperf3_server
timeout 60 iperf3 -c "$(peer_ip4)" -t 3 -J >"$VM_OUT/iperf3-after.json" ||
	fail "iperf3 after the flood failed"
after=$(iperf3_received_bytes "$VM_OUT/iperf3-after.json")
echo "iperf3 after the flood: ${after:-0} bytes, $(iperf3_mbits "$VM_OUT/iperf3-after.json") Mbit/s"
check "TCP moves data after the flood" [ "${after:-0}" -gt 0 ]

kill -TERM "$TUN_PID"
rc=0
wait "$TUN_PID" || rc=$?
tail -n 12 "$TUN_LOG"
# Before the exit status: LeakSanitizer's own exit status would hide its report.
if grep -q -E 'Sanitizer|runtime error:' "$TUN_LOG"; then
	grep -A 40 -E 'Sanitizer|runtime error:' "$TUN_LOG" | head -n 120
	fail "ncm-tun's log holds a sanitizer report (LeakSanitizer runs at exit)"
fi
ok "no sanitizer or LeakSanitizer report"
check "ncm-tun exits 0 on SIGTERM" [ "$rc" = 0 ]
vm_info
