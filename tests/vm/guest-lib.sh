# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-lib.sh: helpers for guest scripts (gadget profiles, peer namespace, host driver, waits); source it.
#
# Guest scripts run under busybox sh as root. Start them with
#     set -eu
#     . "$VM_LIB"
# Busybox runs its own applets before PATH, so the real iproute2 is $IP and
# the real iperf3 is found on PATH. See tests/vm/README.md for the overview.

IP=/usr/bin/ip

# For the TSan builds of the examples (ncm-tun, ncm-bench, ncm-proxy; the
# vmtest programs say it in vmtest-tsan.h): libusb and GLib are not
# instrumented, and libusb's transfers reach the event thread through the
# kernel (usbfs hands a submitted URB back from its reap), an order TSan
# cannot see; only our own accesses are checked. No effect on other builds.
case " ${TSAN_OPTIONS:-} " in
*" ignore_noninstrumented_modules="*) ;;
*) export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }ignore_noninstrumented_modules=1" ;;
esac
# GLib 2.74 takes small GObjects from GSlice, whose depot lock TSan cannot
# see: a block freed on one thread and reused on another would read as a
# race. The unit tests that start threads say the same (test-lwip-tap.c).
export G_SLICE=always-malloc

# Settable from the host with run-vm.sh --env NAME=VALUE.
: "${VM_VID:=0x1d6b}"                  # Linux Foundation
: "${VM_PID:=0x0104}"                  # multifunction composite gadget
: "${VM_SERIAL:=libncm-vm-0001}"
: "${VM_DEV_MAC:=02:4e:43:4d:00:01}"   # gadget side of NCM function 0
: "${VM_HOST_MAC:=02:4e:43:4d:00:02}"  # host side (iMACAddress) of function 0
: "${VM_DEV_MAC2:=02:4e:43:4d:01:01}"  # the same for function 1 (profile dual)
: "${VM_HOST_MAC2:=02:4e:43:4d:01:02}"
: "${VM_NCM_QMULT:=}"                  # f_ncm qmult; empty keeps the kernel's
: "${VM_UDC:=dummy_udc.0}"
: "${VM_WAIT:=60}"                     # seconds any single wait may take
: "${VM_PROFILE:=ncm}"
: "${VM_OUT:=/tmp}"

GADGET=/sys/kernel/config/usb_gadget/libncm
PEER_NS=peer
GADGET_PROFILE=
USB_DEV=            # the gadget as the host sees it, e.g. /sys/bus/usb/devices/1-1
PEER_IFNAMES=       # gadget netdevs (in namespace peer), one per NCM function
HOST_IFNAMES=       # cdc_ncm netdevs, one per NCM function, set by host_use_kernel

# ---- reporting ---------------------------------------------------------------

uptime_cs() {
	local u
	read -r u _ </proc/uptime
	# "0.05" must not read as octal.
	echo $(( ${u%.*} * 100 + 1${u#*.} - 100 ))
}

log() { echo "[$(cut -d' ' -f1 /proc/uptime)] $*"; }
fail() {
	echo "FAIL: $*" >&2
	ffs_trace_print >&2
	exit 1
}
skip() { echo "SKIP: $*"; exit 77; }
ok() { echo "ok: $*"; }

# check DESCRIPTION COMMAND...: an assertion that names itself either way.
check() {
	local desc=$1
	shift
	if "$@"; then ok "$desc"; else fail "$desc"; fi
}

# check_tx_counted GOT N TXFILE: a peer counted GOT frames while
# vmtest-driver tx (output in TXFILE) sent N. All N arrived, and exactly
# what libncm put on the wire, its ARP and any tail nudge (32 ARP requests
# when the end of a stream finds the last NTB held) included: more would be
# duplicated frames, fewer lost ones.
check_tx_counted() {
	local got=$1 n=$2 final sent nudges
	echo "peer counted $got frames for $n sent (plus ARP)"
	check "peer received all $n frames" [ "$got" -ge "$n" ]
	final=$(sed -n 's/^final: tx_datagrams=\([0-9]*\) rx_nudges=\([0-9]*\)$/\1 \2/p' "$3")
	[ -n "$final" ] || fail "vmtest-driver printed no final counters"
	sent=${final% *} nudges=${final#* }
	echo "libncm sent $sent frames ($nudges tail nudges)"
	check "peer received exactly the frames libncm sent" [ "$got" -eq "$sent" ]
	check "libncm sent no more than the $n, ARP and its nudges" [ "$sent" -le $((n + 20 + 32 * nudges)) ]
}

# round_order ROUND WORD...: the WORDs in the order round ROUND runs them. Rounds
# go in pairs: the odd round of pair t = (ROUND - 1) / 2 rotates the list by t,
# the even one runs that order backwards, so that over a pair every word's mean
# place is the same and none always follows the same other (tests/bench/guest-ab.sh).
round_order() {
	local r=$1
	shift
	echo "$@" | awk -v r="$r" '{
		t = int((r - 1) / 2)
		for (i = 0; i < NF; i++)
			printf "%s ", $(((r % 2 ? i : NF - 1 - i) + t) % NF + 1)
	}'
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every 0.1 s until it
# succeeds; returns 1 with a message once SECONDS have passed. Enumeration
# time under TCG varies a lot, so never replace this with a fixed sleep.
wait_for() {
	local secs=$1 desc=$2 end
	shift 2
	end=$(( $(uptime_cs) + secs * 100 ))
	until "$@" >/dev/null 2>&1; do
		if [ "$(uptime_cs)" -ge "$end" ]; then
			echo "timeout: no $desc within ${secs}s" >&2
			return 1
		fi
		sleep 0.1
	done
}

kernel_version() { uname -r; }

# vm_info: one line naming the kernel and the USB speed, for every test log;
# also left in $VM_OUT/vm-info for the host runner's summary.
vm_info() {
	local speed=none
	[ -n "$USB_DEV" ] && [ -f "$USB_DEV/speed" ] && speed="$(usb_speed) Mbit/s"
	echo "vm: kernel $(kernel_version), usb speed $speed, profile ${GADGET_PROFILE:-none}"
	echo "kernel $(kernel_version), usb speed $speed, profile ${GADGET_PROFILE:-none}" \
		>"$VM_OUT/vm-info"
}

# ---- the gadget (device side) ----------------------------------------------

hex4() { printf '%04x' "$(( $1 ))"; }

# dummy_hcd decides at load time whether it offers SuperSpeed and how many
# controllers it makes (one bus and one UDC each, dummy_udc.0 ...), so
# switching profiles within one boot reloads it (only possible while no
# gadget is bound).
dummy_hcd_load() { # ss|hs [CONTROLLERS]
	local want=N num=${2:-1} cur cur_num
	[ "$1" = ss ] && want=Y
	cur=$(cat /sys/module/dummy_hcd/parameters/is_super_speed 2>/dev/null || echo -)
	cur_num=$(cat /sys/module/dummy_hcd/parameters/num 2>/dev/null || echo 1)
	[ "$cur" = "$want" ] && [ "$cur_num" = "$num" ] && return 0
	[ "$cur" = - ] || rmmod dummy_hcd || fail "cannot unload dummy_hcd"
	if [ "$want" = Y ]; then
		modprobe dummy_hcd is_super_speed=1 num="$num"
	else
		modprobe dummy_hcd num="$num"
	fi || fail "cannot load dummy_hcd with $num controller(s)"
	wait_for "$VM_WAIT" "UDC dummy_udc.$((num - 1))" test -e "/sys/class/udc/dummy_udc.$((num - 1))" ||
		fail "dummy_hcd made fewer than $num UDCs"
}
# dummy_hcd_speed ss|hs: keeps the number of controllers (a script may have
# loaded more for a second gadget).
dummy_hcd_speed() { dummy_hcd_load "$1" "$(cat /sys/module/dummy_hcd/parameters/num 2>/dev/null || echo 1)"; }

# gadget_make DIR SERIAL PRODUCT: a gadget's IDs and strings in configfs,
# without functions or configurations. Its interfaces come with an IAD
# (f_ncm's, or ffs-ncm's own), which calls for the Miscellaneous/IAD
# device class.
gadget_make() {
	mkdir "$1" "$1/strings/0x409"
	echo "$VM_VID" >"$1/idVendor"
	echo "$VM_PID" >"$1/idProduct"
	echo 0x0100 >"$1/bcdDevice"
	echo 0xef >"$1/bDeviceClass"
	echo 0x02 >"$1/bDeviceSubClass"
	echo 0x01 >"$1/bDeviceProtocol"
	echo "$2" >"$1/strings/0x409/serialnumber"
	echo libncm >"$1/strings/0x409/manufacturer"
	echo "$3" >"$1/strings/0x409/product"
}

# gadget_ncm_one DIR SERIAL DEV_MAC HOST_MAC: a whole gadget with one f_ncm
# function in configuration 1, not yet bound to a UDC.
gadget_ncm_one() {
	gadget_make "$1" "$2" "libncm test gadget (NCM)"
	mkdir "$1/functions/ncm.0"
	echo "$3" >"$1/functions/ncm.0/dev_addr"
	echo "$4" >"$1/functions/ncm.0/host_addr"
	[ -z "$VM_NCM_QMULT" ] || echo "$VM_NCM_QMULT" >"$1/functions/ncm.0/qmult"
	mkdir "$1/configs/c.1" "$1/configs/c.1/strings/0x409"
	echo NCM >"$1/configs/c.1/strings/0x409/configuration"
	echo 250 >"$1/configs/c.1/MaxPower"
	ln -s "$1/functions/ncm.0" "$1/configs/c.1/ncm.0"
}

gadget_ncm_function() { # NAME DEV_MAC HOST_MAC
	local f=$GADGET/functions/$1
	mkdir "$f"
	echo "$2" >"$f/dev_addr"
	echo "$3" >"$f/host_addr"
	[ -z "$VM_NCM_QMULT" ] || echo "$VM_NCM_QMULT" >"$f/qmult"
}

gadget_config() { # VALUE LABEL FUNCTION...
	local c=$GADGET/configs/c.$1 f
	mkdir "$c" "$c/strings/0x409"
	echo "$2" >"$c/strings/0x409/configuration"
	echo 250 >"$c/MaxPower"
	shift 2
	for f in "$@"; do
		ln -s "$GADGET/functions/$f" "$c/$f"
	done
}

# gadget_setup [PROFILE]: builds the gadget in configfs, plugs it into the
# dummy UDC, puts its netdevs into namespace peer and waits until the host
# has configured the device. Profiles:
#   ncm      one NCM function in configuration 1 (high speed, 480 Mbit/s)
#   ss       the same at SuperSpeed (5000 Mbit/s)
#   config2  configuration 1 holds only an ACM function, NCM sits alone in
#            configuration 2 (as on iPhones: the host must switch)
#   dual     two NCM functions in configuration 1 (as on iPads)
#   multi    VM_MULTI_N gadgets at once, one per UDC (multi_setup)
gadget_setup() {
	local profile=${1:-$VM_PROFILE}
	[ ! -d "$GADGET" ] || fail "gadget_setup: a gadget exists; gadget_teardown first"
	case $profile in
	ncm|config2|dual) dummy_hcd_speed hs ;;
	ss) dummy_hcd_speed ss ;;
	multi) multi_setup; return ;;
	*) fail "gadget_setup: unknown profile '$profile'" ;;
	esac
	modprobe usb_f_ncm || fail "cannot load usb_f_ncm"
	[ "$profile" = config2 ] && { modprobe usb_f_acm || fail "cannot load usb_f_acm"; }

	gadget_make "$GADGET" "$VM_SERIAL" "libncm test gadget ($profile)"

	gadget_ncm_function ncm.0 "$VM_DEV_MAC" "$VM_HOST_MAC"
	case $profile in
	ncm|ss)
		gadget_config 1 NCM ncm.0 ;;
	config2)
		mkdir "$GADGET/functions/acm.0"
		gadget_config 1 ACM acm.0
		gadget_config 2 NCM ncm.0 ;;
	dual)
		gadget_ncm_function ncm.1 "$VM_DEV_MAC2" "$VM_HOST_MAC2"
		gadget_config 1 "NCM x2" ncm.0 ncm.1 ;;
	esac
	GADGET_PROFILE=$profile
	# VM_GADGET_MAX_SPEED=full-speed: a 12 Mbit/s device (a microcontroller's
	# NCM, or one behind a USB 1.1 hub) on the same controller.
	[ -z "${VM_GADGET_MAX_SPEED:-}" ] || echo "$VM_GADGET_MAX_SPEED" >"$GADGET/max_speed" ||
		fail "cannot limit the gadget to $VM_GADGET_MAX_SPEED"
	echo "$VM_UDC" >"$GADGET/UDC" || fail "cannot bind the gadget to $VM_UDC"
	peer_setup
	wait_usb_configured
	vm_info
}

