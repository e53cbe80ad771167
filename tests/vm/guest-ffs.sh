#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-ffs.sh: libncm against ffs-ncm, the programmable device; VM_FFS_TEST picks the case.
# Cases (tests/vm/README.md, "The programmable device (FunctionFS)"):
#   basic, apple, ntb16-only, ntb32-only, divisors, max-datagrams,
#   notify-flood, no-mac, stall-in-once, stall-in-always, stall-intr, stall-out,
#   out-stuck, input-size, max-datagram, persist-mtu
# VM_COUNT frames each way (default 10000 in basic, 2000 elsewhere),
# VM_PEER_RATE the peer's frames/s (4000).
set -eu
. "$VM_LIB"

test_case=${VM_FFS_TEST:?set VM_FFS_TEST}
rate=${VM_PEER_RATE:-4000}

# As in guest-driver-frames.sh: a qdisc that never drops by policy, so
# that exactly-once holds under a slow (sanitized) host.
echo pfifo_fast >/proc/sys/net/core/default_qdisc

setup() { # ffs-ncm arguments
	ffs_gadget_setup "$@"
	host_use_userspace
	usb_interfaces
}

# frames OUT [vmtest-driver options]: ARP and NDP answered by the peer's stack.
frames() {
	local out=$VM_OUT/$1
	shift
	vmtest-driver frames "$@" >"$out" 2>&1 || { cat "$out"; fail "ARP/NDP through ffs-ncm"; }
	cat "$out"
	ok "ARP and NDP answered through ffs-ncm"
}

# tx N [options]: libncm sends N frames; the peer's TAP must count them all.
tx() {
	local n=$1 before after got
	shift
	before=$(peer_run cat "/sys/class/net/$FFS_TAP/statistics/rx_packets")
	vmtest-driver tx -c "$n" -r "$rate" "$@" | tee "$VM_OUT/tx.txt"
	after=$(peer_run cat "/sys/class/net/$FFS_TAP/statistics/rx_packets")
	got=$((after - before))
	echo "peer counted $got frames for $n sent (plus ARP)"
	check "peer received all $n frames" [ "$got" -ge "$n" ]
	check "peer received no more than sent + ARP" [ "$got" -le $((n + 20)) ]
}

# rx N [options]: the peer's stack sends N datagrams; libncm must see each once.
rx() {
	local n=$1 rc=0 mac
	shift
	peer_run $IP link set dev "$FFS_TAP" txqueuelen $((n + 1000))
	# The last case's file must not answer the wait below before the shell
	# has truncated it for this one.
	rm -f "$VM_OUT/rx.txt"
	vmtest-driver rx -c "$n" -t 60 "$@" >"$VM_OUT/rx.txt" 2>&1 &
	rxpid=$!
	wait_for 30 "libncm receiver ready" grep -q '^ready' "$VM_OUT/rx.txt" ||
		{ cat "$VM_OUT/rx.txt"; fail "vmtest-driver rx did not start"; }
	# No iMACAddress through f_fs: libncm's own MAC, which vmtest-driver
	# printed, and which its rx mode does not defend with ARP.
	mac=$(sed -n 's/^mac: //p' "$VM_OUT/rx.txt" | head -n 1)
	peer_run $IP neigh replace "$(host_ip4)" lladdr "$mac" dev "$FFS_TAP" nud permanent
	peer_run vmtest-driver peer-send -c "$n" -r "$rate" -s "${RX_SIZE:-64}"
	wait $rxpid || rc=$?
	cat "$VM_OUT/rx.txt"
	[ $rc = 0 ] || fail "libncm did not receive every frame exactly once"
	ok "received $n frames exactly once"
}

stat_of() { # FILE NAME: a counter from vmtest-driver's stats line
	sed -n "s/.*[ :]$2=\([0-9]*\).*/\1/p" "$1" | tail -n 1
}

# driver OUT SECS ARGS...: vmtest-driver ARGS, killed after SECS (a hang
# fails the check on DRIVER_RC); its output in $VM_OUT/OUT, printed.
driver() {
	local out=$VM_OUT/$1 secs=$2
	shift 2
	DRIVER_RC=0
	timeout "$secs" vmtest-driver "$@" >"$out" 2>&1 || DRIVER_RC=$?
	cat "$out"
	DRIVER_OUT=$out
}

