#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/guest-link-bound.sh: inside the VM, the lwip and ncm-proxy paths side by side at link rates the guest's CPUs can keep up with.
# Under TCG every path is CPU-bound, so a throughput ratio there is a ratio of
# CPU per MB. Here the link sets the rate: for each of LINK_RATES (Mbit/s;
# 0 = unshaped), host->device by libncm's TX pacing (ncm-bench --pace, the
# same for both paths) and device->host by a token bucket (tc tbf) on the
# gadget's netdev in namespace peer. Each rate runs LINK_ROUNDS rounds of
# LINK_TESTS over both paths (ncm-bench --rounds), then the loopback hop
# alone (ncm-bench over kernel sockets to 127.0.0.1, shaped by a tbf on lo
# at the same rate): the one cost the proxy adds that no relay can avoid.
# Results: $VM_OUT/link-RATE.json and $VM_OUT/lo-RATE.json
# (tests/bench/link-report.py). Run by tests/bench/link-bound.sh.
set -eu
. "$VM_LIB"

RATES=$(echo "${LINK_RATES:-0 100 200 300}" | tr , ' ')
ROUNDS=${LINK_ROUNDS:-4}
SECS=${LINK_SECS:-5}
TESTS=${LINK_TESTS:-tcp_down,tcp_up,tcp_bidir}
TC=/usr/sbin/tc  # busybox's applet shadows the real one on PATH

# shape DEV RATE [peer_run]: a token bucket of RATE Mbit/s on DEV's egress,
# none for 0. The bucket holds 10 ms at the rate (a guest timer tick is 4 ms)
# and at least 128 KiB, so a GSO super-packet passes whole; up to 50 ms queue.
shape() {
	local dev=$1 rate=$2 burst
	shift 2
	"$@" $TC qdisc del dev "$dev" root 2>/dev/null || true
	[ "$rate" != 0 ] || return 0
	burst=$((rate * 1250))
	[ "$burst" -ge 131072 ] || burst=131072
	"$@" $TC qdisc add dev "$dev" root tbf rate "${rate}mbit" burst "$burst" latency 50ms ||
		fail "tc tbf on $dev"
}

insmod /tmp/sch_tbf.ko 2>/dev/null || [ -d /sys/module/sch_tbf ] || fail "cannot load sch_tbf"
bench_setup
gadget=$(gadget_ifname 0)
ncm-bench --server --bind 127.0.0.1 >"$VM_OUT/lo-server.log" 2>&1 &
lo_server=$!
wait_for "$VM_WAIT" "loopback ncm-bench server" grep -q ':14A8 00000000:0000 0A' /proc/net/tcp ||
	fail "ncm-bench --server on 127.0.0.1 did not start"

# LINK_VARIANTS: more ncm-proxy paths (ncm-tun paths with LINK_TUN=1), each a
# build under /opt/link/NAME, started through a wrapper that gives it that
# build's libraries.
variants=
for v in $(echo "${LINK_VARIANTS:-}" | tr , ' '); do
	for prog in ncm-proxy ncm-tun; do
		[ -f "/opt/link/$v/$prog" ] || continue
		printf '#!/bin/sh\nLD_LIBRARY_PATH=/opt/link/%s:${LD_LIBRARY_PATH:-} exec /opt/link/%s/%s "$@"\n' \
			"$v" "$v" "$prog" >"/opt/link/$v/run-$prog"
		chmod +x "/opt/link/$v/run-$prog" "/opt/link/$v/$prog"
	done
	if [ "${LINK_TUN:-}" = 1 ]; then
		variants="$variants ncm-tun-$v=$(peer_ip4),ipv4=192.168.77.4/24,dev=serial=$VM_SERIAL,name=ncmlink0,exec=/opt/link/$v/run-ncm-tun"
	else
		variants="$variants ncm-proxy-$v=$(peer_ip4),ipv4=192.168.77.6/24,dev=serial=$VM_SERIAL,exec=/opt/link/$v/run-ncm-proxy"
	fi
done
# LINK_TUN=1: the ncm-tun paths (BUILD's and each variant's) in place of lwip and ncm-proxy.
if [ "${LINK_TUN:-}" = 1 ]; then
	paths="ncm-tun=$(peer_ip4),ipv4=192.168.77.4/24,dev=serial=$VM_SERIAL,name=ncmlink0"
else
	paths="lwip=$(peer_ip4),ipv4=192.168.77.3/24,dev=serial=$VM_SERIAL ncm-proxy=$(peer_ip4),ipv4=192.168.77.6/24,dev=serial=$VM_SERIAL"
fi

rc=0
for rate in $RATES; do
	log "link: $rate Mbit/s"
	shape "$gadget" "$rate" peer_run
	pace=
	[ "$rate" = 0 ] || pace="--pace $rate"
	ncm-bench --reps 1 --rounds "$ROUNDS" --secs "$SECS" --tests "$TESTS" $pace \
		$(for v in $paths $variants; do printf -- '--path %s ' "$v"; done) \
		--json "$VM_OUT/link-$rate.json" >"$VM_OUT/link-$rate.txt" 2>"$VM_OUT/link-$rate.log" ||
		{ rc=1; tail -5 "$VM_OUT/link-$rate.log"; }
	peer_run $TC -s qdisc show dev "$gadget" >"$VM_OUT/link-$rate.qdisc" 2>&1 || true
	shape "$gadget" 0 peer_run
	shape lo "$rate"
	ncm-bench --reps "$ROUNDS" --secs "$SECS" --tests "$TESTS" --path "lo=127.0.0.1" \
		--json "$VM_OUT/lo-$rate.json" >"$VM_OUT/lo-$rate.txt" 2>"$VM_OUT/lo-$rate.log" ||
		{ rc=1; tail -5 "$VM_OUT/lo-$rate.log"; }
	$TC -s qdisc show dev lo >"$VM_OUT/lo-$rate.qdisc" 2>&1 || true
	shape lo 0
done
kill "$lo_server" 2>/dev/null || true
[ "$rc" = 0 ] || fail "a run failed"
