#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/rtt-hops.py OUT [RUN...]: each round trip of tests/bench/ab.sh's AB_HOPS=1 runs cut into its hops.
# For every run (ab-VARIANT-ROUND.hops, a perf record -k mono of the events
# guest-ab.sh lists, and .echoes, ncm-bench's probes: path, test, send time
# and round trip in CLOCK_MONOTONIC us), each echoed probe is followed
# through the events between its send and its echo's arrival:
#   send -> the host's OUT URB submitted (ncm-tun: the TAP reader woken and
#   running before it) -> the gadget's OUT request completed (dummy_hcd
#   moved it) -> the echo server's receive and send -> f_ncm's IN request
#   queued (its 300 us flush timer) -> the host's IN URB completed ->
#   (libncm: the event thread woken and running, ncm-tun: its TAP write)
#   -> the host kernel's netif_rx (cdc_ncm, ncm-tun) -> the client woken
#   -> the echo received (ncm-bench's clock). Before the submission, on
#   the kernel paths: the host's qdisc taking the datagram.
# The echo server is the process that sends with sendmsg (the client's
# kernel sockets use sendto, lwIP's client no syscall).
# Prints per variant and test the median (and p90) of each hop over every
# round's probes, in ms; a probe where a mark is missing counts in no hop
# after it. The sum of the hops' medians need not be the median total;
# a second table gives each hop's mean over the probes with every mark to
# the IN URB, which add up to their mean round trip.
import collections
import glob
import os
import re
import subprocess
import sys

out = sys.argv[1]
only = sys.argv[2:]

LINE = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+\[(?P<cpu>\d+)\]\s+"
                  r"(?P<t>[\d.]+):\s+(?P<ev>[\w-]+:[\w-]+):\s*(?P<rest>.*)$")
KV = re.compile(r"(\w+)=(\S+)")
PIPE_IN = 0x80
PIPE_BULK = 3

# (name, what it ends at); each hop runs from the mark before it.
HOPS = [
    ("tx_stack", "host's qdisc took it (kernel)"),
    ("tx_wake", "TAP reader woken (ncm-tun)"),
    ("tx_run", "TAP reader running"),
    ("tx_submit", "OUT URB submitted"),
    ("out_bus", "gadget's OUT request done"),
    ("dev_rx", "echo server's receive returned"),
    ("dev_echo", "echo server's send entered"),
    ("fncm_flush", "f_ncm's IN request queued"),
    ("in_bus", "host's IN URB completed"),
    ("rx_wake", "event thread woken (libncm)"),
    ("rx_run", "event thread running"),
    ("rx_write", "TAP write entered (ncm-tun)"),
    ("rx_netif", "host's netif_rx (kernel)"),
    ("rx_client", "client woken"),
    ("rx_end", "echo received (ncm-bench)"),
]


def events(path):
    txt = subprocess.run(["perf", "script", "--ns", "-i", path, "-F",
                          "comm,pid,tid,cpu,time,event,trace"],
                         capture_output=True, text=True, errors="replace").stdout
    evs = []
    for line in txt.splitlines():
        if line.lstrip().startswith("perf "):
            continue  # a record made without --exclude-perf: its own writes
        m = LINE.match(line)
        if m:
            evs.append((int(float(m["t"]) * 1e6), m["ev"], m["comm"].strip(), int(m["pid"]),
                        int(m["tid"]), m["rest"]))
    evs.sort(key=lambda e: e[0])
    return evs


def pipe_of(rest):
    d = dict(KV.findall(rest))
    try:
        return int(d["pipe"], 0), int(d.get("len", "0"), 0)
    except (KeyError, ValueError):
        return None, 0


def bulk(pipe, want_in):
    return pipe is not None and (pipe >> 30) == PIPE_BULK and bool(pipe & PIPE_IN) == want_in


def find(evs, i, end, pred):
    """Index of the first event from @i on, before time @end, that @pred takes."""
    while i < len(evs) and evs[i][0] <= end:
        if pred(evs[i]):
            return i
        i += 1
    return None


def woken(name):
    return lambda e: e[1] == "sched:sched_wakeup" and dict(KV.findall(e[5])).get("comm") == name


def switched_in(name):
    return lambda e: e[1] == "sched:sched_switch" and \
        e[5].split("==>")[-1].strip().startswith("next_comm=" + name)


