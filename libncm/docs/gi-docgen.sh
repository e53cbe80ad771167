#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# gi-docgen.sh: builds one reference manual; any undocumented symbol or gi-docgen warning fails it.
# Usage: gi-docgen.sh GI_DOCGEN CONFIG OUTPUT_DIR GIR INCLUDE_DIR CONTENT_DIR...
set -eu
gidocgen=$1 config=$2 out=$3 gir=$4 include=$5
shift 5
content=
for d in "$@"; do content="$content --content-dir=$d"; done
# check: every symbol, parameter and return value has its documentation.
"$gidocgen" check --add-include-path="$include" "$gir" >"$out.check.log" 2>&1 || {
	cat "$out.check.log" >&2
	exit 1
}
if grep -q WARNING "$out.check.log"; then
	cat "$out.check.log" >&2
	exit 1
fi
rm -rf "$out"
# shellcheck disable=SC2086  # one --content-dir per word
"$gidocgen" generate --quiet --fatal-warnings --no-namespace-dir --config="$config" \
	--add-include-path="$include" $content --output-dir="$out" "$gir"
