/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-flow.h: which flow an Ethernet frame belongs to, for the queues that let sparse flows go first (TAP and lwIP). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Flows are told apart by a hash into this many buckets; two that share
 * one only lose the first's head start. */
#define NCM_FLOW_BUCKETS 256u
/* No bucket: a frame the queue does not count (ncm-tun's pure ACKs). */
#define NCM_FLOW_NONE G_MAXUINT
/* A sparse flow's frame is at most one of the usual MTU, never a GSO one. */
#define NCM_FLOW_SPARSE_MAX 1514u
/* Bytes of one flow that may wait ahead of the bulk, as fq_codel gives a
 * new flow a quantum: two full frames, or a burst of small ones (a probe
 * every 10 ms waits for up to 16 ms of a paced link's queue, and a busy
 * sender hands over several at once). A flow with anything in the bulk
 * queue has nothing ahead: no frame passes an older one of its flow. */
#define NCM_FLOW_AHEAD_MAX (2u * NCM_FLOW_SPARSE_MAX)

/*
 * The sparse rule's state, per bucket: the flow's frames queued or being
 * sent, and of them those waiting ahead of the bulk, with their bytes.
 * ncm-tun's queue and lwIP's output queue keep one each, under their own
 * lock, so that both follow one rule.
 */
typedef struct {
	guint32 queued[NCM_FLOW_BUCKETS];
	guint32 ahead[NCM_FLOW_BUCKETS];
	guint32 ahead_bytes[NCM_FLOW_BUCKETS];
} NcmFlowCounts;

/* Whether a frame of @len bytes of @flow may go ahead of the bulk: at most
 * NCM_FLOW_SPARSE_MAX bytes, nothing of its flow behind the bulk, and at
 * most NCM_FLOW_AHEAD_MAX bytes of it ahead with it. */
static inline gboolean
ncm_flow_may_pass(const NcmFlowCounts *c, guint flow, gsize len)
{
	return flow < NCM_FLOW_BUCKETS && len > 0 && len <= NCM_FLOW_SPARSE_MAX &&
	       c->queued[flow] == c->ahead[flow] && c->ahead_bytes[flow] + len <= NCM_FLOW_AHEAD_MAX;
}

/* A frame of @flow was queued, ahead of the bulk or not. */
static inline void
ncm_flow_counts_add(NcmFlowCounts *c, guint flow, gsize len, gboolean ahead)
{
	if (flow >= NCM_FLOW_BUCKETS)
		return;
	c->queued[flow]++;
	if (ahead) {
		c->ahead[flow]++;
		c->ahead_bytes[flow] += (guint32)len;
	}
}

/* A frame that ncm_flow_counts_add() counted was sent or dropped. */
static inline void
ncm_flow_counts_done(NcmFlowCounts *c, guint flow, gsize len, gboolean ahead)
{
	if (flow >= NCM_FLOW_BUCKETS)
		return;
	if (c->queued[flow] > 0)
		c->queued[flow]--;
	if (ahead && c->ahead[flow] > 0) {
		c->ahead[flow]--;
		c->ahead_bytes[flow] -= (guint32)MIN(len, c->ahead_bytes[flow]);
	}
}

/*
 * The frame's bucket, from a hash of its addresses, protocol and, for TCP
 * and UDP, ports: equal for every frame of a flow, whatever it carries. No
 * fragment's ports count (later ones carry none), so all of a datagram's
 * fragments share it. Every read is bounds-checked: a short frame still
 * has a bucket.
 */
guint ncm_flow_bucket(const guint8 *frame, gsize len);

/*
 * TRUE when @frame is a pure TCP ACK: IPv4 unfragmented or IPv6 without
 * extension headers, no payload, and of the flags only ACK (with PSH, ECE
 * or CWR); any options (looser than ACK merging's "pure", ncm-ack.h).
 */
gboolean ncm_flow_is_pure_ack(const guint8 *frame, gsize len);

G_END_DECLS
