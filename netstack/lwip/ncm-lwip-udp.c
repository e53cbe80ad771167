/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-udp.c: NcmLwipUdpSocket, datagrams over an lwIP udp_pcb with a bounded receive queue. */
#define G_LOG_DOMAIN "ncm-lwip"

#include <string.h>

#include "lwip/udp.h"

#include "ncm-lwip-private.h"

typedef struct {
	ip_addr_t from;
	u16_t port;
	gsize len;
	guint8 data[];
} Datagram;

struct _NcmLwipUdpSocket {
	GObject parent;
	struct udp_pcb *pcb; /* core lock */
	guint16 port;

	/* Guards the fields below; taken inside the core lock. */
	GMutex lock;
	GCond cond;
	GQueue queue; /* Datagram * */
	gsize queued_bytes;
	guint64 drops;
	gboolean closed;
};

G_DEFINE_TYPE(NcmLwipUdpSocket, ncm_lwip_udp_socket, G_TYPE_OBJECT)

/* Core lock held. */
static void
udp_recv_cb(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
	NcmLwipUdpSocket *self = arg;
	Datagram *d = NULL;

	ncm_mutex_lock(&self->lock);
	if (self->queue.length >= NCM_LWIP_UDP_MAX_QUEUED ||
	    self->queued_bytes + p->tot_len > NCM_LWIP_UDP_MAX_BYTES) {
		self->drops++;
	} else {
		d = g_malloc(sizeof(*d) + p->tot_len);
		ip_addr_copy(d->from, *addr);
		d->port = port;
		d->len = pbuf_copy_partial(p, d->data, p->tot_len, 0);
		g_queue_push_tail(&self->queue, d);
		self->queued_bytes += d->len;
		g_cond_broadcast(&self->cond);
	}
	ncm_mutex_unlock(&self->lock);
	pbuf_free(p);
}

NcmLwipUdpSocket *
ncm_lwip_stack_udp_bind(NcmLwipStack *stack, GInetSocketAddress *address, GError **error)
{
	GInetAddress *inet = address ? g_inet_socket_address_get_address(address) : NULL;
	gboolean any = inet == NULL || g_inet_address_get_is_any(inet);
	NcmLwipUdpSocket *self;
	ip_addr_t ip;
	err_t err = ERR_MEM;

	g_return_val_if_fail(NCM_LWIP_IS_STACK(stack), NULL);
	ip_addr_set_zero(&ip);
	if (!any)
		nlw_addr_from_gio(inet, &ip);
	self = g_object_new(NCM_LWIP_TYPE_UDP_SOCKET, NULL);
	nlw_core_lock();
	self->pcb = udp_new_ip_type(any ? IPADDR_TYPE_ANY : IP_GET_TYPE(&ip));
	if (self->pcb != NULL) {
		err = udp_bind(self->pcb, any ? IP_ANY_TYPE : &ip,
			       address ? g_inet_socket_address_get_port(address) : 0);
		self->port = self->pcb->local_port;
		udp_recv(self->pcb, udp_recv_cb, self);
	}
	nlw_core_unlock();
	if (err != ERR_OK) {
		g_set_error(error, G_IO_ERROR, nlw_err_to_io(err), "cannot bind: %s",
			    nlw_strerr(err));
		g_object_unref(self);
		return NULL;
	}
	return self;
}

guint16
ncm_lwip_udp_socket_get_port(NcmLwipUdpSocket *self)
{
	g_return_val_if_fail(NCM_LWIP_IS_UDP_SOCKET(self), 0);
	return self->port;
}

/* Core lock held. */
static err_t
send_locked(NcmLwipUdpSocket *self, ip_addr_t *ip, guint16 port, const void *data, gsize len)
{
	struct pbuf *p;
	err_t err;

	if (self->pcb == NULL)
		return ERR_CLSD;
	p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)len, PBUF_RAM);
	if (p == NULL)
		return ERR_MEM;
	memcpy(p->payload, data, len);
	err = udp_sendto(self->pcb, p, ip, port);
	pbuf_free(p);
	return err;
}

gboolean
ncm_lwip_udp_socket_send_to(NcmLwipUdpSocket *self, GInetSocketAddress *to, const void *data,
			    gsize len, GError **error)
{
	ip_addr_t ip;
	err_t err;

	g_return_val_if_fail(NCM_LWIP_IS_UDP_SOCKET(self), FALSE);
	if (len > 0xFFFF - 8) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE,
			    "a UDP datagram carries at most 65527 bytes, not %" G_GSIZE_FORMAT, len);
		return FALSE;
	}
	nlw_addr_from_gio(g_inet_socket_address_get_address(to), &ip);
	nlw_core_lock();
	nlw_addr_assign_zone(&ip, nlw_scope_of(to));
	err = send_locked(self, &ip, g_inet_socket_address_get_port(to), data, len);
	nlw_core_unlock();
	if (err == ERR_OK)
		return TRUE;
	if (err == ERR_CLSD)
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "socket is closed");
	else
		g_set_error(error, G_IO_ERROR, nlw_err_to_io(err), "cannot send: %s",
			    nlw_strerr(err));
	return FALSE;
}

