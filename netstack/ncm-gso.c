/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-gso.c: IP packets cut to the link's size: TCP segmentation, IPv4 fragmentation, Internet checksums. */
#include "ncm-gso.h"

#include <string.h>

#include "ncm-csum.h"
#include "ncm-eth.h"
#include "ncm-le.h"

#define PROTO_TCP 6

#define TCP_FIN 0x01
#define TCP_PSH 0x08
#define TCP_CWR 0x80

#define IP6_HOP_BY_HOP 0
#define IP6_ROUTING 43
#define IP6_FRAGMENT 44

#define IP4_DF 0x4000
#define IP4_MF 0x2000
#define IP4_OFFSET 0x1fff

/* Fields are read through ncm-le.h's checked readers; only the pieces
 * cut here are written by hand. */

/* The bulk is summed in the host's order (ncm-csum.h) and only the folded
 * result is swapped. */
static guint32
add_host_sum(guint32 sum, guint64 host_sum)
{
	guint16 s16 = GUINT16_FROM_BE(ncm_csum64_fold(host_sum));
	guint64 acc = (guint64)sum + s16;

	return (guint32)((acc & 0xffffffffu) + (acc >> 32));
}

guint32
ncm_gso_csum_add(guint32 sum, const guint8 *p, gsize len)
{
	return add_host_sum(sum, ncm_csum64_add(0, p, len));
}

guint32
ncm_gso_csum_copy(guint32 sum, guint8 *dst, const guint8 *src, gsize len)
{
	return add_host_sum(sum, ncm_csum64_copy(dst, src, len, 0));
}

guint16
ncm_gso_csum_fold(guint32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (guint16)sum;
}

/* ---- the IP and TCP headers of one packet --------------------------------- */

guint32
ncm_gso_pseudo_sum(const NcmGsoTcp *t, const guint8 *pkt, gsize tcp_len)
{
	const guint8 *ip = pkt + t->l3off;

	if (t->v6)
		return ncm_gso_csum_add((guint32)(tcp_len + PROTO_TCP), ip + 8, 32);
	return ncm_gso_csum_add((guint32)(tcp_len + PROTO_TCP), ip + 12, 8);
}

gboolean
ncm_gso_parse_tcp(guint l3off, const guint8 *pkt, gsize len, NcmGsoTcp *t)
{
	const guint8 *ip = pkt + l3off;
	gsize iplen;

	if (len < (gsize)l3off + 20)
		return FALSE;
	if (l3off == NCM_ETH_HLEN) {
		guint16 type = ncm_be16_at(pkt, len, 12);

		if ((ip[0] >> 4) != (type == NCM_ETH_P_IPV6 ? 6 : type == NCM_ETH_P_IPV4 ? 4 : 0))
			return FALSE;
	}
	iplen = len - l3off;
	t->l3off = l3off;
	t->v6 = (ip[0] >> 4) == 6;
	if ((ip[0] >> 4) == 4) {
		guint ihl = (ip[0] & 0xf) * 4u;

		if (ihl < 20 || iplen < ihl || ncm_be16_at(ip, iplen, 2) != iplen ||
		    ip[9] != PROTO_TCP || (ncm_be16_at(ip, iplen, 6) & 0x3fff))
			return FALSE;
		t->l4off = l3off + ihl;
	} else if (t->v6) {
		if (iplen < 40 || ncm_be16_at(ip, iplen, 4) != iplen - 40 || ip[6] != PROTO_TCP)
			return FALSE;
		t->l4off = l3off + 40;
	} else {
		return FALSE;
	}
	if (len < (gsize)t->l4off + 20)
		return FALSE;
	t->thl = (pkt[t->l4off + 12] >> 4) * 4u;
	t->hdr = t->l4off + t->thl;
	if (t->thl < 20 || len < t->hdr)
		return FALSE;
	t->payload = len - t->hdr;
	return TRUE;
}

gboolean
ncm_gso_tcp_csum_ok(const NcmGsoTcp *t, const guint8 *pkt, gsize len)
{
	gsize tcp_len = len - t->l4off;

	return ncm_gso_csum_fold(ncm_gso_csum_add(ncm_gso_pseudo_sum(t, pkt, tcp_len),
						  pkt + t->l4off, tcp_len)) == 0xffff;
}

