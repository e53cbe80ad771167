#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/run.sh: the test command. Installs what it needs, fetches lwIP, builds
# with -Werror and ASan+UBSan (gcc), builds the libFuzzer targets (clang), and
# runs every meson suite (vm-bench from a release build). Prints "N passed, N failed" at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD

tests/install-deps.sh
netstack/lwip/fetch-lwip.sh "$top/.cache/lwip"

builddir=${NCM_BUILDDIR:-$top/build-ci}
fuzzdir=${NCM_FUZZDIR:-$top/build-fuzz}
tsandir=${NCM_TSANDIR:-$top/build-tsan}
reldir=${NCM_RELDIR:-$top/build-rel}
armdir=${NCM_ARMDIR:-$top/build-armhf}

setup() { # dir, options...
	local dir=$1; shift
	if [ -f "$dir/build.ninja" ]; then
		meson configure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@"
	fi
}

# -Ddocs=true: the reference manuals are built here, and a missing comment
# or any gi-docgen warning fails the build. -Dudevrulesdir: the install
# test checks the udev rule, which a /usr/local prefix leaves out; the same
# for -Dsystemd*unitdir and the units.
setup "$builddir" -Dwerror=true -Db_sanitize=address,undefined -Dtest_hooks=enabled \
	-Dlwip=enabled -Dlwip_src="$top/.cache/lwip" -Dfuzz=disabled \
	-Dintrospection=enabled -Ddocs=true -Dudevrulesdir=lib/udev/rules.d \
	-Dsystemdsystemunitdir=lib/systemd/system -Dsystemduserunitdir=lib/systemd/user
ninja -C "$builddir"

CC=clang setup "$fuzzdir" -Dwerror=true -Dfuzz=enabled -Dlwip=disabled -Dintrospection=disabled
ninja -C "$fuzzdir"

# Thread code again under ThreadSanitizer (clang: its runtime is the one
# libclang-rt ships); only the unit suite, which holds the threaded tests.
# No introspection: Python cannot load a TSan build (clang links the
# runtime into executables), and the GIR is the ASan build's to check.
CC=clang setup "$tsandir" -Dwerror=true -Db_sanitize=thread -Db_lundef=false \
	-Dlwip=enabled -Dlwip_src="$top/.cache/lwip" -Dfuzz=disabled -Dintrospection=disabled
ninja -C "$tsandir"

# A release build for what sanitizers slow past their point: vm-bench runs
# ncm-bench's three paths against the clock (its watchdog).
setup "$reldir" -Dwerror=true -Dbuildtype=release -Dlwip=enabled \
	-Dlwip_src="$top/.cache/lwip" -Dfuzz=disabled
ninja -C "$reldir"

# 32-bit ARM (Debian armhf, ARMv7: a Raspberry Pi 2 or later on a 32-bit
# system; the same ILP32 layout and unsigned char as Android's armv7 apps):
# a cross build with -Werror, whose unit suite runs under qemu-arm. Long and
# pointers are 32 bits there, malloc aligns to 8: what x86-64 never shows.
# The cross file goes to meson setup only (meson configure refuses it).
arm=
if command -v arm-linux-gnueabihf-gcc >/dev/null; then
	arm=1
	if [ -f "$armdir/build.ninja" ]; then
		meson configure "$armdir" -Dwerror=true >/dev/null
	else
		meson setup "$armdir" --cross-file "$top/tests/cross/armhf.ini" -Dwerror=true \
			-Dtest_hooks=enabled -Dlwip=enabled -Dlwip_src="$top/.cache/lwip" \
			-Dfuzz=disabled -Dintrospection=disabled
	fi
	ninja -C "$armdir"
else
	echo "run.sh: no arm-linux-gnueabihf-gcc (tests/install-deps.sh could not install the" \
		"armhf packages): 32-bit ARM is not checked"
fi

