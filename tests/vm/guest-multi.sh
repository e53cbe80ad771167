#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-multi.sh: profile multi: VM_MULTI_N gadgets in one process (vmtest-multi: one NcmContext, an lwIP netif each), then one unplugged and replugged and one more plugged in while the others stream; then ncm-bench --multi over all of them, 2 s (issue 20).
# VM_MULTI_N (8) devices, VM_MULTI_SECS (3) per measurement, VM_MULTI_RATE KiB/s per stream (24; 0 unpaced); a ninth gadget is held back.
set -eu
. "$VM_LIB"

command -v vmtest-multi >/dev/null || fail "vmtest-multi is not on PATH (run-vm.sh --bin)"
command -v vmtest-lwip >/dev/null || fail "vmtest-lwip is not on PATH (the peer; run-vm.sh --bin)"
command -v ncm-bench >/dev/null || fail "ncm-bench is not on PATH (run-vm.sh --bin)"

n=$VM_MULTI_N
victim=$((n / 2))
VM_MULTI_SPARE=1
udevd_start
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
check "vmtest-multi passed every check (status $rc)" [ "$rc" = 0 ]
check "no FAIL line" sh -c "! grep -q '^FAIL' '$VM_OUT/multi.txt'"

# The scaling smoke: ncm-bench --multi streams over all N at once, one
# process, one NcmContext, 2 s of tcp_down (vm-multi-scale has the table).
peer_run ncm-bench --server >"$VM_OUT/bench-server.log" 2>&1 &
wait_for "$VM_WAIT" "ncm-bench server" peer_listening 5288 || fail "ncm-bench --server did not start"
spec= i=0
while [ "$i" -lt "$n" ]; do
	spec="$spec${spec:++}$(multi_peer_ip4 "$i"),ipv4=$(multi_host_ip4 "$i")/24,dev=serial=$(multi_serial "$i")"
	i=$((i + 1))
done
log "ncm-bench --multi over $n devices"
brc=0
# Under TSan guest-lib's TSAN_OPTIONS check only our own accesses.
ncm-bench --multi --reps 1 --secs 2 --tests tcp_down --path "lwip=$spec" --json "$VM_OUT/bench-multi.json" \
	>"$VM_OUT/bench-multi.txt" 2>"$VM_OUT/bench-multi.log" || brc=$?
log "ncm-bench --multi done"
cat "$VM_OUT/bench-multi.txt"
[ "$brc" = 0 ] || tail -n 60 "$VM_OUT/bench-multi.log"
check "ncm-bench --multi over $n devices exited 0 (status $brc)" [ "$brc" = 0 ]
bmin=$(sed -n "s/.*\"devices\":$n,\"per_device_mbit_s\":{\"median\":[^,]*,\"min\":\([^,]*\),.*/\1/p" "$VM_OUT/bench-multi.json")
check "its tcp_down counted $n devices, the slowest above 0 Mbit/s (${bmin:-none})" \
	awk -v v="$bmin" 'BEGIN { exit !(v != "" && v + 0 > 0) }'
vm_info
