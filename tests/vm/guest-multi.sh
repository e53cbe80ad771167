#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-multi.sh: profile multi: VM_MULTI_N gadgets in one process (vmtest-multi: one NcmContext, an lwIP netif each), then one unplugged and replugged and one more plugged in while the others stream (issue 20).
# VM_MULTI_N (8) devices, VM_MULTI_SECS (3) per measurement, VM_MULTI_RATE KiB/s per stream (24; 0 unpaced); a ninth gadget is held back.
set -eu
. "$VM_LIB"

command -v vmtest-multi >/dev/null || fail "vmtest-multi is not on PATH (run-vm.sh --bin)"
command -v vmtest-lwip >/dev/null || fail "vmtest-lwip is not on PATH (the peer; run-vm.sh --bin)"

n=$VM_MULTI_N
victim=$((n / 2))
VM_MULTI_SPARE=1
host_use_userspace
multi_setup "$n"
lwip_peer_start

rc=0
vmtest-multi -n "$n" -s "${VM_MULTI_SECS:-3}" -r "${VM_MULTI_RATE:-24}" --deadline 150 --unplug-index "$victim" --plug-index "$n" \
	--unplug-cmd ". \$VM_LIB && multi_unplug $victim" \
	--replug-cmd ". \$VM_LIB && multi_plug $victim" \
	--plug-cmd ". \$VM_LIB && multi_plug $n" \
	>"$VM_OUT/multi.txt" 2>&1 || rc=$?
cat "$VM_OUT/multi.txt"
vm_info
check "vmtest-multi passed every check (status $rc)" [ "$rc" = 0 ]
check "no FAIL line" sh -c "! grep -q '^FAIL' '$VM_OUT/multi.txt'"
