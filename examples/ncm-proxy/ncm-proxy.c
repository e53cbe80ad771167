/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy: any program reaches an NCM device through libncm and lwIP, without privileges: SOCKS5 and ssh-style forwards. */
#include <errno.h>
#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ncm.h>

#include "ncm-cli.h"
#include "ncm-proxy-device.h"
#include "ncm-proxy.h"

enum {
	EXIT_OK = 0,       /* stopped by SIGINT/SIGTERM */
	EXIT_RUNTIME = 1,  /* the device went away (without --persist) or failed */
	EXIT_SETUP = 2,    /* bad options, no device, no permission, port in use */
};

static gint opt_usb_fd = -1;
static gboolean opt_persist;
static gchar *opt_ipv4;
static gchar *opt_gateway;
static gchar *opt_ipv6;
static gboolean opt_no_dhcp;
static gboolean opt_no_slaac;
static gboolean opt_no_dad;
static gchar **opt_dns;
static gchar *opt_socks;
static gboolean opt_no_socks;
static gchar **opt_local;
static gchar **opt_remote;
static gchar *opt_auth;
static gboolean opt_no_auth;
static gint opt_max_connections = PROXY_DEFAULT_MAX_CONNECTIONS;
static gchar *opt_buffer;
static gint opt_connect_timeout = PROXY_DEFAULT_CONNECT_TIMEOUT_S;
static gchar *opt_names;
static gchar *opt_tap;

static const GOptionEntry entries[] = {
	{ "usb-fd", 0, 0, G_OPTION_ARG_INT, &opt_usb_fd,
	  "Use the already open usbfs node on file descriptor N (Android, termux-usb, a root broker)",
	  "N" },
	{ "persist", 'p', 0, G_OPTION_ARG_NONE, &opt_persist,
	  "Keep running through unplug and replug, and wait for the device when none is plugged in at the start (not with --usb-fd)", NULL },
	{ "ipv4", '4', 0, G_OPTION_ARG_STRING, &opt_ipv4,
	  "Static IPv4 address, e.g. 192.168.7.2/24 (default: lease one by DHCP)", "ADDR/PREFIX" },
	{ "gateway", 'g', 0, G_OPTION_ARG_STRING, &opt_gateway,
	  "IPv4 gateway beyond the device's link (with --ipv4)", "ADDR" },
	{ "ipv6", '6', 0, G_OPTION_ARG_STRING, &opt_ipv6,
	  "Static IPv6 address, a /64: ADDR or ADDR/64 (link-local and SLAAC addresses come "
	  "anyway)", "ADDR" },
	{ "no-dhcp", 0, 0, G_OPTION_ARG_NONE, &opt_no_dhcp, "No DHCPv4 client (IPv6 only)", NULL },
	{ "no-slaac", 0, 0, G_OPTION_ARG_NONE, &opt_no_slaac,
	  "Take no addresses from router advertisements", NULL },
	{ "no-dad", 0, 0, G_OPTION_ARG_NONE, &opt_no_dad,
	  "Use IPv6 addresses at once, without duplicate address detection", NULL },
	{ "dns", 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_dns,
	  "DNS server on the device's side for names (up to 2; default: from DHCP or RA)", "ADDR" },
	{ "socks", 'D', 0, G_OPTION_ARG_STRING, &opt_socks,
	  "Serve SOCKS5 on [ADDR:]PORT (default 127.0.0.1:1080)", "[ADDR:]PORT" },
	{ "no-socks", 0, 0, G_OPTION_ARG_NONE, &opt_no_socks, "No SOCKS server (forwards only)",
	  NULL },
	{ "local", 'L', 0, G_OPTION_ARG_STRING_ARRAY, &opt_local,
	  "Forward host port PORT (on BIND, default loopback) to HOST:HOSTPORT on the device side "
	  "(repeatable)", "[BIND:]PORT:HOST:HOSTPORT" },
	{ "remote", 'R', 0, G_OPTION_ARG_STRING_ARRAY, &opt_remote,
	  "Listen on PORT on the device side and forward to HOST:HOSTPORT on the host (repeatable)",
	  "[BIND:]PORT:HOST:HOSTPORT" },
	{ "auth", 0, 0, G_OPTION_ARG_FILENAME, &opt_auth,
	  "SOCKS clients must log in (RFC 1929) as the USER:PASSWORD on FILE's first line", "FILE" },
	{ "no-auth", 0, 0, G_OPTION_ARG_NONE, &opt_no_auth,
	  "Allow SOCKS on a non-loopback address without --auth", NULL },
	{ "max-connections", 0, 0, G_OPTION_ARG_INT, &opt_max_connections,
	  "Connections open at once, all listeners (default 256); more are closed at once", "N" },
	{ "buffer", 0, 0, G_OPTION_ARG_STRING, &opt_buffer,
	  "Bytes held per direction of each connection (default 256k, 4k-16M)", "SIZE" },
	{ "connect-timeout", 0, 0, G_OPTION_ARG_INT, &opt_connect_timeout,
	  "Seconds a connect may take (default 10)", "S" },
	{ "names", 0, 0, G_OPTION_ARG_STRING, &opt_names,
	  "Which addresses names resolve to: ipv4 (then ipv6, the default), ipv4-only, ipv6-only",
	  "WHICH" },
	{ "tap", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &opt_tap,
	  "Tests: a new TAP interface NAME instead of a USB device (needs root)", "NAME" },
	G_OPTION_ENTRY_NULL
};