# gadget_teardown: unplugs and removes the gadget and namespace peer, so that
# gadget_setup can build another profile in the same boot.
gadget_teardown() {
	local c f
	[ -d "$GADGET" ] || return 0
	[ -z "$(cat "$GADGET/UDC")" ] || gadget_unplug
	for c in "$GADGET"/configs/*; do
		[ -d "$c" ] || continue
		for f in "$c"/*; do [ -L "$f" ] && rm "$f"; done
		rmdir "$c/strings/0x409" "$c"
	done
	for f in "$GADGET"/functions/*; do [ -d "$f" ] && rmdir "$f"; done
	rmdir "$GADGET/strings/0x409" "$GADGET"
	$IP netns del "$PEER_NS" 2>/dev/null || true
	GADGET_PROFILE= USB_DEV= PEER_IFNAMES= HOST_IFNAMES=
}

# gadget_unplug: the cable comes out (the UDC is unbound); waits until the
# host has dropped the device.
gadget_unplug() {
	echo "" >"$GADGET/UDC" || fail "cannot unbind the UDC"
	wait_for "$VM_WAIT" "unplug of $USB_DEV" usb_gone || fail "host kept the device after unplug"
	log "unplugged"
}

# gadget_replug: the cable goes back in; waits until the host has configured
# the device again (its netdev in namespace peer survives the unplug).
gadget_replug() {
	echo "$VM_UDC" >"$GADGET/UDC" || fail "cannot rebind the UDC"
	wait_usb_configured
	log "replugged as $USB_DEV ($(usb_node))"
}

# gadget_ifname N: the gadget's netdev for NCM function N, read from configfs
# (usb0 and usb1 can swap, so never assume a name).
gadget_ifname() { cat "$GADGET/functions/ncm.${1:-0}/ifname"; }

# ---- the peer: the gadget's netdevs in namespace "peer" --------------------

peer_ip4() { echo "192.168.$((77 + ${1:-0})).1"; }
peer_ip6() { echo "fd$((77 + ${1:-0}))::1"; }
host_ip4() { echo "192.168.$((77 + ${1:-0})).2"; }
host_ip6() { echo "fd$((77 + ${1:-0}))::2"; }

# peer_addr_setup N: function N's gadget netdev gets 192.168.(77+N).1/24 and
# fd(77+N)::1/64 and goes up. Again after a bounce: IPv6 addresses go with
# the link.
peer_addr_setup() {
	local n=$1 name
	name=$(gadget_ifname "$n")
	$IP -n "$PEER_NS" addr replace "$(peer_ip4 "$n")/24" dev "$name"
	$IP -n "$PEER_NS" link set "$name" up
	$IP -n "$PEER_NS" addr replace "$(peer_ip6 "$n")/64" dev "$name" nodad
}

peer_setup() {
	local f n=0 name
	[ -e "/run/netns/$PEER_NS" ] || $IP netns add "$PEER_NS"
	$IP -n "$PEER_NS" link set lo up
	PEER_IFNAMES=
	for f in "$GADGET"/functions/ncm.*; do
		name=$(cat "$f/ifname")
		case $name in ''|*unnamed*) fail "no netdev behind $f" ;; esac
		$IP link set "$name" netns "$PEER_NS" 2>/dev/null ||
			$IP -n "$PEER_NS" link show "$name" >/dev/null 2>&1 ||
			fail "cannot move $name into namespace $PEER_NS"
		peer_addr_setup "$n"
		PEER_IFNAMES="$PEER_IFNAMES${PEER_IFNAMES:+ }$name"
		n=$((n + 1))
	done
	log "peer netdevs: $PEER_IFNAMES"
}

# peer_run COMMAND...: runs COMMAND inside namespace peer.
peer_run() { $IP netns exec "$PEER_NS" "$@"; }

peer_listening() { # PORT: a TCP listener exists in namespace peer
	peer_run cat /proc/net/tcp /proc/net/tcp6 |
		awk -v p="$(printf ':%04X' "$1")" 'substr($2, length($2) - 4) == p && $4 == "0A" { f = 1 } END { exit !f }'
}

# peer_iperf3_server: an iperf3 server daemon in namespace peer, ready to
# accept when this returns.
peer_iperf3_server() {
	peer_run iperf3 -s -D -I /run/iperf3-peer.pid || fail "iperf3 -s failed"
	wait_for "$VM_WAIT" "iperf3 listener in $PEER_NS" peer_listening 5201 ||
		fail "iperf3 server did not start"
}

# lwip_peer_start: vmtest-lwip's peer servers (a --bin) in namespace peer,
# kernel sockets for the lwIP host to talk to; listening when this returns.
# bench_setup: how every side-by-side ncm-bench run starts: f_ncm under
# cdc_ncm with its address, a path to the peer, and ncm-bench's server in
# namespace peer (its pid in BENCH_SERVER_PID).
bench_setup() {
	gadget_setup ncm
	host_use_kernel
	host_addr_setup 0
	wait_for "$VM_WAIT" "IPv4 path" ping -c 1 -W 1 "$(peer_ip4)" || fail "no IPv4 path over cdc_ncm"
	peer_run ncm-bench --server >"$VM_OUT/server.log" 2>&1 &
	BENCH_SERVER_PID=$!
	wait_for "$VM_WAIT" "ncm-bench server" peer_listening 5288 || fail "ncm-bench --server did not start"
}

lwip_peer_start() {
	peer_run vmtest-lwip peer >"$VM_OUT/peer.txt" 2>&1 &
	wait_for 30 "peer servers listening" grep -q '^ready' "$VM_OUT/peer.txt" ||
		{ cat "$VM_OUT/peer.txt"; fail "vmtest-lwip peer did not start"; }
}

# ---- the host side (where libncm or cdc_ncm runs) --------------------------

usb_find_dev() { usb_find_serial "$VM_SERIAL"; }

usb_find_serial() { # SERIAL: prints the sysfs path of that gadget as the host sees it
	local d vid pid
	vid=$(hex4 "$VM_VID") pid=$(hex4 "$VM_PID")
	for d in /sys/bus/usb/devices/*; do
		[ -f "$d/idVendor" ] || continue
		[ "$(cat "$d/idVendor")" = "$vid" ] && [ "$(cat "$d/idProduct")" = "$pid" ] || continue
		[ "$(cat "$d/serial" 2>/dev/null)" = "$1" ] || continue
		echo "$d"
		return 0
	done
	return 1
}

usb_configured() {
	local d
	d=$(usb_find_dev) && [ -n "$(cat "$d/bConfigurationValue")" ]
}
usb_gone() { ! usb_find_dev >/dev/null; }

wait_usb_configured() {
	wait_for "$VM_WAIT" "host enumeration of $(hex4 "$VM_VID"):$(hex4 "$VM_PID")" usb_configured ||
		fail "the host did not enumerate the gadget"
	USB_DEV=$(usb_find_dev)
	wait_usb_node
}

usb_speed() { cat "$USB_DEV/speed"; }              # 480, 5000, ...
usb_active_config() { cat "$USB_DEV/bConfigurationValue"; }

# usb_node: the device's usbfs node, what libusb opens.
usb_node() {
	printf '/dev/bus/usb/%03d/%03d\n' "$(cat "$USB_DEV/busnum")" "$(cat "$USB_DEV/devnum")"
}
wait_usb_node() {
	wait_for "$VM_WAIT" "usbfs node for $USB_DEV" test -c "$(usb_node)" ||
		fail "no usbfs node $(usb_node)"
}

# usb_interfaces: every interface of every configuration, parsed from the raw
# descriptors the host read (sysfs shows only the active configuration):
#   config=2 iface=0 alt=0 class=02 subclass=0d protocol=00
usb_interfaces() {
	od -An -v -tu1 "$USB_DEV/descriptors" | awk '
	{ for (i = 1; i <= NF; i++) b[n++] = $i }
	END {
		for (p = 0; p < n && b[p] >= 2; p += b[p]) {
			if (b[p + 1] == 2)
				cfg = b[p + 5]
			else if (b[p + 1] == 4 && cfg)
				printf "config=%d iface=%d alt=%d class=%02x subclass=%02x protocol=%02x\n",
					cfg, b[p + 2], b[p + 3], b[p + 5], b[p + 6], b[p + 7]
		}
	}'
}

# ncm_config: the configuration value holding the (first) NCM function.
ncm_config() {
	usb_interfaces | awk '/class=02 subclass=0d/ { sub("config=", "", $1); print $1; exit }'
}

usb_config_is() { [ "$(cat "$(usb_find_dev)/bConfigurationValue")" = "$1" ]; }

usb_set_config() { # VALUE: what a host does to reach NCM on an iPhone
	echo "$1" >"$USB_DEV/bConfigurationValue" || fail "cannot select configuration $1"
	wait_for "$VM_WAIT" "configuration $1" usb_config_is "$1" ||
		fail "configuration $1 did not become active"
	USB_DEV=$(usb_find_dev)
}

# host_ncm_ifaces: sysfs paths of the NCM communication interfaces in the
# active configuration, in interface order.
host_ncm_ifaces() {
	local i
	for i in "$USB_DEV"/"${USB_DEV##*/}":*; do
		[ "$(cat "$i/bInterfaceClass")" = 02 ] && [ "$(cat "$i/bInterfaceSubClass")" = 0d ] &&
			echo "$i"
	done
	return 0
}

