#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""tests/bench/ab-report.py OUTDIR: medians and ratios of a tests/bench/ab.sh run.

Reads OUTDIR/ab-VARIANT-ROUND.json (ncm-bench --json, one rep each). For every
test and variant: the median over rounds of Mbit/s and of system CPU-s per MB,
and the median over rounds of the paired ratio to "base" and to "cdc_ncm" run
in the same round (rounds rotate the order, so a pair is close in time).
For an RTT test (udp_rtt_*) the two columns are its p50 and p99 in ms."""
import json
import pathlib
import re
import statistics
import sys


def scalar(v):
    if isinstance(v, dict):
        return v.get("median", v.get("p50"))
    return v


def main():
    out = pathlib.Path(sys.argv[1])
    runs = {}  # (variant, round) -> {test: (mbit, cpu)}
    for f in sorted(out.glob("ab-*-*.json")):
        m = re.fullmatch(r"ab-(.+)-(\d+)\.json", f.name)
        doc = json.loads(f.read_text())
        res = {}
        for r in doc["results"]:
            if "rtt_ms" in r:
                res[r["test"]] = (r["rtt_ms"].get("p50"), r["rtt_ms"].get("p99"))
            else:
                res[r["test"]] = (scalar(r.get("mbit_s")), scalar(r.get("system_cpu_s_per_mb")))
        runs[(m.group(1), int(m.group(2)))] = res
    variants = sorted({v for v, _ in runs},
                      key=lambda v: (v != "cdc_ncm", v != "lwip", v != "base", v))
    # AB_PATH=proxy runs the lwip path as well: the proxy's target is a ratio to it.
    refs = ["lwip"] if "lwip" in variants else []
    rounds = sorted({r for _, r in runs})
    tests = sorted({t for res in runs.values() for t in res})
    print(f"{len(rounds)} rounds; medians over rounds; ratios are medians of same-round pairs")
    for t in tests:
        rtt = t.startswith("udp_rtt")
        a_name, b_name = ("p50 ms", "p99 ms") if rtt else ("Mbit/s", "cpu ms/MB")
        b_ratio = "p99 x base" if rtt else "cpu x base"
        print(f"\n{t}:")
        print(f"  {'variant':<12} {a_name:>7} {b_name:>9} {'x base':>7} {b_ratio:>10}"
              f" {'x cdc':>6} {'p99 x cdc' if rtt else 'cpu x cdc':>9}"
              + "".join(f" {'x ' + ref:>7} {'cpu x ' + ref:>10}" for ref in refs)
              + f"  per-round {a_name}")
        for v in variants:
            vals = [runs[(v, r)].get(t) for r in rounds if (v, r) in runs]
            vals = [x for x in vals if x and x[0] is not None]
            if not vals:
                continue

            def ratio(other, i):
                rs = []
                for r in rounds:
                    a, b = runs.get((v, r), {}).get(t), runs.get((other, r), {}).get(t)
                    if a and b and a[i] and b[i]:
                        rs.append(a[i] / b[i])
                return f"{statistics.median(rs):.2f}" if rs else "-"

            mb = statistics.median(x[0] for x in vals)
            cpus = [x[1] for x in vals if x[1] is not None]
            cpu = f"{statistics.median(cpus) * (1 if rtt else 1000):.{2 if rtt else 1}f}" if cpus else "-"
            per = " ".join(f"{x[0]:.{2 if rtt else 0}f}" for x in vals)
            print(f"  {v:<12} {mb:7.{2 if rtt else 0}f} {cpu:>9} {ratio('base', 0):>7} {ratio('base', 1):>10}"
                  f" {ratio('cdc_ncm', 0):>6} {ratio('cdc_ncm', 1):>9}"
                  + "".join(f" {ratio(ref, 0):>7} {ratio(ref, 1):>10}" for ref in refs)
                  + f"  {per}")


if __name__ == "__main__":
    main()