static const gchar description[] =
	"DESCRIPTION\n"
	"  ncm-proxy claims one USB CDC-NCM function and runs a TCP/IP stack (lwIP)\n"
	"  for it inside this process, so no network interface is created and no\n"
	"  privilege is needed beyond write access to the device's /dev/bus/usb\n"
	"  node (a udev rule), or an fd to it (--usb-fd). Other programs reach the\n"
	"  device's network through it:\n"
	"  - a SOCKS5 server (RFC 1928) on 127.0.0.1:1080: CONNECT and UDP ASSOCIATE\n"
	"    to IPv4 and IPv6 addresses and to names, resolved through the device;\n"
	"  - -L: a host port that connects to an address on the device's side;\n"
	"  - -R: a port on the device's side that connects to the host.\n"
	"  Addresses: DHCPv4 unless --ipv4 is given, IPv6 link-local and SLAAC;\n"
	"  DNS servers from DHCP, router advertisements (RDNSS) or --dns.\n"
	"  It runs in the foreground until SIGINT or SIGTERM.\n"
	"\n"
	"EXAMPLES\n"
	"  A phone sharing its network (DHCP and DNS from the phone):\n"
	"    ncm-proxy\n"
	"    curl --socks5-hostname 127.0.0.1:1080 http://example.com/\n"
	"  A Linux gadget at 192.168.7.1 with no DHCP server:\n"
	"    ncm-proxy --ipv4 192.168.7.2/24 --dns 192.168.7.1\n"
	"  ssh through SOCKS (OpenBSD netcat), or through a forward:\n"
	"    ssh -o ProxyCommand='nc -X 5 -x 127.0.0.1:1080 %h %p' user@192.168.7.1\n"
	"    ncm-proxy --ipv4 192.168.7.2/24 -L 2222:192.168.7.1:22 &  ssh -p 2222 user@localhost\n"
	"  A browser: chromium --proxy-server=socks5://127.0.0.1:1080, or Firefox's\n"
	"  SOCKS v5 host 127.0.0.1 port 1080 with \"Proxy DNS when using SOCKS v5\".\n"
	"  The device reaching a web server on the host's port 8000 as its port 80:\n"
	"    ncm-proxy -R 80:127.0.0.1:8000\n"
	"  A root broker handing an unprivileged user the device as fd 3:\n"
	"    setpriv --reuid=nobody --regid=nogroup --clear-groups ncm-proxy --usb-fd 3 \\\n"
	"        3<>/dev/bus/usb/001/004\n"
	"\n"
	"LIMITS\n"
	"  --max-connections (256) connections are open at once, counting every\n"
	"  listener and those still in their handshake; more are closed at once and\n"
	"  counted. Each holds at most --buffer (256k) bytes in the proxy towards the\n"
	"  device (from the device, data moves from lwIP straight into the socket, at\n"
	"  most --buffer a call); a side that does not read stops only its own\n"
	"  connection, never the others. Below that, lwIP queues at most its window\n"
	"  (1 MiB) per direction.\n"
	"  A SOCKS client has 20 s to send a complete request.\n"
	"\n"
	"SIGNALS\n"
	"  SIGINT, SIGTERM, SIGHUP\n"
	"                   close every connection, release the device (cdc_ncm\n"
	"                   takes it back), print statistics and exit; during\n"
	"                   --apple-switch's wait, exit at once. SIGPIPE is ignored.\n"
	"  SIGUSR1          print statistics to stderr and keep running.\n"
	"\n"
	"EXIT STATUS\n"
	"  0  stopped by SIGINT, SIGTERM or SIGHUP\n"
	"  1  the device went away (without --persist) or failed while running\n"
	"  2  setup failed: bad options, no matching device, no permission, port in use\n"
	"     (with --persist a device not plugged in, or not open to it yet, is waited for)\n"
	"\n"
	"NOTES\n"
	"  SOCKS on an address other than loopback lets others use the device's\n"
	"  network: it needs --auth (or --no-auth to say so). Keep the auth file\n"
	"  private; the password never appears on the command line.\n"
	"  UDP ASSOCIATE relays datagrams from the SOCKS client's address only, without\n"
	"  fragments, while its control connection stays open. BIND is answered\n"
	"  \"command not supported\".\n";

