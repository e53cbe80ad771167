/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-queue.c: the reader's queue while the link is full: pure ACKs and sparse flows first, a byte limit on the rest. */
#include <string.h>

#include "ncm-tap-queue.h"


#define TAP_QUEUE_MIN_LIMIT (2u * 65536u)

gsize
tap_queue_limit_for(gsize max, guint64 link_limit)
{
	if (!link_limit || link_limit >= max)
		return max;
	return MIN(max, MAX(TAP_QUEUE_MIN_LIMIT, (gsize)link_limit));
}

void
tap_queue_init(TapQueue *q, gsize limit)
{
	*q = (TapQueue){ .limit = limit, .hand_flow = NCM_FLOW_NONE };
	g_queue_init(&q->acks);
	g_queue_init(&q->bulk);
}

void
tap_queue_clear(TapQueue *q)
{
	g_queue_clear_full(&q->acks, g_free);
	g_queue_clear_full(&q->bulk, g_free);
	q->bulk_bytes = 0;
	q->sparse_bytes = 0;
	memset(&q->flows, 0, sizeof(q->flows));
	q->hand_flow = NCM_FLOW_NONE;
}

gboolean
tap_queue_is_ack(const TapVnetHdr *h, const guint8 *f, gsize len)
{
	return h->gso_type == TAP_VNET_GSO_NONE && ncm_flow_is_pure_ack(f, len);
}

static gboolean
is_sparse(const TapQueue *q, const TapQueued *p)
{
	return p->hdr.gso_type == TAP_VNET_GSO_NONE && ncm_flow_may_pass(&q->flows, p->flow, p->len) &&
	       p->flow != q->hand_flow && q->sparse_bytes < q->limit &&
	       q->acks.length < TAP_QUEUE_MAX_ACKS;
}

gboolean
tap_queue_push(TapQueue *q, TapQueued *p)
{
	p->flow = NCM_FLOW_NONE;
	p->ahead = FALSE;
	if (tap_queue_is_ack(&p->hdr, p->frame, p->len)) {
		if (q->acks.length < TAP_QUEUE_MAX_ACKS) {
			g_queue_push_tail(&q->acks, p);
			return TRUE;
		}
		q->dropped_acks++;
		q->dropped++;
		g_free(p);
		return FALSE;
	}
	p->flow = ncm_flow_bucket(p->frame, p->len);
	if (is_sparse(q, p)) {
		g_queue_push_tail(&q->acks, p);
		q->sparse_bytes += p->len;
		p->ahead = TRUE;
	} else if (q->bulk_bytes < q->limit) {
		g_queue_push_tail(&q->bulk, p);
		q->bulk_bytes += p->len;
	} else {
		q->dropped++;
		g_free(p);
		return FALSE;
	}
	ncm_flow_counts_add(&q->flows, p->flow, p->len, p->ahead);
	return TRUE;
}

TapQueued *
tap_queue_pop_ack(TapQueue *q)
{
	TapQueued *p = g_queue_pop_head(&q->acks);

	if (p && p->flow != NCM_FLOW_NONE)
		q->sparse_bytes -= p->len;
	return p;
}

TapQueued *
tap_queue_pop_bulk(TapQueue *q)
{
	TapQueued *p = g_queue_pop_head(&q->bulk);

	if (p)
		q->bulk_bytes -= p->len;
	return p;
}

void
tap_queue_unpop_ack(TapQueue *q, TapQueued *p)
{
	g_queue_push_head(&q->acks, p);
	if (p->flow != NCM_FLOW_NONE)
		q->sparse_bytes += p->len;
}

void
tap_queue_done(TapQueue *q, const TapQueued *p)
{
	ncm_flow_counts_done(&q->flows, p->flow, p->len, p->ahead);
}
