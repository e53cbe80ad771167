#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-stress-replug.sh: guest test: STRESS_CYCLES unplug/replug cycles under bulk TCP through ncm-tun --persist; recovery time, fds and RSS per cycle.
set -eu
. "$VM_LIB"

command -v ncm-tun >/dev/null || fail "ncm-tun is not on PATH (run-vm.sh --bin)"
CYCLES=${STRESS_CYCLES:-100}
# Under bulk load, after a replug, f_ncm can hold an NTB from before the
# unplug (its ARP replies leave its netdev on time and reach USB only once 32
# datagrams have joined them): up to 30 s without libncm's tail nudge, which
# cdc_ncm as the host driver suffers too (20.6 s in 15 cycles). With it the
# slowest of 100 cycles took 2.3 s; 15 s leaves room for a sanitized build.
RECOVER_SECS=${STRESS_RECOVER_SECS:-15}
RSS_LIMIT_KB=${STRESS_RSS_LIMIT_KB:-2048}
SLOW_SECS=${STRESS_SLOW_SECS:-5}     # a recovery slower than this leaves slow-cycle-N.txt
TUN=ncms0
TUN_LOG=$VM_OUT/ncm-tun.log
CSV=$VM_OUT/stress-replug.csv
LOAD_DIR=/tmp/stress-load

# The fewest of a few looks: without udevd, libncm polls for replugs with a
# short-lived libusb context, whose fds come and go (13 vs 15 seen between
# two looks); that is no leak.
tun_fds() {
	local n k min=
	for k in 1 2 3 4 5; do
		n=$(ls "/proc/$TUN_PID/fd" | wc -l)
		[ -n "$min" ] && [ "$min" -le "$n" ] || min=$n
		sleep 0.05
	done
	echo "$min"
}
tun_fds_are() { [ "$(tun_fds)" = "$1" ]; }
tun_rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$TUN_PID/status"; }
tun_bytes() {
	echo $(( $(cat "/sys/class/net/$TUN/statistics/rx_bytes") +
		 $(cat "/sys/class/net/$TUN/statistics/tx_bytes") ))
}
# The echo competes with the bulk load for the link: a generous reply timeout.
peer_answers() { ping -c 1 -W 2 "$(peer_ip4)"; }
load_flows_since() { [ "$(tun_bytes)" -ge $(( $1 + 262144 )) ]; }
secs() { printf '%d.%02d' $(( $1 / 100 )) $(( $1 % 100 )); }

# Back-to-back iperf3 runs, alternating direction. A run that an unplug
# breaks is counted and replaced; the timeouts keep a wedged run (or server)
# from ending the load for good.
load_loop() {
	local n=0 flag
	while [ ! -e "$LOAD_DIR/stop" ]; do
		flag=
		[ $((n % 2)) = 1 ] && flag=-R
		if timeout 40 iperf3 -c "$(peer_ip4)" -t 10 --connect-timeout 3000 \
			--rcv-timeout 10000 $flag >/dev/null 2>&1; then
			echo . >>"$LOAD_DIR/ok"
		else
			echo . >>"$LOAD_DIR/broken"
			sleep 0.5
		fi
		n=$((n + 1))
	done
}
count_lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }

attached_count() { grep -c ' attached$' "$TUN_LOG" || true; }
attached_since() { [ "$(attached_count)" -gt "$1" ]; }
# The bound counts from the rebind: enumeration is part of the recovery.
secs_left() {
	local left=$(( RECOVER_SECS - ($(uptime_cs) - $1) / 100 ))
	[ "$left" -ge 1 ] && echo "$left" || echo 1
}

# slow_snapshot CYCLE: counters on both ends while the path is slow to come
# back (and once it is), to tell a queue in ncm-tun from one in the gadget.
slow_snapshot() {
	local f=$VM_OUT/slow-cycle-$1.txt
	{
		echo "== at $(cut -d' ' -f1 /proc/uptime) s"
		kill -USR1 "$TUN_PID"
		sleep 0.3
		grep -A 8 'device session' "$TUN_LOG" | tail -n 9
		$IP -s link show "$TUN"
		peer_run $IP -s link show "$(gadget_ifname 0)"
		peer_run $IP neigh show
		$IP neigh show dev "$TUN"
	} >>"$f" 2>&1
}

