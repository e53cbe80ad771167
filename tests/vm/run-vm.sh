#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/run-vm.sh: boots Debian's kernel in QEMU with dummy_hcd + f_ncm and runs one guest script.
#
# Usage: run-vm.sh --script FILE [options]   (see --help and tests/vm/README.md)
#
# Exit status: the guest script's own status; 77 when QEMU or another host
# prerequisite is missing outside CI; 99 for a harness failure (fetch, image
# build, boot failure, kernel panic, missing prerequisite under CI=true);
# 124 when the guest script or the whole VM ran out of time.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
prog=run-vm

# Bump when the base image's layout changes, so cached bases are rebuilt.
base_format=1

# Loaded at boot: the USB host and gadget cores, f_ncm, the kernel's host
# driver and the 9p result share. Other modules ride along for modprobe.
boot_modules="configfs usbcore usb-common udc-core libcomposite u_ether usb_f_ncm
	mii usbnet cdc_ether cdc_ncm tun 9pnet_virtio 9p virtio_pci"
extra_modules="dummy_hcd usb_f_acm usb_f_ecm usb_f_eem usb_f_rndis usb_f_fs gadgetfs
	usb_f_mass_storage usb_f_ss_lb veth usbmon cdc-acm 8021q"

script=
out=
profile=ncm
timeout_s=240
cache=${VM_CACHE_DIR:-$here/../../.cache/vm}
accel=${VM_ACCEL:-tcg}
mem=1024
smp=2
cmdline_extra=
bins=()
files=()
cpios=()
envs=()

usage() {
	cat <<EOF
usage: $0 --script FILE [options]
  --script FILE      guest script (run by busybox sh in the guest); required
  --out DIR          receives what the guest writes to \$VM_OUT, plus console.log,
                     guest.log, guest-status, dmesg.txt (default: a new /tmp dir)
  --profile P        gadget profile: ncm (default), ss, config2, dual, multi
  --bin PATH         host executable to copy in with its shared libraries; on the
                     guest PATH by its base name (repeatable)
  --file SRC:DEST    host file to copy to guest path DEST (repeatable)
  --cpio FILE        a newc cpio archive laid over the guest's root (repeatable;
                     tests/vm/py-closure.py makes one with python3 and gi)
  --env NAME=VALUE   variable for the guest script (repeatable)
  --timeout S        hard limit for the whole VM in seconds (default $timeout_s)
  --cache DIR        kernel and base image cache (default <source root>/.cache/vm)
  --accel A          tcg (default), kvm, or auto (kvm if /dev/kvm opens)
  --memory MB        guest memory (default $mem)
  --append ARGS      extra kernel command line
EOF
}

while [ $# -gt 0 ]; do
	case $1 in
	--script) script=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--profile) profile=$2; shift 2 ;;
	--bin) bins+=("$2"); shift 2 ;;
	--file) files+=("$2"); shift 2 ;;
	--cpio) cpios+=("$2"); shift 2 ;;
	--env) envs+=("$2"); shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--cache) cache=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--memory) mem=$2; shift 2 ;;
	--append) cmdline_extra=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "$prog: unknown argument '$1'" >&2; usage >&2; exit 99 ;;
	esac
done

log() { echo "$prog: $*" >&2; }
harness_fail() { log "HARNESS ERROR: $*"; exit 99; }

[ -n "$script" ] || { usage >&2; exit 99; }
[ -f "$script" ] || harness_fail "no guest script '$script'"
case $profile in ncm|ss|config2|dual|multi) ;; *) harness_fail "unknown profile '$profile'" ;; esac
case $timeout_s in ''|*[!0-9]*) harness_fail "--timeout takes whole seconds" ;; esac
for e in "${envs[@]+"${envs[@]}"}"; do
	case ${e%%=*} in
	''|[0-9]*|*[!A-Za-z0-9_]*) harness_fail "--env '$e' is not NAME=VALUE" ;;
	esac
	[ "${e#*=}" != "$e" ] || harness_fail "--env '$e' is not NAME=VALUE"
