#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# ncm-tcp-cat.py: ncm-tcp-cat.c in Python: TCP over the in-process lwIP stack to a server on the first NCM device, stdin to it, it to stdout.
"""Usage: ncm-tcp-cat.py OUR_IPV4/PREFIX SERVER PORT

Needs python3-gi and the Ncm-0 and NcmLwip-0 typelibs (installed with
libncm, or GI_TYPELIB_PATH pointing at a build). No root: lwIP runs in this
process, the device needs only usbfs access.
"""
import sys
import threading

import gi
gi.require_version('Ncm', '0')
gi.require_version('NcmLwip', '0')
from gi.repository import GLib, Gio, Ncm, NcmLwip  # noqa: E402

CHUNK = 65536


def open_first_device(ctx):
    found = ctx.enumerate(None)
    if not found:
        raise GLib.Error('no NCM function found')
    return Ncm.Device.open(ctx, found[0], None)


def send_stdin(out):
    """stdin to the connection, then FIN: a thread of its own."""
    try:
        while True:
            data = sys.stdin.buffer.read1(CHUNK)
            if not data:
                break
            out.write_all(data, None)
        out.close(None)
    except GLib.Error as e:
        print('ncm-tcp-cat: send: %s' % e.message, file=sys.stderr)


def main(argv):
    if len(argv) != 4:
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    address, _, prefix = argv[1].partition('/')
    ctx = Ncm.Context.new()
    device = open_first_device(ctx)
    stack = NcmLwip.Stack.get_default()
    netif = stack.add_device(device, None)
    netif.set_ipv4(Gio.InetAddress.new_from_string(address), int(prefix or 24), None)
    server = Gio.InetSocketAddress.new_from_string(argv[2], int(argv[3]))
    conn = stack.connect(server, 10000, None)
    sender = threading.Thread(target=send_stdin, args=(conn.get_output_stream(),))
    sender.start()
    received = conn.get_input_stream()
    while True:
        data = received.read_bytes(CHUNK, None).get_data()
        if not data:
            break
        sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    sender.join()
    conn.close(None)
    netif.remove()  # closes the device
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv))
    except GLib.Error as e:
        print('ncm-tcp-cat: %s' % e.message, file=sys.stderr)
        sys.exit(1)
