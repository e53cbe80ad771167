/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-stream.c: NcmLwipConnection, a GIOStream with pollable input and output streams over an NlwConn. */
#define G_LOG_DOMAIN "ncm-lwip"

#include "ncm-lwip-tcp.h"

/* ---- Input stream -------------------------------------------------------------- */

#define NLW_TYPE_INPUT_STREAM (nlw_input_stream_get_type())
G_DECLARE_FINAL_TYPE(NlwInputStream, nlw_input_stream, NLW, INPUT_STREAM, GInputStream)

struct _NlwInputStream {
	GInputStream parent;
	NlwConn *conn;
};

static void nlw_input_pollable_init(GPollableInputStreamInterface *iface);

G_DEFINE_TYPE_WITH_CODE(NlwInputStream, nlw_input_stream, G_TYPE_INPUT_STREAM,
			G_IMPLEMENT_INTERFACE(G_TYPE_POLLABLE_INPUT_STREAM,
					      nlw_input_pollable_init))

static gssize
nlw_input_read(GInputStream *stream, void *buffer, gsize count, GCancellable *cancellable,
	       GError **error)
{
	return nlw_conn_read(NLW_INPUT_STREAM(stream)->conn, buffer, count, TRUE, cancellable,
			     error);
}

static gboolean
nlw_input_close(GInputStream *stream, GCancellable *cancellable, GError **error)
{
	nlw_conn_mark_in_closed(NLW_INPUT_STREAM(stream)->conn);
	return TRUE;
}

/* Closing never blocks, so the async variants complete at once instead
 * of GIO's default of a thread from its pool. */
static void
close_async_now(gpointer stream, gboolean (*close_fn)(gpointer), GCancellable *cancellable,
		GAsyncReadyCallback callback, gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(stream, cancellable, callback, user_data);

	close_fn(stream);
	nlw_count(NLW_COUNT_MAIN_DISPATCHES, 1);
	g_task_return_boolean(task, TRUE);
}

static gboolean
close_finish(gpointer stream, GAsyncResult *result, GError **error)
{
	return g_task_propagate_boolean(G_TASK(result), error);
}

static gboolean
input_close_now(gpointer stream)
{
	nlw_conn_mark_in_closed(NLW_INPUT_STREAM(stream)->conn);
	return TRUE;
}

static void
nlw_input_close_async(GInputStream *stream, int io_priority, GCancellable *cancellable,
		      GAsyncReadyCallback callback, gpointer user_data)
{
	close_async_now(stream, input_close_now, cancellable, callback, user_data);
}

static gboolean
nlw_input_close_finish(GInputStream *stream, GAsyncResult *result, GError **error)
{
	return close_finish(stream, result, error);
}

static gboolean
nlw_input_is_readable(GPollableInputStream *stream)
{
	return nlw_conn_readable(NLW_INPUT_STREAM(stream)->conn);
}

static gssize
nlw_input_read_nonblocking(GPollableInputStream *stream, void *buffer, gsize count,
			   GError **error)
{
	return nlw_conn_read(NLW_INPUT_STREAM(stream)->conn, buffer, count, FALSE, NULL, error);
}

/* Level-triggered: the child is ready while the direction is, and the
 * connection wakes its context up on changes. No fd per connection. */
static GSource *
make_source(GObject *stream, NlwConn *conn, gboolean write, GCancellable *cancellable)
{
	g_autoptr(GSource) child = nlw_conn_source_new(conn, write);

	return g_pollable_source_new_full(stream, child, cancellable);
}

static GSource *
nlw_input_create_source(GPollableInputStream *stream, GCancellable *cancellable)
{
	return make_source(G_OBJECT(stream), NLW_INPUT_STREAM(stream)->conn, FALSE, cancellable);
}

static void
nlw_input_pollable_init(GPollableInputStreamInterface *iface)
{
	iface->is_readable = nlw_input_is_readable;
	iface->create_source = nlw_input_create_source;
	iface->read_nonblocking = nlw_input_read_nonblocking;
}

static void
nlw_input_finalize(GObject *object)
{
	nlw_conn_unref(NLW_INPUT_STREAM(object)->conn);
	G_OBJECT_CLASS(nlw_input_stream_parent_class)->finalize(object);
}

static void
nlw_input_stream_init(NlwInputStream *self)
{
}

static void
nlw_input_stream_class_init(NlwInputStreamClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = nlw_input_finalize;
	G_INPUT_STREAM_CLASS(klass)->read_fn = nlw_input_read;
	G_INPUT_STREAM_CLASS(klass)->close_fn = nlw_input_close;
	G_INPUT_STREAM_CLASS(klass)->close_async = nlw_input_close_async;
	G_INPUT_STREAM_CLASS(klass)->close_finish = nlw_input_close_finish;
}

