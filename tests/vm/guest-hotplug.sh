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
rmmod dummy_hcd || fail "cannot unload dummy_hcd"
modprobe dummy_hcd num=2 || fail "cannot load dummy_hcd with two controllers"
wait_for "$VM_WAIT" "UDC $UDC2" test -e "/sys/class/udc/$UDC2" || fail "no second UDC"

echo pfifo_fast >/proc/sys/net/core/default_qdisc
gadget_setup ncm
host_use_userspace
ifn=$(gadget_ifname 0)
peer_run $IP link set dev "$ifn" txqueuelen $((count + 1000))
peer_run $IP neigh replace "$(host_ip4)" lladdr "$VM_HOST_MAC" dev "$ifn" nud permanent

# gadget2_plug: another NCM gadget (its own serial and MACs) on the second UDC.
gadget2_plug() {
	mkdir "$GADGET2" "$GADGET2/strings/0x409" "$GADGET2/functions/ncm.0"
	echo "$VM_VID" >"$GADGET2/idVendor"
	echo "$VM_PID" >"$GADGET2/idProduct"
	echo 0xef >"$GADGET2/bDeviceClass"
	echo 0x02 >"$GADGET2/bDeviceSubClass"
	echo 0x01 >"$GADGET2/bDeviceProtocol"
	echo libncm-vm-0002 >"$GADGET2/strings/0x409/serialnumber"
	echo "$VM_DEV_MAC2" >"$GADGET2/functions/ncm.0/dev_addr"
	echo "$VM_HOST_MAC2" >"$GADGET2/functions/ncm.0/host_addr"
	mkdir "$GADGET2/configs/c.1"
	ln -s "$GADGET2/functions/ncm.0" "$GADGET2/configs/c.1/ncm.0"
	echo "$UDC2" >"$GADGET2/UDC" || fail "cannot bind the second gadget"
}

out=$VM_OUT/hotplug.txt
vmtest-driver hotplug -c "$count" -t 90 >"$out" 2>&1 &
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
vm_info
