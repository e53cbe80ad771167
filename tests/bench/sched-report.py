#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/sched-report.py OUT [RUN...]: where the guest's threads ran in tests/bench/ab.sh's AB_SCHED=1 runs.
# For each run (ab-VARIANT-ROUND.sched, a perf record of sched_switch,
# sched_wakeup and sched_migrate_task): the run's Mbit/s, then per thread
# group (ncm-tun's threads by name, the bench, ksoftirqd, kworkers, idle) the
# CPU seconds on CPU 0 and 1, switches in, wake-ups received and how many of
# them came from the other CPU, and migrations; who woke whom (the thread that
# ran the wake-up, by group); then the IPIs (RES, CAL) and
# softirqs per CPU from /proc around the run. Per MB where MB is known: the
# bytes libncm moved both ways (ncm-tun), else Mbit/s x the measured seconds.
import collections
import glob
import os
import re
import subprocess
import sys

out = sys.argv[1]
only = sys.argv[2:]


def group(comm):
    for p, g in (("swapper", "idle"), ("ksoftirqd", "ksoftirqd"), ("kworker", "kworker"),
                 ("ncm-tap-tx", "tap-reader"), ("ncm-bench", "bench"), ("perf", "perf")):
        if comm.startswith(p):
            return g
    return comm


# Threads whose CPUs matter to each other: libncm's two, the bench's.
WATCH = {"tap-reader", "ncm-usb-events", "bench", "pool-ncm-bench", "bench-writer"}
PAIRS = [("tap-reader", "ncm-usb-events"), ("ncm-usb-events", "tap-reader"),
         ("bench", "ncm-usb-events"), ("pool-ncm-bench", "ncm-usb-events"),
         ("bench-writer", "ncm-usb-events")]

LINE = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<t>[\d.]+):\s+"
                  r"(?:sched|raw_syscalls):(?P<ev>\w+):\s+(?P<rest>.*)$")
# x86_64 numbers of the syscalls a data path makes (AB_SCHED_SYSCALLS=1).
SYSCALLS = {0: "read", 1: "write", 7: "poll", 16: "ioctl", 19: "readv", 20: "writev",
            23: "select", 28: "madvise", 44: "sendto", 45: "recvfrom", 46: "sendmsg",
            47: "recvmsg", 202: "futex", 232: "epoll_wait", 270: "pselect6", 271: "ppoll"}


def parse(path):
    txt = subprocess.run(["perf", "script", "-i", path, "-F", "comm,tid,cpu,time,event,trace"],
                         capture_output=True, text=True, errors="replace").stdout
    run = collections.defaultdict(lambda: collections.Counter())
    names = {}
    pre = collections.Counter()   # (preempted group, group that ran instead)
    last = {}                     # tid of a WATCH thread -> the CPU it last ran on
    together = collections.Counter()
    wakers = collections.Counter()  # (waker group, woken group)
    calls = collections.Counter()   # (group, syscall name)
    on = {}          # cpu -> (tid, since)
    t0 = t1 = None
    for line in txt.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        cpu, t, ev, rest = int(m["cpu"]), float(m["t"]), m["ev"], m["rest"]
        t0 = t if t0 is None else t0
        t1 = t
        if ev == "sched_switch":
            a = dict(re.findall(r"(\w+)=(\S+)", rest.replace(" ==> ", " ")))
            prev, nxt = int(a["prev_pid"]), int(a["next_pid"])
            names[prev] = a["prev_comm"]
            names[nxt] = a["next_comm"]
            if cpu in on and on[cpu][0] == prev:
                run[prev]["cpu%d_s" % cpu] += t - on[cpu][1]
            if a.get("prev_state", "R").startswith("R") and prev:
                run[prev]["preempted"] += 1
                pre[(group(a["prev_comm"]), group(a["next_comm"]))] += 1
            on[cpu] = (nxt, t)
            if group(a["next_comm"]) in WATCH:
                last[nxt] = cpu
            run[nxt]["switch_in"] += 1
        elif ev == "sched_wakeup":
            a = dict(re.findall(r"(\w+)=(\S+)", rest))
            pid, target = int(a["pid"]), int(a["target_cpu"])
            names[pid] = a["comm"]
            # Woken onto the CPU where another thread of interest last ran?
            for other, ocpu in last.items():
                if other != pid and group(names.get(other, "?")) != group(a["comm"]):
                    pair = (group(a["comm"]), group(names.get(other, "?")))
                    if pair in PAIRS:
                        together[pair] += 1 if ocpu == target else 0
                        together[pair + ("n",)] += 1
            run[pid]["woken"] += 1
            if target != cpu:
                run[pid]["woken_cross"] += 1
            run[int(m["tid"])]["wakes_other"] += 1
            wakers[(group(m["comm"]), group(a["comm"]))] += 1
        elif ev == "sys_enter":
            nr = re.match(r"NR (\d+)", rest)
            if nr:
                calls[(group(m["comm"]), SYSCALLS.get(int(nr.group(1)), "nr" + nr.group(1)))] += 1
        elif ev == "sched_migrate_task":
            a = dict(re.findall(r"(\w+)=(\S+)", rest))
            run[int(a["pid"])]["migrations"] += 1
    groups = collections.defaultdict(collections.Counter)
    for tid, c in run.items():
        groups[group(names.get(tid, "?"))].update(c)
    return groups, pre, together, wakers, calls, (t1 - t0) if t0 is not None else 0.0


