/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-gso.c: TCP segmentation and checksum filling (kernel → device), coalescing (device → kernel). */
#include "ncm-tap-gso.h"

#include <string.h>

#include "ncm-eth.h"
#include "ncm-le.h"

#define TCP_PSH 0x08
#define TCP_ACK 0x10

/* ---- kernel → device -------------------------------------------------------- */

gboolean
tap_gso_fill_csum(const TapVnetHdr *h, guint8 *pkt, gsize len)
{
	guint16 c;

	if (!(h->flags & TAP_VNET_F_NEEDS_CSUM))
		return TRUE;
	if ((gsize)h->csum_start + h->csum_offset + 2 > len)
		return FALSE;
	c = (guint16)~ncm_gso_csum_fold(
	    ncm_gso_csum_add(0, pkt + h->csum_start, len - h->csum_start));
	/* 0 and 0xffff are the same sum; UDP reserves 0 for "none", so never send it. */
	ncm_gso_put_be16(pkt + h->csum_start + h->csum_offset, c ? c : 0xffff);
	return TRUE;
}

TapGsoResult
tap_gso_segment(const TapVnetHdr *h, guint l3off, guint8 *pkt, gsize len, guint8 *scratch,
		gsize scratch_size, TapGsoEmit emit, gpointer user_data)
{
	guint type = h->gso_type & ~TAP_VNET_GSO_ECN;
	gsize next = 0;
	NcmGsoTcp t;

	/* A TSO packet's IP length need not be right: set it, then parse as usual. */
	if (len < (gsize)l3off + 40 || len - l3off > 0xffff)
		return TAP_GSO_INVALID;
	if ((pkt[l3off] >> 4) == 4 && type == TAP_VNET_GSO_TCPV4)
		ncm_gso_put_be16(pkt + l3off + 2, (guint16)(len - l3off));
	else if ((pkt[l3off] >> 4) == 6 && type == TAP_VNET_GSO_TCPV6)
		ncm_gso_put_be16(pkt + l3off + 4, (guint16)(len - l3off - 40));
	else
		return TAP_GSO_INVALID;
	if (!ncm_gso_parse_tcp(l3off, pkt, len, &t))
		return TAP_GSO_INVALID;
	switch (ncm_gso_segment(&t, pkt, len, h->gso_size, scratch, scratch_size, &next, emit,
				user_data)) {
	case NCM_GSO_OK:
		return TAP_GSO_OK;
	case NCM_GSO_STOPPED:
		return TAP_GSO_STOPPED;
	default:
		return TAP_GSO_INVALID;
	}
}

/* ---- device → kernel -------------------------------------------------------- */

void
tap_gro_init(TapGro *g)
{
	memset(g, 0, sizeof(*g));
	g->buf = g_malloc(14 + TAP_GRO_MAX_IP);
}

void
tap_gro_clear(TapGro *g)
{
	g_clear_pointer(&g->buf, g_free);
	g->len = 0;
}

static const TapVnetHdr no_offload;

void
tap_gro_flush_for(TapGro *g, TapGroEnd why, TapGroWrite write, gpointer user_data)
{
	if (g->len && why < TAP_GRO_N_ENDS)
		__atomic_fetch_add(&g->ends[why], 1, __ATOMIC_RELAXED); /* read by stats */
	tap_gro_flush(g, write, user_data);
}

void
tap_gro_flush(TapGro *g, TapGroWrite write, gpointer user_data)
{
	guint8 *ip = g->buf + g->l3off, *tcp = g->buf + g->l4off;
	TapVnetHdr h = { 0 };
	NcmGsoTcp t = { .v6 = g->v6, .l3off = g->l3off, .l4off = g->l4off };
	gsize len = g->len;

	if (!len)
		return;
	g->len = 0;
	if (g->segs == 1) {
		write(user_data, &no_offload, g->buf, len, 1);
		return;
	}
	if (g->v6)
		ncm_gso_put_be16(ip + 4, (guint16)(len - g->l3off - 40));
	else
		ncm_gso_ipv4_fix(ip, g->l4off - g->l3off, len - g->l3off,
			 ncm_be16_at(g->buf, len, g->l3off + 4));
	/* NEEDS_CSUM convention: the field holds the pseudo-header sum, not inverted. */
	ncm_gso_put_be16(tcp + 16,
			 ncm_gso_csum_fold(ncm_gso_pseudo_sum(&t, g->buf, len - g->l4off)));
	h.flags = TAP_VNET_F_NEEDS_CSUM;
	h.gso_type = g->v6 ? TAP_VNET_GSO_TCPV6 : TAP_VNET_GSO_TCPV4;
	h.gso_size = (guint16)g->mss;
	h.hdr_len = (guint16)g->hdr_len;
	h.csum_start = (guint16)g->l4off;
	h.csum_offset = 16;
	write(user_data, &h, g->buf, len, g->segs);
}

