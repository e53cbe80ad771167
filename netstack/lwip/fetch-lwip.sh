#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# fetch-lwip.sh DEST: put the lwIP 2.1.x source tree (DEST/src/core, ...) into DEST,
# from the distribution's lwip source package. Idempotent; instant when DEST is ready.
set -euo pipefail

prog=${0##*/}
ours_sources=/etc/apt/sources.list.d/libncm-deb-src.sources
ours_list=/etc/apt/sources.list.d/libncm-deb-src.list

die() {
	echo "$prog: error: $*" >&2
	exit 1
}

note() {
	echo "$prog: $*" >&2
}

usage() {
	echo "usage: $prog DEST" >&2
	echo "  fills DEST with the lwIP >= 2.1.3 source tree (needs apt deb-src access," >&2
	echo "  which is configured automatically when run as root)" >&2
	exit 2
}

# The files our meson.build compiles or reads; a tree missing any of them
# is not one we can build.
lwip_tree_complete() {
	local d=$1 f
	for f in src/core/init.c src/core/tcp.c src/core/ipv4/ip4.c \
		src/core/ipv6/ip6.c src/netif/ethernet.c src/api/tcpip.c \
		src/include/lwip/init.h src/include/lwip/opt.h; do
		[ -f "$d/$f" ] || return 1
	done
}

# Prints "MAJOR.MINOR.REVISION" of the tree in $1.
lwip_version() {
	# init.h has CRLF line ends in some trees.
	awk '{ sub(/\r$/, "") }
	     $1 == "#define" && $2 == "LWIP_VERSION_MAJOR" { ma = $3 }
	     $1 == "#define" && $2 == "LWIP_VERSION_MINOR" { mi = $3 }
	     $1 == "#define" && $2 == "LWIP_VERSION_REVISION" { re = $3 }
	     END { if (ma != "") printf "%s.%s.%s\n", ma, mi, re }' \
		"$1/src/include/lwip/init.h"
}

lwip_version_ok() {
	local v major minor rev
	v=$(lwip_version "$1")
	IFS=. read -r major minor rev <<<"$v"
	[ -n "$major" ] || return 1
	[ "$major" -gt 2 ] && return 0
	[ "$major" -eq 2 ] || return 1
	[ "$minor" -gt 1 ] && return 0
	[ "$minor" -eq 1 ] && [ "$rev" -ge 3 ]
}

is_root() {
	[ "$(id -u)" -eq 0 ]
}

# grep reads to the end (no -q): quitting at the first match would kill
# apt-cache with SIGPIPE, and pipefail turn a found record into a missing one.
have_source_record() {
	apt-cache showsrc lwip 2>/dev/null | grep -x 'Package: lwip' >/dev/null
}

# Lists the apt source files, ours excluded.
apt_source_files() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		[ "$f" = "$ours_sources" ] || [ "$f" = "$ours_list" ] || echo "$f"
	done
}

# True if a file other than ours already configures deb-src entries; adding
# ours beside it would make apt warn about targets configured twice.
others_have_deb_src() {
	local f
	while read -r f; do
		case $f in
		*.sources)
			grep -Eqi '^[[:space:]]*Types:.*(^|[[:space:]:])deb-src([[:space:]]|$)' "$f" && return 0
			;;
		*)
			grep -Eq '^[[:space:]]*deb-src[[:space:]]' "$f" && return 0
			;;
		esac
	done < <(apt_source_files)
	return 1
}

os_codename() {
	local VERSION_CODENAME=''
	# shellcheck disable=SC1091
	[ -r /etc/os-release ] && . /etc/os-release
	echo "${VERSION_CODENAME:-}"
}