# close_ms: how long the last driver run's ncm_device_close() took.
in_range() { [ -n "$1" ] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; } # V LO HI
close_ms() { sed -n 's/^close: \([0-9]*\) ms$/\1/p' "$DRIVER_OUT" | tail -n 1; }

check_closed() { # the driver exited 0 and its close took at most 5 s
	local ms
	ms=$(close_ms)
	check "vmtest-driver exited cleanly (status $DRIVER_RC)" [ "$DRIVER_RC" = 0 ]
	check "close finished in ${ms:-?} ms (<= 5000)" in_range "$ms" 0 5000
}

case $test_case in
basic)
	# f_ncm's figures: NTB16+32, 16384 each way, 4/0/4, interrupt endpoint.
	n=${VM_COUNT:-10000}
	setup --profile basic
	frames frames.txt
	check "negotiated NTB16" grep -q 'negotiated: NTB16' "$VM_OUT/frames.txt"
	check "libncm reports the link up" grep -q 'event: link up' "$VM_OUT/frames.txt"
	tx "$n"
	rx "$n"
	ffs_gadget_stop
	check "the device checked at least $n datagrams" [ "$(ffs_stat datagrams_out)" -ge "$n" ]
	check "the device sent at least $n datagrams" [ "$(ffs_stat datagrams_in)" -ge "$n" ]
	;;
apple)
	# No interrupt endpoint, as Apple's NCM functions: nobody will say
	# NETWORK_CONNECTION, so the link is up from open.
	n=${VM_COUNT:-2000}
	setup --profile apple
	check "the host sees no endpoint on the communication interface" \
		[ "$(cat "$USB_DEV/${USB_DEV##*/}:1.0/bNumEndpoints")" = 00 ]
	frames frames.txt
	check "libncm reports the link up without a notification" \
		grep -q 'event: link up' "$VM_OUT/frames.txt"
	tx "$n"
	rx "$n"
	ffs_gadget_stop
	check "no notification was sent" [ "$(ffs_stat notifications)" = 0 ]
	;;
ntb16-only)
	# Asked for NTB32, libncm must settle for NTB16 and never send
	# SET_NTB_FORMAT to a device that lists only NTB16.
	n=${VM_COUNT:-2000}
	setup --profile ntb16-only
	frames frames.txt --ntb32
	check "negotiated NTB16" grep -q 'negotiated: NTB16' "$VM_OUT/frames.txt"
	check "no SET_NTB_FORMAT reached the device" sh -c "! grep -q SET_NTB_FORMAT '$FFS_LOG'"
	tx "$n" --ntb32
	rx "$n" --ntb32
	ffs_gadget_stop
	check "every host NTB was NTB16" [ "$(ffs_stat violations)" = 0 ]
	;;
ntb32-only)
	# NTB16 is mandatory (NCM 1.0, 6.2.1): a device listing only NTB32 is
	# refused at open with an error that says so, and nothing is sent.
	setup --profile ntb32-only
	if vmtest-driver frames --ntb32 -t 10 >"$VM_OUT/frames.txt" 2>&1; then
		cat "$VM_OUT/frames.txt"
		fail "libncm opened a device without NTB16"
	fi
	cat "$VM_OUT/frames.txt"
	check "the refusal names the reason" \
		grep -q 'invalid NTB parameters (no-ntb16)' "$VM_OUT/frames.txt"
	ffs_gadget_stop
	check "no NTB reached the device" [ "$(ffs_stat ntbs_out)" = 0 ]
	;;
divisors)
	# Each layout both ways: the device checks every host NTB (datagram
	# offset % divisor == remainder, NDP % alignment), libncm parses the
	# device's NTBs packed with the same rules.
	# Three boots' worth in one: no ARP/NDP round (tx resolves the peer
	# itself), 1,500 frames each way.
	n=${VM_COUNT:-1500}
	# 8/2/16 runs over NTB32, the others over NTB16.
	for ndp in 4/0/4 8/2/16 512/14/512; do
		fmt=16 opt=
		[ "$ndp" = 8/2/16 ] && fmt=32 opt=--ntb32
		log "== wNdp divisor/remainder/alignment $ndp, NTB$fmt"
		setup --in-ndp "$ndp" --out-ndp "$ndp"
		tx "$n" $opt
		rx "$n" $opt
		ffs_gadget_teardown
		check "$ndp: the device checked at least $n datagrams" \
			[ "$(ffs_stat datagrams_out)" -ge "$n" ]
		check "$ndp: NTB$fmt was in use" [ "$(ffs_stat format)" = "NTB$fmt" ]
	done
	;;