/* ---- Output stream -------------------------------------------------------------- */

#define NLW_TYPE_OUTPUT_STREAM (nlw_output_stream_get_type())
G_DECLARE_FINAL_TYPE(NlwOutputStream, nlw_output_stream, NLW, OUTPUT_STREAM, GOutputStream)

struct _NlwOutputStream {
	GOutputStream parent;
	NlwConn *conn;
};

static void nlw_output_pollable_init(GPollableOutputStreamInterface *iface);

G_DEFINE_TYPE_WITH_CODE(NlwOutputStream, nlw_output_stream, G_TYPE_OUTPUT_STREAM,
			G_IMPLEMENT_INTERFACE(G_TYPE_POLLABLE_OUTPUT_STREAM,
					      nlw_output_pollable_init))

static gssize
nlw_output_write(GOutputStream *stream, const void *buffer, gsize count,
		 GCancellable *cancellable, GError **error)
{
	return nlw_conn_write(NLW_OUTPUT_STREAM(stream)->conn, buffer, count, TRUE, cancellable,
			      error);
}

/* Sends FIN; lwIP still delivers what it holds, and reading goes on. */
static gboolean
nlw_output_close(GOutputStream *stream, GCancellable *cancellable, GError **error)
{
	nlw_conn_shutdown_write(NLW_OUTPUT_STREAM(stream)->conn);
	return TRUE;
}

static gboolean
output_close_now(gpointer stream)
{
	nlw_conn_shutdown_write(NLW_OUTPUT_STREAM(stream)->conn);
	return TRUE;
}

static void
nlw_output_close_async(GOutputStream *stream, int io_priority, GCancellable *cancellable,
		       GAsyncReadyCallback callback, gpointer user_data)
{
	close_async_now(stream, output_close_now, cancellable, callback, user_data);
}

static gboolean
nlw_output_close_finish(GOutputStream *stream, GAsyncResult *result, GError **error)
{
	return close_finish(stream, result, error);
}

static gboolean
nlw_output_is_writable(GPollableOutputStream *stream)
{
	return nlw_conn_writable(NLW_OUTPUT_STREAM(stream)->conn);
}

static gssize
nlw_output_write_nonblocking(GPollableOutputStream *stream, const void *buffer, gsize count,
			     GError **error)
{
	return nlw_conn_write(NLW_OUTPUT_STREAM(stream)->conn, buffer, count, FALSE, NULL,
			      error);
}

static GSource *
nlw_output_create_source(GPollableOutputStream *stream, GCancellable *cancellable)
{
	return make_source(G_OBJECT(stream), NLW_OUTPUT_STREAM(stream)->conn, TRUE, cancellable);
}

static void
nlw_output_pollable_init(GPollableOutputStreamInterface *iface)
{
	iface->is_writable = nlw_output_is_writable;
	iface->create_source = nlw_output_create_source;
	iface->write_nonblocking = nlw_output_write_nonblocking;
}

static void
nlw_output_finalize(GObject *object)
{
	nlw_conn_unref(NLW_OUTPUT_STREAM(object)->conn);
	G_OBJECT_CLASS(nlw_output_stream_parent_class)->finalize(object);
}

static void
nlw_output_stream_init(NlwOutputStream *self)
{
}

static void
nlw_output_stream_class_init(NlwOutputStreamClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = nlw_output_finalize;
	G_OUTPUT_STREAM_CLASS(klass)->write_fn = nlw_output_write;
	G_OUTPUT_STREAM_CLASS(klass)->close_fn = nlw_output_close;
	G_OUTPUT_STREAM_CLASS(klass)->close_async = nlw_output_close_async;
	G_OUTPUT_STREAM_CLASS(klass)->close_finish = nlw_output_close_finish;
}

/* ---- The connection ---------------------------------------------------------------- */

struct _NcmLwipConnection {
	GIOStream parent;
	NlwConn *conn;
	GInputStream *input;
	GOutputStream *output;
	GInetSocketAddress *local, *remote;
};

G_DEFINE_TYPE(NcmLwipConnection, ncm_lwip_connection, G_TYPE_IO_STREAM)

static GInputStream *
connection_get_input(GIOStream *stream)
{
	return NCM_LWIP_CONNECTION(stream)->input;
}

static GOutputStream *
connection_get_output(GIOStream *stream)
{
	return NCM_LWIP_CONNECTION(stream)->output;
}

static void
connection_close_pcb(NcmLwipConnection *self, gboolean abort)
{
	nlw_core_lock();
	nlw_conn_close_pcb(self->conn, abort);
	nlw_core_unlock();
}

/*
 * Both streams are closed first (FIN after the queued data), then the pcb
 * is handed to lwIP to finish the close on its own. With unread data left,
 * a reset instead, as sockets do: the output's FIN would have moved the
 * pcb past the states in which lwIP's own close resets.
 */
