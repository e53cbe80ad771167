#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/multi-diag-report.py OUT: sums up what MULTI_AB_DIAG=1 (tests/bench/multi-ab.sh) collected per run.
"""Per run (scale-PATH-K[-rR] in OUT): each device's Mbit/s; libncm's counters over
ncm-bench's measured interval (or ncm-tun's SIGUSR1 reads); the peer's TCP sender per
device from its last ss -tin sample (cwnd, retransmits, RTO, limited times); the host's
receiver (ncm-tun); per-thread CPU and /proc/stat over the samples; and the TCP counters
(nstat names) that changed in either namespace; per CPU its input backlog (softnet_stat every
0.2 s), and per gadget netdev from the receive trace the CPU its frames joined a backlog on
and their wait there, the CPU its download left on, and the gadgets' rates by their timer's
CPU; each CPU's busy share and where each driver thread ran; ncm-tun's counters at exit per MB (NTBs, batches,
TAP writes, the host's frames, OUT NTBs) and, with VM_SCALE_SYSCALLS=1, the data path's
syscalls per MB by thread and kind."""
import collections
import glob
import json
import os
import re
import sys

NET_KEYS = re.compile(r'^(TcpRetransSegs|TcpOutRsts|TcpInErrs|TcpExtTCP(Timeouts|LossProbes|LossProbeRecovery|'
                      r'SackRecovery|FastRetrans|SlowStartRetrans|LostRetransmit|SpuriousRTOs|DSACK\w*|'
                      r'OFOQueue|OFODrop|RcvQDrop|BacklogDrop|ZeroWindow\w*|WantZeroWindowAdv|ToZeroWindowAdv|'
                      r'FromZeroWindowAdv|WinProbe|RcvCoalesce|Abort\w*|SackShifted|TimeoutRehash|RenoRecovery|'
                      r'SACKReneging|LossUndo|FullUndo|PartialUndo|DSACKUndo|SpuriousRtxHostQueues|'
                      r'RcvCollapsed|PruneCalled|RcvPruned)|TcpExtPruneCalled|TcpExtRcvPruned|'
                      r'TcpExtDelayedACK\w*|TcpExtListenDrops|IpExtInNoRoutes)$')
SS_KEYS = ('cwnd', 'ssthresh', 'rtt', 'rto', 'backoff', 'retrans', 'lost', 'unacked', 'bytes_acked',
           'bytes_received', 'busy', 'rwnd_limited', 'sndbuf_limited', 'notsent', 'rcv_space', 'rcv_ssthresh',
           'delivery_rate', 'app_limited', 'snd_wnd', 'dsack_dups', 'reord_seen', 'skmem')


def dev_index(addr):
    m = re.search(r'192\.168\.(\d+)\.\d+\]?:', addr)
    return int(m.group(1)) - 100 if m else None


def parse_ss(lines):
    """ss -tinH: a socket line, then its indented info line."""
    socks = {}
    cur = None
    for ln in lines:
        if not ln.strip():
            continue
        if not ln[0].isspace() and not ln.startswith('---'):
            f = ln.split()
            cur = (f[2], f[3]) if len(f) >= 4 else None
            continue
        if cur is None:
            continue
        info = {}
        tok = ln.split()
        for j, t in enumerate(tok):
            k, sep, v = t.partition(':')
            if sep and k in SS_KEYS:
                info[k] = v
            elif t == 'delivery_rate' and j + 1 < len(tok):
                info[k] = tok[j + 1]
            elif t == 'app_limited':
                info[t] = 'yes'
        socks[cur] = info
        cur = None
    return socks