max-datagrams)
	n=${VM_COUNT:-2000}
	for max in 1 64; do
		log "== wNtbOutMaxDatagrams $max"
		setup --out-max-datagrams "$max"
		frames "frames-$max.txt"
		tx "$n"
		ffs_gadget_teardown
		if [ "$max" = 1 ]; then
			# libncm flushes every 10 frames: one NTB each means it obeyed.
			check "one datagram per NTB: at least $n NTBs" \
				[ "$(ffs_stat ntbs_out)" -ge "$n" ]
		fi
	done
	;;
notify-flood)
	# NETWORK_CONNECTION on every interrupt poll for 8 s after each
	# ENABLE: libncm passes on changes only, so its dispatches to the
	# owner's context stay few, and traffic flows meanwhile.
	n=${VM_COUNT:-2000}
	setup --profile notify-flood --notify-flood 8
	rx "$n"
	dispatches=$(stat_of "$VM_OUT/rx.txt" main_dispatches)
	ffs_gadget_stop
	notes=$(ffs_stat notifications)
	echo "notifications sent: $notes, main-context dispatches: $dispatches"
	check "the device flooded (>= 200 notifications)" [ "$notes" -ge 200 ]
	check "dispatches stayed bounded (<= 8)" [ "$dispatches" -le 8 ]
	;;
no-mac)
	# f_fs carries no iMACAddress: libncm must pick a unicast, locally
	# administered MAC, warn, keep it across opens, and use it.
	setup --profile basic
	frames frames.txt
	frames frames2.txt
	mac=$(sed -n 's/^mac: //p' "$VM_OUT/frames.txt" | head -n 1)
	first=$((0x${mac%%:*}))
	echo "libncm's MAC: $mac"
	check "libncm warned about the missing iMACAddress" \
		grep -q 'has no iMACAddress' "$VM_OUT/frames.txt"
	check "the MAC is unicast" [ $((first & 1)) = 0 ]
	check "the MAC is locally administered" [ $((first & 2)) = 2 ]
	check "the MAC is stable across opens" grep -q "^mac: $mac" "$VM_OUT/frames2.txt"
	check "the peer learned it from ARP" sh -c \
		"$IP -n $PEER_NS neigh show $(host_ip4) | grep -qi '$mac'"
	ffs_gadget_stop
	;;
stall-in-once)
	# The device halts bulk IN once, early in libncm's session: libncm
	# clears the halt and not a frame is lost.
	n=${VM_COUNT:-2000}
	setup --profile stall-in-once
	rx "$n"
	stalls=$(stat_of "$VM_OUT/rx.txt" rx_stalls)
	ffs_gadget_stop
	check "the device halted bulk IN once" [ "$(ffs_stat stalls)" = 1 ]
	check "libncm met the stall (rx_stalls $stalls)" [ "$stalls" -ge 1 ]
	;;
stall-in-always)
	# From the 2nd IN NTB on the device halts bulk IN again after every
	# clear: after 64 failed transfers in a row libncm stops receiving and
	# says so through NcmDevice::error; the process and close still end.
	setup --stall-in-always 2
	driver watch.txt 60 watch -t 30
	check "NcmDevice::error: receiving stopped after 64 failures" grep -q \
		'^event: error: receiving stopped: 64 bulk-IN transfers in a row failed (the last: a STALL)' \
		"$DRIVER_OUT"
	check_closed
	check "libncm counted the stalls" [ "$(stat_of "$DRIVER_OUT" rx_stalls)" -ge 64 ]
	ffs_gadget_stop
	check "the device halted bulk IN again and again" [ "$(ffs_stat stalls)" -ge 2 ]
	;;
