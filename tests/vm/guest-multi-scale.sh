#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-multi-scale.sh: aggregate throughput at 1, 2, 4 and 8 devices in one boot, over cdc_ncm (iperf3 --bidir per device) and over lwIP in one process (vmtest-multi), one TCP stream each way per device (issue 20).
# VM_SCALE_SECS (5) per point, VM_SCALE_COUNTS ("1 2 4 8"). Prints "scale:" lines; asserts only that every device moved data.
set -eu
. "$VM_LIB"

secs=${VM_SCALE_SECS:-5}
counts=${VM_SCALE_COUNTS:-1 2 4 8}
max=0
for k in $counts; do [ "$k" -gt "$max" ] && max=$k; done
VM_MULTI_SPARE=0
host_use_userspace
multi_setup "$max"

cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

# ---- cdc_ncm: the kernel's own path, one netdev per device
modprobe cdc_ncm || fail "cannot load cdc_ncm"
multi_host_netdev() { # I: cdc_ncm's netdev of gadget I
	local d n
	d=$(multi_usb_dev "$1") || return 1
	for n in "$d"/"${d##*/}":*/net/*; do [ -e "$n" ] && { echo "${n##*/}"; return 0; }; done
	return 1
}
i=0
while [ "$i" -lt "$max" ]; do
	wait_for "$VM_WAIT" "cdc_ncm netdev of gadget $i" multi_host_netdev "$i" || fail "cdc_ncm did not bind gadget $i"
	dev=$(multi_host_netdev "$i")
	$IP addr replace "$(multi_host_ip4 "$i")/24" dev "$dev"
	$IP link set "$dev" up
	peer_run iperf3 -s -D -p $((5201 + i)) || fail "iperf3 -s failed"
	i=$((i + 1))
done
i=0
while [ "$i" -lt "$max" ]; do
	wait_for "$VM_WAIT" "iperf3 listener $i" peer_listening $((5201 + i)) || fail "iperf3 server $i did not start"
	wait_for "$VM_WAIT" "reply from gadget $i" ping -c 1 -W 1 "$(multi_peer_ip4 "$i")" || fail "no path to gadget $i"
	i=$((i + 1))
done
# Only the K devices measured are up: usbnet polls the interrupt endpoint of
# an open netdev, and each poll of an idle device is dummy_hcd timer work
# that the guest's CPU pays for (libncm's lwIP runs open only K devices).
multi_kernel_up() { # K
	local i=0 dev
	while [ "$i" -lt "$max" ]; do
		dev=$(multi_host_netdev "$i")
		if [ "$i" -lt "$1" ]; then
			$IP link set "$dev" up
			wait_for "$VM_WAIT" "carrier on $dev" host_carrier "$dev" || fail "no carrier on $dev"
		else
			$IP link set "$dev" down
		fi
		i=$((i + 1))
	done
}
for k in $counts; do
	multi_kernel_up "$k"
	set -- $(cpu_busy)
	b0=$1 t0=$2
	i=0
	while [ "$i" -lt "$k" ]; do
		iperf3 -c "$(multi_peer_ip4 "$i")" -p $((5201 + i)) --bidir -t "$secs" -J >"$VM_OUT/iperf-$k-$i.json" 2>&1 &
		i=$((i + 1))
	done
	wait
	set -- $(cpu_busy)
	b1=$1 t1=$2
	i=0 line= total=0 min= max_d=0
	while [ "$i" -lt "$k" ]; do
		up=$(awk '/"sum_received"/ { f = 1 } f && /"bits_per_second"/ { sub(/.*:/, ""); sub(/,.*/, ""); printf "%.1f\n", $0 / 1e6; exit }' "$VM_OUT/iperf-$k-$i.json")
		down=$(awk '/"sum_received_bidir_reverse"/ { f = 1 } f && /"bits_per_second"/ { sub(/.*:/, ""); sub(/,.*/, ""); printf "%.1f\n", $0 / 1e6; exit }' "$VM_OUT/iperf-$k-$i.json")
		[ -n "$up" ] && [ -n "$down" ] || { cat "$VM_OUT/iperf-$k-$i.json"; fail "iperf3 to gadget $i gave no result"; }
		line="$line $i:$up/$down"
		i=$((i + 1))
	done
	echo "$line" | tr ' ' '\n' | awk -F'[:/]' -v k="$k" -v busy="$((b1 - b0))" -v tot="$((t1 - t0))" '
		NF == 3 { s = $2 + $3; sum += s; if (n == 0 || s < min) min = s; if (s > max) max = s; n++ }
		END { r = max > 0 ? min / max : 0; c = tot > 0 ? 100 * busy / tot : 0
			printf "scale: cdc_ncm %d devices: total %.1f Mbit/s, per device min %.1f max %.1f, min/max %.2f, system CPU %.0f %% busy\n", k, sum, min, max, r, c }'
	echo "  per device up/down Mbit/s:$line"
done
rmmod cdc_ncm || fail "cannot unload cdc_ncm"

# ---- lwIP in one process: vmtest-multi, unpaced
lwip_peer_start
bad=
for k in $counts; do
	vmtest-multi -n "$k" -s "$secs" -r 0 --deadline 150 >"$VM_OUT/lwip-$k.txt" 2>&1 ||
		{ grep '^FAIL' "$VM_OUT/lwip-$k.txt"; bad="$bad $k"; }
	grep '^all:' "$VM_OUT/lwip-$k.txt" | sed "s/^all:/scale: lwip $k:/"
done
vm_info
check "vmtest-multi passed at every count (failed at:${bad:- none})" [ -z "$bad" ]