def samples(path):
    """The sampler's blocks: (uptime, cpu line, threads, peer ss, host ss)."""
    out = []
    block = None
    part = None
    for ln in open(path, errors='replace'):
        if ln.startswith('=== sample '):
            f = ln.split()
            block = {'t': float(f[2]), 'cpu': [int(x) for x in f[4:]], 'threads': {}, 'switches': {}, 'ctxt': None,
                     'peer': [], 'host': [], 'cpus': {}, 'on_cpu': {}}
            out.append(block)
            part = None
        elif block is None:
            continue
        elif ln.startswith('thread '):
            # utime stime, then (since session 21) the CPU the thread last ran on.
            m = (re.match(r'thread (\d+) (.*) (\d+) (\d+) (\d+)$', ln.rstrip('\n')) or
                 re.match(r'thread (\d+) (.*) (\d+) (\d+)()$', ln.rstrip('\n')))
            if m:
                key = (int(m.group(1)), m.group(2))
                block['threads'][key] = int(m.group(3)) + int(m.group(4))
                if m.group(5):
                    block['on_cpu'][key] = int(m.group(5))
        elif re.match(r'cpu\d+ ', ln):
            f = ln.split()
            block['cpus'][int(f[0][3:])] = [int(x) for x in f[1:]]
        elif ln.startswith('switches '):
            f = ln.split()
            if len(f) == 5:
                block['switches'][(int(f[1]), f[2])] = (int(f[3]), int(f[4]))
        elif ln.startswith('ctxt '):
            block['ctxt'] = int(ln.split()[1])
        elif ln.startswith('tcpmem '):
            block['tcpmem'] = ln.split('|')[0].split()[1:]
        elif ln.startswith('--- peer ss'):
            part = 'peer'
        elif ln.startswith('--- host ss'):
            part = 'host'
        elif part:
            block[part].append(ln.rstrip('\n'))
    return out


def last_with(blocks, part):
    """The last sample whose ss listed a data socket (the last ones come after the streams closed)."""
    for b in reversed(blocks):
        s = parse_ss(b[part])
        if any(int(i.get('bytes_acked', i.get('bytes_received', 0)) or 0) > 10**6 for i in s.values()):
            return s
    return {}


def cpu_split(c0, c1):
    names = ['user', 'nice', 'system', 'idle', 'iowait', 'irq', 'softirq', 'steal']
    d = [b - a for a, b in zip(c0, c1)]
    tot = sum(d[:8]) or 1
    return ', '.join(f'{n} {100 * v / tot:.0f}%' for n, v in zip(names, d[:8]) if v)


def ncm_deltas(run):
    """Per (pid, device) the first and last counters read; lwIP's likewise."""
    devs, lw = {}, {}
    for path in glob.glob(run + '.ncm.*'):
        pid = path.rsplit('.', 1)[1]
        for ln in open(path, errors='replace'):
            f = ln.split()
            if len(f) > 2 and f[1] == 'dev':
                vals = dict(zip(f[3::2], map(int, f[4::2])))
                d = devs.setdefault((pid, int(f[2])), [float(f[0]), vals, float(f[0]), vals])
                d[2], d[3] = float(f[0]), vals
            elif len(f) > 2 and f[1] == 'lwip':
                vals = dict(zip(f[2::2], map(int, f[3::2])))
                d = lw.setdefault(pid, [float(f[0]), vals, float(f[0]), vals])
                d[2], d[3] = float(f[0]), vals
    return devs, lw


def first_and_last(blocks, field):
    """Per key of each block's FIELD (threads come and go with the streams):
    [time, value] of its first sample, then of its last."""
    seen = {}
    for b in blocks:
        for key, v in b[field].items():
            first = seen.setdefault(key, [b['t'], v, b['t'], v])
            first[2], first[3] = b['t'], v
    return seen


def on_cpus(live, key):
    """Where a thread was at each sample (the CPU it last ran on)."""
    c = collections.Counter(b['on_cpu'][key] for b in live if key in b['on_cpu'])
    return ('; last ran on ' + ' '.join(f'cpu{k} {n}x' for k, n in sorted(c.items()))) if c else ''


