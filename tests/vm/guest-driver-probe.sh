#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-driver-probe.sh: ncm-probe reads f_ncm's MAC, formats and NTB sizes, and gives the device back to cdc_ncm; so does an open with ncm_device_open_async, also cancelled.
set -eu
. "$VM_LIB"

gadget_setup "${VM_PROFILE:-ncm}"
host_use_kernel
ncm-probe >"$VM_OUT/probe.txt" 2>&1 || { cat "$VM_OUT/probe.txt"; fail "ncm-probe failed"; }
cat "$VM_OUT/probe.txt"
check "probe shows the iMACAddress $VM_HOST_MAC" grep -q "mac: *$VM_HOST_MAC" "$VM_OUT/probe.txt"
check "probe shows NTB16 and NTB32" grep -q "ntb formats: *NTB16 NTB32" "$VM_OUT/probe.txt"
check "probe shows 16384 in" grep -q "ntb in: *max 16384," "$VM_OUT/probe.txt"
check "probe shows 16384 out" grep -q "ntb out: *max 16384," "$VM_OUT/probe.txt"
check "probe names the kernel driver it found" grep -q "kernel driver: *cdc_ncm" "$VM_OUT/probe.txt"
if [ "$GADGET_PROFILE" = dual ]; then
	check "probe lists both NCM functions" [ "$(grep -c '^ *mac:' "$VM_OUT/probe.txt")" = 2 ]
	check "probe shows the second iMACAddress $VM_HOST_MAC2" grep -q "mac: *$VM_HOST_MAC2" "$VM_OUT/probe.txt"
	check "both functions answered GET_NTB_PARAMETERS" [ "$(grep -c 'ntb in: *max 16384,' "$VM_OUT/probe.txt")" = 2 ]
	# Both functions share the path, VID:PID and serial: the tools' list of
	# what matched must show what tells them apart (mac=), and stop.
	if command -v ncm-tun >/dev/null; then
		rc=0
		timeout 60 ncm-tun --name ncmd0 >"$VM_OUT/tun-two.txt" 2>&1 || rc=$?
		cat "$VM_OUT/tun-two.txt"
		check "ncm-tun with two functions matching: setup failure (exit $rc)" [ "$rc" = 2 ]
		check "... listing each with its mac=" sh -c \
			"grep -q '2 functions match' '$VM_OUT/tun-two.txt' &&
			 grep -q 'mac=$VM_HOST_MAC' '$VM_OUT/tun-two.txt' &&
			 grep -q 'mac=$VM_HOST_MAC2' '$VM_OUT/tun-two.txt'"
	fi
fi
# The query detached cdc_ncm; closing must have re-attached it.
check "cdc_ncm is back after the probe" wait_for "$VM_WAIT" "cdc_ncm netdev" host_netdevs_up

# ncm_device_open_async: two cancelled opens (at once, and after the worker
# had 2 s to open) report CANCELLED and leave the function free, then an
# open whose callback runs on the caller's thread.
vmtest-driver probe --async --cancel >"$VM_OUT/async.txt" 2>&1 ||
	{ cat "$VM_OUT/async.txt"; fail "vmtest-driver probe --async failed"; }
cat "$VM_OUT/async.txt"
check "both cancelled opens reported CANCELLED" [ "$(grep -c '^cancel: .*reported CANCELLED' "$VM_OUT/async.txt")" = 2 ]
check "the async open read an iMACAddress of the gadget" \
	grep -Eq "^async: opened ($VM_HOST_MAC|$VM_HOST_MAC2), .*on the caller's thread" "$VM_OUT/async.txt"
check "cdc_ncm is back after the async opens" wait_for "$VM_WAIT" "cdc_ncm netdev" host_netdevs_up
vm_info