def proc_delta(base, kind, rows):
    """Per-CPU deltas of /proc/interrupts or /proc/softirqs rows."""
    res = {}
    try:
        a, b = (open("%s.%s%d" % (base, kind, i)).read().splitlines() for i in (0, 1))
    except OSError:
        return res
    def table(lines):
        t = {}
        for ln in lines[1:]:
            f = ln.split()
            if f and f[0].rstrip(":") in rows:
                t[f[0].rstrip(":")] = [int(x) for x in f[1:3] if x.isdigit()]
        return t
    ta, tb = table(a), table(b)
    for k in ta:
        if k in tb:
            res[k] = [y - x for x, y in zip(ta[k], tb[k])]
    return res


def moved_mb(base):
    log = open(base + ".log", errors="replace").read()
    txt = open(base + ".txt", errors="replace").read()
    rx = re.findall(r"usb rx: \d+ NTBs, \d+ datagrams, (\d+) bytes", log)
    tx = re.findall(r"usb tx: \d+ NTBs, \d+ datagrams, (\d+) bytes", log)
    mt = re.search(r"^tcp_\w+\s*\|\s*([\d.]+) Mbit/s", txt, re.M)
    mbit = float(mt.group(1)) if mt else 0.0
    if rx and tx:
        return mbit, (int(rx[-1]) + int(tx[-1])) / 1e6
    return mbit, None


files = sorted(glob.glob(os.path.join(out, "ab-*-*.sched")))
for f in files:
    base = f[: -len(".sched")]
    name = os.path.basename(base)
    if only and name not in only:
        continue
    groups, pre, together, wakers, calls, span = parse(f)
    mbit, mb = moved_mb(base)
    print("%s: %.0f Mbit/s, %.1f s recorded%s" % (name, mbit, span,
          ", %.0f MB through libncm" % mb if mb else ""))
    print("  %-14s %7s %7s %8s %8s %8s %8s %6s" % ("thread", "cpu0 s", "cpu1 s", "in", "woken",
          "x-cpu", "preempt", "migr"))
    order = sorted(groups, key=lambda g: -(groups[g]["cpu0_s"] + groups[g]["cpu1_s"]))
    for g in order[:12]:
        c = groups[g]
        print("  %-14s %7.2f %7.2f %8d %8d %8d %8d %6d" % (g[:14], c["cpu0_s"], c["cpu1_s"],
              c["switch_in"], c["woken"], c["woken_cross"], c["preempted"], c["migrations"]))
    print("  preempted by: " + ", ".join("%s<-%s %d" % (a, b, n) for (a, b), n in pre.most_common(6)))
    print("  woken where the other last ran: " + ", ".join(
        "%s on %s's CPU %d/%d" % (p[0], p[1], together[p], together[p + ("n",)])
        for p in PAIRS if together[p + ("n",)]))
    print("  who woke whom%s: " % (" (per MB)" if mb else "") + ", ".join(
        "%s->%s %.1f" % (a, b, n / mb if mb else n) for (a, b), n in wakers.most_common(10)))
    for g in sorted({g for g, _ in calls}, key=lambda g: -sum(n for (h, _), n in calls.items() if h == g))[:6]:
        row = sorted(((n, c) for (h, c), n in calls.items() if h == g), reverse=True)[:8]
        print("  syscalls%s %s: " % (" per MB" if mb else "", g) + ", ".join(
            "%s %.1f" % (c, n / mb if mb else n) for n, c in row))
    irq = proc_delta(base, "irq", {"RES", "CAL", "TLB", "LOC"})
    sirq = proc_delta(base, "softirq", {"NET_RX", "NET_TX", "TIMER", "HRTIMER", "TASKLET", "SCHED"})
    print("  per CPU (0/1): " + ", ".join("%s %s" % (k, "/".join(map(str, v)))
                                           for k, v in sorted({**irq, **sirq}.items())))