typedef struct {
	Proxy proxy;
	GMainLoop *loop;
	ProxyDevice *device;
	GSocketService *socks;
	GPtrArray *forwards;     /* ProxyForward */
	GPtrArray *keep;         /* GObjects the netif config borrows */
	CliSignals signals;
	int status;
} Main;

/* ---- Options ----------------------------------------------------------------------- */

static GInetAddress *
parse_address(const gchar *option, const gchar *text, GSocketFamily family, guint *ret_prefix,
	      GError **error)
{
	g_auto(GStrv) parts = g_strsplit(text, "/", 2);
	GInetAddress *address = g_inet_address_new_from_string(parts[0]);
	guint64 prefix = 0;
	gchar *end = NULL;

	if (parts[1]) {
		prefix = g_ascii_strtoull(parts[1], &end, 10);
		if (!ret_prefix || end == parts[1] || *end ||
		    prefix > (family == G_SOCKET_FAMILY_IPV4 ? 32 : 128))
			g_clear_object(&address);
	}
	if (!address || g_inet_address_get_family(address) != family) {
		g_clear_object(&address);
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--%s %s: expected an IPv%c address%s", option, text,
			    family == G_SOCKET_FAMILY_IPV4 ? '4' : '6',
			    ret_prefix ? " with an optional /PREFIX" : "");
		return NULL;
	}
	/* lwIP gives a static IPv6 address a /64 and no other prefix. */
	if (family == G_SOCKET_FAMILY_IPV6 && parts[1] && prefix != 64) {
		g_clear_object(&address);
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--%s %s: a static IPv6 address is a /64 here; give %s or %s/64",
			    option, text, parts[0], parts[0]);
		return NULL;
	}
	if (ret_prefix)
		*ret_prefix = (guint)prefix;
	return address;
}

/* [ADDR:]PORT, [v6]:PORT. */
static GSocketAddress *
parse_listen(const gchar *text, GError **error)
{
	const gchar *colon = strrchr(text, ':');
	g_autofree gchar *host = colon ? g_strndup(text, (gsize)(colon - text)) : NULL;
	const gchar *port_text = colon ? colon + 1 : text;
	g_autoptr(GInetAddress) ip = NULL;
	gchar *end = NULL;
	guint64 port = g_ascii_strtoull(port_text, &end, 10);
	gsize len = host ? strlen(host) : 0;

	if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
		host[len - 1] = '\0';
		memmove(host, host + 1, len - 1);
	}
	ip = host ? g_inet_address_new_from_string(host)
		  : g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	if (!ip || end == port_text || *end || port == 0 || port > 65535) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--socks %s: expected [ADDR:]PORT, e.g. 1080 or 127.0.0.1:1080", text);
		return NULL;
	}
	return g_inet_socket_address_new(ip, (guint16)port);
}

