/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-flow.c: a frame's flow hash (see ncm-flow.h). */
#include "ncm-flow.h"

#include "ncm-ack.h"
#include "ncm-le.h"

#define ETH_HLEN 14
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10
#define TCP_URG 0x20

static guint32
mix(guint32 h, guint8 byte)
{
	return (h ^ byte) * 16777619u;
}

guint
ncm_flow_bucket(const guint8 *f, gsize len)
{
	guint16 type = ncm_be16_at(f, len, 12);
	gsize addrs = 0, n_addrs = 0, l4 = 0;
	guint32 h = 2166136261u;
	guint8 proto = 0;

	if (type == 0x0800) {
		proto = ncm_le8_at(f, len, ETH_HLEN + 9);
		addrs = ETH_HLEN + 12;
		n_addrs = 8;
		if (!(ncm_be16_at(f, len, ETH_HLEN + 6) & 0x3fff))
			l4 = ETH_HLEN + (ncm_le8_at(f, len, ETH_HLEN) & 0x0fu) * 4u;
	} else if (type == 0x86dd) {
		proto = ncm_le8_at(f, len, ETH_HLEN + 6);
		addrs = ETH_HLEN + 8;
		n_addrs = 32;
		l4 = ETH_HLEN + 40;
	}
	h = mix(mix(mix(h, (guint8)(type >> 8)), (guint8)type), proto);
	for (gsize i = 0; i < n_addrs; i++)
		h = mix(h, ncm_le8_at(f, len, addrs + i));
	if (l4 && (proto == 6 || proto == 17)) {
		for (gsize i = 0; i < 4; i++)
			h = mix(h, ncm_le8_at(f, len, l4 + i));
	}
	return h % NCM_FLOW_BUCKETS;
}

gboolean
ncm_flow_is_pure_ack(const guint8 *f, gsize len)
{
	NcmAckInfo ai;
	guint8 flags;

	if (!ncm_ack_classify(f, len, &ai) || ai.payload)
		return FALSE;
	flags = ncm_le8_at(f, len, ai.l4 + 13u);
	return (flags & TCP_ACK) && !(flags & (TCP_FIN | TCP_SYN | TCP_RST | TCP_URG));
}
