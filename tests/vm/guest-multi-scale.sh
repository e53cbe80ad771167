#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-multi-scale.sh: aggregate throughput at 1, 2, 4 and 8 devices in one boot over cdc_ncm, ncm-tun (one process) and lwIP (one process, one NcmContext), all from ncm-bench --multi: one TCP stream per device each way (issue 20).
# VM_SCALE_SECS (5) per run, VM_SCALE_COUNTS ("1 2 4 8"), VM_SCALE_PATHS ("cdc_ncm ncm-tun lwip"), VM_SCALE_TESTS ("tcp_down,tcp_up").
# A/B in one boot (tests/bench/multi-ab.sh): VM_SCALE_VARIANTS names directories /opt/ab/NAME, each one build's
# libncm, libncm-lwip and ncm-tun, run in turn at each count, VM_SCALE_ROUNDS (1) times over, interleaved,
# in the order given in odd rounds and reversed in even ones: the run that follows another at the same point was
# faster often enough to bias a fixed order (session 15: lwip at 1 device, the second variant 1.03-1.31x in 6 of 6
# rounds of two boots, 0.74-0.96x in 3 of 3 once the order was swapped);
# VM_SCALE_TUN_VARIANTS (default the same) for the ncm-tun path. VM_SCALE_ORDER=reverse lists the devices of
# each multi path last gadget first: a bias that follows the gadget, not the list, is not the driver's order;
# VM_SCALE_ORDER=alternate does so in every second round (the scale: line says "reversed"), both in one boot.
# VM_SCALE_BACKLOG ("1000 10000") sets net.core.netdev_max_backlog per round, cycling through the list; 10000 by
# default: at 8 devices the gadgets' receive path overflows a CPU's input backlog of Linux's 1000 (the scale: line
# counts those drops, softnet_stat), and whose frames are dropped then decides fairness on every path, cdc_ncm's too.
# Real gadgets are separate machines with a backlog each, so the default measures the host side, not that.
# VM_SCALE_RPS ("off one") sets the gadget netdevs' RPS per round, cycling through the list (rps_set); off by default:
# a gadget's frames join the backlog of whichever CPU runs its dummy_hcd's transfer timer, which stays where it was
# first armed; at 8 devices one CPU's backlog may hold thousands of frames (50-100 ms) while the other's is empty, and
# the gadgets on the empty one see that much less RTT and take 1.5-2x the others' upload share. one (every gadget's
# frames in CPU 0's backlog) gives every stream the same wait, as separate machines' alike receive paths would: use
# it to measure upload fairness (VM_SCALE_TESTS=tcp_up). It is not the default because the peer's ACK processing,
# and with it its senders, then run on one CPU: ncm-tun's download at 8 devices fell to 0.72-0.73x its 1-device
# rate in 2 of 3 rounds against 0.99-1.12x with off (session 19, tests/bench/RESULTS.md).
# VM_SCALE_TCP_MEM ("x1 x8") sets net.ipv4.tcp_mem per round to the boot's values times N, cycling through the list;
# x8 by default. The guest has 1 GiB, so its tcp_mem soft limit is ~40 MiB (10302 pages), shared by the host's senders
# and the peer's receivers; 8 streams' 4-6 MiB buffers alone come near it. Past it no sender's buffer grows
# (tcp_should_expand_sndbuf): at 8 streams the one that had grown keeps 4 MiB and runs at 2-3x, the others stay at their
# first ~85 KiB, one 128 KiB write of ncm-bench in flight, app-limited (session 17: fairness 0.29-0.41). Until ncm-bench
# reset its upload connections at a run's end, orphaned senders also kept ~2 MiB a run charged (the scale: line's "TCP
# memory at start" climbed by ~500 pages a run, to the limit by a boot's fifth round); it now stays flat.
# A real host's limit is its own and scales with its memory: x8 is an 8 GiB host's.
# VM_SCALE_SS=1 saves the host's TCP senders' ss -tin (cwnd, retransmits, and how long each was limited by the
# receiver's window or its send buffer) at the end of each run to scale-*.ss (inet_diag from multi-ab.sh).
# VM_SCALE_DIAG=1 (multi-ab.sh MULTI_AB_DIAG=1, which brings ss and inet_diag) adds to each run, in scale-*.diag: both namespaces'
# /proc/net/netstat and snmp counters (nstat's names, what changed), the gadget netdevs' /proc/net/dev and tc -s qdisc, /proc/stat,
# a sample each second of ss -tin in both namespaces and of every ncm-bench and ncm-tun thread's CPU ticks, and
# LD_PRELOAD=/opt/diag/multi-diag-preload.so: every NcmStats / NcmLwipStats the programs read (scale-*.ncm.PID);
# /proc/net/softnet_stat every 0.2 s (scale-*.softnet: each CPU's input backlog, how long); with VM_SCALE_DIAG_TRACE=1
# also 0.4 s of the gadget netdevs' netif_rx and netif_receive_skb events (scale-*.trace: on which CPU each gadget's
# frames join a backlog and how long each waits there).
# VM_SCALE_DIAG_RX ("16 4") runs each point once per value, with NcmDeviceOptions.rx_transfers set to it by that
# preload (scale-PATH-rxN-K...).
# VM_SCALE_LWIP_PER_CTX ("8 2") runs each lwip point once per value K, with NCM_BENCH_LWIP_PER_CONTEXT=K: a new
# NcmContext, so a new event thread, for every K devices (scale-lwip-ctxK-N...; a value not below the count runs
# only if it comes first: it would repeat one context).
# VM_SCALE_PERF=R (multi-ab.sh MULTI_AB_PERF=R, which brings perf) runs each ncm-bench of round R under a system-wide perf record
# (cpu-clock at VM_SCALE_PERF_HZ, 499; call graphs) and folds the samples inside the interval every device was measuring
# into scale-*-TEST.folded, with that interval and its bytes in scale-*-TEST.spans (tests/bench/multi-perf-report.py).
# VM_SCALE_SYSCALLS=1 counts every syscall of the guest during each ncm-bench run by thread and kind (a hist trigger on
# raw_syscalls:sys_enter, counted in the kernel, so no event crosses to userspace) to scale-*.syscalls, with the peer server's
# threads listed: which work units grow per MB from 1 to 8 devices (tests/bench/multi-diag-report.py).
# Prints ncm-bench's tables and one "scale:" line per path and count; asserts that every run ended and every device moved data.
set -eu
. "$VM_LIB"

