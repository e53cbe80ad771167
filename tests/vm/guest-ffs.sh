#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-ffs.sh: libncm against ffs-ncm, the programmable device; VM_FFS_TEST picks the case.
# Cases (tests/vm/README.md, "The programmable device (FunctionFS)"):
#   basic, apple, ntb16-only, format-refused, ntb32-only, divisors, max-datagrams, microcontroller, tinyusb,
#   notify-flood, no-mac, stall-in-once, stall-in-always, stall-intr, stall-out,
#   out-stuck, input-size, small-ntbs, max-datagram, persist-mtu, persist-backoff, hostile, replay, zlp, in-stuck,
#   intr-stall, notify-split, link-flap, intr-mps8, vanish, hold, apple-modes, apple-tun, apple-proxy,
#   crc-accept, crc-refuse, mac-desc, slow-ep0, max-datagram-differs,
#   segment-too-big, vanish-optional
#   (these through gadgetfs: gfs_gadget_setup)
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
	vmtest-driver frames "$@" >"$out" 2>&1 || {
		cat "$out"
		echo "--- ffs-ncm log so far"
		cat "$FFS_LOG"
		fail "ARP/NDP through ffs-ncm"
	}
	cat "$out"
	ok "ARP and NDP answered through ffs-ncm"
}

# tx N [options]: libncm sends N frames; the peer's TAP must count them all.
tx() {
	local n=$1 before after
	shift
	before=$(peer_run cat "/sys/class/net/$FFS_TAP/statistics/rx_packets")
	vmtest-driver tx -c "$n" -r "$rate" "$@" 2>&1 | tee "$VM_OUT/tx.txt"
	after=$(peer_run cat "/sys/class/net/$FFS_TAP/statistics/rx_packets")
	check_tx_counted $((after - before)) "$n" "$VM_OUT/tx.txt"
}

# persist_tun NAME: the basic device, and ncm-tun --persist on it as
# interface NAME ($tun, $tun_pid, log ncm-tun.log), once a ping passes.
persist_tun() {
	command -v ncm-tun >/dev/null || fail "ncm-tun is not on PATH (run-vm.sh --bin)"
	tun=$1
	setup --profile basic
	ncm-tun --device "serial=$VM_SERIAL" --name "$tun" --persist --ipv4 "$(host_ip4)/24" \
		>"$VM_OUT/ncm-tun.log" 2>&1 &
	tun_pid=$!
	wait_for 30 "ping through $tun" ping -c 1 -W 1 "$(peer_ip4)" ||
		{ cat "$VM_OUT/ncm-tun.log"; fail "no path through $tun"; }
}

# rx N [options]: the peer's stack sends N datagrams; libncm must see each once.
# With RX_UNTIL set, the final counters wait for vmtest-driver to print it.
# With RX_QUIESCE set, the device's odd transfers stop (HOSTILE_LINE says
# what libncm must have counted) before vmtest-driver prints its counters.
rx() {
	local n=$1 rc=0 mac wait=
	shift
	peer_run $IP link set dev "$FFS_TAP" txqueuelen $((n + 1000))
	# The last case's file must not answer the wait below before the shell
	# has truncated it for this one.
	rm -f "$VM_OUT/rx.txt" /run/rx-go
	[ -z "${RX_QUIESCE:-}" ] || wait="--wait-file /run/rx-go --allow-bad"
	[ -z "${RX_UNTIL:-}" ] || wait="--wait-file /run/rx-go"
	vmtest-driver rx -c "$n" -t 60 $wait "$@" >"$VM_OUT/rx.txt" 2>&1 &
	rxpid=$!
	wait_for 30 "libncm receiver ready" grep -q '^ready' "$VM_OUT/rx.txt" ||
		{ cat "$VM_OUT/rx.txt"; fail "vmtest-driver rx did not start"; }
	# No iMACAddress through f_fs: libncm's own MAC, which vmtest-driver
	# printed, and which its rx mode does not defend with ARP.
	mac=$(sed -n 's/^mac: //p' "$VM_OUT/rx.txt" | head -n 1)
	peer_run $IP neigh replace "$(host_ip4)" lladdr "$mac" dev "$FFS_TAP" nud permanent
	# RX_VLAN: through a VLAN on the peer's TAP, so each frame carries an
	# 802.1Q tag: 1518 bytes at a full MTU.
	if [ -n "${RX_VLAN:-}" ]; then
		peer_run $IP link add link "$FFS_TAP" name vl5 type vlan id 5
		peer_run $IP link set vl5 up
		peer_run $IP route replace "$(host_ip4)/32" dev vl5
		peer_run $IP neigh replace "$(host_ip4)" lladdr "$mac" dev vl5 nud permanent
	fi
	peer_run vmtest-driver peer-send -c "$n" -r "$rate" -s "${RX_SIZE:-64}"
	if [ -n "${RX_QUIESCE:-}" ]; then
		HOSTILE_LINE=$(hostile_expectations)
		echo "device: $HOSTILE_LINE"
		touch /run/rx-go
	fi
	# RX_UNTIL: a line libncm must have printed before the final counters.
	if [ -n "${RX_UNTIL:-}" ]; then
		wait_for 45 "'$RX_UNTIL' from vmtest-driver" grep -q "$RX_UNTIL" "$VM_OUT/rx.txt"
		touch /run/rx-go
	fi
	wait $rxpid || rc=$?
	[ -z "${RX_VLAN:-}" ] || peer_run $IP link del vl5
	cat "$VM_OUT/rx.txt"
	[ $rc = 0 ] || fail "libncm did not receive every frame exactly once"
	ok "received $n frames exactly once"
}

