/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-relay.c: one proxied connection's copying stage: a thread per direction between a kernel socket and lwIP. */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "ncm-proxy.h"

/*
 * Each direction is a thread with one buffer of proxy->buffer bytes that
 * copies with blocking calls: read into the buffer, write all of it out,
 * read again. A slow reader on one side stops only its own direction, and
 * what one connection holds is bounded by its two buffers (plus what the
 * kernel and lwIP queue for it).
 *
 * Why threads and not the main loop (as until issue 19): a GMainContext
 * carrying both directions of every connection cost a poll, a source
 * created and destroyed and an eventfd wake per chunk, all on one thread,
 * and tcp_bidir ran at 0.61x the lwip path. Blocking lwIP calls wait on a
 * condition variable, as ncm-bench's own lwip path does, and the two
 * directions use both cores.
 *
 * Ending: an error in either direction cancels @cancel, which wakes the
 * other thread out of its poll() or lwIP wait. Each thread drops out when
 * its direction ended (the half-close passed on) or failed; the last one
 * hands the relay back to the main context, which joins both, closes both
 * streams and frees it. So nothing closes a stream a thread still uses,
 * and everything but the two threads' own pipes stays on the main thread.
 */

typedef struct _ProxyPipe ProxyPipe;

struct _ProxyPipe {
	ProxyRelay *relay;
	GThread *thread;
	guint8 *buf;
	gsize len;                    /* bytes in buf before the first read (early data) */
	gint cancel_fd;               /* the thread's hold on the cancellable's fd, or -1 */
	GError *error;                /* why it stopped, unless it ended */
	guint64 bytes;                /* written out; the main thread reads it after the join */
};

struct _ProxyRelay {
	Proxy *proxy;
	GIOStream *host, *device;
	gint fd;                      /* host's socket, used by both threads without GSocket */
	GCancellable *cancel;
	GMainContext *context;        /* the main thread's, where the relay ends */
	gint running;                 /* atomic: threads not yet dropped out */
	ProxyPipe out;                /* host -> device */
	ProxyPipe in;                 /* device -> host */
	gchar *name;                  /* for messages: "host-peer > device-peer" */
	GList link;                   /* in proxy->relays */
};

/* Waits until @fd is ready for @events or @cancel_fd (the relay's
 * cancellable's, -1 without one) is readable. */
static gboolean
host_wait(gint fd, short events, gint cancel_fd, GCancellable *cancel, GError **error)
{
	struct pollfd fds[2] = { { .fd = fd, .events = events }, { .fd = cancel_fd, .events = POLLIN } };
	gint rc;

	/* Without the cancellable's fd (out of fds: it is one per relay), look
	 * at the cancellable every 100 ms; the caller retries after a timeout. */
	do
		rc = poll(fds, cancel_fd >= 0 ? 2 : 1, cancel_fd >= 0 ? -1 : 100);
	while (rc < 0 && errno == EINTR);
	if (g_cancellable_set_error_if_cancelled(cancel, error))
		return FALSE;
	if (rc < 0) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "poll: %s",
			    g_strerror(errno));
		return FALSE;
	}
	return TRUE;
}

static void
set_errno_error(GError **error, const char *what, gint errsv)
{
	g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errsv), "%s: %s", what,
		    g_strerror(errsv));
}

/* Like recv(), 0 at EOF; -1 with @error (G_IO_ERROR_CANCELLED when cancelled). */
static gssize
host_recv(ProxyPipe *pipe, guint8 *buf, gsize len, GError **error)
{
	for (;;) {
		gssize n = recv(pipe->relay->fd, buf, len, 0);

		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			set_errno_error(error, "receiving from the host side", errno);
			return -1;
		}
		if (!host_wait(pipe->relay->fd, POLLIN, pipe->cancel_fd, pipe->relay->cancel, error))
			return -1;
	}
}

static gboolean
host_send_all(ProxyPipe *pipe, const guint8 *buf, gsize len, GError **error)
{
	while (len > 0) {
		/* MSG_NOSIGNAL: a peer gone is an error here, not SIGPIPE. */
		gssize n = send(pipe->relay->fd, buf, len, MSG_NOSIGNAL);

		if (n >= 0) {
			buf += n;
			len -= (gsize)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			set_errno_error(error, "sending to the host side", errno);
			return FALSE;
		}
		if (!host_wait(pipe->relay->fd, POLLOUT, pipe->cancel_fd, pipe->relay->cancel, error))
			return FALSE;
	}
	return TRUE;
}

static void
relay_free(ProxyRelay *r)
{
	ProxyPipe *pipes[2] = { &r->out, &r->in };

	for (guint i = 0; i < 2; i++) {
		if (pipes[i]->thread)
			g_thread_join(pipes[i]->thread);
		if (pipes[i]->error && !g_error_matches(pipes[i]->error, G_IO_ERROR,
							G_IO_ERROR_CANCELLED))
			g_debug("%s: %s", r->name, pipes[i]->error->message);
		g_clear_error(&pipes[i]->error);
		g_free(pipes[i]->buf);
	}
	g_queue_unlink(&r->proxy->relays, &r->link);
	r->proxy->count.bytes_out += r->out.bytes;
	r->proxy->count.bytes_in += r->in.bytes;
	r->proxy->count.active--;
	/* lwIP resets a connection closed with unread data, as sockets do:
	 * after an error that is what the other end should see. */
	g_io_stream_close(r->device, NULL, NULL);
	g_io_stream_close(r->host, NULL, NULL);
	g_object_unref(r->device);
	g_object_unref(r->host);
	g_object_unref(r->cancel);
	g_main_context_unref(r->context);
	g_free(r->name);
	g_free(r);
}

