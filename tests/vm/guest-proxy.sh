#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-proxy.sh: guest test: ncm-proxy as uid 65534 with only a chowned usbfs node (no capabilities, no TAP): the permission error, curl through SOCKS by IP and by name, 64 concurrent checksummed connections, UDP ASSOCIATE echo, SIGTERM.
# VM_PROXY_PART=forward instead: -L to the peer's iperf3 both ways and -R from the peer.
# VM_PROXY_PART=fd instead: a root broker opens the node, drops to uid 65534 and execs ncm-proxy --usb-fd 3 with /dev/bus/usb hidden; addresses by DHCP and SLAAC, DNS servers by DHCP and RDNSS.
# VM_PROXY_PART=replug: ncm-proxy --persist through an unplug and replug, serving before and after.
# VM_PROXY_PART=udev-rule (VM_UDEVD=1): nothing chowned; the udev rule ncm-proxy's permission error suggests, installed as it says, lets uid 65534 in group plugdev run it; so does libncm's 50-libncm.rules, also across a replug under --persist with no failed open; that rule takes NCM in configuration 2 and leaves a device without NCM alone.
set -eu
. "$VM_LIB"

for t in ncm-proxy curl dns-answer socks-udp ra-send drop-exec; do
	command -v "$t" >/dev/null || fail "$t is not on PATH (run-vm.sh --bin)"
done
NOBODY=65534
PROXY_LOG=$VM_OUT/ncm-proxy.log
SOCKS=127.0.0.1:1080
WWW=/tmp/www
# Sanitized builds are ~10x slower: fewer and smaller files there.
CONNS=${VM_PROXY_CONNS:-64}
FILE_KB=${VM_PROXY_FILE_KB:-64}
BIG_KB=${VM_PROXY_BIG_KB:-1024}
IPERF_S=${VM_PROXY_IPERF_S:-3}

proxy_alive() { kill -0 "$PROXY_PID" 2>/dev/null; }
proxy_running() { grep -q "running on" "$PROXY_LOG"; }
cdc_ncm_back() { host_netdevs_up; }
md5() { md5sum "$1" | cut -d' ' -f1; }

# fetch WHAT URL: one file through SOCKS, compared with the one served.
fetch() {
	local out=/tmp/fetch.out
	rm -f "$out"
	curl -sS --max-time 60 --socks5-hostname "$SOCKS" -o "$out" "$2" ||
		{ cat "$PROXY_LOG"; fail "curl $1 ($2) failed"; }
	check "$1: $(wc -c <"$out") bytes, the same as served" [ "$(md5 "$out")" = "$(md5 "$WWW/big")" ]
}

# The peer serves files over HTTP and answers DNS for peer.test (A) and peer6.test (AAAA).
serve_peer() {
	mkdir -p "$WWW"
	head -c $((BIG_KB * 1024)) /dev/urandom >"$WWW/big"
	for i in $(seq "$CONNS"); do head -c $((FILE_KB * 1024)) /dev/urandom >"$WWW/f$i"; done
	peer_run busybox httpd -f -p 80 -h "$WWW" &
	peer_run dns-answer "$(peer_ip4)" "peer.test=$(peer_ip4)" "peer6.test=$(peer_ip6)" \
		>"$VM_OUT/dns.log" 2>&1 &
	peer_run socks-udp echo "$(peer_ip4)" 7 >/dev/null 2>&1 &
	peer_run socks-udp echo "$(peer_ip6)" 7 >/dev/null 2>&1 &
	wait_for "$VM_WAIT" "HTTP listener in $PEER_NS" peer_listening 80 || fail "httpd did not start"
}

# stop_proxy: SIGTERM, exit 0, statistics printed, the function back with cdc_ncm.
stop_proxy() {
	local rc=0
	kill -USR1 "$PROXY_PID"
	wait_for 10 "statistics on SIGUSR1" grep -q "relayed" "$PROXY_LOG" || fail "no statistics"
	kill -TERM "$PROXY_PID"
	wait "$PROXY_PID" || rc=$?
	cat "$PROXY_LOG"
	check "ncm-proxy exits 0 on SIGTERM" [ "$rc" = 0 ]
	check "cdc_ncm has the function back" wait_for "$VM_WAIT" "cdc_ncm netdev" cdc_ncm_back
}