# ffs_holds: frames the holding gadget has held so far (SIGUSR1 summary).
ffs_holds() {
	local n
	n=$(grep -c 'summary:' "$FFS_LOG" || true)
	kill -USR1 "$FFS_PID"
	wait_for 10 "ffs-ncm's summary" sh -c "[ \$(grep -c 'summary:' '$FFS_LOG') -gt $n ]"
	grep 'summary:' "$FFS_LOG" | tail -n 1 | tr ' ' '\n' | sed -n 's/^holds=//p'
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

# failed_over FILE: the seconds libncm's give-up message says the failures took.
failed_over() { sed -n 's/.* in a row failed over \([0-9.]*\) s.*/\1/p' "$1" | tail -n 1; }
secs_in() { [ -n "$1" ] && awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# vanished_open REQ MS: the last driver run, during which the device
# vanished at REQ, failed within 5 s with NCM_ERROR_GONE's message and no
# sanitizer report; then the host dropped the device.
vanished_open() {
	check "$1: the open failed (status $DRIVER_RC) in $2 ms (<= 5000)" \
		sh -c "[ $DRIVER_RC = 1 ] && [ $2 -le 5000 ]"
	check "$1: the error says the device is gone" \
		grep -q '^FAIL: .* is gone: it was unplugged or reset; replug it' "$DRIVER_OUT"
	check "$1: no sanitizer report" sh -c "! grep -q -E 'Sanitizer|runtime error:' '$DRIVER_OUT'"
	wait_for "$VM_WAIT" "the host to drop it" usb_gone || fail "the device stayed"
}

check_closed() { # the driver exited 0 and its close took at most 5 s
	local ms
	ms=$(close_ms)
	check "vmtest-driver exited cleanly (status $DRIVER_RC)" [ "$DRIVER_RC" = 0 ]
	check "close finished in ${ms:-?} ms (<= 5000)" in_range "$ms" 0 5000
}

# ---- ncm-tun over ffs-ncm: the kernel's stack as the host's --------------

TUN=ncmf0
TUN_LOG=$VM_OUT/ncm-tun.log
TUN_PID=
tun_carrier() { host_carrier "$TUN"; }

tun_start() { # ncm-tun options: up, with carrier and a path to the peer
	ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" --ipv4 "$(host_ip4)/24" "$@" \
		>"$TUN_LOG" 2>&1 &
	TUN_PID=$!
	wait_for "$VM_WAIT" "interface $TUN" tun_iface || { cat "$TUN_LOG"; fail "ncm-tun made no $TUN"; }
	wait_for "$VM_WAIT" "carrier on $TUN" tun_carrier || { cat "$TUN_LOG"; fail "no carrier on $TUN"; }
	wait_for "$VM_WAIT" "reply from $(peer_ip4)" ping -c 1 -W 1 "$(peer_ip4)" ||
		{ cat "$TUN_LOG"; fail "no path through ncm-tun"; }
}

tun_stop() { # SIGTERM: exit 0 and no sanitizer report
	local rc=0
	kill -TERM "$TUN_PID"
	wait "$TUN_PID" || rc=$?
	TUN_PID=
	cat "$TUN_LOG"
	# Before the status: LeakSanitizer's own exit status would hide its report.
	check "no sanitizer report from ncm-tun" sh -c "! grep -q -E 'Sanitizer|runtime error:' '$TUN_LOG'"
	check "ncm-tun exited 0 on SIGTERM" [ "$rc" = 0 ]
}

tun_stats() { # SIGUSR1: ncm-tun prints its counters; returns once they are in the log
	local n
	n=$(grep -c 'usb rx:' "$TUN_LOG" || true)
	kill -USR1 "$TUN_PID"
	wait_for 10 "ncm-tun statistics" sh -c "[ \$(grep -c 'usb rx:' '$TUN_LOG') -gt $n ]"
}

# The last statistics block's count of reject NAME (0 when not printed),
# and the sum of all its rejects.
tun_reject() {
	awk -v r="$1" '/usb rx:/ { v = 0 } $1 == "rx" && $2 == "reject" && $3 == r { v = $4 }
		END { print v + 0 }' "$TUN_LOG"
}
tun_rejects_total() {
	awk '/usb rx:/ { v = 0 } $1 == "rx" && $2 == "reject" { v += $4 } END { print v + 0 }' "$TUN_LOG"
}
tun_bad_ntbs() { grep 'usb rx:' "$TUN_LOG" | tail -n 1 | sed -n 's/.* \([0-9]*\) bad NTBs.*/\1/p'; }

# tcp_verified DIR BYTES: a TCP stream whose every byte the receiver checks
# (vmtest-driver tcp-send/-recv; iperf3 -F corrupts files over slow links).
tcp_verified() {
	local dir=$1 bytes=$2 out=$VM_OUT/tcp-$1.txt rpid rc=0
	rm -f "$out"
	if [ "$dir" = up ]; then
		peer_run vmtest-driver tcp-recv --port 5401 --bytes "$bytes" >"$out" 2>&1 &
		rpid=$!
		wait_for "$VM_WAIT" "receiver in $PEER_NS" peer_listening 5401 || fail "no receiver"
		timeout 90 vmtest-driver tcp-send --to "$(peer_ip4)" --port 5401 --bytes "$bytes" ||
			fail "tcp $dir: sending failed"
	else
		vmtest-driver tcp-recv --port 5402 --bytes "$bytes" >"$out" 2>&1 &
		rpid=$!
		wait_for "$VM_WAIT" "receiver on the host" grep -q '^listening' "$out" || fail "no receiver"
		timeout 90 $IP netns exec "$PEER_NS" vmtest-driver tcp-send --to "$(host_ip4)" \
			--port 5402 --bytes "$bytes" || fail "tcp $dir: sending failed"
	fi
	wait "$rpid" || rc=$?
	cat "$out"
	check "tcp $dir: $bytes bytes, each as sent" [ "$rc" = 0 ]
}

iperf3_run() { # DIR: 3 s of iperf3 (TCP), the receiver got data
	local flag= json=$VM_OUT/iperf3-$1.json
	[ "$1" = down ] && flag=-R
	timeout 60 iperf3 -c "$(peer_ip4)" -t 3 -J $flag >"$json" || fail "iperf3 $1 failed"
	echo "iperf3 $1: $(iperf3_mbits "$json") Mbit/s"
	check "iperf3 $1 moved data" [ "$(iperf3_mbits "$json")" -gt 0 ]
}

# ffs-ncm stops its crafted transfers (SIGUSR2) and prints what a host
# parsing as libncm does must have counted: "hostile: ... expect NAME=N ...".
hostile_expectations() {
	local n
	n=$(grep -c 'crafted IN transfers stopped' "$FFS_LOG" || true)
	kill -USR2 "$FFS_PID"
	wait_for 10 "ffs-ncm stopping its crafted NTBs" \
		sh -c "[ \$(grep -c 'crafted IN transfers stopped' '$FFS_LOG') -gt $n ]"
	grep 'hostile: ' "$FFS_LOG" | tail -n 1
}

# driver_counted_as_expected FILE: vmtest-driver's last counters hold
# HOSTILE_LINE's expectations: each reason, nothing else, the bad NTBs.
driver_counted_as_expected() {
	local line kv want=0 got total
	line=$(grep '^rejects:' "$1" | tail -n 1)
	for kv in ${HOSTILE_LINE#* expect }; do
		[ "$kv" != none ] || continue
		got=$(echo "$line" | tr ' ' '\n' | sed -n "s/^${kv%%=*}=//p")
		[ "${got:-0}" = "${kv#*=}" ] || return 1
		want=$((want + ${kv#*=}))
	done
	total=$(echo "$line" | tr ' ' '\n' | awk -F= 'NF == 2 { s += $2 } END { print s + 0 }')
	[ "$total" = "$want" ] &&
		[ "$(stat_of "$1" rx_bad_ntbs)" = "$(echo "$HOSTILE_LINE" | sed -n 's/.* bad=\([0-9]*\).*/\1/p')" ]
}

# HOSTILE_LINE's expectations, as ncm-tun counted them: each reason, the
# total (nothing else rejected) and the bad NTBs.
tun_counted_as_expected() {
	local kv want=0
	tun_stats
	for kv in ${HOSTILE_LINE#* expect }; do
		[ "$(tun_reject "${kv%%=*}")" = "${kv#*=}" ] || return 1
		want=$((want + ${kv#*=}))
	done
	[ "$(tun_rejects_total)" = "$want" ] &&
		[ "$(tun_bad_ntbs)" = "$(echo "$HOSTILE_LINE" | sed -n 's/.* bad=\([0-9]*\).*/\1/p')" ]
}

# hostile_sent_all [replay]: the device has crafted one NTB of each of the
# 23 classes (with "replay": sent every file); asks for its counters (SIGUSR1).
hostile_sent_all() {
	local n
	n=$(grep -c 'summary:' "$FFS_LOG" || true)
	kill -USR1 "$FFS_PID"
	wait_for 10 "ffs-ncm's counters" \
		sh -c "[ \$(grep -c 'summary:' '$FFS_LOG') -gt $n ]" || return 1
	if [ "${1:-}" = replay ]; then
		grep '^ffs-ncm: replay: [0-9]* files' "$FFS_LOG" | tail -n 1 | grep -q ', 0 never sent'
	else
		[ "$(grep 'hostile: ' "$FFS_LOG" | tail -n 1 |
			sed -n 's/.*crafted=\([0-9]*\).*/\1/p')" -ge 23 ]
	fi
}

# hostile_round NTB [ffs-ncm options]: ncm-tun over a device that crafts
# one IN transfer in 10 (or replays files in their place); ping and
# checksummed TCP both ways, iperf3 too for the generated classes over
# NTB16; then every reject as predicted.
hostile_round() {
	local fmt=$1 opt=
	shift
	[ "$fmt" = 32 ] && opt=--ntb32
	log "== crafted NTBs, NTB$fmt $*"
	setup --hostile-one-in 10 "$@"
	tun_start $opt
	check "NTB$fmt: ping x20 answered" ping -c 20 -i 0.2 -W 2 "$(peer_ip4)"
	tcp_verified down 2097152
	tcp_verified up 2097152
	if [ "$fmt" = 16 ] && [ $# = 0 ]; then
		peer_iperf3_server
		iperf3_run down
		iperf3_run up
	fi
	# A slow host gets more frames per IN NTB, so fewer transfers (one in
	# 10 crafted) than the traffic above makes on an idle one: more of it
	# until every class (or file) went out; the checks below still say so.
	# The 29 files of a replay need 290 IN transfers: a busy host made
	# fewer than that from 8 MiB over NTB32.
	extra=0
	while [ $extra -lt 24 ] && ! hostile_sent_all ${1:+replay}; do
		extra=$((extra + 1))
		log "NTB$fmt: not every crafted transfer went out yet: 1 MiB more down ($extra)"
		tcp_verified down 1048576
	done
	HOSTILE_LINE=$(hostile_expectations)
	echo "device: $HOSTILE_LINE"
	crafted=$(echo "$HOSTILE_LINE" | sed -n 's/.*crafted=\([0-9]*\).*/\1/p')
	if [ $# = 0 ]; then
		# Classes go in turn: 23 crafted NTBs are one of each.
		check "NTB$fmt: the device sent every crafted class ($crafted NTBs)" [ "${crafted:-0}" -ge 23 ]
	else
		check "NTB$fmt: the device sent every file ($crafted transfers)" \
			grep -q '^ffs-ncm: replay: [0-9]* files, 0 never sent' "$FFS_LOG"
	fi
	if ! wait_for 10 "libncm's counts" tun_counted_as_expected; then
		grep -A30 'usb rx:' "$TUN_LOG" | tail -n 30
		fail "NTB$fmt: libncm's rejects differ from the device's crafting"
	fi
	ok "NTB$fmt: every crafted NTB counted by reason, as predicted ($(tun_bad_ntbs) bad NTBs)"
	grep 'rx reject' "$TUN_LOG" | tail -n 20
	tun_stop
	ffs_gadget_teardown
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
	check "libncm's function info says: no interrupt endpoint" \
		grep -q '^interrupt endpoint: none$' "$VM_OUT/frames.txt"
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
format-refused)
	# Both formats listed, but SET_NTB_FORMAT STALLed (either way): the
	# open goes on in NTB16, the format the device keeps, with a warning
	# (asked for NTB32 or not); frames flow both ways, every host NTB NTB16.
	n=${VM_COUNT:-2000}
	setup --refuse-ntb-format
	frames frames.txt --ntb32
	check "negotiated NTB16" grep -q 'negotiated: NTB16' "$VM_OUT/frames.txt"
	check "the refusal was said" \
		grep -q 'refused SET_NTB_FORMAT (NTB32): using NTB16' "$VM_OUT/frames.txt"
	frames frames16.txt
	check "asked for NTB16, refused too: NTB16" grep -q 'negotiated: NTB16' "$VM_OUT/frames16.txt"
	tx "$n" --ntb32
	rx "$n" --ntb32
	ffs_gadget_stop
	check "the device refused each SET_NTB_FORMAT" grep -q 'refusing SET_NTB_FORMAT NTB32' "$FFS_LOG"
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
microcontroller)
	# A microcontroller's NCM (Zephyr's, TinyUSB's with one datagram per
	# NTB): full speed, 64-byte packets, NTBs of 3200 bytes each way,
	# NTB16 only, one datagram per OUT NTB. Frames both ways, every host
	# NTB within the rules (ffs-ncm's verdict), and the OUT queue bounded
	# by the bus: 16 ms of 12 Mbit/s (24000 bytes), not 1 MiB.
	n=${VM_COUNT:-1000}
	export VM_GADGET_MAX_SPEED=full-speed
	setup --full-speed --profile ntb16-only --in-max 3200 --out-max 3200 --out-max-datagrams 1
	unset VM_GADGET_MAX_SPEED
	check "the device runs at full speed" [ "$(usb_speed)" = 12 ]
	frames frames.txt
	tx "$n"
	check "libncm's OUT queue is 16 ms of the bus ($(stat_of "$VM_OUT/tx.txt" tx_queue_limit))" \
		[ "$(stat_of "$VM_OUT/tx.txt" tx_queue_limit)" = 24000 ]
	# A transfer of several NTBs would be most of that queue.
	check "one NTB per OUT transfer ($(stat_of "$VM_OUT/tx.txt" tx_ntbs) NTBs)" \
		[ "$(stat_of "$VM_OUT/tx.txt" tx_transfers)" = "$(stat_of "$VM_OUT/tx.txt" tx_ntbs)" ]
	rx "$n"
	ffs_gadget_teardown
	check "one datagram per OUT NTB: at least $n NTBs" [ "$(ffs_stat ntbs_out)" -ge "$n" ]
	check "the device checked at least $n datagrams" [ "$(ffs_stat datagrams_out)" -ge "$n" ]
	check "no OUT NTB past 3200 bytes ($(ffs_stat max_ntb_out))" [ "$(ffs_stat max_ntb_out)" -le 3200 ]
	;;
tinyusb)
	# TinyUSB's NCM (its 2024 ncm_device.c) on a full-speed chip, as on an
	# RP2040 or an ESP32-S2/S3: what microcontroller) leaves out. It STALLs
	# every class request but GET_NTB_PARAMETERS (SET_NTB_INPUT_SIZE too),
	# offers no optional request (bmNetworkCapabilities 0), puts the IN
	# NDP first with a fixed table for 8 datagrams, takes 6 datagrams per
	# OUT NTB of up to 3200 bytes at divisor 1, and sends the speed (12
	# Mbit/s) before the link, once after a bus reset: the opens after the
	# first (tx, rx) hear no link state at all.
	n=${VM_COUNT:-1000}
	export VM_GADGET_MAX_SPEED=full-speed
	setup --profile tinyusb
	unset VM_GADGET_MAX_SPEED
	check "the device runs at full speed" [ "$(usb_speed)" = 12 ]
	frames frames.txt
	# cdc_ncm had the function first and heard the notifications: libncm
	# hears none, and takes the link as up 2 s after its start.
	driver link.txt 30 link --links 1 -t 10
	check "libncm takes the link as up though the device never says so (status $DRIVER_RC)" \
		sh -c "[ $DRIVER_RC = 0 ] && grep -q 'event: link up' '$VM_OUT/link.txt'"
	check "... and says why" grep -q 'sent no NETWORK_CONNECTION in the 2 s since the start' \
		"$VM_OUT/link.txt"
	tx "$n"
	rx "$n"
	# What a user runs: ncm-tun on the device, which says nothing of its
	# link to this (fifth) open; the interface gets its carrier all the same.
	tun_start
	check "ncm-tun's interface has its link up" grep -q "$TUN: link up" "$TUN_LOG"
	tun_stop
	stalled=$(grep -c 'stalling request 0x21/0x86 ' "$FFS_LOG" || true)
	others=$(grep 'stalling request' "$FFS_LOG" | grep -vc 'stalling request 0x21/0x86 ' || true)
	silent=$(grep -c 'no notification (--notify-once)' "$FFS_LOG" || true)
	ffs_gadget_teardown
	check "libncm went on past $stalled STALLed SET_NTB_INPUT_SIZEs, one per open" [ "$stalled" -ge 5 ]
	# With caps 0 and NTB16 alone there is nothing else to ask.
	check "libncm sent no other request the device does not offer ($others STALLed)" [ "$others" = 0 ]
	check "the opens after the first heard no notification ($silent)" [ "$silent" -ge 4 ]
	check "several datagrams per OUT NTB ($(ffs_stat datagrams_out) in $(ffs_stat ntbs_out) NTBs)" \
		[ "$(ffs_stat datagrams_out)" -gt "$(ffs_stat ntbs_out)" ]
	check "several datagrams per IN NTB ($(ffs_stat datagrams_in) in $(ffs_stat ntbs_in) NTBs)" \
		[ "$(ffs_stat datagrams_in)" -gt "$(ffs_stat ntbs_in)" ]
	check "no OUT NTB past 3200 bytes ($(ffs_stat max_ntb_out))" [ "$(ffs_stat max_ntb_out)" -le 3200 ]
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
	# clear: libncm retries in rounds of growing delay (1 ms doubling to
	# 128 ms, ncm-ntb-retry.h), and after 64 failed transfers in a row
	# stops receiving and says so through NcmDevice::error, with the time
	# the failures took; the process and close still end.
	setup --stall-in-always 2
	# 16 transfers in flight: they fail together, in few rounds; the
	# report must still come in bounded time.
	driver watch.txt 60 watch -t 30
	secs=$(failed_over "$DRIVER_OUT")
	check "NcmDevice::error: receiving stopped after 64 failures (over ${secs:-?} s)" grep -q \
		'^event: error: receiving stopped: 64 bulk-IN transfers in a row failed over [0-9.]* s (the last: a STALL)' \
		"$DRIVER_OUT"
	check "reported within 15 s of the first failure (${secs:-?} s)" secs_in "$secs" 0 15
	check_closed
	check "libncm counted the stalls" [ "$(stat_of "$DRIVER_OUT" rx_stalls)" -ge 64 ]
	# One transfer: each failure is a round of its own, so the 64 are
	# spread over at least the schedule's 7.295 s (without the backoff:
	# 64 clears back to back, well under 2 s).
	driver watch1.txt 60 watch -t 30 --rx-transfers 1
	secs=$(failed_over "$DRIVER_OUT")
	check "one transfer: 64 failures over ${secs:-?} s (>= 7.29, <= 15)" secs_in "$secs" 7.29 15
	check_closed
	check "one transfer: exactly 64 stalls ($(stat_of "$DRIVER_OUT" rx_stalls))" \
		[ "$(stat_of "$DRIVER_OUT" rx_stalls)" = 64 ]
	ffs_gadget_stop
	check "the device halted bulk IN again and again" [ "$(ffs_stat stalls)" -ge 2 ]
	;;
stall-intr)
	# After its first notifications the device keeps the interrupt
	# endpoint halted: libncm retries in rounds of growing delay and gives
	# the pipe up after 64 failures in a row, spread over at least the
	# schedule's 7.295 s (no spin), with a warning, and no more; the link
	# stays as it was reported and data flows both ways meanwhile.
	n=${VM_COUNT:-2000}
	setup --stall-intr
	RX_UNTIL='interrupt transfers in a row failed' rx "$n"
	check "libncm warned that it gave the interrupt pipe up" \
		grep -q '64 interrupt transfers in a row failed over [0-9.]* s: no more link notifications' "$VM_OUT/rx.txt"
	secs=$(failed_over "$VM_OUT/rx.txt")
	check "64 interrupt failures over ${secs:-?} s (>= 7.29, <= 15)" secs_in "$secs" 7.29 15
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
	# dwNtbInMaxSize 1 MiB (NTB32). libncm asks for 65536: accepted, then
	# refused, then ignored (GET_NTB_INPUT_SIZE says 1 MiB). Accepted, the
	# device keeps to 64 KiB and libncm says nothing; else its receive
	# buffers follow the device's 1 MiB, it warns, and 1472-byte datagrams
	# gathered into NTBs over 64 KiB arrive exactly once without an overflow.
	# Fails without the depth budget (ncm-usb-rx.c): "starting to receive ...
	# failed: Insufficient memory".
	n=${VM_COUNT:-2000}
	for how in accepted refused ignored; do
		log "== dwNtbInMaxSize 1 MiB, SET_NTB_INPUT_SIZE $how"
		opt=
		[ "$how" = refused ] && opt=--refuse-input-size
		[ "$how" = ignored ] && opt=--ignore-input-size
		setup --in-max 1048576 $opt --in-batch 100
		RX_SIZE=1472 rx "$n" --ntb32
		if [ "$how" = accepted ]; then
			check "libncm did not warn" sh -c "! grep -q 'an NTB input size' '$VM_OUT/rx.txt'"
		else
			check "libncm warned ($how)" grep -q \
				"$how an NTB input size of 65536 and uses 1048576: receive buffers follow it" \
				"$VM_OUT/rx.txt"
			# 16 in flight would need 32 MiB of usbfs's 16 MiB.
			check "libncm keeps 2 transfers of 1 MiB in flight, and says so" grep -q \
				'2 receive transfers of 1048576 bytes in flight, not 16' "$VM_OUT/rx.txt"
		fi
		check "no overflow" [ "$(stat_of "$VM_OUT/rx.txt" rx_overflows)" = 0 ]
		ffs_gadget_teardown
		echo "largest IN NTB: $(ffs_stat max_ntb_in) bytes"
		if [ "$how" = accepted ]; then
			check "the device kept to 64 KiB" [ "$(ffs_stat max_ntb_in)" -le 65536 ]
		else
			check "the device sent NTBs over 64 KiB" [ "$(ffs_stat max_ntb_in)" -gt 65536 ]
		fi
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
small-ntbs)
	# NTB sizes under the spec's 2048, which Linux takes. dwNtbInMaxSize
	# 1600 and dwNtbOutMaxSize 1600: libncm opens with a warning, asks
	# for an input size of 1600 (never more than the device's own),
	# receives into 2048 bytes and sends NTBs of at most 1600; frames of
	# 1514 bytes pass both ways. Then dwNtbOutMaxSize 0 (not said): OUT
	# NTBs of at most 2048 bytes, one full frame each.
	n=${VM_COUNT:-1000}
	setup --in-max 1600 --out-max 1600
	frames frames.txt
	check "libncm warned about the sizes" grep -q \
		"gives NTB sizes under the spec's minimum of 2048 (dwNtbInMaxSize 1600, dwNtbOutMaxSize 1600): libncm receives into 2048 bytes and sends NTBs of at most 1600" \
		"$VM_OUT/frames.txt"
	check "the MTU stays 1500" grep -q '^mtu: 1500$' "$VM_OUT/frames.txt"
	tx "$n" --max-size
	check "frames of 1514 bytes sent" grep -q "^tx: frames of 1514 bytes" "$VM_OUT/tx.txt"
	RX_SIZE=1472 rx "$n"
	ffs_gadget_teardown
	check "SET_NTB_INPUT_SIZE 1600, the device's own" grep -q 'SET_NTB_INPUT_SIZE 1600$' "$FFS_LOG"
	check "no host NTB over 1600 (largest $(ffs_stat max_ntb_out))" \
		[ "$(ffs_stat max_ntb_out)" -le 1600 ]
	setup --out-max 0
	frames frames0.txt
	check "libncm warned about dwNtbOutMaxSize 0" grep -q \
		"(dwNtbInMaxSize 16384, dwNtbOutMaxSize 0): libncm receives into 16384 bytes and sends NTBs of at most 2048" \
		"$VM_OUT/frames0.txt"
	tx "$n" --max-size
	ffs_gadget_teardown
	check "host NTBs of 1514-byte frames, none over 2048 (largest $(ffs_stat max_ntb_out))" \
		sh -c "[ $(ffs_stat max_ntb_out) -gt 1514 ] && [ $(ffs_stat max_ntb_out) -le 2048 ]"
	# OUT NTBs of 128 bytes with datagrams on 64-byte boundaries hold no
	# IP packet: the open fails and says so (it gave an MTU of 4 GB).
	setup --out-max 128 --out-ndp 64/0/64
	driver frames128.txt 30 frames
	check "the open failed (status $DRIVER_RC)" [ "$DRIVER_RC" = 1 ]
	check "... saying the OUT NTBs hold no IP packet" grep -q \
		"its OUT NTBs (128 bytes, NTB16) hold frames of at most [0-9]* bytes, too few for any IP packet" \
		"$DRIVER_OUT"
	ffs_gadget_stop
	;;
persist-mtu)
	# ncm-tun --persist over a device whose second plug carries smaller
	# OUT NTBs (2048 bytes, datagrams on 1024-byte boundaries): the
	# interface follows the MTU libncm derives (not only the MAC), and
	# frames of the new maximum reach the peer within the device's rules.
	persist_tun ncmp0
	tun_mtu() { cat "/sys/class/net/$tun/mtu" 2>/dev/null; }
	tun_mtu_is() { [ "$(tun_mtu)" = "$1" ]; }
	check "MTU 1500 on $tun" tun_mtu_is 1500
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
persist-backoff)
	# ncm-tun --persist over a device that comes back and then refuses
	# GET_NTB_PARAMETERS three times: every open fails while it stays
	# plugged in. The opens come after 2, 4 and 8 s, not every 2 s (each
	# may take an interface from a kernel driver and give it back); the
	# fourth one succeeds and traffic flows.
	persist_tun ncmb0
	ffs_gadget_teardown
	setup --profile basic --refuse-params 3
	wait_for 60 "ping through $tun after the refusals" ping -c 1 -W 1 "$(peer_ip4)" ||
		{ cat "$VM_OUT/ncm-tun.log" "$FFS_LOG"; fail "no path through $tun after the refusals"; }
	cat "$VM_OUT/ncm-tun.log"
	check "the device refused three opens" grep -q "refusing GET_NTB_PARAMETERS (3 of 3)" "$FFS_LOG"
	check "the device answered the fourth" \
		[ "$(grep -c 'refusing GET_NTB_PARAMETERS' "$FFS_LOG")" = 3 ]
	# GLib stamps each message (HH:MM:SS.mmm): the failed opens' times, in ms.
	grep 'reattach .*GET_NTB_PARAMETERS' "$VM_OUT/ncm-tun.log" |
		sed -n 's/.*Message: \([0-9]*\):\([0-9]*\):\([0-9.]*\): .*(trying again in \([0-9]*\) s.*/\1 \2 \3 \4/p' |
		awk '{ printf "%d %d\n", (($1 * 60 + $2) * 60 + $3) * 1000, $4 }' >"$VM_OUT/reattach.txt"
	cat "$VM_OUT/reattach.txt"
	check "three failed opens logged" [ "$(wc -l <"$VM_OUT/reattach.txt")" = 3 ]
	# 2, 4, 8 s; an open of the arrival that failed before it asked (the
	# device still settling) would shift them: each is twice the last.
	check "each says when the next comes, twice the wait before: $(awk '{ printf "%s ", $2 }' "$VM_OUT/reattach.txt")" \
		awk 'NR == 1 && $2 < 2 { bad = 1 } NR > 1 && $2 != 2 * w { bad = 1 } { w = $2 }
		     END { exit bad || NR != 3 }' "$VM_OUT/reattach.txt"
	# Each gap is the wait announced before it (less the open's own time,
	# which comes before the message), at most one 2 s retry tick more:
	# without the back-off the second gap is 2 s as well.
	check "each failed open came the announced 2 and 4 s after the one before (+2.5 s)" \
		awk 'NR > 1 && ($1 - t < w * 1000 - 500 || $1 - t > w * 1000 + 2500) { bad = 1 }
		     { t = $1; w = $2 } END { exit bad }' "$VM_OUT/reattach.txt"
	check "ncm-tun ran on after the failed opens" kill -0 "$tun_pid"
	kill -TERM "$tun_pid"
	wait "$tun_pid" || fail "ncm-tun exited $?"
	ffs_gadget_stop
	;;
hostile)
	# One IN transfer in 10 is crafted and malformed (ffs-ncm-hostile.c:
	# bad signatures, lengths past the block, NDP index out of range,
	# unaligned, zero or looping, the CVE-2026-23447/23448 NDP overrun,
	# datagrams past the end, short, long or overlapping, the other NTB
	# format, sequence jumps, a zero-length entry, a truncated NTH), between
	# valid NTBs. Valid traffic flows (ping; TCP streams checked byte by
	# byte each way; iperf3) and libncm counts every reject by reason as the
	# device predicts.
	hostile_round 16
	hostile_round 32
	;;
replay)
	# As hostile, with the NTB parser's fuzz corpus (seeds and the
	# regressions fuzzing found, NTB16 and NTB32: /corpus/ntb-parse, each
	# file a 5-byte parser config then the transfer) sent in the crafted
	# transfers' place: every file reaches libncm whole, in one transfer,
	# and is counted as libncm's parser counts it alone, while ping and
	# TCP go on.
	hostile_round 16 --replay /corpus/ntb-parse --replay-skip 5
	hostile_round 32 --replay /corpus/ntb-parse --replay-skip 5
	;;
zlp)
	# A zero-length packet after every IN NTB, and after one NTB in 7 a
	# runt of 1 to 11 bytes (an NTH cut short). libncm takes the ZLPs for
	# USB framing (no NTB, no reject), counts each runt as one truncated
	# NTB and nothing else, and receives every frame exactly once.
	n=${VM_COUNT:-2000}
	setup --zlp-after-ntb --runt-one-in 7
	RX_QUIESCE=1 rx "$n"
	if ! driver_counted_as_expected "$VM_OUT/rx.txt"; then
		grep -E '^(stats|rejects):' "$VM_OUT/rx.txt"
		fail "libncm's rejects differ from the runts the device sent"
	fi
	ok "every runt counted as truncated, no ZLP counted"
	ffs_gadget_stop
	zlps=$(ffs_stat zlps) runts=$(ffs_stat runts) ntbs=$(stat_of "$VM_OUT/rx.txt" rx_ntbs)
	echo "device: $zlps ZLPs, $runts runts; libncm: $ntbs NTBs"
	check "the device sent ZLPs ($zlps) and runts ($runts)" \
		sh -c "[ $zlps -ge 50 ] && [ $runts -ge 5 ]"
	# One ZLP followed each NTB: counted, they would double the NTBs.
	check "no ZLP became an NTB ($ntbs NTBs <= $zlps NTBs with ZLPs + $runts runts)" \
		[ "$ntbs" -le $((zlps + runts)) ]
	# No ZLP at all where one is due: with --join-ntbs an IN transfer of
	# several frames is two NTBs run together, the first a whole number of
	# packets long, as from a device that leaves out its ZLPs. libncm
	# parses both: every frame once, nothing rejected, each join counted.
	ffs_gadget_teardown
	setup --join-ntbs --in-batch 5
	rx "$n"
	ffs_gadget_stop
	joins=$(ffs_stat joins) joined=$(stat_of "$VM_OUT/rx.txt" rx_joined_ntbs)
	echo "device: $joins transfers of two NTBs; libncm: $joined joined NTBs"
	check "the device ran NTBs together ($joins times)" [ "$joins" -ge 20 ]
	check "libncm counted them ($joined, at most $joins: later ones came after it stopped)" \
		sh -c "[ $joined -ge 20 ] && [ $joined -le $joins ]"
	check "libncm rejected nothing" [ "$(stat_of "$VM_OUT/rx.txt" rx_bad_ntbs)" = 0 ]
	;;
in-stuck)
	# After 5 IN NTBs of libncm's session the device completes no IN
	# transfer again. vmtest-driver asks for the peer by ARP every 100 ms:
	# after 10 s of those going unanswered, NcmDevice::error says receiving
	# stopped; the process and close still end.
	setup --in-stop-after 5
	driver watch.txt 60 watch -t 40
	check "NcmDevice::error: receiving stopped" grep -q \
		"^event: error: receiving stopped: [0-9a-f]*:[0-9a-f]* has sent nothing for 10 s while the host asked for $(peer_ip4) [0-9]* times (ARP)" \
		"$DRIVER_OUT"
	ms=$(sed -n 's/^watch: error signal after \([0-9]*\) ms$/\1/p' "$DRIVER_OUT")
	check "it came 10 s after IN stopped (${ms:-?} ms after open)" in_range "$ms" 10000 25000
	check_closed
	ffs_gadget_teardown
	check "the device had stopped IN" grep -q 'bulk IN stopped after 5 NTBs' "$FFS_LOG"
	# The same, with the link down (NETWORK_CONNECTION 0) from 1 s to 16 s
	# in: a device with no link has nothing to send, so the silence counts
	# only from the link's return, and the error comes 10 s after that.
	setup --in-stop-after 5 --link-flap 1 --link-flap-ms 15000
	driver watch-down.txt 60 watch -t 45
	check "NcmDevice::error: receiving stopped, after the link came back" grep -q \
		"^event: error: receiving stopped: [0-9a-f]*:[0-9a-f]* has sent nothing for 10 s" \
		"$DRIVER_OUT"
	ms=$(sed -n 's/^watch: error signal after \([0-9]*\) ms$/\1/p' "$DRIVER_OUT")
	check "not while the link was down: ${ms:-?} ms after open (>= 25000)" in_range "$ms" 25000 40000
	check_closed
	ffs_gadget_stop
	;;
intr-stall)
	# 1 s into libncm's session the device halts its interrupt endpoint,
	# then flaps the link twice: libncm clears the halt and hears every
	# change (up at open, down, up, down, up); traffic flows after.
	setup --stall-intr-once --link-flap 2
	driver link.txt 60 link --links 5 -t 30
	check "libncm heard every link change" [ "$DRIVER_RC" = 0 ]
	check "up at open, then two flaps, ending up" \
		grep -q '^link: 5 changes (3 up, 2 down), now up' "$DRIVER_OUT"
	check "ARP answered after the flaps" grep -q '^after: ARP answered' "$DRIVER_OUT"
	check "libncm met the stall" [ "$(stat_of "$DRIVER_OUT" intr_malformed)" -ge 1 ]
	check_closed
	ffs_gadget_stop
	check "the device halted its interrupt endpoint once" [ "$(ffs_stat stalls)" = 1 ]
	check "its notifications after the halt all went out" grep -q 'late notifications done' "$FFS_LOG"
	;;
notify-split)
	# CONNECTION_SPEED_CHANGE in two transfers, header then data: libncm
	# joins them into one speed change.
	setup --speed 100000000/20000000 --speed-split
	driver split.txt 60 link --links 1 --expect-speed 100000000/20000000 -t 20
	check "the split speed change arrived whole" [ "$DRIVER_RC" = 0 ]
	check "nothing was malformed" [ "$(stat_of "$DRIVER_OUT" intr_malformed)" = 0 ]
	ffs_gadget_teardown
	check "the device split it" grep -q 'sent in two transfers' "$FFS_LOG"
	# Notifications longer than their header says (a speed change, link
	# down, link up, each with 8 to 24 more bytes): the host's 16-byte
	# transfers cut them; libncm reads each header's own bytes, counts each
	# trailing piece as malformed, and the link follows the headers.
	setup --speed 200000000/30000000 --notify-overlong
	driver overlong.txt 60 link --links 3 --expect-speed 200000000/30000000 -t 20
	check "the overlong notifications were read by their headers" [ "$DRIVER_RC" = 0 ]
	check "the link followed them: down, then up" \
		grep -q '^link: 3 changes (2 up, 1 down), now up' "$DRIVER_OUT"
	malformed=$(stat_of "$DRIVER_OUT" intr_malformed)
	check "each trailing piece counted as malformed ($malformed)" [ "$malformed" = 3 ]
	ffs_gadget_stop
	;;
