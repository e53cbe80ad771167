/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-socks-udp.c: a BenchUdp through a SOCKS5 UDP ASSOCIATE (ncm-proxy's UDP), for the proxy path. */
#include <string.h>
#include <sys/socket.h>

#include "ncm-bench-transport.h"

/* As the kernel path's: a path that died must end the test, not the run. */
#define SOCKS_TIMEOUT_S 20
/* RSV RSV FRAG ATYP(IPv4) ADDR PORT: what every datagram carries each way. */
#define SOCKS_UDP_HDR 10
#define SOCKS_UDP_MAX 65535

typedef struct {
	BenchUdp base;
	GSocket *control;   /* the association lives as long as this TCP connection */
	GSocket *sock;      /* connected to the relay's address */
	guint8 head[SOCKS_UDP_HDR];
	guint8 buf[SOCKS_UDP_HDR + SOCKS_UDP_MAX];
} SocksUdp;

static gssize
socks_udp_send(BenchUdp *u, const void *data, gsize len, GError **error)
{
	SocksUdp *s = (SocksUdp *)u;
	g_autoptr(GError) local = NULL;
	gssize n;

	if (len > SOCKS_UDP_MAX)
		len = SOCKS_UDP_MAX;
	memcpy(s->buf, s->head, SOCKS_UDP_HDR);
	memcpy(s->buf + SOCKS_UDP_HDR, data, len);
	n = g_socket_send_with_blocking(s->sock, (const gchar *)s->buf, SOCKS_UDP_HDR + len, FALSE,
					NULL, &local);
	if (n >= SOCKS_UDP_HDR)
		return n - SOCKS_UDP_HDR;
	if (n >= 0 || g_error_matches(local, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK) ||
	    g_error_matches(local, G_IO_ERROR, G_IO_ERROR_NO_SPACE))
		return 0;
	g_propagate_error(error, g_steal_pointer(&local));
	return -1;
}

/* Only datagrams with the header a SOCKS5 server puts on an IPv4 sender's. */
static gssize
socks_udp_recv(BenchUdp *u, void *data, gsize len, gint64 timeout_us, GError **error)
{
	SocksUdp *s = (SocksUdp *)u;
	g_autoptr(GError) local = NULL;
	gssize n;

	if (timeout_us > 0 &&
	    !g_socket_condition_timed_wait(s->sock, G_IO_IN, timeout_us, NULL, NULL))
		return 0;
	n = g_socket_receive_with_blocking(s->sock, (gchar *)s->buf, sizeof s->buf, FALSE, NULL,
					   &local);
	if (n < 0 && g_error_matches(local, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
		return 0;
	if (n < 0) {
		g_propagate_error(error, g_steal_pointer(&local));
		return -1;
	}
	if (n < SOCKS_UDP_HDR || s->buf[0] || s->buf[1] || s->buf[2] || s->buf[3] != 1)
		return 0;
	n -= SOCKS_UDP_HDR;
	memcpy(data, s->buf + SOCKS_UDP_HDR, MIN((gsize)n, len));
	return n;
}

static void
socks_udp_close(BenchUdp *u)
{
	SocksUdp *s = (SocksUdp *)u;

	g_clear_object(&s->sock);
	g_clear_object(&s->control);
	g_free(s);
}

static gboolean
exchange(GSocket *sock, const guint8 *out, gsize out_len, guint8 *in, gsize in_len,
	 GError **error)
{
	gsize got = 0;

	if (g_socket_send(sock, (const gchar *)out, out_len, NULL, error) != (gssize)out_len)
		return FALSE;
	while (got < in_len) {
		gssize n = g_socket_receive(sock, (gchar *)in + got, in_len - got, NULL, error);

		if (n <= 0)
			return FALSE;
		got += (gsize)n;
	}
	return TRUE;
}

/* The SOCKS5 handshake (no authentication) and UDP ASSOCIATE; the relay's IPv4 address. */
static GSocketAddress *
associate(GSocket *control, GError **error)
{
	static const guint8 greeting[] = { 5, 1, 0 };
	static const guint8 request[] = { 5, 3, 0, 1, 0, 0, 0, 0, 0, 0 };
	guint8 method[2], reply[10];
	g_autoptr(GInetAddress) ip = NULL;

	if (!exchange(control, greeting, sizeof greeting, method, sizeof method, error) ||
	    !exchange(control, request, sizeof request, reply, sizeof reply, error))
		return NULL;
	if (method[1] != 0 || reply[1] != 0 || reply[3] != 1) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
			    "the SOCKS server refused UDP ASSOCIATE (method %u, reply %u)", method[1],
			    reply[1]);
		return NULL;
	}
	ip = g_inet_address_new_from_bytes(reply + 4, G_SOCKET_FAMILY_IPV4);
	return g_inet_socket_address_new(ip, (guint16)(reply[8] << 8 | reply[9]));
}

BenchUdp *
bench_socks_udp_open(GInetSocketAddress *socks, GInetAddress *server, guint16 port,
		     GError **error)
{
	g_autoptr(GSocket) control = g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
						  G_SOCKET_PROTOCOL_TCP, error);
	g_autoptr(GSocket) sock = NULL;
	g_autoptr(GSocketAddress) relay = NULL;
	SocksUdp *s;

	if (g_inet_address_get_family(server) != G_SOCKET_FAMILY_IPV4) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
			    "the proxy path's UDP needs an IPv4 server");
		return NULL;
	}
	if (!control)
		return NULL;
	g_socket_set_timeout(control, SOCKS_TIMEOUT_S);
	if (!g_socket_connect(control, G_SOCKET_ADDRESS(socks), NULL, error) ||
	    !(relay = associate(control, error)))
		return NULL;
	sock = g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM, G_SOCKET_PROTOCOL_UDP,
			    error);
	if (!sock || !g_socket_connect(sock, relay, NULL, error))
		return NULL;
	g_socket_set_option(sock, SOL_SOCKET, SO_SNDBUF, 4 << 20, NULL);
	g_socket_set_option(sock, SOL_SOCKET, SO_RCVBUF, 4 << 20, NULL);
	s = g_new0(SocksUdp, 1);
	s->base.send = socks_udp_send;
	s->base.recv = socks_udp_recv;
	s->base.close = socks_udp_close;
	s->head[3] = 1;
	memcpy(s->head + 4, g_inet_address_to_bytes(server), 4);
	s->head[8] = (guint8)(port >> 8);
	s->head[9] = (guint8)port;
	s->control = g_steal_pointer(&control);
	s->sock = g_steal_pointer(&sock);
	return &s->base;
}
