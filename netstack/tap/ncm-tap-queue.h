/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-queue.h: kernel → device packets the TAP reader took off the fd while the link was full (private). */
#pragma once

#include <glib.h>

#include "ncm-flow.h"
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
 *
 * A sparse flow's packet goes first too, as fq_codel's new flows do on a
 * NIC: one of at most NCM_FLOW_SPARSE_MAX bytes whose flow has nothing in
 * the bulk queue nor in the reader's hands, and at most NCM_FLOW_AHEAD_MAX
 * bytes ahead with it. A DNS query, a ping, an ssh keystroke or a game's
 * update then waits only for the driver's queue, not behind a bulk
 * upload's (ncm-bench's rtt_under_up; issue 20). A flow that sends more
 * than a trickle gets packets into the bulk queue, and then all of its
 * packets take their turn behind the bulk; nothing of one flow passes
 * another of its own.
 */

/* One packet as read_frame() left it: an Ethernet frame and its vnet header. */
typedef struct {
	TapVnetHdr hdr;
	gsize len;
	guint flow;    /* its bucket of TapQueue.flows, or NCM_FLOW_NONE (ACKs) */
	gboolean ahead; /* a sparse flow's: queued with the ACKs */
	gint64 t_in;   /* when it was read (monotonic µs), for the queue's wait in the stats */
	guint8 frame[];
} TapQueued;

/* The ACKs kept at most: ACKs are small, and more than this is no longer a trickle. */
#define TAP_QUEUE_MAX_ACKS 4096

typedef struct {
	GQueue acks;     /* pure ACKs and sparse flows' packets, oldest first */
	GQueue bulk;     /* everything else, oldest first */
	gsize bulk_bytes;
	gsize sparse_bytes; /* the sparse packets in acks, also held to @limit */
	gsize limit;     /* bulk bytes past which packets are dropped */
	/* Per flow bucket: its packets queued or being sent (tap_queue_done());
	 * ahead: those queued with the ACKs. */
	NcmFlowCounts flows;
	guint hand_flow; /* the flow of the packet the reader sends straight from the fd */
	guint64 dropped; /* packets dropped over the limit */
	guint64 dropped_acks;
} TapQueue;

/* The default limit: about 15 ms of a high-speed link at 280 Mbit/s. A
 * build may set another (-DTAP_QUEUE_DEFAULT_LIMIT=...) to compare. */
#ifndef TAP_QUEUE_DEFAULT_LIMIT
#define TAP_QUEUE_DEFAULT_LIMIT (512u * 1024u)
#endif

/*
 * The limit while the link lets @link_limit bytes queue (0 = unlimited):
 * as much again here, so that a packet waits about as long in this queue
 * as in the driver's, from @max (the set limit) down to two of the largest
 * packets a TAP hands over (64 KiB with TSO). At a paced slow device's
 * rate, 512 KiB is a long wait for every packet behind a bulk upload:
 * 84 ms at 50 Mbit/s.
 */
gsize tap_queue_limit_for(gsize max, guint64 link_limit);

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
 * or a sparse flow's packet to the queue that goes first, anything else to
 * the bulk queue unless that holds @limit bytes already. FALSE when it was
 * dropped.
 */
gboolean tap_queue_push(TapQueue *q, TapQueued *p);
/* The oldest of those that go first, or NULL; the caller owns it. */
TapQueued *tap_queue_pop_ack(TapQueue *q);
/* The oldest bulk packet, or NULL; the caller owns it. */
TapQueued *tap_queue_pop_bulk(TapQueue *q);
/* Puts one the link refused back at the head. */
void tap_queue_unpop_ack(TapQueue *q, TapQueued *p);
/* A popped packet was sent or dropped: its flow has one fewer. Until then
 * no later packet of its flow counts as sparse, so none passes it. */
void tap_queue_done(TapQueue *q, const TapQueued *p);
/* The reader sends a packet straight from the fd (@flow, or
 * NCM_FLOW_NONE when done): while it waits for room, that flow's
 * next packets are not sparse either. */
static inline void
tap_queue_set_hand(TapQueue *q, guint flow)
{
	q->hand_flow = flow;
}

G_END_DECLS