# unprivileged PID: uid 65534 and an empty effective capability set.
unprivileged() {
	grep -q "^Uid:[[:space:]]*$NOBODY[[:space:]]" "/proc/$1/status" &&
		grep -q "^CapEff:[[:space:]]*0000000000000000" "/proc/$1/status"
}

concurrent() {
	local args="" i bad=0
	for i in $(seq "$CONNS"); do
		args="$args -o /tmp/c$i http://$(peer_ip4)/f$i"
	done
	rm -f /tmp/c[0-9]*
	# shellcheck disable=SC2086 # one word per argument
	# curl 7.88 draws its parallel progress meter even with -s.
	curl -sS --max-time 120 -Z --parallel-max "$CONNS" --socks5-hostname "$SOCKS" $args \
		2>"$VM_OUT/curl-parallel.err" ||
		{ cat "$VM_OUT/curl-parallel.err" "$PROXY_LOG"; fail "curl --parallel failed"; }
	for i in $(seq "$CONNS"); do
		[ "$(md5 "/tmp/c$i")" = "$(md5 "$WWW/f$i")" ] || { log "file f$i differs"; bad=$((bad + 1)); }
	done
	check "$CONNS concurrent SOCKS connections, each file's MD5 as served" [ "$bad" = 0 ]
}

iperf3_forward() {
	local dir flag mbits
	for dir in up down; do
		flag=
		[ $dir = down ] && flag=-R
		iperf3 -c 127.0.0.1 -p 5201 -t "$IPERF_S" -J $flag >"$VM_OUT/iperf3-$dir.json" ||
			{ cat "$PROXY_LOG"; fail "iperf3 through -L ($dir) failed"; }
		mbits=$(iperf3_mbits "$VM_OUT/iperf3-$dir.json")
		echo "iperf3 through -L $dir: $mbits Mbit/s"
		check "iperf3 through -L $dir moved data" [ "${mbits:-0}" -ge 1 ]
	done
}

# udp_echo HOST COUNT [MAX]: UDP ASSOCIATE, COUNT datagrams of up to MAX
# bytes (1400) to the peer's echo server, each echo checked.
udp_echo() {
	socks-udp client 127.0.0.1 1080 "$1" 7 "$2" ${3:-} >"$VM_OUT/udp.log" 2>&1 ||
		{ cat "$VM_OUT/udp.log" "$PROXY_LOG"; fail "UDP ASSOCIATE to $1 failed"; }
	check "UDP ASSOCIATE to $1: $(cat "$VM_OUT/udp.log")" true
}

# ncm-proxy as uid 65534 on the chowned node, with SOCKS, -L to the peer's
# iperf3 and -R from the peer's port 8080 to the host's 8000.
start_unprivileged() {
	drop-exec "$NOBODY" "$NOBODY" ncm-proxy --device "serial=$VM_SERIAL" \
		--ipv4 "$(host_ip4)/24" --ipv6 "$(host_ip6)" --no-dad --dns "$(peer_ip4)" \
		-L "5201:$(peer_ip4):5201" -R "8080:127.0.0.1:8000" >"$PROXY_LOG" 2>&1 &
	PROXY_PID=$!
	wait_for "$VM_WAIT" "ncm-proxy running" proxy_running || { cat "$PROXY_LOG"; fail "ncm-proxy did not start"; }
	log "ncm-proxy runs"
	check "ncm-proxy runs as uid $NOBODY with no capabilities" unprivileged "$PROXY_PID"
	check "cdc_ncm let go of the function" wait_for 10 "cdc_ncm release" cdc_ncm_gone
	check "uid $NOBODY may not create a TAP" sh -c "! drop-exec $NOBODY $NOBODY $IP tuntap add mode tap name pxno0 2>/dev/null"
}

