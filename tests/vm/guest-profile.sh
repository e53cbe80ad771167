#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-profile.sh: guest test: the $VM_PROFILE gadget enumerates with the expected speed, configurations and NCM functions.
set -eu
. "$VM_LIB"

# speed, bNumConfigurations, NCM functions, configuration holding them
case $VM_PROFILE in
ncm) expect="480 1 1 1" ;;
ss) expect="5000 1 1 1" ;;
config2) expect="480 2 1 2" ;;
dual) expect="480 1 2 1" ;;
*) fail "no expectations for profile $VM_PROFILE" ;;
esac
set -- $expect
e_speed=$1 e_nconf=$2 e_nncm=$3 e_cfg=$4

has_iface() { usb_interfaces | grep -q "$1"; }
count_ifaces() { usb_interfaces | grep -c "$1" || true; }

gadget_setup
echo "interfaces (all configurations):"
usb_interfaces | sed 's/^/    /'

check "speed $e_speed Mbit/s (got $(usb_speed))" [ "$(usb_speed)" = "$e_speed" ]
check "bNumConfigurations $e_nconf" [ "$(cat "$USB_DEV/bNumConfigurations" | tr -d ' ')" = "$e_nconf" ]
check "$e_nncm NCM communication interface(s) (02/0d)" \
	[ "$(count_ifaces 'alt=0 class=02 subclass=0d protocol=00')" = "$e_nncm" ]
check "NCM lives in configuration $e_cfg only" \
	[ "$(count_ifaces 'class=02 subclass=0d')" = "$(count_ifaces "^config=$e_cfg .*class=02 subclass=0d")" ]
# Each communication interface is followed by its data interface, whose
# alternate setting 1 is the NCM data class (0a/00/01).
for i in $(usb_interfaces | awk '/class=02 subclass=0d/ { sub("iface=", "", $2); print $2 }'); do
	check "data interface $((i + 1)) (0a, alt 1, protocol 01) after NCM interface $i" \
		has_iface "^config=$e_cfg iface=$((i + 1)) alt=1 class=0a subclass=00 protocol=01"
done
# Like an iPhone: Linux picks configuration 1, where NCM is not.
check "configuration 1 is active after enumeration" [ "$(usb_active_config)" = 1 ]
if [ "$VM_PROFILE" = config2 ]; then
	check "configuration 1 holds ACM (02/02)" has_iface '^config=1 .*class=02 subclass=02'
	check "configuration 1 holds no NCM" [ "$(count_ifaces '^config=1 .*subclass=0d')" = 0 ]
fi

host_use_kernel
check "configuration $e_cfg active after host_use_kernel" [ "$(usb_active_config)" = "$e_cfg" ]
set -- $HOST_IFNAMES
check "$e_nncm cdc_ncm netdev(s): $HOST_IFNAMES" [ $# = "$e_nncm" ]
n=0
while [ $n -lt "$e_nncm" ]; do
	dev=$(host_netdev $n)
	mac=$VM_HOST_MAC
	[ $n = 1 ] && mac=$VM_HOST_MAC2
	check "$dev carries host MAC $mac" [ "$(cat "/sys/class/net/$dev/address")" = "$mac" ]
	host_addr_setup $n
	wait_for "$VM_WAIT" "reply from $(peer_ip4 $n)" ping -c 1 -W 1 "$(peer_ip4 $n)" ||
		fail "no IPv4 path over function $n"
	check "ping $(peer_ip4 $n) over $dev" ping -c 2 -W 2 "$(peer_ip4 $n)"
	check "ping $(peer_ip6 $n) over $dev" ping -6 -c 2 -W 2 "$(peer_ip6 $n)"
	n=$((n + 1))
done
vm_info