link-flap)
	# NETWORK_CONNECTION down and up 10 times, 400 ms each, under ncm-tun:
	# libncm posts each change, the TAP's carrier follows each one, and
	# traffic resumes after.
	setup --link-flap 10 --link-flap-ms 400
	tun_start
	wait_for 30 "the device's flaps" grep -q 'late notifications done' "$FFS_LOG" ||
		fail "the device did not finish flapping"
	wait_for 10 "carrier on $TUN" tun_carrier || fail "no carrier after the flaps"
	downs=$(grep -c "$TUN: link down" "$TUN_LOG" || true)
	changes=$(cat "/sys/class/net/$TUN/carrier_changes")
	echo "ncm-tun heard $downs link downs; $TUN's carrier changed $changes times"
	check "every down reached ncm-tun" [ "$downs" = 10 ]
	check "the carrier followed each change" [ "$changes" -ge 20 ]
	check "traffic resumed: ping x5" ping -c 5 -W 2 "$(peer_ip4)"
	tun_stop
	ffs_gadget_stop
	;;
intr-mps8)
	# An interrupt endpoint of 8-byte packets (full-speed style): each
	# 8-byte NETWORK_CONNECTION is one full packet, which ends no transfer
	# longer than 8 bytes; a speed change comes in two. The link up at the
	# start, a speed change, then down and up 3 times: each must reach
	# libncm when it is sent, and none may be cut or joined.
	setup --intr-mps 8 --speed 100000000/20000000 --link-flap 3 --link-flap-ms 300
	check "the interrupt endpoint's wMaxPacketSize is 8" sh -c \
		"od -An -tx1 -v '$USB_DEV/descriptors' | tr -s ' \n' '  ' | grep -q ' 07 05 81 03 08 00 '"
	driver mps8.txt 60 link --links 7 --expect-speed 100000000/20000000 -t 20
	check "every notification arrived" [ "$DRIVER_RC" = 0 ]
	check "the link followed them: up, then down and up 3 times" \
		grep -q '^link: 7 changes (4 up, 3 down), now up' "$DRIVER_OUT"
	check "nothing was malformed" [ "$(stat_of "$DRIVER_OUT" intr_malformed)" = 0 ]
	ffs_gadget_stop
	;;
