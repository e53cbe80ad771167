/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-gso.h: TAP offloads (private): TCP segmentation and checksums on the way out, coalescing on the way in. */
#pragma once

#include <glib.h>

#include "ncm-gso.h"

G_BEGIN_DECLS

/*
 * Why: a TAP costs one syscall and one trip through the kernel's stack per
 * packet. With IFF_VNET_HDR and TUNSETOFFLOAD the kernel hands us TCP
 * super-packets of up to 64 KiB (TSO) with checksums left to us, and takes
 * coalesced super-packets from us (what GRO does for a NIC): one syscall
 * and one stack traversal per ~40 frames instead of per frame. The device
 * never sees either: it gets ordinary frames of the link's MTU.
 *
 * Every offset below is counted from the start of what crosses the fd
 * (the Ethernet header in TAP mode, the IP header in TUN mode); @l3off is
 * where the IP header starts (14 or 0).
 */

/* struct virtio_net_hdr, the legacy 10-byte header, in host byte order (tun's default). */
typedef struct {
	guint8 flags;
	guint8 gso_type;
	guint16 hdr_len;
	guint16 gso_size;
	guint16 csum_start;
	guint16 csum_offset;
} TapVnetHdr;
G_STATIC_ASSERT(sizeof(TapVnetHdr) == 10);

#define TAP_VNET_F_NEEDS_CSUM 1
#define TAP_VNET_GSO_NONE 0
#define TAP_VNET_GSO_TCPV4 1
#define TAP_VNET_GSO_TCPV6 4
#define TAP_VNET_GSO_ECN 0x80

/* The largest packet coalescing builds (IPv4's total length is 16 bits). */
#define TAP_GRO_MAX_IP 65535

/*
 * Kernel → device, a packet without GSO: fills the checksum the kernel left
 * to us (NEEDS_CSUM). FALSE when csum_start/csum_offset do not fit @len.
 */
gboolean tap_gso_fill_csum(const TapVnetHdr *h, guint8 *pkt, gsize len);

/* One finished frame (ncm-gso.h); FALSE stops the segmentation (the link
 * is gone, the reader must stop). */
typedef NcmGsoEmit TapGsoEmit;

typedef enum {
	TAP_GSO_OK,
	TAP_GSO_STOPPED,   /* @emit returned FALSE */
	TAP_GSO_INVALID,   /* headers that do not describe a TCP packet of this length */
} TapGsoResult;

/*
 * Kernel → device, a TSO packet (gso_type TCPV4/TCPV6): emits one frame per
 * gso_size bytes of payload, with its own IP length (and IPv4 ID and header
 * checksum), sequence number, flags (FIN and PSH on the last, CWR on the
 * first) and full TCP checksum. @scratch holds each segment's headers
 * (Ethernet, IP and TCP: up to 134 bytes).
 * Rewrites @pkt's IP length field first (the kernel's may be stale).
 */
TapGsoResult tap_gso_segment(const TapVnetHdr *h, guint l3off, guint8 *pkt, gsize len,
			     guint8 *scratch, gsize scratch_size, TapGsoEmit emit,
			     gpointer user_data);

/*
 * Writes one packet to the fd: @h all zero for an ordinary packet the
 * kernel checks itself; @segs frames went into it.
 */
typedef void (*TapGroWrite)(gpointer user_data, const TapVnetHdr *h, const guint8 *pkt,
			    gsize len, guint segs);

/* What ended a coalesced run (TapGro.ends): where runs stay short. */
typedef enum {
	TAP_GRO_END_FULL,     /* no room for the next segment */
	TAP_GRO_END_SHORT,    /* a short segment (only the last may be) */
	TAP_GRO_END_GAP,      /* the flow's next segment was not next in sequence */
	TAP_GRO_END_HEADER,   /* another flow, or its ACK number, options or IP fields changed */
	TAP_GRO_END_FRAME,    /* a frame that does not merge (no payload, not TCP, ...) */
	TAP_GRO_END_FLUSH,    /* the caller flushed: a burst's end, a held ACK */
	TAP_GRO_N_ENDS
} TapGroEnd;

/*
 * Device → kernel: consecutive in-order TCP segments of one flow, with the
 * same flags but PSH, the same ACK and options (a newer timestamp allowed)
 * and valid checksums, become one super-packet
 * (gso_type TCPV4/TCPV6, NEEDS_CSUM with the pseudo-header sum in place, as
 * the kernel's own GRO output looks). Everything else passes through
 * untouched, in order; a segment whose checksum is wrong is passed on alone
 * for the kernel to drop and count.
 */
typedef struct {
	guint8 *buf;        /* the pending packet, l3off + TAP_GRO_MAX_IP bytes */
	gsize len;          /* 0: nothing pending */
	guint l3off, l4off, hdr_len;
	guint mss;          /* payload of the first segment */
	guint segs;
	gboolean v6;
	gboolean first_verified;
	guint32 next_seq;
	guint64 merged;     /* segments that went into a super-packet after its first (atomic) */
	guint64 ends[TAP_GRO_N_ENDS];  /* runs ended, by what ended them (atomic) */
	guint64 bad_csum;   /* segments refused for a wrong checksum (atomic) */
} TapGro;

void tap_gro_init(TapGro *g);
void tap_gro_clear(TapGro *g);
/* One packet (starting with its Ethernet header when l3off is 14). */
void tap_gro_push(TapGro *g, guint l3off, const guint8 *pkt, gsize len, TapGroWrite write,
		  gpointer user_data);
/* Writes what is pending: the end of an NTB, or before anything that must not pass it. */
void tap_gro_flush(TapGro *g, TapGroWrite write, gpointer user_data);
/* tap_gro_flush(), counting a pending run's end as @why. */
void tap_gro_flush_for(TapGro *g, TapGroEnd why, TapGroWrite write, gpointer user_data);

G_END_DECLS