/* USER:PASSWORD on the first line of @path. */
static gboolean
read_auth(Proxy *proxy, const gchar *path, GError **error)
{
	g_autofree gchar *text = NULL;
	gchar *colon, *nl;

	if (!g_file_get_contents(path, &text, NULL, error)) {
		g_prefix_error(error, "--auth: ");
		return FALSE;
	}
	nl = strpbrk(text, "\r\n");
	if (nl)
		*nl = '\0';
	colon = strchr(text, ':');
	if (!colon || colon == text || !colon[1] || colon - text > 255 || strlen(colon + 1) > 255) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--auth %s: the first line must be USER:PASSWORD, each 1-255 bytes", path);
		return FALSE;
	}
	proxy->auth_user = g_strndup(text, (gsize)(colon - text));
	proxy->auth_password = g_strdup(colon + 1);
	return TRUE;
}

static gboolean
parse_limits(Proxy *proxy, GError **error)
{
	guint64 buffer = PROXY_DEFAULT_BUFFER;

	if (opt_buffer && !cli_parse_size("buffer", opt_buffer, &buffer, error))
		return FALSE;
	if (buffer < 4096 || buffer > 16 * 1024 * 1024 || opt_max_connections < 1 ||
	    opt_connect_timeout < 1) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--buffer must be 4k-16M, --max-connections and --connect-timeout at "
			    "least 1");
		return FALSE;
	}
	proxy->buffer = (gsize)buffer;
	proxy->max_connections = (guint)opt_max_connections;
	proxy->connect_timeout_ms = (guint)opt_connect_timeout * 1000;
	proxy->family = G_SOCKET_FAMILY_INVALID;
	if (!g_strcmp0(opt_names, "ipv4-only"))
		proxy->family = G_SOCKET_FAMILY_IPV4;
	else if (!g_strcmp0(opt_names, "ipv6-only"))
		proxy->family = G_SOCKET_FAMILY_IPV6;
	else if (opt_names && strcmp(opt_names, "ipv4")) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--names %s: expected ipv4, ipv4-only or ipv6-only", opt_names);
		return FALSE;
	}
	return TRUE;
}

static gboolean
parse_device(Main *m, ProxyDeviceConfig *dev, GError **error)
{
	NcmLwipNetifConfig *net = &dev->netif;
	GInetAddress *a;

	memset(dev, 0, sizeof(*dev));
	if (!cli_device_parse(&dev->match, &dev->options, error))
		return FALSE;
	if (opt_usb_fd >= 0 && (opt_persist || opt_tap)) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--usb-fd cannot be combined with --persist or --tap: a replugged device "
			    "needs a new fd");
		return FALSE;
	}
	dev->usb_fd = opt_usb_fd;
	dev->tap = opt_tap;
	dev->persist = opt_persist;
	ncm_lwip_netif_config_init(net);
	net->make_default = TRUE;
	net->dhcp = !opt_ipv4 && !opt_no_dhcp;
	net->ipv6_slaac = !opt_no_slaac;
	net->ipv6_dad = !opt_no_dad;
	if (opt_ipv4) {
		if (!(a = parse_address("ipv4", opt_ipv4, G_SOCKET_FAMILY_IPV4, &net->ipv4_prefix,
					error)))
			return FALSE;
		g_ptr_array_add(m->keep, net->ipv4 = a);
	}
	if (opt_gateway) {
		if (!(a = parse_address("gateway", opt_gateway, G_SOCKET_FAMILY_IPV4, NULL, error)))
			return FALSE;
		g_ptr_array_add(m->keep, net->ipv4_gateway = a);
	}
	if (opt_ipv6) {
		guint prefix6;

		if (!(a = parse_address("ipv6", opt_ipv6, G_SOCKET_FAMILY_IPV6, &prefix6, error)))
			return FALSE;
		g_ptr_array_add(m->keep, net->ipv6 = a);
	}
	return TRUE;
}

