#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/tcp-probe-report.py OUT: one line per run of tests/bench/guest-tcp-probe.sh.
# Per run: throughput and busy CPU per MB (ncm-bench's JSON), the sender's median
# cwnd, smoothed RTT and pacing rate over the 0.5 s samples (ss -ti; the socket
# that moved the most bytes), the bytes per packet the host interface carried
# each way (TSO packets on a TAP: the kernel hands ncm-tun whole ones; cdc_ncm's
# are cut before the driver), and the host's TCP segments out and retransmitted
# per MB. A sender whose packets shrink pays per packet more often per MB.
import glob
import json
import os
import re
import statistics
import sys

FIELDS = ("cwnd", "rtt", "pacing_rate", "unacked", "notsent")


def rate(v):
    m = re.match(r"([\d.]+)([KMG]?)bps", v)
    return float(m.group(1)) * {"": 1e-6, "K": 1e-3, "M": 1, "G": 1e3}[m.group(2)] if m else None


def sockets(block):
    """The sockets of one ss -tin block, each a dict of the fields it showed."""
    out, cur = [], None
    for line in block.splitlines():
        if not line.startswith((" ", "\t")):
            cur = {}
            out.append(cur)
            continue
        if cur is None:
            continue
        for k, v in re.findall(r"(\w+):([\w./]+)", line):
            if k in ("bytes_acked", "bytes_received", "cwnd", "unacked", "notsent"):
                cur[k] = float(v)
            elif k == "rtt":
                cur["rtt"] = float(v.split("/")[0])
        m = re.search(r"pacing_rate (\S+)", line)
        if m:
            cur["pacing_rate"] = rate(m.group(1))
    return out


def link(block):
    """TX and RX (bytes, packets) from `ip -s link` lines 3-6."""
    lines = [l.split() for l in block.strip().splitlines()]
    got = {}
    for i, l in enumerate(lines[:-1]):
        if l and l[0] in ("RX:", "TX:") and lines[i + 1][:2] and lines[i + 1][0].isdigit():
            got[l[0][:2]] = (int(lines[i + 1][0]), int(lines[i + 1][1]))
    return got


def parse_samples(path):
    samples = []
    for chunk in open(path, errors="replace").read().split("== t=")[1:]:
        parts = dict(re.findall(r"-- (\w+)\n(.*?)(?=\n-- |\Z)", chunk, re.S))
        samples.append({side: sockets(parts.get(side, "")) for side in ("host", "peer")}
                       | {"link": link(parts.get("link", ""))})
    return samples


def counters(path):
    side, got = None, {}
    lines = open(path).read().splitlines()
    for i, l in enumerate(lines):
        if l.startswith("-- "):
            side = l[3:]
            continue
        f = l.split()
        if i + 1 < len(lines) and f and not f[1].lstrip("-").isdigit():
            vals = lines[i + 1].split()
            if vals and vals[0] == f[0]:
                for k, v in zip(f[1:], vals[1:]):
                    got[(side, f[0].rstrip(":") + k)] = int(v)
    return got


def sender_stats(samples, side):
    """Medians of FIELDS for @side's busiest socket, sample by sample."""
    vals = {k: [] for k in FIELDS}
    for s in samples:
        socks = [x for x in s[side] if x.get("bytes_acked", 0) > 1e6]
        if not socks:
            continue
        best = max(socks, key=lambda x: x.get("bytes_acked", 0))
        for k in FIELDS:
            vals[k].append(best.get(k, 0.0))
    return {k: statistics.median(v) if v else float("nan") for k, v in vals.items()}


def main():
    out = sys.argv[1]
    rows = []
    for js in sorted(glob.glob(os.path.join(out, "probe-*.json"))):
        m = re.match(r"probe-(.+)-(tcp_\w+)-(\d+)\.json$", os.path.basename(js))
        if not m:
            continue
        path, test, rnd = m.group(1), m.group(2), int(m.group(3))
        base = js[: -len(".json")]
        res = [r for r in json.load(open(js))["results"] if r["test"] == test]
        if not res:
            continue
        r = res[0]
        mbit = r["mbit_s"]["median"]
        cpu = r.get("system_cpu_s_per_mb", {}).get("median", float("nan")) * 1e3
        samples = parse_samples(base + ".txt")
        links = [s["link"] for s in samples if s["link"]]
        per_pkt = {}
        for d in ("TX", "RX"):
            if len(links) >= 2 and d in links[0] and d in links[-1]:
                db = links[-1][d][0] - links[0][d][0]
                dp = links[-1][d][1] - links[0][d][1]
                per_pkt[d] = db / dp if dp else float("nan")
        c0, c1 = counters(base + ".before"), counters(base + ".after")
        delta = {k: c1[k] - c0.get(k, 0) for k in c1}
        moved = mbit * r.get("secs", 1) / 8 if samples else 0
        sides = {"tcp_up": ("host",), "tcp_down": ("peer",)}.get(test, ("host", "peer"))
        row = [path, test, rnd, mbit, cpu]
        for side in sides:
            st = sender_stats(samples, side)
            row.append("%s cwnd %4.0f rtt %6.1f pace %5.0f unacked %4.0f" % (
                side, st["cwnd"], st["rtt"], st["pacing_rate"], st["unacked"]))
        row.append("tx %6.0f B/pkt rx %6.0f B/pkt" % (per_pkt.get("TX", float("nan")),
                                                       per_pkt.get("RX", float("nan"))))
        out_segs = delta.get(("host", "TcpOutSegs"), 0)
        retrans = delta.get(("host", "TcpRetransSegs"), 0)
        peer_retrans = delta.get(("peer", "TcpRetransSegs"), 0)
        row.append("retrans host %d peer %d, recoveries %d, peer ofo %d, host segs/MB %s" % (
            retrans, peer_retrans, delta.get(("host", "TcpExtTCPSackRecovery"), 0),
            delta.get(("peer", "TcpExtTCPOFOQueue"), 0),
            "%.0f" % (out_segs / moved) if moved else "-"))
        rows.append(row)
    rows.sort(key=lambda x: (x[1], x[0], x[2]))
    print("path     test      rnd  Mbit/s  cpu ms/MB  sender (median of 0.5 s samples; rtt ms, pace Mbit/s)")
    for r in rows:
        print("%-8s %-9s %3d %7.0f %10.1f  %s" % (r[0], r[1], r[2], r[3], r[4], "  ".join(r[5:])))


main()
