/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-proxy-relay.c: one proxied connection's copying stage: two bounded pipes between a kernel socket and lwIP. */
#include <string.h>

#include "ncm-proxy.h"

/*
 * Each direction is a pipe with one buffer of proxy->buffer bytes: read
 * into it only when it is empty, write it out, read again. From lwIP to a
 * socket there is no buffer: the pipe splices (lwIP's received pbufs go
 * into the socket in one writev, at most proxy->buffer bytes a call), and
 * what the socket does not take stays in lwIP, whose window stays shut for
 * it: the copy into a buffer cost the download CPU per byte. A pipe waits
 * on exactly one thing at a time (its input readable, or its output
 * writable), so a slow reader on one side stops only its own pipe's
 * reading: what one connection holds is bounded by its buffer (plus what
 * the kernel and lwIP queue for it), and nothing it does blocks the main
 * loop. Both streams are pollable: kernel sockets poll their fd, lwIP
 * streams wake the main context when their state changes.
 */

/* One dispatch moves at most this many buffers, so that a fast connection
 * yields the main loop to the others. */
#define PIPE_ROUNDS_PER_DISPATCH 4

typedef struct _ProxyPipe ProxyPipe;

struct _ProxyPipe {
	ProxyRelay *relay;
	GIOStream *to;                /* whose output we write (for the half-close) */
	GPollableInputStream *in;
	GPollableOutputStream *out;
	NcmLwipConnection *splice_from; /* splices from here instead of reading (no buf) */
	guint8 *buf;
	gsize off, len;
	gboolean eof;                 /* input ended; shut the output once empty */
	gboolean done;
	GSource *source;              /* what the pipe waits for, or NULL */
	gboolean source_output;       /* ... and whether that is the output */
	guint64 bytes;
};

struct _ProxyRelay {
	Proxy *proxy;
	GIOStream *host, *device;
	ProxyPipe out;                /* host -> device */
	ProxyPipe in;                 /* device -> host */
	gboolean finished;
	gchar *name;                  /* for messages: "host-peer > device-peer" */
	GList link;                   /* in proxy->relays */
};

static gboolean pipe_pump(ProxyPipe *pipe);

/* @abort: both ends are reset, so that neither takes a cut stream for a whole one. */
static void
relay_free(ProxyRelay *r, gboolean abort)
{
	ProxyPipe *pipes[2] = { &r->out, &r->in };

	for (guint i = 0; i < 2; i++) {
		if (pipes[i]->source) {
			g_source_destroy(pipes[i]->source);
			g_source_unref(pipes[i]->source);
		}
		g_free(pipes[i]->buf);
	}
	g_queue_unlink(&r->proxy->relays, &r->link);
	r->proxy->count.bytes_out += r->out.bytes;
	r->proxy->count.bytes_in += r->in.bytes;
	r->proxy->count.active--;
	if (abort) {
		proxy_stream_abort(r->device);
		proxy_stream_abort(r->host);
	} else {
		g_io_stream_close(r->device, NULL, NULL);
		g_io_stream_close(r->host, NULL, NULL);
	}
	g_object_unref(r->device);
	g_object_unref(r->host);
	g_free(r->name);
	g_free(r);
}

/*
 * Ends the relay once, from a pipe's callback: no pipe runs after this.
 * With @error (one side failed or was reset, or ncm-proxy stops) the other
 * side is reset too: a FIN would pass a cut download for a whole one.
 */
static void
relay_finish(ProxyRelay *r, const GError *error)
{
	if (r->finished)
		return;
	r->finished = TRUE;
	if (error)
		g_debug("%s: %s", r->name, error->message);
	relay_free(r, error != NULL);
}

