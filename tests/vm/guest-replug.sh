#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-replug.sh: guest test: unplug drops the host netdev and usbfs node; replug brings them back and traffic flows.
set -eu
. "$VM_LIB"

gadget_setup
host_use_kernel
host_addr_setup 0
wait_for "$VM_WAIT" "reply from $(peer_ip4)" ping -c 1 -W 1 "$(peer_ip4)" || fail "no path before unplug"
old_dev=$HOST_IFNAMES old_node=$(usb_node) old_peer=$PEER_IFNAMES

gadget_unplug
check "host netdev $old_dev is gone" [ ! -e "/sys/class/net/$old_dev" ]
check "usbfs node $old_node is gone" wait_for 10 "removal of $old_node" test ! -e "$old_node"
check "peer netdev $old_peer survives in namespace peer" peer_run $IP link show "$old_peer"
check "ping fails while unplugged" sh -c "! ping -c 1 -W 1 $(peer_ip4)"

gadget_replug
host_use_kernel
check "a host netdev is back ($HOST_IFNAMES)" [ -e "/sys/class/net/$HOST_IFNAMES" ]
check "usbfs node $(usb_node) exists" [ -c "$(usb_node)" ]
host_addr_setup 0
wait_for "$VM_WAIT" "reply from $(peer_ip4)" ping -c 1 -W 1 "$(peer_ip4)" || fail "no path after replug"
check "ping $(peer_ip4) after replug" ping -c 3 -W 2 "$(peer_ip4)"
check "ping $(peer_ip6) after replug" ping -6 -c 3 -W 2 "$(peer_ip6)"
vm_info
