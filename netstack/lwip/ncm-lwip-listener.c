/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-listener.c: NcmLwipListener, a listening lwIP pcb with an accept queue. */
#define G_LOG_DOMAIN "ncm-lwip"

#include "ncm-lwip-tcp.h"

#define DEFAULT_BACKLOG 64

struct _NcmLwipListener {
	GObject parent;
	struct tcp_pcb *pcb; /* core lock */
	guint16 port;
	guint backlog;

	/* Guards the fields below; taken inside the core lock. */
	GMutex lock;
	GCond cond;
	GQueue pending; /* NlwConn *, connected, not yet accepted */
	gboolean closed;
};

G_DEFINE_TYPE(NcmLwipListener, ncm_lwip_listener, G_TYPE_OBJECT)

/* Core lock held. Connections beyond the backlog are refused: lwIP aborts
 * a pcb whose accept callback fails. Data arriving before accept queues
 * in the NlwConn. */
static err_t
listener_accept_cb(void *arg, struct tcp_pcb *pcb, err_t err)
{
	NcmLwipListener *self = arg;
	NlwConn *c;
	gboolean full;

	if (err != ERR_OK || pcb == NULL || self == NULL)
		return ERR_VAL;
	ncm_mutex_lock(&self->lock);
	full = self->closed || self->pending.length >= self->backlog;
	ncm_mutex_unlock(&self->lock);
	if (full)
		return ERR_MEM;
	c = nlw_conn_new();
	c->connected = TRUE;
	nlw_conn_attach(c, pcb);
	ncm_mutex_lock(&self->lock);
	g_queue_push_tail(&self->pending, c);
	g_cond_broadcast(&self->cond);
	ncm_mutex_unlock(&self->lock);
	return ERR_OK;
}

/* Core lock held. */
static err_t
listen_locked(NcmLwipListener *self, ip_addr_t *ip, gboolean any, guint16 port)
{
	struct tcp_pcb *pcb = tcp_new_ip_type(any ? IPADDR_TYPE_ANY : IP_GET_TYPE(ip));
	struct tcp_pcb *lpcb;
	err_t err;

	if (pcb == NULL)
		return ERR_MEM;
	err = tcp_bind(pcb, any ? IP_ANY_TYPE : ip, port);
	if (err != ERR_OK) {
		tcp_close(pcb);
		return err;
	}
	lpcb = tcp_listen_with_backlog_and_err(pcb, 255, &err);
	if (lpcb == NULL) {
		tcp_close(pcb);
		return err;
	}
	self->pcb = lpcb;
	self->port = lpcb->local_port;
	tcp_arg(lpcb, self);
	tcp_accept(lpcb, listener_accept_cb);
	return ERR_OK;
}

NcmLwipListener *
ncm_lwip_stack_listen(NcmLwipStack *stack, GInetSocketAddress *address, guint backlog,
		      GError **error)
{
	NcmLwipListener *self;
	GInetAddress *inet = address ? g_inet_socket_address_get_address(address) : NULL;
	gboolean any = inet == NULL || g_inet_address_get_is_any(inet);
	ip_addr_t ip;
	err_t err;

	g_return_val_if_fail(NCM_LWIP_IS_STACK(stack), NULL);
	ip_addr_set_zero(&ip);
	if (!any)
		nlw_addr_from_gio(inet, &ip);
	self = g_object_new(NCM_LWIP_TYPE_LISTENER, NULL);
	self->backlog = backlog ? backlog : DEFAULT_BACKLOG;
	nlw_core_lock();
	err = listen_locked(self, &ip, any, address ? g_inet_socket_address_get_port(address) : 0);
	nlw_core_unlock();
	if (err != ERR_OK) {
		g_set_error(error, G_IO_ERROR, nlw_err_to_io(err), "cannot listen: %s",
			    nlw_strerr(err));
		g_object_unref(self);
		return NULL;
	}
	return self;
}

guint16
ncm_lwip_listener_get_port(NcmLwipListener *self)
{
	g_return_val_if_fail(NCM_LWIP_IS_LISTENER(self), 0);
	return self->port;
}

void
ncm_lwip_listener_close(NcmLwipListener *self)
{
	GQueue pending = G_QUEUE_INIT;
	NlwConn *c;

	g_return_if_fail(NCM_LWIP_IS_LISTENER(self));
	nlw_core_lock();
	if (self->pcb != NULL) {
		tcp_arg(self->pcb, NULL);
		tcp_accept(self->pcb, NULL);
		tcp_close(self->pcb);
		self->pcb = NULL;
	}
	ncm_mutex_lock(&self->lock);
	self->closed = TRUE;
	pending = self->pending;
	g_queue_init(&self->pending);
	g_cond_broadcast(&self->cond);
	ncm_mutex_unlock(&self->lock);
	while ((c = g_queue_pop_head(&pending)) != NULL) {
		nlw_conn_close_pcb(c, TRUE);
		nlw_conn_unref(c);
	}
	nlw_core_unlock();
}

static void
wake_listener(GCancellable *cancellable, gpointer data)
{
	NcmLwipListener *self = data;

	ncm_mutex_lock(&self->lock);
	g_cond_broadcast(&self->cond);
	ncm_mutex_unlock(&self->lock);
}

NcmLwipConnection *
ncm_lwip_listener_accept(NcmLwipListener *self, GCancellable *cancellable, GError **error)
{
	gulong handler = 0;
	NlwConn *c;

	g_return_val_if_fail(NCM_LWIP_IS_LISTENER(self), NULL);
	if (cancellable != NULL)
		handler = g_cancellable_connect(cancellable, G_CALLBACK(wake_listener), self, NULL);
	ncm_mutex_lock(&self->lock);
	while (self->pending.length == 0 && !self->closed &&
	       !g_cancellable_is_cancelled(cancellable))
		ncm_cond_wait(&self->cond, &self->lock);
	c = g_queue_pop_head(&self->pending);
	ncm_mutex_unlock(&self->lock);
	if (handler != 0)
		g_cancellable_disconnect(cancellable, handler);
	if (c != NULL)
		return nlw_connection_new(c);
	if (!g_cancellable_set_error_if_cancelled(cancellable, error))
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "listener is closed");
	return NULL;
}

/* Accepting is control plane: a thread of its own (see nlw_task_run_in_thread). */
static void
accept_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
	NcmLwipConnection *conn;
	GError *error = NULL;

	conn = ncm_lwip_listener_accept(source, cancellable, &error);
	nlw_task_return(task, conn, g_object_unref, error);
}

/* GTask source tag (ISO C has no function-to-object pointer cast). */
static char source_tag;

void
ncm_lwip_listener_accept_async(NcmLwipListener *self, GCancellable *cancellable,
			       GAsyncReadyCallback callback, gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);

	g_task_set_source_tag(task, &source_tag);
	nlw_task_run_in_thread(task, accept_thread);
}

NcmLwipConnection *
ncm_lwip_listener_accept_finish(NcmLwipListener *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return nlw_task_propagate(result, error);
}

static void
listener_finalize(GObject *object)
{
	NcmLwipListener *self = NCM_LWIP_LISTENER(object);

	ncm_lwip_listener_close(self);
	g_cond_clear(&self->cond);
	g_mutex_clear(&self->lock);
	G_OBJECT_CLASS(ncm_lwip_listener_parent_class)->finalize(object);
}

static void
ncm_lwip_listener_init(NcmLwipListener *self)
{
	g_mutex_init(&self->lock);
	g_cond_init(&self->cond);
	g_queue_init(&self->pending);
}

static void
ncm_lwip_listener_class_init(NcmLwipListenerClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = listener_finalize;
}
