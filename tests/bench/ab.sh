#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/ab.sh BASE_BUILD [NAME=BUILD...]: builds of libncm side by side in one VM boot.
# BASE_BUILD's ncm-bench runs every variant; NAME=BUILD swaps in that build's
# libncm and libncm-lwip (LD_LIBRARY_PATH) and, on the ncm-tun and proxy paths,
# its ncm-tun or ncm-proxy (exec=), so a variant is a build with other
# compile-time settings (lwipopts.h) or other library, TAP or relay code behind
# the same ABI.
# AB_REPS, AB_SECS, AB_TESTS, AB_PATH (lwip, ncm-tun or proxy) pass through to
# tests/bench/guest-ab.sh; prints per-variant medians and ratios to base and to
# cdc_ncm (tests/bench/ab-report.py). Take the VM lock around it.
# AB_COUNT=1 (and COUNT_SYSCALLS=1) also counts, with the guest's perf, the
# syscalls, context switches and wake-ups of each run and reports them per MB
# (tests/bench/count-report.py): work units that the host's load does not move.
# AB_SCHED=1 records the guest scheduler's switches, wake-ups and migrations
# per run (tests/bench/sched-report.py): per thread, CPU time on each CPU and
# who woke it from where.
# AB_HOPS=1 (with AB_TESTS=udp_rtt_...) traces every run's round trips hop by
# hop (guest-ab.sh says what) and prints each hop's median per variant
# (tests/bench/rtt-hops.py); base's ncm-bench must write NCM_BENCH_ECHOES
# (since session 20). AB_REF=lwip runs base's lwip path too.
# AB_HOPS_EXTRA=EVENT,... records more events beside the hops' (interrupts,
# timers), for reading a record with perf script; rtt-hops.py passes over them.
# Give base's own build as a variant too (same=BASE_BUILD): it shows what identical
# code does to the ratios in that boot. In session 18 (tests/bench/RESULTS.md) it ran
# 10-20 % below base on ncm-tun's tcp_down and tcp_bidir in three boots of three, when
# every round kept one order (base right after cdc_ncm, the first variant right after
# base); guest-ab.sh now runs each odd round's order backwards in the round after
# it, so use an even AB_REPS.
# AB_TESTS is comma-separated. VM_GADGET_MAX_SPEED=full-speed runs the gadget at
# full speed (tests/vm/guest-lib.sh, gadget_setup).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/ab-libs.sh
base=$(realpath "$1")
shift
out=${AB_OUT:-$base/ab}
files=() names=()
for v in "$@"; do
	n=${v%%=*} b=$(realpath "${v#*=}")
	ab_lib_files "$base" "$b" "/opt/ab/$n"
	files+=(--file "$b/examples/ncm-tun/ncm-tun:/opt/ab/$n/ncm-tun"
		--file "$b/examples/ncm-proxy/ncm-proxy:/opt/ab/$n/ncm-proxy")
	names+=("$n")
done
envs=(--env "AB_VARIANTS=$(IFS=,; echo "${names[*]-}")")
for v in AB_REPS AB_SECS AB_TESTS AB_PATH AB_COUNT COUNT_SYSCALLS AB_SCHED AB_SCHED_SYSCALLS AB_HOPS AB_HOPS_EXTRA AB_REF \
	VM_GADGET_MAX_SPEED; do
	[ -z "${!v:-}" ] || envs+=(--env "$v=${!v}")
done
if [ -n "${AB_COUNT:-}${AB_SCHED:-}${AB_HOPS:-}" ]; then
	command -v perf >/dev/null || { echo "ab: AB_COUNT needs perf (apt-get install linux-perf)" >&2; exit 1; }
	files+=(--bin "$(command -v perf)")
fi
rm -rf "$out"
tests/vm/run-vm.sh --script tests/bench/guest-ab.sh --out "$out" --timeout 1500 "${envs[@]}" \
	"${files[@]}" --bin "$base/examples/ncm-bench/ncm-bench" \
	--bin "$base/examples/ncm-tun/ncm-tun" --bin "$base/examples/ncm-proxy/ncm-proxy" >"$out.log" 2>&1 || {
	tail -30 "$out.log"
	echo "ab: the VM run failed; log: $out.log" >&2
	exit 1
}
python3 tests/bench/ab-report.py "$out"
[ -z "${AB_COUNT:-}" ] || python3 tests/bench/count-report.py "$out" "${AB_SECS:-5}"
[ -z "${AB_HOPS:-}" ] || python3 tests/bench/rtt-hops.py "$out"
