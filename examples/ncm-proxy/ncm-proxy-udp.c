/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-udp.c: SOCKS5 UDP ASSOCIATE: a host UDP socket for the client, an lwIP UDP socket on the device side, headers added and removed. */
#include <string.h>
#include <sys/socket.h>

#include "ncm-proxy-socks.h"
#include "ncm-proxy.h"

/*
 * One association per SOCKS control connection, which it outlives by
 * nothing: when the client closes it (or it fails), the association ends.
 *
 * Client -> device runs on the main context: the host socket's source
 * fires, the header is parsed (ncm-proxy-socks.c), the payload sent with
 * lwIP (an address at once, a name once resolved through the device).
 * Device -> client runs on a thread of the association's own, which waits
 * in lwIP's receive and sends each datagram, with its header, to the
 * client's address: no main-loop hop per datagram. Only datagrams from the
 * control connection's peer address are taken (and from one port: the one
 * the request named, else the first one seen), as RFC 1928 allows.
 *
 * Bounded: lwIP holds at most NCM_LWIP_UDP_MAX_QUEUED datagrams and
 * NCM_LWIP_UDP_MAX_BYTES for the client; the host socket's buffer the rest.
 */

#define UDP_MAX 65535

struct _ProxyUdp {
	Proxy *proxy;
	GSocketConnection *control;
	GSocket *host;               /* bound next to the SOCKS listener */
	NcmLwipUdpSocket *device;
	GSource *host_source;
	GCancellable *cancel;        /* ends the thread, the control read and lookups */
	GThread *thread;
	guint8 control_buf[256];
	GList link;                  /* in proxy->udps */

	/* The client's address: set on the main thread, read by the thread. */
	GMutex lock;
	GInetAddress *client_ip;
	guint16 client_port;         /* 0 until known */
	gboolean ended;              /* main thread: proxy_udp_end() ran */
};

/* ---- Device -> client (the association's thread) ------------------------------ */

static GSocketAddress *
client_address(ProxyUdp *u)
{
	GSocketAddress *to = NULL;

	g_mutex_lock(&u->lock);
	if (u->client_port)
		to = g_inet_socket_address_new(u->client_ip, u->client_port);
	g_mutex_unlock(&u->lock);
	return to;
}

/*
 * GSocket is not thread-safe and the main thread receives on it: this
 * thread only sends, with a plain sendto() on its fd, which the kernel
 * serialises.
 */
static gboolean
send_native(ProxyUdp *u, GSocketAddress *to, const guint8 *data, gsize len)
{
	struct sockaddr_storage native;
	gssize size = g_socket_address_get_native_size(to);

	if (size <= 0 || !g_socket_address_to_native(to, &native, sizeof native, NULL))
		return FALSE;
	return sendto(g_socket_get_fd(u->host), data, len, MSG_DONTWAIT, (struct sockaddr *)&native,
		      (socklen_t)size) > 0;
}

