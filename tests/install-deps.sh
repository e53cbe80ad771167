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
	curl                              # vm-proxy: the SOCKS client in the guest
	libjson-glib-dev                  # the bench-json unit test parses ncm-bench output
	gobject-introspection libgirepository1.0-dev  # g-ir-scanner: Ncm-0, NcmLwip-0
	python3-gi                        # the gi unit test, the Python VM test and example
	gi-docgen                         # the reference manual (-Ddocs=true)
)

# 32-bit ARM (tests/cross/armhf.ini): a cross compiler, the libraries for
# armhf, and qemu-arm to run its unit suite (binfmt for what tests spawn).
arm_pkgs=(
	gcc-arm-linux-gnueabihf qemu-user qemu-user-binfmt
	libglib2.0-dev:armhf libusb-1.0-0-dev:armhf
)
if ! dpkg --print-foreign-architectures | grep -qx armhf; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: the armhf architecture is missing: run as root, or:" \
			"sudo dpkg --add-architecture armhf" >&2
		exit 1
	fi
	dpkg --add-architecture armhf
fi
pkgs+=("${arm_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
