/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-stream.c: what ncm-proxy does alike to kernel sockets and lwIP connections: half-close, reset, naming the peer. */
#include <errno.h>
#include <sys/socket.h>

#include "ncm-proxy.h"

void
proxy_stream_shutdown_write(GIOStream *stream)
{
	/* Closing a GSocketConnection's output stream does nothing to the
	 * socket; an lwIP connection's sends FIN and keeps receiving. */
	if (G_IS_SOCKET_CONNECTION(stream))
		g_socket_shutdown(g_socket_connection_get_socket(G_SOCKET_CONNECTION(stream)), FALSE,
				  TRUE, NULL);
	else
		g_output_stream_close(g_io_stream_get_output_stream(stream), NULL, NULL);
}

void
proxy_stream_abort(GIOStream *stream)
{
	if (NCM_LWIP_IS_CONNECTION(stream)) {
		ncm_lwip_connection_abort(NCM_LWIP_CONNECTION(stream));
		return;
	}
	/* A zero linger time makes the kernel's close send RST. */
	if (G_IS_SOCKET_CONNECTION(stream)) {
		struct linger l = { .l_onoff = 1, .l_linger = 0 };
		GSocket *s = g_socket_connection_get_socket(G_SOCKET_CONNECTION(stream));

		if (setsockopt(g_socket_get_fd(s), SOL_SOCKET, SO_LINGER, &l, sizeof(l)) < 0)
			g_debug("SO_LINGER: %s", g_strerror(errno));
	}
	g_io_stream_close(stream, NULL, NULL);
}

gchar *
proxy_address_to_string(GSocketAddress *address)
{
	GInetSocketAddress *inet;
	g_autofree gchar *ip = NULL;

	if (!G_IS_INET_SOCKET_ADDRESS(address))
		return g_strdup("?");
	inet = G_INET_SOCKET_ADDRESS(address);
	ip = g_inet_address_to_string(g_inet_socket_address_get_address(inet));
	if (g_inet_address_get_family(g_inet_socket_address_get_address(inet)) ==
	    G_SOCKET_FAMILY_IPV6)
		return g_strdup_printf("[%s]:%u", ip, g_inet_socket_address_get_port(inet));
	return g_strdup_printf("%s:%u", ip, g_inet_socket_address_get_port(inet));
}

gchar *
proxy_stream_describe_peer(GIOStream *stream)
{
	g_autoptr(GSocketAddress) address = NULL;

	if (NCM_LWIP_IS_CONNECTION(stream))
		return proxy_address_to_string(G_SOCKET_ADDRESS(
			ncm_lwip_connection_get_remote_address(NCM_LWIP_CONNECTION(stream))));
	if (G_IS_SOCKET_CONNECTION(stream))
		address = g_socket_connection_get_remote_address(G_SOCKET_CONNECTION(stream), NULL);
	return address ? proxy_address_to_string(address) : g_strdup("?");
}