host_netdev_of() { # IFACE_PATH: the cdc_ncm netdev bound to it, if any
	local n
	for n in "$1"/net/*; do [ -e "$n" ] && { echo "${n##*/}"; return 0; }; done
	return 1
}

host_netdevs_up() { # all NCM interfaces have their cdc_ncm netdev
	local i
	for i in $(host_ncm_ifaces); do host_netdev_of "$i" >/dev/null || return 1; done
}
host_netdevs_gone() {
	local n
	for n in $HOST_IFNAMES; do [ ! -e "/sys/class/net/$n" ] || return 1; done
}

# host_netdev [N]: the cdc_ncm netdev of NCM function N.
host_netdev() {
	local i
	i=$(host_ncm_ifaces | sed -n "$(( ${1:-0} + 1 ))p")
	[ -n "$i" ] && host_netdev_of "$i"
}

# host_use_kernel: the kernel's cdc_ncm drives the gadget. Switches to the
# configuration holding NCM if needed, waits for the netdev(s), prints them.
host_use_kernel() {
	local cfg i
	[ -d /sys/module/cdc_ncm ] || modprobe cdc_ncm || fail "cannot load cdc_ncm"
	cfg=$(ncm_config)
	[ -n "$cfg" ] || fail "the device offers no NCM function"
	if [ "$(usb_active_config)" != "$cfg" ]; then
		log "selecting configuration $cfg (NCM)"
		usb_set_config "$cfg"
	fi
	for i in $(host_ncm_ifaces); do
		[ -e "$i/driver" ] || echo "${i##*/}" >/sys/bus/usb/drivers/cdc_ncm/bind ||
			fail "cannot bind cdc_ncm to ${i##*/}"
	done
	wait_for "$VM_WAIT" "cdc_ncm netdev" host_netdevs_up || fail "cdc_ncm made no netdev"
	HOST_IFNAMES=
	for i in $(host_ncm_ifaces); do
		HOST_IFNAMES="$HOST_IFNAMES${HOST_IFNAMES:+ }$(host_netdev_of "$i")"
	done
	echo "host netdevs: $HOST_IFNAMES"
}