def per_cpu(b0, b1):
    """Each CPU's busy share between two samples: which one the event thread, the peer's
    senders and the gadgets' timers crowd."""
    for cpu in sorted(b1['cpus']):
        if cpu in b0['cpus']:
            d = [y - x for x, y in zip(b0['cpus'][cpu], b1['cpus'][cpu])]
            tot = sum(d[:8]) or 1
            busy = tot - d[3] - d[4]
            print(f'    cpu {cpu}: busy {100 * busy / tot:.0f}% (user {100 * d[0] / tot:.0f}%, system'
                  f' {100 * d[2] / tot:.0f}%, softirq {100 * d[6] / tot:.0f}%)')


def switch_rates(live, res):
    """Context switches per second and per MB (the run's aggregate rate): the whole guest's, and
    per kind of thread (digits folded: the 8 TAP readers are one row), voluntary (slept) and not."""
    mbs = res[0]['mbit_s']['median'] / 8 if res else 0
    per = (lambda r: f'{r / mbs:.0f}/MB' if mbs else '-')
    c = [b for b in live if b['ctxt'] is not None]
    if len(c) >= 2 and c[-1]['t'] > c[0]['t']:
        r = (c[-1]['ctxt'] - c[0]['ctxt']) / (c[-1]['t'] - c[0]['t'])
        print(f'  context switches, whole guest: {r:.0f}/s, {per(r)}')
    seen = first_and_last(live, 'switches')
    kinds = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for (tid, comm), (t0, a, t1, b) in seen.items():
        if t1 - t0 >= 2:
            k = kinds[re.sub(r'\d+', 'N', comm)]
            k[0] += (b[0] - a[0]) / (t1 - t0)
            k[1] += (b[1] - a[1]) / (t1 - t0)
            k[2] += 1
    for comm, (v, n, cnt) in sorted(kinds.items(), key=lambda kv: -(kv[1][0] + kv[1][1])):
        if v + n >= 10:
            print(f'    switches {comm} (x{cnt}): voluntary {v:.0f}/s {per(v)}, involuntary {n:.0f}/s {per(n)}')


def softnet(path):
    """Per CPU over the 0.1 s samples: frames processed per second, drops and time squeezes
    (the softirq's budget ran out), and the input backlog's length: mean and max."""
    snaps = []
    for ln in open(path, errors='replace'):
        if ln.startswith('= '):
            snaps.append((float(ln.split()[1]), {}))
        elif snaps:
            f = ln.split()
            if len(f) >= 13:
                snaps[-1][1][int(f[12], 16)] = [int(x, 16) for x in f]
    snaps = [s for s in snaps if s[1]]
    if len(snaps) < 2:
        return
    (t0, a), (t1, b) = snaps[0], snaps[-1]
    for cpu in sorted(b):
        if cpu not in a:
            continue
        qlen = [s[1][cpu][11] for s in snaps if cpu in s[1]]
        busy = [q for q in qlen if q]
        print(f'  cpu {cpu} softnet over {t1 - t0:.1f} s: processed {(b[cpu][0] - a[cpu][0]) / (t1 - t0):.0f}/s,'
              f' dropped {b[cpu][1] - a[cpu][1]}, time_squeeze {b[cpu][2] - a[cpu][2]}, backlog length mean'
              f' {sum(qlen) / len(qlen):.0f} max {max(qlen)} (non-empty in {len(busy)} of {len(qlen)} samples)')


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))]


