/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap.c: the TAP backend: sink writes for RX, a draining reader thread for TX. */
#include "ncm-sync.h"
#include "ncm-tap.h"
#include "ncm-tap-gso.h"
#include "ncm-tap-hold.h"
#include "ncm-tap-l3.h"
#include "ncm-tap-latch.h"
#include "ncm-tap-queue.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

/* Larger than any frame the kernel hands a TAP (64 KiB MTU + Ethernet + VLAN). */
#define TAP_READ_BUF (65536 + 32)
/* A segment's headers: Ethernet, IP with options or IPv6, TCP with options. */
#define TAP_SEG_HDR_MAX (NCM_ETH_HLEN + 60 + 60)

#ifndef TUNSETCARRIER
#define TUNSETCARRIER _IOW('T', 226, int)
#endif

/* Counters with one writer each (RX: the link's data thread; TX: the reader). */
#define STAT_ADD(tap, field, n) __atomic_fetch_add(&(tap)->stats.field, (n), __ATOMIC_RELAXED)
#define STAT_GET(tap, field) __atomic_load_n(&(tap)->stats.field, __ATOMIC_RELAXED)

struct _NcmTap {
	int fd;
	TapLatch room;    /* the link's writable posts it; the reader waits on it when the link is full */
	int stop_fd;      /* ncm_tap_detach() signals it (and posts room, with stopping set) */
	gint stopping;    /* atomic: ncm_tap_detach() asked the reader to stop */
	gchar *name;
	int ifindex;
	gboolean persistent;
	NcmTapMode mode;
	TapL3 l3;         /* TUN mode only */
	NcmPcap *pcap;    /* set while detached, read by both data threads */
	NcmLink *link;    /* owner's thread writes it, only while the reader is stopped */
	GThread *reader;
	guint8 *buf;      /* the reader's frame buffer, NCM_ETH_HLEN + TAP_READ_BUF */
	gboolean vnet;    /* IFF_VNET_HDR: every packet on the fd has a TapVnetHdr */
	TapGro gro;       /* device → kernel coalescing (vnet only); the data thread's */
	TapHold hold;     /* received TCP segments without payload until receive_done (the data thread's) */
	TapVnetHdr rd_hdr;  /* the header of the packet in buf (reader thread) */
	guint8 *seg_buf;  /* the headers of a TSO packet's segment (reader thread, vnet only) */
	TapQueue txq;     /* read while the link was full (reader thread; ncm-tap-queue.h) */
	gsize txq_max;    /* its set limit, which the link's rate may lower (tap_queue_limit_for()) */
	gsize hand_len;   /* the packet in buf goes to the link straight from the fd (reader thread) */
	gboolean unflushed;  /* frames went to the link since its last flush (reader thread) */
	GMainContext *owner;  /* the thread-default context at open: gone_func runs there */
	GSourceFunc gone_func;  /* set while detached */
	gpointer gone_data;
	gint gone;        /* atomic: the interface was deleted from outside */
	NcmTapStats stats;
};

/* ---- device → kernel (the link's data thread) ----------------------------- */

static void
fd_write(gpointer user_data, const TapVnetHdr *h, const guint8 *pkt, gsize len, guint segs)
{
	NcmTap *tap = user_data;
	struct iovec iov[2] = { { (void *)h, sizeof(*h) }, { (void *)pkt, len } };
	ssize_t n;

	do
		n = tap->vnet ? writev(tap->fd, iov, 2) : write(tap->fd, pkt, len);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)(len + (tap->vnet ? sizeof(*h) : 0))) {
		STAT_ADD(tap, rx_frames, segs);
		STAT_ADD(tap, rx_bytes, len);
		if (segs > 1)
			STAT_ADD(tap, rx_super, 1);
	} else if (n < 0 && (errno == EAGAIN || errno == ENOBUFS)) {
		/* Waiting here would stall every other frame of the NTB: drop. */
		STAT_ADD(tap, rx_drops_full, segs);
	} else {
		STAT_ADD(tap, rx_errors, segs);
	}
}