done

# A developer without QEMU gets a skip; CI must not silently skip the suite.
qemu=${QEMU:-qemu-system-x86_64}
missing=()
for tool in "$qemu" cpio depmod dpkg-deb apt-get apt-cache ldd flock timeout sha256sum; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
	msg="missing host tools: ${missing[*]} (tests/install-deps.sh installs them)"
	if [ "${CI:-}" = true ]; then
		harness_fail "$msg; CI=true, so this is a failure"
	fi
	log "SKIP: $msg"
	exit 77
fi

start_ns=$(date +%s%N)
elapsed() { echo "$(( ($(date +%s%N) - start_ns) / 1000000 )) ms"; }

mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
ver=$("$here/fetch-kernel.sh" "$cache") || harness_fail "kernel fetch failed"
kroot=$cache/kernel-$ver
kmods=$kroot/lib/modules/$ver

# ---- copying executables with their libraries ------------------------------

# Prints the absolute paths of the shared objects ldd resolves for $1 (the
# ELF interpreter included); nothing for static binaries and scripts.
shared_libs() {
	local f=$1 out
	out=$(LC_ALL=C ldd "$f" 2>&1) || return 0
	if grep -q 'not found' <<<"$out"; then
		harness_fail "ldd $f: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ')"
	fi
	awk '$2 == "=>" && $3 ~ /^\// { print $3; next }
	     $1 ~ /^\// { print $1 }' <<<"$out"
}

# install_file STAGE SRC DEST: copies SRC (following symlinks) to DEST
# inside STAGE, keeping the mode.
install_file() {
	mkdir -p "$1$(dirname "$3")"
	cp -L --preserve=mode "$2" "$1$3"
}

# install_with_libs STAGE SRC DEST: the binary plus every library at the path
# ldd found it, so that the guest's loader (and $ORIGIN run paths of build-tree
# binaries, which are mirrored at their host paths) resolve the same files.
install_with_libs() {
	local stage=$1 src=$2 dest=$3 lib libs
	install_file "$stage" "$src" "$dest"
	libs=$(shared_libs "$src")
	for lib in $libs; do
		[ -e "$stage$lib" ] || install_file "$stage" "$lib" "$lib"
		echo "$(dirname "$lib")" >>"$stage/.libdirs"
	done
}

make_cpio() { # STAGE OUTPUT
	(cd "$1" && find . ! -name .libdirs | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --quiet) >"$2"
}

# ---- the base image: busybox, tools, modules; cached per kernel ------------