command -v ncm-bench >/dev/null || fail "ncm-bench is not on PATH (run-vm.sh --bin)"
command -v ncm-tun >/dev/null || fail "ncm-tun is not on PATH (run-vm.sh --bin)"

secs=${VM_SCALE_SECS:-5}
counts=${VM_SCALE_COUNTS:-1 2 4 8}
paths=${VM_SCALE_PATHS:-cdc_ncm ncm-tun lwip}
tests=$(echo "${VM_SCALE_TESTS:-tcp_down,tcp_up}" | tr , ' ')
variants=${VM_SCALE_VARIANTS:-}
rounds=${VM_SCALE_ROUNDS:-1}
tun_variants=${VM_SCALE_TUN_VARIANTS-$variants}
max=0
for k in $counts; do [ "$k" -gt "$max" ] && max=$k; done
VM_MULTI_SPARE=0
host_use_userspace
multi_setup "$max"
peer_run ncm-bench --server >"$VM_OUT/server.log" 2>&1 &
wait_for "$VM_WAIT" "ncm-bench server" peer_listening 5288 || fail "ncm-bench --server did not start"
# The only ncm-bench yet: the peer's server.
peer_server=$(pidof ncm-bench)
# Its samples are the peer's (tests/bench/perf-stages.py tells the two ends apart by it).
if [ -n "${VM_SCALE_PERF:-}" ]; then
	echo "$peer_server" >"$VM_OUT/perf-peer.pid"
	echo "${VM_SCALE_PERF_HZ:-499}" >"$VM_OUT/perf-hz"
fi

bad=
diag_rx=
per_ctx=
if [ "${VM_SCALE_SS:-}" = 1 ] || [ "${VM_SCALE_DIAG:-}" = 1 ]; then
	for m in inet_diag tcp_diag; do insmod "/tmp/$m.ko" 2>/dev/null || true; done
fi
# result FILE TEST: the result's line (ncm-bench writes one per line).
result() { grep "^{\"path\":\"[^\"]*\",\"test\":\"$2\"," "$1"; }
# member FILE TEST KEY: the median of summary KEY, or a plain number KEY.
member() {
	result "$1" "$2" | sed -n "s/.*\"$3\":{\"median\":\([^,]*\),.*/\1/p; t; s/.*\"$3\":\([^,}]*\).*/\1/p"
}

# fig FILE TEST KEY FORMAT: member's value printed with FORMAT, "-" when the result has none.
fig() {
	awk -v v="$(member "$1" "$2" "$3" 2>/dev/null)" -v f="$4" 'BEGIN { if (v == "") print "-"; else printf f "\n", v }'
}

