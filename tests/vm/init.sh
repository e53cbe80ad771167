#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/init.sh: PID 1 of the test VM; loads the modules, runs /vm/script.sh, saves its status, powers off.

export PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin
export HOME=/root
umask 022

# Never return: PID 1 exiting panics the kernel, and a hung guest would cost
# the host its whole timeout.
halt_vm() {
	sync
	umount /out 2>/dev/null
	poweroff -f
	sleep 5
	echo o >/proc/sysrq-trigger
}

harness_error() {
	echo "VM-HARNESS-ERROR: $*"
	[ -d /out/. ] && echo "$*" >/out/harness-error
	halt_vm
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run

. /vm/env
export VM_KERNEL="$(uname -r)"
export VM_OUT=/out
export VM_LIB=/vm/guest-lib.sh
[ -s /vm/base-libdirs ] &&
	export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(paste -sd: /vm/base-libdirs)"

for m in $(cat /vm/boot-modules); do
	modprobe "$m" || harness_error "modprobe $m failed"
done
# dummy_hcd's speed is a load-time choice, so the profile decides it here.
if [ "$VM_PROFILE" = ss ]; then
	modprobe dummy_hcd is_super_speed=1
else
	modprobe dummy_hcd
fi || harness_error "modprobe dummy_hcd failed"

mount -t configfs configfs /sys/kernel/config || harness_error "cannot mount configfs"
mount -t debugfs debugfs /sys/kernel/debug
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 vmout /out ||
	harness_error "cannot mount the 9p result share"
/usr/bin/ip link set lo up
# A crash, or an ncm-bench that hung (NCM_BENCH_HANG_CORE: its watchdog
# aborts), leaves a core in the result share for gdb on the host, which has
# the same binaries and libraries (tests/vm/README.md, "A core from the
# guest"). ASan marks its shadow memory not to be dumped.
echo "/out/core.%e.%p" >/proc/sys/kernel/core_pattern
ulimit -c unlimited
export NCM_BENCH_HANG_CORE=1
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}disable_coredump=0"

# A newline first: the firmware leaves the cursor mid-line.
echo
echo "vm: kernel $VM_KERNEL, profile $VM_PROFILE, up $(cut -d' ' -f1 /proc/uptime) s"

# tee keeps the console live while guest.log stays free of kernel messages.
mkfifo /run/log.fifo
tee /out/guest.log </run/log.fifo >/dev/console &
tee_pid=$!
cd /root
timeout -s KILL "$VM_SCRIPT_TIMEOUT" sh /vm/script.sh >/run/log.fifo 2>&1 </dev/null
status=$?
up=$(cut -d' ' -f1 /proc/uptime)
# A child left running in the background may hold the fifo open; give tee a
# moment to drain, then stop it.
i=0
while kill -0 "$tee_pid" 2>/dev/null && [ $i -lt 20 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill "$tee_pid" 2>/dev/null

if [ "$status" = 137 ] && [ "${up%.*}" -ge "$VM_SCRIPT_TIMEOUT" ]; then
	echo "vm: guest script killed after ${VM_SCRIPT_TIMEOUT}s (VM_SCRIPT_TIMEOUT)"
	status=124
fi
echo "vm: guest script exited $status at $up s"
dmesg >/out/dmesg.txt
echo "$status" >/out/guest-status
halt_vm
