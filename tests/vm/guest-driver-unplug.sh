#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-driver-unplug.sh: unplug while libncm streams: removal is reported, nothing hangs, replug is found again; then a reset by another program, which the watch must report as an arrival.
set -eu
. "$VM_LIB"

udevd_start
gadget_setup ncm
G_MESSAGES_DEBUG=ncm $UDEVD_APART vmtest-driver unplug -t 60 >"$VM_OUT/unplug.txt" 2>&1 &
pid=$!
wait_for 30 "libncm streaming" grep -q '^streaming' "$VM_OUT/unplug.txt" ||
	{ cat "$VM_OUT/unplug.txt"; fail "vmtest-driver did not start streaming"; }
sleep 1
gadget_unplug
wait_for 20 "removal reported" grep -q 'event: removed' "$VM_OUT/unplug.txt" ||
	{ cat "$VM_OUT/unplug.txt"; fail "libncm did not report the removal"; }
wait_for 20 "device closed" grep -q '^closed in' "$VM_OUT/unplug.txt" ||
	{ cat "$VM_OUT/unplug.txt"; fail "closing after removal hung"; }
gadget_replug
rc=0
wait $pid || rc=$?
cat "$VM_OUT/unplug.txt"
check "ncm_device_is_gone() agreed with the removal" grep -q '^gone: yes' "$VM_OUT/unplug.txt"
[ $rc = 0 ] || fail "libncm did not get the device back after replug (status $rc)"
check "arrival was reported" grep -q 'event: function-added' "$VM_OUT/unplug.txt"
check "traffic flowed after replug" grep -q 'replug: traffic flows again' "$VM_OUT/unplug.txt"
watch_mode_check "$VM_OUT/unplug.txt"

# A reset by another program (USBDEVFS_RESET) ends usbfs's claims: the
# device is gone for libncm, yet it keeps its address and no hotplug event
# comes. The watch, running since before it, must report it again.
G_MESSAGES_DEBUG=ncm $UDEVD_APART vmtest-driver reset -t 30 >"$VM_OUT/reset.txt" 2>&1 &
pid=$!
wait_for 30 "libncm streaming" grep -q '^streaming' "$VM_OUT/reset.txt" ||
	{ cat "$VM_OUT/reset.txt"; fail "vmtest-driver reset did not start streaming"; }
sleep 1
vm-usb-claim --reset "$(usb_node)" || fail "the reset failed"
rc=0
wait $pid || rc=$?
cat "$VM_OUT/reset.txt"
check "the reset was reported as a removal" grep -q 'event: removed' "$VM_OUT/reset.txt"
check "the watch reported the reset device again (status $rc)" sh -c \
	"[ $rc = 0 ] && [ \$(grep -c 'event: function-added' '$VM_OUT/reset.txt') -ge 2 ]"
check "traffic flowed after the reset" grep -q 'replug: traffic flows again' "$VM_OUT/reset.txt"
watch_mode_check "$VM_OUT/reset.txt" same
vm_info