host_carrier() { # no fork: carrier_keeper runs it during benchmarks
	local c=
	{ read -r c <"/sys/class/net/$1/carrier"; } 2>/dev/null
	[ "$c" = 1 ]
}

# gadget_bounce [N]: function N's gadget netdev down and up again with its
# addresses, so that f_ncm announces its link anew.
gadget_bounce() {
	peer_run $IP link set "$(gadget_ifname "${1:-0}")" down
	peer_addr_setup "${1:-0}"
}

# ncm-tun's state, for the scripts that run one: its interface $TUN, its
# process $TUN_PID, its log $TUN_LOG (each script sets them).
tun_iface() { [ -e "/sys/class/net/$TUN" ]; }
tun_alive() { kill -0 "$TUN_PID" 2>/dev/null; }
attached() { [ "$(grep -c ' attached$' "$TUN_LOG")" -ge "$1" ]; } # N: at least N sessions
cdc_ncm_gone() { ! host_netdev 0 >/dev/null 2>&1; }
reset_device() { vm-usb-claim --reset "$(usb_node)" || fail "the reset failed"; }
ping_peer() { # WHAT: the peer answers through the host's interface, a check
	check "ping $(peer_ip4) $1" \
		wait_for "$VM_WAIT" "reply from $(peer_ip4) $1" ping -c 3 -W 2 "$(peer_ip4)"
}

# tun_stats: SIGUSR1 to the ncm-tun at $TUN_PID; waits for its statistics in $TUN_LOG.
tun_stats() {
	kill -USR1 "$TUN_PID"
	wait_for 10 "statistics on SIGUSR1" grep -q "usb rx:" "$TUN_LOG" || fail "no statistics on SIGUSR1"
}

# tun_stop SIGNAL LABEL: stops the ncm-tun at $TUN_PID, prints $TUN_LOG and
# checks that LABEL exited 0 on SIGNAL.
tun_stop() {
	local rc=0
	kill -"$1" "$TUN_PID"
	wait "$TUN_PID" || rc=$?
	cat "$TUN_LOG"
	check "$2 exits 0 on SIG$1" [ "$rc" = 0 ]
}

# carrier_wait IF: waits for the carrier of ncm-tun's IF. Like host_addr_setup:
# f_ncm sends its link notifications back to back; bounce if none stuck.
carrier_wait() {
	local try
	for try in 1 2 3; do
		wait_for 5 "carrier on $1" host_carrier "$1" 2>/dev/null && return 0
		log "no carrier on $1; bouncing $(gadget_ifname 0) (try $try)"
		gadget_bounce 0
	done
	wait_for "$VM_WAIT" "carrier on $1" host_carrier "$1" || fail "no carrier on $1"
}

# carrier_keeper IFACE: runs until killed. A host interface that f_ncm's
# back-to-back link notifications left without carrier for 3 s (as usbnet
# can, see host_addr_setup) gets f_ncm to announce the link again.
# Twice a second, forking only for sleep: it runs beside the benchmarks, and
# under TCG a 10 Hz loop of forks took ~10% of the guest's CPU.
carrier_keeper() {
	local n=0
	while :; do
		if [ -e "/sys/class/net/$1" ] && ! host_carrier "$1"; then
			n=$((n + 1))
		else
			n=0
		fi
		if [ "$n" -ge 6 ]; then
			log "no carrier on $1 for 3 s; bouncing $(gadget_ifname 0)"
			gadget_bounce 0
			n=0
		fi
		sleep 0.5
	done
}

# host_addr_setup [N]: 192.168.(77+N).2/24 and fd(77+N)::2/64 on the host
# netdev of function N, link up, and waits for its carrier.
#
# f_ncm announces the link as NETWORK_CONNECTION 0 then 1 back to back. Now
# and then 6.1's usbnet loses the second one: its link-change work is still
# running when the "1" arrives, so the carrier stays off although the device
# said connected (seen as ~1 in 20 setups; usbmon shows the "1" arriving).
# A bounce of the gadget netdev makes f_ncm announce the link again.
host_addr_setup() {
	local n=${1:-0} dev try
	dev=$(host_netdev "$n") || fail "no host netdev for NCM function $n"
	$IP addr replace "$(host_ip4 "$n")/24" dev "$dev"
	$IP link set "$dev" up
	$IP addr replace "$(host_ip6 "$n")/64" dev "$dev" nodad
	for try in 1 2 3; do
		wait_for 5 "carrier on $dev" host_carrier "$dev" 2>/dev/null && return 0
		log "no carrier on $dev: usbnet missed f_ncm's link notification; bouncing $(gadget_ifname "$n") (try $try)"
		gadget_bounce "$n"
	done
	wait_for "$VM_WAIT" "carrier on $dev" host_carrier "$dev" || fail "no carrier on $dev"
}

# host_readdress_script FILE: writes a script that has cdc_ncm drive NCM
# function 0 again and gives its netdev back its addresses, for
# ncm-bench --setup: with --rounds a libncm path hands the function back to
# cdc_ncm, whose new netdev is bare, before the kernel path's next turn.
# The script runs outside this shell, so it carries the state it needs.
host_readdress_script() {
	{
		echo '#!/bin/sh'
		echo 'set -eu'
		echo '. "$VM_LIB"'
		echo "USB_DEV='$USB_DEV' PEER_IFNAMES='$PEER_IFNAMES' GADGET_PROFILE='$GADGET_PROFILE'"
		echo 'host_use_kernel >&2'
		echo 'host_addr_setup 0 >&2'
		echo 'host_reach 0 >&2'
	} >"$1"
	chmod +x "$1"
}

# reach_bouncing WHAT PROBE BOUNCE ARGS...: PROBE ARGS until it succeeds,
# running BOUNCE TRY ARGS between tries, 5 bounces at most; then fails with
# WHAT. Both kernel-path reach checks need it: carrier is not enough, now and
# then a gadget sends nothing at all until its netdev is bounced
# (multi_kernel_reach says how it shows).
reach_bouncing() {
	local what=$1 probe=$2 bounce=$3 try=0
	shift 3
	until "$probe" "$@"; do
		try=$((try + 1))
		[ "$try" -le 5 ] || fail "$what after $((try - 1)) bounces"
		"$bounce" "$try" "$@"
	done
}

host_reach_ping() { # N DEV
	wait_for 5 "reply from $(peer_ip4 "$1") through $2" ping -c 1 -W 1 -I "$2" "$(peer_ip4 "$1")"
}

host_reach_bounce() { # TRY N DEV
	log "no reply through $3; bouncing $(gadget_ifname "$2") (try $1)"
	gadget_bounce "$2"
	wait_for 5 "carrier on $3" host_carrier "$3" || true
}

# host_reach [N]: after host_addr_setup, the peer answers a ping through
# function N's cdc_ncm netdev, else the gadget's netdev is bounced: with
# ncm-bench --rounds cdc_ncm binds anew before each of its turns.
host_reach() {
	local n=${1:-0} dev
	dev=$(host_netdev "$n") || fail "no host netdev for NCM function $n"
	reach_bouncing "no reply from $(peer_ip4 "$n") through $dev" host_reach_ping host_reach_bounce "$n" "$dev"
}