static gboolean
connection_close(GIOStream *stream, GCancellable *cancellable, GError **error)
{
	NcmLwipConnection *self = NCM_LWIP_CONNECTION(stream);

	if (nlw_conn_has_unread(self->conn))
		connection_close_pcb(self, TRUE);
	g_output_stream_close(self->output, NULL, NULL);
	g_input_stream_close(self->input, NULL, NULL);
	connection_close_pcb(self, FALSE);
	return TRUE;
}

void
ncm_lwip_connection_abort(NcmLwipConnection *self)
{
	g_return_if_fail(NCM_LWIP_IS_CONNECTION(self));
	connection_close_pcb(self, TRUE);
	g_io_stream_close(G_IO_STREAM(self), NULL, NULL);
}

static gboolean
connection_close_now(gpointer stream)
{
	return connection_close(stream, NULL, NULL);
}

static void
connection_close_async(GIOStream *stream, int io_priority, GCancellable *cancellable,
		       GAsyncReadyCallback callback, gpointer user_data)
{
	close_async_now(stream, connection_close_now, cancellable, callback, user_data);
}

static gboolean
connection_close_finish(GIOStream *stream, GAsyncResult *result, GError **error)
{
	return close_finish(stream, result, error);
}

static void
connection_finalize(GObject *object)
{
	NcmLwipConnection *self = NCM_LWIP_CONNECTION(object);

	connection_close_pcb(self, FALSE);
	g_clear_object(&self->input);
	g_clear_object(&self->output);
	g_clear_object(&self->local);
	g_clear_object(&self->remote);
	nlw_conn_unref(self->conn);
	G_OBJECT_CLASS(ncm_lwip_connection_parent_class)->finalize(object);
}

static void
ncm_lwip_connection_init(NcmLwipConnection *self)
{
}

static void
ncm_lwip_connection_class_init(NcmLwipConnectionClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = connection_finalize;
	G_IO_STREAM_CLASS(klass)->get_input_stream = connection_get_input;
	G_IO_STREAM_CLASS(klass)->get_output_stream = connection_get_output;
	G_IO_STREAM_CLASS(klass)->close_fn = connection_close;
	G_IO_STREAM_CLASS(klass)->close_async = connection_close_async;
	G_IO_STREAM_CLASS(klass)->close_finish = connection_close_finish;
}

NcmLwipConnection *
nlw_connection_new(NlwConn *c)
{
	NcmLwipConnection *self = g_object_new(NCM_LWIP_TYPE_CONNECTION, NULL);
	NlwInputStream *in = g_object_new(NLW_TYPE_INPUT_STREAM, NULL);
	NlwOutputStream *out = g_object_new(NLW_TYPE_OUTPUT_STREAM, NULL);

	in->conn = nlw_conn_ref(c);
	out->conn = nlw_conn_ref(c);
	self->conn = c;
	self->input = G_INPUT_STREAM(in);
	self->output = G_OUTPUT_STREAM(out);
	nlw_core_lock();
	if (c->pcb != NULL) {
		self->local = nlw_sockaddr_to_gio(&c->pcb->local_ip, c->pcb->local_port);
		self->remote = nlw_sockaddr_to_gio(&c->pcb->remote_ip, c->pcb->remote_port);
	}
	nlw_core_unlock();
	return self;
}

GInetSocketAddress *
ncm_lwip_connection_get_local_address(NcmLwipConnection *self)
{
	g_return_val_if_fail(NCM_LWIP_IS_CONNECTION(self), NULL);
	return self->local;
}

GInetSocketAddress *
ncm_lwip_connection_get_remote_address(NcmLwipConnection *self)
{
	g_return_val_if_fail(NCM_LWIP_IS_CONNECTION(self), NULL);
	return self->remote;
}

void
ncm_lwip_connection_set_no_delay(NcmLwipConnection *self, gboolean no_delay)
{
	g_return_if_fail(NCM_LWIP_IS_CONNECTION(self));
	nlw_conn_set_no_delay(self->conn, no_delay);
}

gssize
ncm_lwip_connection_splice_nonblocking(NcmLwipConnection *self, GPollableOutputStream *out,
				       gsize count, GError **error)
{
	g_return_val_if_fail(NCM_LWIP_IS_CONNECTION(self), -1);
	g_return_val_if_fail(G_IS_POLLABLE_OUTPUT_STREAM(out), -1);
	g_return_val_if_fail(error == NULL || *error == NULL, -1);
	if (g_input_stream_is_closed(self->input)) {
		g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CLOSED,
				    "the connection's input stream is closed");
		return -1;
	}
	return nlw_conn_send_to(self->conn, out, count, error);
}