static void
hold_write(gpointer user_data, const guint8 *frame, gsize len)
{
	static const TapVnetHdr plain;

	fd_write(user_data, &plain, frame, len, 1);
}

static void
sink_receive(gpointer user_data, const guint8 *frame, gsize len)
{
	static const TapVnetHdr plain;
	NcmTap *tap = user_data;
	gboolean hold;

	if (tap->pcap)
		ncm_pcap_write(tap->pcap, frame, len);
	/* Asked of the Ethernet frame: TUN mode strips its header below. */
	hold = tap_hold_wants(frame, len);
	if (tap->mode == NCM_TAP_MODE_TUN &&
	    !(frame = tap_l3_from_frame(&tap->l3, tap->link, frame, len, &len)))
		return;
	/* ACKs wait for the batch's end (ncm-tap-hold.h); all stays in order. */
	if (hold) {
		if (tap->vnet)
			tap_gro_flush_for(&tap->gro, TAP_GRO_END_FLUSH, fd_write, tap);
		tap_hold_take(&tap->hold, frame, len, hold_write, tap);
		return;
	}
	tap_hold_flush(&tap->hold, hold_write, tap);
	if (tap->vnet)
		tap_gro_push(&tap->gro, tap->mode == NCM_TAP_MODE_TUN ? 0 : NCM_ETH_HLEN, frame, len,
			     fd_write, tap);
	else
		fd_write(tap, &plain, frame, len, 1);
}

static void
sink_receive_done(gpointer user_data)
{
	NcmTap *tap = user_data;

	/* The batch is over: nothing waits for the next one. The held frames
	 * are older than what GRO holds (a push writes them first). */
	tap_hold_flush(&tap->hold, hold_write, tap);
	if (tap->vnet)
		tap_gro_flush_for(&tap->gro, TAP_GRO_END_FLUSH, fd_write, tap);
	if (tap->mode == NCM_TAP_MODE_TUN)
		tap_l3_receive_done(&tap->l3, tap->link);
	if (tap->pcap)
		ncm_pcap_flush_soon(tap->pcap);
}

static void
sink_writable(gpointer user_data)
{
	NcmTap *tap = user_data;

	/* The event thread: a syscall only when the reader sleeps already. */
	tap_latch_post(&tap->room);
}

static const NcmLinkSink tap_sink = {
	.receive = sink_receive,
	.receive_done = sink_receive_done,
	.writable = sink_writable,
};

/* ---- kernel → device (the reader thread) ---------------------------------- */

static void
eventfd_reset(int fd)
{
	guint64 v;

	while (read(fd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

/* Waits until @fd is readable; FALSE when detach asked the reader to stop. */
static gboolean
wait_readable(NcmTap *tap, int fd)
{
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = tap->stop_fd, .events = POLLIN } };

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			g_warning("tap: poll: %s", g_strerror(errno));
			return FALSE;
		}
		if (p[1].revents)
			return FALSE;
		if (p[0].revents)
			return TRUE;
	}
}

/* One attempt to hand a frame of @n pieces to the link, counted. */
static NcmSendResult
try_sendv(NcmTap *tap, const GOutputVector *v, guint n)
{
	NcmSendResult r = ncm_link_sendv(tap->link, v, n);
	gsize len = 0;

	switch (r) {
	case NCM_SEND_OK:
		for (guint i = 0; i < n; i++)
			len += v[i].size;
		STAT_ADD(tap, tx_frames, 1);
		STAT_ADD(tap, tx_bytes, len);
		tap->unflushed = TRUE;
		if (tap->pcap)
			ncm_pcap_writev(tap->pcap, v, n);
		break;
	case NCM_SEND_WOULD_BLOCK:
		break;
	case NCM_SEND_INVALID:
		STAT_ADD(tap, tx_drops_invalid, 1);
		break;
	case NCM_SEND_CLOSED:
	default:
		STAT_ADD(tap, tx_drops_closed, 1);
		break;
	}
	return r;
}