def rx_trace(path):
    """Per gadget netdev from the 0.4 s trace: on which CPU its frames joined a backlog
    (netif_rx, so its dummy_hcd timer's CPU) and how long each waited there (until
    netif_receive_skb, the peer's TCP); on which CPU a download's data was handed to
    f_ncm (net_dev_xmit). Returns each gadget's timer CPU (the most of its netif_rx)."""
    pend = {}
    devs = collections.defaultdict(lambda: {'rx_cpu': collections.Counter(), 'in_cpu': collections.Counter(),
                                            'tx_cpu': collections.Counter(), 'wait': []})
    ev = re.compile(r'\[(\d+)\].*?\s(\d+\.\d+): (netif_rx|netif_receive_skb|net_dev_xmit): dev=(\S+)'
                    r' skbaddr=(\S+)')
    for ln in open(path, errors='replace'):
        m = ev.search(ln)
        if not m:
            continue
        cpu, t, e, dev, skb = int(m.group(1)), float(m.group(2)), m.group(3), m.group(4), m.group(5)
        if e == 'net_dev_xmit':
            devs[dev]['tx_cpu'][cpu] += 1
        elif e == 'netif_rx':
            pend[skb] = (t, dev)
            devs[dev]['rx_cpu'][cpu] += 1
        else:
            devs[dev]['in_cpu'][cpu] += 1
            t0, d0 = pend.pop(skb, (None, None))
            if d0 == dev:
                devs[dev]['wait'].append(1000 * (t - t0))
    for dev in sorted(devs, key=lambda d: int(re.sub(r'\D', '', d) or 0)):
        d = devs[dev]
        w = sorted(d['wait'])
        rx = ' '.join(f'cpu{c} {n}' for c, n in sorted(d['rx_cpu'].items()))
        into = ' '.join(f'cpu{c} {n}' for c, n in sorted(d['in_cpu'].items()))
        tx = ' '.join(f'cpu{c} {n}' for c, n in sorted(d['tx_cpu'].items()))
        waits = (f'; {len(w)} paired waited ms mean {sum(w) / len(w):.1f} median {pct(w, 0.5):.1f}'
                 f' p90 {pct(w, 0.9):.1f} max {w[-1]:.1f}' if w else '')
        print(f'  trace {dev}: netif_rx on {rx}, processed on {into}{waits}' + (f'; xmit on {tx}' if tx else ''))
    return {int(re.sub(r'\D', '', dev) or 0): d['rx_cpu'].most_common(1)[0][0]
            for dev, d in devs.items() if d['rx_cpu']}


def by_timer_cpu(timer, rate):
    """The gadgets' rates grouped by their timer's CPU: whether where dummy_hcd runs a gadget
    decides its share (session 19 found it does for uploads, through the peer's backlogs)."""
    groups = collections.defaultdict(list)
    for i, cpu in timer.items():
        if i in rate:
            groups[cpu].append((i, rate[i]))
    if groups:
        print('  by timer CPU: ' + '; '.join(
            f'cpu{c}: gadgets {" ".join(str(i) for i, _ in sorted(g))} mean {sum(r for _, r in g) / len(g):.1f} Mbit/s'
            for c, g in sorted(groups.items())))


# guest-multi-scale.sh's VM_SCALE_SECS as multi-ab.sh passes it by default.
SECS = float(os.environ.get('VM_SCALE_SECS', '5'))

RUN_ENDS = ('end_full', 'end_short', 'end_gap', 'end_header', 'end_frame', 'end_flush')


def tun_exit_stats(path):
    """ncm-tun's statistics at exit (ncm-bench echoes them into the run's log), summed over its
    interfaces: {counter: value}, the whole run's, setup included."""
    tot = collections.Counter()
    pats = [(re.compile(r'usb rx: (\d+) NTBs, (\d+) datagrams, (\d+) bytes.* (\d+) bursts'),
             ('rx_ntbs', 'rx_datagrams', 'rx_bytes', 'rx_batches')),
            (re.compile(r'usb tx: (\d+) NTBs, (\d+) datagrams'), ('tx_ntbs', 'tx_datagrams')),
            (re.compile(r'tap offload: rx (\d+) coalesced packets \((\d+) frames merged'), ('tap_super', 'tap_merged')),
            (re.compile(r'tap rx: (\d+) frames, \d+ rx-drops \(interface'), ('tap_rx_frames',)),
            (re.compile(r'tap tx: (\d+) frames in (\d+) bursts'), ('tap_tx_frames', 'tap_tx_bursts')),
            (re.compile(r'tap runs ended: (\d+) full, (\d+) by a short segment, (\d+) by a gap, (\d+) by a header, '
                        r'(\d+) by another frame, (\d+) flushed'), RUN_ENDS)]
    per_if = False
    for ln in open(path, errors='replace'):
        if 'ncm-tun: total over' in ln:
            break  # the total repeats the interfaces' sums (without the TAP's details)
        if re.search(r'ncm-tun: \S+, \d+ device session', ln):
            per_if = True
        if not per_if:
            continue
        for rx, keys in pats:
            m = rx.search(ln)
            if m:
                for k, v in zip(keys, m.groups()):
                    tot[k] += int(v or 0)
    return tot