static gboolean
parse_options(Main *m, ProxyDeviceConfig *dev, int *argc, char ***argv, GError **error)
{
	if (!cli_parse_options("- SOCKS5 and port forwards into a USB CDC-NCM device, unprivileged", entries,
			       description, argc, argv, error))
		return FALSE;
	if (opt_dns && g_strv_length(opt_dns) > NCM_LWIP_DNS_MAX_SERVERS) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "at most %d --dns servers", NCM_LWIP_DNS_MAX_SERVERS);
		return FALSE;
	}
	if (opt_auth && !read_auth(&m->proxy, opt_auth, error))
		return FALSE;
	return parse_limits(&m->proxy, error) && parse_device(m, dev, error);
}

/* ---- Statistics and signals ----------------------------------------------------------- */

static void
print_stats(gpointer data)
{
	Main *m = data;
	const ProxyCounters *c = &m->proxy.count;
	NcmLwipStats ls;

	ncm_lwip_stack_get_stats(m->proxy.stack, &ls);
	fprintf(stderr, "ncm-proxy: %u connection(s) open, %" G_GUINT64_FORMAT " accepted, %"
		G_GUINT64_FORMAT " refused (--max-connections), %" G_GUINT64_FORMAT " relayed\n",
		c->active, c->accepted, c->refused_limit, c->relays);
	fprintf(stderr, "  bytes: %" G_GUINT64_FORMAT " to the device side, %" G_GUINT64_FORMAT
		" from it\n", c->bytes_out, c->bytes_in);
	fprintf(stderr, "  udp: %" G_GUINT64_FORMAT " associations, %" G_GUINT64_FORMAT
		" datagrams to the device side, %" G_GUINT64_FORMAT " from it, %" G_GUINT64_FORMAT
		" dropped\n", c->udp_associations, c->udp_out,
		__atomic_load_n(&c->udp_in, __ATOMIC_RELAXED), c->udp_drops);
	fprintf(stderr, "  failures: %" G_GUINT64_FORMAT " SOCKS handshakes, %" G_GUINT64_FORMAT
		" logins, %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " lookups, %"
		G_GUINT64_FORMAT " connects\n", c->socks_errors, c->auth_failures,
		c->lookup_failures, c->lookups, c->connect_failures);
	if (m->device)
		proxy_device_print_stats(m->device, stderr);
	fprintf(stderr, "  lwip: %" G_GUINT64_FORMAT " frames in (%" G_GUINT64_FORMAT
		" dropped), %" G_GUINT64_FORMAT " out (%" G_GUINT64_FORMAT " dropped, %"
		G_GUINT64_FORMAT " sparse ahead of the bulk)\n",
		ls.rx_frames, ls.rx_drops, ls.tx_frames, ls.tx_drops, ls.tx_sparse_ahead);
}

static void
on_device_gone(const gchar *why, gpointer data)
{
	Main *m = data;

	g_printerr("ncm-proxy: %s\n", why);
	m->status = EXIT_RUNTIME;
	g_main_loop_quit(m->loop);
}

/* ---- Set-up ------------------------------------------------------------------------- */

static gboolean
setup_socks(Main *m, GError **error)
{
	g_autoptr(GSocketAddress) address = NULL;
	GInetAddress *ip;

	if (opt_no_socks)
		return TRUE;
	address = parse_listen(opt_socks ? opt_socks : "127.0.0.1:1080", error);
	if (!address)
		return FALSE;
	ip = g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(address));
	if (!g_inet_address_get_is_loopback(ip) && !m->proxy.auth_user && !opt_no_auth) {
		g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
			    "--socks %s is reachable from other hosts: require a login with --auth "
			    "FILE, or say --no-auth", opt_socks);
		return FALSE;
	}
	m->socks = proxy_socks_server_new(&m->proxy, address, error);
	return m->socks != NULL;
}

static gboolean
setup_forwards(Main *m, GError **error)
{
	gchar **lists[2] = { opt_local, opt_remote };

	for (guint l = 0; l < 2; l++) {
		for (guint i = 0; lists[l] && lists[l][i]; i++) {
			ProxyForwardSpec spec;
			ProxyForward *f;

			if (!proxy_forward_parse(lists[l][i], &spec, error))
				return FALSE;
			f = l == 0 ? proxy_forward_local_new(&m->proxy, &spec, error)
				   : proxy_forward_remote_new(&m->proxy, &spec, error);
			proxy_forward_spec_clear(&spec);
			if (!f)
				return FALSE;
			g_ptr_array_add(m->forwards, f);
		}
	}
	return TRUE;
}

