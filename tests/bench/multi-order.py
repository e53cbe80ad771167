#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/multi-order.py GUEST_LOG: whether a device's share at N devices follows its place in the list (the driver's service order) or its gadget (the emulation's), from the scale: lines of a guest-multi-scale.sh run with VM_SCALE_ORDER=alternate (issue 20).
# Per path, variant, count and test: each run's total, fairness (min/max), the last listed device's share (its Mbit/s over the
# run's mean) and every device's share in list order; then each list position's and each gadget's mean share over the runs.
import collections
import re
import sys

# A run of VM_SCALE_DIAG_RX or VM_SCALE_LWIP_PER_CTX says so after the variant: kept apart as one.
LINE = re.compile(r"scale: (\S+)(?: \((\S+)\))?((?: rx_transfers \d+)?(?: \d+ per context)?)(?: round (\d+))?"
                  r"( reversed)? (\d+) (\S+): total ([\d.]+) .*"
                  r"fairness ([\d.]+), system CPU ([\d.-]+) s/MB .* per device (.*)$")


def main(path):
    runs = collections.defaultdict(list)
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = LINE.match(line.strip())
            if not m:
                continue
            name, variant, knob, rnd, rev, k, test, total, fair, cpu, devs = m.groups()
            variant = (variant or "-") + knob
            d = [float(x) for x in devs.split(",")]
            if len(d) > 1:
                runs[(name, variant, k, test)].append((int(rnd or 1), bool(rev), float(total), float(fair), cpu, d))
    for key, rs in runs.items():
        print("==", " ".join(key))
        pos = collections.defaultdict(list)
        gadget = collections.defaultdict(list)
        for rnd, rev, total, fair, cpu, d in rs:
            mean = sum(d) / len(d)
            n = len(d)
            print(f"  round {rnd}{' reversed' if rev else '         '} total {total:6.1f} fairness {fair:.2f} CPU {cpu} s/MB"
                  f" last {d[-1] / mean:.2f} shares " + " ".join(f"{x / mean:.2f}" for x in d))
            for p, x in enumerate(d):
                pos[p].append(x / mean)
                gadget[n - 1 - p if rev else p].append(x / mean)
        print("  mean share by list position:", " ".join(f"{sum(v) / len(v):.2f}" for _, v in sorted(pos.items())))
        print("  mean share by gadget:       ", " ".join(f"{sum(v) / len(v):.2f}" for _, v in sorted(gadget.items())))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: multi-order.py GUEST_LOG")
    main(sys.argv[1])
