/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-client: TCP over an NCM device through the in-process lwIP stack, no privileges needed. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <gio/gio.h>
#include <gio/gunixinputstream.h>
#include <gio/gunixoutputstream.h>
#include <ncm.h>

#include "ncm-link.h"
#include "ncm-lwip.h"

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_SETUP = 2 };

static gchar **opt_device;
static gchar *opt_tap;
static gchar *opt_ipv4;
static gchar *opt_gateway;
static gchar *opt_ipv6;
static gboolean opt_dhcp;
static gboolean opt_no_dad;
static gchar *opt_connect;
static gint opt_listen = -1;
static gint opt_send_mib;
static gboolean opt_sink;
static gint opt_timeout_ms = 10000;

static const GOptionEntry entries[] = {
	{"device", 'd', 0, G_OPTION_ARG_STRING_ARRAY, &opt_device,
	 "Select the NCM function: VID:PID, serial=S, path=.., mac=.. (repeat to combine)", "SEL"},
	{"tap", 0, 0, G_OPTION_ARG_STRING, &opt_tap,
	 "Use a new TAP interface NAME instead of a USB device (needs root; for testing)", "NAME"},
	{"ipv4", '4', 0, G_OPTION_ARG_STRING, &opt_ipv4, "Static IPv4 address, e.g. 192.168.79.2/24",
	 "ADDR/PREFIX"},
	{"gateway", 'g', 0, G_OPTION_ARG_STRING, &opt_gateway, "IPv4 gateway", "ADDR"},
	{"ipv6", '6', 0, G_OPTION_ARG_STRING, &opt_ipv6, "Static IPv6 address (/64)", "ADDR"},
	{"dhcp", 0, 0, G_OPTION_ARG_NONE, &opt_dhcp, "Lease IPv4 by DHCP", NULL},
	{"no-dad", 0, 0, G_OPTION_ARG_NONE, &opt_no_dad, "Use IPv6 addresses without probing", NULL},
	{"connect", 'c', 0, G_OPTION_ARG_STRING, &opt_connect,
	 "Connect to ADDR:PORT ([v6]:PORT) and copy stdin to it and it to stdout", "ADDR:PORT"},
	{"listen", 'l', 0, G_OPTION_ARG_INT, &opt_listen,
	 "Serve PORT: echo every connection (server mode)", "PORT"},
	{"send", 's', 0, G_OPTION_ARG_INT, &opt_send_mib,
	 "Instead of stdin (or echoing), send N MiB of test data, then report throughput", "N"},
	{"sink", 0, 0, G_OPTION_ARG_NONE, &opt_sink,
	 "Discard and count what arrives instead of printing (or echoing) it", NULL},
	{"timeout", 't', 0, G_OPTION_ARG_INT, &opt_timeout_ms, "Connect timeout (default 10000)",
	 "MS"},
	{0},
};

/* ---- The link -------------------------------------------------------------------- */

static NcmLink *
open_tap(GError **error)
{
	static const guint8 mac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
	struct ifreq ifr = {0};
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	g_strlcpy(ifr.ifr_name, opt_tap, IFNAMSIZ);
	if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) < 0) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
			    "cannot create TAP %s: %s (run as root)", opt_tap, g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	return ncm_link_new_for_tap_fd(fd, mac, 1514);
}

static NcmLink *
open_device(NcmContext **ret_ctx, GError **error)
{
	g_autoptr(GPtrArray) all = NULL;
	g_autoptr(NcmDevice) dev = NULL;
	NcmDeviceOptions options;
	NcmMatch match = {0};

	for (guint i = 0; opt_device != NULL && opt_device[i] != NULL; i++)
		if (!ncm_match_parse(&match, opt_device[i], error))
			return NULL;
	*ret_ctx = ncm_context_new(error);
	if (*ret_ctx == NULL || (all = ncm_context_enumerate(*ret_ctx, &match, error)) == NULL)
		return NULL;
	if (all->len == 0) {
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
				    "no USB CDC-NCM function found (see ncm-probe)");
		return NULL;
	}
	ncm_device_options_init(&options);
	dev = ncm_device_open(*ret_ctx, g_ptr_array_index(all, 0), &options, error);
	return dev ? ncm_link_new_for_device(dev) : NULL;
}

static gboolean
parse_prefixed(const char *text, GInetAddress **ret_addr, guint *ret_prefix, GError **error)
{
	g_auto(GStrv) parts = g_strsplit(text, "/", 2);

	*ret_addr = g_inet_address_new_from_string(parts[0]);
	*ret_prefix = parts[1] ? (guint)g_ascii_strtoull(parts[1], NULL, 10) : 0;
	if (*ret_addr == NULL)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "bad address %s", text);
	return *ret_addr != NULL;
}

