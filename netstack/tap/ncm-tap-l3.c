/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-l3.c: TUN (L3) mode: the Ethernet the device speaks around the IP the kernel sees. */
#include "ncm-tap-l3.h"

#include <string.h>

#include "ncm-le.h"

/*
 * What the device sends is read through the checked views of ncm-eth.h
 * (ARP, neighbour discovery) and the readers of ncm-le.h; only the answers
 * we build are written by hand, into buffers of our own.
 */

#define PEER_KNOWN (G_GUINT64_CONSTANT(1) << 48)

static const guint8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static void
put_be16(guint8 *p, guint16 v)
{
	p[0] = (guint8)(v >> 8);
	p[1] = (guint8)v;
}

static void
eth_header(guint8 *p, const guint8 *dst, const guint8 *src, guint16 type)
{
	memcpy(p, dst, NCM_ETH_ALEN);
	memcpy(p + NCM_ETH_ALEN, src, NCM_ETH_ALEN);
	put_be16(p + 2 * NCM_ETH_ALEN, type);
}

static void
learn_peer(TapL3 *l3, const guint8 *src)
{
	guint64 v = PEER_KNOWN;

	if (ncm_eth_is_multicast(src))
		return;
	for (guint i = 0; i < 6; i++)
		v |= (guint64)src[i] << (8 * i);
	__atomic_store_n(&l3->peer, v, __ATOMIC_RELAXED);
}

/* The learned peer MAC, or broadcast until the device has sent anything. */
static void
peer_mac(TapL3 *l3, guint8 ret_mac[6])
{
	guint64 v = __atomic_load_n(&l3->peer, __ATOMIC_RELAXED);

	if (!(v & PEER_KNOWN)) {
		memcpy(ret_mac, bcast, 6);
		return;
	}
	for (guint i = 0; i < 6; i++)
		ret_mac[i] = (guint8)(v >> (8 * i));
}

static void
send_answer(TapL3 *l3, NcmLink *link, const guint8 *frame, gsize len)
{
	GOutputVector v = { frame, len };

	/* An answer that finds no room is dropped: the peer asks again. */
	if (ncm_link_sendv(link, &v, 1) == NCM_SEND_OK) {
		__atomic_fetch_add(&l3->answered, 1, __ATOMIC_RELAXED);
		l3->unflushed = TRUE;
		if (l3->pcap)
			ncm_pcap_write(l3->pcap, frame, len);
	}
}

void
tap_l3_receive_done(TapL3 *l3, NcmLink *link)
{
	if (!l3->unflushed)
		return;
	l3->unflushed = FALSE;
	ncm_link_flush(link);
}

/*
 * The kernel side has no link layer, so every address the peer asks for is
 * reached through us: answer all requests except probes (sender 0.0.0.0)
 * and announcements (sender == target), which must stay unanswered.
 */
static void
answer_arp(TapL3 *l3, NcmLink *link, const NcmEthView *eth)
{
	guint8 out[NCM_ETH_HLEN + NCM_ARP_LEN];
	guint8 *r = out + NCM_ETH_HLEN;
	NcmArpView arp;

	if (!ncm_eth_arp(eth, &arp) || arp.op != NCM_ARP_REQUEST)
		return;
	if (!memcmp(arp.spa, "\0\0\0\0", 4) || !memcmp(arp.spa, arp.tpa, 4))
		return;
	eth_header(out, arp.sha, link->mac, NCM_ETH_P_ARP);
	put_be16(r, 1); /* Ethernet */
	put_be16(r + 2, NCM_ETH_P_IPV4);
	r[4] = NCM_ETH_ALEN;
	r[5] = 4;
	put_be16(r + 6, NCM_ARP_REPLY);
	memcpy(r + 8, link->mac, NCM_ETH_ALEN);
	memcpy(r + 14, arp.tpa, 4);
	memcpy(r + 18, arp.sha, NCM_ETH_ALEN);
	memcpy(r + 24, arp.spa, 4);
	send_answer(l3, link, out, sizeof(out));
}

