/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tcp-cat: connects over the in-process lwIP stack to a TCP server on the first NCM device and copies stdin to it and it to stdout. */
#include <gio/gunixinputstream.h>
#include <gio/gunixoutputstream.h>
#include <ncm-lwip.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/*
 * Build: cc ncm-tcp-cat.c $(pkg-config --cflags --libs libncm-lwip gio-unix-2.0)
 * Run:   ncm-tcp-cat 192.168.7.2/24 192.168.7.1 7   (our address, the server, its port)
 * No root: lwIP runs in this process, the device needs only usbfs access.
 */

/* A thread of its own: stdin to the connection, then FIN (the output
 * stream's close), while the main thread keeps reading. */
static gpointer
send_stdin(gpointer out)
{
	g_autoptr(GInputStream) in = g_unix_input_stream_new(STDIN_FILENO, FALSE);
	g_autoptr(GError) error = NULL;

	if (g_output_stream_splice(out, in, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL, &error) < 0)
		fprintf(stderr, "ncm-tcp-cat: send: %s\n", error->message);
	return NULL;
}

static NcmDevice *
open_first_device(NcmContext *ctx, GError **error)
{
	g_autoptr(GPtrArray) found = ncm_context_enumerate(ctx, NULL, error);

	if (found != NULL && found->len == 0)
		g_set_error_literal(error, NCM_ERROR, NCM_ERROR_NOT_FOUND, "no NCM function found");
	if (found == NULL || found->len == 0)
		return NULL;
	return ncm_device_open(ctx, found->pdata[0], NULL, error);
}

static NcmLwipNetif *
add_netif(NcmLwipStack *stack, NcmDevice *dev, const char *cidr, GError **error)
{
	g_auto(GStrv) parts = g_strsplit(cidr, "/", 2);
	g_autoptr(GInetAddress) ip = g_inet_address_new_from_string(parts[0]);
	NcmLwipNetifConfig config;

	if (ip == NULL) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "bad address %s", cidr);
		return NULL;
	}
	ncm_lwip_netif_config_init(&config);
	config.ipv4 = ip; /* borrowed for the call */
	config.ipv4_prefix = parts[1] ? (guint)g_ascii_strtoull(parts[1], NULL, 10) : 24;
	return ncm_lwip_stack_add_device(stack, dev, &config, error);
}

int
main(int argc, char **argv)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(NcmContext) ctx = NULL;
	g_autoptr(NcmDevice) dev = NULL;
	g_autoptr(NcmLwipStack) stack = ncm_lwip_stack_get_default();
	g_autoptr(NcmLwipNetif) netif = NULL;
	g_autoptr(GSocketAddress) server = NULL;
	g_autoptr(NcmLwipConnection) conn = NULL;
	g_autoptr(GOutputStream) out = g_unix_output_stream_new(STDOUT_FILENO, FALSE);
	GThread *sender;

	if (argc != 4) {
		fprintf(stderr, "usage: ncm-tcp-cat OUR_IPV4/PREFIX SERVER PORT\n");
		return 2;
	}
	server = g_inet_socket_address_new_from_string(argv[2], (guint)atoi(argv[3]));
	if (server == NULL) {
		fprintf(stderr, "ncm-tcp-cat: bad server address %s\n", argv[2]);
		return 2;
	}
	if ((ctx = ncm_context_new(&error)) == NULL || (dev = open_first_device(ctx, &error)) == NULL ||
	    (netif = add_netif(stack, dev, argv[1], &error)) == NULL ||
	    (conn = ncm_lwip_stack_connect(stack, G_INET_SOCKET_ADDRESS(server), 10000, NULL,
					   &error)) == NULL) {
		fprintf(stderr, "ncm-tcp-cat: %s\n", error->message);
		return 1;
	}
	sender = g_thread_new("stdin", send_stdin, g_io_stream_get_output_stream(G_IO_STREAM(conn)));
	/* The server's bytes until its FIN. */
	if (g_output_stream_splice(out, g_io_stream_get_input_stream(G_IO_STREAM(conn)),
				   G_OUTPUT_STREAM_SPLICE_NONE, NULL, &error) < 0)
		fprintf(stderr, "ncm-tcp-cat: receive: %s\n", error->message);
	g_thread_join(sender);
	g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
	/* Cleanup runs in reverse order: the netif's unref closes the device. */
	return error != NULL;
}