def tun_per_mb(path):
    """The data path's work units per MB the devices delivered: where 8 devices cost more than 1."""
    t = tun_exit_stats(path)
    mb = t['rx_bytes'] / 1e6
    if not mb:
        return
    writes = t['tap_rx_frames'] - t['tap_merged']
    print(f'  ncm-tun at exit, per MB of {mb:.0f}: IN NTBs {t["rx_ntbs"] / mb:.1f} ({t["rx_bytes"] / max(1, t["rx_ntbs"]) / 1e3:.1f} kB,'
          f' {t["rx_datagrams"] / max(1, t["rx_ntbs"]):.1f} frames each), receive batches {t["rx_batches"] / mb:.1f}'
          f' ({t["rx_ntbs"] / max(1, t["rx_batches"]):.1f} NTBs each), TAP writes {writes / mb:.1f}'
          f' ({t["tap_rx_frames"] / max(1, writes):.1f} frames each), host frames read {t["tap_tx_frames"] / mb:.1f} in {t["tap_tx_bursts"] / mb:.1f}'
          f' reader bursts, OUT NTBs {t["tx_ntbs"] / mb:.1f} ({t["tx_datagrams"] / max(1, t["tx_ntbs"]):.2f} frames each)')
    if any(t[k] for k in RUN_ENDS):
        print('    coalesced runs ended per MB: ' + ', '.join(f'{k[4:]} {t[k] / mb:.1f}' for k in RUN_ENDS))
    return mb


# Threads of the harness and of setup (digits folded): not the data path.
NOT_DATA = ('sh', 'modprobe', 'cat', 'sleep', 'ip', 'ss', 'awk', 'grep', 'sed', 'ncm-bench', 'ncm-tun', 'exe',
            'gmain', 'gdbus', 'pool-spawner', 'bench-watchdog', 'kworker/N:N', 'systemd-udevd', 'udevadm')


def syscalls_per_mb(path, mb):
    """VM_SCALE_SYSCALLS's counts (a hist of raw_syscalls:sys_enter by thread and syscall) of the data
    path's threads, per MB; the peer server's threads (its pool) marked."""
    peer = set()
    rows = collections.Counter()
    for ln in open(path, errors='replace'):
        if ln.startswith('peer-server-tids'):
            peer = {int(x) for x in ln.split()[1:]}
        m = re.match(r'\{ common_pid: (.*?)\s*\[\s*(\d+)\], id: (\S+)\s*\[\s*\d+\] \} hitcount:\s*(\d+)', ln)
        if m:
            comm = re.sub(r'\d+', 'N', m.group(1))
            if comm not in NOT_DATA:
                rows[(comm + (' (peer)' if int(m.group(2)) in peer else ''), m.group(3))] += int(m.group(4))
    if rows and mb:
        print('  syscalls per MB: ' + ', '.join(f'{c} {s.replace("sys_", "")} {n / mb:.1f}'
                                               for (c, s), n in sorted(rows.items(), key=lambda kv: -kv[1]) if n / mb >= 0.5))