static NcmLwipNetif *
add_netif(NcmLwipStack *stack, NcmLink *link, GError **error)
{
	g_autoptr(GInetAddress) v4 = NULL;
	g_autoptr(GInetAddress) gw = NULL;
	g_autoptr(GInetAddress) v6 = NULL;
	NcmLwipNetifConfig config;
	guint prefix6;

	ncm_lwip_netif_config_init(&config);
	if (opt_ipv4 && !parse_prefixed(opt_ipv4, &v4, &config.ipv4_prefix, error))
		return NULL;
	if (opt_gateway && !parse_prefixed(opt_gateway, &gw, &prefix6, error))
		return NULL;
	if (opt_ipv6 && !parse_prefixed(opt_ipv6, &v6, &prefix6, error))
		return NULL;
	config.ipv4 = v4;
	config.ipv4_gateway = gw;
	config.ipv6 = v6;
	config.dhcp = opt_dhcp;
	config.ipv6_dad = !opt_no_dad;
	config.make_default = TRUE;
	return ncm_lwip_netif_add(stack, link, &config, error);
}

/* ---- Bulk data (blocking, from plain threads) ------------------------------------------- */

static gpointer
send_thread(gpointer data)
{
	GOutputStream *out = data;
	g_autofree guint8 *buf = g_malloc(256 * 1024);
	gint64 t0 = g_get_monotonic_time();
	gsize total = (gsize)opt_send_mib * 1024 * 1024;
	g_autoptr(GError) error = NULL;

	for (gsize i = 0; i < 256 * 1024; i++)
		buf[i] = (guint8)(i * 7);
	for (gsize done = 0; done < total && error == NULL; done += 256 * 1024)
		g_output_stream_write_all(out, buf, MIN(256 * 1024, total - done), NULL, NULL, &error);
	g_output_stream_close(out, NULL, error ? NULL : &error);
	if (error != NULL)
		g_printerr("send: %s\n", error->message);
	else
		g_printerr("sent %d MiB in %.2f s: %.0f Mbit/s\n", opt_send_mib,
			   (double)(g_get_monotonic_time() - t0) / 1e6,
			   (double)total * 8 / (double)(g_get_monotonic_time() - t0));
	return NULL;
}

/* Reads to EOF, counting (or echoing to stdout). */
static gboolean
receive_all(GInputStream *in, gboolean to_stdout)
{
	g_autofree guint8 *buf = g_malloc(256 * 1024);
	g_autoptr(GError) error = NULL;
	gint64 t0 = g_get_monotonic_time();
	gsize total = 0;
	gssize n;

	while ((n = g_input_stream_read(in, buf, 256 * 1024, NULL, &error)) > 0) {
		total += (gsize)n;
		if (to_stdout && fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			break;
	}
	if (n < 0) {
		g_printerr("receive: %s\n", error->message);
		return FALSE;
	}
	if (!to_stdout)
		g_printerr("received %" G_GSIZE_FORMAT " bytes in %.2f s: %.0f Mbit/s\n", total,
			   (double)(g_get_monotonic_time() - t0) / 1e6,
			   (double)total * 8 / (double)MAX(g_get_monotonic_time() - t0, 1));
	return TRUE;
}

/* One connection, both directions: stdin or test data out, stdout or sink in. */
static gboolean
run_connection(NcmLwipConnection *conn)
{
	GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(conn));
	GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(conn));
	g_autoptr(GInputStream) stdin_stream = NULL;
	GThread *sender;
	gboolean ok;

	if (opt_send_mib > 0) {
		sender = g_thread_new("send", send_thread, out);
	} else {
		stdin_stream = g_unix_input_stream_new(STDIN_FILENO, FALSE);
		sender = NULL;
		/* Splice on a thread's main context would work as well; a
		 * plain blocking splice keeps the example short. */
		g_output_stream_splice(out, stdin_stream, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL,
				       NULL);
	}
	ok = receive_all(in, !opt_sink);
	if (sender != NULL)
		g_thread_join(sender);
	g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
	return ok;
}

static gpointer
connection_thread(gpointer data)
{
	g_autoptr(NcmLwipConnection) conn = data;

	run_connection(conn);
	return NULL;
}

/* ---- Server mode: async echo on the main context -------------------------------------- */

