#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# test-install.sh: `meson install` of this build into a temporary DESTDIR, then programs outside the tree built with `pkg-config --cflags --libs libncm` (and libncm-lwip) alone run.
# Usage: test-install.sh MESON BUILD_ROOT SANITIZE HAVE_LWIP UDEVRULESDIR UNITDIR USERUNITDIR CC [CC ARGS...]. Prints TAP.
# UDEVRULESDIR is where 50-libncm.rules goes, UNITDIR where ncm-tun.service
# goes, USERUNITDIR where ncm-proxy.service goes, each - when the build
# installs none.
# SANITIZE is the build's b_sanitize: an instrumented libncm.so needs its
# runtime in the program too, so the program is built with the same flags.
set -eu

meson=$1 build=$2 sanitize=$3 have_lwip=$4 rulesdir=$5 unitdir=$6 userunitdir=$7
shift 7
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; [ -f "${2:-}" ] && sed 's/^/# /' "$2"; echo "1..$n"; exit 1; }

echo "TAP version 13"
"$meson" install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
	not_ok "meson install --destdir" "$tmp/install.log"
ok "meson install --destdir"

if [ "$rulesdir" != - ]; then
	rules=$tmp/root$rulesdir/50-libncm.rules
	grep -q 'GROUP="plugdev"' "$rules" 2>/dev/null ||
		not_ok "50-libncm.rules installed in $rulesdir" "$tmp/install.log"
	ok "50-libncm.rules installed in $rulesdir"
fi

# Each unit starts the program this install put in place, and systemd takes
# it as written where systemd-analyze is at hand (a copy naming the binary
# under DESTDIR: verify checks that it can be executed). A user unit is
# verified by a user manager of its own (XDG_RUNTIME_DIR in $tmp).
unit_check() { # DIR NAME [--user]
	unit=$tmp/root$1/$2
	exe=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit" 2>/dev/null) || true
	[ -n "$exe" ] && [ -x "$tmp/root$exe" ] ||
		not_ok "$2 installed in $1, starting the installed program ($exe)" "$unit"
	ok "$2 installed in $1, starting $exe"
	command -v systemd-analyze >/dev/null || return 0
	mkdir -p "$tmp/unit" "$tmp/xdg" && chmod 700 "$tmp/xdg"
	sed "s|^ExecStart=$exe |ExecStart=$tmp/root$exe |" "$unit" >"$tmp/unit/$2"
	# Only what it says of this unit: verify also loads the host's units,
	# whose complaints are not ours. A copy with a key systemd does not
	# know must be complained of, or verify did not read units here (a
	# container without a manager, say).
	mkdir -p "$tmp/bad"
	sed 's/^\[Service\]$/[Service]\nNoSuchKey=1/' "$tmp/unit/$2" >"$tmp/bad/$2"
	XDG_RUNTIME_DIR=$tmp/xdg systemd-analyze ${3:-} verify "$tmp/bad/$2" >"$tmp/bad.log" 2>&1 || true
	if ! grep -q "$2.*NoSuchKey" "$tmp/bad.log"; then
		echo "ok $((n + 1)) - systemd-analyze ${3:+$3 }verify $2 # SKIP it reads no unit here: $(head -n 1 "$tmp/bad.log")"
		n=$((n + 1))
		return 0
	fi
	XDG_RUNTIME_DIR=$tmp/xdg systemd-analyze ${3:-} verify "$tmp/unit/$2" >"$tmp/verify.log" 2>&1 || true
	! grep -q "$2" "$tmp/verify.log" || not_ok "systemd-analyze ${3:+$3 }verify $2" "$tmp/verify.log"
	ok "systemd-analyze ${3:+$3 }verify $2"
}
[ "$unitdir" = - ] || unit_check "$unitdir" ncm-tun.service
[ "$userunitdir" = - ] || unit_check "$userunitdir" ncm-proxy.service --user

pc=$(find "$tmp/root" -name libncm.pc | head -n 1)
[ -n "$pc" ] || not_ok "libncm.pc installed"
ok "libncm.pc installed"
# The .pc names the real prefix while the files sit under DESTDIR: move the
# prefix there, as unpacking a package elsewhere would. (--define-variable
# would move glib's prefix too.)
prefix=$(PKG_CONFIG_PATH= pkg-config --variable=prefix "$pc")
sed -i "s|^prefix=.*|prefix=$tmp/root$prefix|" "$(dirname "$pc")"/libncm*.pc
export PKG_CONFIG_PATH="$(dirname "$pc")"
pc_flags() { pkg-config "$@" libncm; }
libdir=$(pc_flags --variable=libdir)
[ -e "$libdir/libncm.so" ] && [ -e "$(pc_flags --variable=includedir)/libncm/ncm.h" ] ||
	not_ok "the .pc points at the installed library and headers"
ok "the .pc points at the installed library and headers"

mkdir "$tmp/app"
cat >"$tmp/app/app.c" <<'EOF'
/* An application of libncm's, outside its tree. */
#include <ncm.h>
#include <stdio.h>