static NcmSendResult
try_send(NcmTap *tap, const guint8 *frame, gsize len)
{
	GOutputVector v = { frame, len };

	return try_sendv(tap, &v, 1);
}

/* Queued ACKs into the link, oldest first; FALSE when it is full again (the rest wait). */
static gboolean
send_acks(NcmTap *tap)
{
	TapQueued *p;

	while ((p = tap_queue_pop_ack(&tap->txq))) {
		if (try_send(tap, p->frame, p->len) == NCM_SEND_WOULD_BLOCK) {
			tap_queue_unpop_ack(&tap->txq, p);
			return FALSE;
		}
		if (p->flow == NCM_FLOW_NONE)
			STAT_ADD(tap, tx_acks_ahead, 1);
		else
			STAT_ADD(tap, tx_sparse_ahead, 1);
		tap_queue_done(&tap->txq, p);
		g_free(p);
	}
	return TRUE;
}

static gboolean read_ahead(NcmTap *tap);

/*
 * The link said NCM_SEND_WOULD_BLOCK: waits for room, then first empties the
 * TAP's ring into the queue (ncm-tap-queue.h says why) and gives the room to
 * queued ACKs before the caller's frame. Reading at each room rather than at
 * each packet the kernel queues costs no wake-up of its own. FALSE when the
 * reader must stop.
 */
static gboolean
wait_writable(NcmTap *tap)
{
	STAT_ADD(tap, tx_waits, 1);
	for (;;) {
		gint64 t0 = g_get_monotonic_time();

		tap_latch_wait(&tap->room, -1);
		STAT_ADD(tap, tx_room_wait_us, (guint64)(g_get_monotonic_time() - t0));
		if (g_atomic_int_get(&tap->stopping))
			return FALSE;
		if (!read_ahead(tap))
			return FALSE;
		if (send_acks(tap))
			return TRUE;
	}
}

/* One frame of @n pieces into the link; it is kept across NCM_SEND_WOULD_BLOCK. */
static gboolean
send_framev(NcmTap *tap, const GOutputVector *v, guint n)
{
	while (try_sendv(tap, v, n) == NCM_SEND_WOULD_BLOCK)
		if (!wait_writable(tap))
			return FALSE;
	return TRUE;
}

static gboolean
send_frame(NcmTap *tap, const guint8 *frame, gsize len)
{
	GOutputVector v = { frame, len };

	return send_framev(tap, &v, 1);
}

#define READ_ERROR (-1)
#define READ_DROPPED (-2)
#define READ_GONE (-3)

/*
 * The kernel detaches the fd when someone deletes the interface, and every
 * read then fails with EBADFD while poll() keeps reporting an error: retrying
 * would spin for ever. The reader stops and tells the owner instead.
 */
/* What the owner is told, not the tap itself: the owner may free the tap
 * before the source runs. */
typedef struct {
	GSourceFunc func;
	gpointer data;
} GonePost;

static gboolean
gone_dispatch(gpointer data)
{
	GonePost *post = data;

	ncm_tsan_acquire(post);
	return post->func(post->data);
}

static void
gone_free(gpointer data)
{
	ncm_tsan_acquire(data);
	g_free(data);
}

static void
interface_gone(NcmTap *tap)
{
	g_message("tap: the interface %s was deleted; the reader stops", tap->name);
	g_atomic_int_set(&tap->gone, 1);
	if (tap->gone_func) {
		/* An idle source, never g_main_context_invoke(): with nobody
		 * running the owner's loop that would call it right here. */
		GSource *source = g_idle_source_new();
		GonePost *post = g_new(GonePost, 1);

		*post = (GonePost){ tap->gone_func, tap->gone_data };
		g_source_set_callback(source, gone_dispatch, post, gone_free);
		/* The hand-over goes through GMainContext's lock inside GLib,
		 * which ThreadSanitizer cannot see: say what it orders. */
		ncm_tsan_release(post);
		g_source_attach(source, tap->owner);
		g_source_unref(source);
	}
}

