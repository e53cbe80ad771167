#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-udev.sh: guest test: with a udev daemon, as on most Linux hosts, libusb reports devices by hotplug events and libncm never polls; ncm-tun --persist follows an unplug, a replug, a reset and a quick replug, and starts before any USB bus exists.
set -eu
. "$VM_LIB"

# The other tests run without udevd, so libncm polls there. Here
# systemd-udevd runs with no rules: it only passes the kernel's uevents on
# to libudev's listeners, libusb's hotplug thread among them. The device
# list libusb keeps is then updated by those events alone.
TUN=ncmu0
TUN_LOG=$VM_OUT/ncm-tun.log
secs_since() { echo $(( ($(uptime_cs) - $1 + 50) / 100 )); }

[ "${VM_UDEVD:-0}" = 1 ] || fail "run with VM_UDEVD=1 (tests/vm/meson.build)"
udevd_start

# No USB bus at the start, as for a service started before the USB
# controllers' drivers: with no /dev/bus/usb for inotify, the check that
# udev's events come looks by the clock, and takes inotify once the bus
# is there; the main loop then sleeps. (Before, a start without the
# directory kept the 2 s clock for good.) dummy_hcd, loaded at boot, goes
# before any gadget was made: reloading it under a gadget that had been
# bound races the old netdev's removal in this kernel (binding the new
# gadget then fails with "kobject_add_internal failed for usb0").
no_usb_bus() { [ ! -e /dev/bus/usb ]; }
rmmod dummy_hcd || fail "cannot unload dummy_hcd"
check "no /dev/bus/usb without a USB controller" wait_for 10 "/dev/bus/usb gone" no_usb_bus
TUN_LOG=$VM_OUT/ncm-tun-no-bus.log
G_MESSAGES_DEBUG=ncm ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" --persist \
	--ipv4 "$(host_ip4)/24" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
check "with no bus, the check looks by the clock" wait_for "$VM_WAIT" "the clock's looks" \
	grep -q 'watch: looking at /dev/bus/usb every' "$TUN_LOG"
gadget_setup ncm
check "ncm-tun takes the device on the bus that came" wait_for "$VM_WAIT" "an attach" attached 1
check "... and inotify watches the bus's directory" wait_for 10 "inotify" \
	grep -q 'watch: inotify watches /dev/bus/usb now' "$TUN_LOG"
carrier_wait "$TUN"
ping_peer "started before the bus"
# The change's grace (5 s) over, the main loop sleeps.
sleep 6
idle_check "ncm-tun --persist started before the bus" "$TUN_PID" 10 2 main
tun_stop TERM ncm-tun
TUN_LOG=$VM_OUT/ncm-tun.log

host_use_kernel
G_MESSAGES_DEBUG=ncm ncm-tun --device "serial=$VM_SERIAL" --name "$TUN" --persist \
	--ipv4 "$(host_ip4)/24" >"$TUN_LOG" 2>&1 &
TUN_PID=$!
wait_for "$VM_WAIT" "interface $TUN" tun_iface || { cat "$TUN_LOG"; fail "ncm-tun made no $TUN"; }
carrier_wait "$TUN"
ping_peer "through ncm-tun"

# Unplugged: the removal ends the session. Plugged back: only a hotplug
# event can say it came (nothing polls), then ncm-tun takes it from cdc_ncm.
gadget_unplug
check "ping fails while unplugged" sh -c "! ping -c 1 -W 1 $(peer_ip4)"
t0=$(uptime_cs)
gadget_replug
check "ncm-tun takes the replugged device" wait_for "$VM_WAIT" "a second attach" attached 2
echo "replug to attach: $(secs_since "$t0") s"
check "cdc_ncm let go of the replugged device" wait_for 10 "cdc_ncm release" cdc_ncm_gone
carrier_wait "$TUN"
ping_peer "after the replug"

# A reset keeps the node and sends no event for the device: the watch's
# look after a removal must find it here too, where no poll runs.
reset_device
check "ncm-tun takes the device back after a reset" \
	wait_for "$VM_WAIT" "a third attach" attached 3
check "cdc_ncm, bound by the reset, let go of it again" wait_for 10 "cdc_ncm release" cdc_ncm_gone
carrier_wait "$TUN"
ping_peer "after the reset"

# A quick unplug and replug, shorter than a poll's second: the events must
# not be lost or taken out of order.
echo "" >"$GADGET/UDC" || fail "cannot unbind the UDC"
sleep 0.3
gadget_replug
check "ncm-tun takes the device after a quick replug" \
	wait_for "$VM_WAIT" "a fourth attach" attached 4
carrier_wait "$TUN"
ping_peer "after a quick replug"

check "ncm-tun is alive" tun_alive
# Idle under udevd, once the replug's grace (5 s) is over: the watch's
# check that udev's events still come sleeps until a usbfs node comes or
# goes (inotify), so the main loop does not wake by the clock (it looked
# at /dev/bus/usb every 2 s before).
sleep 6
idle_check "ncm-tun --persist under udevd" "$TUN_PID" 10 2 main
watch_mode_check "$TUN_LOG"
tun_stats
check "ncm-tun counted four device sessions" grep -q "^ncm-tun: $TUN, 4 device session" "$TUN_LOG"
tun_stop TERM ncm-tun
check "cdc_ncm has the function back" wait_for "$VM_WAIT" "cdc_ncm netdev" host_netdevs_up

udevadm control --exit 2>/dev/null || true
vm_info