vanish)
	# The device vanishes (ffs-ncm unbinds its UDC) while each class
	# request of libncm's open is pending: GET_NTB_PARAMETERS (0x80),
	# SET_NTB_FORMAT (0x84), SET_NTB_INPUT_SIZE (0x86), GET_NTB_INPUT_SIZE
	# (0x85). Each open fails within 5 s with NCM_ERROR_GONE's message, and
	# the process exits without a leak; after a replug the device opens.
	setup --udc-fd 9 --vanish-on 0x80,0x84,0x86,0x85
	for req in 0x80 0x84 0x86 0x85; do
		log "== vanishing during request $req"
		t0=$(uptime_cs)
		driver "open-$req.txt" 30 frames -t 5
		took=$(( ($(uptime_cs) - t0) * 10 ))
		check "$req: the device vanished during it" \
			grep -q "vanishing during request $req" "$FFS_LOG"
		vanished_open "$req" "$took"
		gadget_replug
	done
	frames after.txt
	ffs_gadget_stop
	;;
vanish-optional)
	# As vanish, for what a host sends only to a device with the CDC
	# functional descriptors, so through gadgetfs (caps 0x19: packet
	# filter, max datagram size, CRC mode; GET_MAX_DATAGRAM_SIZE answers
	# 1200, so libncm also sets it): the iMACAddress string (GET_DESCRIPTOR
	# 0x06 of string 1, read while libncm looks for NCM functions),
	# GET_MAX_DATAGRAM_SIZE (0x87), SET_MAX_DATAGRAM_SIZE (0x88),
	# SET_CRC_MODE (0x8a), SET_ETHERNET_PACKET_FILTER (0x43), in the order
	# libncm sends them. gadgetfs has no configfs gadget to unbind: ffs-ncm
	# pulls the UDC's soft_connect. Writing "connect" back did not revive
	# dummy_udc in the VM (every descriptor read failed with -71; its
	# udc_stop turns off the callbacks that only a bind turns on again), so
	# each request gets a fresh ffs-ncm, whose bind does. 0x88
	# carries data, which gadgetfs takes before ffs-ncm sees the request:
	# the device then vanishes during the request after it. gadgetfs may
	# drop that event (the host's next request came first): the device
	# did not see 0x88, and that open must succeed; up to 3 opens each.
	softc=/sys/class/udc/$VM_UDC/soft_connect
	for req in 0x06 0x87 0x88 0x8a 0x43; do
		log "== vanishing during request $req"
		gfs_gadget_setup --profile basic --caps 0x19 --max-datagram-reply 1200 \
			--udc-fd 9 --vanish-on "$req" 9>"$softc"
		host_use_userspace
		check "the host read an NCM functional descriptor with caps 0x19" sh -c \
			"od -An -tx1 -v '$USB_DEV/descriptors' | tr -s ' \n' '  ' | grep -q ' 06 24 1a 00 01 19 '"
		try=1
		while :; do
			t0=$(uptime_cs)
			driver "open-$req-$try.txt" 30 frames -t 5
			took=$(( ($(uptime_cs) - t0) * 10 ))
			! grep -q "vanishing during request $req" "$FFS_LOG" || break
			echo "$req: the device did not see it (open $try, status $DRIVER_RC)"
			check "$req: the open the device stayed through succeeded" [ "$DRIVER_RC" = 0 ]
			[ "$try" -lt 3 ] || fail "$req: the device never saw it in 3 opens"
			try=$((try + 1))
		done
		vanished_open "$req" "$took"
		gfs_gadget_teardown
		cp "$FFS_LOG" "$VM_OUT/ffs-ncm-$req.log"
	done
	;;