/* The pipe may be gone after the pump: only its answer is used. */
static gboolean
pipe_ready(GObject *stream, gpointer data)
{
	return pipe_pump(data) ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static void
pipe_unwait(ProxyPipe *pipe)
{
	if (pipe->source) {
		g_source_destroy(pipe->source);
		g_source_unref(pipe->source);
		pipe->source = NULL;
	}
}

/*
 * TRUE when the pipe goes on waiting on the source it has: both kinds are
 * level-triggered, so it stays attached, instead of a source made,
 * attached and finalized per chunk (for lwIP, a waiter registered under
 * the connection's lock each time).
 */
static gboolean
pipe_wait(ProxyPipe *pipe, gboolean for_output)
{
	GSource *source;

	if (pipe->source && pipe->source_output == for_output)
		return TRUE;
	pipe_unwait(pipe);
	source = for_output ? g_pollable_output_stream_create_source(pipe->out, NULL)
			    : g_pollable_input_stream_create_source(pipe->in, NULL);
	g_source_set_callback(source, G_SOURCE_FUNC(pipe_ready), pipe, NULL);
	g_source_attach(source, NULL);
	pipe->source = source;
	pipe->source_output = for_output;
	return FALSE;
}

/* Input ended and everything was written: pass the half-close on. */
static void
pipe_end(ProxyPipe *pipe)
{
	ProxyRelay *r = pipe->relay;

	pipe_unwait(pipe);
	proxy_stream_shutdown_write(pipe->to);
	pipe->done = TRUE;
	if (r->out.done && r->in.done)
		relay_finish(r, NULL);
}

/* Whether the pump goes on, and when not, whether it keeps its source. */
typedef enum {
	PIPE_GO_ON,
	PIPE_WAIT_SAME,   /* waits on the source it has */
	PIPE_STOP,        /* waits on a new source, or ended, or failed */
} PipeStep;

static PipeStep
pipe_waits(ProxyPipe *pipe, gboolean for_output)
{
	return pipe_wait(pipe, for_output) ? PIPE_WAIT_SAME : PIPE_STOP;
}

static PipeStep
pipe_write(ProxyPipe *pipe)
{
	g_autoptr(GError) error = NULL;
	gssize n = g_pollable_output_stream_write_nonblocking(pipe->out, pipe->buf + pipe->off,
							      pipe->len, NULL, &error);

	if (n < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
		return pipe_waits(pipe, TRUE);
	if (n < 0) {
		relay_finish(pipe->relay, error);
		return PIPE_STOP;
	}
	pipe->off += (gsize)n;
	pipe->len -= (gsize)n;
	pipe->bytes += (guint64)n;
	if (pipe->len == 0)
		pipe->off = 0;
	return PIPE_GO_ON;
}

static PipeStep
pipe_splice(ProxyPipe *pipe)
{
	g_autoptr(GError) error = NULL;
	gssize n = ncm_lwip_connection_splice_nonblocking(pipe->splice_from, pipe->out,
							  pipe->relay->proxy->buffer, &error);

	/* Readable means the data is there and the socket is what is full. */
	if (n < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
		return pipe_waits(pipe, g_pollable_input_stream_is_readable(pipe->in));
	if (n < 0) {
		relay_finish(pipe->relay, error);
		return PIPE_STOP;
	}
	if (n == 0)
		pipe->eof = TRUE;
	pipe->bytes += (guint64)n;
	return PIPE_GO_ON;
}

static PipeStep
pipe_read(ProxyPipe *pipe)
{
	g_autoptr(GError) error = NULL;
	gssize n = g_pollable_input_stream_read_nonblocking(pipe->in, pipe->buf,
							    pipe->relay->proxy->buffer, NULL,
							    &error);

	if (n < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
		return pipe_waits(pipe, FALSE);
	if (n < 0) {
		relay_finish(pipe->relay, error);
		return PIPE_STOP;
	}
	if (n == 0)
		pipe->eof = TRUE;
	pipe->len = (gsize)n;
	return PIPE_GO_ON;
}

/* TRUE when the pipe waits on the source that dispatched it. */
static gboolean
pipe_pump(ProxyPipe *pipe)
{
	guint rounds = 0;

	for (;;) {
		PipeStep step;

		if (pipe->len > 0) {
			step = pipe_write(pipe);
		} else if (pipe->eof) {
			pipe_end(pipe);
			return FALSE;
		} else if (rounds++ == PIPE_ROUNDS_PER_DISPATCH) {
			/* Level-triggered: fires again at once if there is more. A
			 * splice may wait on either side; any will do. */
			return pipe_wait(pipe, pipe->splice_from != NULL && pipe->source != NULL &&
						       pipe->source_output);
		} else if (pipe->splice_from != NULL) {
			step = pipe_splice(pipe);
		} else {
			step = pipe_read(pipe);
		}
		if (step != PIPE_GO_ON)
			return step == PIPE_WAIT_SAME;
	}
}

static void
pipe_init(ProxyPipe *pipe, ProxyRelay *r, GIOStream *from, GIOStream *to)
{
	pipe->relay = r;
	pipe->to = to;
	pipe->in = G_POLLABLE_INPUT_STREAM(g_io_stream_get_input_stream(from));
	pipe->out = G_POLLABLE_OUTPUT_STREAM(g_io_stream_get_output_stream(to));
	if (NCM_LWIP_IS_CONNECTION(from) && !NCM_LWIP_IS_CONNECTION(to))
		pipe->splice_from = NCM_LWIP_CONNECTION(from);
	else
		pipe->buf = g_malloc(r->proxy->buffer);
}

void
proxy_relay_start(Proxy *proxy, GIOStream *host, GIOStream *device, GBytes *early)
{
	ProxyRelay *r = g_new0(ProxyRelay, 1);
	g_autofree gchar *from = proxy_stream_describe_peer(host);
	g_autofree gchar *to = proxy_stream_describe_peer(device);
	gsize early_len = early ? g_bytes_get_size(early) : 0;

	r->proxy = proxy;
	r->host = host;
	r->device = device;
	r->name = g_strdup_printf("%s > %s", from, to);
	r->link.data = r;
	g_queue_push_tail_link(&proxy->relays, &r->link);
	pipe_init(&r->out, r, host, device);
	pipe_init(&r->in, r, device, host);
	proxy->count.relays++;
	/* Never more than one buffer: the SOCKS reader holds less than that. */
	if (early_len > 0 && early_len <= proxy->buffer) {
		memcpy(r->out.buf, g_bytes_get_data(early, NULL), early_len);
		r->out.len = early_len;
	}
	/* From the main loop, not from here: a pump may end (and free) the
	 * relay, and the caller must not find it gone. */
	pipe_wait(&r->out, r->out.len > 0);
	pipe_wait(&r->in, FALSE);
}

void
proxy_relay_close_all(Proxy *proxy)
{
	g_autoptr(GError) stopping = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED,
							 "ncm-proxy is stopping");

	/* Transfers under way are cut: reset, not ended. */
	while (proxy->relays.head)
		relay_finish(proxy->relays.head->data, stopping);
}