gboolean
ncm_gso_tcp_csum_copy_ok(const NcmGsoTcp *t, const guint8 *pkt, gsize len, guint8 *dst)
{
	gsize tcp_len = len - t->l4off;
	guint32 sum = ncm_gso_csum_add(ncm_gso_pseudo_sum(t, pkt, tcp_len), pkt + t->l4off, t->thl);

	/* The header's length is a multiple of 4: the payload's sum adds on. */
	sum = ncm_gso_csum_copy(sum, dst, pkt + t->hdr, t->payload);
	return ncm_gso_csum_fold(sum) == 0xffff;
}

void
ncm_gso_tcp_fill_csum(const NcmGsoTcp *t, guint8 *pkt, gsize len)
{
	gsize tcp_len = len - t->l4off;
	guint8 *tcp = pkt + t->l4off;
	guint32 sum;

	ncm_gso_put_be16(tcp + 16, 0);
	sum = ncm_gso_csum_add(ncm_gso_pseudo_sum(t, pkt, tcp_len), tcp, tcp_len);
	ncm_gso_put_be16(tcp + 16, (guint16)~ncm_gso_csum_fold(sum));
}

void
ncm_gso_ipv4_fix(guint8 *ip, guint ihl, gsize iplen, guint16 id)
{
	ncm_gso_put_be16(ip + 2, (guint16)iplen);
	ncm_gso_put_be16(ip + 4, id);
	ncm_gso_put_be16(ip + 10, 0);
	ncm_gso_put_be16(ip + 10, (guint16)~ncm_gso_csum_fold(ncm_gso_csum_add(0, ip, ihl)));
}

/* ---- cutting ----------------------------------------------------------------- */

NcmGsoResult
ncm_gso_segment(const NcmGsoTcp *t, const guint8 *pkt, gsize len, guint mss, guint8 *scratch,
		gsize scratch_size, gsize *next, NcmGsoEmit emit, gpointer user_data)
{
	guint l3off = t->l3off;
	gsize nsegs;
	guint8 flags;
	guint32 seq;
	guint16 id;

	if (mss == 0 || scratch_size < t->hdr || len != t->hdr + t->payload)
		return NCM_GSO_INVALID;
	seq = ncm_be32_at(pkt, len, t->l4off + 4);
	flags = pkt[t->l4off + 13];
	id = t->v6 ? 0 : ncm_be16_at(pkt, len, l3off + 4);
	nsegs = t->payload ? (t->payload + mss - 1) / mss : 1;
	for (gsize i = *next; i < nsegs; i++) {
		gsize off = i * mss, seg = MIN(mss, t->payload - off), tcp_len = t->thl + seg;
		guint8 *ip = scratch + l3off, *tcp = scratch + t->l4off;
		const guint8 *payload = pkt + t->hdr + off;
		guint8 f = flags;
		guint32 sum;

		memcpy(scratch, pkt, t->hdr);
		ncm_gso_put_be32(tcp + 4, seq + (guint32)off);
		if (i + 1 < nsegs)
			f &= (guint8)~(TCP_FIN | TCP_PSH);
		if (i > 0)
			f &= (guint8)~TCP_CWR;
		tcp[13] = f;
		if (t->v6)
			ncm_gso_put_be16(ip + 4, (guint16)tcp_len);
		else
			ncm_gso_ipv4_fix(ip, t->l4off - l3off, t->l4off - l3off + tcp_len,
					 (guint16)(id + i));
		ncm_gso_put_be16(tcp + 16, 0);
		/* The header's length is a multiple of 4: the payload's sum continues it. */
		sum = ncm_gso_csum_add(ncm_gso_pseudo_sum(t, scratch, tcp_len), tcp, t->thl);
		sum = ncm_gso_csum_add(sum, payload, seg);
		ncm_gso_put_be16(tcp + 16, (guint16)~ncm_gso_csum_fold(sum));
		if (!emit(user_data, scratch, t->hdr, payload, seg))
			return NCM_GSO_STOPPED;
		*next = i + 1;
	}
	return NCM_GSO_OK;
}