hold)
	# The holding gadget: frames toward the peer drain at 8 Mbit/s, and
	# one that arrives with more than 48 queued is held 1.5 s. ncm-bench's
	# 1 MB bursts host -> device over ncm-tun: unpaced, TCP outruns the
	# line and the bursts meet the holds; with --pace at 90% of the line
	# (7.2 Mbit/s) the queue stays short (an NTB or two) and next to none is held.
	# (256 KB bursts stay within the peer's first receive window, whose
	# ~40 frames are too close to what two paced NTBs queue.)
	setup --hold 48,1500,8000
	peer_run ncm-bench --server --bind "$(peer_ip4)" >"$VM_OUT/bench-server.log" 2>&1 &
	wait_for "$VM_WAIT" "ncm-bench server" peer_listening 5288 || fail "no ncm-bench server"
	path="ncm-tun=$(peer_ip4),ipv4=$(host_ip4)/24,dev=serial=$VM_SERIAL,name=$TUN"
	for pace in 0 7.2; do
		holds=$(ffs_holds)
		opt=
		[ "$pace" = 0 ] || opt="--pace $pace"
		timeout 120 ncm-bench --quick --tests burst_1m --path "$path" $opt \
			--json "$VM_OUT/burst-$pace.json" >"$VM_OUT/burst-$pace.txt" 2>&1 ||
			{ cat "$VM_OUT/burst-$pace.txt"; fail "ncm-bench (pace $pace) failed"; }
		cat "$VM_OUT/burst-$pace.txt"
		p50=$(sed -n 's/.*"completion_ms":{"p50":\([0-9]*\).*/\1/p' "$VM_OUT/burst-$pace.json")
		held=$(( $(ffs_holds) - holds ))
		echo "burst_1m, pace ${pace} Mbit/s: p50 ${p50:-?} ms, $held frames held"
		if [ "$pace" = 0 ]; then
			unpaced_p50=${p50:-0} unpaced_held=$held
		else
			paced_p50=${p50:-0} paced_held=$held
		fi
	done
	echo "burst_1m p50: unpaced $unpaced_p50 ms ($unpaced_held frames held), paced at 7.2 Mbit/s $paced_p50 ms ($paced_held held)"
	check "unpaced, the gadget held frames" [ "$unpaced_held" -gt 0 ]
	check "unpaced, the bursts waited out the hold (p50 $unpaced_p50 >= 2500 ms)" \
		[ "$unpaced_p50" -ge 2500 ]
	# A few frames may still be held when the device's drain thread, a
	# process in this guest, is descheduled (20 of 1804 in one local CI
	# run): the claim is that pacing keeps the queue short, so held
	# frames fall to a small fraction and no burst waits out a hold.
	check "paced, at most 1/20 of the unpaced holds ($paced_held against $unpaced_held)" \
		[ $((paced_held * 20)) -le "$unpaced_held" ]
	check "paced, no burst waited (p50 $paced_p50 < 2000 ms)" [ "$paced_p50" -lt 2000 ]
	ffs_gadget_stop
	;;