static gpointer
device_to_client(gpointer data)
{
	ProxyUdp *u = data;
	g_autofree guint8 *buf = g_malloc(PROXY_SOCKS_REPLY_MAX + UDP_MAX);

	for (;;) {
		g_autoptr(GError) error = NULL;
		g_autoptr(GInetSocketAddress) from = NULL;
		g_autoptr(GSocketAddress) to = NULL;
		gssize n = ncm_lwip_udp_socket_receive_from(u->device, &from,
							    buf + PROXY_SOCKS_REPLY_MAX, UDP_MAX, 0,
							    u->cancel, &error);
		GInetAddress *ip;
		gsize head;

		if (n < 0)
			break;
		to = client_address(u);
		if (!to || n > UDP_MAX)
			continue;
		ip = g_inet_socket_address_get_address(from);
		head = proxy_socks_build_udp_header(buf, PROXY_SOCKS_REPLY_MAX,
						    g_inet_address_to_bytes(ip),
						    g_inet_address_get_native_size(ip),
						    g_inet_socket_address_get_port(from));
		/* Right in front of the payload, so one send carries both. */
		memmove(buf + PROXY_SOCKS_REPLY_MAX - head, buf, head);
		if (send_native(u, to, buf + PROXY_SOCKS_REPLY_MAX - head, head + (gsize)n))
			__atomic_fetch_add(&u->proxy->count.udp_in, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* ---- Client -> device (main context) -------------------------------------------- */

/* A datagram to a name, waiting for the lookup. The association may end
 * meanwhile (and be freed): its cancellable, which it cancels first,
 * says so. */
typedef struct {
	ProxyUdp *udp;
	GCancellable *ended;
	GBytes *payload;
	guint16 port;
} Pending;

static void
send_to_device(ProxyUdp *u, GInetAddress *ip, guint16 port, const guint8 *data, gsize len)
{
	g_autoptr(GSocketAddress) to = g_inet_socket_address_new(ip, port);

	if (ncm_lwip_udp_socket_send_to(u->device, G_INET_SOCKET_ADDRESS(to), data, len, NULL))
		u->proxy->count.udp_out++;
	else
		u->proxy->count.udp_drops++;
}

static void
resolved(GObject *source, GAsyncResult *result, gpointer data)
{
	Pending *p = data;
	g_autoptr(GInetAddress) ip = ncm_lwip_stack_resolve_finish(NCM_LWIP_STACK(source), result,
								   NULL);

	if (!g_cancellable_is_cancelled(p->ended)) {
		if (ip)
			send_to_device(p->udp, ip, p->port, g_bytes_get_data(p->payload, NULL),
				       g_bytes_get_size(p->payload));
		else
			p->udp->proxy->count.udp_drops++;
	}
	g_object_unref(p->ended);
	g_bytes_unref(p->payload);
	g_free(p);
}

/* The datagram's sender may use the association? Learns its port once. */
static gboolean
from_client(ProxyUdp *u, GSocketAddress *from)
{
	GInetSocketAddress *inet = G_INET_SOCKET_ADDRESS(from);
	guint16 port = g_inet_socket_address_get_port(inet);
	gboolean ok;

	if (!g_inet_address_equal(g_inet_socket_address_get_address(inet), u->client_ip))
		return FALSE;
	g_mutex_lock(&u->lock);
	if (!u->client_port)
		u->client_port = port;
	ok = u->client_port == port;
	g_mutex_unlock(&u->lock);
	return ok;
}

static void
take_datagram(ProxyUdp *u, GSocketAddress *from, const guint8 *buf, gsize len)
{
	ProxySocksRequest r;
	g_autoptr(GInetAddress) ip = NULL;
	Pending *p;

	if (!from_client(u, from) || proxy_socks_parse_udp(buf, len, &r) != PROXY_SOCKS_OK ||
	    r.frag != 0) {
		/* Fragments are optional in RFC 1928 and dropped here. */
		u->proxy->count.udp_drops++;
		return;
	}
	if (r.atyp != PROXY_SOCKS_ATYP_NAME) {
		ip = g_inet_address_new_from_bytes(r.addr, r.atyp == PROXY_SOCKS_ATYP_IPV4
								   ? G_SOCKET_FAMILY_IPV4
								   : G_SOCKET_FAMILY_IPV6);
		send_to_device(u, ip, r.port, buf + r.len, len - r.len);
		return;
	}
	p = g_new0(Pending, 1);
	p->udp = u;
	p->ended = g_object_ref(u->cancel);
	p->payload = g_bytes_new(buf + r.len, len - r.len);
	p->port = r.port;
	u->proxy->count.lookups++;
	ncm_lwip_stack_resolve_async(u->proxy->stack, r.name, u->proxy->family, u->cancel,
				     resolved, p);
}

static gboolean
on_host_readable(GSocket *socket, GIOCondition condition, gpointer data)
{
	ProxyUdp *u = data;
	guint8 buf[PROXY_SOCKS_REQUEST_MAX + UDP_MAX];

	/* A few per dispatch, so that a flood yields the loop to the others. */
	for (guint i = 0; i < 16; i++) {
		g_autoptr(GSocketAddress) from = NULL;
		gssize n = g_socket_receive_from(socket, &from, (gchar *)buf, sizeof buf, NULL, NULL);

		if (n < 0)
			break;
		take_datagram(u, from, buf, (gsize)n);
	}
	return G_SOURCE_CONTINUE;
}

/* ---- The association's life -------------------------------------------------------- */

static void
on_control_read(GObject *source, GAsyncResult *result, gpointer data)
{
	ProxyUdp *u = data;
	gssize n = g_input_stream_read_finish(G_INPUT_STREAM(source), result, NULL);

	if (n > 0 && !g_cancellable_is_cancelled(u->cancel)) {
		/* Anything the client sends on it now means nothing: read on to EOF. */
		g_input_stream_read_async(G_INPUT_STREAM(source), u->control_buf,
					  sizeof u->control_buf, G_PRIORITY_DEFAULT, u->cancel,
					  on_control_read, u);
		return;
	}
	if (!u->ended)
		proxy_udp_end(u);
	/* The read's reference: the last one out frees. */
	g_object_unref(u->control);
	g_mutex_clear(&u->lock);
	g_free(u);
}

ProxyUdp *
proxy_udp_new(Proxy *proxy, GSocketConnection *control, guint16 client_port, GError **error)
{
	ProxyUdp *u = g_new0(ProxyUdp, 1);
	g_autoptr(GSocketAddress) local = g_socket_connection_get_local_address(control, error);
	g_autoptr(GSocketAddress) remote = NULL;
	g_autoptr(GSocketAddress) bind = NULL;

	g_mutex_init(&u->lock);
	u->proxy = proxy;
	u->control = g_object_ref(control);
	u->cancel = g_cancellable_new();
	u->client_port = client_port;
	if (!local || !(remote = g_socket_connection_get_remote_address(control, error)))
		goto fail;
	u->client_ip = g_object_ref(g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(remote)));
	bind = g_inet_socket_address_new(g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(local)),
					 0);
	u->host = g_socket_new(g_socket_address_get_family(bind), G_SOCKET_TYPE_DATAGRAM,
			       G_SOCKET_PROTOCOL_UDP, error);
	if (!u->host || !g_socket_bind(u->host, bind, FALSE, error))
		goto fail;
	g_socket_set_blocking(u->host, FALSE);
	u->device = ncm_lwip_stack_udp_bind(proxy->stack, NULL, error);
	if (!u->device)
		goto fail;
	u->host_source = g_socket_create_source(u->host, G_IO_IN, NULL);
	g_source_set_callback(u->host_source, G_SOURCE_FUNC(on_host_readable), u, NULL);
	g_source_attach(u->host_source, NULL);
	u->thread = g_thread_new("ncm-proxy-udp", device_to_client, u);
	u->link.data = u;
	g_queue_push_tail_link(&proxy->udps, &u->link);
	proxy->count.udp_associations++;
	/* Reads the control connection to its end, which ends the association. */
	g_object_ref(u->control);
	g_input_stream_read_async(g_io_stream_get_input_stream(G_IO_STREAM(control)),
				  u->control_buf, sizeof u->control_buf, G_PRIORITY_DEFAULT, u->cancel,
				  on_control_read, u);
	return u;
fail:
	g_prefix_error(error, "UDP ASSOCIATE: ");
	g_clear_object(&u->host);
	g_clear_object(&u->client_ip);
	g_object_unref(u->cancel);
	g_object_unref(u->control);
	g_mutex_clear(&u->lock);
	g_free(u);
	return NULL;
}

GSocketAddress *
proxy_udp_get_address(ProxyUdp *u)
{
	return g_socket_get_local_address(u->host, NULL);
}

void
proxy_udp_end(ProxyUdp *u)
{
	if (u->ended)
		return;
	u->ended = TRUE;
	g_queue_unlink(&u->proxy->udps, &u->link);
	g_cancellable_cancel(u->cancel);
	g_thread_join(u->thread);
	g_source_destroy(u->host_source);
	g_source_unref(u->host_source);
	ncm_lwip_udp_socket_close(u->device);
	g_object_unref(u->device);
	g_socket_close(u->host, NULL);
	g_object_unref(u->host);
	g_object_unref(u->client_ip);
	g_io_stream_close(G_IO_STREAM(u->control), NULL, NULL);
	g_object_unref(u->control);
	g_object_unref(u->cancel);
	u->proxy->count.active--;
}

void
proxy_udp_close_all(Proxy *proxy)
{
	while (proxy->udps.head)
		proxy_udp_end(proxy->udps.head->data);
}
