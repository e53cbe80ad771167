/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap.h: the TAP backend: an NcmLink's frames as a kernel network interface. */
#pragma once

#include <glib.h>

#include "ncm-link-private.h"
#include "ncm-pcap.h"

G_BEGIN_DECLS

/*
 * Two data paths, no queue of our own in between:
 * - device → kernel: the link's sink (its data thread, for an NcmDevice the
 *   libusb event thread) writes each frame to the non-blocking fd; when the
 *   kernel refuses it (EAGAIN) the frame is dropped and counted, never waited for.
 *   With offload, consecutive TCP segments of one flow within an NTB are
 *   written as one packet (at the NTB's end at the latest).
 * - kernel → device: a reader thread drains the fd until EAGAIN, packs every
 *   frame into the link and flushes once per burst (one NTB per burst, not per
 *   frame). On NCM_SEND_WOULD_BLOCK it keeps the frame and waits for the
 *   link's writable callback. With offload, a TSO packet is cut into frames
 *   of its segment size and the checksums the kernel left are filled in.
 */
typedef struct _NcmTap NcmTap;

/*
 * NCM_TAP_MODE_TAP: the kernel sees Ethernet (IFF_TAP), with the MAC set on
 * the interface; everything passes through unchanged.
 * NCM_TAP_MODE_TUN: the kernel sees IP only (IFF_TUN). The backend then
 * speaks Ethernet for it: frames carry the link's MAC as source and the
 * peer's (learned from what the device sends; broadcast until then) as
 * destination, and it answers the device's ARP requests and neighbour
 * solicitations itself, for any address, since everything beyond the
 * device is reached through this interface.
 */
typedef enum {
	NCM_TAP_MODE_TAP,
	NCM_TAP_MODE_TUN,
} NcmTapMode;

typedef struct {
	guint64 rx_frames;         /* device → kernel: frames written to the fd */
	guint64 rx_bytes;
	guint64 rx_drops_full;     /* ... dropped: the fd was full (EAGAIN) */
	guint64 rx_errors;         /* ... dropped: other write errors (e.g. interface down) */
	guint64 tx_frames;         /* kernel → device: frames the link accepted */
	guint64 tx_bytes;
	guint64 tx_bursts;         /* flushes, one per drained burst */
	guint64 tx_waits;          /* waits for writable after NCM_SEND_WOULD_BLOCK */
	guint64 tx_drops_invalid;  /* too short or too long for the link */
	guint64 tx_drops_closed;   /* the link was closed or gone */
	guint64 tx_read_errors;
	guint64 l3_answers;        /* TUN mode: ARP replies and neighbour adverts sent */
	/* Offload (NCM_TAP_OFFLOAD) only: */
	guint64 rx_super;          /* coalesced packets written (each counts its frames in rx_frames) */
	guint64 rx_coalesced;      /* frames merged into a coalesced packet after its first */
	guint64 rx_run_ends[6];    /* runs ended by: no room, a short segment, a gap, a header, another frame, a flush */
	guint64 rx_bad_csum;       /* TCP segments left alone for a wrong checksum (the kernel drops them) */
	guint64 tx_gso_packets;    /* TSO packets the reader cut into frames */
	/* Read while the link was full (ncm-tap-queue.h): */
	guint64 tx_queued;         /* packets read ahead into the queue */
	guint64 tx_acks_ahead;     /* pure ACKs sent before older queued packets */
	guint64 tx_sparse_ahead;   /* sparse flows' packets sent so (ncm-tap-queue.h) */
	guint64 tx_drops_queue;    /* dropped: the queue held its limit of bytes already */
	guint64 tx_sojourn_us;     /* time the queued packets other than ACKs waited, summed (issue 20) */
	guint64 tx_sojourn_packets;  /* ... over this many */
	guint64 tx_room_wait_us;   /* time the reader slept waiting for the link's room */
	guint64 rx_acks_thinned;   /* received pure ACKs a later one of the batch superseded (ncm-tap-hold.h) */
} NcmTapStats;