# table: per path and test, the aggregate at each count, the largest
# count's over the smallest's (the goal: >= 0.9), and at the largest count
# fairness (goal: >= 0.7), system CPU per MB and the event thread's share.
table() {
	local p t k f first last lo hi row
	set -- $counts
	lo=$1
	hi=$max
	echo "scale table ($secs s per run; Mbit/s aggregate at$(for k in $counts; do printf ' %s' "$k"; done) devices):"
	for p in $paths; do
		for t in $tests; do
			row=
			for k in $counts; do
				f=$VM_OUT/scale-$p-$k.json
				row="$row $( [ -s "$f" ] && fig "$f" "$t" mbit_s %.1f || echo -)"
			done
			first=$(member "$VM_OUT/scale-$p-$lo.json" "$t" mbit_s 2>/dev/null || true)
			last=$(member "$VM_OUT/scale-$p-$hi.json" "$t" mbit_s 2>/dev/null || true)
			f=$VM_OUT/scale-$p-$hi.json
			echo "scale table: $p $t:$row | $hi/$lo $(awk -v a="$first" -v b="$last" 'BEGIN { if (a > 0 && b != "") printf "%.2f", b / a; else print "-" }')" \
				"| fairness at $hi $(fig "$f" "$t" fairness %.2f)" \
				"| system CPU s/MB at $lo $(fig "$VM_OUT/scale-$p-$lo.json" "$t" system_cpu_s_per_mb %.4f), at $hi $(fig "$f" "$t" system_cpu_s_per_mb %.4f)" \
				"| event thread at $hi $(fig "$f" "$t" event_thread_cpu_pct %.0f) % of a CPU" \
				"| threads waiting for lwIP's core lock at $lo $(fig "$VM_OUT/scale-$p-$lo.json" "$t" lwip_core_lock_waiting %.2f), at $hi $(fig "$f" "$t" lwip_core_lock_waiting %.2f)"
		done
	done
}

# net_snap: /proc/net/netstat and snmp on stdin as "TcpExtName value"
# (nstat's names: each prefix's header line, then its values line).
net_snap() {
	awk '{ p = $1; sub(/:$/, "", p); if (!(p in h)) { h[p] = $0; next }
		n = split(h[p], k); for (i = 2; i <= n; i++) print p k[i], $i; delete h[p] }'
}

# diag_snap OUT TAG: the counters VM_SCALE_DIAG diffs, to OUT.TAG.*.
diag_snap() {
	cat /proc/net/netstat /proc/net/snmp | net_snap >"$1.$2.host-net"
	peer_run cat /proc/net/netstat /proc/net/snmp | net_snap >"$1.$2.peer-net"
	peer_run cat /proc/net/dev >"$1.$2.peer-dev"
	# A gadget's qdisc drops are not in /proc/net/dev.
	peer_run tc -s qdisc show >"$1.$2.peer-qdisc" 2>&1 || true
	head -1 /proc/stat >"$1.$2.stat"
}

# round_pick R WORD...: the word for round R, the list cycled.
round_pick() {
	local r=$1
	shift
	eval "echo \"\${$(( (r - 1) % $# + 1 ))}\""
}

