/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-connect.c: ncm_lwip_stack_connect() and its async pair: a TCP handshake handed out as an NcmLwipConnection. */
#define G_LOG_DOMAIN "ncm-lwip"

#include "ncm-lwip-tcp.h"

/*
 * Apart from ncm-lwip-tcp.c so that the connection's internals (tcp.c)
 * never call up into its GIO wrapper (stream.c): this file, like the
 * listener, sits above both.
 */

NcmLwipConnection *
ncm_lwip_stack_connect(NcmLwipStack *self, GInetSocketAddress *address, guint timeout_ms,
		       GCancellable *cancellable, GError **error)
{
	NlwConn *c;

	g_return_val_if_fail(NCM_LWIP_IS_STACK(self), NULL);
	g_return_val_if_fail(G_IS_INET_SOCKET_ADDRESS(address), NULL);
	if (g_cancellable_set_error_if_cancelled(cancellable, error))
		return NULL;
	c = nlw_conn_connect(address, timeout_ms, cancellable, error);
	if (c == NULL)
		return NULL;
	return nlw_connection_new(c);
}

typedef struct {
	GInetSocketAddress *address;
	guint timeout_ms;
} ConnectData;

static void
connect_data_free(gpointer data)
{
	ConnectData *d = data;

	g_object_unref(d->address);
	g_free(d);
}

/* Connecting is control plane, and the blocking path already handles
 * timeout and cancellation: run it on a thread of its own. */
static void
connect_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
	ConnectData *d;
	NcmLwipConnection *conn;
	GError *error = NULL;

	d = task_data;
	conn = ncm_lwip_stack_connect(source, d->address, d->timeout_ms, cancellable, &error);
	nlw_task_return(task, conn, g_object_unref, error);
}

/* GTask source tag (ISO C has no function-to-object pointer cast). */
static char source_tag;

void
ncm_lwip_stack_connect_async(NcmLwipStack *self, GInetSocketAddress *address, guint timeout_ms,
			     GCancellable *cancellable, GAsyncReadyCallback callback,
			     gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	ConnectData *d = g_new0(ConnectData, 1);

	d->address = g_object_ref(address);
	d->timeout_ms = timeout_ms;
	g_task_set_source_tag(task, &source_tag);
	g_task_set_task_data(task, d, connect_data_free);
	nlw_task_run_in_thread(task, connect_thread);
}

NcmLwipConnection *
ncm_lwip_stack_connect_finish(NcmLwipStack *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return nlw_task_propagate(result, error);
}
