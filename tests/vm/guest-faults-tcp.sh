#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-faults-tcp.sh: guest test: libncm's test hook damages 1 in 100 NTBs ncm-tun receives (NCM_TEST_FAULT_ONE_IN); TCP each way survives and every bad NTB is counted.
set -eu
. "$VM_LIB"

command -v ncm-tun >/dev/null || fail "ncm-tun is not on PATH (run-vm.sh --bin)"
FAULT_ONE_IN=${VM_FAULT_ONE_IN:-100}
SECS=${VM_FAULT_SECS:-10}
TUN=ncmf0
TUN_LOG=$VM_OUT/ncm-tun.log

tun_carrier() { host_carrier "$TUN"; }

# iperf3_received_bytes FILE: what the receiver counted; 0 when the run broke.
iperf3_received_bytes() {
	awk '/"sum_received"/ { f = 1 }
	     f && /"bytes"/ { sub(/.*:/, ""); sub(/,.*/, ""); print $0 + 0; exit }' "$1"
}

# Bounded, so that a TCP session killed by a bad NTB fails the test instead
# of hanging it until the VM's deadline.
iperf3_run() { # LABEL [-R]
	local label=$1 json=$VM_OUT/iperf3-$1.json bytes rc=0
	shift
	timeout $((SECS * 4 + 30)) iperf3 -c "$(peer_ip4)" -t "$SECS" -J "$@" >"$json" || rc=$?
	[ "$rc" = 0 ] || fail "iperf3 $label failed (status $rc): $(grep -m1 '"error"' "$json" || true)"
	bytes=$(iperf3_received_bytes "$json")
	echo "iperf3 $label: ${bytes:-0} bytes received, $(iperf3_mbits "$json") Mbit/s"
	check "iperf3 $label: the receiver got data" [ "${bytes:-0}" -gt 0 ]
}

gadget_setup ncm
host_use_userspace

# libncm's test hook (in all but release builds: -Dtest_hooks) damages received NTBs.
NCM_TEST_FAULT_ONE_IN=$FAULT_ONE_IN ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" \
	--ipv4 "$(host_ip4)/24" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
wait_for "$VM_WAIT" "interface $TUN" tun_iface || { cat "$TUN_LOG"; fail "ncm-tun made no $TUN"; }
wait_for "$VM_WAIT" "carrier on $TUN" tun_carrier || { cat "$TUN_LOG"; fail "no carrier on $TUN"; }
# A damaged NTB can eat an echo: retry instead of asking for a clean run.
wait_for "$VM_WAIT" "reply from $(peer_ip4)" ping -c 1 -W 1 "$(peer_ip4)" ||
	{ cat "$TUN_LOG"; fail "no path through ncm-tun"; }

peer_iperf3_server
iperf3_run tx
iperf3_run rx -R
check "ncm-tun is still running" kill -0 "$TUN_PID"

kill -TERM "$TUN_PID"
rc=0
wait "$TUN_PID" || rc=$?
cat "$TUN_LOG"
# Before the exit status: LeakSanitizer's own exit status would hide its report.
check "no sanitizer or LeakSanitizer report" sh -c "! grep -q -E 'Sanitizer|runtime error:' '$TUN_LOG'"
check "ncm-tun exits 0 on SIGTERM" [ "$rc" = 0 ]
check "ncm-tun printed its statistics" grep -q 'usb rx:' "$TUN_LOG"
check "libncm's fault hook was on" grep -q "test hook: damaging 1 in $FAULT_ONE_IN received NTBs" "$TUN_LOG"

ntbs=$(grep 'usb rx:' "$TUN_LOG" | tail -n 1 | sed -n 's/.*usb rx: \([0-9]*\) NTBs.*/\1/p')
bad=$(grep 'usb rx:' "$TUN_LOG" | tail -n 1 | sed -n 's/.* \([0-9]*\) bad NTBs.*/\1/p')
rejects=$(awk '/rx reject/ { s += $NF } END { print s + 0 }' "$TUN_LOG")
echo "faults: 1 in $FAULT_ONE_IN; $ntbs NTBs parsed, $bad bad NTBs, $rejects rejects counted"
check "ncm-tun counted bad NTBs" [ "${bad:-0}" -gt 0 ]
# Every bad NTB has at least one reject with a reason. A damaged NTB that
# still parses (a flipped payload bit, a duplicate) is not bad: the kernel's
# checksums and TCP deal with what it delivers.
check "every bad NTB has its reject reasons counted" [ "$rejects" -ge "$bad" ]
check "bad NTBs are among the NTBs parsed" [ "$bad" -le "$ntbs" ]
grep 'rx reject' "$TUN_LOG" | sed 's/^ */reject: /'
datagrams=$(grep 'usb rx:' "$TUN_LOG" | tail -n 1 | sed -n 's/.* NTBs, \([0-9]*\) datagrams.*/\1/p')
tap=$(grep 'tap rx:' "$TUN_LOG" | tail -n 1 |
	sed -n 's/.*tap rx: \([0-9]*\) frames, \([0-9]*\) rx-drops.*/\1 + \2/p')
# ... less the pure ACKs a later one in the same NTB superseded (libncm's
# ACK thinning) or in the same event batch (the TAP's hold), which are
# counted instead of delivered.
thinned=$(grep 'usb rx:' "$TUN_LOG" | tail -n 1 | sed -n 's/.* \([0-9]*\) ACKs thinned.*/\1/p')
held=$(grep 'tap rx:' "$TUN_LOG" | tail -n 1 | sed -n 's/.* \([0-9]*\) ACKs thinned.*/\1/p')
check "every datagram parsed went to $TUN, was counted as dropped or as a thinned ACK" \
	[ "$datagrams" = $(($tap + ${thinned:-0} + ${held:-0})) ]
vm_info