static gboolean
setup_dns(Main *m, GError **error)
{
	for (guint i = 0; opt_dns && opt_dns[i]; i++) {
		g_autoptr(GInetAddress) a = g_inet_address_new_from_string(opt_dns[i]);

		if (!a) {
			g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
				    "--dns %s: expected an IPv4 or IPv6 address", opt_dns[i]);
			return FALSE;
		}
		ncm_lwip_stack_set_dns_server(m->proxy.stack, i, a);
	}
	return TRUE;
}

/*
 * Listeners first: a port in use fails before the device is claimed (and
 * cdc_ncm loses it for nothing). -R listens on lwIP, which needs no netif.
 * They accept once the device is open: a client that connects during
 * --apple-switch's wait is served when the phone is back, not refused.
 */
static gboolean
setup(Main *m, const ProxyDeviceConfig *dev, GError **error)
{
	if (!setup_dns(m, error) || !setup_socks(m, error) || !setup_forwards(m, error))
		return FALSE;
	m->device = proxy_device_open(m->proxy.stack, dev, on_device_gone, m, error);
	if (!m->device)
		return FALSE;
	if (m->socks)
		g_socket_service_start(m->socks);
	for (guint i = 0; i < m->forwards->len; i++)
		proxy_forward_start(m->forwards->pdata[i]);
	return TRUE;
}

static void
cleanup(Main *m)
{
	proxy_relay_close_all(&m->proxy);
	proxy_udp_close_all(&m->proxy);
	if (m->socks) {
		g_socket_service_stop(m->socks);
		g_socket_listener_close(G_SOCKET_LISTENER(m->socks));
		g_object_unref(m->socks);
	}
	g_ptr_array_unref(m->forwards);
	/* What was cancelled above finishes (and frees itself) in its callbacks. */
	while (g_main_context_iteration(NULL, FALSE))
		;
	if (m->device) {
		print_stats(m);
		proxy_device_free(m->device);
	}
	g_ptr_array_unref(m->keep);
	g_object_unref(m->proxy.stack);
	g_free(m->proxy.auth_user);
	g_free(m->proxy.auth_password);
	g_main_context_release(NULL);
	g_main_loop_unref(m->loop);
}

int
main(int argc, char **argv)
{
	Main m = { .status = EXIT_OK };
	ProxyDeviceConfig dev;
	g_autoptr(GError) error = NULL;

	m.keep = g_ptr_array_new_with_free_func(g_object_unref);
	m.forwards = g_ptr_array_new_with_free_func((GDestroyNotify)proxy_forward_free);
	if (!parse_options(&m, &dev, &argc, &argv, &error)) {
		fprintf(stderr, "ncm-proxy: %s\n", error->message);
		g_ptr_array_unref(m.forwards);
		g_ptr_array_unref(m.keep);
		g_free(m.proxy.auth_user);
		g_free(m.proxy.auth_password);
		return EXIT_SETUP;
	}
	/* A client that goes away mid-write must not kill the proxy. */
	signal(SIGPIPE, SIG_IGN);
	m.loop = g_main_loop_new(NULL, FALSE);
	/* Held for the whole run, as in ncm-tun: posts from the libusb
	 * thread must not acquire a free default context and run there. */
	g_main_context_acquire(NULL);
	m.signals = (CliSignals){ m.loop, print_stats, &m };
	cli_signals_add(&m.signals);
	m.proxy.stack = ncm_lwip_stack_get_default();
	if (!setup(&m, &dev, &error)) {
		fprintf(stderr, "ncm-proxy: %s\n", error->message);
		/* A signal during setup is a stop, as later. */
		m.status = g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ? EXIT_OK
										    : EXIT_SETUP;
		cleanup(&m);
		return m.status;
	}
	g_message("running on %s%s%s (SIGUSR1 prints statistics, SIGINT/SIGTERM stop)",
		  proxy_device_describe(m.device), m.socks ? ", SOCKS5 on " : "",
		  m.socks ? (opt_socks ? opt_socks : "127.0.0.1:1080") : "");
	g_main_loop_run(m.loop);
	cleanup(&m);
	return m.status;
}