def probe(evs, starts, t0, rtt, server_pid, tap, kernel_rx):
    """The marks of one probe: hop name -> time (us), in order."""
    import bisect
    end = t0 + rtt
    i = bisect.bisect_left(starts, t0)
    marks = {}

    def mark(name, pred, frm, until=None):
        j = find(evs, frm, end if until is None else until, pred)
        if j is not None:
            marks[name] = evs[j][0]
        return j

    j = mark("tx_submit", lambda e: e[1] == "hops:urb_submit" and bulk(pipe_of(e[5])[0], False), i)
    if j is None:
        return marks
    # what came before the submission
    sub = marks["tx_submit"]
    mark("tx_stack", lambda e: e[1] == "net:net_dev_queue", i, sub)
    if tap:
        k = mark("tx_wake", woken("ncm-tap-tx"), i, sub)
        if k is not None:
            mark("tx_run", switched_in("ncm-tap-tx"), k, sub)
    j = j_out = mark("out_bus", lambda e: e[1] == "gadget:usb_gadget_giveback_request", j)
    if j is None:
        return marks
    j = mark("dev_rx", lambda e: e[3] == server_pid and e[1] in
             ("syscalls:sys_exit_recvfrom", "syscalls:sys_exit_recvmsg"), j)
    if j is None:
        return marks
    j = mark("dev_echo", lambda e: e[3] == server_pid and e[1] in
             ("syscalls:sys_enter_sendto", "syscalls:sys_enter_sendmsg"), j)
    if j is None:
        return marks
    # not the OUT endpoint's requeue: its request goes back at its completion
    out_ep = evs[j_out][5].split(":")[0]
    j = mark("fncm_flush", lambda e: e[1] == "gadget:usb_ep_queue" and
             e[5].split(":")[0] != out_ep, j)
    if j is None:
        return marks

    def in_done(e):
        p, n = pipe_of(e[5])
        return e[1] == "hops:urb_giveback" and bulk(p, True) and n > 0
    j = mark("in_bus", in_done, j)
    if j is None:
        return marks
    k = mark("rx_wake", woken("ncm-usb-events"), j)
    if k is not None:
        k = mark("rx_run", switched_in("ncm-usb-events"), k)
    if tap and k is not None:
        mark("rx_write", lambda e: e[2] == "ncm-usb-events" and e[1] in
             ("syscalls:sys_enter_write", "syscalls:sys_enter_writev"), k)
    if kernel_rx:
        mark("rx_netif", lambda e: e[1] in ("net:netif_rx", "net:netif_receive_skb"),
             k if k is not None else j)
    # the last wake-up of a bench thread before the echo is read
    last = None
    k = j
    while k < len(evs) and evs[k][0] <= end:
        e = evs[k]
        if e[1] == "sched:sched_wakeup" and re.match(r"(ncm-bench|pool-)",
                                                      dict(KV.findall(e[5])).get("comm", "")):
            last = e[0]
        k += 1
    if last is not None:
        marks["rx_client"] = last
    marks["rx_end"] = end
    return marks


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main():
    stats = collections.defaultdict(lambda: collections.defaultdict(list))
    checked = collections.Counter()
    for hops in sorted(glob.glob(os.path.join(out, "ab-*-*.hops"))):
        run = os.path.basename(hops)[3:-5]
        variant = run.rsplit("-", 1)[0]
        if only and run not in only and variant not in only:
            continue
        try:
            echoes = [l.split() for l in open(hops[:-5] + ".echoes")]
        except OSError:
            print(f"{run}: no .echoes (base's ncm-bench predates NCM_BENCH_ECHOES)")
            continue
        evs = events(hops)
        starts = [x[0] for x in evs]
        # The echo server answers with sendmsg (g_socket_send_to); the
        # client's kernel sockets send with sendto, lwIP's none.
        senders = collections.Counter(x[3] for x in evs if x[1] == "syscalls:sys_enter_sendmsg")
        server_pid = senders.most_common(1)[0][0] if senders else -1
        for ev in evs:
            if ev[1] == "hops:urb_submit":
                p, _ = pipe_of(ev[5])
                checked["bulk" if p is not None and p >> 30 == PIPE_BULK else "other"] += 1
        for path, test, t0, rtt in echoes:
            tap = path.startswith("ncm-tun")
            marks = probe(evs, starts, int(t0), int(rtt), server_pid, tap,
                          not path.startswith(("lwip", "raw", "ncm-proxy")))
            key = (variant, test)
            hops = {"total": int(rtt) / 1000}
            prev = int(t0)
            for name, _ in HOPS:
                if name in marks:
                    hops[name] = (marks[name] - prev) / 1000
                    prev = marks[name]
            for name, ms in hops.items():
                stats[key][name].append(ms)
            stats[key]["_n"].append(1 if "in_bus" in marks else 0)
            if "in_bus" in marks:
                stats[key]["_full"].append(hops)
    if checked["bulk"] == 0:
        print("no bulk pipes read by the kprobes: struct urb's layout differs from 6.1's?")
    names = ["total"] + [h for h, _ in HOPS]

    def table(keys, title, cell, extra=""):
        """One line per hop, one cell per variant: cell(key, hop)."""
        print(f"\n{title}")
        print(f"{'hop':<11} {'ends at':<32}" + "".join(f" {k[0]:>16}" for k in keys) + extra)
        for h in names:
            what = dict(HOPS).get(h, "echo's round trip (ncm-bench)")
            print(f"{h:<11} {what:<32}" + "".join(cell(k, h) for k in keys))

    def median_cell(k, h):
        xs = stats[k].get(h, [])
        return f" {pct(xs, .5):7.3f} ({pct(xs, .9):6.3f})" if xs else f" {'-':>16}"

    def mean_cell(k, h):
        xs = [x[h] for x in stats[k]["_full"] if h in x]
        return f" {sum(xs) / len(xs):16.3f}" if xs else f" {'-':>16}"

    for test in sorted({k[1] for k in stats}):
        keys = [k for k in sorted(stats) if k[1] == test]
        probes = (f"\n{'probes':<11} {'(all marks to the IN URB)':<32}" +
                  "".join(f" {sum(stats[k]['_n']):>6}/{len(stats[k]['total']):<9}" for k in keys))
        table(keys, f"{test}: median (p90) ms per hop, every round pooled", median_cell, probes)
        # Medians do not add up; means over the probes that reached the
        # IN URB do, so they say which hops make a total differ.
        table(keys, f"{test}: mean ms per hop over the probes with every mark to the IN URB",
              mean_cell)

main()
