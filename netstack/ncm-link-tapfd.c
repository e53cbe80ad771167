/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-link-tapfd.c: NcmLink over a TAP fd: a reader thread feeds the sink, sends are writev(). */
#define G_LOG_DOMAIN "ncm-link"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ncm-link-private.h"

/* Frames handed to the sink between two receive_done calls: like the
 * datagrams of one NTB, a burst is bounded so output gets flushed. */
#define TAP_BURST 64
/* TAP never delivers more than the device MTU plus headers; a buffer of
 * 64 KiB also copes with a larger MTU set from outside. */
#define TAP_BUF_SIZE 65536
#define TAP_MAX_VECTORS 64

typedef struct {
	NcmLink link;
	int fd;
	int wake_fd;      /* eventfd: stop requested or poll set changed */
	GThread *thread;
	NcmLinkSink sink;
	gpointer sink_data;
	gint stopping;     /* atomic */
	gint want_writable; /* atomic: a send hit EAGAIN */
	guint8 *buf;       /* reader thread only */
} TapLink;

/* Reader thread: one burst of frames, until EAGAIN or TAP_BURST. */
static gboolean
tap_read_burst(TapLink *t)
{
	guint frames = 0;

	while (frames < TAP_BURST) {
		ssize_t n = read(t->fd, t->buf, TAP_BUF_SIZE);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		t->sink.receive(t->sink_data, t->buf, (gsize)n);
		frames++;
	}
	if (frames > 0 && t->sink.receive_done != NULL)
		t->sink.receive_done(t->sink_data);
	return frames == TAP_BURST;
}

static gpointer
tap_thread(gpointer data)
{
	TapLink *t = data;

	while (!g_atomic_int_get(&t->stopping)) {
		struct pollfd fds[2] = {
			{.fd = t->fd, .events = POLLIN},
			{.fd = t->wake_fd, .events = POLLIN},
		};
		guint64 v;

		if (g_atomic_int_get(&t->want_writable))
			fds[0].events |= POLLOUT;
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		if (fds[1].revents & POLLIN)
			(void)!read(t->wake_fd, &v, sizeof(v));
		if ((fds[0].revents & POLLOUT) && g_atomic_int_compare_and_exchange(&t->want_writable, 1, 0) &&
		    t->sink.writable != NULL)
			t->sink.writable(t->sink_data);
		if (fds[0].revents & POLLIN) {
			/* Full burst: more may wait; loop without sleeping. */
			while (tap_read_burst(t) && !g_atomic_int_get(&t->stopping))
				;
		}
		if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL))
			break;
	}
	return NULL;
}

static void
tap_kick(TapLink *t)
{
	guint64 one = 1;

	(void)!write(t->wake_fd, &one, sizeof(one));
}

static NcmSendResult
tap_sendv(NcmLink *link, const GOutputVector *vectors, guint n_vectors)
{
	TapLink *t = (TapLink *)link;
	struct iovec iov[TAP_MAX_VECTORS];
	gsize total = 0;
	ssize_t n;

	if (n_vectors > TAP_MAX_VECTORS)
		return NCM_SEND_INVALID;
	for (guint i = 0; i < n_vectors; i++) {
		iov[i] = (struct iovec){(void *)vectors[i].buffer, vectors[i].size};
		total += vectors[i].size;
	}
	if (total < 14 || total > link->max_frame)
		return NCM_SEND_INVALID;
	do
		n = writev(t->fd, iov, (int)n_vectors);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return NCM_SEND_OK;
	if (errno == EAGAIN) {
		g_atomic_int_set(&t->want_writable, 1);
		tap_kick(t);
		return NCM_SEND_WOULD_BLOCK;
	}
	/* EIO: the interface is down; EINVAL and the like: a bad frame. */
	return errno == EIO || errno == EBADF ? NCM_SEND_CLOSED : NCM_SEND_INVALID;
}

static void
tap_flush(NcmLink *link)
{
	/* Every writev() is a frame on the wire already. */
}

static void
tap_set_sink(NcmLink *link, const NcmLinkSink *sink, gpointer user_data)
{
	TapLink *t = (TapLink *)link;

	t->sink = *sink;
	t->sink_data = user_data;
}

static gboolean
tap_start(NcmLink *link, GError **error)
{
	TapLink *t = (TapLink *)link;
	int flags = fcntl(t->fd, F_GETFL);

	if (t->thread != NULL)
		return TRUE;
	if (flags < 0 || fcntl(t->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
			    "TAP fd %d: cannot make it non-blocking: %s", t->fd, g_strerror(errno));
		return FALSE;
	}
	/* Kept until tap_free(): a drainer may still kick it after a stop. */
	if (t->wake_fd < 0)
		t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->wake_fd < 0) {
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "eventfd: %s",
			    g_strerror(errno));
		return FALSE;
	}
	g_atomic_int_set(&t->stopping, 0);
	t->thread = g_thread_new("ncm-tap-rx", tap_thread, t);
	return TRUE;
}

static void
tap_stop(NcmLink *link)
{
	TapLink *t = (TapLink *)link;

	if (t->thread == NULL)
		return;
	g_atomic_int_set(&t->stopping, 1);
	tap_kick(t);
	g_thread_join(t->thread);
	t->thread = NULL;
}

static void
tap_free(NcmLink *link)
{
	TapLink *t = (TapLink *)link;

	tap_stop(link);
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	close(t->fd);
	g_free(t->buf);
	g_free(t);
}

static const NcmLinkOps tap_ops = {
	.sendv = tap_sendv,
	.flush = tap_flush,
	.set_sink = tap_set_sink,
	.start = tap_start,
	.stop = tap_stop,
	.free = tap_free,
};

NcmLink *
ncm_link_new_for_tap_fd(int fd, const guint8 mac[6], guint max_frame)
{
	TapLink *t = g_new0(TapLink, 1);

	t->link.ops = &tap_ops;
	memcpy(t->link.mac, mac, 6);
	t->link.max_frame = max_frame;
	t->fd = fd;
	t->wake_fd = -1;
	t->buf = g_malloc(TAP_BUF_SIZE);
	return &t->link;
}