# tcp_mem_set R: VM_SCALE_TCP_MEM's value for round R (cycled), xN: the boot's tcp_mem times N.
tcp_mem_boot=$(cat /proc/sys/net/ipv4/tcp_mem)
tcp_mem_set() {
	local m
	m=$(round_pick "$1" ${VM_SCALE_TCP_MEM:-x8})
	m=${m#x}
	echo $tcp_mem_boot | awk -v m="$m" '{ printf "%d %d %d\n", $1 * m, $2 * m, $3 * m }' >/proc/sys/net/ipv4/tcp_mem
}

# tcp_pages: TCP's memory now, in pages, both namespaces (one count against tcp_mem).
tcp_pages() { sed -n 's/^TCP:.* mem \([0-9]*\).*/\1/p' /proc/net/sockstat; }

# diag_sample: one sample of the senders' and receivers' TCP state, of
# the drivers' threads' CPU ticks (utime stime per thread, then the CPU it
# last ran on) and of each CPU's ticks.
diag_sample() {
	local p pids=
	echo "=== sample $(cut -d' ' -f1 /proc/uptime) $(head -1 /proc/stat)"
	for p in $(pidof ncm-bench ncm-tun 2>/dev/null); do pids="$pids /proc/$p/task/*/stat"; done
	# comm may hold spaces: the fields after its closing parenthesis.
	[ -z "$pids" ] || awk '{ s = $0; c = s; sub(/^[^(]*\(/, "", c); sub(/\).*/, "", c); sub(/^.*\) /, "", s)
		split(s, f, " "); print "thread", $1, c, f[12], f[13], f[37] }' $pids 2>/dev/null
	# Each CPU's ticks: which one the driver's threads and the gadgets' timers crowd.
	grep '^cpu[0-9]' /proc/stat
	# Context switches per thread (voluntary: it slept; involuntary: preempted): "switches TID COMM VOL INVOL".
	[ -z "$pids" ] || awk 'function out() { if (t != "") print "switches", t, c, v, n }
		FNR == 1 { out(); t = FILENAME; sub(/\/status$/, "", t); sub(/.*\//, "", t) }
		/^Name:/ { sub(/^Name:[ \t]*/, ""); gsub(/ /, "_"); c = $0 }
		/^voluntary_ctxt/ { v = $2 } /^nonvoluntary_ctxt/ { n = $2 } END { out() }' \
		$(echo $pids | sed 's,/stat,/status,g') 2>/dev/null
	grep '^ctxt ' /proc/stat
	# TCP's memory in pages: one count for both namespaces, against tcp_mem's.
	echo "tcpmem $(tcp_pages) $(cat /proc/sys/net/ipv4/tcp_mem) | $(grep '^TCP:' /proc/net/sockstat)"
	echo "--- peer ss"
	peer_run ss -tinmH state established 2>&1
	echo "--- host ss"
	ss -tinmH state established 2>&1
}

# softnet_sampler OUT: /proc/net/softnet_stat (one line per CPU: processed, dropped, time_squeeze, ...,
# the backlog's length now, the CPU) every 0.2 s to OUT.softnet: which CPU's backlog the gadgets' frames
# wait in, and how deep it gets (one sample a second would miss the bursts). Shell builtins but
# sleep: a fork costs milliseconds under TCG.
softnet_sampler() {
	local up l
	while :; do
		read -r up l </proc/uptime
		echo "= $up"
		while read -r l; do echo "$l"; done </proc/net/softnet_stat
		sleep 0.2
	done >"$1.softnet"
}

# rx_trace OUT K (VM_SCALE_DIAG_TRACE=1): once K senders stream, 2 s in, 0.4 s of the net:netif_rx,
# net:netif_receive_skb and net:net_dev_xmit events of the gadget netdevs to OUT.trace. netif_rx is the gadget's
# receive (from dummy_hcd's timer, the CPU whose backlog it joins); netif_receive_skb is the
# backlog's processing, the peer's IP and TCP: the time between them is each frame's wait in
# the CPU's input backlog, per gadget (tests/bench/multi-diag-report.py). net_dev_xmit is a
# download's data handed to f_ncm, on the CPU of the peer's sender or of its ACK processing.
rx_trace() {
	local t=/sys/kernel/debug/tracing n=0
	[ -d "$t/events/net" ] || { echo "no tracefs" >"$1.trace"; return 0; }
	# Streams in either namespace, counted by their kernel senders or their kernel receivers, whichever
	# are more: on the lwip path an upload's only kernel ends are the peer's receivers.
	while [ "$({ ss -tinH state established; peer_run ss -tinH state established; } 2>/dev/null |
		grep -Eo 'bytes_(acked|received):[0-9]*' | awk -F: '$2 > 1000000 { n[$1]++ }
			END { print (n["bytes_acked"] > n["bytes_received"] ? n["bytes_acked"] : n["bytes_received"]) + 0 }')" -lt "$2" ] &&
		[ "$n" -lt 70 ]; do
		sleep 0.3
		n=$((n + 1))
	done
	sleep 2
	echo 0 >"$t/tracing_on"
	echo >"$t/trace"
	echo 8192 >"$t/buffer_size_kb"
	for e in netif_rx netif_receive_skb net_dev_xmit; do
		echo 'name ~ "gadget*"' >"$t/events/net/$e/filter"
		echo 1 >"$t/events/net/$e/enable"
	done
	echo 1 >"$t/tracing_on"
	sleep 0.4
	echo 0 >"$t/tracing_on"
	for e in netif_rx netif_receive_skb net_dev_xmit; do echo 0 >"$t/events/net/$e/enable"; done
	grep -v '^#' "$t/trace" >"$1.trace"
	echo >"$t/trace"
}

# bus_sampler OUT LOG: where the emulated buses ran, to OUT.bus. Every transfer of a
# gadget's bus is done in dummy_hcd's timer (dummy_timer), an hrtimer run as a
# softirq on Debian's 6.1, which re-arms itself on the CPU it runs on: a bus stays
# on one guest CPU for a whole run. Each second, each CPU's HRTIMER softirqs so far
# ("hrtimer TEST N0 N1 ...": the buses' timer runs, almost all of them) and its
# ticks ("stat TEST cpuN ..."), TEST being the test ncm-bench's LOG names last.
# Counters only: switching trace events on and off each second hung a guest once.
# Shell builtins but sleep, as softnet_sampler.
bus_sampler() {
	local test=- l k
	while :; do
		# ncm-bench's "PATH: TEST on K devices at once", the last one so far
		# (a redirect that fails would end the sampler under set -e).
		if [ -r "$2" ]; then
			while read -r l; do
				case $l in *": tcp_"*" on "*) l=${l##*: }; test=${l%% *} ;; esac
			done <"$2"
		fi
		while read -r k l; do
			[ "$k" != HRTIMER: ] || echo "hrtimer $test $l"
		done </proc/softirqs
		while read -r k l; do
			case $k in cpu[0-9]*) echo "stat $test $k $l" ;; esac
		done </proc/stat
		sleep 1
	done >"$1.bus" 2>/dev/null
}

# bus_split OUT TEST: from OUT.bus, each CPU's share of the HRTIMER softirqs and
# its busy share over TEST's samples ("bus timers 88/12 %, CPUs busy 100/41 %"),
# or "-".
bus_split() {
	[ -s "$1.bus" ] || { echo -; return 0; }
	awk -v t="$2" '
		$1 == "hrtimer" && $2 == t { for (i = 3; i <= NF; i++) { if (!seen_h) h0[i] = $i; h1[i] = $i }; seen_h = 1; cpus = NF - 2 }
		$1 == "stat" && $2 == t { c = $3; busy = $4 + $5 + $6 + $9 + $10 + $11; tot = busy + $7 + $8
			if (!(c in b0)) { b0[c] = busy; t0[c] = tot; order[m++] = c }; b1[c] = busy; t1[c] = tot }
		END {
			for (i = 3; i < cpus + 3; i++) all += h1[i] - h0[i]
			if (m == 0) { print "-"; exit }
			s = ""; for (i = 3; i < cpus + 3; i++) s = s (i > 3 ? "/" : "") (all > 0 ? sprintf("%.0f", 100 * (h1[i] - h0[i]) / all) : "-")
			u = ""; for (i = 0; i < m; i++) { c = order[i]; d = t1[c] - t0[c]; u = u (i ? "/" : "") (d > 0 ? sprintf("%.0f", 100 * (b1[c] - b0[c]) / d) : "-") }
			printf "bus timers %s %%, CPUs busy %s %%\n", s, u
		}' "$1.bus"
}

# The hist trigger's spec; "!" before it removes it (and its counts).
sys_hist='hist:keys=common_pid.execname,id.syscall:vals=hitcount:sort=hitcount:size=8192'
sys_enter=/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter

# syscalls_start: counts from now on (VM_SCALE_SYSCALLS=1).
syscalls_start() {
	echo "!$sys_hist" >"$sys_enter/trigger" 2>/dev/null || true
	echo "$sys_hist" >"$sys_enter/trigger"
}

# syscalls_end OUT: the counts to OUT.syscalls, then the peer server's threads (its syscalls are the peer's).
syscalls_end() {
	cat "$sys_enter/hist" >"$1.syscalls"
	echo "!$sys_hist" >"$sys_enter/trigger"
	echo "peer-server-tids $(ls /proc/"$peer_server"/task | tr '\n' ' ')" >>"$1.syscalls"
}

# diag_end OUT: what changed between OUT.0.* and OUT.1.*, to OUT.diag.
diag_end() {
	local f
	for f in host-net peer-net; do
		awk -v w="$f" 'NR == FNR { a[$1] = $2; next } $2 != a[$1] { print w, $1, $2 - a[$1] }' \
			"$1.0.$f" "$1.1.$f"
	done >>"$1.diag"
	{ echo "peer-dev before"; cat "$1.0.peer-dev"; echo "peer-dev after"; cat "$1.1.peer-dev"
	  echo "qdisc before"; cat "$1.0.peer-qdisc"; echo "qdisc after"; cat "$1.1.peer-qdisc"
	  echo "stat before $(cat "$1.0.stat")"; echo "stat after $(cat "$1.1.stat")"; } >>"$1.diag"
	rm -f "$1".[01].*
}

# perf_split OUT: /tmp/scale.perf's samples folded per test, each test's
# measured interval alone (OUT-TEST.folded, OUT-TEST.spans).
perf_split() {
	local t
	[ -s /tmp/scale.spans ] || { echo "perf: $1 measured nothing"; return 0; }
	perf script -i /tmp/scale.perf -F comm,pid,time,ip,sym,dso >/tmp/scale.script 2>"$1.script.log"
	for t in $tests; do
		grep " $t " /tmp/scale.spans >"$1-$t.spans" || continue
		perf_fold "$1-$t.spans" </tmp/scale.script >"$1-$t.folded"
	done
	rm -f /tmp/scale.script /tmp/scale.perf
}

# scale NAME K SPEC [VARIANT [ROUND]]: ncm-bench's multi mode over the K
# devices of SPEC (DEV+DEV+...), each test; its table, then one line per test.
# A VARIANT runs /opt/ab/VARIANT's libraries (and ncm-tun: exec= in SPEC).
scale() {
	local out=$VM_OUT/scale-$1${4:+-$4}${diag_rx:+-rx$diag_rx}${per_ctx:+-ctx$per_ctx}-$2${5:+-r$5} rc=0 t
	log "$1${4:+ ($4)}: $2 device(s)"
	local ss=
	if [ "${VM_SCALE_SS:-}" = 1 ]; then
		# The senders' tcp_info is cumulative: the last sample before they close holds the whole run.
		# Only samples that list a socket: the last ones come after the streams closed.
		(while :; do
			ss -tin state established >"$out.ss.tmp" 2>&1 &&
				[ "$(grep -c . "$out.ss.tmp")" -gt 1 ] && mv "$out.ss.tmp" "$out.ss"
			sleep 0.5
		done) &
		ss=$!
	fi
	local diag= pre=
	if [ "${VM_SCALE_DIAG:-}" = 1 ]; then
		rm -f "$out".diag "$out".samples "$out".ncm.*
		diag_snap "$out" 0
		(while :; do diag_sample >>"$out.samples"; sleep 1; done) &
		diag=$!
		softnet_sampler "$out" &
		diag="$diag $!"
		if [ "${VM_SCALE_DIAG_TRACE:-}" = 1 ]; then
			rx_trace "$out" "$2" &
			diag="$diag $!"
		fi
		pre="LD_PRELOAD=/opt/diag/multi-diag-preload.so MULTI_DIAG_LOG=$out.ncm MULTI_DIAG_RX_TRANSFERS=$diag_rx"
	fi
	local perf=
	if [ "${VM_SCALE_PERF:-}" = "$round" ]; then
		rm -f /tmp/scale.perf /tmp/scale.spans
		perf="perf record -q -a -g -k mono -e cpu-clock -F ${VM_SCALE_PERF_HZ:-499} -o /tmp/scale.perf --"
		pre="$pre NCM_BENCH_SPANS=/tmp/scale.spans"
	fi
	local drops0 mem0 bus
	rm -f "$out.bus" "$out.log"
	bus_sampler "$out" "$out.log" &
	bus=$!
	[ "${VM_SCALE_SYSCALLS:-}" != 1 ] || syscalls_start
	drops0=$(backlog_drops)
	mem0=$(tcp_pages)
	env ${4:+LD_LIBRARY_PATH=/opt/ab/$4} ${per_ctx:+NCM_BENCH_LWIP_PER_CONTEXT=$per_ctx} $pre $perf ncm-bench --multi --reps 1 --secs "$secs" \
		--tests "$(echo $tests | tr ' ' ,)" --path "$1=$3" \
		--json "$out.json" >"$out.txt" 2>"$out.log" || rc=$?
	drops=$(($(backlog_drops) - drops0))
	kill "$bus" 2>/dev/null || true
	wait "$bus" 2>/dev/null || true
	[ "${VM_SCALE_SYSCALLS:-}" != 1 ] || syscalls_end "$out"
	[ -z "$perf" ] || perf_split "$out"
	[ -z "$ss" ] || kill "$ss" 2>/dev/null || true
	if [ -n "$diag" ]; then
		kill $diag 2>/dev/null || true
		wait $diag 2>/dev/null || true
		diag_snap "$out" 1
		diag_end "$out"
	fi
	cat "$out.txt"
	if [ "$rc" != 0 ] || [ ! -s "$out.json" ]; then
		tail -n 30 "$out.log"
		bad="$bad $1/$2(status $rc)"
		scale_failed "$1" "$2"
		return 0
	fi
	for t in $tests; do
		if ! result "$out.json" "$t" | grep -q '"device_mbit_s"'; then
			result "$out.json" "$t" || true
			bad="$bad $1/$2/$t"
			scale_failed "$1" "$2"
			continue
		fi
		# Every device moved data: the smallest per-device figure is above 0.
		awk -v v="$(result "$out.json" "$t" | sed -n 's/.*"per_device_mbit_s":{"median":[^,]*,"min":\([^,]*\),.*/\1/p')" \
			'BEGIN { exit !(v + 0 > 0) }' || bad="$bad $1/$2/$t(a device moved nothing)"
		echo "scale: $1${4:+ ($4)}${diag_rx:+ rx_transfers $diag_rx}${per_ctx:+ $per_ctx per context}${5:+ round $5}$(! reversed || echo ' reversed') $2 $t: total $(fig "$out.json" "$t" mbit_s %.1f) Mbit/s," \
			"per device min/median/max $(result "$out.json" "$t" | sed -n 's/.*"per_device_mbit_s":{"median":\([^,]*\),"min":\([^,]*\),"max":\([^,]*\),.*/\2 \1 \3/p' |
				awk '{ printf "%.1f/%.1f/%.1f", $1, $2, $3 }')," \
			"fairness $(fig "$out.json" "$t" fairness %.2f)," \
			"system CPU $(fig "$out.json" "$t" system_cpu_s_per_mb %.4f) s/MB ($(fig "$out.json" "$t" system_cpu_busy_pct %.0f) % busy)," \
			"event thread $(fig "$out.json" "$t" event_thread_cpu_pct %.0f) % of a CPU," \
			"threads waiting for lwIP's core lock $(fig "$out.json" "$t" lwip_core_lock_waiting %.2f)," \
			"$(bus_split "$out" "$t")," \
			"backlog drops $drops (netdev_max_backlog $(cat /proc/sys/net/core/netdev_max_backlog), RPS $rps)," \
			"TCP memory at start $mem0 pages (tcp_mem $(tr '\t' ' ' </proc/sys/net/ipv4/tcp_mem))," \
			"per device $(result "$out.json" "$t" | sed -n 's/.*"device_mbit_s":\[\([^]]*\)\].*/\1/p')"
	done
}