stall-intr)
	# After its first notifications the device keeps the interrupt
	# endpoint halted: libncm gives the pipe up after 64 failures in a
	# row, with a warning, and no more (no spin); the link stays as it
	# was reported and data flows both ways meanwhile.
	n=${VM_COUNT:-2000}
	setup --stall-intr
	rx "$n"
	check "libncm warned that it gave the interrupt pipe up" \
		grep -q '64 interrupt transfers in a row failed: no more link notifications' "$VM_OUT/rx.txt"
	fails=$(stat_of "$VM_OUT/rx.txt" intr_malformed)
	check "exactly 64 interrupt transfers failed (intr_malformed ${fails:-?})" [ "${fails:-0}" = 64 ]
	tx "$n"
	ffs_gadget_stop
	check "the device halted its interrupt endpoint ($(ffs_stat stalls) times)" [ "$(ffs_stat stalls)" -ge 1 ]
	;;
stall-out)
	# Once: the device halts bulk OUT before the 5th host NTB. The NTBs
	# in flight are lost and counted (tx_errors), libncm clears the halt,
	# and later frames (the stream, then ARP) reach the peer.
	n=${VM_COUNT:-300}
	setup --stall-out-once 5
	before=$(peer_run cat "/sys/class/net/$FFS_TAP/statistics/rx_packets")
	driver tx-once.txt 90 tx --lossy -c "$n" -r "$rate"
	after=$(peer_run cat "/sys/class/net/$FFS_TAP/statistics/rx_packets")
	check_closed
	errors=$(stat_of "$DRIVER_OUT" tx_errors)
	check "libncm counted the stalled NTB(s) (tx_errors $errors)" [ "$errors" -ge 1 ]
	echo "peer counted $((after - before)) frames of $n"
	check "most frames reached the peer" [ $((after - before)) -ge $((n / 2)) ]
	check "ARP after the stall was answered" grep -q '^after: ARP answered' "$DRIVER_OUT"
	ffs_gadget_teardown
	check "the device halted bulk OUT once" [ "$(ffs_stat stalls)" = 1 ]
	# Always: from the 3rd host NTB on, bulk OUT stays halted. Every NTB
	# fails; sends are still taken or refused in bounded time, and close ends.
	setup --stall-out-always 3
	driver tx-always.txt 90 tx --lossy -c 200 -r "$rate"
	check_closed
	errors=$(stat_of "$DRIVER_OUT" tx_errors)
	check "libncm counted the failed NTBs (tx_errors $errors)" [ "$errors" -ge 2 ]
	ffs_gadget_stop
	;;
out-stuck)
	# The device never reads bulk OUT: libncm's OUT transfers never come
	# back, and after 10 s NcmDevice::error says sending stopped.
	setup --no-out-read
	driver watch.txt 60 watch -t 30
	check "NcmDevice::error: sending stopped" grep -q \
		'^event: error: sending stopped: [0-9a-f]*:[0-9a-f]* has taken no data for 10 s' \
		"$DRIVER_OUT"
	ms=$(sed -n 's/^watch: error signal after \([0-9]*\) ms$/\1/p' "$DRIVER_OUT")
	check "it came after about 10 s (${ms:-?} ms)" in_range "$ms" 9000 20000
	check_closed
	ffs_gadget_stop
	;;
input-size)
	# The device keeps dwNtbInMaxSize 131072 (NTB32) whatever libncm asks
	# (65536): refused, then ignored. libncm's receive buffers follow it, it
	# warns, and 1472-byte datagrams gathered into NTBs over 64 KiB arrive
	# exactly once without an overflow.
	n=${VM_COUNT:-2000}
	for how in refused ignored; do
		log "== SET_NTB_INPUT_SIZE $how"
		opt=--refuse-input-size
		[ "$how" = ignored ] && opt=--ignore-input-size
		setup --in-max 131072 $opt --in-batch 100
		RX_SIZE=1472 rx "$n" --ntb32
		check "libncm warned ($how)" grep -q \
			"$how an NTB input size of 65536 and uses 131072: receive buffers follow it" \
			"$VM_OUT/rx.txt"
		check "no overflow" [ "$(stat_of "$VM_OUT/rx.txt" rx_overflows)" = 0 ]
		ffs_gadget_teardown
		echo "largest IN NTB: $(ffs_stat max_ntb_in) bytes"
		check "the device sent NTBs over 64 KiB" [ "$(ffs_stat max_ntb_in)" -gt 65536 ]
	done
	# Above 1 MiB: open fails, saying why.
	setup --in-max 2097152 --refuse-input-size
	driver open.txt 60 frames --ntb32 -t 10
	check "the open failed" [ "$DRIVER_RC" = 1 ]
	check "the failure names the limit" grep -q \
		'keeps sending NTBs of up to 2097152 bytes (it refused a size of 65536), more than libncm.s limit of 1048576' \
		"$DRIVER_OUT"
	ffs_gadget_stop
	check "no NTB reached the device" [ "$(ffs_stat ntbs_out)" = 0 ]
	;;
