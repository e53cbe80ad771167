/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-queue.c: the reader's queue while the link is full: pure ACKs first, a byte limit on the rest. */
#include "ncm-tap-queue.h"

#include "ncm-eth.h"
#include "ncm-le.h"

#define PROTO_TCP 6
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

gboolean
tap_queue_is_ack(const TapVnetHdr *h, const guint8 *f, gsize len)
{
	gsize l3 = NCM_ETH_HLEN, l4, end, doff;
	guint8 flags;

	if (h->gso_type != TAP_VNET_GSO_NONE || !ncm_le_fits(len, 0, NCM_ETH_HLEN))
		return FALSE;
	switch (ncm_be16_at(f, len, 12)) {
	case NCM_ETH_P_IPV4: {
		guint8 vihl = ncm_le8_at(f, len, l3);
		gsize ihl = (gsize)(vihl & 0x0f) * 4;
		gsize total = ncm_be16_at(f, len, l3 + 2);

		if ((vihl >> 4) != 4 || ihl < 20 || total < ihl || !ncm_le_fits(len, l3, total) ||
		    (ncm_be16_at(f, len, l3 + 6) & 0x3fff) != 0 || ncm_le8_at(f, len, l3 + 9) != PROTO_TCP)
			return FALSE;
		l4 = l3 + ihl;
		end = l3 + total;
		break;
	}
	case NCM_ETH_P_IPV6:
		if (!ncm_le_fits(len, l3, 40) || (ncm_le8_at(f, len, l3) >> 4) != 6 ||
		    ncm_le8_at(f, len, l3 + 6) != PROTO_TCP ||
		    !ncm_le_fits(len, l3 + 40, ncm_be16_at(f, len, l3 + 4)))
			return FALSE;
		l4 = l3 + 40;
		end = l4 + ncm_be16_at(f, len, l3 + 4);
		break;
	default:
		return FALSE;
	}
	if (end < l4 + 20)
		return FALSE;
	doff = (gsize)(ncm_le8_at(f, len, l4 + 12) >> 4) * 4;
	flags = ncm_le8_at(f, len, l4 + 13);
	return doff >= 20 && l4 + doff == end && (flags & TCP_ACK) &&
	       !(flags & (TCP_FIN | TCP_SYN | TCP_RST | TCP_URG));
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
