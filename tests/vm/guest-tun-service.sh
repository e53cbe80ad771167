#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-tun-service.sh: ncm-tun run as examples/ncm-tun/ncm-tun.service runs it (its user, groups, capabilities and options, read from the unit) under udevd with libncm's udev rule: started with nothing plugged in, it takes the device when it comes, keeps the interface through a replug, and at SIGTERM gives the device back to cdc_ncm, all without root.
set -eu
. "$VM_LIB"

# No systemd in the guest: setpriv gives the process what systemd would,
# from the unit's own lines, so a unit that asks for too little fails
# here. Not emulated: the device cgroup and the mount namespace
# (DevicePolicy=, ProtectSystem=, PrivateTmp=), which take away, never give.
UNIT=/vm/ncm-tun.service
TUN_LOG=$VM_OUT/ncm-tun.log
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
iface_up() { [ -e "/sys/class/net/$1" ] && host_carrier "$1"; }
attached() { [ "$(grep -c ' attached$' "$TUN_LOG")" -ge "$1" ]; }
cdc_ncm_gone() { ! host_netdev 0 >/dev/null 2>&1; }
ping_peer() { # WHAT
	check "ping $(peer_ip4) $1" \
		wait_for "$VM_WAIT" "reply from $(peer_ip4) $1" ping -c 3 -W 2 "$(peer_ip4)"
}

check "the unit runs it as a user of its own" [ "$(unit_value DynamicUser)" = yes ]
check "... with options from /etc/default/ncm-tun" \
	grep -qx 'EnvironmentFile=-/etc/default/ncm-tun' "$UNIT"
groups=$(unit_value SupplementaryGroups)
ambient=$(caps_arg "$(unit_value AmbientCapabilities)")
bounding=$(caps_arg "$(unit_value CapabilityBoundingSet)")
# "ExecStart=/usr/bin/ncm-tun --all --persist $NCM_TUN_OPTIONS": the
# binary is the one under test; the rest as systemd splits it.
exec_args=$(unit_value ExecStart | cut -d' ' -f2-)
log "unit: groups '$groups', ambient $ambient, bounding $bounding, arguments: $exec_args"
check "the unit names its arguments" [ -n "$exec_args" ]

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
# Started at boot, before any device: nothing plugged in yet.
gadget_unplug

mkdir -p /etc/default
echo 'NCM_TUN_OPTIONS="--name svc%d"' >/etc/default/ncm-tun
(
	# What systemd does with EnvironmentFile= and an unquoted $VAR.
	. /etc/default/ncm-tun
	eval "set -- $exec_args"
	exec "$SETPRIV" --reuid="$SVC_UID" --regid="$SVC_UID" --groups="$gids" \
		--inh-caps=-all,"$ambient" --ambient-caps=-all,"$ambient" \
		--bounding-set=-all,"$bounding" --no-new-privs -- \
		env G_MESSAGES_DEBUG=ncm ncm-tun "$@"
) >"$TUN_LOG" 2>&1 &
TUN_PID=$!
check "ncm-tun waits with no device" \
	wait_for "$VM_WAIT" "0 interfaces running" grep -q '0 interface(s) running' "$TUN_LOG"
check "it runs as uid $SVC_UID" svc_pid_is "$TUN_PID"
check "... with CAP_NET_ADMIN alone" \
	grep -q '^CapEff:[[:space:]]*0000000000001000$' "/proc/$TUN_PID/status"

gadget_replug
check "the device that came gets an interface" wait_for "$VM_WAIT" "svc0" iface_up svc0 ||
	{ cat "$TUN_LOG"; fail "no svc0"; }
check "cdc_ncm let go of it" wait_for 10 "cdc_ncm release" cdc_ncm_gone
check "svc0 is up with the device's MAC" \
	sh -c "$IP link show svc0 | grep -q ',UP' && [ \"\$(cat /sys/class/net/svc0/address)\" = $VM_HOST_MAC ]"
# --all serves any number of devices, so addresses come from the network
# manager (networkd's Name=svc*), which this stands for; they stay with
# the interface through replugs.
$IP addr add "$(host_ip4)/24" dev svc0
ping_peer "through the service's interface"

# A replug makes a new node; the rule gives it to plugdev again.
gadget_unplug
check "ncm-tun keeps svc0 while the device is away" \
	wait_for 10 "waiting" grep -q 'svc0: .*waiting for it to come back' "$TUN_LOG"
gadget_replug
rule_applied "the replugged device"
check "ncm-tun takes the replugged device" wait_for "$VM_WAIT" "a second attach" attached 2
carrier_wait svc0
ping_peer "after the replug"
check "no open failed on the way" sh -c "! grep -q -E 'Access denied|no permission|skipping' '$TUN_LOG'"

# systemctl stop: the device goes back to cdc_ncm, the interface away,
# which a process without root must manage too.
tun_stop TERM "ncm-tun as the service"
check "cdc_ncm has the function back" wait_for "$VM_WAIT" "cdc_ncm netdev" host_netdevs_up
check "svc0 is gone" sh -c "! [ -e /sys/class/net/svc0 ]"
udevadm control --exit 2>/dev/null || true
vm_info