max-datagram)
	# f_fs (6.1) carries no NCM functional descriptor, so libncm sees no
	# capabilities: it must not ask GET/SET_MAX_DATAGRAM_SIZE (caps bit 3
	# unset), whatever the device would answer (--max-datagram-reply).
	n=${VM_COUNT:-1000}
	setup --caps 0x19 --max-datagram-reply 1200
	frames frames.txt
	check "the MTU stays 1500" grep -q '^mtu: 1500$' "$VM_OUT/frames.txt"
	ffs_gadget_teardown
	check "no SET_MAX_DATAGRAM_SIZE without caps bit 3" \
		sh -c "! grep -q SET_MAX_DATAGRAM_SIZE '$FFS_LOG'"
	# OUT NTBs of 2048 bytes with datagrams on 1024-byte boundaries hold
	# less than a full frame: the MTU follows what fits, with a warning.
	setup --out-max 2048 --out-ndp 1024/0/4
	frames frames2.txt
	room=$(sed -n 's/.*its OUT NTBs (2048 bytes, NTB16) hold frames of at most \([0-9]*\) bytes.*/\1/p' \
		"$VM_OUT/frames2.txt")
	check "libncm warned about its OUT NTBs (${room:-?} bytes)" [ -n "$room" ]
	check "the MTU is $((room - 14))" grep -q "^mtu: $((room - 14))\$" "$VM_OUT/frames2.txt"
	tx "$n" -s $((room - 42))
	ffs_gadget_stop
	;;
persist-mtu)
	# ncm-tun --persist over a device whose second plug carries smaller
	# OUT NTBs (2048 bytes, datagrams on 1024-byte boundaries): the
	# interface follows the MTU libncm derives (not only the MAC), and
	# frames of the new maximum reach the peer within the device's rules.
	command -v ncm-tun >/dev/null || fail "ncm-tun is not on PATH (run-vm.sh --bin)"
	tun=ncmp0
	setup --profile basic
	ncm-tun --device "serial=$VM_SERIAL" --name $tun --persist --ipv4 "$(host_ip4)/24" \
		>"$VM_OUT/ncm-tun.log" 2>&1 &
	tun_pid=$!
	tun_mtu() { cat "/sys/class/net/$tun/mtu" 2>/dev/null; }
	tun_mtu_is() { [ "$(tun_mtu)" = "$1" ]; }
	wait_for 30 "MTU 1500 on $tun" tun_mtu_is 1500 || { cat "$VM_OUT/ncm-tun.log"; fail "no $tun"; }
	wait_for 30 "ping through $tun" ping -c 1 -W 1 "$(peer_ip4)" ||
		{ cat "$VM_OUT/ncm-tun.log"; fail "no path through $tun"; }
	ffs_gadget_teardown
	setup --out-max 2048 --out-ndp 1024/0/4
	# The room an OUT NTB leaves, as vm-ffs-max-datagram found it: 1008.
	wait_for 30 "MTU 994 on $tun" tun_mtu_is 994 || true
	check "$tun follows the device's MTU on reattach ($(tun_mtu), want 994)" tun_mtu_is 994
	check "ncm-tun said so" grep -q "$tun: MTU 994 (was 1500), as the device that came back" \
		"$VM_OUT/ncm-tun.log"
	wait_for 30 "ping through $tun after the reattach" ping -c 1 -W 1 "$(peer_ip4)" ||
		{ cat "$VM_OUT/ncm-tun.log"; fail "no path through $tun after the reattach"; }
	check "pings of the new MTU (994-byte packets) reach the peer" \
		ping -c 3 -W 2 -s $((994 - 28)) "$(peer_ip4)"
	kill -TERM "$tun_pid"
	wait "$tun_pid" || fail "ncm-tun exited $?"
	cat "$VM_OUT/ncm-tun.log"
	ffs_gadget_stop
	;;
*)
	fail "unknown VM_FFS_TEST '$test_case'"
	;;
esac
vm_info