run_main() {
	local rc sel
	# Before the node is ours: a clear error that names the node and a udev
	# rule, exit 2; also when a serial= selector cannot be read for it.
	for sel in "$(hex4 "$VM_VID"):$(hex4 "$VM_PID")" "serial=$VM_SERIAL"; do
		rc=0
		drop-exec "$NOBODY" "$NOBODY" ncm-proxy --device "$sel" --ipv4 "$(host_ip4)/24" \
			>"$VM_OUT/no-permission.log" 2>&1 || rc=$?
		cat "$VM_OUT/no-permission.log"
		check "--device $sel, no permission on the node: exit 2" [ "$rc" = 2 ]
		check "... and the message names the node and a udev rule" \
			grep -q "$(usb_node).*udev rule" "$VM_OUT/no-permission.log"
	done
	chown "$NOBODY" "$(usb_node)"
	start_unprivileged
	# Before any connection: lwIP's one-second beat (5-6 in 5 s), the event
	# thread's ceiling (1-2) and, this soon after link-up, lwIP's router
	# solicitations (one per 4 s, each an OUT transfer): 7-8 seen; 15 leaves
	# room, where lwIP's own timeouts and libncm's old tick made 100.
	sleep 2
	idle_check ncm-proxy "$PROXY_PID" 5 15
	fetch "SOCKS by IPv4 address" "http://$(peer_ip4)/big"
	fetch "SOCKS by IPv6 address" "http://[$(peer_ip6)]/big"
	fetch "SOCKS by name (A)" "http://peer.test/big"
	fetch "SOCKS by name (AAAA only)" "http://peer6.test/big"
	check "the peer's DNS server was asked for peer.test" grep -q "query peer.test A" "$VM_OUT/dns.log"
	log "$CONNS concurrent connections"
	concurrent
	log "UDP ASSOCIATE"
	udp_echo "$(peer_ip4)" 100
	udp_echo "$(peer_ip6)" 20
	# Datagrams of up to 60000 bytes: 41 or more fragments each way, which
	# lwIP reassembles (IP_REASS_MAX_PBUFS; its default of 10 fragments
	# took about 14 KB over IPv4 and 11.5 KB over IPv6).
	udp_echo "$(peer_ip4)" 8 60000
	udp_echo "$(peer_ip6)" 8 60000
	udp_echo peer.test 20
	stop_proxy
}

# The forwards, in a boot of their own (with the SOCKS part, a loaded
# machine took the sanitized run past a minute).
run_forward() {
	chown "$NOBODY" "$(usb_node)"
	start_unprivileged
	log "iperf3 through -L"
	iperf3_forward
	# -R: the peer reaches a server on the host's loopback through the device.
	busybox httpd -f -p 127.0.0.1:8000 -h "$WWW" &
	httpd=$!
	rm -f /tmp/r.out
	peer_run wget -q -O /tmp/r.out "http://$(host_ip4):8080/big" || { cat "$PROXY_LOG"; fail "wget through -R failed"; }
	check "-R: the peer fetched the host's file, the same as served" [ "$(md5 /tmp/r.out)" = "$(md5 "$WWW/big")" ]
	kill "$httpd"
	stop_proxy
}

# The peer leases addresses by DHCP (busybox udhcpd) and names its DNS server.
serve_dhcp() {
	cat >/tmp/udhcpd.conf <<-EOF
	start 192.168.77.100
	end 192.168.77.110
	interface $(gadget_ifname 0)
	lease_file /tmp/udhcpd.leases
	opt subnet 255.255.255.0
	opt dns $(peer_ip4)
	opt lease 600
	EOF
	: >/tmp/udhcpd.leases
	peer_run udhcpd -f /tmp/udhcpd.conf >"$VM_OUT/udhcpd.log" 2>&1 &
}

leased() { grep -q "addresses 192\.168\.77\.1[01][0-9]\b.*DNS $(peer_ip4)" "$PROXY_LOG"; }
# fd77::/64 with the interface id from the function's MAC (EUI-64).
slaac_address() { echo "$(peer_ip6 | sed 's/::1$//')::4e:43ff:fe4d:2"; }
autoconfigured() { grep -q "addresses .*$(slaac_address)" "$PROXY_LOG"; }
rdnss() { grep -q "DNS.*$(peer_ip6)" "$PROXY_LOG"; }

