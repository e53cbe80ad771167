#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-nudge.sh: Linux's f_ncm holds a burst's last NTB when the host is slow; libncm's tail nudge frees it.
# VM_BURSTS (8) bursts of VM_COUNT (400) UDP datagrams of 1000 bytes, 2 s apart,
# into a host that takes VM_SLOW_US (300) per datagram, slower than the bus;
# once with the nudge off, once on, once on with a host that only answers ARP,
# once on with a host that speaks only IPv6 (no ARP at all).
set -eu
. "$VM_LIB"

bursts=${VM_BURSTS:-8}
count=${VM_COUNT:-400}
slow=${VM_SLOW_US:-300}

# A drop by policy would look like a held tail: pfifo_fast only tail-drops,
# and the queue holds every burst whole.
echo pfifo_fast >/proc/sys/net/core/default_qdisc
gadget_setup "${VM_PROFILE:-ncm}"
ifn=$(gadget_ifname 0)
peer_run $IP link set dev "$ifn" txqueuelen $((count * 4))
peer_run $IP neigh replace "$(host_ip4)" lladdr "$VM_HOST_MAC" dev "$ifn" nud permanent
peer_run $IP -6 neigh replace "$(host_ip6)" lladdr "$VM_HOST_MAC" dev "$ifn" nud permanent

# $1: label, $2: --nudge-ms value, $3: first sequence number (each session
# its own, so that what the device held from the last one shows as stale),
# $4: "answer" for a host that never asks the peer's address, only answers
# the peer's ARP request (which arping sends from the peer); "ipv6" for a
# host that speaks only IPv6, to which the peer sends over IPv6.
bursts_into_host() {
	out="$VM_OUT/tail-$1.txt"
	family=
	[ "${4:-}" = ipv6 ] && family=--ipv6
	vmtest-driver tail --nudge-ms "$2" --slow-us "$slow" -c "$count" --bursts "$bursts" \
		--first "$3" -t $((bursts * 2 + 20)) $family \
		$([ "${4:-}" = answer ] && echo --answer-arp) >"$out" 2>&1 &
	pid=$!
	if [ "${4:-}" = answer ]; then
		wait_for 30 "libncm receiver waiting for ARP ($1)" grep -q '^waiting for the peer' "$out" ||
			{ cat "$out"; fail "vmtest-driver tail did not start"; }
		peer_run arping -c 3 -w 10 -I "$ifn" "$(host_ip4)" >"$VM_OUT/arping-$1.txt" 2>&1 || true
	fi
	wait_for 30 "libncm receiver ready ($1)" grep -q '^ready' "$out" ||
		{ cat "$out"; fail "vmtest-driver tail did not start"; }
	b=0
	while [ "$b" -lt "$bursts" ]; do
		peer_run vmtest-driver peer-send $family --first $(($3 + b * count)) -c "$count" -r 0 -s 1000
		sleep 2
		b=$((b + 1))
	done
	rc=0
	wait "$pid" || rc=$?
	cat "$out"
	[ "$rc" = 0 ] || fail "vmtest-driver tail failed ($1)"
}

bursts_into_host off -1 0
bursts_into_host on 0 $((bursts * count))
# A host stack that learnt the device's MAC from the device's own request
# (lwIP, Linux) never asks: the nudge learns from its reply (issue 20's
# vm-multi-lwip stalled for good on a held tail before it did).
bursts_into_host answer 0 $((2 * bursts * count)) answer
# A link-local-only gadget (ssh to fe80::...%usb0 is common): the nudge
# learns from the host's neighbour solicitation and asks with its own.
bursts_into_host ipv6 0 $((3 * bursts * count)) ipv6
off=$(sed -n 's/^tail: \([0-9]*\) of.*/\1/p' "$VM_OUT/tail-off.txt")
on=$(sed -n 's/^tail: \([0-9]*\) of.*/\1/p' "$VM_OUT/tail-on.txt")
log "held bursts: $off of $bursts without the nudge, $on of $bursts with it"
# Whether f_ncm holds a tail is up to timing, so the control is reported,
# not asserted; with the nudge, every burst must arrive whole and promptly.
check "with the nudge, every burst arrived whole, none of it 1 s late" grep -q "^tail: 0 of $bursts bursts held, 0 dups" "$VM_OUT/tail-on.txt"
check "the nudge went out" sh -c "! grep -q '^nudges: 0 sent' '$VM_OUT/tail-on.txt'"
check "a host that only answers ARP: every burst arrived whole, none of it 1 s late" \
	grep -q "^tail: 0 of $bursts bursts held, 0 dups" "$VM_OUT/tail-answer.txt"
check "a host that only answers ARP: the nudge went out" sh -c "! grep -q '^nudges: 0 sent' '$VM_OUT/tail-answer.txt'"
check "a host that speaks only IPv6: every burst arrived whole, none of it 1 s late" \
	grep -q "^tail: 0 of $bursts bursts held, 0 dups" "$VM_OUT/tail-ipv6.txt"
check "a host that speaks only IPv6: the nudge went out" sh -c "! grep -q '^nudges: 0 sent' '$VM_OUT/tail-ipv6.txt'"
# What the device still held at the end of the first session (the last
# burst's missing datagrams) is not lost: the second session's first nudge
# (its ARP request went unanswered) brings it in, before its own bursts.
last=$(sed -n "s/^burst $((bursts - 1)): \([0-9]*\) of.*/\1/p" "$VM_OUT/tail-off.txt")
stale=$(sed -n 's/^stale: \([0-9]*\) .*/\1/p' "$VM_OUT/tail-on.txt")
check "the $((count - last)) datagrams held past the first session came in the second ($stale)" \
	[ "$stale" = $((count - last)) ]
vm_info