# Under ASan, freed memory sits in the quarantine, so RSS grows by design;
# LeakSanitizer at exit is the leak check there.
tun_sanitized() { grep -q 'libasan' "/proc/$TUN_PID/maps"; }

gadget_setup ncm
host_use_userspace

# STRESS_PCAP=1: ncm-tun records its datagrams and, with tcpdump on PATH
# (run-vm.sh --bin), the gadget's netdev is captured too; both land in
# $VM_OUT at the end, pass or fail. Kept in guest RAM meanwhile: 9p is slow.
pcap_args=
if [ -n "${STRESS_PCAP:-}" ]; then
	pcap_args="--pcap /tmp/ncm-tun.pcap"
	trap 'cp /tmp/*.pcap "$VM_OUT/" 2>/dev/null || true' EXIT
	if command -v tcpdump >/dev/null; then
		peer_run tcpdump -Z root -nn -s 128 -i "$(gadget_ifname 0)" -w /tmp/peer.pcap \
			>/dev/null 2>&1 &
	fi
fi

# Under ASan, log_threads makes LeakSanitizer say that its exit scan ran:
# a clean log must mean "no leak", not "no scan" (detect_leaks=0 somewhere).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1" \
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}log_threads=1" \
ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" --persist $pcap_args \
	--ipv4 "$(host_ip4)/24" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
wait_for "$VM_WAIT" "interface $TUN" tun_iface || { cat "$TUN_LOG"; fail "ncm-tun made no $TUN"; }
wait_for "$VM_WAIT" "reply from $(peer_ip4)" peer_answers ||
	{ cat "$TUN_LOG"; fail "no path through ncm-tun"; }

peer_run iperf3 -s -D -I /run/iperf3-stress.pid --rcv-timeout 10000 --idle-timeout 20 ||
	fail "iperf3 -s failed"
wait_for "$VM_WAIT" "iperf3 listener" peer_listening 5201 || fail "iperf3 server did not start"
rm -rf "$LOAD_DIR"
mkdir -p "$LOAD_DIR"
load_loop &
LOAD_PID=$!

echo "cycle,attach_cs,recovery_cs,load_bytes_before_unplug,fds,rss_kb" >"$CSV"
log "$CYCLES cycles, traffic must come back within ${RECOVER_SECS}s of each replug"
start=$(uptime_cs)
i=1
loaded=0
slow=0
while [ "$i" -le "$CYCLES" ]; do
	# Unplug only once the bulk load is moving again, so every cycle cuts a
	# live stream; a load that stays away is recorded, not fatal.
	b0=$(tun_bytes)
	if wait_for 10 "bulk load" load_flows_since "$b0"; then
		loaded=$((loaded + 1))
	fi
	moved=$(( $(tun_bytes) - b0 ))
	gadget_unplug >/dev/null
	tun_alive || { cat "$TUN_LOG"; fail "cycle $i: ncm-tun died on the unplug"; }
	a0=$(attached_count)
	t0=$(uptime_cs)
	gadget_replug >/dev/null
	wait_for "$(secs_left "$t0")" "ncm-tun's reattach after replug $i" attached_since "$a0" ||
		{ tail -n 30 "$TUN_LOG"; fail "cycle $i: ncm-tun did not reattach within ${RECOVER_SECS}s"; }
	att=$(( $(uptime_cs) - t0 ))
	if ! wait_for "$SLOW_SECS" "reply from $(peer_ip4) after replug $i" peer_answers 2>/dev/null; then
		slow_snapshot "$i"
		wait_for "$(secs_left "$t0")" "reply from $(peer_ip4) after replug $i" peer_answers ||
			{ tail -n 30 "$TUN_LOG"; fail "cycle $i: no traffic within ${RECOVER_SECS}s of the replug"; }
		rec=$(( $(uptime_cs) - t0 ))
		slow_snapshot "$i"
		slow=$((slow + 1))
	else
		rec=$(( $(uptime_cs) - t0 ))
	fi
	tun_alive || { cat "$TUN_LOG"; fail "cycle $i: ncm-tun died"; }
	fds=$(tun_fds)
	rss=$(tun_rss_kb)
	echo "$i,$att,$rec,$moved,$fds,$rss" >>"$CSV"
	log "cycle $i: reattached after $(secs "$att") s, traffic again after $(secs "$rec") s, ${moved} bytes of load before the unplug, $fds fds, RSS $rss kB"
	i=$((i + 1))