def report(run):
    name = os.path.basename(run)
    print(f'== {name}')
    res = []
    try:
        res = [r for r in json.load(open(run + '.json'))['results'] if 'device_mbit_s' in r]
        for r in res:
            print(f"  {r['test']}: {r['mbit_s']['median']:.1f} Mbit/s, fairness {r['fairness']:.2f},"
                  f" per device {' '.join(f'{v:.1f}' for v in r['device_mbit_s'])}")
    except (OSError, ValueError, KeyError) as e:
        print(f'  no result: {e}')
    mb = tun_per_mb(run + '.log') if os.path.exists(run + '.log') else None
    if os.path.exists(run + '.syscalls'):
        if not mb and res:
            # No ncm-tun counters (the lwip path): the measured interval's MB, while the
            # counts span the whole run, ramp included: compare runs, not absolute values.
            mb = sum(r['mbit_s']['median'] for r in res) * SECS / 8
            print(f'  (per MB below: of the {SECS} s measured, {mb:.0f} MB; the counts include the ramp)')
        syscalls_per_mb(run + '.syscalls', mb)
    devs, lw = ncm_deltas(run)
    interesting = ('rx_ntbs', 'rx_datagrams', 'rx_bad_ntbs', 'rx_rejects', 'rx_overflows', 'rx_stalls', 'rx_errors',
                   'rx_sink_drops', 'rx_batches', 'rx_nudges', 'rx_nudge_freed', 'rx_acks_thinned', 'tx_ntbs',
                   'tx_would_block', 'tx_errors', 'tx_acks_merged', 'tx_flush_timer')
    for (pid, i), (t0, a, t1, b) in sorted(devs.items()):
        dt = t1 - t0
        print(f'  libncm pid {pid} dev {i} over {dt:.2f} s: ' +
              ' '.join(f'{k} {b.get(k, 0) - a.get(k, 0)}' for k in interesting) +
              (f' | datagrams/NTB {(b["rx_datagrams"] - a["rx_datagrams"]) / max(1, b["rx_ntbs"] - a["rx_ntbs"]):.1f}'
               if 'rx_ntbs' in a else ''))
    for pid, (t0, a, t1, b) in lw.items():
        print(f'  lwIP pid {pid} over {t1 - t0:.2f} s: ' + ' '.join(f'{k} {b[k] - a.get(k, 0)}' for k in b))
    rate = {}  # per gadget, its sender's Mbit/s from the first sample to the last
    if os.path.exists(run + '.samples'):
        blocks = samples(run + '.samples')
        mem = [b['tcpmem'] for b in blocks if b.get('tcpmem')]
        if mem:
            # One count for both namespaces, against tcp_mem's soft limit (tcp_should_expand_sndbuf).
            print(f'  TCP memory per sample, pages: {" ".join(m[0] for m in mem)} (soft limit {mem[-1][1]})')
        live = [b for b in blocks if b['threads']]
        if len(live) >= 2:
            b0, b1 = live[0], live[-1]
            print(f'  CPU over {b1["t"] - b0["t"]:.1f} s of samples: {cpu_split(b0["cpu"], b1["cpu"])}')
            # Each thread from its first sample to its last (threads come and go with the streams).
            seen = first_and_last(live, 'threads')
            for key, (t0, v0, t1, v1) in sorted(seen.items()):
                if t1 - t0 >= 2:
                    pct = (v1 - v0) / (t1 - t0)  # USER_HZ 100: ticks per second = % of a CPU
                    if pct >= 2:
                        print(f'    thread {key[0]} {key[1]}: {pct:.0f} % of a CPU over {t1 - t0:.0f} s'
                              + on_cpus(live, key))
            per_cpu(b0, b1)
            switch_rates(live, res)
        for part in ('peer', 'host'):
            socks = last_with(blocks, part)
            for (loc, rem), info in sorted(socks.items(), key=lambda kv: (dev_index(kv[0][0]) or 0)):
                if int(info.get('bytes_acked', info.get('bytes_received', 0)) or 0) <= 10**6:
                    continue
                print(f'  {part} tcp dev {dev_index(loc)} {loc}->{rem}: ' +
                      ' '.join(f'{k} {info[k]}' for k in SS_KEYS if k in info))
        # When did each sender's bytes move: bytes_acked per device per sample (the peer's on
        # downloads, the host's on uploads), with its cwnd, RTT and retransmits at each sample.
        for part in ('peer', 'host'):
            series = {}
            for b in blocks:
                for (loc, rem), info in parse_ss(b[part]).items():
                    if 'bytes_acked' in info and int(info['bytes_acked']) > 10**6:
                        series.setdefault(dev_index(loc) if part == 'peer' else dev_index(rem), []).append(
                            (b['t'], int(info['bytes_acked']), info))
            for i, pts in sorted(series.items(), key=lambda kv: kv[0] or 0):
                steps = [f'{8 * (y1 - y0) / (t1 - t0) / 1e6:.0f}' for (t0, y0, _), (t1, y1, _) in zip(pts, pts[1:])
                         if t1 > t0]
                if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
                    rate[i] = 8 * (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]) / 1e6
                print(f'  {part} sender dev {i} Mbit/s per sample: {" ".join(steps)}')
                if part == 'host':
                    print(f'    cwnd {" ".join(p[2].get("cwnd", "-") for p in pts)}'
                          f' | rtt {" ".join(p[2].get("rtt", "-").split("/")[0] for p in pts)}'
                          f' | retrans {" ".join(p[2].get("retrans", "-").split("/")[-1] for p in pts)}')
    if os.path.exists(run + '.softnet'):
        softnet(run + '.softnet')
    if os.path.exists(run + '.trace'):
        by_timer_cpu(rx_trace(run + '.trace'), rate)
    if os.path.exists(run + '.diag'):
        for ln in open(run + '.diag'):
            f = ln.split()
            if len(f) == 3 and f[0] in ('host-net', 'peer-net') and NET_KEYS.match(f[1]):
                print(f'  {f[0]} {f[1]} {f[2]}')
        txt = open(run + '.diag').read()
        m0 = re.search(r'peer-dev before\n(.*?)peer-dev after\n(.*?)(?:qdisc|stat) before', txt, re.S)
        mq = re.search(r'qdisc before\n(.*?)qdisc after\n(.*?)stat before', txt, re.S)
        if mq:
            def qd(block):
                r = {}
                for m in re.finditer(r'qdisc (\S+) \S+ dev (\S+).*?\n\s*Sent (\d+) bytes (\d+) pkt \(dropped (\d+), '
                                     r'overlimits (\d+) requeues (\d+)\)', block):
                    r[(m.group(2), m.group(1))] = [int(m.group(k)) for k in (4, 5, 7)]
                return r
            a, b = qd(mq.group(1)), qd(mq.group(2))
            for k in sorted(b):
                if k in a and k[0].startswith('gadget'):
                    d = [y - x for x, y in zip(a[k], b[k])]
                    print(f'  peer qdisc {k[1]} on {k[0]}: pkts {d[0]} dropped {d[1]} requeues {d[2]}')
        if m0:
            def dev(block):
                r = {}
                for ln in block.splitlines():
                    if ':' in ln and 'gadget' in ln:
                        n, v = ln.split(':', 1)
                        r[n.strip()] = list(map(int, v.split()))
                return r
            a, b = dev(m0.group(1)), dev(m0.group(2))
            for n in sorted(b):
                if n in a:
                    d = [y - x for x, y in zip(a[n], b[n])]
                    # /proc/net/dev: rx bytes packets errs drop fifo frame compressed multicast, tx bytes packets errs drop ...
                    print(f'  peer {n}: rx pkts {d[1]} errs {d[2]} drop {d[3]}, tx pkts {d[9]} errs {d[10]}'
                          f' drop {d[11]} fifo {d[12]}')


def main():
    out = sys.argv[1]
    runs = sorted({re.sub(r'\.(json|txt|log|samples|diag|softnet|trace|ncm\.\d+)$', '', p)
                   for p in glob.glob(os.path.join(out, 'scale-*'))
                   if re.search(r'\.(json|samples)$', p)})
    for run in runs:
        report(run)


if __name__ == '__main__':
    main()