int
main(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = ncm_context_new(&error);
	g_autoptr(GPtrArray) found = NULL;
	NcmDeviceOptions options;

	ncm_device_options_init(&options);
	if (!ctx) {
		printf("libncm: no USB here: %s\n", error->message);
		return 0;
	}
	found = ncm_context_enumerate(ctx, NULL, &error);
	if (!found) {
		printf("libncm: cannot enumerate: %s\n", error->message);
		return error->domain == NCM_ERROR ? 0 : 1;
	}
	printf("libncm: %u NCM functions\n", found->len);
	return 0;
}
EOF
san=
[ "$sanitize" = none ] || san="-fsanitize=$sanitize"
# shellcheck disable=SC2046,SC2086  # word splitting of the flags is meant
(cd "$tmp/app" && "$@" $san -o app app.c $(pc_flags --cflags --libs)) >"$tmp/cc.log" 2>&1 ||
	not_ok "an outside program builds with pkg-config --cflags --libs libncm alone" "$tmp/cc.log"
case "$(pc_flags --cflags --libs)" in
*"$(cd "$build" && pwd)"*) not_ok "pkg-config's flags do not point into the build tree" ;;
esac
ok "an outside program builds with pkg-config --cflags --libs libncm alone"

LD_LIBRARY_PATH="$libdir" ldd "$tmp/app/app" >"$tmp/ldd.log" 2>&1 || true
grep -q "libncm.so.1 => $libdir/" "$tmp/ldd.log" ||
	not_ok "the program loads the installed libncm.so.1" "$tmp/ldd.log"
ok "the program loads the installed libncm.so.1"

LD_LIBRARY_PATH="$libdir" "$tmp/app/app" >"$tmp/run.log" 2>&1 ||
	not_ok "the program runs and exits 0" "$tmp/run.log"
grep -Eq '^libncm: ([0-9]+ NCM functions|no USB here: .+|cannot enumerate: .+)$' "$tmp/run.log" ||
	not_ok "it enumerates, or says clearly why not" "$tmp/run.log"
sed 's/^/# /' "$tmp/run.log"
ok "the program runs and exits 0, enumerating or saying why not"

# The netstack: libncm-lwip.pc pulls in libncm; lwIP itself stays inside.
if [ "$have_lwip" != true ]; then
	echo "1..$n"
	exit 0
fi
lw_flags() { pkg-config "$@" libncm-lwip; }
[ -e "$(lw_flags --variable=libdir)/libncm-lwip.so" ] &&
	[ -e "$(lw_flags --variable=includedir)/libncm/ncm-lwip.h" ] ||
	not_ok "libncm-lwip.pc points at the installed netstack and its headers"
ok "libncm-lwip.pc points at the installed netstack and its headers"
cat >"$tmp/app/net.c" <<'EOF'
/* An application of the netstack's, outside its tree: no netif, so no route. */
#include <ncm-lwip.h>
#include <stdio.h>

int
main(void)
{
	g_autoptr(NcmLwipStack) stack = ncm_lwip_stack_get_default();
	g_autoptr(GSocketAddress) to = g_inet_socket_address_new_from_string("192.0.2.1", 7);
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmLwipConnection) conn =
		ncm_lwip_stack_connect(stack, G_INET_SOCKET_ADDRESS(to), 1000, NULL, &error);

	if (conn != NULL || !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_NETWORK_UNREACHABLE)) {
		printf("libncm-lwip: expected no route, got %s\n", error ? error->message : "a connection");
		return 1;
	}
	printf("libncm-lwip: %s\n", error->message);
	return 0;
}
EOF
# shellcheck disable=SC2046,SC2086  # word splitting of the flags is meant
(cd "$tmp/app" && "$@" $san -o net net.c $(lw_flags --cflags --libs)) >"$tmp/cc.log" 2>&1 ||
	not_ok "an outside program builds with pkg-config --cflags --libs libncm-lwip alone" "$tmp/cc.log"
ok "an outside program builds with pkg-config --cflags --libs libncm-lwip alone"
LD_LIBRARY_PATH="$libdir" ldd "$tmp/app/net" >"$tmp/ldd.log" 2>&1 || true
grep -q "libncm-lwip.so.1 => $libdir/" "$tmp/ldd.log" ||
	not_ok "the netstack program loads the installed libncm-lwip.so.1" "$tmp/ldd.log"
ok "the netstack program loads the installed libncm-lwip.so.1"
nm -D --defined-only "$(lw_flags --variable=libdir)/libncm-lwip.so" |
	grep -E ' T (lwip_|tcp_|pbuf_|netif_|sys_)' >"$tmp/nm.log" &&
	not_ok "the installed libncm-lwip.so exports none of lwIP's functions" "$tmp/nm.log"
ok "the installed libncm-lwip.so exports none of lwIP's functions"
LD_LIBRARY_PATH="$libdir" "$tmp/app/net" >"$tmp/net.log" 2>&1 ||
	not_ok "the netstack program runs: a connect without a netif fails with no route" "$tmp/net.log"
sed 's/^/# /' "$tmp/net.log"
ok "the netstack program runs: a connect without a netif fails with no route"
echo "1..$n"