/*
 * One packet from the fd into @buf (NCM_ETH_HLEN + TAP_READ_BUF bytes) as an
 * Ethernet frame, its vnet header in @hdr (all zero without one): its
 * length, 0 on EAGAIN, READ_ERROR, READ_DROPPED for a packet TUN mode
 * cannot frame, or READ_GONE once the interface was deleted.
 */
static gssize
read_frame(NcmTap *tap, TapVnetHdr *hdr, guint8 *buf)
{
	gsize head = tap->mode == NCM_TAP_MODE_TUN ? NCM_ETH_HLEN : 0;
	struct iovec iov[2] = { { hdr, sizeof(*hdr) }, { buf + head, TAP_READ_BUF } };
	ssize_t n;

	memset(hdr, 0, sizeof(*hdr));
	do
		n = tap->vnet ? readv(tap->fd, iov, 2) : read(tap->fd, buf + head, TAP_READ_BUF);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n < 0 && errno == EBADFD) {
		STAT_ADD(tap, tx_read_errors, 1);
		interface_gone(tap);
		return READ_GONE;
	}
	if (tap->vnet && n >= 0)
		n = n >= (ssize_t)sizeof(*hdr) ? n - (ssize_t)sizeof(*hdr) : 0;
	if (n <= 0) {
		/* EBADFD while the interface is being torn down, for instance. */
		STAT_ADD(tap, tx_read_errors, 1);
		g_debug("tap: read: %s", n < 0 ? g_strerror(errno) : "end of file");
		g_usleep(10000);
		return READ_ERROR;
	}
	if (head && !tap_l3_to_frame(&tap->l3, tap->link->mac, buf, (gsize)n)) {
		STAT_ADD(tap, tx_drops_invalid, 1);
		return READ_DROPPED;
	}
	if (tap->vnet && hdr->gso_type == TAP_VNET_GSO_NONE) {
		TapVnetHdr h = *hdr;

		/* The kernel counted from what crossed the fd, before our Ethernet header. */
		h.csum_start = (guint16)(h.csum_start + head);
		if (!tap_gso_fill_csum(&h, buf, (gsize)n + head)) {
			STAT_ADD(tap, tx_drops_invalid, 1);
			return READ_DROPPED;
		}
	}
	return (gssize)(n + (ssize_t)head);
}

/* A segment goes into the NTB from the TSO packet itself: no copy of its own. */
static gboolean
segment_emit(gpointer user_data, const guint8 *hdr, gsize hdr_len, const guint8 *payload,
	     gsize payload_len)
{
	GOutputVector v[2] = { { hdr, hdr_len }, { payload, payload_len } };

	return send_framev(user_data, v, payload_len ? 2 : 1);
}

/* One packet into the link: a TSO packet as frames of its gso_size. FALSE when the reader must stop. */
static gboolean
send_packet(NcmTap *tap, const TapVnetHdr *h, guint8 *buf, gsize len)
{
	if (!tap->vnet || h->gso_type == TAP_VNET_GSO_NONE)
		return send_frame(tap, buf, len);
	switch (tap_gso_segment(h, NCM_ETH_HLEN, buf, len, tap->seg_buf, TAP_SEG_HDR_MAX,
				segment_emit, tap)) {
	case TAP_GSO_OK:
		STAT_ADD(tap, tx_gso_packets, 1);
		return TRUE;
	case TAP_GSO_INVALID:
		STAT_ADD(tap, tx_drops_invalid, 1);
		return TRUE;
	case TAP_GSO_STOPPED:
	default:
		return FALSE;
	}
}