# deb822 stanzas with Types: deb, rewritten as deb-src. Only the
# distribution's own suites (CODENAME, CODENAME-updates, ...) are copied: a
# third-party repository rarely publishes sources. Comments are dropped,
# continuation lines kept.
derive_deb822() { # codename files...
	local codename=$1
	shift
	awk -v codename="$codename" '
	function flush(   i, out, keep) {
		keep = has_deb && enabled && (codename == "" || suite_ok)
		if (keep) {
			out = "Types: deb-src\n"
			for (i = 1; i <= n; i++)
				out = out lines[i] "\n"
			printf "%s%s", (emitted ? "\n" : ""), out
			emitted = 1
		}
		n = 0; has_deb = 0; enabled = 1; suite_ok = 0; field = ""
	}
	BEGIN { n = 0; enabled = 1 }
	FNR == 1 && NR != 1 { flush() }
	/^[[:space:]]*#/ { next }
	/^[[:space:]]*$/ { flush(); next }
	function check_types(v) {
		if (v ~ /(^|[[:space:]])deb([[:space:]]|$)/) has_deb = 1
	}
	function check_suites(v,   m, i, s) {
		m = split(v, s, /[[:space:]]+/)
		for (i = 1; i <= m; i++)
			if (s[i] != "" && (s[i] == codename || index(s[i], codename "-") == 1))
				suite_ok = 1
	}
	/^[[:space:]]/ {
		if (field == "types") { check_types($0); next }
		if (field == "suites") check_suites($0)
		lines[++n] = $0
		next
	}
	{
		field = tolower($0); sub(/:.*/, "", field)
		value = $0; sub(/^[^:]*:[[:space:]]*/, "", value)
		if (field == "types") { check_types(value); next }
		if (field == "enabled" && tolower(value) ~ /^no/) enabled = 0
		if (field == "suites") check_suites(value)
		lines[++n] = $0
	}
	END { flush() }
	' "$@"
}

# One-line "deb [opts] URI SUITE COMPONENTS" entries, rewritten as deb-src.
derive_one_line() { # codename files...
	local codename=$1
	shift
	awk -v codename="$codename" '
	$1 != "deb" { next }
	{
		i = 2
		if ($2 ~ /^\[/) {
			while (i <= NF && $i !~ /\]$/) i++
			i++
		}
		suite = $(i + 1)
		if (codename != "" && suite != codename && index(suite, codename "-") != 1)
			next
		line = $0
		sub(/^[[:space:]]*deb[[:space:]]/, "deb-src ", line)
		print line
	}
	' "$@"
}

