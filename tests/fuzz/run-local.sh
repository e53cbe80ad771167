#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# run-local.sh: runs one fuzz target for many executions on this machine.
#
# usage: tests/fuzz/run-local.sh TARGET [RUNS]
#   TARGET  a key of fuzz_targets in tests/fuzz/meson.build, e.g. ntb-parse
#   RUNS    executions (default 1000000; -1 runs until stopped)
# Environment:
#   FUZZ_BUILD  clang build directory, set up and built on demand
#               (default /tmp/libncm-fuzz-build)
#   JOBS        parallel workers (libFuzzer -fork=JOBS; default 1)
#   FUZZ_FLAGS  more libFuzzer flags, e.g. "-max_total_time=600"
# It runs over a scratch copy of tests/fuzz/corpus/TARGET in
# $FUZZ_BUILD/local-TARGET, so the committed corpus is never written, and
# ends with libFuzzer's stats (the last "cov:" line is the coverage reached).
# A crash lands in $FUZZ_BUILD/local-TARGET/artifacts/: reproduce it with
# "$FUZZ_BUILD/tests/fuzz/fuzz-TARGET FILE", fix the bug, and commit the file
# as tests/fuzz/corpus/TARGET/regression-<what>.bin.
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	sed -n '3,20p' "$0" >&2
	exit 2
fi
target=$1
runs=${2:-1000000}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${FUZZ_BUILD:-/tmp/libncm-fuzz-build}
jobs=${JOBS:-1}

if [ ! -d "$src/tests/fuzz/corpus/$target" ]; then
	echo "no corpus for $target in $src/tests/fuzz/corpus" >&2
	exit 2
fi
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$src" -Dfuzz=enabled -Dlwip=disabled \
		-Dvm_tests=disabled
fi
ninja -C "$build" "tests/fuzz/fuzz-$target"

fork=
if [ "$jobs" -gt 1 ]; then
	fork="-fork=$jobs"
fi
# shellcheck disable=SC2086 # FUZZ_FLAGS and fork are lists of flags
exec "$src/tests/fuzz/run-libfuzzer.sh" "$build/tests/fuzz/fuzz-$target" \
	"$src/tests/fuzz/corpus/$target" "$build/local-$target" "$runs" \
	$fork ${FUZZ_FLAGS:-}
