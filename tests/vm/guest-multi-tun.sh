#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-multi-tun.sh: profile multi: one ncm-tun --all --persist drives VM_MULTI_N gadgets (8 in vm-multi-tun), an interface each; ping and iperf3 through each, one unplugged while the others carry on, replugged and back on its own interface (issue 20); one interface deleted, the others carry on.
set -eu
. "$VM_LIB"

command -v ncm-tun >/dev/null || fail "ncm-tun is not on PATH (run-vm.sh --bin)"

n=$VM_MULTI_N
victim=1
TUN_LOG=$VM_OUT/ncm-tun.log
udevd_start
host_use_userspace
multi_setup "$n"
peer_iperf3_server

# tun_of I: the interface ncm-tun made for gadget I, found by its MAC (the device's host MAC).
tun_of() {
	local f mac
	mac=$(multi_host_mac "$1")
	for f in /sys/class/net/mt*; do
		[ -e "$f/address" ] && [ "$(cat "$f/address")" = "$mac" ] && { basename "$f"; return 0; }
	done
	return 1
}
tun_count() { ls -d /sys/class/net/mt* 2>/dev/null | wc -l; }
all_tuns() { [ "$(tun_count)" -ge "$n" ]; }
carrier_up() { [ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ]; }
pings() { ping -c 1 -W 1 "$(multi_peer_ip4 "$1")" >/dev/null 2>&1; }

# iperf_to I WHAT: 2 MB from the host to gadget I's peer address; TCP checks the bytes.
iperf_to() {
	local out=$VM_OUT/iperf3-$1-$2.json mbits
	iperf3 -c "$(multi_peer_ip4 "$1")" -n 2M -J >"$out" 2>&1 || { cat "$out"; return 1; }
	mbits=$(iperf3_mbits "$out")
	log "gadget $1 ($2): ${mbits:-?} Mbit/s"
	[ -n "$mbits" ]
}

# Another program holds the last gadget when ncm-tun starts: --all skips it
# with a warning and brings up the others; once it is free and plugged in
# again, it gets its interface too.
held=$((n - 1))
d=$(multi_usb_dev "$held")
vm-usb-claim --hold 600 "$(printf '/dev/bus/usb/%03d/%03d' "$(cat "$d/busnum")" "$(cat "$d/devnum")")" 0 1 \
	>"$VM_OUT/claim.txt" 2>&1 &
claim_pid=$!
wait_for 10 "gadget $held held" grep -q '^usb-claim: holding' "$VM_OUT/claim.txt" ||
	{ cat "$VM_OUT/claim.txt"; fail "vm-usb-claim did not hold gadget $held"; }

# Under TSan too (tests/run.sh); guest-lib's TSAN_OPTIONS check only our own accesses.
ncm-tun --all --persist --name 'mt%d' >"$TUN_LOG" 2>&1 &
TUN_PID=$!
# Its setup is over once it says how many run (a skipped function's TAP exists a moment).
wait_for "$VM_WAIT" "$((n - 1)) interfaces running" grep -q "$((n - 1)) interface(s) running" "$TUN_LOG" ||
	{ cat "$TUN_LOG"; fail "ncm-tun made $(tun_count) interfaces, not $((n - 1))"; }
check "ncm-tun runs with gadget $held held elsewhere" tun_alive
check "... and skipped it with a warning" grep -q "skipping the function at .*claimed by another process" "$TUN_LOG"
check "$((n - 1)) interfaces" [ "$(tun_count)" = "$((n - 1))" ]
check "... none of them the held gadget's" \
	sh -c "! cat /sys/class/net/mt*/address | grep -qx '$(multi_host_mac "$held")'"
