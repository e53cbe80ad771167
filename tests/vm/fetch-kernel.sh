#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/fetch-kernel.sh: fetches and unpacks Debian's current amd64 kernel for the VM suite.
#
# Usage: fetch-kernel.sh [CACHE_DIR]   (default: <source root>/.cache/vm)
# Prints the kernel version (e.g. 6.1.0-57-amd64) on stdout and records it in
# CACHE_DIR/kernel-version. The tree lands in CACHE_DIR/kernel-VERSION/ with
# boot/vmlinuz-VERSION and a depmod'ed lib/modules/VERSION.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${VM_CACHE_DIR:-$here/../../.cache/vm}}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

log() { echo "fetch-kernel: $*" >&2; }
die() { log "$*"; exit 1; }

for tool in apt-get apt-cache dpkg-deb depmod flock; do
	command -v "$tool" >/dev/null || die "missing host tool '$tool' (packages: apt, dpkg, kmod, util-linux)"
done

# The tests must follow the kernel Debian ships today, so ask the metapackage
# rather than pinning a version that would rot.
current_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1 || true
}

# extract_vmlinux BZIMAGE CONFIG OUTPUT: QEMU boots an uncompressed ELF kernel
# through its PVH entry, which saves the seconds an emulated CPU spends
# decompressing a bzImage. The payload is the first stream with a known magic.
extract_vmlinux() {
	local off magic cmd
	grep -q '^CONFIG_PVH=y' "$2" || return 1
	for magic in '\xfd7zXZ\x00:xz -dc --single-stream' '\x28\xb5\x2f\xfd:zstd -dc' \
		'\x1f\x8b\x08:gzip -dc'; do
		cmd=${magic#*:}
		command -v "${cmd%% *}" >/dev/null || continue
		off=$(LC_ALL=C grep -obUaP "${magic%%:*}" "$1" | head -n1 | cut -d: -f1)
		[ -n "$off" ] || continue
		tail -c +$((off + 1)) "$1" | $cmd >"$3.tmp" 2>/dev/null || true
		if [ "$(head -c 4 "$3.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
			mv "$3.tmp" "$3"
			return 0
		fi
	done
	rm -f "$3.tmp"
	return 1
}

# Two test runs may start a fetch at once; the second waits and then finds
# the cache filled.
exec 9>"$cache/.fetch.lock"
flock 9

# apt-cache takes seconds to load; its answer can only change when the
# package lists do, so a kernel recorded after their last update stands.
lists=/var/lib/apt/lists
if [ -s "$cache/kernel-version" ] &&
   [ -f "$cache/kernel-$(cat "$cache/kernel-version")/.complete" ] &&
   [ -d "$lists" ] &&
   [ -z "$(find "$lists" -maxdepth 1 -name '*Packages*' -newer "$cache/kernel-version" -print -quit)" ]; then
	cat "$cache/kernel-version"
	exit 0
fi

pkg=$(current_pkg)
# A machine whose packages came preinstalled may hold no binary package
# lists at all (images drop them to save space, and tests/install-deps.sh
# updates only when something is missing): fetch them once, as root.
if [ -z "$pkg" ] && [ "$(id -u)" = 0 ]; then
	log "apt-cache knows no linux-image-amd64: apt-get update"
	apt-get update -q >&2 || log "apt-get update failed"
	pkg=$(current_pkg)
fi
if [ -z "$pkg" ]; then
	# Offline or no package lists: a kernel fetched earlier is still good.
	if [ -s "$cache/kernel-version" ] &&
	   [ -f "$cache/kernel-$(cat "$cache/kernel-version")/.complete" ]; then
		log "apt-cache knows no linux-image-amd64; using cached $(cat "$cache/kernel-version")"
		cat "$cache/kernel-version"
		exit 0
	fi
	die "apt-cache knows no linux-image-amd64 dependency: run 'apt-get update' as root, then again"
fi
ver=${pkg#linux-image-}
root=$cache/kernel-$ver

if [ ! -f "$root/.complete" ]; then
	deb=$(ls "$cache/${pkg}"_*_amd64.deb 2>/dev/null | head -n1 || true)
	if [ -z "$deb" ]; then
		log "downloading $pkg"
		# apt-get download writes into the current directory; a partial
		# file must not look like a cached package next time.
		tmp=$(mktemp -d "$cache/.dl.XXXXXX")
		# apt drops to user _apt for downloads when it can write there.
		[ "$(id -u)" != 0 ] || chmod 0777 "$tmp"
		if ! (cd "$tmp" && apt-get download -q "$pkg" >&2); then
			rm -rf "$tmp"
			die "apt-get download $pkg failed"
		fi
		mv "$tmp"/*.deb "$cache/"
		rmdir "$tmp"
		deb=$(ls "$cache/${pkg}"_*_amd64.deb | head -n1)
	fi
	log "unpacking $(basename "$deb")"
	rm -rf "$root"
	dpkg-deb -x "$deb" "$root"
	[ -f "$root/boot/vmlinuz-$ver" ] || die "$deb holds no boot/vmlinuz-$ver"
	# Debian 12 keeps modules under /lib; later releases move them to /usr/lib.
	if [ ! -d "$root/lib/modules/$ver" ] && [ -d "$root/usr/lib/modules/$ver" ]; then
		mkdir -p "$root/lib/modules"
		ln -s "../../usr/lib/modules/$ver" "$root/lib/modules/$ver"
	fi
	depmod -b "$root" "$ver"
	extract_vmlinux "$root/boot/vmlinuz-$ver" "$root/boot/config-$ver" \
		"$root/boot/vmlinux-$ver" || log "no ELF image extracted; booting the bzImage"
	dpkg-deb -f "$deb" Version >"$root/.package-version"
	touch "$root/.complete"
fi

echo "$ver" >"$cache/kernel-version"
# A superseded kernel costs ~0.5 GB; only the current one is ever booted.
for old in "$cache"/kernel-*/ "$cache"/linux-image-*.deb "$cache"/base-*.cpio; do
	case $old in
	"$cache"/kernel-"$ver"/|"$cache"/"$pkg"_*|"$cache"/base-"$ver"-*) ;;
	*) [ -e "$old" ] && rm -rf "$old" && log "removed superseded ${old#"$cache"/}" ;;
	esac
done
log "kernel $ver (package $pkg $(cat "$root/.package-version"))"
echo "$ver"
