#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-tun-service.sh: ncm-tun run as examples/ncm-tun/ncm-tun.service runs it (its user, groups, capabilities, options and their default, read from the unit) under udevd with libncm's udev rule, started before the device is plugged in: by default it takes the device when it comes, keeps the interface through a replug and gives the device back to cdc_ncm at SIGTERM; started while the device's node is not yet the rule's, it takes the device once it is; with /etc/default/ncm-tun naming one device and an address, the same for that device, addressed. All without root.
set -eu
. "$VM_LIB"

# No systemd in the guest: setpriv gives the process what systemd would,
# from the unit's own lines, so a unit that asks for too little fails
# here. Not emulated: the device cgroup and the mount namespace
# (DevicePolicy=, ProtectSystem=, PrivateTmp=), which take away, never give.
UNIT=/vm/ncm-tun.service
SVC_UID=61234   # in DynamicUser's range (61184-65519)
for f in "$UNIT" /vm/50-libncm.rules; do
	[ -f "$f" ] || fail "no $f (run-vm.sh --file)"
done
# util-linux's, by path: busybox sh runs its own applet of that name first.
SETPRIV=/usr/local/bin/setpriv
"$SETPRIV" --version 2>/dev/null | grep -q util-linux || fail "no util-linux setpriv at $SETPRIV (run-vm.sh --bin)"
[ "${VM_UDEVD:-0}" = 1 ] || fail "run with VM_UDEVD=1 (tests/vm/meson.build)"

unit_value() { sed -n "s/^$1=//p" "$UNIT" | tail -n 1; }
# CAP_NET_ADMIN CAP_X -> +net_admin,+x (setpriv's spelling)
caps_arg() { echo "$1" | tr 'A-Z ' 'a-z\n' | sed -n 's/^cap_\(.*\)/+\1/p' | paste -sd, -; }
svc_pid_is() { [ "$(grep '^Uid:' "/proc/$1/status" | cut -f2)" = "$SVC_UID" ]; }

check "the unit runs it as a user of its own" [ "$(unit_value DynamicUser)" = yes ]
check "... with options from /etc/default/ncm-tun" \
	grep -qx 'EnvironmentFile=-/etc/default/ncm-tun' "$UNIT"
groups=$(unit_value SupplementaryGroups)
ambient=$(caps_arg "$(unit_value AmbientCapabilities)")
bounding=$(caps_arg "$(unit_value CapabilityBoundingSet)")
log "unit: groups '$groups', ambient $ambient, bounding $bounding, $(grep -E '^(ExecStart|Environment)=' "$UNIT" | paste -sd' ' -)"
check "the unit starts ncm-tun with its options" \
	grep -qx 'ExecStart=[^ ]*/ncm-tun .*$NCM_TUN_OPTIONS' "$UNIT"

# service_start LOG: ncm-tun as systemd would start the unit now, in the
# background ($TUN_PID, its output in $TUN_LOG).
service_start() {
	TUN_LOG=$1
	(unit_exec "$UNIT" NCM_TUN_OPTIONS /etc/default/ncm-tun \
		"$SETPRIV" --reuid="$SVC_UID" --regid="$SVC_UID" --groups="$gids" \
		--inh-caps=-all,"$ambient" --ambient-caps=-all,"$ambient" \
		--bounding-set=-all,"$bounding" --no-new-privs -- env G_MESSAGES_DEBUG=ncm \
	) >"$TUN_LOG" 2>&1 &
	TUN_PID=$!
}
# service_checks WHAT: it runs unprivileged, waiting for the device.
service_checks() {
	check "$1: it runs as uid $SVC_UID" svc_pid_is "$TUN_PID"
	check "$1: ... with CAP_NET_ADMIN alone" \
		grep -q '^CapEff:[[:space:]]*0000000000001000$' "/proc/$TUN_PID/status"
}
# plugged_in IFACE: the device plugged in after the start gets IFACE.
plugged_in() {
	gadget_replug
	check "the device that came gets $1" wait_for "$VM_WAIT" "$1" test -e "/sys/class/net/$1" ||
		{ cat "$TUN_LOG"; fail "no $1"; }
	carrier_wait "$1"
	check "cdc_ncm let go of it" wait_for 10 "cdc_ncm release" cdc_ncm_gone
	check "$1 is up with the device's MAC" \
		sh -c "$IP link show $1 | grep -q ',UP' && [ \"\$(cat /sys/class/net/$1/address)\" = $VM_HOST_MAC ]"
}
# service_stop IFACE WHAT: systemctl stop: the device goes back to cdc_ncm,
# the interface away, which a process without root must manage too.
service_stop() {
	tun_stop TERM "$2"
	check "cdc_ncm has the function back" wait_for "$VM_WAIT" "cdc_ncm netdev" host_netdevs_up
	check "$1 is gone" sh -c "! [ -e /sys/class/net/$1 ]"
}

