#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/guest-ab.sh: inside the VM, builds of the same ncm-bench side by side in one boot.
# AB_VARIANTS names directories under /opt/ab (each holds one build's shared
# libraries, copied in by tests/bench/ab.sh); "base" is the build on PATH. For
# each of AB_REPS rounds, every variant (and cdc_ncm, for the ratio) runs
# AB_TESTS once over AB_PATH. Rounds go in pairs: an odd round rotates the list
# one further than the pair before (no variant always runs first), the even round
# after it runs that order backwards, so that in each pair every variant's mean
# place is the same (a drift over the pair favours none) and no variant always
# runs after the same one: a rotation alone kept base right after cdc_ncm and the
# first variant right after base, and in session 18 base's own build as that
# variant ran 10-20 % below base on ncm-tun's downloads in three boots of three
# (tests/bench/RESULTS.md). On the proxy path base's lwip path runs too, as
# the reference of the proxy's target. Results: $VM_OUT/ab-VARIANT-ROUND.json.
# AB_COUNT=1: each run under a system-wide `perf stat` of tracepoints (syscalls
# entered, context switches, wake-ups, softirqs; COUNT_SYSCALLS=1 adds the data
# path's syscalls one by one) into $VM_OUT/ab-VARIANT-ROUND.stat: counts that do
# not depend on how much CPU the host gives the VM (tests/bench/count-report.py).
# AB_HOPS=1: each run under a system-wide `perf record -k mono` of the round
# trip's hops (the client's and the echo server's socket calls, the data
# threads' syscalls and wake-ups, the host's URB submissions and completions
# through two kprobes, the gadget's request queueing and completion) into
# $VM_OUT/ab-VARIANT-ROUND.hops, and ncm-bench's echoes (NCM_BENCH_ECHOES,
# when the base build's ncm-bench has it) into .echoes: tests/bench/rtt-hops.py
# cuts each probe into its hops. AB_REF=lwip adds base's lwip path to every
# round (as the proxy path always does), for a third column in the same boot.
# AB_SCHED_SYSCALLS=1 (with AB_SCHED=1) records every syscall entered too:
# sched-report.py then counts them per thread and kind.
set -eu
. "$VM_LIB"

TUN=ncmbench0
SECS=${AB_SECS:-5}
REPS=${AB_REPS:-3}
TESTS=${AB_TESTS:-tcp_down,tcp_up,tcp_bidir}

EVENTS=raw_syscalls:sys_enter,sched:sched_switch,sched:sched_wakeup,irq:softirq_entry
[ -z "${COUNT_SYSCALLS:-}" ] || for s in ioctl poll ppoll read readv write writev sendmsg recvmsg sendto recvfrom futex madvise; do
	EVENTS=$EVENTS,syscalls:sys_enter_$s
