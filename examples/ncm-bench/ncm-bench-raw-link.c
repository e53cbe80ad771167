/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-bench-raw-link.c: the raw path's link: frames of ncm-bench's EtherType go between the device and ncm-bench past lwIP, counted at the sink. */
#include <string.h>

#include "ncm-bench-raw-link.h"
#include "ncm-bench-proto.h"
#include "ncm-sync.h"

#define ETH_HEADER 14
/* A writable callback should end the wait long before; this only bounds a lost one. */
#define ROOM_WAIT_US 10000

typedef struct {
	NcmLink base;
	BenchRaw raw;
	NcmLink *inner;
	NcmLinkSink stack_sink;
	gpointer stack_data;
	guint64 rx_frames;      /* atomic: the data thread adds, anyone reads */
	guint64 rx_bytes;       /* atomic, as rx_frames */
	guint room;             /* atomic: writable callbacks so far */
	GMutex lock;            /* a leaf lock: only for the room wait */
	GCond cond;             /* signalled with room */
} RawLink;

static RawLink *
raw_link_of(BenchRaw *raw)
{
	return (RawLink *)(void *)((char *)raw - G_STRUCT_OFFSET(RawLink, raw));
}

/* ---- The sink between the device and the stack (the link's data thread) ---------- */

static void
raw_receive(gpointer data, const guint8 *frame, gsize len)
{
	RawLink *l = data;

	/* Only the EtherType is looked at, inside the header the length check covers. */
	if (len >= ETH_HEADER && frame[12] == (BENCH_RAW_ETHERTYPE >> 8) &&
	    frame[13] == (BENCH_RAW_ETHERTYPE & 0xff)) {
		__atomic_add_fetch(&l->rx_frames, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&l->rx_bytes, len, __ATOMIC_RELAXED);
		return;
	}
	if (l->stack_sink.receive)
		l->stack_sink.receive(l->stack_data, frame, len);
}

static void
raw_receive_done(gpointer data)
{
	RawLink *l = data;

	if (l->stack_sink.receive_done)
		l->stack_sink.receive_done(l->stack_data);
}

static void
raw_writable(gpointer data)
{
	RawLink *l = data;

	ncm_mutex_lock(&l->lock);
	__atomic_add_fetch(&l->room, 1, __ATOMIC_RELEASE);
	g_cond_broadcast(&l->cond);
	ncm_mutex_unlock(&l->lock);
	if (l->stack_sink.writable)
		l->stack_sink.writable(l->stack_data);
}

static const NcmLinkSink raw_sink = {
	.receive = raw_receive,
	.receive_done = raw_receive_done,
	.writable = raw_writable,
};

/* ---- NcmLinkOps: the stack's calls, passed on ---------------------------------------- */

static NcmSendResult
raw_link_sendv(NcmLink *link, const GOutputVector *vectors, guint n_vectors)
{
	return ncm_link_sendv(((RawLink *)link)->inner, vectors, n_vectors);
}

static void
raw_link_flush(NcmLink *link)
{
	ncm_link_flush(((RawLink *)link)->inner);
}

static void
raw_link_set_sink(NcmLink *link, const NcmLinkSink *sink, gpointer user_data)
{
	RawLink *l = (RawLink *)link;

	l->stack_sink = *sink;
	l->stack_data = user_data;
	l->inner->ops->set_sink(l->inner, &raw_sink, l);
}

/* The stack's choice holds for the raw frames too: their sender waits for
 * room on a condition with a bound (ROOM_WAIT_US), told once per batch. */
static void
raw_link_set_writable_batched(NcmLink *link, gboolean batched)
{
	ncm_link_set_writable_batched(((RawLink *)link)->inner, batched);
}

static gboolean
raw_link_start(NcmLink *link, GError **error)
{
	return ((RawLink *)link)->inner->ops->start(((RawLink *)link)->inner, error);
}

static void
raw_link_stop(NcmLink *link)
{
	((RawLink *)link)->inner->ops->stop(((RawLink *)link)->inner);
}

static void
raw_link_free(NcmLink *link)
{
	RawLink *l = (RawLink *)link;

	ncm_link_free(l->inner);
	g_mutex_clear(&l->lock);
	g_cond_clear(&l->cond);
	g_free(l);
}

static const NcmLinkOps raw_link_ops = {
	.sendv = raw_link_sendv,
	.flush = raw_link_flush,
	.set_sink = raw_link_set_sink,
	.set_writable_batched = raw_link_set_writable_batched,
	.start = raw_link_start,
	.stop = raw_link_stop,
	.free = raw_link_free,
};

/* ---- BenchRaw ------------------------------------------------------------------------ */

static void
raw_received(BenchRaw *raw, guint64 *ret_frames, guint64 *ret_bytes)
{
	RawLink *l = raw_link_of(raw);

	*ret_frames = __atomic_load_n(&l->rx_frames, __ATOMIC_RELAXED);
	*ret_bytes = __atomic_load_n(&l->rx_bytes, __ATOMIC_RELAXED);
}

/* After NCM_SEND_WOULD_BLOCK: until a writable callback came after @seen, or a while. */
static void
room_wait(RawLink *l, guint seen)
{
	gint64 end = g_get_monotonic_time() + ROOM_WAIT_US;

	ncm_mutex_lock(&l->lock);
	while (__atomic_load_n(&l->room, __ATOMIC_ACQUIRE) == seen &&
	       ncm_cond_wait_until(&l->cond, &l->lock, end))
		;
	ncm_mutex_unlock(&l->lock);
}

static gint64
raw_send(BenchRaw *raw, const guint8 dst[6], gint *stop, GError **error)
{
	RawLink *l = raw_link_of(raw);
	g_autofree guint8 *frame = g_malloc0(raw->max_frame);
	GOutputVector v = {frame, raw->max_frame};
	gint64 sent = 0;

	memcpy(frame, dst, 6);
	memcpy(frame + 6, raw->mac, 6);
	frame[12] = BENCH_RAW_ETHERTYPE >> 8;
	frame[13] = BENCH_RAW_ETHERTYPE & 0xff;
	while (!g_atomic_int_get(stop)) {
		/* Read before the send: a callback between its refusal and the wait still counts. */
		guint seen = __atomic_load_n(&l->room, __ATOMIC_ACQUIRE);
		NcmSendResult r = ncm_link_sendv(l->inner, &v, 1);

		if (r == NCM_SEND_OK) {
			sent++;
		} else if (r == NCM_SEND_WOULD_BLOCK) {
			room_wait(l, seen);
		} else {
			g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
				    "the device refused a %u-byte frame (%s)", raw->max_frame,
				    r == NCM_SEND_CLOSED ? "closed or gone" : "invalid");
			return -1;
		}
	}
	ncm_link_flush(l->inner);
	return sent;
}

NcmLink *
bench_raw_link_new(NcmLink *inner, BenchRaw **ret_raw)
{
	RawLink *l = g_new0(RawLink, 1);

	l->base.ops = &raw_link_ops;
	memcpy(l->base.mac, inner->mac, sizeof(l->base.mac));
	l->base.max_frame = inner->max_frame;
	l->inner = inner;
	g_mutex_init(&l->lock);
	g_cond_init(&l->cond);
	memcpy(l->raw.mac, inner->mac, sizeof(l->raw.mac));
	l->raw.max_frame = inner->max_frame;
	l->raw.received = raw_received;
	l->raw.send = raw_send;
	*ret_raw = &l->raw;
	return &l->base;
}