# The broker: root opens the node as fd 3 and hides /dev/bus/usb (a new
# mount namespace with an empty tmpfs there), then execs ncm-proxy as uid
# 65534, which has nothing to open a USB device with but the fd. No
# address or DNS server is given: both come by DHCP.
run_fd() {
	node=$(usb_node)
	chmod 600 "$node"
	serve_dhcp
	# Router advertisements with the prefix for SLAAC; RDNSS comes later (lwIP
	# keeps one server list, and the latest of DHCP and RDNSS wins).
	peer_run dns-answer "$(peer_ip6)" "rdnss.test=$(peer_ip4)" >"$VM_OUT/dns6.log" 2>&1 &
	peer_run ra-send "$(gadget_ifname 0)" "$(peer_ip6 | sed 's/1$//')" - 30 &
	ra=$!
	unshare -m sh -c "mount -t tmpfs tmpfs /dev/bus/usb &&
		exec drop-exec $NOBODY $NOBODY ncm-proxy --usb-fd 3" \
		3<>"$node" >"$PROXY_LOG" 2>&1 &
	PROXY_PID=$!
	wait_for "$VM_WAIT" "ncm-proxy running" proxy_running || { cat "$PROXY_LOG"; fail "ncm-proxy --usb-fd did not start"; }
	check "an address and the DNS server leased by DHCP" wait_for 30 "DHCP lease" leased
	check "an IPv6 address by SLAAC ($(slaac_address))" wait_for 30 "SLAAC" autoconfigured
	check "ncm-proxy --usb-fd runs as uid $NOBODY with no capabilities" unprivileged "$PROXY_PID"
	check "it sees no /dev/bus/usb node" sh -c "[ -z \"\$(ls /proc/$PROXY_PID/root/dev/bus/usb)\" ]"
	check "it may not open the node by path either" sh -c "! drop-exec $NOBODY $NOBODY sh -c ': <>$node' 2>/dev/null"
	fetch "SOCKS through --usb-fd, by IPv4 address" "http://$(peer_ip4)/big"
	fetch "SOCKS through --usb-fd, by name" "http://peer.test/big"
	fetch "SOCKS through --usb-fd, from the SLAAC address" "http://[$(peer_ip6)]/big"
	kill "$ra" 2>/dev/null || true
	peer_run ra-send "$(gadget_ifname 0)" "$(peer_ip6 | sed 's/1$//')" "$(peer_ip6)" 3 &
	check "the DNS server of a router advertisement (RDNSS)" wait_for 30 "RDNSS" rdnss
	# A name only the IPv6 server knows.
	fetch "SOCKS through --usb-fd, by name from the RDNSS server" "http://rdnss.test/big"
	check "... which the IPv6 name server answered" grep -q "query rdnss.test A -> 1" "$VM_OUT/dns6.log"
	stop_proxy
}

# --persist: the unplug ends the session, ncm-proxy waits; the replugged
# device's new node is given to uid 65534 (what a udev rule would do) and
# ncm-proxy takes it again by itself, cdc_ncm having bound to it meanwhile.
run_replug() {
	chown "$NOBODY" "$(usb_node)"
	drop-exec "$NOBODY" "$NOBODY" ncm-proxy --device "serial=$VM_SERIAL" --persist \
		--ipv4 "$(host_ip4)/24" --dns "$(peer_ip4)" >"$PROXY_LOG" 2>&1 &
	PROXY_PID=$!
	wait_for "$VM_WAIT" "ncm-proxy running" proxy_running || { cat "$PROXY_LOG"; fail "ncm-proxy did not start"; }
	fetch "SOCKS before the unplug" "http://$(peer_ip4)/big"
	gadget_unplug
	check "ncm-proxy waits for the device" wait_for 10 "waiting" grep -q "waiting for it to come back" "$PROXY_LOG"
	check "ncm-proxy survives the unplug" proxy_alive
	gadget_replug
	chown "$NOBODY" "$(usb_node)"
	check "ncm-proxy took the replugged device" wait_for "$VM_WAIT" "second session" \
		sh -c "kill -USR1 $PROXY_PID; sleep 0.5; grep -q '2 session(s)' '$PROXY_LOG'"
	fetch "SOCKS after the replug" "http://$(peer_ip4)/big"
	fetch "SOCKS by name after the replug" "http://peer.test/big"
	stop_proxy
}

