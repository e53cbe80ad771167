#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-hotplug.sh: a second gadget is plugged in while libncm streams from the first; the owner's thread rescans, opens and closes it beside the stream (issue 16, item 9; tests/run.sh runs it under TSan too).
# VM_COUNT datagrams (3000), VM_PEER_RATE per second (1000).
set -eu
. "$VM_LIB"

count=${VM_COUNT:-3000}
rate=${VM_PEER_RATE:-1000}
GADGET2=/sys/kernel/config/usb_gadget/libncm2
UDC2=dummy_udc.1

# Two emulated controllers, each its own bus: a device can arrive on the
# second while the first streams.
dummy_hcd_load hs 2
udevd_start

echo pfifo_fast >/proc/sys/net/core/default_qdisc
gadget_setup ncm
host_use_userspace
ifn=$(gadget_ifname 0)
peer_run $IP link set dev "$ifn" txqueuelen $((count + 1000))
peer_run $IP neigh replace "$(host_ip4)" lladdr "$VM_HOST_MAC" dev "$ifn" nud permanent

# gadget2_plug: another NCM gadget (its own serial and MACs) on the second UDC.
gadget2_plug() {
	gadget_ncm_one "$GADGET2" libncm-vm-0002 "$VM_DEV_MAC2" "$VM_HOST_MAC2"
	echo "$UDC2" >"$GADGET2/UDC" || fail "cannot bind the second gadget"
}

out=$VM_OUT/hotplug.txt
G_MESSAGES_DEBUG=ncm vmtest-driver hotplug -c "$count" -t 90 >"$out" 2>&1 &
pid=$!
wait_for 30 "libncm streaming device open" grep -q '^ready' "$out" || { cat "$out"; fail "vmtest-driver did not start"; }
gadget2_plug
log "second gadget plugged in"
wait_for 30 "the second device reported" grep -q '^event: function-added' "$out" ||
	{ cat "$out"; fail "the watch did not report the second device"; }
peer_run vmtest-driver peer-send -c "$count" -r "$rate"
rc=0
wait $pid || rc=$?
cat "$out"
check "vmtest-driver exited 0 (status $rc; ThreadSanitizer makes it 66 on a report)" [ "$rc" = 0 ]
check "no ThreadSanitizer report" sh -c "! grep -q 'WARNING: ThreadSanitizer' '$out'"
check "every datagram arrived exactly once" grep -q "^rx: unique=$count dups=0" "$out"
cycles=$(sed -n 's/.*, \([0-9]*\) open-start-close cycles.*/\1/p' "$out")
check "the second device was opened and closed beside the stream (${cycles:-0} times)" [ "${cycles:-0}" -ge 1 ]
watch_mode_check "$out"
vm_info