/*
 * Only plain data segments merge: ACK, maybe PSH, nothing that changes
 * state; no IPv4 options (the kernel's GRO refuses them too).
 */
static gboolean
is_candidate(const NcmGsoTcp *t, const guint8 *pkt)
{
	guint8 f = pkt[t->l4off + 13];

	return t->payload > 0 && (f & TCP_ACK) && !(f & ~(TCP_ACK | TCP_PSH)) &&
	       (t->v6 || t->l4off == t->l3off + 20);
}

/* Linux's option block on data segments: NOP, NOP, timestamp (kind 8, length 10). */
#define TS_BLOCK_LEN 12
static const guint8 ts_block_head[4] = { 1, 1, 8, 10 };

/* Whether 32-bit stamp @b comes at or after @a (serial arithmetic). */
static gboolean
not_older(guint32 a, guint32 b)
{
	return (gint32)(b - a) >= 0;
}

/*
 * Options that differ only in the timestamp, the new segment's no older
 * (TSval and TSecr, serial arithmetic) than the run's. The kernel's GRO would not
 * merge them, but a sender whose stream gets a slice of the host (one of
 * 8 devices on one event thread, issue 20) stamps nearly every segment in
 * a millisecond of its own: each coalesced run was then 1-2 segments, one
 * TAP write, one trip through the kernel's TCP receive and one ACK each,
 * and ACKs that free 2 segments at a time kept the sender in that pattern.
 * The run takes the newest timestamp, as LRO did: PAWS sees a TSval that
 * never goes back, and the echo times the run's last segment.
 */
static gboolean
same_options(const TapGro *g, const NcmGsoTcp *t, const guint8 *pkt)
{
	const guint8 *oa = g->buf + g->l4off + 20, *ob = pkt + t->l4off + 20;
	gsize n = t->thl - 20;

	if (memcmp(oa, ob, n) == 0)
		return TRUE;
	return n == TS_BLOCK_LEN && memcmp(oa, ts_block_head, 4) == 0 &&
	       memcmp(ob, ts_block_head, 4) == 0 &&
	       not_older(ncm_be32_at(oa, n, 4), ncm_be32_at(ob, n, 4)) &&
	       not_older(ncm_be32_at(oa, n, 8), ncm_be32_at(ob, n, 8));
}

/* Same flow, same IP and TCP header fields that GRO would insist on, next in
 * sequence: TAP_GRO_N_ENDS; else what ends the run. */
static TapGroEnd
continues(const TapGro *g, const NcmGsoTcp *t, const guint8 *pkt)
{
	const guint8 *a = g->buf + g->l3off, *b = pkt + t->l3off;
	const guint8 *ta = g->buf + g->l4off, *tb = pkt + t->l4off;

	if (t->l3off != g->l3off || t->v6 != g->v6 || t->hdr != g->hdr_len || t->payload > g->mss)
		return TAP_GRO_END_HEADER;
	if (g->l3off && memcmp(g->buf, pkt, NCM_ETH_HLEN) != 0)
		return TAP_GRO_END_HEADER;
	if (t->v6) {
		/* Version, traffic class, flow label; addresses; hop limit. */
		if (memcmp(a, b, 4) != 0 || memcmp(a + 8, b + 8, 32) != 0 || a[7] != b[7])
			return TAP_GRO_END_HEADER;
	} else {
		/* TOS (ECN included), DF, TTL, protocol; addresses. */
		if (a[1] != b[1] || ((a[6] ^ b[6]) & 0x40) || a[8] != b[8] ||
		    memcmp(a + 12, b + 12, 8) != 0)
			return TAP_GRO_END_HEADER;
	}
	if (memcmp(ta, tb, 4) != 0)
		return TAP_GRO_END_HEADER;
	if (ncm_be32_at(pkt, t->hdr, t->l4off + 4) != g->next_seq)
		return TAP_GRO_END_GAP;
	/* ACK number; flags but PSH; options (a newer TSval allowed). */
	if (memcmp(ta + 8, tb + 8, 4) != 0 || ((ta[13] ^ tb[13]) & ~TCP_PSH) != 0 ||
	    !same_options(g, t, pkt))
		return TAP_GRO_END_HEADER;
	if (g->len + t->payload > g->l3off + TAP_GRO_MAX_IP)
		return TAP_GRO_END_FULL;
	return TAP_GRO_N_ENDS;
}

