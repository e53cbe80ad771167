/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-l3.h: TUN (L3) mode: Ethernet framing, peer MAC learning, ARP and NDP answers (private). */
#pragma once

#include <glib.h>

#include "ncm-eth.h"
#include "ncm-link-private.h"
#include "ncm-pcap.h"

G_BEGIN_DECLS

typedef struct {
	/* The peer's MAC in the low 48 bits, bit 48 set once learned. Atomic:
	 * the RX thread learns it, the reader thread uses it. */
	guint64 peer;
	guint64 answered;   /* ARP replies and neighbour adverts sent (atomic) */
	gboolean unflushed; /* an answer waits in the open NTB; RX thread only */
	NcmPcap *pcap;      /* answers are datagrams too: recorded when set */
} TapL3;

/*
 * Device → kernel. Returns the IP packet inside @frame for the TUN fd, or
 * NULL when the frame was consumed (ARP or neighbour solicitation answered
 * through @link) or is not for the kernel. Thread: the link's data thread.
 */
const guint8 *tap_l3_from_frame(TapL3 *l3, NcmLink *link, const guint8 *frame, gsize len,
				gsize *ret_len);

/* The end of a received NTB: sends answers now rather than at the link's flush timer. */
void tap_l3_receive_done(TapL3 *l3, NcmLink *link);

/*
 * Kernel → device. @buf holds NCM_ETH_HLEN free bytes, then an IP packet of
 * @ip_len bytes; writes the Ethernet header. FALSE for what is not IPv4/IPv6.
 */
gboolean tap_l3_to_frame(TapL3 *l3, const guint8 mac[6], guint8 *buf, gsize ip_len);

G_END_DECLS
