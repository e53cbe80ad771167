#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/multi-ab.sh BASE_BUILD NAME=BUILD...: builds side by side at several devices in one VM boot (issue 20).
# tests/vm/guest-multi-scale.sh in profile multi, BASE_BUILD's ncm-bench; each NAME=BUILD's
# libncm, libncm-lwip and ncm-tun run in turn at each count (VM_SCALE_VARIANTS), so boot-to-boot
# noise (about ±25 %) does not enter the comparison. VM_SCALE_PATHS, _COUNTS, _TESTS, _SECS,
# _ROUNDS, _ORDER, _RPS, _BACKLOG, _TCP_MEM and _TUN_VARIANTS pass through (defaults here: lwip, "1 8", tcp_up, 5 s, 2 rounds). The results are the
# "scale:" lines of OUT/guest.log (MULTI_AB_OUT, default BASE_BUILD/multi-ab). Take the VM lock around it.
# MULTI_AB_DIAG=1 also builds tests/bench/multi-diag-preload.c and collects VM_SCALE_DIAG's evidence per run
# (guest-multi-scale.sh; VM_SCALE_DIAG_TRACE=1 adds the gadgets' receive trace, and the guest boots with
# no_hash_pointers so its events pair by skb address); tests/bench/multi-diag-report.py OUT sums it up. No NAME=BUILD is needed: BASE alone runs.
# MULTI_AB_PERF=R profiles each run of round R (VM_SCALE_PERF, the host's perf; VM_SCALE_PERF_HZ passes through);
# tests/bench/multi-perf-report.py OUT compares the runs' CPU per MB by stage and symbol. Frame pointers help:
# build with -Dc_args=-fno-omit-frame-pointer.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/bench/ab-libs.sh
base=$(realpath "$1")
shift
out=${MULTI_AB_OUT:-$base/multi-ab}
files=() names=() append=()
for v in "$@"; do
	n=${v%%=*} b=$(realpath "${v#*=}")
	ab_lib_files "$base" "$b" "/opt/ab/$n"
	files+=(--file "$b/examples/ncm-tun/ncm-tun:/opt/ab/$n/ncm-tun")
	names+=("$n")
done
envs=(--env "VM_SCALE_VARIANTS=${names[*]-}"
	--env "VM_SCALE_PATHS=${VM_SCALE_PATHS:-lwip}" --env "VM_SCALE_COUNTS=${VM_SCALE_COUNTS:-1 8}"
	--env "VM_SCALE_TESTS=${VM_SCALE_TESTS:-tcp_up}" --env "VM_SCALE_SECS=${VM_SCALE_SECS:-5}"
	--env "VM_SCALE_ROUNDS=${VM_SCALE_ROUNDS:-2}")
if [ "${MULTI_AB_DIAG:-}" = 1 ]; then
	# shellcheck disable=SC2046 # pkg-config's flags are words
	gcc -Wall -Wextra -Werror -O2 -shared -fPIC -Ilibncm -Inetstack -Inetstack/lwip -I"$base/libncm" \
		$(pkg-config --cflags gio-2.0) -o "$base/multi-diag-preload.so" tests/bench/multi-diag-preload.c -ldl
	files+=(--file "$base/multi-diag-preload.so:/opt/diag/multi-diag-preload.so")
	envs+=(--env VM_SCALE_DIAG=1)
	# VM_SCALE_DIAG_TRACE's events pair a frame's netif_rx with its netif_receive_skb by skb address.
	append=(--append no_hash_pointers)
fi
if [ -n "${MULTI_AB_PERF:-}" ]; then
	command -v perf >/dev/null || { echo "multi-ab: MULTI_AB_PERF needs perf (apt-get install linux-perf)" >&2; exit 1; }
	files+=(--bin "$(command -v perf)")
	envs+=(--env "VM_SCALE_PERF=$MULTI_AB_PERF")
fi
if [ "${VM_SCALE_SS:-}" = 1 ] || [ "${MULTI_AB_DIAG:-}" = 1 ]; then
	# The base image has neither ss nor inet_diag.
	kmods=$(echo "${VM_CACHE_DIR:-.cache/vm}"/kernel-*/lib/modules/*/kernel/net/ipv4)
	files+=(--file "$kmods/inet_diag.ko:/tmp/inet_diag.ko" --file "$kmods/tcp_diag.ko:/tmp/tcp_diag.ko"
		--bin "$(command -v ss)")
	[ "${MULTI_AB_DIAG:-}" != 1 ] || files+=(--bin "$(command -v tc)")
fi
for v in VM_SCALE_ORDER VM_SCALE_BACKLOG VM_SCALE_RPS VM_SCALE_TCP_MEM VM_SCALE_TUN_VARIANTS VM_SCALE_SS VM_SCALE_DIAG_RX VM_SCALE_LWIP_PER_CTX VM_SCALE_PERF_HZ VM_SCALE_DIAG_TRACE VM_SCALE_SYSCALLS; do
	[ -z "${!v+set}" ] || envs+=(--env "$v=${!v}")
done
rm -rf "$out"
tests/vm/run-vm.sh --script tests/vm/guest-multi-scale.sh --profile multi --out "$out" \
	--timeout "${MULTI_AB_TIMEOUT:-900}" "${append[@]}" "${envs[@]}" "${files[@]}" \
	--bin "$base/examples/ncm-bench/ncm-bench" --bin "$base/examples/ncm-tun/ncm-tun" >"$out.log" 2>&1 || {
	tail -30 "$out.log"
	echo "multi-ab: the VM run failed; log: $out.log" >&2
	exit 1
}
grep '^scale:' "$out/guest.log"
