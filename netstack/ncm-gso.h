/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-gso.h: IP packets cut to the link's size: TCP segmentation, IPv4 fragmentation, Internet checksums (private). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * Why: a netstack does its work per packet, and a USB link carries only
 * frames of its MTU. Both backends let their TCP build packets of many
 * segments (the kernel's TSO through the TAP, lwIP's large segments) and
 * cut them here, on the way to the device, where each piece costs a header
 * copy and a checksum instead of a trip through a stack.
 *
 * Offsets count from the start of the packet: @l3off is where the IP
 * header starts (14 behind an Ethernet header, 0 without one).
 */

/* The Internet checksum's 32-bit partial sum of @len bytes, added to @sum. */
guint32 ncm_gso_csum_add(guint32 sum, const guint8 *p, gsize len);
/* Copies @len bytes from @src to @dst and adds their partial sum to @sum,
 * in one pass (ncm_csum64_copy()). */
guint32 ncm_gso_csum_copy(guint32 sum, guint8 *dst, const guint8 *src, gsize len);
/* Folds a partial sum to 16 bits (not inverted). */
guint16 ncm_gso_csum_fold(guint32 sum);

static inline void
ncm_gso_put_be16(guint8 *p, guint16 v)
{
	p[0] = (guint8)(v >> 8);
	p[1] = (guint8)v;
}

static inline void
ncm_gso_put_be32(guint8 *p, guint32 v)
{
	ncm_gso_put_be16(p, (guint16)(v >> 16));
	ncm_gso_put_be16(p + 2, (guint16)v);
}

/* Where a TCP packet's headers lie. */
typedef struct {
	gboolean v6;
	guint l3off, l4off;
	guint thl;          /* TCP header length */
	guint hdr;          /* l4off + thl */
	gsize payload;
} NcmGsoTcp;

/*
 * Parses @pkt as IPv4 (not a fragment) or IPv6 (no extension header)
 * carrying TCP whose IP length matches @len exactly; with @l3off 14, the
 * Ethernet type must match the IP version. FALSE otherwise.
 */
gboolean ncm_gso_parse_tcp(guint l3off, const guint8 *pkt, gsize len, NcmGsoTcp *t);
/* The pseudo-header's sum for a TCP segment of @tcp_len bytes. */
guint32 ncm_gso_pseudo_sum(const NcmGsoTcp *t, const guint8 *pkt, gsize tcp_len);
gboolean ncm_gso_tcp_csum_ok(const NcmGsoTcp *t, const guint8 *pkt, gsize len);
/* ncm_gso_tcp_csum_ok(), while the payload (t->payload bytes from t->hdr) is
 * copied to @dst: the bytes checked are the bytes copied, read once. @dst
 * holds them whatever the verdict. */
gboolean ncm_gso_tcp_csum_copy_ok(const NcmGsoTcp *t, const guint8 *pkt, gsize len, guint8 *dst);
/* Writes the TCP checksum of the segment in @pkt (@len bytes, as parsed into @t). */
void ncm_gso_tcp_fill_csum(const NcmGsoTcp *t, guint8 *pkt, gsize len);
/* Sets an IPv4 header's total length and ID, and its checksum. */
void ncm_gso_ipv4_fix(guint8 *ip, guint ihl, gsize iplen, guint16 id);

/*
 * One finished frame in two pieces, its headers and its payload (which
 * points into the packet being cut: payload is never copied here); FALSE
 * stops the cutting (the link is full or gone).
 */
typedef gboolean (*NcmGsoEmit)(gpointer user_data, const guint8 *hdr, gsize hdr_len,
			       const guint8 *payload, gsize payload_len);

typedef enum {
	NCM_GSO_OK,
	NCM_GSO_STOPPED, /* @emit returned FALSE */
	NCM_GSO_INVALID, /* headers that do not describe such a packet of this length */
} NcmGsoResult;

/*
 * A parsed TCP packet (@t) cut into segments of @mss payload bytes, each
 * with its own IP length (and IPv4 ID and header checksum), sequence
 * number, flags (FIN and PSH on the last, CWR on the first) and full TCP
 * checksum; a packet of at most @mss bytes of payload comes out as one
 * segment with its checksum filled. @scratch holds each segment's headers
 * (t->hdr bytes). Starts at segment *@next and counts the segments
 * emitted into it, so a caller whose @emit stopped resumes where it was.
 */
NcmGsoResult ncm_gso_segment(const NcmGsoTcp *t, const guint8 *pkt, gsize len, guint mss,
			     guint8 *scratch, gsize scratch_size, gsize *next, NcmGsoEmit emit,
			     gpointer user_data);

/*
 * An IPv4 packet longer than @mtu (the IP packet's limit) cut into
 * fragments (RFC 791): each carries the header (options included), its
 * offset, MF on all but the packet's last, and a new header checksum.
 * INVALID for a malformed header or one with DF set (the sender asked
 * not to fragment: the caller drops it). @scratch holds l3off + the IP
 * header. *@next as for ncm_gso_segment().
 */
NcmGsoResult ncm_gso_fragment_ipv4(guint l3off, const guint8 *pkt, gsize len, guint mtu,
				   guint8 *scratch, gsize scratch_size, gsize *next,
				   NcmGsoEmit emit, gpointer user_data);

/*
 * An IPv6 packet longer than @mtu cut into fragments (RFC 8200): each is
 * the IPv6 header, a Fragment header with @id, its offset and M, then its
 * piece of what followed the IPv6 header. A packet that is a fragment
 * already (a Fragment header first, as lwIP sends a datagram over its
 * large MTU) is cut again: its pieces keep its ID and offset, and the
 * last its M. INVALID for a malformed header, or one followed by a
 * Hop-by-Hop or Routing header (those would belong before the Fragment
 * header; this side sends none in large packets). @scratch holds l3off +
 * 48 bytes. *@next as for ncm_gso_segment().
 */
NcmGsoResult ncm_gso_fragment_ipv6(guint l3off, const guint8 *pkt, gsize len, guint mtu,
				   guint32 id, guint8 *scratch, gsize scratch_size, gsize *next,
				   NcmGsoEmit emit, gpointer user_data);

G_END_DECLS