/*
 * While the link is full: everything the fd holds into the queue, each
 * packet in a buffer of its own (tap->buf may hold the one being cut).
 * FALSE when the interface is gone.
 */
static gboolean
read_ahead(NcmTap *tap)
{
	gint64 now = g_get_monotonic_time();

	tap->txq.limit = tap_queue_limit_for(tap->txq_max, ncm_link_queue_limit(tap->link));
	/* Not before this: only a full link makes the packet in hand's flow matter. */
	if (tap->hand_len && tap->txq.hand_flow == NCM_FLOW_NONE)
		tap_queue_set_hand(&tap->txq, ncm_flow_bucket(tap->buf, tap->hand_len));
	for (;;) {
		TapQueued *p = g_malloc(sizeof(TapQueued) + NCM_ETH_HLEN + TAP_READ_BUF);
		gssize n = read_frame(tap, &p->hdr, p->frame);

		if (n == READ_DROPPED) {
			g_free(p);
			continue;
		}
		if (n <= 0) {
			g_free(p);
			return n != READ_GONE;
		}
		p->len = (gsize)n;
		p->t_in = now;
		p = g_realloc(p, sizeof(TapQueued) + p->len);
		STAT_ADD(tap, tx_queued, 1);
		if (!tap_queue_push(&tap->txq, p))
			STAT_ADD(tap, tx_drops_queue, 1);
	}
}

/* How long @p waited in the queue, counted (a device short of service waits long). */
static void
count_sojourn(NcmTap *tap, const TapQueued *p)
{
	STAT_ADD(tap, tx_sojourn_us, (guint64)(g_get_monotonic_time() - p->t_in));
	STAT_ADD(tap, tx_sojourn_packets, 1);
}

/*
 * What was read ahead first (ACKs, then the rest in order), then the fd
 * until EAGAIN; one flush at the end. FALSE when the reader must stop.
 */
static gboolean
drain_burst(NcmTap *tap)
{
	for (;;) {
		TapQueued *p;
		gboolean ok;
		gssize n;

		while (!send_acks(tap))
			if (!wait_writable(tap))
				return FALSE;
		if ((p = tap_queue_pop_bulk(&tap->txq))) {
			count_sojourn(tap, p);
			ok = send_packet(tap, &p->hdr, p->frame, p->len);
			tap_queue_done(&tap->txq, p);
			g_free(p);
		} else {
			n = read_frame(tap, &tap->rd_hdr, tap->buf);
			if (n == 0 || n == READ_ERROR)
				break;
			if (n == READ_GONE)
				return FALSE;
			tap->hand_len = n > 0 ? (gsize)n : 0;
			ok = n == READ_DROPPED || send_packet(tap, &tap->rd_hdr, tap->buf, (gsize)n);
			tap->hand_len = 0;
			tap_queue_set_hand(&tap->txq, NCM_FLOW_NONE);
		}
		if (!ok)
			return FALSE;
	}
	if (tap->unflushed) {
		tap->unflushed = FALSE;
		ncm_link_flush(tap->link);
		STAT_ADD(tap, tx_bursts, 1);
		if (tap->pcap)
			ncm_pcap_flush_soon(tap->pcap);
	}
	return TRUE;
}

/*
 * The reader wakes for every frame the kernel sends when it sleeps between
 * them: at 8 devices every ACK of every stream (issue 20: 26 reader wake-ups
 * per MB against 11 at 1 device). As a normal thread each such wake-up
 * preempts the link's event thread in the middle of its batch (its
 * involuntary switches doubled per MB). SCHED_BATCH keeps the wake-up but
 * not the preemption: the reader runs when a CPU is free or the event
 * thread's slice ends, an ACK later by at most that.
 */
static void
reader_sched(void)
{
#ifdef SCHED_BATCH
	struct sched_param sp = {0};

	if (sched_setscheduler(0, SCHED_BATCH, &sp) != 0)
		g_debug("tap: SCHED_BATCH for the reader: %s", g_strerror(errno));
#endif
}

