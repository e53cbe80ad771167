#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/unit/test-lwip-missing.sh: configuring without lwIP's sources stops with a message that says how to get them.
# usage: test-lwip-missing.sh SOURCE_ROOT MESON
set -u
src=$1
meson=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "1..2"
out=$("$meson" setup "$tmp/build" "$src" -Dlwip=enabled -Dlwip_src="$tmp/no-lwip-here" \
	-Dtests=false 2>&1)
rc=$?
if [ $rc -ne 0 ]; then echo "ok 1 - -Dlwip=enabled without sources fails"; else echo "not ok 1 - configure succeeded"; fi
if printf '%s\n' "$out" | grep -q "lwIP sources not found in $tmp/no-lwip-here.*fetch-lwip.sh"; then
	echo "ok 2 - the message names the directory and fetch-lwip.sh"
else
	echo "not ok 2 - message: $(printf '%s\n' "$out" | grep -i lwip | tail -3)"
fi
