#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-stress-replug-lwip.sh: guest test: STRESS_CYCLES unplug/replug cycles under bulk TCP through the lwIP stack (vmtest-lwip replug); recovery time, fds and RSS per session.
set -eu
. "$VM_LIB"

command -v vmtest-lwip >/dev/null || fail "vmtest-lwip is not on PATH (run-vm.sh --bin)"
CYCLES=${STRESS_CYCLES:-100}
# f_ncm's held NTB made some replugs take 15-30 s before the tail nudge
# (see guest-stress-replug.sh); the slowest of 100 now takes 1.2 s.
RECOVER_SECS=${STRESS_RECOVER_SECS:-15}
RSS_LIMIT_KB=${STRESS_RSS_LIMIT_KB:-2048}
LOG=$VM_OUT/replug-lwip.txt
CSV=$VM_OUT/stress-replug-lwip.csv

host_alive() { kill -0 "$HOST_PID" 2>/dev/null; }
lines_matching() { grep -c "$1" "$LOG" || true; }
streaming() { grep -q "^session $1: streaming" "$LOG"; }
ended() { grep -q "^session $1: up_after_ms=" "$LOG"; }
# Session N's line, field NAME (up_after_ms, bytes, fds, rss_kb).
field() { sed -n "s/^session $1: .*$2=\([0-9-]*\).*/\1/p" "$LOG"; }
secs() { printf '%d.%02d' $(( $1 / 100 )) $(( $1 % 100 )); }
secs_left() {
	local left=$(( RECOVER_SECS - ($(uptime_cs) - $1) / 100 ))
	[ "$left" -ge 1 ] && echo "$left" || echo 1
}
# A session that ends first has a reason on its line: show the log.
# The peer's view too: its sockets and counters tell a refusal from a loss.
die() {
	tail -n 30 "$LOG"
	{
		kill -0 "$PEER_PID" 2>/dev/null && echo "peer alive" || echo "peer DEAD"
		peer_run cat /proc/net/tcp /proc/net/snmp
		peer_run $IP -s link show dev "$(gadget_ifname 0)"
		peer_run $IP neigh show
	} >"$VM_OUT/peer-at-fail.txt" 2>&1
	fail "$*"
}

gadget_setup ncm
host_use_userspace

# A starved TCG guest stalls the host side for longer than the gadget's
# default 1000-packet queue covers (see guest-lwip.sh).
peer_run $IP link set dev "$(gadget_ifname 0)" txqueuelen 10000
# A segment of a dead session that comes in late draws a RST from lwIP; the
# peer's sink then writes its reply into the reset socket, and SIGPIPE would
# kill the peer for every later session. An ignored signal survives exec.
( trap '' PIPE; peer_run vmtest-lwip peer ) >"$VM_OUT/peer.txt" 2>&1 &
PEER_PID=$!
wait_for 30 "peer servers listening" grep -q '^ready' "$VM_OUT/peer.txt" ||
	{ cat "$VM_OUT/peer.txt"; fail "vmtest-lwip peer did not start"; }

# One session per plug: the first, then one after each of CYCLES replugs;
# a last unplug ends the final one.
# Under ASan, log_threads makes LeakSanitizer say that its exit scan ran.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1" \
LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}log_threads=1" \
vmtest-lwip replug --cycles $((CYCLES + 1)) -t "$RECOVER_SECS" \
	--peer4 "$(peer_ip4)" --peer6 "$(peer_ip6)" --host4 "$(host_ip4)" --host6 "$(host_ip6)" \
	>"$LOG" 2>&1 &
HOST_PID=$!
wait_for "$VM_WAIT" "session 1 streaming" streaming 1 || die "session 1 never streamed"