static void
echo_done(GObject *source, GAsyncResult *result, gpointer data)
{
	NcmLwipConnection *conn = data;
	g_autoptr(GError) error = NULL;

	if (g_output_stream_splice_finish(G_OUTPUT_STREAM(source), result, &error) < 0)
		g_printerr("echo: %s\n", error->message);
	g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
	g_object_unref(conn);
}

static void
accepted(GObject *source, GAsyncResult *result, gpointer data)
{
	NcmLwipListener *listener = NCM_LWIP_LISTENER(source);
	g_autoptr(GError) error = NULL;
	NcmLwipConnection *conn = ncm_lwip_listener_accept_finish(listener, result, &error);

	if (conn == NULL) {
		g_printerr("accept: %s\n", error->message);
		g_main_loop_quit(data);
		return;
	}
	if (opt_send_mib > 0 || opt_sink) {
		/* Benchmarks block: give each its own thread. */
		g_thread_unref(g_thread_new("conn", connection_thread, conn));
	} else {
		g_output_stream_splice_async(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
					     g_io_stream_get_input_stream(G_IO_STREAM(conn)),
					     G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, G_PRIORITY_DEFAULT,
					     NULL, echo_done, conn);
	}
	ncm_lwip_listener_accept_async(listener, NULL, accepted, data);
}

static int
serve(NcmLwipStack *stack, GError **error)
{
	g_autoptr(GInetSocketAddress) any = NULL;
	g_autoptr(NcmLwipListener) listener = NULL;
	g_autoptr(GMainLoop) loop = g_main_loop_new(NULL, FALSE);
	g_autoptr(GInetAddress) any6 = g_inet_address_new_any(G_SOCKET_FAMILY_IPV6);

	any = G_INET_SOCKET_ADDRESS(g_inet_socket_address_new(any6, (guint16)opt_listen));
	listener = ncm_lwip_stack_listen(stack, any, 0, error);
	if (listener == NULL)
		return EXIT_SETUP;
	g_printerr("listening on port %u\n", ncm_lwip_listener_get_port(listener));
	ncm_lwip_listener_accept_async(listener, NULL, accepted, loop);
	g_main_loop_run(loop);
	return EXIT_RUNTIME;
}

static GInetSocketAddress *
parse_host_port(const char *text, GError **error)
{
	const char *colon = strrchr(text, ':');
	g_autofree char *host = NULL;
	GSocketAddress *addr = NULL;

	if (colon != NULL) {
		host = g_strndup(text, (gsize)(colon - text));
		if (host[0] == '[' && host[strlen(host) - 1] == ']') {
			memmove(host, host + 1, strlen(host));
			host[strlen(host) - 1] = '\0';
		}
		addr = g_inet_socket_address_new_from_string(host, (guint)atoi(colon + 1));
	}
	if (addr == NULL)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "bad ADDR:PORT %s (numeric addresses only)", text);
	return G_INET_SOCKET_ADDRESS(addr);
}

int
main(int argc, char **argv)
{
	g_autoptr(GOptionContext) oc = g_option_context_new("- TCP over NCM through lwIP");
	g_autoptr(NcmLwipStack) stack = NULL;
	g_autoptr(NcmContext) ctx = NULL;
	g_autoptr(GError) error = NULL;
	NcmLwipNetif *netif = NULL;
	NcmLink *link;
	int ret = EXIT_SETUP;

	g_option_context_add_main_entries(oc, entries, NULL);
	if (!g_option_context_parse(oc, &argc, &argv, &error))
		goto out;
	if ((opt_connect == NULL) == (opt_listen < 0)) {
		g_set_error_literal(&error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
				    "give exactly one of --connect and --listen");
		goto out;
	}
	link = opt_tap ? open_tap(&error) : open_device(&ctx, &error);
	stack = ncm_lwip_stack_get_default();
	if (link == NULL || (netif = add_netif(stack, link, &error)) == NULL)
		goto out;
	if (!opt_no_dad && opt_ipv6)
		g_usleep(1500 * 1000); /* one DAD probe, see lwipopts.h */
	if (opt_listen >= 0) {
		ret = serve(stack, &error);
	} else {
		g_autoptr(GInetSocketAddress) addr = parse_host_port(opt_connect, &error);
		g_autoptr(NcmLwipConnection) conn = NULL;

		if (addr != NULL)
			conn = ncm_lwip_stack_connect(stack, addr, (guint)opt_timeout_ms, NULL, &error);
		if (conn != NULL)
			ret = run_connection(conn) ? EXIT_OK : EXIT_RUNTIME;
		else
			ret = EXIT_RUNTIME;
	}
out:
	if (error != NULL)
		g_printerr("ncm-lwip-client: %s\n", error->message);
	g_clear_object(&netif);
	return ret;
}