# host_unbind_ncm: detaches cdc_ncm from the gadget's NCM interfaces but
# leaves the module loaded (it rebinds on the next plug).
host_unbind_ncm() {
	local i
	[ -n "$USB_DEV" ] || return 0
	for i in $(host_ncm_ifaces); do
		[ -e "$i/driver" ] || continue
		echo "${i##*/}" >"$i/driver/unbind" || fail "cannot unbind ${i##*/}"
	done
	wait_for "$VM_WAIT" "cdc_ncm release" host_netdevs_gone || fail "cdc_ncm kept its netdev"
	HOST_IFNAMES=
}

# host_use_userspace: frees the NCM interfaces for libusb and keeps cdc_ncm
# from taking them again (also after a replug) by unloading it. Callable
# before gadget_setup too. Prints the usbfs node when a device is present.
host_use_userspace() {
	host_unbind_ncm
	if [ -d /sys/module/cdc_ncm ]; then
		rmmod cdc_ncm || fail "cannot unload cdc_ncm"
	fi
	if [ -n "$USB_DEV" ]; then
		wait_usb_node
		echo "usbfs node: $(usb_node)"
	fi
}

# udevd_start: with VM_UDEVD=1, a udev daemon as on most Linux hosts (the
# runner's --bin udevadm). Without it libusb hears of no hotplug, so libncm
# polls; with it libusb's list and hotplug events come from udevd's
# broadcasts alone. No rules unless a test adds one: it passes the kernel's
# uevents on and does nothing else (no renames, no permissions). Group
# plugdev (46, as Debian's) is there for a rule to name.
# VM_UDEVD_APART=1: the program under test runs in a network namespace of
# its own ($UDEVD_APART), as in a container given the host's /run/udev:
# libudev hears udevd over netlink, so no event reaches it there.
UDEVD_APART=
[ "${VM_UDEVD_APART:-0}" != 1 ] || UDEVD_APART="unshare -n"
udevd_start() {
	[ "${VM_UDEVD:-0}" = 1 ] || return 0
	command -v udevadm >/dev/null || fail "VM_UDEVD=1 but no udevadm (the host needs the udev package)"
	mkdir -p /run/udev
	ln -sf "$(command -v udevadm)" /tmp/systemd-udevd
	grep -q '^plugdev:' /etc/group || echo 'plugdev:x:46:' >>/etc/group
	/tmp/systemd-udevd --daemon --resolve-names=early --debug >"$VM_OUT/udevd.log" 2>&1 ||
		fail "systemd-udevd did not start: $(tail -3 "$VM_OUT/udevd.log")"
	wait_for 10 "udevd's control socket" test -S /run/udev/control ||
		fail "udevd has no control socket"
	log "udevd runs"
}
PLUGDEV=46

# unit_exec UNIT VAR ENVFILE COMMAND...: replaces the (sub)shell with
# COMMAND and then UNIT's ExecStart (its program by name: the one under
# test, on PATH), as systemd would start it: VAR from the unit's
# Environment=, ENVFILE's over it, and an unquoted $VAR split into words.
unit_exec() {
	local unit=$1 var=$2 envfile=$3 start prog args=
	shift 3
	start=$(sed -n 's/^ExecStart=//p' "$unit" | tail -n 1)
	prog=${start%% *}
	case $start in *' '*) args=${start#* } ;; esac
	eval "$var=\$(sed -n 's/^Environment=$var=//p' \"\$unit\")"
	[ ! -f "$envfile" ] || . "$envfile"
	eval "set -- \"\$@\" ${prog##*/} $args"
	exec "$@"
}

# node_mode: owner:group mode of the device's usbfs node (busybox stat).
node_mode() { stat -c '%u:%g %a' "$(usb_node)"; }
# rule_applied WHAT: the node becomes root:plugdev 0660 (udev applies rules
# after devtmpfs made the node).
rule_applied() {
	check "$1: the node is root:plugdev 0660" \
		wait_for 10 "the rule's mode" sh -c "[ \"\$(stat -c '%u:%g %a' $(usb_node))\" = '0:$PLUGDEV 660' ]"
	log "$1: $(usb_node) is $(node_mode)"
}
rules_install() { # FILE: the only rule in rules.d, then the device plugged in again
	mkdir -p /etc/udev/rules.d
	rm -f /etc/udev/rules.d/*.rules
	cp "$1" /etc/udev/rules.d/
	udevadm control --reload || fail "udevadm control --reload failed"
	gadget_unplug
	gadget_replug
}

# thread_wakeups PID: "tid comm count" per thread, count being its context
# switches so far (voluntary or not): what a process costs a host that
# would rather sleep.
thread_wakeups() {
	local t
	for t in /proc/"$1"/task/*; do
		echo "${t##*/} $(cat "$t/comm") $(awk '/ctxt_switches:/ { n += $2 } END { print n + 0 }' "$t/status")"
	done 2>/dev/null
}