done
elapsed=$(( $(uptime_cs) - start ))

touch "$LOAD_DIR/stop"
# Slow cycles printed statistics too: wait for this print's line.
n=$(grep -c 'device session' "$TUN_LOG" || true)
kill -USR1 "$TUN_PID"
wait_for 10 "statistics on SIGUSR1" sh -c "[ \$(grep -c 'device session' '$TUN_LOG') -gt $n ]" ||
	fail "no statistics on SIGUSR1"
sessions=$(sed -n 's/.*, \([0-9]*\) device session(s).*/\1/p' "$TUN_LOG" | tail -n 1)
check "the device was re-acquired every cycle ($sessions sessions)" [ "$sessions" = $((CYCLES + 1)) ]

# Cycle 1 is the reference: the first session's setup may open for good
# what later ones reuse.
fd_first=$(sed -n '2p' "$CSV" | cut -d, -f5)
fd_last=$(tail -n 1 "$CSV" | cut -d, -f5)
check "fd count back to cycle 1's ($fd_first)" wait_for 10 "$fd_first fds" tun_fds_are "$fd_first"
# From cycle 5: the first cycles still grow (buffers and the allocator warm
# up; 2 MB between cycles 1 and 3 seen), later growth is what would leak.
rss_base_cycle=5
[ "$CYCLES" -ge 5 ] || rss_base_cycle=1
rss_base=$(sed -n "$((rss_base_cycle + 1))p" "$CSV" | cut -d, -f6)
rss_first=$(sed -n '2p' "$CSV" | cut -d, -f6)
rss_last=$(tail -n 1 "$CSV" | cut -d, -f6)
sanitized=false
tun_sanitized && sanitized=true
if $sanitized; then
	echo "RSS not checked: ncm-tun runs under ASan (quarantine); LeakSanitizer checks at exit"
elif [ "$CYCLES" -lt 10 ]; then
	echo "RSS not checked: $CYCLES cycles are too few to tell growth from warm-up"
else
	check "RSS grew less than $RSS_LIMIT_KB kB from cycle $rss_base_cycle ($rss_base kB) to the last ($rss_last kB)" \
		[ $((rss_last - rss_base)) -lt "$RSS_LIMIT_KB" ]
fi

kill "$LOAD_PID" 2>/dev/null || true
wait "$LOAD_PID" 2>/dev/null || true
kill -TERM "$TUN_PID"
rc=0
wait "$TUN_PID" || rc=$?
tail -n 25 "$TUN_LOG"
# Before the exit status: LeakSanitizer's own exit status would hide its report.
if grep -q -E 'Sanitizer|runtime error:' "$TUN_LOG"; then
	grep -A 40 -E 'Sanitizer|runtime error:' "$TUN_LOG" | head -n 120
	fail "ncm-tun's log holds a sanitizer report (LeakSanitizer runs at exit)"
fi
ok "no sanitizer or LeakSanitizer report"
if $sanitized; then
	check "LeakSanitizer scanned ncm-tun's threads at exit" \
		grep -q '^==[0-9]*==Processing thread' "$TUN_LOG"
fi
check "ncm-tun exits 0 on SIGTERM" [ "$rc" = 0 ]

# min_med_max COLUMN: "min/median/max" seconds of a centisecond CSV column.
min_med_max() {
	local v
	v=$(tail -n +2 "$CSV" | cut -d, -f"$1" | sort -n)
	echo "$(secs "$(echo "$v" | head -n 1)")/$(secs "$(echo "$v" | sed -n "$(( (CYCLES + 1) / 2 ))p")")/$(secs "$(echo "$v" | tail -n 1)")"
}
echo "summary: $CYCLES cycles in $(secs "$elapsed") s;" \
	"recovery (rebind to first echo) min/median/max $(min_med_max 3) s," \
	"of which reattach $(min_med_max 2) s; slower than ${SLOW_SECS}s: $slow;" \
	"fds first/last $fd_first/$fd_last; RSS first/last $rss_first/$rss_last kB" \
	"(cycle $rss_base_cycle: $rss_base kB); unplugged under load $loaded/$CYCLES;" \
	"iperf3 runs ok/broken $(count_lines "$LOAD_DIR/ok")/$(count_lines "$LOAD_DIR/broken")"
vm_info