apple-modes)
	# An iPhone before the NCM mode switch: configurations 1-3 hold PTP and
	# usbmux, no NCM (Linux picks configuration 1, PTP being no vendor
	# class). libncm asks every Apple device for NCM: GET_MODE says 3:3:3:0,
	# so SET_MODE 3. The device comes back with configuration 5 holding
	# NCM (no interrupt endpoint) behind PTP and usbmux; libncm opens it
	# there (SET_CONFIGURATION 5) and ARP and NDP flow. Asked again, the
	# device says 5:3:3:0 and nothing more is sent.
	VM_VID=0x05ac VM_PID=0x12a8
	# f_fs renumbers interface descriptors, not the IAD: NCM is at 2 and 3.
	ffs_apple_setup --profile apple --iad-first 2
	host_use_userspace
	usb_interfaces | tee "$VM_OUT/interfaces-before.txt"
	check "before the switch: 3 configurations, no NCM" sh -c \
		"grep -q '^config=3 ' '$VM_OUT/interfaces-before.txt' &&
		 ! grep -q -e '^config=4 ' -e 'class=02 subclass=0d' '$VM_OUT/interfaces-before.txt'"
	vmtest-driver apple --switch-config -t 30 >"$VM_OUT/apple.txt" 2>&1 &
	pid=$!
	wait_for 30 "SET_MODE from libncm" grep -q 'SET_MODE 3' "$VM_OUT/ffs-apple.log" ||
		{ cat "$VM_OUT/apple.txt" "$VM_OUT/ffs-apple.log"; fail "libncm asked for no NCM mode"; }
	ffs_apple_switch
	rc=0
	wait "$pid" || rc=$?
	cat "$VM_OUT/apple.txt" "$VM_OUT/ffs-apple.log"
	usb_interfaces | tee "$VM_OUT/interfaces-after.txt"
	check "after it: NCM in configuration 5 of 5, behind PTP and usbmux" \
		grep -q '^config=5 iface=2 alt=0 class=02 subclass=0d' "$VM_OUT/interfaces-after.txt"
	check "libncm asked once (GET_MODE 3:3:3:0, SET_MODE 3)" sh -c \
		"grep -q 'GET_MODE: 3:3:3:0' '$VM_OUT/ffs-apple.log' &&
		 [ \$(grep -c 'SET_MODE 3:' '$VM_OUT/ffs-apple.log') = 1 ]"
	check "libncm opened NCM in configuration 5 and ARP/NDP flowed (status $rc)" sh -c \
		"[ $rc = 0 ] && grep -q '^apple: NCM function in configuration 5, interfaces 2 and 3' '$VM_OUT/apple.txt'"
	check "the host now uses configuration 5" [ "$(usb_active_config)" = 5 ]
	check "asked again, the device said 5:3:3:0 and nothing was sent" sh -c \
		"grep -q 'GET_MODE: 5:3:3:0' '$VM_OUT/ffs-apple.log' &&
		 grep -q '^apple: asked again, NCM mode requested of 0 device' '$VM_OUT/apple.txt'"
	ffs_gadget_stop
	;;
apple-tun)
	# The same iPhone, as a user meets it: one ncm-tun --apple-switch asks
	# for NCM, waits for the device to come back, opens NCM in configuration
	# 5 of 5 and carries IPv4 both ways.
	# Beside it, on a second bus, an Apple keyboard: the same vendor ID, no
	# mode switch (its gadget STALLs GET_MODE). It must be skipped, not keep
	# the phone from being asked (libusb lists it before the phone here).
	dummy_hcd_load hs 2
	modprobe usb_f_acm || fail "cannot load usb_f_acm"
	kbd=/sys/kernel/config/usb_gadget/applekbd
	VM_VID=0x05ac VM_PID=0x0267
	gadget_make "$kbd" applekbd-0001 "Apple keyboard (emulated)"
	mkdir "$kbd/functions/acm.0" "$kbd/configs/c.1"
	ln -s "$kbd/functions/acm.0" "$kbd/configs/c.1/acm.0"
	echo dummy_udc.1 >"$kbd/UDC" || fail "cannot bind the keyboard to dummy_udc.1"
	wait_for "$VM_WAIT" "the keyboard enumerated" usb_find_serial applekbd-0001 ||
		fail "the emulated keyboard did not enumerate"
	VM_PID=0x12a8
	ffs_apple_setup --profile apple --iad-first 2
	host_use_userspace
	# No --device: every Apple device is asked, the keyboard too.
	G_MESSAGES_DEBUG=ncm ncm-tun --apple-switch --persist \
		--name "$TUN" --ipv4 "$(host_ip4)/24" >"$TUN_LOG" 2>&1 &
	TUN_PID=$!
	wait_for 30 "SET_MODE from ncm-tun" grep -q 'SET_MODE 3' "$VM_OUT/ffs-apple.log" ||
		{ cat "$TUN_LOG" "$VM_OUT/ffs-apple.log"; fail "ncm-tun asked for no NCM mode"; }
	ffs_apple_switch
	wait_for "$VM_WAIT" "interface $TUN" tun_iface ||
		{ cat "$TUN_LOG"; fail "ncm-tun --apple-switch made no $TUN"; }
	wait_for "$VM_WAIT" "reply from $(peer_ip4)" ping -c 1 -W 1 "$(peer_ip4)" ||
		{ cat "$TUN_LOG"; fail "no path through ncm-tun --apple-switch"; }
	check "ping $(peer_ip4) x5 through ncm-tun --apple-switch" ping -c 5 -W 2 "$(peer_ip4)"
	check "ncm-tun said it waited for the switch" \
		grep -q 'asked 1 Apple device(s) for their NCM function' "$TUN_LOG"
	check "the host uses configuration 5, where NCM is" [ "$(usb_active_config)" = 5 ]
	check "ncm-tun asked once (SET_MODE 3)" [ "$(grep -c 'SET_MODE 3:' "$VM_OUT/ffs-apple.log")" = 1 ]
	check "the keyboard refused the request and was skipped" \
		grep -q 'Apple device 05ac:0267 skipped' "$TUN_LOG"
	# Plugged in again, the phone comes back without NCM: ncm-tun --persist
	# asks again while it is away, and takes NCM when it reappears.
	ffs_apple_unswitch
	wait_for 30 "SET_MODE asked again" \
		sh -c "[ \$(grep -c 'SET_MODE 3:' '$VM_OUT/ffs-apple.log') -ge 2 ]" ||
		{ cat "$TUN_LOG" "$VM_OUT/ffs-apple.log"; fail "ncm-tun --persist did not ask again"; }
	ffs_apple_switch
	wait_for "$VM_WAIT" "reply from $(peer_ip4) after the replug" ping -c 1 -W 1 "$(peer_ip4)" ||
		{ cat "$TUN_LOG"; fail "no path through ncm-tun after the phone came back"; }
	check "ping $(peer_ip4) x3 after the phone came back" ping -c 3 -W 2 "$(peer_ip4)"
	check "ncm-tun said it asked again" \
		grep -q 'asked 1 Apple device(s) for their NCM function again' "$TUN_LOG"
	tun_stop
	# The device back as before the switch, which this time never comes: a
	# SIGINT during ncm-tun's wait (up to 15 s) stops it at once, status 0.
	# Its --device names this phone by serial: it is asked (it waits).
	ffs_apple_unswitch
	TUN_LOG=$VM_OUT/ncm-tun-wait.log
	ncm-tun --apple-switch --device "serial=$VM_SERIAL" --name "$TUN" >"$TUN_LOG" 2>&1 &
	TUN_PID=$!
	wait_for 30 "ncm-tun waiting" grep -q 'waiting for it to appear' "$TUN_LOG" ||
		{ cat "$TUN_LOG"; fail "ncm-tun did not wait for the switch"; }
	t0=$(date +%s)
	kill -INT "$TUN_PID"
	rc=0
	wait "$TUN_PID" || rc=$?
	t1=$(date +%s)
	cat "$TUN_LOG"
	check "SIGINT during the wait: exit 0 in $((t1 - t0)) s (<= 3)" \
		sh -c "[ $rc = 0 ] && [ $((t1 - t0)) -le 3 ]"
	check "... saying it was stopped while waiting" grep -q 'stopped by a signal while waiting' "$TUN_LOG"
	TUN_PID=
	# --device names another phone (its serial, the UDID): this one keeps
	# its mode (its own host software may be using it), and nothing
	# matches. The old code asked every Apple device.
	asked=$(grep -c 'SET_MODE 3:' "$VM_OUT/ffs-apple.log")
	rc=0
	ncm-tun --apple-switch --device serial=00008110-000000000000001E --name "$TUN" \
		>"$VM_OUT/ncm-tun-other.log" 2>&1 || rc=$?
	cat "$VM_OUT/ncm-tun-other.log"
	check "another phone's serial: setup fails (exit $rc, want 2)" [ "$rc" = 2 ]
	check "... and this phone was not asked" \
		[ "$(grep -c 'SET_MODE 3:' "$VM_OUT/ffs-apple.log")" = "$asked" ]
	ffs_gadget_stop
	echo "" >"$kbd/UDC"
	;;
