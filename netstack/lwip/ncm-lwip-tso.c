/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-tso.c: lwIP's large TCP segments cut into link-sized frames on their way out. */
#include "ncm-lwip-tso.h"

#include "ncm-eth.h"
#include "ncm-le.h"

#define TCP_SYN 0x02
#define OPT_END 0
#define OPT_NOP 1
#define OPT_MSS 2

/* The offset of the MSS option's value in a TCP header of @thl bytes at
 * @tcp, or 0 when it has none (or its options are malformed). */
static guint
mss_option(const guint8 *tcp, guint thl)
{
	guint off = 20;

	while (off < thl) {
		guint kind = tcp[off], olen;

		if (kind == OPT_END)
			break;
		if (kind == OPT_NOP) {
			off++;
			continue;
		}
		if (off + 1 >= thl)
			break;
		olen = tcp[off + 1];
		if (olen < 2 || off + olen > thl)
			break;
		if (kind == OPT_MSS)
			return olen == 4 ? off + 2 : 0;
		off += olen;
	}
	return 0;
}

/* The IP packet in @frame without Ethernet padding: its parsed TCP
 * headers and the frame's length up to the packet's end. FALSE when it is
 * not IPv4 or IPv6 carrying TCP. */
static gboolean
parse(const guint8 *frame, gsize len, NcmGsoTcp *t, gsize *ret_len)
{
	guint16 type = ncm_be16_at(frame, len, 12);
	gsize iplen;

	if (type == NCM_ETH_P_IPV4)
		iplen = ncm_be16_at(frame, len, NCM_ETH_HLEN + 2);
	else if (type == NCM_ETH_P_IPV6)
		iplen = 40 + (gsize)ncm_be16_at(frame, len, NCM_ETH_HLEN + 4);
	else
		return FALSE;
	if (len < NCM_ETH_HLEN + 20 || iplen > len - NCM_ETH_HLEN)
		return FALSE;
	*ret_len = NCM_ETH_HLEN + iplen;
	return ncm_gso_parse_tcp(NCM_ETH_HLEN, frame, *ret_len, t);
}

/* The MSS that fills a frame of the link (no IP or TCP options). */
static guint
link_mss(guint link_mtu, gboolean v6)
{
	return link_mtu - (v6 ? 60 : 40);
}

guint
nlw_tso_super_mss(guint link_mtu, gboolean v6, guint segs, guint max_mss)
{
	return MAX(link_mss(link_mtu, v6), MIN(max_mss, segs * link_mss(link_mtu, v6)));
}

/* Whether @frame may be a TCP SYN, from a few byte reads: every received
 * frame comes here. */
static gboolean
maybe_syn(const guint8 *frame, gsize len)
{
	guint16 type = ncm_be16_at(frame, len, 12);
	gsize l4;

	if (type == NCM_ETH_P_IPV4 && len >= NCM_ETH_HLEN + 40 && frame[NCM_ETH_HLEN + 9] == 6)
		l4 = NCM_ETH_HLEN + (frame[NCM_ETH_HLEN] & 0xf) * 4u;
	else if (type == NCM_ETH_P_IPV6 && len >= NCM_ETH_HLEN + 60 && frame[NCM_ETH_HLEN + 6] == 6)
		l4 = NCM_ETH_HLEN + 40;
	else
		return FALSE;
	return l4 + 14 <= len && (frame[l4 + 13] & TCP_SYN);
}

gboolean
nlw_tso_rx_syn(guint8 *frame, gsize len, guint link_mtu, guint segs, guint max_mss)
{
	guint8 *tcp;
	guint opt, mss, super_mss;
	NcmGsoTcp t;

	if (!maybe_syn(frame, len) || !parse(frame, len, &t, &len))
		return FALSE;
	super_mss = nlw_tso_super_mss(link_mtu, t.v6, segs, max_mss);
	tcp = frame + t.l4off;
	opt = mss_option(tcp, t.thl);
	if (opt == 0)
		return FALSE;
	mss = ncm_be16_at(tcp, t.thl, opt);
	/* A corrupt SYN stays corrupt: lwIP drops it on its checksum. */
	if (mss < link_mss(link_mtu, t.v6) || mss >= super_mss || !ncm_gso_tcp_csum_ok(&t, frame, len))
		return FALSE;
	ncm_gso_put_be16(tcp + opt, (guint16)super_mss);
	ncm_gso_tcp_fill_csum(&t, frame, len);
	return TRUE;
}

