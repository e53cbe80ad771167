#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-multi-kernel.sh: cdc_ncm's setup of vm-multi-scale over and over in one boot, each device pinged through its netdev; by hand (tests/vm/README.md).
# Each of VM_PROBE_ITERS (12) iterations: modprobe cdc_ncm, addresses on all 8 netdevs, the first 4 up,
# VM_PROBE_HOLD (20) s, all 8 up with carrier, one ping per device (multi_kernel_ping, 5 s). A device
# that does not answer gets its state in kernel-state.txt and is then tried 5 s more, after a bounce of
# its host netdev, after 40 pings from the peer through the gadget (a held NTB fills at 32 datagrams),
# and after a bounce of its gadget netdev; the log says which one brought it back.
# Then rmmod cdc_ncm and a bounce of every gadget, as vm-multi-scale does after its cdc_ncm phase.
# Fails when any iteration had a device that did not answer at once.
set -eu
. "$VM_LIB"

iters=${VM_PROBE_ITERS:-12}
hold=${VM_PROBE_HOLD:-20}
n=8
VM_MULTI_SPARE=0
host_use_userspace
multi_setup "$n"

up() { # K: host netdevs 0..K-1 up with carrier, the others down
	local i=0 dev
	while [ "$i" -lt "$n" ]; do
		dev=$(multi_host_netdev "$i")
		if [ "$i" -lt "$1" ]; then
			$IP link set "$dev" up
			wait_for 5 "carrier on $dev" host_carrier "$dev" || log "no carrier on $dev (gadget $i)"
		else
			$IP link set "$dev" down
		fi
		i=$((i + 1))
	done
}

# recover I: how gadget I comes back, if it does.
recover() {
	local dev
	dev=$(multi_host_netdev "$1")
	wait_for 5 "reply from gadget $1" multi_kernel_ping "$1" "$dev" && { log "gadget $1: answered 5 s later"; return; }
	multi_kernel_state "$1"
	$IP link set "$dev" down
	$IP link set "$dev" up
	wait_for 5 "carrier on $dev" host_carrier "$dev" || true
	wait_for 5 "reply from gadget $1" multi_kernel_ping "$1" "$dev" && { log "gadget $1: answered after a bounce of $dev"; return; }
	multi_kernel_state "$1"
	# 40 datagrams from the peer: they would fill a held NTB (32) and so send it.
	peer_run ping -c 40 -i 0.05 -W 1 -I "$(multi_ifname "$1")" "$(multi_host_ip4 "$1")" >/dev/null 2>&1 || true
	wait_for 5 "reply from gadget $1" multi_kernel_ping "$1" "$dev" && { log "gadget $1: answered after 40 pings from the peer"; return; }
	multi_kernel_state "$1"
	multi_bounce "$1"
	wait_for 5 "carrier on $dev" host_carrier "$dev" || true
	wait_for 5 "reply from gadget $1" multi_kernel_ping "$1" "$dev" && { log "gadget $1: answered after a bounce of $(multi_ifname "$1")"; return; }
	multi_kernel_state "$1"
	log "gadget $1: still no reply"
}

it=1 nbad=0
while [ "$it" -le "$iters" ]; do
	modprobe cdc_ncm || fail "cannot load cdc_ncm"
	i=0
	while [ "$i" -lt "$n" ]; do
		wait_for "$VM_WAIT" "cdc_ncm netdev of gadget $i" multi_host_netdev "$i" || fail "cdc_ncm did not bind gadget $i"
		$IP addr replace "$(multi_host_ip4 "$i")/24" dev "$(multi_host_netdev "$i")"
		i=$((i + 1))
	done
	up 4
	sleep "$hold"
	up "$n"
	bad= i=0
	while [ "$i" -lt "$n" ]; do
		wait_for 5 "reply from gadget $i" multi_kernel_ping "$i" "$(multi_host_netdev "$i")" 2>/dev/null || bad="$bad $i"
		i=$((i + 1))
	done
	log "iteration $it: no reply from gadget(s):${bad:- none}"
	if [ -n "$bad" ]; then
		nbad=$((nbad + 1))
		multi_kernel_state $bad
		for i in $bad; do recover "$i"; done
	fi
	rmmod cdc_ncm || fail "cannot unload cdc_ncm"
	i=0
	while [ "$i" -lt "$n" ]; do multi_bounce "$i"; i=$((i + 1)); done
	it=$((it + 1))
done
check "every device answered at once in all $iters setups ($nbad did not)" [ "$nbad" = 0 ]