apple-proxy)
	# ncm-proxy --apple-switch: its SOCKS port is bound at once (a port in
	# use fails before the wait) but accepts only once NCM is open. A curl
	# started during the wait is not refused for want of a device: it
	# waits in the kernel's backlog and gets the peer's file after the
	# switch.
	command -v curl >/dev/null || skip "no curl (install it for this test)"
	VM_VID=0x05ac VM_PID=0x12a8
	ffs_apple_setup --profile apple --iad-first 2
	host_use_userspace
	www=/tmp/www
	mkdir -p "$www"
	head -c 65536 /dev/urandom >"$www/file"
	peer_run busybox httpd -f -p 80 -h "$www" &
	httpd=$!
	wait_for "$VM_WAIT" "HTTP listener in $PEER_NS" peer_listening 80 || fail "httpd did not start"
	log=$VM_OUT/ncm-proxy.log
	ncm-proxy --apple-switch --device "serial=$VM_SERIAL" --ipv4 "$(host_ip4)/24" \
		--socks 127.0.0.1:1081 >"$log" 2>&1 &
	proxy=$!
	wait_for 30 "ncm-proxy waiting" grep -q 'waiting for it to appear' "$log" ||
		{ cat "$log"; fail "ncm-proxy did not wait for the switch"; }
	curl -sS --max-time 60 --socks5 127.0.0.1:1081 -o /tmp/file.out \
		"http://$(peer_ip4)/file" >"$VM_OUT/curl.err" 2>&1 &
	curl=$!
	sleep 2
	check "curl, connected during the wait, is still waiting 2 s later" kill -0 "$curl"
	check "ncm-proxy has served nothing yet" sh -c "! grep -q 'running on' '$log'"
	ffs_apple_switch
	rc=0
	wait "$curl" || rc=$?
	cat "$VM_OUT/curl.err"
	check "curl got the file after the switch (exit $rc)" [ "$rc" = 0 ]
	check "... the same bytes as served" cmp -s /tmp/file.out "$www/file"
	check "the host uses configuration 5, where NCM is" [ "$(usb_active_config)" = 5 ]
	kill -TERM "$proxy"
	rc=0
	wait "$proxy" || rc=$?
	cat "$log"
	check "ncm-proxy exits 0 on SIGTERM" [ "$rc" = 0 ]
	kill "$httpd" 2>/dev/null || true
	ffs_gadget_stop
	;;
crc-accept|crc-refuse)
	# CRC mode offered (bmNetworkCapabilities 0x11, bit 4, in the NCM
	# functional descriptor: gadgetfs carries it, f_fs cannot). libncm
	# never enables CRC; with the capability it sends SET_CRC_MODE(0),
	# which the device accepts, or STALLs (crc-refuse). Either way the
	# link comes up and frames flow both ways; a refusal draws a warning.
	# crc-accept also sets bit 5: SET_NTB_INPUT_SIZE must then carry 8
	# bytes, wNtbInMaxDatagrams after the size (the device checks the
	# length against the bit, both ways).
	n=${VM_COUNT:-1000}
	refuse= caps=0x31
	[ "$test_case" = crc-accept ] || refuse=--refuse-crc caps=0x11
	gfs_gadget_setup --profile basic --caps $caps $refuse
	host_use_userspace
	usb_interfaces
	check "the host read an NCM functional descriptor offering CRC mode (caps $caps)" sh -c \
		"od -An -tx1 -v '$USB_DEV/descriptors' | tr -s ' \n' '  ' | grep -q ' 06 24 1a 00 01 ${caps#0x} '"
	frames frames.txt
	check "libncm reports the link up" grep -q 'event: link up' "$VM_OUT/frames.txt"
	check "libncm uses the device's iMACAddress" grep -q '^mac: 02:4e:43:4d:00:02' \
		"$VM_OUT/frames.txt"
	tx "$n"
	rx "$n"
	ffs_gadget_stop
	opens=$(grep -c '^mac:' "$VM_OUT/frames.txt" "$VM_OUT/tx.txt" "$VM_OUT/rx.txt" |
		awk -F: '{ s += $NF } END { print s }')
	if [ -z "$refuse" ]; then
		check "SET_NTB_INPUT_SIZE in 8 bytes, no datagram limit" \
			grep -q '^ffs-ncm: wNtbInMaxDatagrams 0$' "$FFS_LOG"
		seen=$(grep -c '^ffs-ncm: SET_CRC_MODE 0 accepted' "$FFS_LOG" || true)
		check "the device accepted SET_CRC_MODE(0) at each of libncm's $opens opens ($seen)" \
			sh -c "[ '$seen' -ge '$opens' ] && [ '$seen' -ge 1 ]"
		check "libncm did not warn about CRC" sh -c \
			"! grep -q 'SET_CRC_MODE' '$VM_OUT/frames.txt' '$VM_OUT/rx.txt'"
	else
		seen=$(grep -c '^ffs-ncm: SET_CRC_MODE 0 stalled' "$FFS_LOG" || true)
		check "the device stalled SET_CRC_MODE(0) at each of libncm's $opens opens ($seen)" \
			sh -c "[ '$seen' -ge '$opens' ] && [ '$seen' -ge 1 ]"
		check "the device counted the stalls" [ "$(ffs_stat stalled_requests)" -ge "$seen" ]
		check "libncm warned that the device refused SET_CRC_MODE(0)" \
			grep -q 'refused SET_CRC_MODE(0)' "$VM_OUT/frames.txt"
	fi
	check "libncm never asked for CRC" sh -c "! grep -q '^ffs-ncm: SET_CRC_MODE [^0]' '$FFS_LOG'"
	check "the device checked $n datagrams" [ "$(ffs_stat datagrams_out)" -ge "$n" ]
	# Data alt 1 (gadgetfs), as Linux' cdc_ncm: alt 1, then 0 (a data path
	# some devices reset only so), the requests, then alt 1.
	first=$(grep -E '^ffs-ncm: (SET_INTERFACE data alt|SET_NTB_FORMAT)' "$FFS_LOG" | head -n 4 |
		sed 's/^ffs-ncm: //' | tr '\n' ';')
	echo "the device saw: $first"
	check "each open: data alt 1, alt 0, SET_NTB_FORMAT, alt 1" \
		[ "$first" = "SET_INTERFACE data alt 1;SET_INTERFACE data alt 0;SET_NTB_FORMAT NTB16;SET_INTERFACE data alt 1;" ]
	gfs_gadget_teardown
	;;