done
# and the user page faults: memory handed back and touched again costs one each, zeroed.
[ -z "${COUNT_SYSCALLS:-}" ] || EVENTS=$EVENTS,exceptions:page_fault_user
if [ -n "${AB_COUNT:-}${AB_SCHED:-}${AB_HOPS:-}" ]; then
	# perf finds tracepoints through tracefs, which the guest does not mount itself.
	[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
		mount -t debugfs nodev /sys/kernel/debug || true
fi

# The hops' events (without perf's own: its writes to the record are
# traced too, and each write of them is another event). The kprobes read struct urb's pipe (offset 80) and
# lengths (128 asked, 132 done) as 6.1 lays it out; rtt-hops.py checks that
# the pipes read are bulk ones.
HOP_EVENTS=sched:sched_wakeup,sched:sched_switch,net:netif_rx,net:netif_receive_skb,net:net_dev_queue
for s in sendto sendmsg ioctl read readv write writev; do
	HOP_EVENTS=$HOP_EVENTS,syscalls:sys_enter_$s
done
for s in recvfrom recvmsg ioctl poll ppoll; do
	HOP_EVENTS=$HOP_EVENTS,syscalls:sys_exit_$s
done
HOP_EVENTS=$HOP_EVENTS,gadget:usb_ep_queue,gadget:usb_gadget_giveback_request,hops:urb_submit,hops:urb_giveback
# AB_HOPS_EXTRA: more events for the record, which rtt-hops.py passes over
# (interrupts, timers: what else a CPU ran inside a hop).
[ -z "${AB_HOPS_EXTRA:-}" ] || HOP_EVENTS=$HOP_EVENTS,$AB_HOPS_EXTRA
hops_setup() {
	local t=/sys/kernel/tracing
	[ -e $t/kprobe_events ] || t=/sys/kernel/debug/tracing
	echo 'p:hops/urb_submit usb_hcd_submit_urb pipe=+80(%di):u32 len=+128(%di):u32' >>$t/kprobe_events &&
		echo 'p:hops/urb_giveback usb_hcd_giveback_urb pipe=+80(%si):u32 len=+132(%si):u32 status=%dx:s32' \
			>>$t/kprobe_events || fail "AB_HOPS: cannot add the kprobes"
}

# snap OUT SUFFIX: the per-CPU interrupt, softirq and time counters, for deltas over a run.
snap() {
	cat /proc/interrupts >"$1.irq$2"
	cat /proc/softirqs >"$1.softirq$2"
	grep '^cpu' /proc/stat >"$1.cpu$2"
}

# run OUT COMMAND...: COMMAND, under perf stat into OUT.stat with AB_COUNT;
# with AB_SCHED also under perf record of the scheduler's switches, wake-ups
# and migrations into OUT.sched (which thread ran on which CPU, woken by whom:
# tests/bench/sched-report.py) and the per-CPU counters around it.
run() {
	local out=$1 rec=
	shift
	# Not around cdc_ncm: under a recording perf it can fall into dummy_hcd's
	# spinlock contention (PERF.md), and one boot hung there for minutes.
	if [ -n "${AB_SCHED:-}" ] && [ "${out##*/ab-cdc_ncm-}" = "$out" ]; then
		rec="perf record -a -q -o /tmp/ab-sched.data -e sched:sched_switch,sched:sched_wakeup,sched:sched_migrate_task${AB_SCHED_SYSCALLS:+,raw_syscalls:sys_enter} --"
		snap "$out" 0
	fi
	if [ -n "${AB_HOPS:-}" ]; then
		rm -f "$out.echoes"
		NCM_BENCH_ECHOES=$out.echoes perf record -a -q -k mono -o /tmp/ab-hops.data \
			-e "$HOP_EVENTS" --exclude-perf -- "$@"
	elif [ -n "${AB_COUNT:-}" ]; then
		perf stat -a -x, -o "$out.stat" -e "$EVENTS" -- $rec "$@"
	else
		$rec "$@"
	fi
	local rc=$?
	[ -z "${AB_HOPS:-}" ] || { cp /tmp/ab-hops.data "$out.hops" && rm -f /tmp/ab-hops.data; }
	if [ -n "$rec" ]; then
		snap "$out" 1
		cp /tmp/ab-sched.data "$out.sched" && rm -f /tmp/ab-sched.data
	fi
	return $rc
}

bench_setup
[ -z "${AB_HOPS:-}" ] || hops_setup
carrier_keeper "$TUN" &
keeper=$!

case ${AB_PATH:-lwip} in
lwip) spec="lwip=$(peer_ip4),ipv4=192.168.77.3/24,dev=serial=$VM_SERIAL" ;;
ncm-tun) spec="ncm-tun=$(peer_ip4),ipv4=192.168.77.4/24,dev=serial=$VM_SERIAL,name=$TUN" ;;
proxy) spec="ncm-proxy=$(peer_ip4),ipv4=192.168.77.6/24,dev=serial=$VM_SERIAL" ;;
*) fail "AB_PATH: lwip, ncm-tun or proxy" ;;
esac

rc=0
# The proxy's target is a ratio to the lwip path (same lwIP, same libncm): base's
# lwip path runs in every round too.
ref=${AB_REF:-}
[ "${AB_PATH:-lwip}" != proxy ] || ref=lwip
variants="cdc_ncm $ref base $(echo "${AB_VARIANTS:-}" | tr , ' ')"
round=1
while [ "$round" -le "$REPS" ]; do
	order=$(round_order "$round" $variants)
	for v in $order; do
		log "ab: round $round $v"
		out=$VM_OUT/ab-$v-$round
		case $v in
		cdc_ncm)
			# The libncm paths unbind cdc_ncm; its netdev comes back under another name.
			host_use_kernel
			host_addr_setup 0
			wait_for "$VM_WAIT" "IPv4 path" ping -c 1 -W 1 "$(peer_ip4)" || fail "no IPv4 path over cdc_ncm"
			run "$out" ncm-bench --reps 1 --secs "$SECS" --tests "$TESTS" \
				--path "cdc_ncm=$(peer_ip4)%$(host_netdev 0)" --json "$out.json" ;;
		lwip) run "$out" ncm-bench --reps 1 --secs "$SECS" --tests "$TESTS" \
			--path "lwip=$(peer_ip4),ipv4=192.168.77.3/24,dev=serial=$VM_SERIAL" --json "$out.json" ;;
		base) run "$out" ncm-bench --reps 1 --secs "$SECS" --tests "$TESTS" --path "$spec" \
				--json "$out.json" ;;
		*)
			vspec=$spec
			case ${AB_PATH:-lwip} in
			ncm-tun) vspec="$spec,exec=/opt/ab/$v/ncm-tun" ;;
			proxy) vspec="$spec,exec=/opt/ab/$v/ncm-proxy" ;;
			esac
			run "$out" env LD_LIBRARY_PATH="/opt/ab/$v:${LD_LIBRARY_PATH:-}" ncm-bench --reps 1 \
				--secs "$SECS" --tests "$TESTS" --path "$vspec" --json "$out.json" ;;
		esac >"$out.txt" 2>"$out.log" || { rc=1; tail -5 "$out.log"; }
	done
	round=$((round + 1))
done
kill "$keeper" 2>/dev/null || true
[ "$rc" = 0 ] || fail "a run failed"
