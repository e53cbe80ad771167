#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# vmtest-gi.py: Python through Ncm-0 and NcmLwip-0 against the gadget: open it, TCP over lwIP to the peer's echo server, SIZE bytes each way through GIO streams, checksummed.
"""Usage: vmtest-gi.py OUR_IPV4/PREFIX PEER_IPV4 PORT SIZE. Prints ok:/FAIL: lines."""
import hashlib
import random
import sys
import threading

import gi
gi.require_version('Ncm', '0')
gi.require_version('NcmLwip', '0')
from gi.repository import GLib, Gio, Ncm, NcmLwip  # noqa: E402

failed = []


def check(ok, what):
    print('%s: %s' % ('ok' if ok else 'FAIL', what), flush=True)
    if not ok:
        failed.append(what)


def send(out, data, result):
    """The writer: a thread of its own, so that the echo drains meanwhile."""
    try:
        for i in range(0, len(data), 65536):
            out.write_all(data[i:i + 65536], None)
        out.close(None)  # FIN: the echo server then ends its side
        result.append(None)
    except GLib.Error as e:
        result.append(e)


def main(argv):
    ours, prefix = argv[1].split('/')
    peer, port, size = argv[2], int(argv[3]), int(argv[4])
    ctx = Ncm.Context.new()
    found = ctx.enumerate(None)
    check(len(found) >= 1 and isinstance(found[0], Ncm.FunctionInfo),
          'enumerate found the gadget (%s)' % ', '.join('%04x:%04x' % (f.vid, f.pid) for f in found))
    device = Ncm.Device.open(ctx, found[0], None)
    check(device.get_mtu() >= 1500, 'Ncm.Device.open: MTU %d' % device.get_mtu())

    stack = NcmLwip.Stack.get_default()
    config = NcmLwip.NetifConfig.init()
    address = Gio.InetAddress.new_from_string(ours)
    config.ipv4 = address  # borrowed: `address` outlives the call
    config.ipv4_prefix = int(prefix)
    config.ipv6_dad = False
    netif = stack.add_device(device, config)
    check(any(a.to_string() == ours for a in netif.get_addresses()),
          'the netif has %s' % ours)

    conn = stack.connect(Gio.InetSocketAddress.new_from_string(peer, port), 20000, None)
    remote = conn.get_remote_address()
    check(remote.get_address().to_string() == peer and remote.get_port() == port,
          'get_remote_address() is %s:%d' % (remote.get_address().to_string(), remote.get_port()))
    check(conn.get_local_address().get_address().to_string() == ours,
          'get_local_address() is ours')
    seen, learnt, mac = netif.get_peer(Gio.SocketFamily.IPV4)
    check(seen and learnt.to_string() == peer and len(mac) == 6,
          'get_peer() learnt %s at %s from its ARP' %
          (learnt and learnt.to_string(), ':'.join('%02x' % b for b in mac or [])))

    data = random.Random(0x18).randbytes(size)
    result = []
    writer = threading.Thread(target=send, args=(conn.get_output_stream(), data, result))
    writer.start()
    got = hashlib.sha256()
    received = 0
    stream = conn.get_input_stream()
    while True:
        chunk = stream.read_bytes(65536, None).get_data()
        if not chunk:
            break
        got.update(chunk)
        received += len(chunk)
    writer.join()
    check(result == [None], 'sent %d bytes and closed the output (FIN)' % size)
    check(received == size and got.digest() == hashlib.sha256(data).digest(),
          'the echo came back whole: %d bytes, sha256 %s' % (received, got.hexdigest()[:16]))
    conn.close(None)
    netif.remove()  # closes the device
    err = None
    try:
        device.start()
    except GLib.Error as e:
        err = e
    check(err is not None and err.matches(Ncm.error_quark(), Ncm.Error.CLOSED),
          'after remove the device is closed: start() raises Ncm.Error.CLOSED (%s)' % err)
    return 1 if failed else 0


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv))
    except GLib.Error as e:
        print('FAIL: %s (%s %d)' % (e.message, e.domain, e.code))
        sys.exit(1)
