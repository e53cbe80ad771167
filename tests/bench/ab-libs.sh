# SPDX-License-Identifier: LGPL-2.1-or-later
# tests/bench/ab-libs.sh: sourced by the A/B scripts (ab.sh, multi-ab.sh, link-bound.sh).
# ab_lib_files BASE_BUILD VARIANT_BUILD DEST appends to the array `files` the
# run-vm.sh arguments that put VARIANT_BUILD's libncm and libncm-lwip in the
# guest's DEST under base's sonames. A variant swaps in its libraries behind
# base's programs, so both must share the ABI: a soname of its own (another
# struct layout, README.md "The API in one page") stops the run instead.
ab_lib_files() {
	local base=$1 b=$2 dest=$3 dir so
	for dir in libncm/libncm netstack/libncm-lwip; do
		# The soname of what base links now: a build directory keeps the
		# links of earlier sonames.
		so=$(readelf -d "$base/$dir.so" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
		[ -n "$so" ] || {
			echo "ab: $base has no $dir.so with a soname" >&2
			return 1
		}
		[ -e "$b/${dir%/*}/$so" ] || {
			echo "ab: $b has no ${dir%/*}/$so: its ABI is not base's; build base from a commit with the same soname" >&2
			return 1
		}
		files+=(--file "$b/${dir%/*}/$so:$dest/$so")
	done
}
