#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-driver-errors.sh: the failures users meet get messages that say what to do.
set -eu
. "$VM_LIB"

expect_fail() { # NAME PATTERN COMMAND...: COMMAND must fail and print PATTERN
	local name=$1 pattern=$2 out="$VM_OUT/$1.txt"
	shift 2
	if "$@" >"$out" 2>&1; then
		cat "$out"
		fail "$name: succeeded but should not have"
	fi
	cat "$out"
	check "$name: message says what to do" grep -q "$pattern" "$out"
}

gadget_setup ncm
host_use_kernel

# cdc_ncm is bound and detaching is not allowed.
expect_fail kernel-driver "kernel driver cdc_ncm is still bound to interface 0.*unbind it" \
	vmtest-driver frames -t 5 --no-detach
check "cdc_ncm still drives the device" host_netdevs_up

# No permission on the usbfs node (an unprivileged user).
expect_fail permission "no permission on /dev/bus/usb/[0-9]*/[0-9]*: run as root, or add a udev rule" \
	vmtest-driver frames -t 5 --uid 65534

# usbfs's transfer memory (usbfs_memory_mb, for all devices) used up: the
# message names the knob. 1 MiB holds less than 64 receive transfers of
# f_ncm's 16 KiB NTBs (as 4 SuperSpeed devices use up the default 16).
mb=/sys/module/usbcore/parameters/usbfs_memory_mb
old_mb=$(cat "$mb")
echo 1 >"$mb"
expect_fail usbfs-memory "out of memory for USB transfers: usbfs caps them at $mb" \
	vmtest-driver frames -t 5 --rx-transfers 64
echo "$old_mb" >"$mb"
check "libncm gave the function back to cdc_ncm after the failed start" \
	wait_for "$VM_WAIT" "cdc_ncm netdev" host_netdevs_up

# Another process holds the device.
vmtest-driver hold -t 30 >"$VM_OUT/hold.txt" 2>&1 &
holder=$!
wait_for 20 "first process holding" grep -q '^holding' "$VM_OUT/hold.txt" ||
	{ cat "$VM_OUT/hold.txt"; fail "the first process could not claim the device"; }
expect_fail busy "is claimed by another process or driver: stop the other program" \
	vmtest-driver frames -t 5
kill $holder
wait $holder || true

# The device goes away: opening it reports that it is gone.
gadget_unplug
expect_fail gone "no NCM function appeared" vmtest-driver frames -t 2
vm_info
