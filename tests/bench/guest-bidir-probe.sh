#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/guest-bidir-probe.sh: inside the VM, tcp_bidir over cdc_ncm and ncm-tun while
# the TCP senders' state (ss -ti: cwnd, rtt, retrans) and the host interface's queue and
# drops are sampled every 0.5 s. Shows whether a direction's RTT inflates (a queue) or its
# cwnd collapses (losses). Output: $VM_OUT/probe-PATH.txt. Run by tests/bench/bidir-probe.sh.
set -eu
. "$VM_LIB"

TUN=ncmbench0
SECS=${PROBE_SECS:-8}

# ss -ti needs inet_diag (the base image leaves it out; bidir-probe.sh copies it in).
for m in inet_diag tcp_diag; do insmod "/tmp/$m.ko" 2>/dev/null || true; done
TC=/usr/sbin/tc  # busybox's applet shadows the real one on PATH

bench_setup
carrier_keeper "$TUN" &
keeper=$!

sample() { # DEV OUT: until ncm-bench exits
	while [ -e "$VM_OUT/.running" ]; do
		{
			echo "== t=$(cut -d' ' -f1 /proc/uptime)"
			echo "-- host"; ss -tin state established dst "$(peer_ip4)" 2>&1 | grep -v '^State'
			echo "-- peer"; peer_run ss -tin state established 2>&1 | grep -v '^State'
			echo "-- link"; $IP -s link show "$1" 2>&1 | sed -n '3,6p'
			echo "-- qdisc"; $TC -s qdisc show dev "$1" 2>&1 | head -4
		} >>"$2"
		sleep 0.5
	done
}

run() { # NAME SPEC DEV
	out=$VM_OUT/probe-$1
	: >"$out.txt"
	counters "$out.before"
	touch "$VM_OUT/.running"
	ncm-bench --reps 1 --secs "$SECS" --tests tcp_bidir --path "$2" --json "$out.json" \
		>"$out.bench" 2>"$out.log" &
	b=$!
	sleep 1
	sample "$3" "$out.txt" &
	s=$!
	wait "$b" || log "ncm-bench over $1 failed"
	rm -f "$VM_OUT/.running"
	wait "$s" || true
	counters "$out.after"
}

counters() { # OUT: TCP counters of both ends (retransmits, timeouts, losses)
	{ echo "-- host"; cat /proc/net/snmp /proc/net/netstat | grep '^Tcp'
	  echo "-- peer"; peer_run cat /proc/net/snmp /proc/net/netstat | grep '^Tcp'; } >"$1"
}

run cdc_ncm "cdc_ncm=$(peer_ip4)%$(host_netdev 0)" "$(host_netdev 0)"
run ncm-tun "ncm-tun=$(peer_ip4),ipv4=192.168.77.4/24,dev=serial=$VM_SERIAL,name=$TUN" "$TUN"
kill "$keeper" 2>/dev/null || true