typedef enum {
	/*
	 * IFF_VNET_HDR with TSO and checksum offload, the way a paravirtual
	 * NIC talks to the kernel: TCP leaves as 64 KiB packets that the reader
	 * cuts into MTU-sized frames, and consecutive segments of a flow from
	 * the device go in as one packet. One syscall and one pass through the
	 * kernel's stack per ~40 frames instead of per frame; the device sees
	 * ordinary frames either way.
	 */
	NCM_TAP_OFFLOAD = 1 << 0,
} NcmTapFlags;

/*
 * Opens /dev/net/tun and attaches to (or creates) the interface @name
 * (IFF_TAP or IFF_TUN by @mode, with IFF_NO_PI); "%d" in @name lets the
 * kernel number it; NULL means "ncm%d". A non-persistent interface
 * disappears with ncm_tap_free().
 * Errors say what to do (modprobe tun, CAP_NET_ADMIN, pre-created owner).
 * Thread: any.
 */
NcmTap *ncm_tap_open(const gchar *name, NcmTapMode mode, GError **error);
/* ncm_tap_open() is this with NCM_TAP_OFFLOAD. */
NcmTap *ncm_tap_open_full(const gchar *name, NcmTapMode mode, NcmTapFlags flags, GError **error);
/* TRUE when the fd carries offload headers (NCM_TAP_OFFLOAD was asked for). */
gboolean ncm_tap_has_offload(NcmTap *tap);

/* Wraps an fd that carries one packet per read/write (tests: a socketpair). Takes @fd. */
NcmTap *ncm_tap_new_for_fd(int fd, NcmTapMode mode, const gchar *name);

const gchar *ncm_tap_get_name(NcmTap *tap);
/* The interface index, 0 when the fd is not a TAP interface. */
int ncm_tap_get_ifindex(NcmTap *tap);
/* TRUE when the interface was made persistent (pre-created): it outlives us. */
gboolean ncm_tap_is_persistent(NcmTap *tap);

/* Records every frame crossing the link (both directions). Not owned. Set while detached. */
void ncm_tap_set_pcap(NcmTap *tap, NcmPcap *pcap);

/*
 * Bytes of packets other than pure ACKs the reader holds while the link is
 * full, past which it drops (default TAP_QUEUE_DEFAULT_LIMIT, 512 KiB;
 * ncm-tap-queue.h says why there is a limit). Thread: the owner's, while
 * detached.
 */
void ncm_tap_set_tx_queue_limit(NcmTap *tap, gsize bytes);

/* Sets the interface's carrier (TUNSETCARRIER) to mirror the device's link. Thread: any. */
gboolean ncm_tap_set_carrier(NcmTap *tap, gboolean on, GError **error);

/*
 * Installs the sink on @link, starts it and starts the reader thread. The
 * link is not owned: detach before freeing it. Thread: the owner's.
 */
gboolean ncm_tap_attach(NcmTap *tap, NcmLink *link, GError **error);

/*
 * Stops the reader thread, then stops the link (for an NcmDevice:
 * ncm_device_close), after which no sink callback runs. Idempotent.
 * Thread: the owner's, never the link's data thread.
 */
void ncm_tap_detach(NcmTap *tap);

/* Thread: any. */
void ncm_tap_get_stats(NcmTap *tap, NcmTapStats *ret_stats);

/*
 * @func runs once, on the thread-default main context of the thread that
 * opened @tap, when the interface is deleted from outside (ip link del):
 * the reader thread has stopped then; detach and free. Set while detached.
 */
void ncm_tap_set_gone_func(NcmTap *tap, GSourceFunc func, gpointer user_data);
/* TRUE once the interface was deleted from outside. Thread: any. */
gboolean ncm_tap_is_gone(NcmTap *tap);

/* Detaches, closes the fd. Accepts NULL. */
void ncm_tap_free(NcmTap *tap);

G_END_DECLS