echo "cycle,recovery_cs,bytes_before_unplug,fds,rss_kb" >"$CSV"
log "$CYCLES cycles, the stream must come back within ${RECOVER_SECS}s of each replug"
start=$(uptime_cs)
i=1
while [ "$i" -le "$CYCLES" ]; do
	gadget_unplug >/dev/null
	# Its line comes after teardown: the bound covers a hung teardown too.
	wait_for "$RECOVER_SECS" "session $i's end" ended "$i" ||
		die "cycle $i: session $i did not end within ${RECOVER_SECS}s of the unplug"
	host_alive || die "cycle $i: vmtest-lwip died"
	t0=$(uptime_cs)
	gadget_replug >/dev/null
	wait_for "$(secs_left "$t0")" "session $((i + 1)) streaming" streaming $((i + 1)) ||
		die "cycle $i: no stream within ${RECOVER_SECS}s of the replug"
	rec=$(( $(uptime_cs) - t0 ))
	echo "$i,$rec,$(field "$i" bytes),$(field "$i" fds),$(field "$i" rss_kb)" >>"$CSV"
	log "cycle $i: streaming again after $(secs "$rec") s; session $i moved $(field "$i" bytes) bytes, $(field "$i" fds) fds, RSS $(field "$i" rss_kb) kB"
	i=$((i + 1))
done
elapsed=$(( $(uptime_cs) - start ))

last=$((CYCLES + 1))
gadget_unplug >/dev/null
rc=0
wait_for "$RECOVER_SECS" "vmtest-lwip's exit" sh -c "! kill -0 $HOST_PID 2>/dev/null" || {
	kill -TERM "$HOST_PID" 2>/dev/null || true
	die "vmtest-lwip did not exit after its last session"
}
wait "$HOST_PID" || rc=$?
cat "$LOG"

sessions=$(lines_matching '^session [0-9]*: up_after_ms=')
check "the device was re-acquired every cycle ($sessions sessions)" [ "$sessions" = "$last" ]
# Session 1 is the reference: its setup may open for good what later ones reuse.
fd_first=$(field 1 fds)
fd_last=$(field "$last" fds)
check "fds after the last session ($fd_last) within 1 of session 1's ($fd_first)" \
	[ "$fd_last" -le $((fd_first + 1)) ]
# From session 5: the first ones still grow (buffers and the allocator warm up).
rss_base_cycle=5
[ "$last" -ge 5 ] || rss_base_cycle=1
rss_base=$(field "$rss_base_cycle" rss_kb)
rss_first=$(field 1 rss_kb)
rss_last=$(field "$last" rss_kb)
# Under ASan freed memory sits in the quarantine; LeakSanitizer checks at exit.
sanitized=false
if grep -q 'libasan' "$(command -v vmtest-lwip)" 2>/dev/null || ldd "$(command -v vmtest-lwip)" 2>/dev/null | grep -q libasan; then
	sanitized=true
fi
if $sanitized; then
	echo "RSS not checked: vmtest-lwip runs under ASan (quarantine); LeakSanitizer checks at exit"
elif [ "$CYCLES" -lt 10 ]; then
	echo "RSS not checked: $CYCLES cycles are too few to tell growth from warm-up"
else
	check "RSS grew less than $RSS_LIMIT_KB kB from session $rss_base_cycle ($rss_base kB) to the last ($rss_last kB)" \
		[ $((rss_last - rss_base)) -lt "$RSS_LIMIT_KB" ]
fi
# Before the exit status: LeakSanitizer's own exit status would hide its
# report. The peer is the same sanitized binary: its UBSan reports count too.
if grep -q -E 'Sanitizer|runtime error:' "$LOG" "$VM_OUT/peer.txt"; then
	grep -A 40 -E 'Sanitizer|runtime error:' "$LOG" "$VM_OUT/peer.txt" | head -n 120
	fail "vmtest-lwip's output holds a sanitizer report (LeakSanitizer runs at exit)"
fi
ok "no sanitizer or LeakSanitizer report"
if $sanitized; then
	check "LeakSanitizer scanned vmtest-lwip's threads at exit" \
		grep -q '^==[0-9]*==Processing thread' "$LOG"
fi
check "vmtest-lwip exits 0 after $last sessions" [ "$rc" = 0 ]

v=$(tail -n +2 "$CSV" | cut -d, -f2 | sort -n)
echo "summary: $CYCLES cycles in $(secs "$elapsed") s;" \
	"up_after (rebind to streaming) min/median/max" \
	"$(secs "$(echo "$v" | head -n 1)")/$(secs "$(echo "$v" | sed -n "$(( (CYCLES + 1) / 2 ))p")")/$(secs "$(echo "$v" | tail -n 1)") s;" \
	"fds first/last $fd_first/$fd_last; RSS first/last $rss_first/$rss_last kB (session $rss_base_cycle: $rss_base kB)"
vm_info