# idle_check LABEL PID [SECS] [MAX] [main]: on a link that carries nothing,
# the program's named threads wake at most MAX times in SECS (5, 10):
# libncm's event loop and lwIP's tcpip thread each woke ten times a second
# before, all day long for a phone left plugged in. Counted apart: the main
# thread, which runs the owner's GLib loop, whose device watch (--persist,
# --all) polls each second where no udev daemon runs, as in this VM; and
# threads that carry the program's own name, which none of ours does
# (TSan's background thread wakes ten times a second). With "main", the
# main thread alone is counted (under udevd: guest-udev.sh). Each thread's
# count goes to the log.
idle_check() {
	local label=$1 pid=$2 secs=${3:-5} max=${4:-10} n main what="named threads"
	[ "${5:-}" = main ] && what="main thread"
	main=$(cat "/proc/$pid/comm")
	thread_wakeups "$pid" >/tmp/idle.before
	sleep "$secs"
	thread_wakeups "$pid" >/tmp/idle.after
	# Threads that came meanwhile count from 0.
	awk -v pid="$pid" -v main="$main" 'NR == FNR { was[$1] = $3; next }
		{ printf "  %s%s: %d\n", $2, $1 == pid ? " (main)" : $2 == main ? " (not ours)" : "", $3 - was[$1] }' \
		/tmp/idle.before /tmp/idle.after
	n=$(awk -v main="$main" -v pid="$pid" -v only="${5:-}" 'NR == FNR { was[$1] = $3; next }
		only == "main" ? $1 == pid : $2 != main { n += $3 - was[$1] } END { print n + 0 }' \
		/tmp/idle.before /tmp/idle.after)
	check "$label on an idle link: its $what woke $n times in $secs s (at most $max)" \
		[ "$n" -le "$max" ]
}

# watch_mode_check LOG: the program's libncm (G_MESSAGES_DEBUG=ncm) watched
# by hotplug events under udevd, and by polling without it; apart from
# udevd, by hotplug until a device came or went unannounced, then polling.
watch_mode_check() { # LOG [same]: same = no device came or went while it watched
	if [ "${VM_UDEVD_APART:-0}" = 1 ]; then
		check "libncm began with libusb's hotplug events" grep -q "watch: libusb's hotplug events" "$1"
		if [ "${2:-}" = same ]; then
			check "... and kept them, no device having come or gone" \
				sh -c "! grep -q 'no hotplug event came from udev' '$1'"
		else
			check "... found them deaf and polled instead" \
				grep -q "no hotplug event came from udev.*polling every" "$1"
		fi
	elif [ "${VM_UDEVD:-0}" = 1 ]; then
		check "libncm watched by libusb's hotplug events" grep -q "watch: libusb's hotplug events" "$1"
		check "libncm never polled" sh -c "! grep -q 'poll: devices' '$1'"
	else
		check "libncm watched by polling (no udevd)" grep -q "watch: polling the USB devices" "$1"
	fi
}

# ---- measurements ------------------------------------------------------------

# iperf3_mbits FILE: the receiver's Mbit/s from an iperf3 -J report.
iperf3_mbits() {
	awk '/"sum_received"/ { f = 1 }
	     f && /"bits_per_second"/ { sub(/.*:/, ""); sub(/,.*/, ""); printf "%d\n", $0 / 1e6; exit }' "$1"
}

# ---- profile multi: one NCM gadget per dummy_hcd controller ----------------

# Many devices on one host (issue 20): gadget I (0, 1, ...) is
# $MULTI_DIR$I on dummy_udc.I, its own bus. Each has one f_ncm function,
# serial libncm-mII, MACs 02:4e:4d:II:00:01 (gadget) and :02 (host), and
# its netdev gadgetI in the one namespace peer with 192.168.(100+I).1/24 and
# fd4d:(100+I in hex)::1/64; the host side takes .2 and ::2.
: "${VM_MULTI_N:=8}"       # gadgets multi_setup plugs in
: "${VM_MULTI_SPARE:=0}"   # more UDCs and gadgets, made but held back for multi_plug
MULTI_DIR=/sys/kernel/config/usb_gadget/libncm-m

multi_serial() { printf 'libncm-m%02d\n' "$1"; }
multi_dev_mac() { printf '02:4e:4d:%02x:00:01\n' "$1"; }
multi_host_mac() { printf '02:4e:4d:%02x:00:02\n' "$1"; }
multi_peer_ip4() { echo "192.168.$((100 + $1)).1"; }
multi_host_ip4() { echo "192.168.$((100 + $1)).2"; }
multi_peer_ip6() { printf 'fd4d:%x::1\n' "$((100 + $1))"; }
multi_host_ip6() { printf 'fd4d:%x::2\n' "$((100 + $1))"; }
multi_ifname() { echo "gadget$1"; }  # in namespace peer (multi_plug names it)

# multi_usb_dev I: the host's sysfs path of gadget I, once it is configured
# and its usbfs node exists.
multi_usb_dev() {
	local d
	d=$(usb_find_serial "$(multi_serial "$1")") && [ -n "$(cat "$d/bConfigurationValue")" ] &&
		[ -c "$(printf '/dev/bus/usb/%03d/%03d' "$(cat "$d/busnum")" "$(cat "$d/devnum")")" ] &&
		echo "$d"
}
multi_gone() { ! usb_find_serial "$(multi_serial "$1")" >/dev/null; }

# multi_plug I: binds gadget I to dummy_udc.I, puts its netdev (f_ncm makes
# it at the first bind) into namespace peer with its addresses, and waits
# until the host has configured it. Also the replug after multi_unplug.
multi_plug() {
	local name
	[ -n "$(cat "$MULTI_DIR$1/UDC")" ] || echo "dummy_udc.$1" >"$MULTI_DIR$1/UDC" ||
		fail "cannot bind gadget $1"
	name=$(cat "$MULTI_DIR$1/functions/ncm.0/ifname")
	case $name in ''|*unnamed*) fail "gadget $1 has no netdev" ;; esac
	# A netdev made by a late first bind takes the lowest free usbN here,
	# which the namespace may already hold: it moves in under its own name.
	if [ -e "/sys/class/net/$name" ]; then
		$IP link set "$name" name "gadget$1" || fail "cannot rename $name"
		$IP link set "gadget$1" netns "$PEER_NS" || fail "cannot move gadget$1 into namespace $PEER_NS"
	fi
	name=gadget$1
	# A starved TCG guest can stall the host side for longer than the
	# default 1000-packet queue covers; the qdisc would then drop, which
	# TCP pays for with timeouts (as in guest-lwip.sh).
	$IP -n "$PEER_NS" link set dev "$name" txqueuelen 10000
	$IP -n "$PEER_NS" addr replace "$(multi_peer_ip4 "$1")/24" dev "$name"
	$IP -n "$PEER_NS" link set "$name" up
	$IP -n "$PEER_NS" addr replace "$(multi_peer_ip6 "$1")/64" dev "$name" nodad
	wait_for "$VM_WAIT" "host enumeration of gadget $1" multi_usb_dev "$1" ||
		fail "the host did not configure gadget $1"
}

# multi_host_netdev I: cdc_ncm's netdev of gadget I, found by its USB interface
# (the names follow probe order, not the gadgets').
multi_host_netdev() {
	local d n
	d=$(multi_usb_dev "$1") || return 1
	for n in "$d"/"${d##*/}":*/net/*; do [ -e "$n" ] && { echo "${n##*/}"; return 0; }; done
	return 1
}

# multi_bounce I: gadget I's netdev down and up, so that f_ncm announces
# its link again (usbnet now and then loses the announcement: see
# host_addr_setup); multi_plug puts the addresses back.
multi_bounce() {
	peer_run $IP link set "$(multi_ifname "$1")" down
	multi_plug "$1"
}

# multi_kernel_state I...: the kernel path as it stands for gadgets I...,
# appended to $VM_OUT/kernel-state.txt: each cdc_ncm netdev's carrier,
# addresses and counters, neighbours and route to its peer, and the same for
# the gadget's netdev in namespace peer. The counters tell a gadget that
# sends nothing (its TX, which counts completed IN transfers, and the host's
# RX stand still while its RX grows) from a request that never left or a
# missing address or route. Every step may fail: it runs when things are
# broken, under set -e.
multi_kernel_state() {
	local i dev g
	{
		echo "=== [$(cut -d' ' -f1 /proc/uptime)] kernel path, gadget(s) $*"
		for i in "$@"; do
			dev=$(multi_host_netdev "$i") || dev=
			g=$(multi_ifname "$i")
			echo "--- gadget $i ($(multi_usb_dev "$i" || echo gone)): host ${dev:-no netdev}," \
				"carrier $(cat "/sys/class/net/$dev/carrier" || echo -)"
			if [ -n "$dev" ]; then
				$IP -d -s addr show dev "$dev" || true
				echo "neigh: $($IP neigh show dev "$dev" | tr '\n' ';')"
				echo "route: $($IP route get "$(multi_peer_ip4 "$i")" oif "$dev" | tr '\n' ';')"
			fi
			echo "peer $g, carrier $(peer_run cat "/sys/class/net/$g/carrier" || echo -):"
			peer_run $IP -d -s addr show dev "$g" || true
			echo "peer neigh: $(peer_run $IP neigh show dev "$g" | tr '\n' ';')"
		done
		echo "--- host routes"
		$IP route || true
		echo "--- peer routes"
		peer_run $IP route || true
	} >>"$VM_OUT/kernel-state.txt" 2>&1
}

multi_kernel_ping() { # I DEV: gadget I's peer answers a ping through DEV
	ping -c 1 -W 1 -I "$2" "$(multi_peer_ip4 "$1")" >/dev/null 2>&1
}

multi_kernel_reached() { # I DEV; a failed try leaves the state in kernel-state.txt
	wait_for 5 "carrier on $2" host_carrier "$2" 2>/dev/null &&
		{ [ "${VM_MULTI_REACH:-1}" = 0 ] || wait_for 5 "reply from gadget $1 through $2" multi_kernel_ping "$1" "$2" 2>/dev/null; } &&
		return 0
	multi_kernel_state "$1"
	return 1
}

multi_kernel_bounce() { # TRY I DEV
	log "gadget $2: $(host_carrier "$3" && echo "no reply through $3" || echo "no carrier on $3");" \
		"bouncing $(multi_ifname "$2") (try $1; state in kernel-state.txt)"
	multi_bounce "$2"
}

# multi_kernel_reach I DEV: gadget I's cdc_ncm netdev DEV (up) has carrier and its
# peer answers through it, else gadget I's netdev is bounced, up to 5 times.
# Carrier alone is not enough. usbnet now and then loses f_ncm's link-up
# (see host_addr_setup), and now and then a gadget sends nothing at all: the
# host's ARP requests reach it, its TX count (completed IN transfers) stands
# still and the host receives nothing, through host netdev bounces, until the
# gadget netdev is bounced, once or twice (2026-12-05: 1 setup in 12 of 8
# gadgets; tests/vm/README.md, Known behaviour). It looks like f_ncm's held
# NTB (tests/vm/fncm-held-ntb.md), which each bounce's burst of the peer's
# IPv6 chatter and ARP replies would fill and so send. connect() through it
# fails with "No route to host" once ARP gives up.
# VM_MULTI_REACH=0 waits for carrier alone, as before 2026-12-05 (to reproduce).
multi_kernel_reach() {
	reach_bouncing "gadget $1 unreachable through $2 (kernel-state.txt)" \
		multi_kernel_reached multi_kernel_bounce "$1" "$2"
}

