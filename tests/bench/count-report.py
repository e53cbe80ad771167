#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/count-report.py OUT [SECS]: work units per MB from tests/bench/ab.sh's AB_COUNT=1.
# Per variant, the median over rounds of each perf stat count divided by the MB
# the run moved: for ncm-tun, the bytes libncm sent and received (its "usb tx"
# and "usb rx" lines, the whole session: tcp_down's data comes in); for cdc_ncm, which has no such counter, Mbit/s times SECS (default 5).
# Ratios to base are medians of same-round pairs.
import glob
import os
import re
import statistics
import sys

out = sys.argv[1]
secs = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
runs = {}
for stat in sorted(glob.glob(os.path.join(out, "ab-*-*.stat"))):
    m = re.match(r"ab-(.+)-(\d+)\.stat$", os.path.basename(stat))
    v, rnd = m.group(1), int(m.group(2))
    base = stat[: -len(".stat")]
    counts = {}
    for line in open(stat):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].replace(".", "").isdigit():
            counts[f[2]] = float(f[0])
    log = open(base + ".log", errors="replace").read()
    txt = open(base + ".txt", errors="replace").read()
    mt = re.search(r"^tcp_\w+\s*\|\s*([\d.]+) Mbit/s", txt, re.M)
    mbit = float(mt.group(1)) if mt else 0.0
    mu = re.findall(r"usb tx: \d+ NTBs, \d+ datagrams, (\d+) bytes", log)
    mr = re.findall(r"usb rx: \d+ NTBs, \d+ datagrams, (\d+) bytes", log)
    mb = (int(mu[-1]) + (int(mr[-1]) if mr else 0)) / 1e6 if mu else mbit * secs / 8
    if mb <= 0:
        continue
    runs.setdefault(v, {})[rnd] = (mbit, {k: c / mb for k, c in counts.items()})

events = sorted({k for v in runs.values() for _, c in v.values() for k in c})
short = {e: e.split(":")[-1].replace("sys_enter_", "") for e in events}
print("per MB moved; medians over rounds; x base: median of same-round ratios")
print("%-8s %7s " % ("variant", "Mbit/s") + " ".join("%16s" % short[e] for e in events))
for v in ["cdc_ncm", "base"] + sorted(k for k in runs if k not in ("cdc_ncm", "base")):
    if v not in runs:
        continue
    r = runs[v]
    cells = []
    for e in events:
        med = statistics.median(c[e] for _, c in r.values() if e in c)
        rat = [c[e] / runs["base"][k][1][e] for k, (_, c) in r.items()
               if "base" in runs and k in runs["base"] and e in c and runs["base"][k][1].get(e)]
        cells.append("%9.0f (%4.2fx)" % (med, statistics.median(rat)) if rat else "%16.0f" % med)
    print("%-8s %7.0f " % (v, statistics.median(m for m, _ in r.values())) + " ".join(cells))
print("Mbit/s: the first test's median; with several tests in AB_TESTS the counts cover them all.")