static gboolean
is_solicitation(const NcmNdView *nd)
{
	/* Hop limit 255 proves it was not forwarded; DAD (source ::) stays unanswered. */
	return nd->type == NCM_ND_NS && nd->code == 0 && nd->hop_limit == 255 &&
	       nd->target != NULL && !ncm_ip6_is_unspecified(nd->src) &&
	       memcmp(nd->src, nd->target, 16);
}

/* A solicited, overriding advertisement of our MAC for the target asked about. */
static void
answer_ns(TapL3 *l3, NcmLink *link, const NcmEthView *eth, const NcmNdView *ns)
{
	guint8 out[NCM_ETH_HLEN + NCM_IP6_HLEN + 32] = { 0 };
	guint8 *ip = out + NCM_ETH_HLEN, *na = ip + NCM_IP6_HLEN;

	eth_header(out, eth->src, link->mac, NCM_ETH_P_IPV6);
	ip[0] = 0x60;
	put_be16(ip + 4, 32);
	ip[6] = NCM_IP6_NEXT_ICMP6;
	ip[7] = 255;
	memcpy(ip + 8, ns->target, 16);
	memcpy(ip + 24, ns->src, 16);
	na[0] = NCM_ND_NA;
	na[4] = 0x60;  /* solicited, override */
	memcpy(na + 8, ns->target, 16);
	na[24] = 2;  /* target link-layer address */
	na[25] = 1;
	memcpy(na + 26, link->mac, NCM_ETH_ALEN);
	put_be16(na + 2, ncm_icmp6_checksum(ip, na, 32));
	send_answer(l3, link, out, sizeof(out));
}

const guint8 *
tap_l3_from_frame(TapL3 *l3, NcmLink *link, const guint8 *frame, gsize len, gsize *ret_len)
{
	NcmEthView eth;
	NcmNdView nd;

	if (!ncm_eth_view(&eth, frame, len) ||
	    (!ncm_eth_is_multicast(eth.dst) && memcmp(eth.dst, link->mac, NCM_ETH_ALEN)))
		return NULL;
	learn_peer(l3, eth.src);
	switch (eth.type) {
	case NCM_ETH_P_ARP:
		answer_arp(l3, link, &eth);
		return NULL;
	case NCM_ETH_P_IPV6:
		if (ncm_eth_nd(&eth, &nd) && is_solicitation(&nd)) {
			answer_ns(l3, link, &eth, &nd);
			return NULL;
		}
		G_GNUC_FALLTHROUGH;
	case NCM_ETH_P_IPV4:
		*ret_len = eth.payload_len;
		return eth.payload;
	default:
		return NULL;
	}
}

/* IP multicast maps onto Ethernet multicast (RFC 1112, RFC 2464); unicast goes to the peer. */
gboolean
tap_l3_to_frame(TapL3 *l3, const guint8 mac[6], guint8 *buf, gsize ip_len)
{
	const guint8 *ip = buf + NCM_ETH_HLEN;
	guint8 dst[6];

	if (ip_len >= 20 && ip[0] >> 4 == 4) {
		const guint8 *d = ip + 16;

		if (d[0] >= 224 && d[0] <= 239) {
			const guint8 m[6] = { 0x01, 0x00, 0x5e, d[1] & 0x7f, d[2], d[3] };

			memcpy(dst, m, 6);
		} else if (!memcmp(d, bcast, 4)) {
			memcpy(dst, bcast, 6);
		} else {
			peer_mac(l3, dst);
		}
		eth_header(buf, dst, mac, NCM_ETH_P_IPV4);
		return TRUE;
	}
	if (ip_len >= 40 && ip[0] >> 4 == 6) {
		const guint8 *d = ip + 24;

		if (ncm_ip6_is_multicast(d)) {
			ncm_eth_ip6_multicast_mac(dst, d);
		} else {
			peer_mac(l3, dst);
		}
		eth_header(buf, dst, mac, NCM_ETH_P_IPV6);
		return TRUE;
	}
	return FALSE;
}
