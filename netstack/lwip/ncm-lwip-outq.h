/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-outq.h: a netif's frames on their way to its link, sent outside lwIP's core lock (private). */
#pragma once

#include <glib.h>

#include "ncm-flow.h"

/*
 * lwIP's output runs under the core lock, which every device's writer
 * threads and the link's event thread share. Packing a frame into an NTB
 * (a copy, the link's own lock) and submitting a full NTB (a syscall) need
 * no lwIP state, so the netif only queues its frames here under the core
 * lock, and whichever thread released the lock sends them. One thread at a
 * time drains a queue (a flow's frames keep lwIP's order); the others
 * leave their frames to it and go on. Different netifs drain in parallel.
 *
 * A sparse flow's frame goes first, as in ncm-tun's queue
 * (netstack/tap/ncm-tap-queue.h): one of at most NCM_FLOW_SPARSE_MAX bytes
 * whose flow has nothing in the main queue and at most NCM_FLOW_AHEAD_MAX
 * bytes ahead with it (the netif leaves pure ACKs out: ncm-lwip-netif.c
 * says why). lwIP's TCP fills this queue
 * up to its send buffer (1 MiB) while the link is full, and a DNS query,
 * a ping reply or another connection's ACK waited behind all of it.
 *
 * Items are opaque (the netif's pbuf references); NlwOutqOps says how to
 * send and free one, so the queue is tested without lwIP.
 */

typedef enum {
	NLW_OUTQ_SENT,    /* the link took it */
	/* The link has no room: stays queued, and is the first item sent
	 * when room comes, before sparse frames queued meanwhile (the link
	 * may have taken part of it). */
	NLW_OUTQ_BLOCKED,
	NLW_OUTQ_DROPPED, /* the link refused it for good: freed */
} NlwOutqSend;

typedef struct {
	NlwOutqSend (*send)(gpointer item, gpointer data);
	void (*free)(gpointer item);
	/* After a drain sent something or was blocked: closes the link's
	 * open NTB (a blocked link needs it flushed to report room again). */
	void (*flush)(gpointer data);
} NlwOutqOps;

/* Sparse frames held at most; more go to the main queue, in order. */
#define NLW_OUTQ_AHEAD 256u

typedef struct {
	gpointer item;
	guint flow;   /* its bucket, or NCM_FLOW_NONE */
	guint len;    /* its bytes, in the ahead ring (0 in the main one) */
} NlwOutqItem;

/* A ring of items; a drain reads [head, head + len) without the lock. */
typedef struct {
	NlwOutqItem *items;
	guint size, head, len;
} NlwOutqRing;

typedef struct {
	/* Guards everything below. Taken inside the core lock or without it;
	 * the link's own lock is taken inside it only by ops->send and
	 * ops->flush, which run without it held (see nlw_outq_drain()). */
	GMutex lock;
	GCond idle; /* draining and holds went to 0 (nlw_outq_close() waits) */
	NlwOutqRing main;
	NlwOutqRing ahead;  /* sparse flows' frames: sent first */
	NcmFlowCounts flows; /* frames queued or being sent; ahead: in the ahead ring */
	/* A thread is sending: the only one that reads or pops ring[head..]. */
	gboolean draining;
	/* The link refused: nothing is tried until nlw_outq_writable(). */
	gboolean blocked;
	NlwOutqRing *refused; /* whose head item the link refused, or NULL */
	guint writable_epoch; /* bumped by each nlw_outq_writable() */
	guint holds;          /* drains promised by nlw_outq_hold() */
	gboolean closed;
} NlwOutq;

void nlw_outq_init(NlwOutq *q, guint size);
/* Frees what is still queued with @free; nlw_outq_close() came first. */
void nlw_outq_clear(NlwOutq *q, void (*free_item)(gpointer item));

typedef enum {
	NLW_OUTQ_PUSH_REFUSED = 0, /* full or closed: the item stays the caller's */
	NLW_OUTQ_PUSH_QUEUED,      /* in line behind the bulk */
	NLW_OUTQ_PUSH_AHEAD,       /* a sparse flow's: goes before the bulk */
} NlwOutqPush;

/* Any thread. @flow: the frame's bucket (ncm_flow_bucket())
 * or NCM_FLOW_NONE; @sparse_len: its length if it may go ahead (at most
 * NCM_FLOW_SPARSE_MAX bytes), else 0. @ret_blocked: whether the item
 * waits for link room. */
NlwOutqPush nlw_outq_push(NlwOutq *q, gpointer item, guint flow, guint sparse_len,
			  gboolean *ret_blocked);
/* Any thread: sends what is queued, unless another thread is at it
 * (it sends this thread's items too) or the link is blocked. */
void nlw_outq_drain(NlwOutq *q, const NlwOutqOps *ops, gpointer data);
/* The link has room again: unblocks and drains. */
void nlw_outq_writable(NlwOutq *q, const NlwOutqOps *ops, gpointer data);
/* A drain to come on another code path (after a lock is released): the
 * queue is not closed under it. nlw_outq_drain_held() drains and ends it. */
void nlw_outq_hold(NlwOutq *q);
void nlw_outq_drain_held(NlwOutq *q, const NlwOutqOps *ops, gpointer data);
/* No more drains: waits for the one running and for every hold. */
void nlw_outq_close(NlwOutq *q);