static gboolean
relay_ended(gpointer data)
{
	relay_free(data);
	return G_SOURCE_REMOVE;
}

/* Once per thread, not per wait: the cancellable's fd lives while
 * anybody holds it, and making it is a syscall or two. */
static void
pipe_hold_cancel_fd(ProxyPipe *pipe)
{
	GPollFD fd;

	pipe->cancel_fd = g_cancellable_make_pollfd(pipe->relay->cancel, &fd) ? fd.fd : -1;
}

/* The last thing a pipe does, on its thread (or instead of one). */
static gpointer
pipe_drop_out(ProxyPipe *pipe)
{
	ProxyRelay *r = pipe->relay;

	if (pipe->cancel_fd >= 0)
		g_cancellable_release_fd(r->cancel);
	pipe->cancel_fd = -1;
	if (pipe->error)
		g_cancellable_cancel(r->cancel);
	if (g_atomic_int_dec_and_test(&r->running)) {
		/* Deferred even on the main thread: the caller of
		 * proxy_relay_start() must not find the relay gone. */
		GSource *source = g_idle_source_new();

		g_source_set_priority(source, G_PRIORITY_DEFAULT);
		g_source_set_callback(source, relay_ended, r, NULL);
		g_source_attach(source, r->context);
		g_source_unref(source);
	}
	return NULL;
}

static void
pipe_start(ProxyPipe *pipe, const gchar *name, GThreadFunc run)
{
	pipe->cancel_fd = -1;
	pipe->thread = g_thread_try_new(name, run, pipe, &pipe->error);
	if (pipe->thread == NULL)
		pipe_drop_out(pipe);
}

/* host -> device: the early bytes first, then until EOF, then FIN. */
static gpointer
pipe_out_run(gpointer data)
{
	ProxyPipe *pipe = data;
	ProxyRelay *r = pipe->relay;
	GOutputStream *out = g_io_stream_get_output_stream(r->device);
	gsize len = pipe->len;

	pipe_hold_cancel_fd(pipe);

	for (;;) {
		gssize n;

		if (len > 0) {
			gsize written = 0;
			gboolean ok = g_output_stream_write_all(out, pipe->buf, len, &written,
								r->cancel, &pipe->error);

			pipe->bytes += written;
			if (!ok)
				break;
		}
		n = host_recv(pipe, pipe->buf, r->proxy->buffer, &pipe->error);
		if (n < 0)
			break;
		if (n == 0) {
			/* An lwIP connection's output sends FIN and keeps receiving. */
			g_output_stream_close(out, NULL, NULL);
			break;
		}
		len = (gsize)n;
	}
	return pipe_drop_out(pipe);
}

/* device -> host: until EOF, then shutdown(SHUT_WR). */
static gpointer
pipe_in_run(gpointer data)
{
	ProxyPipe *pipe = data;
	ProxyRelay *r = pipe->relay;
	GInputStream *in = g_io_stream_get_input_stream(r->device);

	pipe_hold_cancel_fd(pipe);

	for (;;) {
		gssize n = g_input_stream_read(in, pipe->buf, r->proxy->buffer, r->cancel,
					       &pipe->error);

		if (n < 0)
			break;
		if (n == 0) {
			shutdown(r->fd, SHUT_WR);
			break;
		}
		if (!host_send_all(pipe, pipe->buf, (gsize)n, &pipe->error))
			break;
		pipe->bytes += (guint64)n;
	}
	return pipe_drop_out(pipe);
}

void
proxy_relay_start(Proxy *proxy, GIOStream *host, GIOStream *device, GBytes *early)
{
	ProxyRelay *r = g_new0(ProxyRelay, 1);
	g_autofree gchar *from = proxy_stream_describe_peer(host);
	g_autofree gchar *to = proxy_stream_describe_peer(device);
	gsize early_len = early ? g_bytes_get_size(early) : 0;

	/* Every caller hands a kernel socket's connection (accepted or dialled). */
	g_return_if_fail(G_IS_SOCKET_CONNECTION(host));
	r->proxy = proxy;
	r->host = host;
	r->device = device;
	r->fd = g_socket_get_fd(g_socket_connection_get_socket(G_SOCKET_CONNECTION(host)));
	r->cancel = g_cancellable_new();
	r->context = g_main_context_ref_thread_default();
	r->name = g_strdup_printf("%s > %s", from, to);
	r->link.data = r;
	g_queue_push_tail_link(&proxy->relays, &r->link);
	r->out.relay = r;
	r->in.relay = r;
	r->out.buf = g_malloc(proxy->buffer);
	r->in.buf = g_malloc(proxy->buffer);
	proxy->count.relays++;
	/* Never more than one buffer: the SOCKS reader holds less than that. */
	if (early_len > 0 && early_len <= proxy->buffer) {
		memcpy(r->out.buf, g_bytes_get_data(early, NULL), early_len);
		r->out.len = early_len;
	}
	r->running = 2;
	pipe_start(&r->out, "ncm-proxy-out", pipe_out_run);
	pipe_start(&r->in, "ncm-proxy-in", pipe_in_run);
}

void
proxy_relay_close_all(Proxy *proxy)
{
	for (GList *l = proxy->relays.head; l != NULL; l = l->next)
		g_cancellable_cancel(((ProxyRelay *)l->data)->cancel);
	/* Each relay ends (and unlinks itself) once its threads saw the cancel. */
	while (proxy->relays.head)
		g_main_context_iteration(NULL, TRUE);
}
