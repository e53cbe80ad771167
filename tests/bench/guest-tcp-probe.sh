#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/guest-tcp-probe.sh: inside the VM, TCP tests over cdc_ncm and ncm-tun while the
# TCP senders' state (ss -ti: cwnd, rtt, pacing rate, retrans) and the host interface's
# queue and counters are sampled every 0.5 s. Shows whether a direction's RTT inflates (a
# queue), its cwnd collapses (losses) or its sender cuts smaller TSO packets (the bytes
# per packet the interface carried). PROBE_TESTS (comma-separated, default tcp_bidir),
# PROBE_REPS rounds (the paths' order swaps each round), PROBE_SECS per run. Output per
# run: $VM_OUT/probe-PATH-TEST-ROUND.{txt,json,before,after}. PROBE_TSO_SEGS=N adds a
# path ncm-tun-tsoN: ncm-tun with the host's net.ipv4.tcp_min_tso_segs at N for its runs
# (TCP sizes its TSO packets to ~1 ms of its pacing rate, at least that many segments;
# ncm-tun pays per packet it reads). Run by tests/bench/tcp-probe.sh.
set -eu
. "$VM_LIB"

TUN=ncmbench0
SECS=${PROBE_SECS:-8}
REPS=${PROBE_REPS:-1}
TESTS=$(echo "${PROBE_TESTS:-tcp_bidir}" | tr , ' ')

# ss -ti needs inet_diag (the base image leaves it out; tcp-probe.sh copies it in).
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

counters() { # OUT: TCP counters of both ends (segments, retransmits, timeouts, losses)
	{ echo "-- host"; cat /proc/net/snmp /proc/net/netstat | grep '^Tcp'
	  echo "-- peer"; peer_run cat /proc/net/snmp /proc/net/netstat | grep '^Tcp'; } >"$1"
}

run() { # NAME TEST ROUND SPEC DEV
	out=$VM_OUT/probe-$1-$2-$3
	: >"$out.txt"
	if [ "$1" = cdc_ncm ]; then
		# The libncm path unbinds cdc_ncm; its netdev comes back under another name.
		host_use_kernel
		host_addr_setup 0
		wait_for "$VM_WAIT" "IPv4 path" ping -c 1 -W 1 "$(peer_ip4)" || fail "no IPv4 path over cdc_ncm"
		set -- "$1" "$2" "$3" "cdc_ncm=$(peer_ip4)%$(host_netdev 0)" "$(host_netdev 0)"
	fi
	counters "$out.before"
	touch "$VM_OUT/.running"
	ncm-bench --reps 1 --secs "$SECS" --tests "$2" --path "$4" --json "$out.json" \
		>"$out.bench" 2>"$out.log" &
	b=$!
	sleep 1
	sample "$5" "$out.txt" &
	s=$!
	wait "$b" || log "ncm-bench over $1 failed"
	rm -f "$VM_OUT/.running"
	wait "$s" || true
	counters "$out.after"
}

TUN_SPEC="ncm-tun=$(peer_ip4),ipv4=192.168.77.4/24,dev=serial=$VM_SERIAL,name=$TUN"
MIN_TSO=$(cat /proc/sys/net/ipv4/tcp_min_tso_segs)
paths="cdc_ncm ncm-tun${PROBE_TSO_SEGS:+ ncm-tun-tso$PROBE_TSO_SEGS}"
round=1
while [ "$round" -le "$REPS" ]; do
	order=$(round_order "$round" $paths)
	for t in $TESTS; do
		for p in $order; do
			log "probe: round $round $t $p"
			case $p in
			cdc_ncm) run cdc_ncm "$t" "$round" - - ;;
			ncm-tun) run ncm-tun "$t" "$round" "$TUN_SPEC" "$TUN" ;;
			ncm-tun-tso*)
				echo "$PROBE_TSO_SEGS" >/proc/sys/net/ipv4/tcp_min_tso_segs
				run "$p" "$t" "$round" "$TUN_SPEC" "$TUN"
				echo "$MIN_TSO" >/proc/sys/net/ipv4/tcp_min_tso_segs ;;
			esac
		done
	done
	round=$((round + 1))
done
kill "$keeper" 2>/dev/null || true
