#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/link-bound.sh BUILD: the lwip and ncm-proxy paths side by side where the link, not the VM's CPU, sets the rate.
# One VM boot (tests/bench/guest-link-bound.sh): for each of LINK_RATES
# (Mbit/s, space- or comma-separated; 0 = unshaped; default "0 100 200 300")
# host->device is paced by libncm (ncm-bench --pace) and device->host shaped
# by tc tbf on the gadget's netdev, LINK_ROUNDS rounds (default 4) of
# LINK_TESTS (default tcp_down,tcp_up,tcp_bidir), LINK_SECS each (default 5);
# then the loopback hop alone at the same rate. Prints, per rate and test,
# each path's Mbit/s, whole-system CPU ms per MB and busy %, the proxy/lwip
# ratios (medians of same-round ratios) and the hop's CPU per MB
# (tests/bench/link-report.py). LINK_VARIANTS="NAME=BUILD ..." adds, per
# variant, a path ncm-proxy-NAME: that build's ncm-proxy with its libncm and
# libncm-lwip, side by side with BUILD's (the proxy's A/B at a link's rate;
# the lwip path, the reference, stays BUILD's). LINK_TUN=1 runs ncm-tun paths
# instead: BUILD's and, per variant, that build's ncm-tun with its libraries
# (ncm-tun-NAME). Needs tc (iproute2) on the host.
# Take the VM lock around it. Results in LINK_OUT (default BUILD/link-bound).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/ab-libs.sh
b=$(realpath "$1")
out=${LINK_OUT:-$b/link-bound}
cache=${VM_CACHE_DIR:-.cache/vm}
tbf=$(echo "$cache"/kernel-*/lib/modules/*/kernel/net/sched/sch_tbf.ko)
[ -f "$tbf" ] || { echo "link-bound: no sch_tbf.ko under $cache (run a VM test first)" >&2; exit 1; }
tc=$(command -v tc) || { echo "link-bound: needs tc (apt-get install iproute2)" >&2; exit 1; }
files=() names=()
for v in ${LINK_VARIANTS//,/ }; do
	n=${v%%=*} vb=$(realpath "${v#*=}")
	ab_lib_files "$b" "$vb" "/opt/link/$n"
	files+=(--file "$vb/examples/ncm-proxy/ncm-proxy:/opt/link/$n/ncm-proxy")
	files+=(--file "$vb/examples/ncm-tun/ncm-tun:/opt/link/$n/ncm-tun")
	names+=("$n")
done
envs=(--env "LINK_VARIANTS=$(IFS=,; echo "${names[*]-}")")
for v in LINK_RATES LINK_ROUNDS LINK_SECS LINK_TESTS LINK_TUN; do
	[ -z "${!v:-}" ] || envs+=(--env "$v=${!v}")
done
rm -rf "$out"
tests/vm/run-vm.sh --script tests/bench/guest-link-bound.sh --out "$out" --timeout 2400 "${envs[@]}" \
	--bin "$tc" --file "$tbf:/tmp/sch_tbf.ko" "${files[@]+"${files[@]}"}" \
	--bin "$b/examples/ncm-bench/ncm-bench" --bin "$b/examples/ncm-proxy/ncm-proxy" \
	--bin "$b/examples/ncm-tun/ncm-tun" >"$out.log" 2>&1 || {
	tail -30 "$out.log"
	echo "link-bound: the VM run failed; log: $out.log" >&2
	exit 1
}
python3 tests/bench/link-report.py "$out"