static void
start(TapGro *g, const NcmGsoTcp *t, const guint8 *pkt, gsize len)
{
	memcpy(g->buf, pkt, len);
	g->len = len;
	g->l3off = t->l3off;
	g->l4off = t->l4off;
	g->hdr_len = t->hdr;
	g->mss = (guint)t->payload;
	g->segs = 1;
	g->v6 = t->v6;
	g->first_verified = FALSE;
	g->next_seq = ncm_be32_at(pkt, len, t->l4off + 4) + (guint32)t->payload;
}

void
tap_gro_push(TapGro *g, guint l3off, const guint8 *pkt, gsize len, TapGroWrite write,
	     gpointer user_data)
{
	NcmGsoTcp t;
	NcmGsoTcp first = { .v6 = g->v6, .l3off = g->l3off, .l4off = g->l4off };
	TapGroEnd why = TAP_GRO_END_HEADER;
	guint8 *tcp;

	if (!g->buf || !ncm_gso_parse_tcp(l3off, pkt, len, &t) || !is_candidate(&t, pkt)) {
		tap_gro_flush_for(g, TAP_GRO_END_FRAME, write, user_data);
		write(user_data, &no_offload, pkt, len, 1);
		return;
	}
	if (g->len && (why = continues(g, &t, pkt)) == TAP_GRO_N_ENDS) {
		/* Checked only now, and only what merges: a lone segment is the kernel's to check. */
		if (!g->first_verified && !ncm_gso_tcp_csum_ok(&first, g->buf, g->len)) {
			__atomic_fetch_add(&g->bad_csum, 1, __ATOMIC_RELAXED); /* read by stats */
			tap_gro_flush(g, write, user_data);
			goto alone;
		}
		g->first_verified = TRUE;
		/* Summed as it is copied; the run grows only if the sum holds
		 * (continues() made the room). */
		if (!ncm_gso_tcp_csum_copy_ok(&t, pkt, len, g->buf + g->len)) {
			__atomic_fetch_add(&g->bad_csum, 1, __ATOMIC_RELAXED); /* read by stats */
			tap_gro_flush(g, write, user_data);
			write(user_data, &no_offload, pkt, len, 1);
			return;
		}
		g->len += t.payload;
		g->segs++;
		__atomic_fetch_add(&g->merged, 1, __ATOMIC_RELAXED);
		g->next_seq += (guint32)t.payload;
		tcp = g->buf + g->l4off;
		tcp[13] |= pkt[t.l4off + 13] & TCP_PSH;
		memcpy(tcp + 14, pkt + t.l4off + 14, 2); /* the newest window */
		/* and the newest timestamp (same_options()); else the same bytes */
		memcpy(tcp + 20, pkt + t.l4off + 20, t.thl - 20);
		/*
		 * A short segment ends the run (only the last may be short).
		 * A push does not, unlike the kernel's GRO: a Linux sender
		 * held back by its send buffer pushes at every wake-up, and
		 * at 8 devices on one event thread that was every second
		 * segment (issue 20: 14598 runs ended by PSH, almost all).
		 * The run is delivered at the NTB batch's end anyway, and the
		 * kernel's receive takes PSH as a hint it has no use for.
		 */
		if (t.payload < g->mss)
			tap_gro_flush_for(g, TAP_GRO_END_SHORT, write, user_data);
		return;
	}
	tap_gro_flush_for(g, why, write, user_data);
alone:
	start(g, &t, pkt, len);
}