# multi_unplug I: unbinds gadget I's UDC and waits until the host dropped it.
multi_unplug() {
	echo "" >"$MULTI_DIR$1/UDC" || fail "cannot unbind gadget $1"
	wait_for "$VM_WAIT" "unplug of gadget $1" multi_gone "$1" || fail "host kept gadget $1"
}

# multi_setup [N]: loads dummy_hcd with N + VM_MULTI_SPARE controllers,
# makes that many gadgets and plugs in the first N (binding them all first,
# so that they enumerate together). Call host_use_userspace or
# host_use_kernel's module load before, to say who gets them.
multi_setup() {
	local n=${1:-$VM_MULTI_N} total i name
	total=$((n + VM_MULTI_SPARE))
	dummy_hcd_load hs "$total"
	modprobe usb_f_ncm || fail "cannot load usb_f_ncm"
	[ -e "/run/netns/$PEER_NS" ] || $IP netns add "$PEER_NS"
	$IP -n "$PEER_NS" link set lo up
	i=0
	while [ "$i" -lt "$total" ]; do
		gadget_ncm_one "$MULTI_DIR$i" "$(multi_serial "$i")" "$(multi_dev_mac "$i")" "$(multi_host_mac "$i")"
		i=$((i + 1))
	done
	i=0
	while [ "$i" -lt "$n" ]; do
		echo "dummy_udc.$i" >"$MULTI_DIR$i/UDC" || fail "cannot bind gadget $i"
		i=$((i + 1))
	done
	PEER_IFNAMES=
	i=0
	while [ "$i" -lt "$n" ]; do
		multi_plug "$i"
		PEER_IFNAMES="$PEER_IFNAMES${PEER_IFNAMES:+ }$(multi_ifname "$i")"
		i=$((i + 1))
	done
	GADGET_PROFILE="multi ($n gadgets, $VM_MULTI_SPARE held back)"
	USB_DEV=$(multi_usb_dev 0)
	log "peer netdevs: $PEER_IFNAMES"
	vm_info
}

# ---- the programmable device: ffs-ncm over FunctionFS -----------------------

FFS_DIR=/dev/ffs-ncm
FFS_TAP=ffs0
FFS_PID=
FFS_LOG=
FFS_SUMMARY=

ffs_settled() { # ready, or dead: either way the wait is over
	[ -e /run/ffs-ncm.ready ] || ! kill -0 "$FFS_PID" 2>/dev/null
}

# ffs_gadget_setup ARGS...: the gadget's NCM function is ffs-ncm (a --bin),
# served through FunctionFS (configfs function ffs.ncm) instead of f_ncm.
# ARGS go to ffs-ncm (--profile NAME, single options). It runs in netns
# peer with TAP $FFS_TAP (192.168.77.1, fd77::1, MAC $VM_DEV_MAC) as the
# peer's interface, and logs to $VM_OUT/ffs-ncm.log. Its fd 9 is the
# gadget's UDC file (ARGS --udc-fd 9 --vanish-on ...). The UDC is bound once
# it wrote its descriptors; returns when the host configured the device.
# Sets FFS_PID; ffs_gadget_stop collects its verdict.
ffs_gadget_setup() {
	ffs_gadget_make ffs.ncm
	gadget_config 1 NCM ffs.ncm
	ffs_ncm_start "$@"
	GADGET_PROFILE="ffs $*"
	echo "$VM_UDC" >"$GADGET/UDC" || fail "cannot bind the gadget to $VM_UDC"
	wait_usb_configured
	vm_info
}

# ffs_gadget_make FUNCTION...: the gadget's IDs and strings, and its
# FunctionFS instances (configfs functions ffs.NAME), without configurations.
ffs_gadget_make() {
	local f
	[ ! -d "$GADGET" ] || fail "ffs_gadget_setup: a gadget exists"
	dummy_hcd_speed hs
	modprobe usb_f_fs || fail "cannot load usb_f_fs"
	gadget_make "$GADGET" "$VM_SERIAL" "libncm programmable NCM device (ffs-ncm)"
	# As in gadget_setup; ffs-ncm needs --full-speed to pack for 64-byte packets.
	[ -z "${VM_GADGET_MAX_SPEED:-}" ] || echo "$VM_GADGET_MAX_SPEED" >"$GADGET/max_speed" ||
		fail "cannot limit the gadget to $VM_GADGET_MAX_SPEED"
	for f in "$@"; do
		mkdir "$GADGET/functions/$f"
	done
}

# ffs_ncm_start ARGS...: mounts FunctionFS instance ncm, starts ffs-ncm on
# it in netns peer and gives its TAP the peer's addresses.
ffs_ncm_start() {
	mkdir -p "$FFS_DIR"
	mount -t functionfs ncm "$FFS_DIR" || fail "cannot mount functionfs"
	ffs_ncm_run --ffs "$FFS_DIR" "$@" 9<>"$GADGET/UDC"
}

# ffs_ncm_run ARGS...: ffs-ncm in netns peer (fds open here are inherited),
# waits for its --ready file, gives its TAP the peer's addresses.
ffs_ncm_run() {
	[ -e "/run/netns/$PEER_NS" ] || $IP netns add "$PEER_NS"
	$IP -n "$PEER_NS" link set lo up
	rm -f /run/ffs-ncm.ready
	FFS_LOG=$VM_OUT/ffs-ncm.log
	# fd 9 (ffs_ncm_start): the UDC file, for --vanish-on (the netns' /sys
	# has no configfs).
	$IP netns exec "$PEER_NS" ffs-ncm --tap "$FFS_TAP" \
		--ready /run/ffs-ncm.ready "$@" >"$FFS_LOG" 2>&1 &
	FFS_PID=$!
	wait_for "$VM_WAIT" "ffs-ncm descriptors" ffs_settled
	[ -e /run/ffs-ncm.ready ] || { cat "$FFS_LOG"; fail "ffs-ncm did not start"; }
	$IP -n "$PEER_NS" link set "$FFS_TAP" address "$VM_DEV_MAC"
	$IP -n "$PEER_NS" addr replace "$(peer_ip4 0)/24" dev "$FFS_TAP"
	$IP -n "$PEER_NS" link set "$FFS_TAP" up
	$IP -n "$PEER_NS" addr replace "$(peer_ip6 0)/64" dev "$FFS_TAP" nodad
	PEER_IFNAMES=$FFS_TAP
}

# gfs_gadget_setup ARGS...: ffs-ncm as the whole device through gadgetfs
# (ffs-ncm --gadgetfs), for what f_fs cannot carry: the CDC functional
# descriptors (CRC mode, iMACAddress), the spec's data alt 1. No configfs
# gadget: gadgetfs binds the free UDC itself once ffs-ncm wrote its
# descriptors. cdc_ncm is unloaded first: it would bind to the NCM
# descriptors and send its own class requests. Then as ffs_gadget_setup;
# gfs_gadget_teardown lets another device follow in the same boot.
GFS_DIR=/dev/gadget
gfs_gadget_setup() {
	dummy_hcd_speed hs
	[ ! -d /sys/module/cdc_ncm ] || rmmod cdc_ncm || fail "cannot unload cdc_ncm"
	modprobe gadgetfs || fail "cannot load gadgetfs"
	mkdir -p "$GFS_DIR"
	grep -q " $GFS_DIR gadgetfs " /proc/mounts || mount -t gadgetfs gadgetfs "$GFS_DIR" ||
		fail "cannot mount gadgetfs"
	ffs_ncm_run --gadgetfs "$GFS_DIR" --vid "$VM_VID" --pid "$VM_PID" --serial "$VM_SERIAL" "$@"
	GADGET_PROFILE="gadgetfs $*"
	wait_usb_configured
	vm_info
}