module_path() { # NAME -> path relative to lib/modules/VER, from modules.dep
	local n=${1//-/_}
	awk -F: -v n="$n" '{
		b = $1; sub(/.*\//, "", b); sub(/\.ko(\.[a-z]+)?$/, "", b);
		gsub(/-/, "_", b); if (b == n) { print $1; exit } }' "$kmods/modules.dep"
}

module_closure() { # NAMES... -> relative paths of the modules and dependencies
	local m p
	for m in "$@"; do
		p=$(module_path "$m")
		if [ -z "$p" ]; then
			grep -qE "/${m//[-_]/[-_]}\.ko" "$kmods/modules.builtin" && continue
			harness_fail "kernel $ver has no module $m"
		fi
		echo "$p"
		awk -F: -v p="$p" '$1 == p { n = split($2, d, " "); for (i = 1; i <= n; i++) print d[i] }' \
			"$kmods/modules.dep"
	done | sort -u
}

build_base() { # OUTPUT
	local stage rel rels dest a libs
	stage=$(mktemp -d "$cache/.base.XXXXXX")
	mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,lib,lib64,proc,sys,dev,run,tmp,out,root,etc,vm,var}
	chmod 1777 "$stage/tmp"
	ln -s ../run "$stage/var/run"
	install_file "$stage" /bin/busybox /bin/busybox
	libs=$(shared_libs "$stage/bin/busybox")
	[ -z "$libs" ] || harness_fail "/bin/busybox is not static (install busybox-static)"
	[ -x /usr/bin/ip ] && [ -x /usr/bin/iperf3 ] ||
		harness_fail "need /usr/bin/ip and /usr/bin/iperf3 (iproute2, iperf3)"
	install_with_libs "$stage" /usr/bin/ip /usr/bin/ip
	install_with_libs "$stage" /usr/bin/iperf3 /usr/bin/iperf3
	# Applet links only where no real tool sits, so execvp() from test
	# programs finds the real ip.
	for a in $("$stage/bin/busybox" --list-full); do
		[ -e "$stage/$a" ] || [ -L "$stage/$a" ] || ln -s /bin/busybox "$stage/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
	printf 'root:x:0:\n' >"$stage/etc/group"

	# Only the modules we use, with a modules.dep of their own so that
	# busybox modprobe works in the guest. Compressed modules are unpacked
	# here because busybox cannot read them.
	rels=$(module_closure $boot_modules $extra_modules)
	for rel in $rels; do
		dest=$stage/lib/modules/$ver/${rel%.xz}
		dest=${dest%.zst}
		mkdir -p "$(dirname "$dest")"
		case $rel in
		*.xz) xz -dc "$kmods/$rel" >"$dest" ;;
		*.zst) zstd -qdc "$kmods/$rel" >"$dest" ;;
		*) cp "$kmods/$rel" "$dest" ;;
		esac
	done
	cp "$kmods"/modules.{order,builtin,builtin.modinfo} "$stage/lib/modules/$ver/"
	depmod -b "$stage" "$ver"
	echo "$boot_modules" | tr -s ' \t\n' '\n' | sed '/^$/d' >"$stage/vm/boot-modules"
	echo "$ver" >"$stage/vm/kernel-version"
	sort -u "$stage/.libdirs" >"$stage/vm/base-libdirs"
	make_cpio "$stage" "$1.tmp"
	mv "$1.tmp" "$1"
	rm -rf "$stage"
}

base_key() {
	{
		echo "$base_format $ver $boot_modules $extra_modules"
		# The code that builds the base, not the whole runner, so that
		# editing the runner does not cost a rebuild.
		declare -f shared_libs install_file install_with_libs make_cpio \
			module_path module_closure build_base
		sha256sum /bin/busybox /usr/bin/ip /usr/bin/iperf3 \
			$(shared_libs /usr/bin/ip) $(shared_libs /usr/bin/iperf3)
	} | sha256sum | cut -c1-16
}

key=$(base_key)
base=$cache/base-$ver-$key.cpio
(
	flock 9
	if [ ! -f "$base" ]; then
		log "building base image for $ver"
		rm -f "$cache"/base-"$ver"-*.cpio
		build_base "$base"
	fi
) 9>"$cache/.base.lock" || harness_fail "base image build failed"

# ---- the per-run image: init, guest library, script, binaries ---------------

