/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-queue.c: the reader's queue while the link is full: pure ACKs first, a byte limit on the rest. */
#include "ncm-tap-queue.h"

#include "ncm-ack.h"
#include "ncm-le.h"

#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10
#define TCP_URG 0x20

void
tap_queue_init(TapQueue *q, gsize limit)
{
	*q = (TapQueue){ .limit = limit };
	g_queue_init(&q->acks);
	g_queue_init(&q->bulk);
}

void
tap_queue_clear(TapQueue *q)
{
	g_queue_clear_full(&q->acks, g_free);
	g_queue_clear_full(&q->bulk, g_free);
	q->bulk_bytes = 0;
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

gboolean
tap_queue_push(TapQueue *q, TapQueued *p)
{
	if (tap_queue_is_ack(&p->hdr, p->frame, p->len)) {
		if (q->acks.length < TAP_QUEUE_MAX_ACKS) {
			g_queue_push_tail(&q->acks, p);
			return TRUE;
		}
		q->dropped_acks++;
	} else if (q->bulk_bytes < q->limit) {
		g_queue_push_tail(&q->bulk, p);
		q->bulk_bytes += p->len;
		return TRUE;
	}
	q->dropped++;
	g_free(p);
	return FALSE;
}

TapQueued *
tap_queue_pop_ack(TapQueue *q)
{
	return g_queue_pop_head(&q->acks);
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
}