# user_unit_start: ncm-proxy as /vm/ncm-proxy.service (the built user unit)
# starts it for uid 65534 in group plugdev, with NCM_PROXY_OPTIONS from the
# user's ~/.config/ncm-proxy.conf.
user_unit_start() {
	local unit=/vm/ncm-proxy.service conf=/tmp/nobody-home/.config/ncm-proxy.conf
	[ -f "$unit" ] || fail "no $unit (run-vm.sh --file)"
	check "the user unit reads ~/.config/ncm-proxy.conf" \
		grep -qx 'EnvironmentFile=-%E/ncm-proxy.conf' "$unit"
	mkdir -p "${conf%/*}"
	echo "NCM_PROXY_OPTIONS=\"--device serial=$VM_SERIAL --ipv4 $(host_ip4)/24 --dns $(peer_ip4)\"" >"$conf"
	: >"$PROXY_LOG"
	(unit_exec "$unit" NCM_PROXY_OPTIONS "$conf" drop-exec "$NOBODY" "$PLUGDEV") >"$PROXY_LOG" 2>&1 &
	PROXY_PID=$!
	log "ncm-proxy as the user unit: $(grep '^ExecStart=' "$unit"), $(cat "$conf")"
}

# Under udevd, nothing chowned by hand. First the advice of ncm-proxy's
# permission error, followed to the letter: its rule in rules.d, the device
# replugged, ncm-proxy as a member of plugdev (its primary group: drop-exec
# sets no others). Then libncm's own rule (libncm/udev/50-libncm.rules):
# under --persist a replugged device gets the rule's group before libusb's
# hotplug event reports it, so no open fails on the way (the device chosen
# by VID:PID, which needs no open to match, so an early one would show).
# ncm-proxy --persist started with no device waits for one. Last, that
# rule takes a device whose NCM sits in configuration 2, and
# leaves one without NCM alone.
run_udev_rule() {
	local rule rc=0 sel
	[ "${VM_UDEVD:-0}" = 1 ] || fail "run with VM_UDEVD=1"
	[ -f /vm/50-libncm.rules ] || fail "no /vm/50-libncm.rules (run-vm.sh --file)"
	drop-exec "$NOBODY" "$PLUGDEV" ncm-proxy --device "serial=$VM_SERIAL" \
		--ipv4 "$(host_ip4)/24" >"$VM_OUT/no-permission.log" 2>&1 || rc=$?
	cat "$VM_OUT/no-permission.log"
	check "no permission on the node: exit 2" [ "$rc" = 2 ]
	rule=$(sed -n 's/.*udev rule such as \(SUBSYSTEM.*\) and replug the device.*/\1/p' \
		"$VM_OUT/no-permission.log" | head -n 1)
	check "the error suggests a udev rule: $rule" [ -n "$rule" ]
	echo "$rule" >/tmp/70-ncm-device.rules
	rules_install /tmp/70-ncm-device.rules
	rule_applied "the error's rule"
	host_use_kernel
	drop-exec "$NOBODY" "$PLUGDEV" ncm-proxy --device "serial=$VM_SERIAL" \
		--ipv4 "$(host_ip4)/24" --dns "$(peer_ip4)" >"$PROXY_LOG" 2>&1 &
	PROXY_PID=$!
	wait_for "$VM_WAIT" "ncm-proxy running" proxy_running || { cat "$PROXY_LOG"; fail "ncm-proxy did not start"; }
	check "ncm-proxy runs as uid $NOBODY with no capabilities" unprivileged "$PROXY_PID"
	fetch "SOCKS with the error's rule" "http://$(peer_ip4)/big"
	stop_proxy

	rules_install /vm/50-libncm.rules
	rule_applied "libncm's rule"
	host_use_kernel
	# Outside plugdev, a new rule would not help: the error says to join it.
	for sel in "$(hex4 "$VM_VID"):$(hex4 "$VM_PID")" "serial=$VM_SERIAL"; do
		rc=0
		drop-exec "$NOBODY" "$NOBODY" ncm-proxy --device "$sel" --ipv4 "$(host_ip4)/24" \
			>"$VM_OUT/no-group.log" 2>&1 || rc=$?
		cat "$VM_OUT/no-group.log"
		check "--device $sel, not in group plugdev: exit 2" [ "$rc" = 2 ]
		check "... and the error says to join group plugdev, not to add a rule" sh -c \
			"grep -q 'add the user to group plugdev' '$VM_OUT/no-group.log' &&
			 ! grep -q 'udev rule such as' '$VM_OUT/no-group.log'"
	done
	# Emptied first: the last run's "running on" must not pass for this one's.
	: >"$PROXY_LOG"
	drop-exec "$NOBODY" "$PLUGDEV" ncm-proxy --device "$(hex4 "$VM_VID"):$(hex4 "$VM_PID")" \
		--persist --ipv4 "$(host_ip4)/24" --dns "$(peer_ip4)" >"$PROXY_LOG" 2>&1 &
	PROXY_PID=$!
	wait_for "$VM_WAIT" "ncm-proxy running" proxy_running || { cat "$PROXY_LOG"; fail "ncm-proxy did not start"; }
	fetch "SOCKS with libncm's rule" "http://$(peer_ip4)/big"
	gadget_unplug
	check "ncm-proxy waits for the device" wait_for 10 "waiting" grep -q "waiting for it to come back" "$PROXY_LOG"
	gadget_replug
	check "ncm-proxy took the replugged device with no chown" wait_for "$VM_WAIT" "second session" \
		sh -c "kill -USR1 $PROXY_PID; sleep 0.5; grep -q '2 session(s)' '$PROXY_LOG'"
	check "... and no open failed on the way" \
		sh -c "! grep -q -E 'reattach|Access denied|no permission' '$PROXY_LOG'"
	fetch "SOCKS by name after the replug" "http://peer.test/big"
	stop_proxy

	# As the user unit ncm-proxy.service starts it at login, before the
	# device: --persist waits for one, and SOCKS serves once it came.
	gadget_unplug
	user_unit_start
	wait_for "$VM_WAIT" "ncm-proxy running" proxy_running || { cat "$PROXY_LOG"; fail "ncm-proxy did not start"; }
	check "ncm-proxy --persist with no device plugged in waits for one" \
		grep -q 'waiting for one (--persist)' "$PROXY_LOG"
	check "meanwhile SOCKS answers 'network unreachable' (3), and ncm-proxy runs on" sh -c \
		"! curl -sS --max-time 10 --socks5-hostname $SOCKS http://$(peer_ip4)/big -o /dev/null \
			2>$VM_OUT/early-curl.log && grep -q '(3)' $VM_OUT/early-curl.log && kill -0 $PROXY_PID"
	cat "$VM_OUT/early-curl.log"
	gadget_replug
	check "ncm-proxy took the device plugged in after its start" wait_for "$VM_WAIT" "a session" \
		sh -c "kill -USR1 $PROXY_PID; sleep 0.5; grep -q '1 session(s)' '$PROXY_LOG'"
	fetch "SOCKS through the device plugged in after the start" "http://$(peer_ip4)/big"
	stop_proxy

	gadget_teardown
	gadget_setup config2
	rule_applied "NCM in configuration 2 only"
	acm_gadget "$VM_VID" "$VM_PID"
	untouched "a device without NCM"
	# Apple's phones get it before they show NCM; Apple's other devices not.
	acm_gadget 0x05ac 0x12a8
	rule_applied "an iPhone's IDs (05ac:12a8), no NCM yet"
	acm_gadget 0x05ac 0x0250
	untouched "an Apple keyboard's IDs (05ac:0250)"
}

# acm_gadget VID PID: in place of the gadget, one with only a serial port.
acm_gadget() {
	gadget_teardown
	VM_VID=$1 VM_PID=$2
	modprobe usb_f_acm || fail "cannot load usb_f_acm"
	gadget_make "$GADGET" "$VM_SERIAL" "libncm test gadget (ACM only)"
	mkdir "$GADGET/functions/acm.0"
	gadget_config 1 ACM acm.0
	echo "$VM_UDC" >"$GADGET/UDC" || fail "cannot bind the ACM gadget"
	wait_usb_configured
}

untouched() { # WHAT: once udev is done with the device, its node is still root's alone
	udevadm settle -t 10 || true
	check "$1 keeps its node root's ($(node_mode))" sh -c "[ \"\$(stat -c '%u:%g' $(usb_node))\" = 0:0 ]"
}

udevd_start
gadget_setup ncm
# cdc_ncm holds the function: ncm-proxy takes it over as an unprivileged user.
host_use_kernel
serve_peer
peer_iperf3_server
case ${VM_PROXY_PART:-main} in
fd) run_fd ;;
forward) run_forward ;;
replug) run_replug ;;
udev-rule) run_udev_rule ;;
*) run_main ;;
esac
vm_info
