#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/link-report.py OUT: tests/bench/guest-link-bound.sh's results as one table per rate.
# Per test: each path's median Mbit/s, whole-system CPU ms per MB and busy %
# over its rounds; proxy x lwip as the median of same-round ratios (rounds of
# one boot share the host's load); the proxy's extra CPU per MB over lwip
# (median of same-round differences); and the loopback hop alone at that rate.
import glob
import json
import os
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def by_test(doc, path):
    out = {}
    for r in (doc or {}).get("results", []):
        if r.get("path") == path and "runs" in r:
            out[r["test"]] = r
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def runs(r):
    """The result's runs (ncm-bench keeps them as arrays side by side) as dicts."""
    cols = r.get("runs", {})
    n = len(cols.get("mbit_s", []))
    return [{k: (v[i] if i < len(v) else None) for k, v in cols.items()} for i in range(n)]


def per_round(r):
    return {run["round"]: run for run in runs(r)}


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def cpu_ms(run):
    c = run.get("system_cpu_s_per_mb")
    return None if c is None else c * 1000


def cells(r):
    return "%s / %s / %s" % (
        fmt(med([x["mbit_s"] for x in runs(r)]), ".0f"),
        fmt(med([cpu_ms(x) for x in runs(r)]), ".1f"),
        fmt((r.get("system_cpu_busy_pct") or {}).get("median"), ".0f"))


def rate_rows(rate, doc, lo):
    lwip, hop = by_test(doc, "lwip"), by_test(lo, "lo")
    proxies = sorted({r["path"] for r in (doc or {}).get("results", [])
                      if r.get("path", "").startswith("ncm-proxy")})
    rows = []
    for test in sorted(lwip):
        a = per_round(lwip[test])
        h = hop.get(test)
        hop_cell = "-" if h is None else "%s / %s" % (
            fmt(med([x["mbit_s"] for x in runs(h)]), ".0f"),
            fmt(med([cpu_ms(x) for x in runs(h)]), ".1f"))
        for name in proxies:
            p = by_test(doc, name).get(test)
            if p is None:
                continue
            b = per_round(p)
            rounds = sorted(set(a) & set(b))
            ratio = med([b[k]["mbit_s"] / a[k]["mbit_s"] for k in rounds if a[k]["mbit_s"]])
            extra = med([cpu_ms(b[k]) - cpu_ms(a[k]) for k in rounds
                         if cpu_ms(a[k]) is not None and cpu_ms(b[k]) is not None])
            rows.append("| %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (
                "unshaped" if rate == 0 else "%d" % rate, test, cells(lwip[test]), name,
                cells(p), fmt(ratio, ".2f"), fmt(extra, "+.1f"), hop_cell, len(rounds)))
    return rows


def main():
    out = sys.argv[1]
    rates = sorted(int(os.path.basename(p)[5:-5]) for p in glob.glob(os.path.join(out, "link-*.json")))
    print("| link Mbit/s | test | lwip Mbit/s / CPU ms/MB / busy % | proxy path | its Mbit/s / CPU ms/MB / busy % "
          "| proxy x lwip | proxy CPU - lwip (ms/MB) | loopback hop Mbit/s / CPU ms/MB | rounds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for rate in rates:
        doc = load(os.path.join(out, "link-%d.json" % rate))
        lo = load(os.path.join(out, "lo-%d.json" % rate))
        for row in rate_rows(rate, doc, lo):
            print(row)


if __name__ == "__main__":
    main()
