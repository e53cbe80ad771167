#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/proxy-cpu.sh NCM_PROXY [NAME=NCM_PROXY...]: ncm-proxy's own CPU per MB relayed, no VM, no USB.
# Each ncm-proxy runs on a TAP in a private netns (root, unshare) with a -L
# forward to an iperf3 server on the TAP's kernel side; iperf3 through the
# forward runs up, down (-R) and both ways (--bidir) for PROXY_CPU_SECS (5),
# PROXY_CPU_REPS (3) rounds, the builds taking turns within a round. Prints per
# build and test the median Mbit/s and the proxy process's user+system CPU
# milliseconds per MB (all its threads, from /proc): what the relay costs, which
# on a shared host moves far less than the rate; and the iperf3 client's (the
# loopback socket's other end, whose receive and ACKs the relay's writes cause).
# PROXY_CPU_TESTS picks the tests ("down up bidir"). Native CPU, not TCG:
# per-call costs weigh less here than in the VM (tests/bench/ab.sh AB_PATH=proxy).
set -eu
if [ -z "${PROXY_CPU_INNER:-}" ]; then
	for t in unshare iperf3 ip; do
		command -v "$t" >/dev/null || { echo "proxy-cpu: needs $t" >&2; exit 1; }
	done
	PROXY_CPU_INNER=1 exec unshare -n sh "$0" "$@"
fi

SECS=${PROXY_CPU_SECS:-5}
REPS=${PROXY_CPU_REPS:-3}
TESTS=${PROXY_CPU_TESTS:-down up bidir}
K4=192.168.94.1 L4=192.168.94.2
TMP=$(mktemp -d)
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
ip link set lo up
iperf3 -s -p 5201 >/dev/null 2>&1 &
pids="$pids $!"

builds=
i=0
for b in "$@"; do
	case $b in *=*) name=${b%%=*} path=${b#*=} ;; *) name=b$i path=$b ;; esac
	builds="$builds $name"
	eval "path_$name=\$path"
	i=$((i + 1))
done

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run NAME TEST ROUND: one iperf3 through a fresh ncm-proxy
run() {
	eval "proxy=\$path_$1"
	tap=pc$$
	: >"$TMP/log"
	"$proxy" --tap "$tap" --ipv4 "$L4/24" --no-dad -L "127.0.0.1:9300:$K4:5201" >"$TMP/log" 2>&1 &
	ppid=$!
	n=0
	until grep -q "running on" "$TMP/log"; do
		n=$((n + 1)); [ "$n" -lt 100 ] || { cat "$TMP/log" >&2; exit 1; }; sleep 0.1
	done
	ip addr add "$K4/24" dev "$tap" 2>/dev/null || true
	ip link set "$tap" up
	case $2 in up) flag= ;; down) flag=-R ;; bidir) flag=--bidir ;; esac
	t0=$(cpu_ticks "$ppid")
	# The subshell's `times` prints its children's user and system seconds last.
	# shellcheck disable=SC2086
	(iperf3 -c 127.0.0.1 -p 9300 -t "$SECS" $flag -J >"$TMP/j" 2>&1 || {
		tail -5 "$TMP/j" "$TMP/log" >&2; echo "proxy-cpu: iperf3 failed" >&2; exit 1; }
	 times) >"$TMP/times"
	t1=$(cpu_ticks "$ppid")
	client_s=$(tail -1 "$TMP/times" | awk '{ for (i = 1; i <= NF; i++) { v = $i; m = 0;
		if (v ~ /m/) { m = substr(v, 1, index(v, "m") - 1); v = substr(v, index(v, "m") + 1) }
		sub(/s$/, "", v); t += m * 60 + v } print t }')
	kill -TERM "$ppid"; wait "$ppid" || true
	# A sanitized build's reports (TSan, ASan) would go unseen in its log.
	! grep -q "Sanitizer" "$TMP/log" || { cat "$TMP/log" >&2; exit 1; }
	python3 - "$TMP/j" "$((t1 - t0))" "$(getconf CLK_TCK)" "$1" "$2" "$3" "$client_s" <<'EOF' >>"$TMP/results"
import json, sys
j = json.load(open(sys.argv[1]))
if "error" in j or "sum_received" not in j["end"]:
    sys.exit("proxy-cpu: iperf3: " + j.get("error", "no result"))
e = j["end"]
# what the receivers got, both directions when --bidir (iperf3 3.12 under -R
# counts it in sum_sent, as the side that reports it sees it)
def got(a, b):
    return max(e.get(a, {}).get("bytes", 0), e.get(b, {}).get("bytes", 0)) / 1e6
mb = got("sum_received", "sum_sent") + got("sum_received_bidir_reverse", "sum_sent_bidir_reverse")
secs = e["sum_received"]["seconds"]
if mb == 0:
    sys.exit("proxy-cpu: nothing received: " + json.dumps(e["sum_received"]) + open(sys.argv[1]).read()[-600:])
cpu_ms = int(sys.argv[2]) * 1000 / int(sys.argv[3])
print(sys.argv[4], sys.argv[5], sys.argv[6], f"{mb * 8 / secs:.0f}", f"{cpu_ms / mb:.2f}",
      f"{float(sys.argv[7]) * 1000 / mb:.2f}")
EOF
}

round=1
while [ "$round" -le "$REPS" ]; do
	for t in $TESTS; do
		for b in $builds; do
			run "$b" "$t" "$round"
		done
	done
	round=$((round + 1))
done
python3 - "$TMP/results" <<'EOF'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    b, t, r, mbit, cpu, client = line.split()
    rows[(t, b)].append((float(mbit), float(cpu), float(client)))
print(f"{'test':<6} {'build':<10} {'Mbit/s':>8} {'cpu ms/MB':>10} {'client':>7} {'both':>6}"
      "  per round (Mbit/s cpu client)")
for (t, b), v in sorted(rows.items()):
    per = " ".join(f"{m:.0f}/{c:.2f}/{k:.2f}" for m, c, k in v)
    print(f"{t:<6} {b:<10} {statistics.median(m for m, _, _ in v):8.0f} "
          f"{statistics.median(c for _, c, _ in v):10.2f} "
          f"{statistics.median(k for _, _, k in v):7.2f} "
          f"{statistics.median(c + k for _, c, k in v):6.2f}  {per}")
EOF
