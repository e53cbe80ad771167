/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-transport-kernel.c: ncm-bench's paths over kernel sockets (cdc_ncm, ncm-tun's TAP, loopback). */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ncm-bench-transport.h"

/* Timeouts: a path that died must end the test, not the run. */
#define KERNEL_TIMEOUT_S 20

typedef struct {
	BenchUdp base;
	GSocket *sock;
} KernelUdp;

static GSocket *
kernel_socket(BenchTransport *t, GSocketType type, GSocketProtocol proto, GError **error)
{
	g_autoptr(GSocket) sock = g_socket_new(g_inet_address_get_family(t->server), type, proto, error);

	if (!sock)
		return NULL;
	if (t->iface && setsockopt(g_socket_get_fd(sock), SOL_SOCKET, SO_BINDTODEVICE, t->iface,
				   (socklen_t)strlen(t->iface)) < 0) {
		int e = errno;

		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
			    "cannot bind to interface %s: %s (needs root or CAP_NET_RAW)", t->iface,
			    g_strerror(e));
		return NULL;
	}
	g_socket_set_timeout(sock, KERNEL_TIMEOUT_S);
	return g_steal_pointer(&sock);
}

static GIOStream *
kernel_tcp_connect(BenchTransport *t, GError **error)
{
	g_autoptr(GSocket) sock = kernel_socket(t, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, error);
	g_autoptr(GSocketAddress) addr = NULL;

	if (!sock)
		return NULL;
	addr = g_inet_socket_address_new(t->server, t->port);
	if (!g_socket_connect(sock, addr, NULL, error))
		return NULL;
	g_socket_set_option(sock, IPPROTO_TCP, TCP_NODELAY, 1, NULL);
	return G_IO_STREAM(g_socket_connection_factory_create_connection(sock));
}

static gssize
kernel_udp_send(BenchUdp *u, const void *buf, gsize len, GError **error)
{
	KernelUdp *k = (KernelUdp *)u;
	g_autoptr(GError) local = NULL;
	gssize n = g_socket_send_with_blocking(k->sock, buf, len, FALSE, NULL, &local);

	if (n >= 0)
		return n;
	/* A full queue or ICMP feedback from the last datagram is no reason to stop. */
	if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK) ||
	    g_error_matches(local, G_IO_ERROR, G_IO_ERROR_NO_SPACE) ||
	    g_error_matches(local, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED))
		return 0;
	g_propagate_error(error, g_steal_pointer(&local));
	return -1;
}

static gssize
kernel_udp_recv(BenchUdp *u, void *buf, gsize len, gint64 timeout_us, GError **error)
{
	KernelUdp *k = (KernelUdp *)u;
	g_autoptr(GError) local = NULL;
	gssize n;

	if (timeout_us > 0 && !g_socket_condition_timed_wait(k->sock, G_IO_IN, timeout_us, NULL, NULL))
		return 0;
	n = g_socket_receive_with_blocking(k->sock, buf, len, FALSE, NULL, &local);
	if (n >= 0)
		return n;
	if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK) ||
	    g_error_matches(local, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED))
		return 0;
	g_propagate_error(error, g_steal_pointer(&local));
	return -1;
}

static void
kernel_udp_close(BenchUdp *u)
{
	KernelUdp *k = (KernelUdp *)u;

	g_object_unref(k->sock);
	g_free(k);
}

/* The route's MTU as the kernel knows it for this destination. */
static guint
kernel_udp_mtu(GSocket *sock, gboolean v6)
{
	gint mtu = 0;

	if (!g_socket_get_option(sock, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU : IP_MTU, &mtu,
				 NULL))
		return 0;
	return mtu > 0 ? (guint)mtu : 0;
}

static BenchUdp *
kernel_udp_open(BenchTransport *t, guint16 port, GError **error)
{
	g_autoptr(GSocket) sock = kernel_socket(t, G_SOCKET_TYPE_DATAGRAM, G_SOCKET_PROTOCOL_UDP, error);
	g_autoptr(GSocketAddress) addr = NULL;
	KernelUdp *k;

	if (!sock)
		return NULL;
	addr = g_inet_socket_address_new(t->server, port);
	if (!g_socket_connect(sock, addr, NULL, error))
		return NULL;
	/* Big buffers: the auto-rate probe must be limited by the path, not by us. */
	g_socket_set_option(sock, SOL_SOCKET, SO_SNDBUF, 4 << 20, NULL);
	g_socket_set_option(sock, SOL_SOCKET, SO_RCVBUF, 4 << 20, NULL);
	k = g_new0(KernelUdp, 1);
	k->base.send = kernel_udp_send;
	k->base.recv = kernel_udp_recv;
	k->base.close = kernel_udp_close;
	k->base.mtu = kernel_udp_mtu(sock, g_inet_address_get_family(t->server) == G_SOCKET_FAMILY_IPV6);
	if (t->mtu && (k->base.mtu == 0 || t->mtu < k->base.mtu))
		k->base.mtu = t->mtu;
	k->sock = g_steal_pointer(&sock);
	return &k->base;
}

static void
kernel_free(BenchTransport *t)
{
	g_free(t->name);
	g_free(t->iface);
	g_clear_object(&t->server);
	g_free(t);
}

static const BenchTransportOps kernel_ops = {
	.tcp_connect = kernel_tcp_connect,
	.udp_open = kernel_udp_open,
	.main_dispatches = NULL,
	.env = NULL,
	.free = kernel_free,
};

/* The interface MTU (SIOCGIFMTU), 0 when unknown. */
static guint
iface_mtu(const char *iface)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	guint mtu = 0;

	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	g_strlcpy(ifr.ifr_name, iface, IFNAMSIZ);
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		mtu = (guint)ifr.ifr_mtu;
	close(fd);
	return mtu;
}

BenchTransport *
bench_transport_kernel_new(const char *name, GInetAddress *server, guint16 port, const char *iface)
{
	BenchTransport *t = g_new0(BenchTransport, 1);

	t->ops = &kernel_ops;
	t->name = g_strdup(name);
	t->server = g_object_ref(server);
	t->port = port;
	t->iface = g_strdup(iface);
	t->mtu = iface ? iface_mtu(iface) : 0;
	return t;
}

void
bench_transport_free(BenchTransport *t)
{
	if (t)
		t->ops->free(t);
}