gfs_gadget_teardown() {
	[ -z "$FFS_PID" ] || ffs_gadget_stop
	wait_for "$VM_WAIT" "the gadgetfs device to leave" usb_gone ||
		fail "the device stayed after ffs-ncm exited"
	$IP netns del "$PEER_NS" 2>/dev/null || true
	GADGET_PROFILE= USB_DEV= PEER_IFNAMES=
}

# ffs_apple_setup ARGS...: an iPhone before the NCM mode switch (set
# VM_VID=0x05ac first): configurations 1-3 hold a PTP and a usbmux
# interface (ffs-ncm --apple-modes on FunctionFS instance apple, log
# $VM_OUT/ffs-apple.log) and no NCM. ffs-ncm ARGS serve the NCM function
# (instance ncm), which only ffs_apple_switch links, into configuration 5.
FFS_APPLE_DIR=/dev/ffs-apple
ffs_apple_setup() {
	local c
	ffs_gadget_make ffs.apple ffs.ncm
	for c in 1 2 3; do
		gadget_config "$c" "Apple mode $c" ffs.apple
	done
	mkdir -p "$FFS_APPLE_DIR"
	mount -t functionfs apple "$FFS_APPLE_DIR" || fail "cannot mount functionfs"
	rm -f /run/ffs-apple.ready
	ffs-ncm --ffs "$FFS_APPLE_DIR" --apple-modes --ready /run/ffs-apple.ready \
		>"$VM_OUT/ffs-apple.log" 2>&1 &
	FFS_APPLE_PID=$!
	wait_for "$VM_WAIT" "ffs-ncm --apple-modes" test -e /run/ffs-apple.ready ||
		{ cat "$VM_OUT/ffs-apple.log"; fail "ffs-ncm --apple-modes did not start"; }
	ffs_ncm_start "$@"
	GADGET_PROFILE="ffs apple modes, NCM: $*"
	echo "$VM_UDC" >"$GADGET/UDC" || fail "cannot bind the gadget to $VM_UDC"
	wait_usb_configured
	vm_info
}

# ffs_apple_unswitch: the iPhone back as before the switch, for another
# round: configurations 4 and 5 gone, GET_MODE answering 3:3:3:0 again.
ffs_apple_unswitch() {
	local c f
	gadget_unplug
	for c in 5 4; do
		for f in "$GADGET/configs/c.$c"/*; do [ -L "$f" ] && rm "$f"; done
		rmdir "$GADGET/configs/c.$c/strings/0x409" "$GADGET/configs/c.$c"
	done
	kill -USR1 "$FFS_APPLE_PID"
	wait_for "$VM_WAIT" "the reset" grep -q '^.*reset: GET_MODE answers 3:3:3:0' "$VM_OUT/ffs-apple.log" ||
		fail "ffs-ncm --apple-modes did not reset"
	gadget_replug
}

# ffs_apple_switch: what the iPhone does after SET_MODE(3): it leaves the
# bus and comes back with configuration 4 (PTP, usbmux) and 5 (PTP, usbmux
# and NCM), which the host does not select.
ffs_apple_switch() {
	gadget_unplug
	gadget_config 4 "Apple mode 4" ffs.apple
	gadget_config 5 "Apple NCM" ffs.apple ffs.ncm
	gadget_replug
}

# ffs_trace_print: a failure's last words from a running ffs-ncm: its ep0
# calls, timed (ffs-ncm-trace.c), for a hang that a rerun will not show.
ffs_trace_print() {
	local n
	[ -n "${FFS_PID:-}" ] && [ -n "${FFS_LOG:-}" ] || return 0
	n=$(grep -c 'ep0 trace: ' "$FFS_LOG" 2>/dev/null || true)
	kill -HUP "$FFS_PID" 2>/dev/null || return 0
	wait_for 2 "ffs-ncm's ep0 trace" sh -c "[ \$(grep -c 'ep0 trace: ' '$FFS_LOG') -gt ${n:-0} ]" ||
		return 0
	echo "--- ffs-ncm's last ep0 calls (uptime $(cut -d' ' -f1 /proc/uptime))"
	grep 'ep0 trace: ' "$FFS_LOG" | tail -n +$(( ${n:-0} + 1 ))
}

# ffs_gadget_stop: stops ffs-ncm, prints its log and keeps its last counters
# in FFS_SUMMARY (see ffs_stat); fails when the device saw an NTB that broke
# its advertised rules (ffs-ncm then exits 3).
ffs_gadget_stop() {
	local rc=0
	kill -TERM "$FFS_PID"
	wait "$FFS_PID" || rc=$?
	FFS_PID=
	echo "--- ffs-ncm log"
	cat "$FFS_LOG"
	echo "---"
	FFS_SUMMARY=$(grep 'summary:' "$FFS_LOG" | tail -n 1)
	case $rc in
	0) ok "the device found no violation in the host's NTBs" ;;
	3) fail "the host sent NTBs that break the device's advertised rules" ;;
	*) fail "ffs-ncm exited $rc" ;;
	esac
}

# ffs_stat NAME: one counter of the last summary, e.g. ffs_stat ntbs_out.
ffs_stat() { echo "$FFS_SUMMARY" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# ffs_gadget_teardown: unplugs, stops ffs-ncm (ffs_gadget_stop's verdict
# included) and removes the gadget, so that another profile can follow in
# the same boot.
ffs_gadget_teardown() {
	[ -z "$(cat "$GADGET/UDC")" ] || gadget_unplug
	[ -z "$FFS_PID" ] || ffs_gadget_stop
	umount "$FFS_DIR"
	rm "$GADGET/configs/c.1/ffs.ncm"
	rmdir "$GADGET/configs/c.1/strings/0x409" "$GADGET/configs/c.1"
	rmdir "$GADGET/functions/ffs.ncm" "$GADGET/strings/0x409" "$GADGET"
	$IP netns del "$PEER_NS" 2>/dev/null || true
	GADGET_PROFILE= USB_DEV= PEER_IFNAMES=
}

# perf_fold SPANS: perf script's samples (leaf first) into root-first folded stacks,
# counting only samples inside one of the measured intervals (NCM_BENCH_SPANS'
# lines: NAME TEST START_US END_US BYTES; perf record -k mono). Used by
# tests/bench/guest-perf.sh and guest-multi-scale.sh (VM_SCALE_PERF).
perf_fold() {
	awk -v spans="$1" '
	BEGIN {
		n = 0
		while ((getline line < spans) > 0) {
			split(line, f, " ")
			n++; lo[n] = f[3] / 1e6; hi[n] = f[4] / 1e6
		}
	}
	function flush(   i, s, keep) {
		if (head == "") return
		keep = 0
		for (i = 1; i <= n; i++) if (t >= lo[i] && t <= hi[i]) keep = 1
		if (keep) {
			s = head
			for (i = nf; i >= 1; i--) s = s ";" fr[i]
			count[s]++
		}
		head = ""; nf = 0
	}
	/^[^ \t]/ {
		flush()
		# "COMM PID TIME:" where COMM may hold spaces
		t = $NF; sub(":$", "", t); pid = $(NF - 1)
		comm = $0; sub("[ \t]+[0-9]+[ \t]+[0-9.]+:[ \t]*$", "", comm); gsub("[ ;]", "_", comm)
		head = pid ";" comm; nf = 0
		next
	}
	/^[ \t]+[0-9a-f]+ / {
		sym = $2; dso = $NF; gsub("[()]", "", dso); sub(".*/", "", dso)
		if (sym == "[unknown]" || sym == "") sym = "?"
		fr[++nf] = sym " [" dso "]"
		next
	}
	/^$/ { flush() }
	END { flush(); for (s in count) print s, count[s] }'
}