# scale_failed PATH K: a run over PATH's K devices failed; for cdc_ncm the
# kernel's view of them goes to kernel-state.txt.
scale_failed() {
	[ "$1" = cdc_ncm ] || return 0
	log "cdc_ncm at $2 device(s) failed: state in kernel-state.txt"
	multi_kernel_state $(seq 0 $(($2 - 1)))
}

# round_order VARIANT...: the variants in this round's order (reversed in even
# rounds), "-" for none.
round_order() {
	[ $# -gt 0 ] || { echo -; return; }
	if [ $((round % 2)) = 0 ]; then
		local v r=
		for v in "$@"; do r="$v $r"; done
		echo "$r"
	else
		echo "$*"
	fi
}

# round_tag R: a run's round in its file name and scale: line, when there are several.
round_tag() { [ "$rounds" -le 1 ] || echo "$1"; }

# backlog_drops: frames the kernel dropped because a CPU's input backlog was
# full (netdev_max_backlog), both namespaces: /proc/net/softnet_stat's second column.
backlog_drops() {
	local n=0 d
	while read -r _ d _; do n=$((n + 0x$d)); done </proc/net/softnet_stat
	echo "$n"
}

# backlog_set R: VM_SCALE_BACKLOG's value for round R (cycled), as
# net.core.netdev_max_backlog.
backlog_set() {
	round_pick "$1" ${VM_SCALE_BACKLOG:-10000} >/proc/sys/net/core/netdev_max_backlog
}

# rps_set R: VM_SCALE_RPS's value for round R (cycled) as the gadget netdevs' rps_cpus in
# namespace peer: off (0, the frames join the backlog of the CPU that ran dummy_hcd's timer),
# hash (every CPU, by flow hash), split (gadget I's frames to CPU I mod CPUs), one (all to CPU 0:
# see VM_SCALE_RPS in the header).
rps_set() {
	local m i=0 n v
	m=$(round_pick "$1" ${VM_SCALE_RPS:-off})
	n=$(nproc)
	while [ "$i" -lt "$max" ]; do
		case $m in
		off) v=0 ;;
		hash) v=$(printf '%x' $(((1 << n) - 1))) ;;
		split) v=$(printf '%x' $((1 << (i % n)))) ;;
		one) v=1 ;;
		*) fail "VM_SCALE_RPS: unknown value $m" ;;
		esac
		peer_run sh -c "echo $v >/sys/class/net/$(multi_ifname "$i")/queues/rx-0/rps_cpus" ||
			fail "cannot set rps_cpus of $(multi_ifname "$i")"
		i=$((i + 1))
	done
	rps=$m
}
rps=off

