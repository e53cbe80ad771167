#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-bench.sh: a short ncm-bench over cdc_ncm, ncm-tun, lwIP, ncm-proxy and the raw path (the usbfs ceiling) in one boot; checks the JSON's shape and that each path moved data.
# BENCH_TESTS picks the tests (default a quick subset); BENCH_ARGS adds options. No speed is asserted.
set -eu
. "$VM_LIB"

command -v ncm-bench >/dev/null || fail "ncm-bench is not on PATH (run-vm.sh --bin)"
command -v ncm-tun >/dev/null || fail "ncm-tun is not on PATH (run-vm.sh --bin)"
command -v ncm-proxy >/dev/null || fail "ncm-proxy is not on PATH (run-vm.sh --bin)"
TUN=ncmbench0
JSON=$VM_OUT/bench.json
tests=${BENCH_TESTS:-tcp_down,tcp_up,udp_rtt_64,rtt_under_up,raw_down,raw_up}

# result PATH TEST: the result's line in the JSON (ncm-bench writes one per line).
result() { grep "^{\"path\":\"$1\",\"test\":\"$2\"," "$JSON"; }

# median PATH TEST: its mbit_s median.
median() {
	result "$1" "$2" | sed -n 's/.*"mbit_s":{"median":\([0-9.e+-]*\),.*/\1/p'
}

selected() { # TEST: the test list names it or a prefix of it
	local t
	for t in $(echo "$tests" | tr , ' '); do
		case $1 in "$t"*) return 0 ;; esac
	done
	return 1
}

has() { # PATH TEST TEXT: the result contains TEXT
	result "$1" "$2" | grep -qF "$3"
}

lacks() { # PATH TEST TEXT: the result does not contain TEXT
	! result "$1" "$2" | grep -qF "$3"
}

moved() { # PATH TEST
	awk -v v="$(median "$1" "$2")" 'BEGIN { exit !(v + 0 > 0) }'
}

bench_setup
carrier_keeper "$TUN" &
keeper=$!

# .2 is cdc_ncm's address; ncm-tun (.4), lwIP (.3), ncm-proxy (.6) and the raw path's control (.5) follow it on the same function.
rc=0
ncm-bench --quick --tests "$tests" ${BENCH_ARGS:-} \
	--path "cdc_ncm=$(peer_ip4)%$(host_netdev 0)" \
	--path "ncm-tun=$(peer_ip4),ipv4=192.168.77.4/24,dev=serial=$VM_SERIAL,name=$TUN" \
	--path "lwip=$(peer_ip4),ipv4=192.168.77.3/24,dev=serial=$VM_SERIAL" \
	--path "ncm-proxy=$(peer_ip4),ipv4=192.168.77.6/24,dev=serial=$VM_SERIAL" \
	--path "raw=$(peer_ip4),ipv4=192.168.77.5/24,dev=serial=$VM_SERIAL" \
	--json "$JSON" --plot "$VM_OUT/bench.svg" >"$VM_OUT/bench.txt" 2>"$VM_OUT/bench.log" || rc=$?
kill "$keeper" 2>/dev/null || true
cat "$VM_OUT/bench.log" "$VM_OUT/bench.txt"
[ "$rc" != 3 ] || fail "a test hung and ncm-bench's watchdog stopped the run (the table shows which)"
check "ncm-bench exited 0" [ "$rc" = 0 ]