# Writes our deb-src file(s) next to the existing binary entries. Never a
# sources directory of its own: apt-get update would then forget the binary
# package lists.
write_deb_src() {
	local codename files822=() files1=() f text
	codename=$(os_codename)
	while read -r f; do
		case $f in
		*.sources) files822+=("$f") ;;
		*) files1+=("$f") ;;
		esac
	done < <(apt_source_files)

	if [ ${#files822[@]} -gt 0 ]; then
		text=$(derive_deb822 "$codename" "${files822[@]}")
		if [ -n "$text" ]; then
			{
				echo "# Written by libncm's netstack/lwip/fetch-lwip.sh: source"
				echo "# entries mirroring the binary ones, for 'apt-get source lwip'."
				echo "$text"
			} >"$ours_sources"
			note "wrote $ours_sources"
		fi
	fi
	if [ ${#files1[@]} -gt 0 ]; then
		text=$(derive_one_line "$codename" "${files1[@]}")
		if [ -n "$text" ]; then
			{
				echo "# Written by libncm's netstack/lwip/fetch-lwip.sh (see there)."
				echo "$text"
			} >"$ours_list"
			note "wrote $ours_list"
		fi
	fi
	[ -f "$ours_sources" ] || [ -f "$ours_list" ] ||
		die "no 'deb' entries for '${codename:-this release}' found in /etc/apt to derive deb-src entries from; add a deb-src line for the lwip source package, or pass -Dlwip_src=DIR pointing at an lwIP 2.1.x source tree"
}

apt_update() {
	local log
	log=$(mktemp)
	note "apt-get update (deb-src entries)"
	if ! apt-get update -q >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		rm -f "$log"
		die "apt-get update failed"
	fi
	rm -f "$log"
}

# Makes 'apt-get source lwip' possible, or dies saying what to do.
ensure_source_record() {
	if is_root && { [ -f "$ours_sources" ] || [ -f "$ours_list" ]; } &&
		others_have_deb_src; then
		rm -f "$ours_sources" "$ours_list"
		note "removed our deb-src file: another sources file already has deb-src entries"
	fi
	if have_source_record; then
		return 0
	fi
	if ! is_root; then
		die "apt has no source record for lwip and adding a deb-src entry needs root: run '$0 $dest' as root, or pass -Dlwip_src=DIR pointing at an lwIP 2.1.x source tree (one with src/core)"
	fi
	if ! others_have_deb_src; then
		write_deb_src
	fi
	apt_update
	have_source_record ||
		die "apt still has no source record for lwip after adding deb-src entries; pass -Dlwip_src=DIR pointing at an lwIP 2.1.x source tree"
}

ensure_dpkg_source() {
	command -v dpkg-source >/dev/null && return 0
	is_root || die "dpkg-source is missing: install dpkg-dev (as root), or pass -Dlwip_src=DIR"
	note "installing dpkg-dev for dpkg-source"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		dpkg-dev >/dev/null
}

# Downloads the source package into a scratch directory beside DEST (so the
# final move is a rename) and unpacks the upstream tree only: Debian's
# patches add a port and sockets changes we neither build nor want, and
# -Dlwip_src users point at plain upstream trees.
work=''
fetch_into() {
	local dsc
	work=$(mktemp -d "${dest%/}.fetch.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	# apt downloads as the _apt user when it can write there; otherwise it
	# warns and downloads as root.
	if is_root && id _apt >/dev/null 2>&1; then
		chown _apt "$work"
	fi
	note "downloading the lwip source package"
	if ! (cd "$work" && apt-get source -q --download-only lwip) >"$work/apt.log" 2>&1; then
		tail -n 20 "$work/apt.log" >&2
		die "apt-get source lwip failed"
	fi
	dsc=$(find "$work" -maxdepth 1 -name 'lwip_*.dsc' | head -n 1)
	[ -n "$dsc" ] || die "apt-get source lwip left no .dsc in $work"
	if ! (cd "$work" && dpkg-source -q -x --skip-patches "${dsc##*/}" tree) \
		>"$work/dpkg-source.log" 2>&1; then
		tail -n 20 "$work/dpkg-source.log" >&2
		die "dpkg-source could not unpack ${dsc##*/}"
	fi
	lwip_tree_complete "$work/tree" ||
		die "${dsc##*/} unpacks to a tree without src/core, src/netif/ethernet.c or src/include/lwip"
	lwip_version_ok "$work/tree" ||
		die "${dsc##*/} holds lwIP $(lwip_version "$work/tree"); libncm needs >= 2.1.3: pass -Dlwip_src=DIR"
	# Debian's packaging is not part of lwIP; drop it so DEST is the upstream tree.
	rm -rf "$work/tree/debian"
	if [ -d "$dest" ]; then
		rmdir "$dest" 2>/dev/null ||
			die "$dest exists but does not hold a complete lwIP tree: remove it and run again"
	fi
	mv "$work/tree" "$dest"
	rm -rf "$work"
	trap - EXIT
}

[ $# -eq 1 ] || usage
dest=$1
[ -n "$dest" ] || usage

if [ -d "$dest" ] && lwip_tree_complete "$dest"; then
	lwip_version_ok "$dest" ||
		die "$dest holds lwIP $(lwip_version "$dest"); libncm needs >= 2.1.3: remove it and run again"
	exit 0
fi

command -v apt-get >/dev/null ||
	die "apt-get not found: fetch lwIP 2.1.3 sources yourself and pass -Dlwip_src=DIR"
mkdir -p "$(dirname "$dest")"
dest=$(cd "$(dirname "$dest")" && pwd)/$(basename "$dest")
ensure_dpkg_source
ensure_source_record
fetch_into
note "lwIP $(lwip_version "$dest") sources are in $dest"