static gpointer
reader_main(gpointer data)
{
	NcmTap *tap = data;

	reader_sched();
	while (wait_readable(tap, tap->fd) && drain_burst(tap))
		;
	return NULL;
}

/* ---- control (the owner's thread) ---------------------------------------- */

gboolean
ncm_tap_attach(NcmTap *tap, NcmLink *link, GError **error)
{
	g_return_val_if_fail(!tap->link, FALSE);

	tap->link = link;
	/* Before the sink: from start() on, the event thread receives into it. */
	tap_hold_init(&tap->hold, tap->mode == NCM_TAP_MODE_TAP);
	link->ops->set_sink(link, &tap_sink, tap);
	/* drain_burst() flushes every burst, and the reader waits with frames
	 * packed only for room, which completions bring. */
	ncm_link_set_sender_flushes(link, TRUE);
	if (!link->ops->start(link, error)) {
		tap->link = NULL;
		return FALSE;
	}
	eventfd_reset(tap->stop_fd);
	g_atomic_int_set(&tap->stopping, 0);
	tap_latch_reset(&tap->room);
	tap->reader = g_thread_new("ncm-tap-tx", reader_main, tap);
	return TRUE;
}

void
ncm_tap_set_tx_queue_limit(NcmTap *tap, gsize bytes)
{
	g_return_if_fail(!tap->link);
	tap->txq.limit = tap->txq_max = bytes;
}

void
ncm_tap_detach(NcmTap *tap)
{
	guint64 one = 1;

	if (!tap->link)
		return;
	/* The reader waits either for the fd (stop_fd wakes it) or for room. */
	g_atomic_int_set(&tap->stopping, 1);
	tap_latch_post(&tap->room);
	if (write(tap->stop_fd, &one, sizeof(one)) < 0)
		g_warning("tap: eventfd write: %s", g_strerror(errno));
	g_thread_join(tap->reader);
	tap->reader = NULL;
	tap_queue_clear(&tap->txq);
	tap->unflushed = FALSE;
	tap->link->ops->stop(tap->link);
	tap->link = NULL;
}

static NcmTap *
tap_new(int fd, NcmTapMode mode, const gchar *name, gboolean vnet)
{
	NcmTap *tap = g_new0(NcmTap, 1);
	int flags = fcntl(fd, F_GETFL);

	/* Neither path may ever block on the fd (see ncm-tap.h). */
	if (flags >= 0)
		fcntl(fd, F_SETFL, flags | O_NONBLOCK);
	tap->fd = fd;
	tap->mode = mode;
	tap_latch_init(&tap->room);
	tap->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	g_assert(tap->stop_fd >= 0);
	tap->name = g_strdup(name ? name : "");
	tap->owner = g_main_context_ref_thread_default();
	tap->buf = g_malloc(NCM_ETH_HLEN + TAP_READ_BUF);
	tap->vnet = vnet;
	tap_queue_init(&tap->txq, TAP_QUEUE_DEFAULT_LIMIT);
	tap->txq_max = TAP_QUEUE_DEFAULT_LIMIT;
	if (vnet) {
		tap_gro_init(&tap->gro);
		tap->seg_buf = g_malloc(TAP_SEG_HDR_MAX);
	}
	return tap;
}

NcmTap *
ncm_tap_new_for_fd(int fd, NcmTapMode mode, const gchar *name)
{
	return tap_new(fd, mode, name, FALSE);
}

