#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-gi.py: Ncm-0 and NcmLwip-0 from Python (python3-gi) without a device: import, context, enumeration, errors' domains and codes.
"""Run with GI_TYPELIB_PATH and LD_LIBRARY_PATH pointing at the build. Prints TAP."""
import sys

results = []


def check(ok, name, detail=''):
    results.append((bool(ok), name, detail))


def finish():
    print('TAP version 13')
    print('1..%d' % len(results))
    for i, (ok, name, detail) in enumerate(results, 1):
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, name))
        for line in str(detail).splitlines():
            print('# ' + line)
    sys.exit(0 if results and all(ok for ok, _, _ in results) else 1)


def raises(call):
    """The GLib.Error call() raised, or None."""
    try:
        call()
    except GLib.Error as e:
        return e
    return None


import gi  # noqa: E402
gi.require_version('Ncm', '0')
gi.require_version('NcmLwip', '0')
from gi.repository import GLib, Gio, Ncm, NcmLwip  # noqa: E402

check(Ncm.Device.__gtype__.name == 'NcmDevice' and NcmLwip.Connection.__gtype__.name ==
      'NcmLwipConnection', 'Ncm-0 and NcmLwip-0 import, with their GTypes')
check(issubclass(NcmLwip.Connection, Gio.IOStream), 'NcmLwip.Connection is a Gio.IOStream')

ctx = Ncm.Context.new()
check(isinstance(ctx, Ncm.Context), 'Ncm.Context.new() gives a context (libusb and its thread)')
found = ctx.enumerate(None)
check(isinstance(found, list) and all(isinstance(f, Ncm.FunctionInfo) for f in found),
      'enumerate(None) gives a list of Ncm.FunctionInfo (%d here)' % len(found),
      '\n'.join('%04x:%04x %s' % (f.vid, f.pid, f.product) for f in found))

# A bad selector: NCM_ERROR_FAILED, in the domain Ncm.Error names.
err = raises(lambda: Ncm.Match().parse('bogus'))
check(err is not None and err.domain == 'ncm-error-quark' and err.code == Ncm.Error.FAILED and
      err.matches(Ncm.error_quark(), Ncm.Error.FAILED),
      'Ncm.Match.parse("bogus") raises ncm-error-quark / Ncm.Error.FAILED', err)
options = Ncm.DeviceOptions.init()
check(options.detach_kernel_driver and options.nudge_ms == 0,
      'Ncm.DeviceOptions.init() fills the defaults')

stack = NcmLwip.Stack.get_default()
check(stack is NcmLwip.Stack.get_default(), 'NcmLwip.Stack.get_default() is one stack')
to = Gio.InetSocketAddress.new_from_string('192.0.2.1', 7)
err = raises(lambda: stack.connect(to, 1000, None))
check(err is not None and err.matches(Gio.io_error_quark(), Gio.IOErrorEnum.NETWORK_UNREACHABLE),
      'connect() without a netif raises G_IO_ERROR_NETWORK_UNREACHABLE', err)

# The async pair through GI: the callback runs on this thread's main loop.
loop = GLib.MainLoop()
outcome = []


def connected(source, result):
    outcome.append(raises(lambda: source.connect_finish(result)))
    loop.quit()


stack.connect_async(to, 1000, None, connected)
GLib.timeout_add_seconds(10, loop.quit)
loop.run()
check(outcome and outcome[0] is not None and
      outcome[0].matches(Gio.io_error_quark(), Gio.IOErrorEnum.NETWORK_UNREACHABLE),
      'connect_async() completes on the main loop with the same error', outcome)

# Names: the server list is a list of Gio.InetAddress (element-type), a
# literal resolves to itself with no server asked, also through the async pair.
dns = Gio.InetAddress.new_from_string('192.0.2.53')
stack.set_dns_server(0, dns)
servers = stack.get_dns_servers()
check([a.to_string() for a in servers] == ['192.0.2.53'],
      'get_dns_servers() lists the server set_dns_server() set', servers)
stack.set_dns_server(0, None)
check(stack.get_dns_servers() == [], 'set_dns_server(0, None) clears it')
addr = stack.resolve('2001:db8::7', Gio.SocketFamily.INVALID, None)
check(addr is not None and addr.to_string() == '2001:db8::7', 'resolve() returns a literal', addr)
resolved = []


def on_resolved(source, result):
    resolved.append(source.resolve_finish(result))
    loop.quit()


stack.resolve_async('192.0.2.9', Gio.SocketFamily.IPV4, None, on_resolved)
GLib.timeout_add_seconds(10, loop.quit)
loop.run()
check(resolved and resolved[0].to_string() == '192.0.2.9',
      'resolve_async() completes on the main loop with the literal', resolved)

config = NcmLwip.NetifConfig.init()
check(config.ipv6_link_local and config.ipv6_dad and config.ipv4 is None,
      'NcmLwip.NetifConfig.init() fills the defaults')
stats = stack.get_stats()
check(stats.main_dispatches >= 1, 'get_stats() counts the async callback (%d)' % stats.main_dispatches)
finish()