udevd_start
gids=$(for g in $groups; do sed -n "s/^$g:[^:]*:\([0-9]*\):.*/\1/p" /etc/group; done | paste -sd, -)
check "the unit's groups are there ($groups: $gids; udevd_start adds plugdev)" [ -n "$gids" ]
gadget_setup ncm
rules_install /vm/50-libncm.rules
rule_applied "libncm's rule"
# udevd here runs no rules but ours: the mode Debian's 50-udev-default.rules
# gives the TUN/TAP node (without it ncm-tun says how to fix it).
[ -c /dev/net/tun ] || { mkdir -p /dev/net && mknod /dev/net/tun c 10 200; }
chmod 0666 /dev/net/tun

# As installed: no /etc/default/ncm-tun, every device. Started at boot,
# before any device: nothing plugged in yet.
gadget_unplug
mkdir -p /etc/default
rm -f /etc/default/ncm-tun
service_start "$VM_OUT/ncm-tun.log"
check "ncm-tun waits with no device" \
	wait_for "$VM_WAIT" "0 interfaces running" grep -q '0 interface(s) running' "$TUN_LOG"
service_checks "by default"
plugged_in ncm0
# --all serves any number of devices, so addresses come from the network
# manager (networkd's Name=ncm*), which this stands for; they stay with
# the interface through replugs.
$IP addr add "$(host_ip4)/24" dev ncm0
ping_peer "through the service's interface"

# A replug makes a new node; the rule gives it to plugdev again.
gadget_unplug
check "ncm-tun keeps ncm0 while the device is away" \
	wait_for 10 "waiting" grep -q 'ncm0: .*waiting for it to come back' "$TUN_LOG"
gadget_replug
rule_applied "the replugged device"
check "ncm-tun takes the replugged device" wait_for "$VM_WAIT" "a second attach" attached 2
carrier_wait ncm0
ping_peer "after the replug"
check "no open failed on the way" sh -c "! grep -q -E 'Access denied|no permission|skipping|reattach' '$TUN_LOG'"
service_stop ncm0 "ncm-tun as the service"

# At boot udev may not have given the device to plugdev yet when the
# service starts: it is plugged in, its node still root's. ncm-tun skips
# it for now and tries again, and takes it once the rule's mode comes.
chgrp 0 "$(usb_node)" && chmod 0600 "$(usb_node)"
service_start "$VM_OUT/ncm-tun-late.log"
check "a device it may not open yet is skipped for now" wait_for "$VM_WAIT" "skipping" \
	grep -q 'skipping the function at .* for now: .*tried again' "$TUN_LOG"
check "... and nothing runs yet" grep -q '0 interface(s) running' "$TUN_LOG"
service_checks "before udev's rule"
t0=$(uptime_cs)
chgrp "$PLUGDEV" "$(usb_node)" && chmod 0660 "$(usb_node)"
check "the device gets ncm0 once its node is plugdev's" \
	wait_for "$VM_WAIT" "ncm0" test -e /sys/class/net/ncm0 || { cat "$TUN_LOG"; fail "no ncm0"; }
log "taken $(( ($(uptime_cs) - t0) / 100 )) s after the node's mode changed"
carrier_wait ncm0
$IP addr add "$(host_ip4)/24" dev ncm0
ping_peer "through the device taken late"
service_stop ncm0 "ncm-tun that took it late"

# /etc/default/ncm-tun for one device with its address: the same start
# before the device, the address from ncm-tun itself.
gadget_unplug
echo "NCM_TUN_OPTIONS=\"--device serial=$VM_SERIAL --name one0 --ipv4 $(host_ip4)/24\"" \
	>/etc/default/ncm-tun
service_start "$VM_OUT/ncm-tun-one.log"
check "ncm-tun -d waits for its device" \
	wait_for "$VM_WAIT" "waiting" grep -q 'matches the --device filters.*waiting for it (--persist)' "$TUN_LOG"
service_checks "one device"
plugged_in one0
check "one0 has the address from /etc/default/ncm-tun" \
	sh -c "$IP -4 addr show dev one0 | grep -q 'inet $(host_ip4)/24'"
ping_peer "through the one device's interface"
service_stop one0 "ncm-tun -d as the service"

# What no wait can mend stops it at the start, --persist or not: a wrong
# option would otherwise claim and give back the device every 60 s.
rc=0
timeout 30 ncm-tun --persist --device "serial=$VM_SERIAL" --mtu 9000 >"$VM_OUT/mtu.log" 2>&1 || rc=$?
cat "$VM_OUT/mtu.log"
check "--persist with an --mtu the device cannot take exits 2 at once" \
	sh -c "[ $rc = 2 ] && grep -q 'mtu 9000 is larger' '$VM_OUT/mtu.log'"
udevadm control --exit 2>/dev/null || true
vm_info