static gboolean
tap_open_error(GError **error, int err, const gchar *name, NcmTapMode mode)
{
	const gchar *kind = mode == NCM_TAP_MODE_TUN ? "tun" : "tap";
	/* "ncm%d" is a pattern for the kernel, not a name root can create. */
	const gchar *example = strchr(name, '%') ? "ncm0" : name;

	if (err == ENOENT || err == ENODEV || err == ENXIO)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
			    "no /dev/net/tun: load the tun module (modprobe tun)");
	else if (err == EPERM || err == EACCES)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
			    "creating interface %s needs CAP_NET_ADMIN: run as root, or have "
			    "root create it beforehand with an owner "
			    "(ip tuntap add mode %s user USER name %s) and use that name",
			    name, kind, example);
	else if (err == EBUSY)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY,
			    "interface %s is already in use by another process", name);
	else if (err == EINVAL)
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "%s exists but is not a single-queue %s interface: have root recreate "
			    "it (ip link del %s; ip tuntap add mode %s user USER name %s), or pick "
			    "another name",
			    name, mode == NCM_TAP_MODE_TUN ? "TUN" : "TAP", name, kind, name);
	else
		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err),
			    "cannot open interface %s: %s", name, g_strerror(err));
	return FALSE;
}

NcmTap *
ncm_tap_open(const gchar *name, NcmTapMode mode, GError **error)
{
	return ncm_tap_open_full(name, mode, NCM_TAP_OFFLOAD, error);
}

/*
 * TSO and checksum offload: the kernel may hand us TCP packets of up to
 * 64 KiB and leave TCP/UDP checksums to us. Refused (an old kernel), the fd
 * still carries the header, always plain.
 */
static void
enable_offload(int fd, const gchar *name)
{
	if (ioctl(fd, TUNSETOFFLOAD, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6) < 0)
		g_debug("%s: TUNSETOFFLOAD: %s; no segmentation offload", name, g_strerror(errno));
}

NcmTap *
ncm_tap_open_full(const gchar *name, NcmTapMode mode, NcmTapFlags flags, GError **error)
{
	gboolean vnet = (flags & NCM_TAP_OFFLOAD) != 0;
	struct ifreq ifr = { 0 };
	NcmTap *tap;
	int fd, err;

	if (!name)
		name = "ncm%d";
	if (strlen(name) >= IFNAMSIZ) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
			    "interface name %s is longer than %d characters", name, IFNAMSIZ - 1);
		return NULL;
	}
	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		g_set_error(error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
			    "no permission to open /dev/net/tun: it is normally mode 0666 "
			    "(udev's default rule); run as root or fix its mode");
		return NULL;
	}
	if (fd < 0) {
		tap_open_error(error, errno, name, mode);
		return NULL;
	}
	ifr.ifr_flags = (mode == NCM_TAP_MODE_TUN ? IFF_TUN : IFF_TAP) | IFF_NO_PI |
			(vnet ? IFF_VNET_HDR : 0);
	g_strlcpy(ifr.ifr_name, name, IFNAMSIZ);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		err = errno;
		close(fd);
		tap_open_error(error, err, name, mode);
		return NULL;
	}
	if (vnet)
		enable_offload(fd, ifr.ifr_name);
	tap = tap_new(fd, mode, ifr.ifr_name, vnet);
	tap->ifindex = (int)if_nametoindex(ifr.ifr_name);
	if (ioctl(fd, TUNGETIFF, &ifr) == 0)
		tap->persistent = (ifr.ifr_flags & IFF_PERSIST) != 0;
	return tap;
}

const gchar *
ncm_tap_get_name(NcmTap *tap)
{
	return tap->name;
}

int
ncm_tap_get_ifindex(NcmTap *tap)
{
	return tap->ifindex;
}

gboolean
ncm_tap_has_offload(NcmTap *tap)
{
	return tap->vnet;
}

gboolean
ncm_tap_is_persistent(NcmTap *tap)
{
	return tap->persistent;
}

void
ncm_tap_set_pcap(NcmTap *tap, NcmPcap *pcap)
{
	g_return_if_fail(!tap->link);
	tap->pcap = pcap;
	tap->l3.pcap = pcap;
}

