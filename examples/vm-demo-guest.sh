#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# examples/vm-demo-guest.sh: inside the VM, ncm-bench over cdc_ncm, ncm-tun, lwIP and ncm-proxy in turn, side by side, and the usbfs ceiling (raw).
# DEMO_TESTS picks ncm-bench's tests; DEMO_ARGS adds options.
set -eu
. "$VM_LIB"

TUN=ncmbench0

bench_setup
printf '{"vm":"QEMU TCG","guest_kernel":"%s","usb_speed_mbit_s":%s,"gadget":"f_ncm over dummy_hcd"}\n' \
	"$(uname -r)" "$(usb_speed)" >"$VM_OUT/env.json"
carrier_keeper "$TUN" &
keeper=$!

# One function, four drivers in turn: cdc_ncm (.2), then ncm-tun (.4), which
# detaches cdc_ncm and gives it back on exit, then lwIP in ncm-bench (.3),
# then ncm-proxy (.6), reached over loopback sockets.
# Last the raw path (.5 for its control connections): frames with no
# netstack each way, the ceiling every TCP test is a fraction of.
# Five 3 s runs per TCP test: one run alone swings by 2x between reps in
# this VM; the median of five, with min-max beside it, much less. Each
# run also gives the whole system's CPU per MB over its measured seconds.
# The five runs come from five rounds over all paths (DEMO_ROUNDS=1
# DEMO_REPS=5: all of a path's runs in a row, as before 2026-12-05): a
# path's median then spans the whole boot, each path runs once in each
# place, and each follows two different paths (ncm-bench's --rounds).
# The round trips run in every round as well, their echoes pooled.
# Before each of cdc_ncm's turns the script below gives its new netdev
# (libncm handed the function back) the address again.
rounds=${DEMO_ROUNDS:-5}
reps=${DEMO_REPS:-1}
host_readdress_script "$VM_OUT/readdress.sh"
rc=0
ncm-bench --quick --reps "$reps" --rounds "$rounds" --setup "cdc_ncm=$VM_OUT/readdress.sh" \
	--tests "${DEMO_TESTS:-tcp_down,tcp_up,tcp_bidir,udp_rtt_64,raw}" ${DEMO_ARGS:-} \
	--path "cdc_ncm=$(peer_ip4)%$(host_netdev 0)" \
	--path "ncm-tun=$(peer_ip4),ipv4=192.168.77.4/24,dev=serial=$VM_SERIAL,name=$TUN" \
	--path "lwip=$(peer_ip4),ipv4=192.168.77.3/24,dev=serial=$VM_SERIAL" \
	--path "ncm-proxy=$(peer_ip4),ipv4=192.168.77.6/24,dev=serial=$VM_SERIAL" \
	--path "raw=$(peer_ip4),ipv4=192.168.77.5/24,dev=serial=$VM_SERIAL" \
	--env-json "$VM_OUT/env.json" --json "$VM_OUT/bench.json" --plot "$VM_OUT/bench.svg" \
	>"$VM_OUT/bench.txt" 2>"$VM_OUT/bench.log" || rc=$?
kill "$keeper" 2>/dev/null || true
{
	echo "kernel $(uname -r), USB $(usb_speed) Mbit/s, f_ncm gadget, QEMU TCG, ncm-bench --quick --reps $reps --rounds $rounds, $(date -u "+%Y-%m-%d %H:%M UTC")"
	cat "$VM_OUT/bench.txt"
} | tee "$VM_OUT/table.txt"
[ "$rc" = 0 ] || fail "ncm-bench exited with $rc (3: a test hung; see $VM_OUT/bench.log)"
