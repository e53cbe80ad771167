/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-l3.c: TUN (L3) mode: the Ethernet the device speaks around the IP the kernel sees. */
#include "ncm-tap-l3.h"

#include <string.h>

#define ETH_ARP 0x0806
#define ETH_IP4 0x0800
#define ETH_IP6 0x86dd
#define PEER_KNOWN (G_GUINT64_CONSTANT(1) << 48)

static const guint8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static guint16
be16(const guint8 *p)
{
	return (guint16)(p[0] << 8 | p[1]);
}

static void
put_be16(guint8 *p, guint16 v)
{
	p[0] = (guint8)(v >> 8);
	p[1] = (guint8)v;
}

static void
eth_header(guint8 *p, const guint8 *dst, const guint8 *src, guint16 type)
{
	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	put_be16(p + 12, type);
}

static void
learn_peer(TapL3 *l3, const guint8 *src)
{
	guint64 v = PEER_KNOWN;

	if (src[0] & 1)
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
answer_arp(TapL3 *l3, NcmLink *link, const guint8 *frame, gsize len)
{
	static const guint8 req[8] = { 0, 1, 0x08, 0x00, 6, 4, 0, 1 };
	const guint8 *a = frame + TAP_ETH_HLEN;
	guint8 out[TAP_ETH_HLEN + 28];
	guint8 *r = out + TAP_ETH_HLEN;

	if (len < TAP_ETH_HLEN + 28 || memcmp(a, req, 8))
		return;
	if (!memcmp(a + 14, "\0\0\0\0", 4) || !memcmp(a + 14, a + 24, 4))
		return;
	eth_header(out, a + 8, link->mac, ETH_ARP);
	memcpy(r, req, 7);
	r[7] = 2;
	memcpy(r + 8, link->mac, 6);
	memcpy(r + 14, a + 24, 4);
	memcpy(r + 18, a + 8, 6);
	memcpy(r + 24, a + 14, 4);
	send_answer(l3, link, out, sizeof(out));
}

static guint16
icmp6_checksum(const guint8 *ip6, const guint8 *icmp, gsize len)
{
	guint32 sum = (guint32)len + 58;

	for (guint i = 0; i < 32; i += 2)
		sum += be16(ip6 + 8 + i);
	for (gsize i = 0; i + 1 < len; i += 2)
		sum += be16(icmp + i);
	if (len & 1)
		sum += (guint32)icmp[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (guint16)~sum;
}

static gboolean
is_solicitation(const guint8 *ip, gsize ip_len)
{
	static const guint8 unspecified[16] = { 0 };

	/* Hop limit 255 proves it was not forwarded; DAD (source ::) stays unanswered. */
	return ip_len >= 40 + 24 && ip[6] == 58 && ip[7] == 255 && ip[40] == 135 &&
	       ip[41] == 0 && memcmp(ip + 8, unspecified, 16) && memcmp(ip + 8, ip + 48, 16);
}

/* A solicited, overriding advertisement of our MAC for the target asked about. */
static void
answer_ns(TapL3 *l3, NcmLink *link, const guint8 *frame)
{
	const guint8 *ns = frame + TAP_ETH_HLEN;
	guint8 out[TAP_ETH_HLEN + 40 + 32] = { 0 };
	guint8 *ip = out + TAP_ETH_HLEN, *na = ip + 40;

	eth_header(out, frame + 6, link->mac, ETH_IP6);
	ip[0] = 0x60;
	put_be16(ip + 4, 32);
	ip[6] = 58;
	ip[7] = 255;
	memcpy(ip + 8, ns + 48, 16);
	memcpy(ip + 24, ns + 8, 16);
	na[0] = 136;
	na[4] = 0x60;
	memcpy(na + 8, ns + 48, 16);
	na[24] = 2;  /* target link-layer address */
	na[25] = 1;
	memcpy(na + 26, link->mac, 6);
	put_be16(na + 2, icmp6_checksum(ip, na, 32));
	send_answer(l3, link, out, sizeof(out));
}

const guint8 *
tap_l3_from_frame(TapL3 *l3, NcmLink *link, const guint8 *frame, gsize len, gsize *ret_len)
{
	const guint8 *ip = frame + TAP_ETH_HLEN;
	gsize ip_len = len - TAP_ETH_HLEN;

	if (len < TAP_ETH_HLEN || (!(frame[0] & 1) && memcmp(frame, link->mac, 6)))
		return NULL;
	learn_peer(l3, frame + 6);
	switch (be16(frame + 12)) {
	case ETH_ARP:
		answer_arp(l3, link, frame, len);
		return NULL;
	case ETH_IP6:
		if (is_solicitation(ip, ip_len)) {
			answer_ns(l3, link, frame);
			return NULL;
		}
		G_GNUC_FALLTHROUGH;
	case ETH_IP4:
		*ret_len = ip_len;
		return ip;
	default:
		return NULL;
	}
}

/* IP multicast maps onto Ethernet multicast (RFC 1112, RFC 2464); unicast goes to the peer. */
gboolean
tap_l3_to_frame(TapL3 *l3, const guint8 mac[6], guint8 *buf, gsize ip_len)
{
	const guint8 *ip = buf + TAP_ETH_HLEN;
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
		eth_header(buf, dst, mac, ETH_IP4);
		return TRUE;
	}
	if (ip_len >= 40 && ip[0] >> 4 == 6) {
		const guint8 *d = ip + 24;

		if (d[0] == 0xff) {
			const guint8 m[6] = { 0x33, 0x33, d[12], d[13], d[14], d[15] };

			memcpy(dst, m, 6);
		} else {
			peer_mac(l3, dst);
		}
		eth_header(buf, dst, mac, ETH_IP6);
		return TRUE;
	}
	return FALSE;
}
