#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Compares multi-device runs' CPU per MB by stage, thread and symbol: multi-perf-report.py OUT [TOP].

OUT is what tests/bench/multi-ab.sh MULTI_AB_PERF=1 wrote (guest-multi-scale.sh's
scale-*-TEST.folded and .spans, perf-hz, perf-peer.pid). Each run is one column,
in busy CPU milliseconds per MB the receivers confirmed inside the interval every
device was measuring (all guest CPUs, both ends). Stages are tests/bench/perf-stages.py's;
threads are the sampled comm names (ncm-tun's TAP readers, its libusb event thread,
ncm-bench's socket readers...); symbols are the TOP (30) with the largest spread
between the columns, so what grows from 1 to 8 devices comes first.
"""
import collections
import glob
import importlib.util
import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("perf_stages", os.path.join(here, "perf-stages.py"))
ps = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ps)


def thread_name(comm):
    # One row per kind of thread: numbered or per-device names fold together.
    return re.sub(r"\d+", "N", comm)


def load(folded, spans, peer_pid):
    mb = 0.0
    with open(spans) as f:
        for line in f:
            p = line.split()
            mb += int(p[4]) / 1e6
    stacks = ps.read_folded(folded)
    host_pids = {pid for pid, comm, _, _ in stacks
                 if comm.startswith(("ncm-tun", "ncm-bench", "bench-", "ncm-usb-", "ncm-tap-", "pool-ncm-bench"))
                 or comm in ("libusb", "lwip", "gmain")}
    host_pids.discard(peer_pid)
    r = {"mb": mb, "stage": collections.Counter(), "thread": collections.Counter(), "sym": collections.Counter()}
    for pid, comm, frames, count in stacks:
        st = ps.classify(pid, comm, frames, peer_pid, host_pids)
        r["stage"][st] += count
        if st == "idle":
            continue
        who = "peer" if pid == peer_pid else ("host" if pid in host_pids else "other")
        r["thread"]["%s: %s" % (who, thread_name(comm))] += count
        if frames:
            r["sym"]["%s [%s]" % frames[-1]] += count
    return r


def main():
    d = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    hz = int(open(os.path.join(d, "perf-hz")).read().strip())
    peer_pid = int(open(os.path.join(d, "perf-peer.pid")).read().split()[0])
    runs = []
    for folded in sorted(glob.glob(os.path.join(d, "scale-*.folded"))):
        name = os.path.basename(folded)[len("scale-"):-len(".folded")]
        spans = folded[:-len(".folded")] + ".spans"
        if os.path.exists(spans):
            runs.append((name, load(folded, spans, peer_pid)))
    if not runs:
        sys.exit("multi-perf-report: no scale-*.folded in %s" % d)

    def ms(r, n):
        return 1000.0 * n / hz / r["mb"] if r["mb"] > 0 else 0.0

    def table(title, key, rows):
        print("\n## %s (busy ms per MB)\n" % title)
        print("| %s | %s |" % (key, " | ".join(n for n, _ in runs)))
        print("|---|" + "---:|" * len(runs))
        for row in rows:
            print("| %s | %s |" % (row, " | ".join("%.2f" % ms(r, r[key][row]) for _, r in runs)))

    print("# CPU per MB by run: %s\n" % d)
    print("| run | MB | busy ms/MB | idle share |")
    print("|---|---:|---:|---:|")
    for n, r in runs:
        busy = sum(c for s, c in r["stage"].items() if s != "idle")
        total = busy + r["stage"]["idle"]
        print("| %s | %.1f | %.1f | %.0f%% |" % (n, r["mb"], ms(r, busy), 100.0 * r["stage"]["idle"] / total if total else 0))
    table("Stages", "stage", [s for s in ps.STAGES if any(r["stage"][s] for _, r in runs)])

    def spread(key, k):
        v = [ms(r, r[key][k]) for _, r in runs]
        return max(v) - min(v)

    threads = set().union(*(r["thread"] for _, r in runs))
    table("Threads", "thread", sorted(threads, key=lambda k: -spread("thread", k))[:top])
    syms = set().union(*(r["sym"] for _, r in runs))
    table("Symbols, largest spread first", "sym", sorted(syms, key=lambda k: -spread("sym", k))[:top])


if __name__ == "__main__":
    main()
