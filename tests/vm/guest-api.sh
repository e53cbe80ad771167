#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/vm/guest-api.sh: the programs of examples/api against f_ncm (frame headers; TCP cat in C and Python), and Python through GI echoing 1 MiB over lwIP TCP.
# VM_API_MIB (1) sizes the Python echo; VM_PY_LIBPATH, VM_PY_PRELOAD and
# GI_TYPELIB_PATH come from the runner (run-vm.sh --cpio of py-closure.py).
set -eu
. "$VM_LIB"

for p in ncm-frames ncm-tcp-cat python3; do
	command -v "$p" >/dev/null || fail "$p is not on PATH (run-vm.sh --bin / --cpio)"
done

gadget_setup "${VM_PROFILE:-ncm}"
host_use_userspace
ifn=$(gadget_ifname 0)
host4=$(host_ip4)/24 peer4=$(peer_ip4)

# (a) ncm-frames prints 5 frame headers and exits; the peer's arping makes
# sure ARP requests from the gadget's MAC are among them.
ncm-frames 5 >"$VM_OUT/frames.txt" 2>&1 &
frames=$!
(sleep 60; kill "$frames") 2>/dev/null &
watchdog=$!
wait_for 30 "ncm-frames listening" grep -q '^listening on' "$VM_OUT/frames.txt" ||
	{ cat "$VM_OUT/frames.txt"; fail "ncm-frames did not start"; }
peer_run arping -c 10 -w 12 -I "$ifn" "$(host_ip4)" >/dev/null 2>&1 &
arping=$!
rc=0
wait "$frames" || rc=$?
kill "$watchdog" "$arping" 2>/dev/null || true
cat "$VM_OUT/frames.txt"
check "ncm-frames exited 0 after its frames (not killed after 60 s)" [ "$rc" = 0 ]
check "ncm-frames printed 5 headers" [ "$(grep -c ' type 0x' "$VM_OUT/frames.txt")" = 5 ]
check "an ARP broadcast from the gadget ($VM_DEV_MAC) was among them" \
	grep -q "^ff:ff:ff:ff:ff:ff < $VM_DEV_MAC type 0x0806 " "$VM_OUT/frames.txt"

# The peer's echo server: one cat per connection (busybox nc -ll -e).
peer_run nc -ll -p 7007 -e cat &
echo_server=$!
wait_for "$VM_WAIT" "echo server on 7007" peer_listening 7007 || fail "nc -ll did not listen"

# (b) ncm-tcp-cat: 256 KiB of random bytes through the peer's echo.
head -c 262144 /dev/urandom >/tmp/in.bin
ncm-tcp-cat "$host4" "$peer4" 7007 </tmp/in.bin >/tmp/out.bin 2>"$VM_OUT/tcp-cat.txt" ||
	{ cat "$VM_OUT/tcp-cat.txt"; fail "ncm-tcp-cat failed"; }
check "ncm-tcp-cat: 256 KiB came back unchanged" \
	[ "$(md5sum </tmp/in.bin)" = "$(md5sum </tmp/out.bin)" ]

# Python: the interpreter, gi and the typelibs came in by --cpio.
export LD_LIBRARY_PATH="$VM_PY_LIBPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
py() { LD_PRELOAD="${VM_PY_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 python3 "$@"; }
t0=$(uptime_cs)
py -c 'import gi; gi.require_version("NcmLwip", "0"); from gi.repository import NcmLwip' ||
	fail "python3 cannot import NcmLwip"
log "python3 + gi + NcmLwip import: $(( ($(uptime_cs) - t0) * 10 )) ms"

rc=0
py /vm/vmtest-gi.py "$host4" "$peer4" 7007 $(( ${VM_API_MIB:-1} * 1048576 )) \
	>"$VM_OUT/gi.txt" 2>&1 || rc=$?
cat "$VM_OUT/gi.txt"
check "vmtest-gi.py passed" [ "$rc" = 0 ]
check "no FAIL line from vmtest-gi.py" sh -c "! grep -q '^FAIL' '$VM_OUT/gi.txt'"

# The Python example: one line through the echo.
echo "hello from Python over lwIP" >/tmp/line.txt
py /vm/ncm-tcp-cat.py "$host4" "$peer4" 7007 </tmp/line.txt >/tmp/line-back.txt \
	2>"$VM_OUT/tcp-cat-py.txt" || { cat "$VM_OUT/tcp-cat-py.txt"; fail "ncm-tcp-cat.py failed"; }
check "ncm-tcp-cat.py: the line came back" cmp /tmp/line.txt /tmp/line-back.txt
kill "$echo_server" 2>/dev/null || true
vm_info
