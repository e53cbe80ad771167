#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-userspace.sh: guest test: the --bin flow a libncm test uses: host_use_userspace frees the NCM interfaces for usbfs.
set -eu
. "$VM_LIB"

command -v vm-usb-claim >/dev/null || fail "vm-usb-claim is not on PATH (run-vm.sh --bin)"

ncm_iface_numbers() {
	local i
	for i in $(host_ncm_ifaces); do
		i=$(cat "$i/bInterfaceNumber")
		echo $((0x$i)) $((0x$i + 1))
	done
}

ncm_unbound() {
	local i
	for i in $(host_ncm_ifaces); do [ ! -e "$i/driver" ] || return 1; done
}

claim() { # expected exit status of vm-usb-claim
	local rc=0
	vm-usb-claim "$(usb_node)" $(ncm_iface_numbers) || rc=$?
	[ "$rc" = "$1" ]
}

gadget_setup
host_use_kernel
check "cdc_ncm holds the interfaces: claim gets EBUSY" claim 2

host_use_userspace
check "cdc_ncm is unloaded" [ ! -d /sys/module/cdc_ncm ]
check "no host netdev remains" [ -z "$(host_netdev 0 || true)" ]
check "usbfs claim of the NCM interfaces succeeds" claim 0

gadget_unplug
gadget_replug
check "after replug no driver took the NCM interfaces" ncm_unbound
check "usbfs claim after replug succeeds" claim 0
vm_info