rc=0
# vm-stress (100 replug cycles, floods) is on demand: it outlasts CI's budget;
# vm-slow holds what a sanitized build runs too slowly to pass reliably.
meson test -C "$builddir" --print-errorlogs --no-suite vm-stress --no-suite vm-slow "$@" || rc=1
meson test -C "$fuzzdir" --print-errorlogs --suite fuzz || rc=1
meson test -C "$tsandir" --print-errorlogs --suite unit || rc=1
# VM data-path tests under TSan: the driver's RX/TX threads against f_ncm,
# a second device hotplugged (rescanned, opened, closed on the owner's
# thread) while the first streams, by polling and under udevd by libusb's
# hotplug events, completions that touch nothing after
# their in-flight drop (vm-driver-landed), eight devices on one context and
# one lwIP stack (one unplugged, replugged, a ninth plugged in, all
# streaming), one ncm-tun driving eight gadgets (one unplugged and
# replugged), and one ncm-tun's single-device path (its TAP reader, the
# ACK hold written at the event batch's end, iperf3 both ways), and its
# device reset from under it twice, once mid-upload (vm-tun-reset); a report
# makes the program's exit status 66, which fails the test.
# has_test DIR NAME. Not "| grep -q": grep would quit at the first match,
# meson die of SIGPIPE, and pipefail turn a found test into a skipped one.
has_test() { meson test -C "$1" --list 2>/dev/null | grep -x "libncm:.* / $2" >/dev/null; }
if has_test "$tsandir" vm-driver-frames-ntb16; then
	# Its own log: a second run in one build dir would overwrite the first's.
	# Under udevd only where the build defines it (udevadm found).
	tsan_udev=
	! has_test "$tsandir" vm-driver-hotplug-udev || tsan_udev=vm-driver-hotplug-udev
	meson test -C "$tsandir" --print-errorlogs --logbase testlog-vm \
		vm-driver-frames-ntb16 vm-driver-hotplug $tsan_udev vm-driver-landed \
		vm-multi-lwip vm-multi-tun vm-tun vm-tun-reset \
		|| rc=1
else
	echo "run.sh: no VM tests in $tsandir: the TSan data-path tests did not run"
fi
# What the tests spawn (ncm-proxy, a test's own child) runs through
# binfmt_misc; register qemu-arm there if the package could not.
arm_runs() { "$armdir/tests/unit/test-eth" -l >/dev/null 2>&1; }
if [ -n "$arm" ]; then
	# An earlier run's results must not count for this one.
	rm -f "$armdir"/meson-logs/testlog*.json
	if ! arm_runs && [ -d /proc/sys/fs/binfmt_misc ]; then
		[ -e /proc/sys/fs/binfmt_misc/register ] ||
			mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || true
		update-binfmts --enable qemu-arm >/dev/null 2>&1 ||
			/usr/lib/systemd/systemd-binfmt /usr/lib/binfmt.d/qemu-arm.conf \
				>/dev/null 2>&1 || true
	fi
	if arm_runs; then
		# install: its ldd check cannot read an ARM program on this host.
		meson test -C "$armdir" --print-errorlogs --suite unit --no-suite install || rc=1
	else
		echo "run.sh: this host cannot run ARM programs (no binfmt_misc for qemu-arm):" \
			"the armhf build was checked, its unit suite did not run"
	fi
fi
if has_test "$reldir" vm-bench; then
	meson test -C "$reldir" --print-errorlogs vm-bench || rc=1
fi

python3 - "$builddir" "$fuzzdir" "$tsandir" "$reldir" "$armdir" <<'PY'
import glob, json, sys
passed = failed = skipped = 0
logs = []
for d in dict.fromkeys(sys.argv[1:]):
    logs += glob.glob(d + '/meson-logs/testlog*.json')
for log in logs:
    for line in open(log).read().splitlines():
        r = json.loads(line)['result']
        if r in ('OK', 'EXPECTEDFAIL'):
            passed += 1
        elif r == 'SKIP':
            skipped += 1
        else:
            failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $rc