mac-desc)
	# iMACAddress as devices get it wrong, through gadgetfs (f_fs carries
	# no Ethernet functional descriptor): a multicast address, then an
	# index whose string the device STALLs. libncm warns and uses a
	# unicast, locally administered MAC of its own, which the peer learns.
	for variant in multicast missing no-langids; do
		case $variant in
		multicast) gfs_gadget_setup --profile basic --mac 03:4e:43:4d:00:02 ;;
		# String 0 lists no language: iMACAddress and the serial (which
		# vmtest-driver selects by) are read in US English, as Linux does.
		no-langids) gfs_gadget_setup --profile basic --no-langids ;;
		# caps 0x03: the packet filter and SET_NET_ADDRESS, which libncm
		# must use to tell the device the MAC it made up.
		missing) gfs_gadget_setup --profile basic --mac-string-missing --caps 0x03 ;;
		esac
		host_use_userspace
		frames "frames-$variant.txt"
		out=$VM_OUT/frames-$variant.txt
		mac=$(sed -n 's/^mac: //p' "$out" | head -n 1)
		first=$((0x${mac%%:*}))
		echo "$variant iMACAddress: libncm's MAC $mac"
		if [ $variant = no-langids ]; then
			check "the device listed no language" grep -q 'string 0 lists no language' "$FFS_LOG"
			check "libncm read the iMACAddress all the same" grep -q '^mac: 02:4e:43:4d:00:02' "$out"
			check "... and made up no MAC" sh -c "! grep -q 'iMACAddress' '$out'"
			check "the peer learned it from ARP" sh -c \
				"$IP -n $PEER_NS neigh show $(host_ip4) | grep -qi '$mac'"
			gfs_gadget_teardown
			continue
		fi
		if [ $variant = multicast ]; then
			check "libncm warned about the multicast iMACAddress" \
				grep -q 'has an unusable (zero or multicast) iMACAddress' "$out"
		else
			check "the device stalled the iMACAddress string" \
				grep -q 'stalling GET_DESCRIPTOR string 1' "$FFS_LOG"
			check "libncm warned about the missing iMACAddress" grep -q 'has no iMACAddress' "$out"
			check "libncm told the device its MAC (SET_NET_ADDRESS $mac)" \
				grep -qi "SET_NET_ADDRESS $mac" "$FFS_LOG"
		fi
		check "the MAC is unicast" [ $((first & 1)) = 0 ]
		check "the MAC is locally administered" [ $((first & 2)) = 2 ]
		check "the peer learned it from ARP" sh -c \
			"$IP -n $PEER_NS neigh show $(host_ip4) | grep -qi '$mac'"
		gfs_gadget_teardown
	done
	;;
slow-ep0)
	# A device slow on ep0 (each request answered 20 ms late), through
	# gadgetfs: the host's transfer of an OUT request with data ends
	# before the device has read it, so the next request comes while the
	# device answers the last one. gadgetfs then holds that request's
	# event until it is answered blindly (ffs-ncm's answer_stranded();
	# before it, ep0 hung and every later request timed out: failed
	# vm-ffs-mac-desc in CI). libncm opens it and frames pass both ways.
	n=${VM_COUNT:-500}
	gfs_gadget_setup --profile basic --ep0-delay-ms 20
	host_use_userspace
	frames frames.txt
	check "libncm reports the link up" grep -q 'event: link up' "$VM_OUT/frames.txt"
	tx "$n"
	rx "$n"
	ffs_gadget_stop
	check "requests came while the device answered the last one (stranded $(ffs_stat stranded))" \
		[ "$(ffs_stat stranded)" -ge 1 ]
	check "the device checked $n datagrams" [ "$(ffs_stat datagrams_out)" -ge "$n" ]
	gfs_gadget_teardown
	;;
max-datagram-differs)
	# GET_MAX_DATAGRAM_SIZE (caps 0x19: bit 3, in the NCM functional
	# descriptor, which gadgetfs carries) answers other than libncm set
	# (1514). Less (1200): libncm's MTU follows it, with a warning; frames
	# of 1200 bytes go out, 1201 are refused on the spot and counted, and
	# the device finds no host datagram over 1200. More (2000): libncm
	# keeps 1514, says so, and sends frames of 1514. Either way it takes
	# the device's frames of 1514, and of 1518 with a VLAN tag.
	n=${VM_COUNT:-500}
	for reply in 1200 2000; do
		log "== GET_MAX_DATAGRAM_SIZE answers $reply"
		gfs_gadget_setup --profile basic --caps 0x19 --max-datagram-reply "$reply"
		host_use_userspace
		check "the host read an NCM functional descriptor with caps 0x19" sh -c \
			"od -An -tx1 -v '$USB_DEV/descriptors' | tr -s ' \n' '  ' | grep -q ' 06 24 1a 00 01 19 '"
		frames "frames-$reply.txt"
		out=$VM_OUT/frames-$reply.txt
		if [ "$reply" = 1200 ]; then
			max=1200
			check "libncm warned that the device takes 1200" grep -q \
				'takes datagrams of at most 1200 bytes, not 1514: using an MTU of 1186' "$out"
		else
			max=1514
			check "libncm warned that the device answered 2000, kept 1514 and takes 2008" grep -q \
				'answers a maximum datagram size of 2000 after libncm set 1514: libncm sends at most 1514 (MTU 1500) and accepts up to 2008' \
				"$out"
		fi
		check "the MTU is $((max - 14))" grep -q "^mtu: $((max - 14))\$" "$out"
		tx "$n" --max-size
		check "frames of $max bytes sent" grep -q "^tx: frames of $max bytes" "$VM_OUT/tx.txt"
		check "$((max + 1))-byte frames refused and counted" grep -q \
			"^oversize: 10 frames of $((max + 1)) bytes refused, tx_invalid +10" "$VM_OUT/tx.txt"
		check "... and said once: over its maximum of $max" \
			[ "$(grep -c "a frame of $((max + 1)) bytes is over its maximum of $max (MTU $((max - 14)))" "$VM_OUT/tx.txt")" = 1 ]
		# What the device sends is taken up to its segment size, whatever
		# it takes: 1514 bytes, and 1518 with a VLAN tag, as cdc_ncm does.
		RX_SIZE=1472 rx "$n"
		RX_SIZE=1472 RX_VLAN=1 rx "$n"
		tagged=$(sed -n 's/^rx: \([0-9]*\) VLAN-tagged frames, the longest 1518 bytes$/\1/p' \
			"$VM_OUT/rx.txt")
		check "the frames came tagged, 1518 bytes (${tagged:-no} tagged, >= $n)" \
			[ "${tagged:-0}" -ge "$n" ]
		gfs_gadget_teardown
		check "the device checked $n datagrams, none over $reply" \
			[ "$(ffs_stat datagrams_out)" -ge "$n" ]
		# wNtbOutMaxDatagrams 0 (basic): no limit, so NTBs carry several.
		check "wNtbOutMaxDatagrams 0: more datagrams ($(ffs_stat datagrams_out)) than NTBs ($(ffs_stat ntbs_out))" \
			[ "$(ffs_stat datagrams_out)" -gt "$(ffs_stat ntbs_out)" ]
	done
	;;
segment-too-big)
	# wMaxSegmentSize 4000 in the Ethernet functional descriptor, but OUT
	# NTBs of 2048 bytes with datagrams on 1024-byte boundaries hold 1008:
	# libncm lowers its MTU to what fits and says so; frames of 1008 bytes
	# pass and 1009 are refused and counted. IN follows wMaxSegmentSize:
	# 1514-byte frames from the peer arrive, in IN NTBs of at most 2048
	# bytes (dwNtbInMaxSize 2048, the smallest allowed).
	n=${VM_COUNT:-500}
	gfs_gadget_setup --profile basic --max-segment 4000 --out-max 2048 --out-ndp 1024/0/4 \
		--in-max 2048
	host_use_userspace
	check "the host read wMaxSegmentSize 4000 (0x0fa0)" sh -c \
		"od -An -tx1 -v '$USB_DEV/descriptors' | tr -s ' \n' '  ' | grep -q ' 0d 24 0f 01 00 00 00 00 a0 0f '"
	frames frames.txt
	check "libncm warned that OUT NTBs hold 1008 of the 4000" grep -q \
		'its OUT NTBs (2048 bytes, NTB16) hold frames of at most 1008 bytes, less than its maximum segment size 4000: using an MTU of 994' \
		"$VM_OUT/frames.txt"
	check "the MTU is 994" grep -q '^mtu: 994$' "$VM_OUT/frames.txt"
	tx "$n" --max-size
	check "frames of 1008 bytes sent" grep -q '^tx: frames of 1008 bytes' "$VM_OUT/tx.txt"
	check "1009-byte frames refused and counted" grep -q \
		'^oversize: 10 frames of 1009 bytes refused, tx_invalid +10' "$VM_OUT/tx.txt"
	RX_SIZE=1472 rx "$n"
	gfs_gadget_teardown
	check "the device checked $n datagrams" [ "$(ffs_stat datagrams_out)" -ge "$n" ]
	echo "largest IN NTB: $(ffs_stat max_ntb_in) bytes"
	check "IN NTBs of one 1514-byte frame, at most 2048 bytes" \
		in_range "$(ffs_stat max_ntb_in)" 1514 2048
	;;
segment-small)
	# wMaxSegmentSize 576, under Ethernet's 1514: libncm uses 1514, as
	# cdc_ncm does, and says so (the MTU is larger than the descriptor's);
	# frames of 1514 bytes pass both ways.
	n=${VM_COUNT:-200}
	gfs_gadget_setup --profile basic --max-segment 576
	host_use_userspace
	frames frames.txt
	check "libncm said it uses 1514 for wMaxSegmentSize 576" grep -q \
		'wMaxSegmentSize 576 is under Ethernet.s 1514: using 1514 (MTU 1500)' "$VM_OUT/frames.txt"
	check "the MTU is 1500" grep -q '^mtu: 1500$' "$VM_OUT/frames.txt"
	tx "$n" --max-size
	check "frames of 1514 bytes sent" grep -q '^tx: frames of 1514 bytes' "$VM_OUT/tx.txt"
	RX_SIZE=1472 rx "$n"
	gfs_gadget_teardown
	;;
*)
	fail "unknown VM_FFS_TEST '$test_case'"
	;;
esac
vm_info