static void
wake_socket(GCancellable *cancellable, gpointer data)
{
	NcmLwipUdpSocket *self = data;

	ncm_mutex_lock(&self->lock);
	g_cond_broadcast(&self->cond);
	ncm_mutex_unlock(&self->lock);
}

/* self->lock held: the next datagram, or NULL with @error set. */
static Datagram *
pop_locked(NcmLwipUdpSocket *self, gint64 deadline, GCancellable *cancellable, GError **error)
{
	Datagram *d;

	while ((d = g_queue_pop_head(&self->queue)) == NULL) {
		if (self->closed) {
			g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED,
					    "socket is closed");
			return NULL;
		}
		if (g_cancellable_set_error_if_cancelled(cancellable, error))
			return NULL;
		if (deadline == 0) {
			ncm_cond_wait(&self->cond, &self->lock);
		} else if (!ncm_cond_wait_until(&self->cond, &self->lock, deadline) &&
			   self->queue.length == 0) {
			g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
					    "no datagram received in time");
			return NULL;
		}
	}
	self->queued_bytes -= d->len;
	return d;
}

static Datagram *
receive_datagram(NcmLwipUdpSocket *self, guint timeout_ms, GCancellable *cancellable,
		 GError **error)
{
	gint64 deadline = timeout_ms ? g_get_monotonic_time() + timeout_ms * G_TIME_SPAN_MILLISECOND
				     : 0;
	gulong handler = 0;
	Datagram *d;

	if (cancellable != NULL)
		handler = g_cancellable_connect(cancellable, G_CALLBACK(wake_socket), self, NULL);
	ncm_mutex_lock(&self->lock);
	d = pop_locked(self, deadline, cancellable, error);
	ncm_mutex_unlock(&self->lock);
	if (handler != 0)
		g_cancellable_disconnect(cancellable, handler);
	return d;
}

gssize
ncm_lwip_udp_socket_receive_from(NcmLwipUdpSocket *self, GInetSocketAddress **ret_from,
				 void *buf, gsize len, guint timeout_ms,
				 GCancellable *cancellable, GError **error)
{
	Datagram *d;
	gssize n;

	g_return_val_if_fail(NCM_LWIP_IS_UDP_SOCKET(self), -1);
	d = receive_datagram(self, timeout_ms, cancellable, error);
	if (d == NULL)
		return -1;
	memcpy(buf, d->data, MIN(len, d->len));
	n = (gssize)d->len;
	if (ret_from != NULL)
		*ret_from = nlw_sockaddr_to_gio(&d->from, d->port);
	g_free(d);
	return n;
}

/* A thread of its own (see nlw_task_run_in_thread); the result is a Datagram. */
static void
receive_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
	GError *error = NULL;
	Datagram *d;

	d = receive_datagram(source, 0, cancellable, &error);
	nlw_task_return(task, d, g_free, error);
}

/* GTask source tag (ISO C has no function-to-object pointer cast). */
static char source_tag;

void
ncm_lwip_udp_socket_receive_async(NcmLwipUdpSocket *self, GCancellable *cancellable,
				  GAsyncReadyCallback callback, gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);

	g_task_set_source_tag(task, &source_tag);
	nlw_task_run_in_thread(task, receive_thread);
}

GBytes *
ncm_lwip_udp_socket_receive_finish(NcmLwipUdpSocket *self, GAsyncResult *result,
				   GInetSocketAddress **ret_from, GError **error)
{
	Datagram *d;
	GBytes *bytes;

	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	d = nlw_task_propagate(result, error);
	if (d == NULL)
		return NULL;
	bytes = g_bytes_new(d->data, d->len);
	if (ret_from != NULL)
		*ret_from = nlw_sockaddr_to_gio(&d->from, d->port);
	g_free(d);
	return bytes;
}

guint64
ncm_lwip_udp_socket_get_drops(NcmLwipUdpSocket *self)
{
	guint64 drops;

	ncm_mutex_lock(&self->lock);
	drops = self->drops;
	ncm_mutex_unlock(&self->lock);
	return drops;
}

void
ncm_lwip_udp_socket_close(NcmLwipUdpSocket *self)
{
	g_return_if_fail(NCM_LWIP_IS_UDP_SOCKET(self));
	nlw_core_lock();
	if (self->pcb != NULL) {
		udp_remove(self->pcb);
		self->pcb = NULL;
	}
	ncm_mutex_lock(&self->lock);
	self->closed = TRUE;
	g_cond_broadcast(&self->cond);
	ncm_mutex_unlock(&self->lock);
	nlw_core_unlock();
}

static void
udp_socket_finalize(GObject *object)
{
	NcmLwipUdpSocket *self = NCM_LWIP_UDP_SOCKET(object);

	ncm_lwip_udp_socket_close(self);
	g_queue_clear_full(&self->queue, g_free);
	g_cond_clear(&self->cond);
	g_mutex_clear(&self->lock);
	G_OBJECT_CLASS(ncm_lwip_udp_socket_parent_class)->finalize(object);
}

static void
ncm_lwip_udp_socket_init(NcmLwipUdpSocket *self)
{
	g_mutex_init(&self->lock);
	g_cond_init(&self->cond);
	g_queue_init(&self->queue);
}

static void
ncm_lwip_udp_socket_class_init(NcmLwipUdpSocketClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = udp_socket_finalize;
}