static NlwTsoResult
from_gso(NcmGsoResult r)
{
	return r == NCM_GSO_OK ? NLW_TSO_SENT : r == NCM_GSO_STOPPED ? NLW_TSO_STOPPED
								 : NLW_TSO_INVALID;
}

NlwTsoResult
nlw_tso_cut(guint8 *frame, gsize len, guint link_mtu, guint32 frag_id, guint8 *scratch,
	    gsize *next, NcmGsoEmit emit, gpointer user_data)
{
	gsize iplen_frame;
	guint ip_hdr, mss;
	NcmGsoTcp t;

	if (parse(frame, len, &t, &iplen_frame)) {
		guint8 *tcp = frame + t.l4off;

		ip_hdr = t.l4off - t.l3off;
		if (link_mtu < ip_hdr + t.thl + 8)
			return NLW_TSO_INVALID;
		/* The MSS this side announces is the link's (lwIP's would be its
		 * large segments'). Lowered before the sum below. */
		if ((tcp[13] & TCP_SYN) && *next == 0) {
			guint opt = mss_option(tcp, t.thl), own_mss = link_mtu - ip_hdr - 20;

			if (opt != 0 && ncm_be16_at(tcp, t.thl, opt) > own_mss)
				ncm_gso_put_be16(tcp + opt, (guint16)own_mss);
		}
		mss = link_mtu - ip_hdr - t.thl;
		/* Most frames fit (ACKs, a download's every frame): summed in
		 * place and sent as they are, without a copy of their headers. */
		if (t.payload <= mss && *next == 0) {
			ncm_gso_tcp_fill_csum(&t, frame, iplen_frame);
			return NLW_TSO_ASIS;
		}
		return from_gso(ncm_gso_segment(&t, frame, iplen_frame, mss, scratch, NLW_TSO_HDR_MAX,
						next, emit, user_data));
	}
	if (len < NCM_ETH_HLEN + 20)
		return NLW_TSO_ASIS;
	if (ncm_be16_at(frame, len, 12) == NCM_ETH_P_IPV4) {
		guint8 proto = frame[NCM_ETH_HLEN + 9];
		gsize iplen = ncm_be16_at(frame, len, NCM_ETH_HLEN + 2);

		/* TCP that did not parse carries no checksum: lwIP's are off. */
		if (proto == 6)
			return NLW_TSO_INVALID;
		if (iplen > link_mtu && iplen <= len - NCM_ETH_HLEN)
			return from_gso(ncm_gso_fragment_ipv4(NCM_ETH_HLEN, frame,
							      NCM_ETH_HLEN + iplen, link_mtu,
							      scratch, NLW_TSO_HDR_MAX, next,
							      emit, user_data));
	} else if (ncm_be16_at(frame, len, 12) == NCM_ETH_P_IPV6) {
		gsize iplen = 40 + (gsize)ncm_be16_at(frame, len, NCM_ETH_HLEN + 4);

		if (frame[NCM_ETH_HLEN + 6] == 6)
			return NLW_TSO_INVALID;
		if (iplen > link_mtu && iplen <= len - NCM_ETH_HLEN)
			return from_gso(ncm_gso_fragment_ipv6(NCM_ETH_HLEN, frame,
							      NCM_ETH_HLEN + iplen, link_mtu,
							      frag_id, scratch, NLW_TSO_HDR_MAX,
							      next, emit, user_data));
	}
	return NLW_TSO_ASIS;
}
