#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/install-deps.sh: installs with apt-get what building and testing libncm needs.
set -euo pipefail

pkgs=(
	build-essential meson ninja-build pkg-config
	libusb-1.0-0-dev libglib2.0-dev
	clang libclang-rt-14-dev          # libFuzzer and the TSan/LSan runtimes
	dpkg-dev xz-utils                 # apt-get source for lwIP
	qemu-system-x86 busybox-static iperf3 iproute2 kmod cpio
	tcpdump
	udev                              # systemd-udevd in the guest: the *-udev VM tests
	curl                              # vm-proxy: the SOCKS client in the guest
	libjson-glib-dev                  # the bench-json unit test parses ncm-bench output
	gobject-introspection libgirepository1.0-dev  # g-ir-scanner: Ncm-0, NcmLwip-0
	python3-gi                        # the gi unit test, the Python VM test and example
	gi-docgen                         # the reference manual (-Ddocs=true)
)

# 32-bit ARM (tests/cross/armhf.ini): a cross compiler, the libraries for
# armhf, and qemu-arm to run its unit suite (binfmt for what tests spawn).
# Optional: tests/run.sh says so and goes on without them.
arm_pkgs=(
	gcc-arm-linux-gnueabihf qemu-user qemu-user-binfmt
	libglib2.0-dev:armhf libusb-1.0-0-dev:armhf
)

missing_of() { # PACKAGE...: those not installed
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null ||
			echo "$p"
	done
}
mapfile -t missing < <(missing_of "${pkgs[@]}")
mapfile -t arm_missing < <(missing_of "${arm_pkgs[@]}")
[ ${#missing[@]} -eq 0 ] && [ ${#arm_missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	if [ ${#missing[@]} -eq 0 ]; then
		echo "install-deps: for the 32-bit ARM check (optional): as root, dpkg" \
			"--add-architecture armhf and apt-get install ${arm_missing[*]}" >&2
		exit 0
	fi
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
arch_added=
if [ ${#arm_missing[@]} -ne 0 ] && ! dpkg --print-foreign-architectures | grep -x armhf >/dev/null; then
	dpkg --add-architecture armhf
	arch_added=1
fi
apt-get update -q
# udev is here for its udevadm, which the VM tests run in the guest. On a
# host that has no udevd running yet, installing it must not start one:
# that would trigger every device and give new interfaces persistent MACs
# under the tests' feet. policy-rc.d 101 keeps the services down.
policy=/usr/sbin/policy-rc.d
policy_added=
if [ ${#missing[@]} -ne 0 ] && [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	policy_added=1
fi
if [ ${#missing[@]} -ne 0 ]; then
	apt-get install -y -q --no-install-recommends "${missing[@]}" ||
		{ [ -z "$policy_added" ] || rm -f "$policy"; exit 1; }
fi
[ -z "$policy_added" ] || rm -f "$policy"
if [ ${#arm_missing[@]} -ne 0 ] &&
	! apt-get install -y -q --no-install-recommends "${arm_missing[@]}"; then
	echo "install-deps: the armhf packages could not be installed: 32-bit ARM is not" \
		"checked" >&2
	if [ -n "$arch_added" ]; then
		dpkg --remove-architecture armhf || true
		apt-get update -q || true
	fi
fi