# reversed: this round lists the gadgets last first (VM_SCALE_ORDER=reverse,
# or alternate: every second round, so both orders meet in one boot).
reversed() {
	case ${VM_SCALE_ORDER:-} in
	reverse) return 0 ;;
	alternate) [ $((round % 2)) = 0 ] ;;
	*) return 1 ;;
	esac
}

# spec PATH K [VARIANT]: the multi path's devices 0..K-1 (DEV+DEV+...).
spec() {
	local i=0 s= d g
	while [ "$i" -lt "$2" ]; do
		g=$i
		! reversed || g=$(($2 - 1 - i))
		case $1 in
		cdc_ncm) d="$(multi_peer_ip4 "$g")%$(multi_host_netdev "$g")" ;;
		ncm-tun) d="$(multi_peer_ip4 "$g"),ipv4=$(multi_host_ip4 "$g")/24,dev=serial=$(multi_serial "$g"),name=nbm%d${3:+,exec=/opt/ab/$3/ncm-tun}" ;;
		lwip) d="$(multi_peer_ip4 "$g"),ipv4=$(multi_host_ip4 "$g")/24,dev=serial=$(multi_serial "$g")" ;;
		esac
		s="$s${s:++}$d"
		i=$((i + 1))
	done
	echo "$s"
}

