#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-driver-landed.sh: issue 16, item 10: no completion touches its device after its in-flight drop (libncm's test hook aborts if one does): TX wake-ups of a blocked producer, then failed bulk-IN and interrupt resubmissions.
set -eu
. "$VM_LIB"

gadget_setup ncm
rc=0
# Two OUT transfers: the pool must fill whatever the producer's speed (under
# TSan it once built frames slower than f_ncm drained 16 slots, for 30 s).
vmtest-driver landed -s 1400 -t 30 --tx-transfers 2 >"$VM_OUT/landed.txt" 2>&1 || rc=$?
cat "$VM_OUT/landed.txt"
# A touch after the drop aborts with this message (libncm/usb/ncm-usb-landed.c).
check "no touch after the in-flight drop" sh -c "! grep -q 'ran after this completion dropped' '$VM_OUT/landed.txt'"
check "no sanitizer report" sh -c "! grep -q -E 'Sanitizer|runtime error:' '$VM_OUT/landed.txt'"
[ $rc = 0 ] || fail "vmtest-driver landed failed (status $rc)"
check "the producer was woken through sink.writable" grep -q '^landed tx: [1-9][0-9]* writable wake-ups' "$VM_OUT/landed.txt"
check "the hook failed a bulk-IN resubmission" grep -q 'failing the resubmission of the bulk-IN transfer' "$VM_OUT/landed.txt"
check "the hook failed an interrupt resubmission" grep -q 'failing the resubmission of the interrupt transfer' "$VM_OUT/landed.txt"
check "both failures reported the device gone" test "$(grep -c '^landed .*: the failed resubmission reported the device gone' "$VM_OUT/landed.txt")" = 2
vm_info