gboolean
ncm_tap_set_carrier(NcmTap *tap, gboolean on, GError **error)
{
	int v = on ? 1 : 0;

	if (ioctl(tap->fd, TUNSETCARRIER, &v) < 0) {
		int err = errno;

		g_set_error(error, G_IO_ERROR, g_io_error_from_errno(err),
			    "setting carrier %s on %s: %s", on ? "on" : "off", tap->name,
			    g_strerror(err));
		return FALSE;
	}
	return TRUE;
}

void
ncm_tap_get_stats(NcmTap *tap, NcmTapStats *ret_stats)
{
	ret_stats->rx_frames = STAT_GET(tap, rx_frames);
	ret_stats->rx_bytes = STAT_GET(tap, rx_bytes);
	ret_stats->rx_drops_full = STAT_GET(tap, rx_drops_full);
	ret_stats->rx_errors = STAT_GET(tap, rx_errors);
	ret_stats->tx_frames = STAT_GET(tap, tx_frames);
	ret_stats->tx_bytes = STAT_GET(tap, tx_bytes);
	ret_stats->tx_bursts = STAT_GET(tap, tx_bursts);
	ret_stats->tx_waits = STAT_GET(tap, tx_waits);
	ret_stats->tx_drops_invalid = STAT_GET(tap, tx_drops_invalid);
	ret_stats->tx_drops_closed = STAT_GET(tap, tx_drops_closed);
	ret_stats->tx_read_errors = STAT_GET(tap, tx_read_errors);
	ret_stats->l3_answers = __atomic_load_n(&tap->l3.answered, __ATOMIC_RELAXED);
	ret_stats->rx_super = STAT_GET(tap, rx_super);
	ret_stats->rx_coalesced = __atomic_load_n(&tap->gro.merged, __ATOMIC_RELAXED);
	G_STATIC_ASSERT(G_N_ELEMENTS(ret_stats->rx_run_ends) == TAP_GRO_N_ENDS);
	for (guint i = 0; i < TAP_GRO_N_ENDS; i++)
		ret_stats->rx_run_ends[i] = __atomic_load_n(&tap->gro.ends[i], __ATOMIC_RELAXED);
	ret_stats->rx_bad_csum = __atomic_load_n(&tap->gro.bad_csum, __ATOMIC_RELAXED);
	ret_stats->tx_gso_packets = STAT_GET(tap, tx_gso_packets);
	ret_stats->tx_queued = STAT_GET(tap, tx_queued);
	ret_stats->tx_acks_ahead = STAT_GET(tap, tx_acks_ahead);
	ret_stats->tx_sparse_ahead = STAT_GET(tap, tx_sparse_ahead);
	ret_stats->tx_drops_queue = STAT_GET(tap, tx_drops_queue);
	ret_stats->tx_sojourn_us = STAT_GET(tap, tx_sojourn_us);
	ret_stats->tx_sojourn_packets = STAT_GET(tap, tx_sojourn_packets);
	ret_stats->tx_room_wait_us = STAT_GET(tap, tx_room_wait_us);
	ret_stats->rx_acks_thinned = __atomic_load_n(&tap->hold.thinned, __ATOMIC_RELAXED);
}

void
ncm_tap_free(NcmTap *tap)
{
	if (!tap)
		return;
	ncm_tap_detach(tap);
	close(tap->fd);
	close(tap->stop_fd);
	g_free(tap->buf);
	g_free(tap->seg_buf);
	tap_gro_clear(&tap->gro);
	g_free(tap->name);
	g_main_context_unref(tap->owner);
	g_free(tap);
}

void
ncm_tap_set_gone_func(NcmTap *tap, GSourceFunc func, gpointer user_data)
{
	g_return_if_fail(!tap->link);
	tap->gone_func = func;
	tap->gone_data = user_data;
}

gboolean
ncm_tap_is_gone(NcmTap *tap)
{
	return g_atomic_int_get(&tap->gone);
}