kill "$claim_pid"
wait "$claim_pid" 2>/dev/null || true
multi_unplug "$held"
multi_plug "$held"
wait_for "$VM_WAIT" "$n interfaces" all_tuns || { cat "$TUN_LOG"; fail "ncm-tun made $(tun_count) interfaces, not $n"; }
check "one ncm-tun made exactly $n interfaces" [ "$(tun_count)" = "$n" ]
i=0
while [ "$i" -lt "$n" ]; do
	t=$(tun_of "$i") || { cat "$TUN_LOG"; fail "no interface has gadget $i's MAC $(multi_host_mac "$i")"; }
	$IP addr add "$(multi_host_ip4 "$i")/24" dev "$t"
	wait_for "$VM_WAIT" "carrier on $t" carrier_up "$t" || fail "$t has no carrier"
	wait_for "$VM_WAIT" "ping gadget $i" pings "$i" || fail "no ping to gadget $i through $t"
	check "ping gadget $i x2 through $t" ping -c 2 -W 2 "$(multi_peer_ip4 "$i")"
	check "iperf3 2 MB to gadget $i through $t" iperf_to "$i" before
	i=$((i + 1))
done

victim_tun=$(tun_of "$victim")
multi_unplug "$victim"
check "ncm-tun survives gadget $victim's unplug" tun_alive
check "$victim_tun stays, without carrier" wait_for 10 "$victim_tun carrier down" sh -c "! grep -q 1 /sys/class/net/$victim_tun/carrier"
i=0
while [ "$i" -lt "$n" ]; do
	if [ "$i" != "$victim" ]; then
		check "gadget $i still pings while $victim is away" ping -c 2 -W 2 "$(multi_peer_ip4 "$i")"
		check "iperf3 2 MB to gadget $i while $victim is away" iperf_to "$i" during
	fi
	i=$((i + 1))
done

multi_plug "$victim"
wait_for "$VM_WAIT" "carrier on $victim_tun" carrier_up "$victim_tun" || { cat "$TUN_LOG"; fail "$victim_tun has no carrier after the replug"; }
wait_for "$VM_WAIT" "ping gadget $victim after replug" pings "$victim" || { cat "$TUN_LOG"; fail "gadget $victim does not answer after the replug"; }
check "gadget $victim is back on $victim_tun" [ "$(tun_of "$victim")" = "$victim_tun" ]
check "still $n interfaces (the port's own came back)" [ "$(tun_count)" = "$n" ]
check "iperf3 2 MB to gadget $victim after the replug" iperf_to "$victim" after

# Someone deletes one interface: only that device is let go; ncm-tun and
# the others go on.
gone=0
gone_tun=$(tun_of "$gone")
$IP link del "$gone_tun"
wait_for 10 "ncm-tun lets $gone_tun's device go" grep -q "interface $gone_tun was deleted; its device is let go" "$TUN_LOG" ||
	{ cat "$TUN_LOG"; fail "ncm-tun did not say it let $gone_tun's device go"; }
check "ncm-tun runs on after $gone_tun was deleted" tun_alive
check "$((n - 1)) interfaces left" [ "$(tun_count)" = "$((n - 1))" ]
i=0
while [ "$i" -lt "$n" ]; do
	[ "$i" = "$gone" ] || check "gadget $i still pings after $gone_tun was deleted" ping -c 2 -W 2 "$(multi_peer_ip4 "$i")"
	i=$((i + 1))
done

kill -USR1 "$TUN_PID"
wait_for 10 "statistics on SIGUSR1" grep -q "^ncm-tun: total over" "$TUN_LOG" || fail "no total on SIGUSR1"
kill -TERM "$TUN_PID"
rc=0
wait "$TUN_PID" || rc=$?
cat "$TUN_LOG"
check "ncm-tun exits 0 on SIGTERM" [ "$rc" = 0 ]
# SIGUSR1 and the exit print the same blocks, so every line comes twice.
check "a total over the $((n - 1)) interfaces left, on SIGUSR1 and at exit" \
	[ "$(grep -c "^ncm-tun: total over $((n - 1)) interface(s), $n device session(s)" "$TUN_LOG")" = 2 ]
check "$victim_tun counted two device sessions" \
	[ "$(grep -c "^ncm-tun: $victim_tun, 2 device session(s)$" "$TUN_LOG")" = 2 ]
check "the others one each" [ "$(grep -c '^ncm-tun: mt[0-9]*, 1 device session(s)$' "$TUN_LOG")" = $((2 * (n - 2))) ]
check "no interface left behind" [ "$(tun_count)" = 0 ]
vm_info