# Only the K devices measured are up: usbnet polls the interrupt endpoint of
# an open netdev, and each poll of an idle device is dummy_hcd timer work
# that the guest's CPU pays for (the userspace paths open only K devices).
# Each of the K gets a ping through its netdev before the run.
multi_kernel_up() { # K
	local i=0 dev
	while [ "$i" -lt "$max" ]; do
		dev=$(multi_host_netdev "$i")
		if [ "$i" -lt "$1" ]; then
			$IP link set "$dev" up
			multi_kernel_reach "$i" "$dev"
		else
			$IP link set "$dev" down
		fi
		i=$((i + 1))
	done
}

for p in $paths; do
	case $p in
	cdc_ncm)
		modprobe cdc_ncm || fail "cannot load cdc_ncm"
		i=0
		while [ "$i" -lt "$max" ]; do
			wait_for "$VM_WAIT" "cdc_ncm netdev of gadget $i" multi_host_netdev "$i" ||
				fail "cdc_ncm did not bind gadget $i"
			$IP addr replace "$(multi_host_ip4 "$i")/24" dev "$(multi_host_netdev "$i")"
			i=$((i + 1))
		done
		r=1
		while [ "$r" -le "$rounds" ]; do
			rtag=$(round_tag "$r") round=$r
			backlog_set "$r"
			rps_set "$r"
			tcp_mem_set "$r"
			for k in $counts; do
				multi_kernel_up "$k"
				scale cdc_ncm "$k" "$(spec cdc_ncm "$k")" "" "$rtag"
			done
			r=$((r + 1))
		done
		# Back to userspace: cdc_ncm goes, and each gadget announces its link
		# afresh for the next driver.
		rmmod cdc_ncm || fail "cannot unload cdc_ncm"
		i=0
		while [ "$i" -lt "$max" ]; do multi_bounce "$i"; i=$((i + 1)); done
		;;
	ncm-tun|lwip)
		r=1
		while [ "$r" -le "$rounds" ]; do
			rtag=$(round_tag "$r") round=$r
			backlog_set "$r"
			rps_set "$r"
			tcp_mem_set "$r"
			for k in $counts; do
				vs=$variants
				[ "$p" != ncm-tun ] || vs=$tun_variants
				for diag_rx in ${VM_SCALE_DIAG_RX:--}; do
					diag_rx=${diag_rx#-}
					first=1
					for per_ctx in ${VM_SCALE_LWIP_PER_CTX:--}; do
						per_ctx=${per_ctx#-}
						[ "$p" = lwip ] || per_ctx=
						if [ -n "$per_ctx" ] && [ -z "$first" ] && [ "$per_ctx" -ge "$k" ]; then
							continue
						fi
						first=
						for v in $(round_order $vs); do
							v=${v#-}
							scale "$p" "$k" "$(spec "$p" "$k" "$v")" "$v" "$rtag"
						done
						[ -n "$per_ctx" ] || break
					done
					per_ctx=
				done
				diag_rx=
			done
			r=$((r + 1))
		done
		;;
	*) fail "VM_SCALE_PATHS: unknown path $p" ;;
	esac
done
# The table reads one point per path and count: not A/B or rounds (the scale: lines have them).
[ -n "$variants" ] || [ "$rounds" -gt 1 ] || table
vm_info
echo "guest load: $(cat /proc/loadavg)"
check "every ncm-bench run ended with every device moving data (failed:${bad:- none})" [ -z "$bad" ]
