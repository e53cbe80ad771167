/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-queue.c: the reader's queue while the link is full: pure ACKs and sparse flows first, a byte limit on the rest. */
#include <string.h>

#include "ncm-tap-queue.h"

#include "ncm-ack.h"
#include "ncm-le.h"

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10
#define TCP_URG 0x20

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
	*q = (TapQueue){ .limit = limit, .hand_flow = TAP_QUEUE_NO_FLOW };
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
	memset(q->flows, 0, sizeof(q->flows));
	q->hand_flow = TAP_QUEUE_NO_FLOW;
}

static guint32
mix(guint32 h, guint8 byte)
{
	return (h ^ byte) * 16777619u;
}

/* Later fragments carry no ports: no fragment's ports count, so that all
 * of a datagram's fragments share a bucket. */
guint
tap_queue_flow(const guint8 *f, gsize len)
{
	guint16 type = ncm_be16_at(f, len, 12);
	gsize l3 = 14, addrs = 0, n_addrs = 0, l4 = 0;
	guint32 h = 2166136261u;
	guint8 proto = 0;

	if (type == 0x0800) {
		proto = ncm_le8_at(f, len, l3 + 9);
		addrs = l3 + 12;
		n_addrs = 8;
		if (!(ncm_be16_at(f, len, l3 + 6) & 0x3fff))
			l4 = l3 + (ncm_le8_at(f, len, l3) & 0x0fu) * 4u;
	} else if (type == 0x86dd) {
		proto = ncm_le8_at(f, len, l3 + 6);
		addrs = l3 + 8;
		n_addrs = 32;
		l4 = l3 + 40;
	}
	h = mix(mix(mix(h, (guint8)(type >> 8)), (guint8)type), proto);
	for (gsize i = 0; i < n_addrs; i++)
		h = mix(h, ncm_le8_at(f, len, addrs + i));
	if (l4 && (proto == 6 || proto == 17)) {
		for (gsize i = 0; i < 4; i++)
			h = mix(h, ncm_le8_at(f, len, l4 + i));
	}
	return h % TAP_QUEUE_FLOWS;
}

/* ncm_ack_classify() walks the headers as ACK merging does; what counts as a
 * pure ACK here is looser than its `pure` (any options, PSH, ECE, CWR). */
gboolean
tap_queue_is_ack(const TapVnetHdr *h, const guint8 *f, gsize len)
{
	NcmAckInfo ai;
	guint8 flags;

	if (h->gso_type != TAP_VNET_GSO_NONE || !ncm_ack_classify(f, len, &ai) || ai.payload)
		return FALSE;
	flags = ncm_le8_at(f, len, ai.l4 + 13u);
	return (flags & TCP_ACK) && !(flags & (TCP_FIN | TCP_SYN | TCP_RST | TCP_URG));
}

static gboolean
is_sparse(const TapQueue *q, const TapQueued *p)
{
	return p->hdr.gso_type == TAP_VNET_GSO_NONE && p->len <= TAP_QUEUE_SPARSE_MAX &&
	       q->flows[p->flow] == 0 && p->flow != q->hand_flow && q->sparse_bytes < q->limit &&
	       q->acks.length < TAP_QUEUE_MAX_ACKS;
}

gboolean
tap_queue_push(TapQueue *q, TapQueued *p)
{
	p->flow = TAP_QUEUE_NO_FLOW;
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
	p->flow = tap_queue_flow(p->frame, p->len);
	if (is_sparse(q, p)) {
		g_queue_push_tail(&q->acks, p);
		q->sparse_bytes += p->len;
	} else if (q->bulk_bytes < q->limit) {
		g_queue_push_tail(&q->bulk, p);
		q->bulk_bytes += p->len;
	} else {
		q->dropped++;
		g_free(p);
		return FALSE;
	}
	q->flows[p->flow]++;
	return TRUE;
}

TapQueued *
tap_queue_pop_ack(TapQueue *q)
{
	TapQueued *p = g_queue_pop_head(&q->acks);

	if (p && p->flow != TAP_QUEUE_NO_FLOW)
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
	if (p->flow != TAP_QUEUE_NO_FLOW)
		q->sparse_bytes += p->len;
}

void
tap_queue_done(TapQueue *q, const TapQueued *p)
{
	if (p->flow != TAP_QUEUE_NO_FLOW && q->flows[p->flow] > 0)
		q->flows[p->flow]--;
}
