#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-libfuzzer.sh: runs one libFuzzer binary for a fixed number of executions
# over a scratch copy of its committed corpus (the fuzz suite's runner).
#
# usage: run-libfuzzer.sh FUZZER SEED_DIR WORK_DIR RUNS [libFuzzer flags...]
# WORK_DIR is wiped first. New inputs go to WORK_DIR/corpus, crashes to
# WORK_DIR/artifacts, never into SEED_DIR.
set -eu
if [ $# -lt 4 ]; then
	echo "usage: $0 FUZZER SEED_DIR WORK_DIR RUNS [libFuzzer flags...]" >&2
	exit 2
fi
fuzzer=$1 seeds=$2 work=$3 runs=$4
shift 4
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
if [ -z "$(ls -A "$seeds" 2>/dev/null)" ]; then
	echo "$seeds: no seeds; commit at least one input" >&2
	exit 1
fi
cp "$seeds"/* "$work/corpus/"
# libFuzzer's own code for a crash is 77, which meson counts as a skip.
exec "$fuzzer" -runs="$runs" -max_len=65536 -timeout=30 -rss_limit_mb=2048 \
	-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
	-artifact_prefix="$work/artifacts/" "$@" "$work/corpus"
