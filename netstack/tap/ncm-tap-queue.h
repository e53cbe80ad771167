/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-queue.h: kernel → device packets the TAP reader took off the fd while the link was full (private). */
#pragma once

#include <glib.h>

#include "ncm-tap-gso.h"

G_BEGIN_DECLS

/*
 * Why: a TAP is not a NIC. tun orphans every packet it queues (so TCP small
 * queues stop counting it), never stops its queue (so the qdisc, fq_codel
 * included, holds nothing) and drops only when its ring of tx_queue_len
 * packets, each up to 64 KiB with TSO, is full. A bulk upload then fills
 * that ring up to its socket's send buffer, megabytes, and everything else
 * the host sends waits behind it in one FIFO: in tcp_bidir the download's
 * ACKs waited 150-240 ms behind 3 MB of upload (tests/bench/RESULTS.md),
 * and the download crawled.
 *
 * The reader therefore keeps the ring short: while the link would block,
 * each time it has room again the reader first empties the ring into this
 * queue (at each room, not at each packet the kernel queues: that would
 * cost a wake-up per packet). Pure TCP ACKs go to the link first;
 * everything else keeps its order, and what comes past @limit bytes of it
 * is dropped, the tail drop the ring would have done much later, so that
 * the host's TCP sees its queue (a few ms of the link) instead of a
 * bottomless one.
 */

/* One packet as read_frame() left it: an Ethernet frame and its vnet header. */
typedef struct {
	TapVnetHdr hdr;
	gsize len;
	gint64 t_in;   /* when it was read (monotonic µs), for the queue's wait in the stats */
	guint8 frame[];
} TapQueued;

/* The ACKs kept at most: ACKs are small, and more than this is no longer a trickle. */
#define TAP_QUEUE_MAX_ACKS 4096

typedef struct {
	GQueue acks;     /* pure ACKs, oldest first */
	GQueue bulk;     /* everything else, oldest first */
	gsize bulk_bytes;
	gsize limit;     /* bulk bytes past which packets are dropped */
	guint64 dropped; /* packets dropped over the limit */
	guint64 dropped_acks;
} TapQueue;

/* The default limit: about 15 ms of a high-speed link at 280 Mbit/s. A
 * build may set another (-DTAP_QUEUE_DEFAULT_LIMIT=...) to compare. */
#ifndef TAP_QUEUE_DEFAULT_LIMIT
#define TAP_QUEUE_DEFAULT_LIMIT (512u * 1024u)
#endif

void tap_queue_init(TapQueue *q, gsize limit);
/* Frees every packet still queued. */
void tap_queue_clear(TapQueue *q);
/*
 * TRUE when @frame (an Ethernet frame, no GSO) is a pure TCP ACK: IPv4
 * unfragmented or IPv6 without extension headers, no payload, and of the
 * flags only ACK (with PSH, ECE or CWR); any options. Such a segment may pass
 * data of other flows and of its own: the receiver takes ACKs in any order.
 */
gboolean tap_queue_is_ack(const TapVnetHdr *h, const guint8 *frame, gsize len);
/*
 * Takes @p (g_malloc()ed, owned by the queue from now on or freed): an ACK
 * to the ACK queue, anything else to the bulk queue unless that holds
 * @limit bytes already. FALSE when it was dropped.
 */
gboolean tap_queue_push(TapQueue *q, TapQueued *p);
/* The oldest ACK, or NULL; the caller owns it. */
TapQueued *tap_queue_pop_ack(TapQueue *q);
/* The oldest bulk packet, or NULL; the caller owns it. */
TapQueued *tap_queue_pop_bulk(TapQueue *q);
/* Puts an ACK the link refused back at the head. */
void tap_queue_unpop_ack(TapQueue *q, TapQueued *p);

G_END_DECLS
