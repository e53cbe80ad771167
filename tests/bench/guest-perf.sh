#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/guest-perf.sh: inside the VM, perf over each path's TCP tests in one boot.
# For every path (PERF_PATHS: cdc_ncm, ncm-tun, lwip by default; ncm-proxy and the
# -allacks ones on request) and test (PERF_TESTS), one ncm-bench run
# under a system-wide perf record (cpu-clock, call graphs, CLOCK_MONOTONIC), cut to
# the interval ncm-bench measured (NCM_BENCH_SPANS) and folded into
# $VM_OUT/perf-PATH-TEST.folded ("pid;comm;frame;...;leaf count", root first), with
# the interval's bytes in $VM_OUT/perf-PATH-TEST.spans. tests/bench/perf-stages.py
# groups them by stage on the host.
set -eu
. "$VM_LIB"

TUN=ncmbench0
HZ=${PERF_HZ:-499}
SECS=${PERF_SECS:-6}

bench_setup
echo "$BENCH_SERVER_PID" >"$VM_OUT/perf-peer.pid"
carrier_keeper "$TUN" &
keeper=$!

# bench PATHSPEC TEST BASE [perf record options]: one ncm-bench run, under perf
# when options are given; the measured intervals go to BASE.spans.
bench() {
	local spec=$1 test=$2 base=$3
	shift 3
	rm -f /tmp/spans
	if [ $# -gt 0 ]; then
		NCM_BENCH_SPANS=/tmp/spans perf record -a -k mono -o /tmp/perf.data "$@" -- \
			ncm-bench --reps 1 --secs "$SECS" --tests "$test" --path "$spec" \
			>"$base.txt" 2>"$base.log"
	else
		NCM_BENCH_SPANS=/tmp/spans ncm-bench --reps 1 --secs "$SECS" --tests "$test" --path "$spec" \
			>"$base.txt" 2>"$base.log"
	fi || return 1
	[ -s /tmp/spans ] || { echo "perf: $base measured nothing (see $base.log)"; return 1; }
	cp /tmp/spans "$base.spans"
}

rc=0
for path in $(echo "${PERF_PATHS:-cdc_ncm,ncm-tun,lwip}" | tr , ' '); do
	case $path in
	cdc_ncm) spec="cdc_ncm=$(peer_ip4)%$(host_netdev 0)" ;;
	ncm-tun) spec="ncm-tun=$(peer_ip4),ipv4=192.168.77.4/24,dev=serial=$VM_SERIAL,name=$TUN" ;;
	lwip) spec="lwip=$(peer_ip4),ipv4=192.168.77.3/24,dev=serial=$VM_SERIAL" ;;
	# the same lwIP behind ncm-proxy (when perf-stages.sh copied it in)
	ncm-proxy) spec="ncm-proxy=$(peer_ip4),ipv4=192.168.77.6/24,dev=serial=$VM_SERIAL" ;;
	# libncm's TX ACK merging off, for a before/after in the same boot
	ncm-tun-allacks) spec="ncm-tun-allacks=$(peer_ip4),ipv4=192.168.77.4/24,dev=serial=$VM_SERIAL,name=$TUN,acks=all" ;;
	lwip-allacks) spec="lwip-allacks=$(peer_ip4),ipv4=192.168.77.3/24,dev=serial=$VM_SERIAL,acks=all" ;;
	*) fail "unknown path $path" ;;
	esac
	for test in $(echo "${PERF_TESTS:-tcp_down,tcp_up,tcp_bidir}" | tr , ' '); do
		base=$VM_OUT/perf-$path-$test
		# The same run without perf first: perf's own cost slows some paths
		# more than others, and the report shows both rates.
		log "bench: $path $test"
		bench "$spec" "$test" "$base-noperf" || rc=1
		# A profiled run whose perf.data holds no sample inside the measured
		# interval is run again (twice at most): session 27's ncm-tun tcp_down
		# came back empty once in twelve runs, with nothing in perf script's
		# messages, and left a hole in PERF.md.
		for try in 1 2 3; do
			log "perf: $path $test, try $try"
			rm -f /tmp/perf.data
			# shellcheck disable=SC2086
			bench "$spec" "$test" "$base" -e cpu-clock -F "$HZ" ${PERF_RECORD_ARGS:--g} || { rc=1; break; }
			perf script -i /tmp/perf.data -F comm,pid,time,ip,sym,dso 2>"$base.script.log" |
				perf_fold /tmp/spans >"$base.folded"
			n=$(awk '{ s += $NF } END { print s + 0 }' "$base.folded")
			echo "perf: $path $test: $n samples in $(cat "$base.spans")"
			[ "$n" = 0 ] || break
			ls -l /tmp/perf.data >>"$base.script.log" 2>&1 || true
			cp "$base.script.log" "$base.empty$try.log"
		done
	done
done
kill "$keeper" 2>/dev/null || true
echo "$HZ" >"$VM_OUT/perf-hz"
[ "$rc" = 0 ] || fail "a profiled run failed"