NcmGsoResult
ncm_gso_fragment_ipv4(guint l3off, const guint8 *pkt, gsize len, guint mtu, guint8 *scratch,
		      gsize scratch_size, gsize *next, NcmGsoEmit emit, gpointer user_data)
{
	const guint8 *ip = pkt + l3off;
	guint ihl, frag, first, n;
	guint16 field;
	gsize data;

	if (len < (gsize)l3off + 20 || (ip[0] >> 4) != 4)
		return NCM_GSO_INVALID;
	ihl = (ip[0] & 0xf) * 4u;
	if (ihl < 20 || len - l3off < ihl || ncm_be16_at(ip, len - l3off, 2) != len - l3off ||
	    mtu < ihl + 8 || scratch_size < l3off + ihl)
		return NCM_GSO_INVALID;
	field = ncm_be16_at(ip, len - l3off, 6);
	if (field & IP4_DF)
		return NCM_GSO_INVALID;
	/* Every fragment but the last carries a multiple of 8 bytes. */
	frag = (mtu - ihl) & ~7u;
	data = len - l3off - ihl;
	first = field & IP4_OFFSET;
	n = (guint)((data + frag - 1) / frag);
	if (first + (data + 7) / 8 > IP4_OFFSET + 1)
		return NCM_GSO_INVALID;
	for (guint i = (guint)*next; i < n; i++) {
		gsize off = (gsize)i * frag, piece = MIN(frag, data - off);
		guint16 f = (guint16)(first + off / 8);
		guint8 *sip = scratch + l3off;

		/* The last piece keeps the packet's own MF: it may be a fragment itself. */
		if (i + 1 < n || (field & IP4_MF))
			f |= IP4_MF;
		memcpy(scratch, pkt, l3off + ihl);
		ncm_gso_put_be16(sip + 6, f);
		ncm_gso_ipv4_fix(sip, ihl, ihl + piece, ncm_be16_at(ip, len - l3off, 4));
		if (!emit(user_data, scratch, l3off + ihl, ip + ihl + off, piece))
			return NCM_GSO_STOPPED;
		*next = i + 1;
	}
	return NCM_GSO_OK;
}

NcmGsoResult
ncm_gso_fragment_ipv6(guint l3off, const guint8 *pkt, gsize len, guint mtu, guint32 id,
		      guint8 *scratch, gsize scratch_size, gsize *next, NcmGsoEmit emit,
		      gpointer user_data)
{
	const guint8 *ip = pkt + l3off;
	guint8 nh, *sip = scratch + l3off;
	guint frag, n, first = 0, more = 0, head = 40;
	gsize data;

	if (len < (gsize)l3off + 40 || (ip[0] >> 4) != 6 ||
	    ncm_be16_at(ip, len - l3off, 4) != len - l3off - 40 || mtu < 40 + 8 + 8 ||
	    scratch_size < l3off + 48)
		return NCM_GSO_INVALID;
	nh = ip[6];
	if (nh == IP6_HOP_BY_HOP || nh == IP6_ROUTING)
		return NCM_GSO_INVALID;
	/* A fragment already (lwIP's, of its large MTU): cut again, keeping
	 * its ID, its place in the packet and, on the last piece, its M. */
	if (nh == IP6_FRAGMENT) {
		guint16 field;

		if (len - l3off < 48)
			return NCM_GSO_INVALID;
		nh = ip[40];
		field = ncm_be16_at(ip, len - l3off, 42);
		first = field & ~7u;
		more = field & 1u;
		id = ncm_be32_at(ip, len - l3off, 44);
		head = 48;
		if (nh == IP6_HOP_BY_HOP || nh == IP6_ROUTING || nh == IP6_FRAGMENT)
			return NCM_GSO_INVALID;
	}
	frag = (mtu - 40 - 8) & ~7u;
	data = len - l3off - head;
	/* The last piece's offset must fit the field's 13 bits of 8-byte units. */
	if (data == 0 || first + (data - 1) / frag * frag > 0xfff8u)
		return NCM_GSO_INVALID;
	n = (guint)((data + frag - 1) / frag);
	for (guint i = (guint)*next; i < n; i++) {
		gsize off = (gsize)i * frag, piece = MIN(frag, data - off);

		memcpy(scratch, pkt, l3off + 40);
		ncm_gso_put_be16(sip + 4, (guint16)(8 + piece));
		sip[6] = IP6_FRAGMENT;
		sip[40] = nh;
		sip[41] = 0;
		/* The offset in 8-byte units, shifted past the M flag's 3 bits. */
		ncm_gso_put_be16(sip + 42, (guint16)((first + off) | (i + 1 < n ? 1 : more)));
		ncm_gso_put_be32(sip + 44, id);
		if (!emit(user_data, scratch, l3off + 48, ip + head + off, piece))
			return NCM_GSO_STOPPED;
		*next = i + 1;
	}
	return NCM_GSO_OK;
}