work=$(mktemp -d /tmp/run-vm.XXXXXX)
vm_pid=
cleanup() {
	[ -z "$vm_pid" ] || kill "$vm_pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stage=$work/stage
mkdir -p "$stage/vm" "$stage/usr/local/bin"
install -m 755 "$here/init.sh" "$stage/init"
install -m 644 "$here/guest-lib.sh" "$stage/vm/guest-lib.sh"
install -m 755 "$script" "$stage/vm/script.sh"
for b in "${bins[@]+"${bins[@]}"}"; do
	[ -f "$b" ] && [ -x "$b" ] || harness_fail "--bin $b is not an executable file"
	b=$(realpath "$b")
	install_with_libs "$stage" "$b" "$b"
	ln -sf "$b" "$stage/usr/local/bin/$(basename "$b")"
done
for f in "${files[@]+"${files[@]}"}"; do
	src=${f%%:*} dest=${f#*:}
	[ "$src" != "$f" ] && [ "${dest#/}" != "$dest" ] || harness_fail "--file '$f' is not SRC:/ABS/DEST"
	[ -e "$src" ] || harness_fail "--file source $src does not exist"
	mkdir -p "$stage$(dirname "$dest")"
	cp -rL "$src" "$stage$dest"
done
{
	q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
	echo "export VM_PROFILE=$(q "$profile")"
	# The guest stops its script a little before the host kills QEMU, so
	# that it can still save dmesg and a status.
	echo "export VM_SCRIPT_TIMEOUT=$(( timeout_s > 40 ? timeout_s - 20 : timeout_s ))"
	[ -f "$stage/.libdirs" ] &&
		echo "export LD_LIBRARY_PATH=$(q "$(sort -u "$stage/.libdirs" | paste -sd:)")"
	for e in "${envs[@]+"${envs[@]}"}"; do
		echo "export ${e%%=*}=$(q "${e#*=}")"
	done
} >"$stage/vm/env"
make_cpio "$stage" "$work/run.cpio"
for c in "${cpios[@]+"${cpios[@]}"}"; do
	[ -f "$c" ] || harness_fail "--cpio $c is not a file"
done
# The kernel unpacks concatenated archives in order: later files win.
cat "$base" "$work/run.cpio" "${cpios[@]+"${cpios[@]}"}" >"$work/initrd.cpio"

# ---- the output directory -------------------------------------------------

if [ -z "$out" ]; then
	out=$(mktemp -d /tmp/vm-out.XXXXXX)
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Stale files from an earlier run would pass for fresh results, but a
# mistyped --out must never wipe a directory we did not create.
if [ -n "$(ls -A "$out")" ]; then
	[ -f "$out/.vm-out" ] || harness_fail "--out $out is not empty and was not made by $prog; refusing to clear it"
	find "$out" -mindepth 1 -delete
fi
touch "$out/.vm-out"

# ---- boot -------------------------------------------------------------------

# TCG by default: a /dev/kvm that opens is no promise that KVM runs this
# kernel (nested hosts here stop it with "KVM internal error ... emulation
# failure" in the boot and the guest hangs until the timeout).
if [ "$accel" = auto ]; then
	accel=tcg
	[ -r /dev/kvm ] && [ -w /dev/kvm ] && accel=kvm
fi
case $accel in
tcg) accel_args=(-accel tcg,thread=multi -cpu Nehalem) ;; # x86-64-v2: the TSan runtime needs it; "max" would turn on AVX, which TCG runs slowly
kvm) accel_args=(-accel kvm -cpu host) ;;
*) harness_fail "unknown --accel '$accel'" ;;
esac

# fetch-kernel.sh unpacks the ELF image: booting it through PVH skips the
# in-guest decompression, which costs seconds under TCG.
kernel_image=$kroot/boot/vmlinux-$ver
[ -f "$kernel_image" ] || kernel_image=$kroot/boot/vmlinuz-$ver

log "kernel $ver, profile $profile, accel $accel, timeout ${timeout_s}s, image ready after $(elapsed)"
log "out: $out"

# The guest CPU (Nehalem) is Meltdown- and MDS-affected, so the kernel would
# switch page tables and clear buffers on every syscall and interrupt. Under
# TCG each switch flushes QEMU's whole software TLB (ncm-tun's CPU per MB
# fell 3.7x with them off), far beyond what real hardware pays. That tax
# falls on userspace drivers (usbfs, TAP: syscalls per NTB) and not on
# cdc_ncm, so it would skew every side-by-side figure. VM_MITIGATIONS=on
# keeps the distribution default.
mitigations=mitigations=off
[ "${VM_MITIGATIONS:-off}" = on ] && mitigations=

# The firmware's terminal resets would garble test logs; console.log keeps them.
strip_ansi='s/\x1bc//g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\r$//'

