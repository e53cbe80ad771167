#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Groups the guest's perf samples by stage: tests/bench/perf-stages.py DIR > PERF.md.

DIR holds what tests/bench/guest-perf.sh wrote: perf-PATH-TEST.folded (root-first
stacks with counts, only samples inside ncm-bench's measured intervals),
perf-PATH-TEST.spans (the intervals and the bytes the receiver confirmed),
perf-hz and perf-peer.pid.

A sample belongs to the innermost frame (leaf first) that names a stage: a copy
inside tun_get_user is TAP work, a TCP receive that tun_get_user called is TCP
work. Kernel TCP/IP is split by whose it is, where the stack tells: the host's
(under a TAP write or usbnet), the peer's (under the gadget's driver, or in the
peer's server). Otherwise by where it ran: in the host's threads (dummy_hcd
completes transfers, and runs the gadget's side, in the submitter's syscall: on
the lwip path this is the peer's TCP), or in softirq elsewhere; one kernel runs
both ends, so those two cannot be told apart.
"""
import collections
import glob
import os
import re
import sys

PATHS = ["cdc_ncm", "ncm-tun-allacks", "ncm-tun", "lwip-allacks", "lwip", "ncm-proxy"]
TESTS = ["tcp_down", "tcp_up", "tcp_bidir"]

IDLE = re.compile(r"^(default_idle|native_safe_halt|pv_native_safe_halt|arch_cpu_idle|"
                  r"cpu_idle_poll|acpi_idle_do_entry|mwait_idle.*|intel_idle.*|"
                  r"default_idle_call|do_idle|cpuidle_enter_state)$")

# (stage, dso regex or None, symbol regex, kernel-only?)
RULES = [
    ("NTB parse and pack", None,
     r"^(ncm_ntb_|cdc_ncm_rx_fixup|cdc_ncm_fill_tx_frame|cdc_ncm_tx_fixup|cdc_ncm_rx_verify|cdc_ncm_ndp)", None),
    ("lwIP", None,
     r"^(tcp_|tcpip_|ip4_|ip6_|ip_|pbuf_|nlw_|ncm_lwip_|lwip_|inet_c|etharp_|ethernet_|netif_|memp_|mem_|"
     r"nd6_|icmp|udp_|raw_|sys_|mld6_|igmp_|dhcp|autoip|sys_timeout|tcp$)", False),
    ("libncm driver (usb/, cdc/)", None, r"^(ncm_usb_|ncm_device_|ncm_cdc_|ncm_nudge_|ncm_eth_|ncm_context_)", False),
    ("TAP syscalls", r"^\[tun\]$", r"^(tun_|tap_|__tun_)", True),
    ("usbfs submit and reap", r"^\[usbcore\]$",
     r"^(usbdev_|proc_do_submiturb|proc_submiturb|proc_reapurb|proc_.*urb|async_completed|usbfs_|"
     r"processcompl|copy_urb_data|snoop_urb|dec_usb_memory|free_async|async_getcompleted|reap_as)", True),
    ("USB bus emulation (dummy_hcd)", r"^\[dummy_hcd\]$", r"^(dummy_|transfer$|find_endpoint|handle_control_request)", True),
    ("gadget driver (f_ncm, u_ether)", r"^\[(usb_f_ncm|u_ether|libcomposite|usb_f_fs)\]$",
     r"^(ncm_|eth_start_xmit|gether_|rx_complete|tx_complete|rx_submit|rx_fill|process_rx_w|"
     r"usb_ep_|composite_|usb_gadget_)", True),
    ("usbnet + cdc_ncm (kernel host driver)", r"^\[(usbnet|cdc_ncm)\]$", r"^(usbnet_|cdc_ncm_|rx_submit)", True),
    ("USB core", None, r"^(usb_submit_urb|usb_hcd_|__usb_hcd_giveback_urb|usb_giveback|usb_alloc_urb|"
     r"usb_free_urb|usb_anchor|usb_unanchor|usb_hcd_map|usb_hcd_unmap)", True),
    ("TCP/IP", None,
     r"^(tcp_|__tcp_|ip_|__ip_|ipv6_|ip6_|__netif_receive_skb|netif_receive|netif_rx|__netif_rx|net_rx_action|"
     r"process_backlog|__dev_queue_xmit|dev_queue_xmit|dev_hard_start_xmit|skb_|__skb|kfree_skb|consume_skb|"
     r"__kfree_skb|inet_|inet6_|sock_|sk_|__sk_|__sys_sendto|__sys_recvfrom|udp_|udpv6_|csum_|napi_|gro_|"
     r"dev_gro|eth_type_trans|neigh_|nf_|validate_xmit|sch_direct_xmit|__qdisc_run|pfifo_fast|"
     r"__copy_skb|copy_page_to_iter|simple_copy_to_iter|release_sock|lock_sock|bpf_|raw_v|packet_|"
     r"__napi|netdev_|dst_|rt_|fib_|ipt_|nf_hook)", True),
    ("event loops (poll, timerfd, eventfd)", r"^libusb-1\.0\.so",
     r"^(do_sys_poll|do_poll|__x64_sys_poll|__x64_sys_ppoll|__do_sys_ppoll|ep_poll|do_epoll_wait|"
     r"timerfd_|eventfd_|ep_item_poll|__pollwait|poll_freewait|poll_select|do_select|core_sys_select|"
     r"libusb_|usbi_|handle_events|g_main_context_|g_poll|poll$|ppoll$)", None),
    ("thread hand-offs (futex, scheduler)", None,
     r"^(futex_|__futex|do_futex|__schedule|schedule$|schedule_|try_to_wake_up|finish_task_switch|"
     r"pick_next|enqueue_task|dequeue_task|ttwu_|select_task_rq|wake_up_q|__wake_up|update_curr|"
     r"psi_|pthread_cond|pthread_mutex|g_mutex_|g_cond_|g_async_queue|__lll_lock|__lll_unlock|"
     r"native_queued_spin_lock|queued_spin_lock)", None),
]
RULES = [(name, re.compile(d) if d else None, re.compile(s), k) for name, d, s, k in RULES]

STAGES = ["usbfs submit and reap", "event loops (poll, timerfd, eventfd)", "NTB parse and pack",
          "libncm driver (usb/, cdc/)", "lwIP", "TAP syscalls", "TCP/IP: host stack", "TCP/IP: peer stack",
          "TCP/IP: in host threads (either)", "TCP/IP: softirq elsewhere (either)", "usbnet + cdc_ncm (kernel host driver)",
          "gadget driver (f_ncm, u_ether)", "USB bus emulation (dummy_hcd)", "USB core",
          "thread hand-offs (futex, scheduler)", "other kernel", "other userspace (app, GLib, libc)"]

HOST_HINT = re.compile(r"^(tun_|usbnet_|cdc_ncm_|__tun_)")
PEER_HINT = re.compile(r"^(eth_start_xmit|rx_complete|gether_|ncm_unwrap_ntb|ncm_wrap_ntb|process_rx_w)$")


def parse_frame(f):
    m = re.match(r"^(.*) \[(.*)\]$", f)
    if not m:
        return f, "?"
    return m.group(1), m.group(2)


def read_folded(path):
    """A folded profile (pid;comm;frame;... count per line) as (pid, comm, frames, count),
    frames root first as (sym, dso)."""
    stacks = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            stack, count = line.rsplit(" ", 1)
            parts = stack.split(";")
            stacks.append((int(parts[0]), parts[1], [parse_frame(x) for x in parts[2:]], int(count)))
    return stacks


def is_kernel(dso):
    return dso.startswith("[")


def classify(pid, comm, frames, peer_pid, host_pids):
    """frames: root first, as (sym, dso)."""
    if not frames:
        return "other kernel"
    leaf_sym, _ = frames[-1]
    if IDLE.match(leaf_sym):
        return "idle"
    for sym, dso in reversed(frames):
        for name, dre, sre, kernel_only in RULES:
            if kernel_only is True and not is_kernel(dso):
                continue
            if kernel_only is False and is_kernel(dso):
                continue
            if (dre and dre.match(dso)) or sre.match(sym):
                if name != "TCP/IP":
                    return name
                syms = [s for s, d in frames if is_kernel(d)]
                if any(HOST_HINT.match(s) for s in syms):
                    return "TCP/IP: host stack"
                if any(PEER_HINT.match(s) for s in syms) or pid == peer_pid:
                    return "TCP/IP: peer stack"
                if pid in host_pids:
                    return "TCP/IP: in host threads (either)"
                return "TCP/IP: softirq elsewhere (either)"
    leaf_dso = frames[-1][1]
    return "other kernel" if is_kernel(leaf_dso) else "other userspace (app, GLib, libc)"


def load(d, path, test, peer_pid):
    base = os.path.join(d, "perf-%s-%s" % (path, test))
    if not os.path.exists(base + ".folded"):
        return None
    mb = 0.0
    secs = 0.0
    with open(base + ".spans") as f:
        for line in f:
            p = line.split()
            secs += (int(p[3]) - int(p[2])) / 1e6
            mb += int(p[4]) / 1e6
    stacks = read_folded(base + ".folded")
    pids_by_comm = collections.defaultdict(set)
    for pid, comm, _, _ in stacks:
        pids_by_comm[comm].add(pid)
    # The host's processes: ncm-bench's client (any of its threads), ncm-tun and ncm-proxy.
    host_pids = set()
    for comm, pids in pids_by_comm.items():
        if comm.startswith(("ncm-tun", "ncm-bench", "ncm-proxy")) or comm in ("libusb", "lwip", "gmain"):
            host_pids |= pids
    host_pids.discard(peer_pid)
    by_stage = collections.Counter()
    by_sym = collections.Counter()
    sym_stage = {}
    for pid, comm, frames, count in stacks:
        st = classify(pid, comm, frames, peer_pid, host_pids)
        by_stage[st] += count
        if st != "idle" and frames:
            key = "%s [%s]" % frames[-1]
            by_sym[key] += count
            sym_stage[key] = st
    return {"mb": mb, "secs": secs, "stage": by_stage, "sym": by_sym, "sym_stage": sym_stage}


def noperf_mbit(d, path, test):
    try:
        with open(os.path.join(d, "perf-%s-%s-noperf.spans" % (path, test))) as f:
            p = f.read().split()
        return "%.0f" % (int(p[4]) * 8 / (int(p[3]) - int(p[2])))
    except (OSError, IndexError, ValueError, ZeroDivisionError):
        return "-"


def main():
    d = sys.argv[1]
    hz = int(open(os.path.join(d, "perf-hz")).read().strip())
    peer_pid = int(open(os.path.join(d, "perf-peer.pid")).read().strip())
    tests = [t for t in TESTS if glob.glob(os.path.join(d, "perf-*-%s.folded" % t))]
    out = []
    out.append("# Where the CPU goes, by stage\n")
    out.append("Made by `tests/bench/perf-stages.sh` (guest `perf record -a -g -k mono -e cpu-clock -F %d`, "
               "release build with frame pointers; only samples inside ncm-bench's measured intervals). "
               "Figures are busy CPU milliseconds per MB the receiver confirmed, all CPUs of the guest "
               "(both ends of the link share them). A sample goes to the innermost frame that names a "
               "stage; see the docstring of `tests/bench/perf-stages.py` for the rules.\n" % hz)
    for test in tests:
        data = {p: load(d, p, test, peer_pid) for p in PATHS}
        paths = [p for p in PATHS if data[p]]
        out.append("\n## %s\n" % test)
        out.append("| stage | " + " | ".join(paths) + " |")
        out.append("|---|" + "---:|" * len(paths))
        for st in STAGES + ["busy (all stages)", "idle share"]:
            cells = []
            for p in paths:
                r = data[p]
                busy = sum(c for s, c in r["stage"].items() if s != "idle")
                total = busy + r["stage"]["idle"]
                if st == "idle share":
                    cells.append("%.0f%%" % (100.0 * r["stage"]["idle"] / total) if total else "-")
                    continue
                n = busy if st == "busy (all stages)" else r["stage"][st]
                cells.append("%.1f" % (1000.0 * n / hz / r["mb"]) if r["mb"] > 0 else "-")
            if st not in ("busy (all stages)", "idle share") and all(c in ("0.0", "-") for c in cells):
                continue
            name = "**%s**" % st if st == "busy (all stages)" else st
            out.append("| %s | %s |" % (name, " | ".join(cells)))
        out.append("| MB measured | " + " | ".join("%.1f" % data[p]["mb"] for p in paths) + " |")
        out.append("| Mbit/s | " + " | ".join(
            "%.0f" % (data[p]["mb"] * 8 / data[p]["secs"]) if data[p]["secs"] else "-" for p in paths) + " |")
        out.append("| Mbit/s, same run without perf | " + " | ".join(
            noperf_mbit(d, p, test) for p in paths) + " |")
        for p in paths:
            r = data[p]
            busy = sum(c for s, c in r["stage"].items() if s != "idle")
            out.append("\n%s %s, top symbols (self time, share of busy samples):\n" % (p, test))
            out.append("| symbol | stage | share |")
            out.append("|---|---|---:|")
            for sym, c in r["sym"].most_common(15):
                out.append("| `%s` | %s | %.1f%% |" % (sym, r["sym_stage"][sym], 100.0 * c / busy))
    print("\n".join(out))


if __name__ == "__main__":
    main()