# Shape: one object with env and results; each result names its path and test.
check "JSON starts with tool and env" grep -q '^{"tool":"ncm-bench","env":{' "$JSON"
check "JSON has results" grep -q '"results":\[' "$JSON"
check "JSON ends the results" grep -q '^\]}$' "$JSON"
check "env lists the five paths" grep -q '"paths":\[{"name":"cdc_ncm".*{"name":"ncm-tun".*{"name":"lwip".*{"name":"ncm-proxy".*{"name":"raw"' "$JSON"
check "env describes ncm-tun" grep -q '"ncm_tun":{"exec":' "$JSON"
check "env describes ncm-proxy" grep -q '"ncm_proxy":{"exec":' "$JSON"
check "env says when ncm-tun first carried traffic" grep -q '"first_traffic_ms":[0-9]' "$JSON"
check "no result has an error" sh -c "! grep -qF '\"error\":' '$JSON'"
for p in cdc_ncm ncm-tun lwip ncm-proxy; do
	for t in tcp_down tcp_up; do
		selected $t || continue
		check "$p $t moved data (median $(median $p $t) Mbit/s)" moved "$p" "$t"
	done
	if selected rtt_under_up; then
		check "$p rtt_under_up has rtt_ms" has "$p" rtt_under_up '"rtt_ms":{"p50":'
		# The upload beside the probes ran and the peer counted it.
		load=$(result "$p" rtt_under_up | sed -n 's/.*"load_mbit":\([0-9.e+-]*\).*/\1/p')
		check "$p rtt_under_up ran beside an upload (${load:-no} Mbit/s)" \
			awk -v v="${load:-0}" 'BEGIN { exit !(v + 0 > 1) }'
	fi
	selected udp_rtt_64_10hz || continue
	check "$p udp_rtt_64_10hz has rtt_ms" has "$p" udp_rtt_64_10hz '"rtt_ms":{"p50":'
done
for p in cdc_ncm ncm-tun lwip ncm-proxy; do
	for t in tcp_down tcp_up tcp_bidir; do
		selected $t || continue
		check "$p $t has whole-system CPU per MB" has "$p" "$t" '"system_cpu_s_per_mb":{"median":'
	done
done
if selected tcp_down; then
	check "ncm-tun reports its own CPU per MB" has ncm-tun tcp_down '"ncm_tun_cpu_s_per_mb":'
	check "lwip reports main-context dispatches per MB" has lwip tcp_down '"main_dispatches_per_mb":'
	# USB transfers per MB each way: libncm's counts, in process (lwip) or from ncm-tun's statistics.
	check "ncm-proxy reports its own CPU per MB" has ncm-proxy tcp_down '"ncm_tun_cpu_s_per_mb":'
	for p in ncm-tun lwip ncm-proxy; do
		check "$p tcp_down has USB IN transfers per MB" has "$p" tcp_down '"usb_rx_ntbs_per_mb":{"median":'
		check "$p tcp_down has USB OUT transfers per MB" has "$p" tcp_down '"usb_tx_ntbs_per_mb":{"median":'
	done
	check "cdc_ncm has no USB work units" lacks cdc_ncm tcp_down usb_rx_ntbs_per_mb
fi
# The ceiling: raw frames each way, counted where they land (libncm's sink,
# the gadget's rx_packets); every TCP test of every path is then a fraction
# of it. 10 Mbit/s: the raw path's control connection alone carries a few
# frames a second, which the gadget's count would show as ~0.05.
check "raw ran no TCP test" sh -c "! grep -q '^{\"path\":\"raw\",\"test\":\"tcp_' '$JSON'"
for t in raw_down raw_up; do
	selected $t || continue
	check "raw $t moved data (median $(median raw $t) Mbit/s)" \
		awk -v v="$(median raw $t)" 'BEGIN { exit !(v + 0 > 10) }'
	check "raw $t has whole-system CPU per MB" has raw "$t" '"system_cpu_s_per_mb":{"median":'
	check "raw $t has USB transfers per MB" has raw "$t" '"usb_rx_ntbs_per_mb":{"median":'
	tcp=tcp_${t#raw_}
	selected "$tcp" || continue
	for p in cdc_ncm ncm-tun lwip ncm-proxy; do
		check "$p $tcp is a fraction of the ceiling" has "$p" "$tcp" '"ceiling_fraction":{"median":'
	done
	check "the table shows $tcp of ceiling" grep -q "^$tcp of ceiling" "$VM_OUT/bench.txt"
done
check "ncm-tun removed its interface" [ ! -e "/sys/class/net/$TUN" ]
check "plot written" grep -q '<svg' "$VM_OUT/bench.svg"
vm_info