# --foreground keeps QEMU in our process group, so whoever kills the test
# (meson on its timeout, Ctrl-C) kills the VM too; the trap covers a signal
# sent to this script alone.
boot_vm() {
	timeout --foreground -k 10 "$timeout_s" "$qemu" "${accel_args[@]}" -smp "$smp" -m "$mem" \
		-nographic -monitor none -no-reboot -nic none \
		-kernel "$kernel_image" -initrd "$work/initrd.cpio" \
		-append "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init $mitigations $cmdline_extra" \
		-virtfs "local,path=$out,mount_tag=vmout,security_model=none,id=vmout" \
		${VM_QEMU_ARGS:-} </dev/null > >(tee "$out/console.log" | sed -u "$strip_ansi") 2>&1 &
	vm_pid=$!
}

# Now and then QEMU (TCG, a loaded host) stops in the firmware for good, its
# console ending at "Booting from ROM..": no kernel line ever comes. Our
# init's first line ("vm: kernel ...") comes within seconds of a good boot;
# without it after VM_BOOT_WAIT seconds the VM is booted once more, so a
# firmware hang costs a minute instead of the test.
boot_wait=${VM_BOOT_WAIT:-60}
guest_silent() { kill -0 "$vm_pid" 2>/dev/null && ! grep -q '^vm: ' "$out/console.log" 2>/dev/null; }
# The gadget's kernel itself can panic in f_ncm's ncm_wrap_ntb
# (skb_over_panic: a 32-bit NDP entry put into an NDP buffer of NTB16's
# size) while it answers the host in NTB32; README.md, "A gadget quirk".
# That guest is run once more, with its first console kept
# (console-panic.log), so a rare crash of the device does not fail a test;
# one that comes back every time still does.
fncm_panicked() {
	[ ! -f "$out/guest-status" ] && grep -q 'skb_over_panic' "$out/console.log" 2>/dev/null &&
		grep -q 'ncm_wrap_ntb' "$out/console.log"
}
for run in 1 2; do
	qrc=0
	for attempt in 1 2; do
		boot_vm
		waited=0
		while guest_silent && [ "$waited" -lt "$boot_wait" ]; do
			sleep 1
			waited=$((waited + 1))
		done
		{ [ "$attempt" = 1 ] && guest_silent; } || break
		log "HARNESS: no output from the guest's init ${boot_wait}s after start (console ends: $(tail -c 80 "$out/console.log" | tr -d '\r\n\033')); booting it again"
		kill "$vm_pid" 2>/dev/null || true
		wait "$vm_pid" 2>/dev/null || true
	done
	wait "$vm_pid" || qrc=$?
	vm_pid=
	# Let tee write the last console lines before our summary.
	sleep 0.2
	{ [ "$run" = 1 ] && fncm_panicked; } || break
	log "HARNESS: the gadget's kernel panicked in f_ncm's ncm_wrap_ntb (a known f_ncm bug, README.md \"A gadget quirk\"); its console is in $out/console-panic.log; running the guest once more"
	mv "$out/console.log" "$out/console-panic.log.tmp"
	find "$out" -mindepth 1 ! -name .vm-out ! -name console-panic.log.tmp -delete
	mv "$out/console-panic.log.tmp" "$out/console-panic.log"
done

status=
[ -f "$out/guest-status" ] && status=$(cat "$out/guest-status")
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	log "TIMEOUT: the VM did not finish within ${timeout_s}s and was killed (console: $out/console.log)"
	exit 124
fi
case $status in
''|*[!0-9]*)
	log "HARNESS ERROR: the guest reported no status (boot failure or kernel panic?); qemu exited $qrc"
	log "last console lines ($out/console.log):"
	tail -n 20 "$out/console.log" | sed 's/^/    /' >&2
	exit 99 ;;
esac
[ "$status" = 124 ] && log "TIMEOUT: the guest script ran out of time (VM_SCRIPT_TIMEOUT)"
info="kernel $ver, profile $profile"
[ -s "$out/vm-info" ] && info=$(cat "$out/vm-info")
log "guest script exited $status ($info) after $(elapsed); results in $out"
exit "$status"
