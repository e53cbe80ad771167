/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-lwip-tso.h: lwIP's large TCP segments cut into link-sized frames on their way out (private). */
#ifndef NCM_LWIP_TSO_H
#define NCM_LWIP_TSO_H

#include <glib.h>

#include "ncm-gso.h"

/*
 * How lwIP comes to build segments larger than the link's frames:
 *  - the netif's MTUs (IPv4 and IPv6) are set to hold one: lwIP caps its
 *    send MSS by them;
 *  - an incoming SYN whose MSS option allows full link frames has it
 *    raised to that size (nlw_tso_rx_syn()), since lwIP takes the smaller
 *    of the peer's MSS and its own;
 *  - on the way out every TCP frame is cut at the link's MSS and summed
 *    (lwIP's TCP checksums are off on the netif), an outgoing SYN's MSS is
 *    lowered back to the link's, and an IP packet over the link's MTU
 *    (UDP, ICMP: lwIP no longer fragments below the large MTU) is
 *    fragmented here (nlw_tso_cut()).
 * A peer whose MSS is below the link's keeps it, and so does a path whose
 * MTU lwIP learnt (an IPv6 router advertisement's, Packet Too Big): lwIP's
 * segments then fit the link and pass through whole.
 */

/* The headers of one cut frame: Ethernet, IP, TCP with options. */
#define NLW_TSO_HDR_MAX (14 + 60 + 60)

/* The MSS of lwIP's large segments over a link of @link_mtu: @segs link
 * segments, at most @max_mss (TCP_MSS), at least the link's own. */
guint nlw_tso_super_mss(guint link_mtu, gboolean v6, guint segs, guint max_mss);

/*
 * A received frame (Ethernet header first): a TCP SYN with a valid
 * checksum and an MSS option that allows full frames of @link_mtu gets
 * nlw_tso_super_mss() and a new checksum. TRUE when it was rewritten.
 */
gboolean nlw_tso_rx_syn(guint8 *frame, gsize len, guint link_mtu, guint segs, guint max_mss);

typedef enum {
	NLW_TSO_ASIS,    /* fits: send the frame as it is now (a TCP frame was summed in place) */
	NLW_TSO_SENT,    /* every piece went to @emit */
	NLW_TSO_STOPPED, /* @emit refused one: resume with the same *next */
	NLW_TSO_INVALID, /* cannot go on the link (malformed TCP, DF over the MTU): drop it */
} NlwTsoResult;

/*
 * A frame lwIP sent (Ethernet header first), for a link that carries IP
 * packets of up to @link_mtu bytes: TCP frames are cut and summed, an
 * outgoing SYN's MSS option is lowered to the link's, IPv4 packets over
 * @link_mtu are fragmented (IPv6 with @frag_id, new for each packet). The
 * frame may be changed in place (lwIP does not resend a segment whose pbuf
 * is still referenced, and rewrites the headers of one it resends).
 * *@next counts the pieces emitted, from 0.
 */
NlwTsoResult nlw_tso_cut(guint8 *frame, gsize len, guint link_mtu, guint32 frag_id,
			 guint8 *scratch, gsize *next, NcmGsoEmit emit, gpointer user_data);

#endif /* NCM_LWIP_TSO_H */
