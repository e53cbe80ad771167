/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-tap-hold.h: device → kernel TCP segments without payload (ACKs) kept until the end of their event batch, so every device's reach the host's TCP in the same turn (private). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/*
 * Why (issue 20): libusb reaps a batch's completions device by device in
 * the order the devices were opened, and the TAP wrote each received frame
 * at once. A pure ACK written to the TAP runs the host's TCP on the spot:
 * the sender sends on, its packets land on the TAP, its reader wakes. So in
 * every batch the first device opened had its sender run, and its reader
 * woken, first; with all of them sharing two CPUs, the later ones waited
 * behind it. Upload shares fell with the list position (1.15 to 0.79,
 * RTTs 50 to 86 ms; one run had the first at 2x the mean), not with the
 * gadget. Held here and written at receive_done, which the event thread
 * runs device by device starting one further on each round
 * (ncm-usb-context.c, run_timeouts()), ACKs reach the senders in turn.
 *
 * Only TCP segments without payload are held (tap_hold_wants()): they are
 * what clocks a sender, and a copy of them is cheap. Anything else, small or
 * not, goes at once and writes the held ones first, so the frames of a
 * device still reach the kernel in their order. A lone datagram (a UDP
 * round trip, DNS, a ping, an ARP answer) then reaches the kernel while
 * its NTB is parsed, not after the IN transfer's resubmission and the
 * batch's closing reap: 0.46 ms of ncm-tun's 10/s round trip under the
 * VM (tests/bench/RESULTS.md, session 20), which cdc_ncm does not pay.
 *
 * Held Ethernet frames are thinned at the flush by the rule libncm applies
 * within one received NTB (ncm_ack_thin()): a pure ACK that a later pure
 * ACK of its flow in the hold supersedes, with nothing else of that flow
 * between, is not written. It would reach the kernel in the same turn as
 * its successor, and each written ACK costs a TAP write that runs the
 * host's TCP (~0.1 ms under the VM's TCG, issue 15); the receive path
 * thins each NTB alone, and a batch often reaps several.
 */
#define TAP_HOLD_FRAMES 64
#define TAP_HOLD_FRAME_MAX 128

typedef struct {
	guint n;
	gboolean thin;     /* Ethernet frames: superseded ACKs are left out */
	guint64 thinned;   /* how many were (atomic: read by stats); zero at allocation, kept by init */
	guint16 lens[TAP_HOLD_FRAMES];
	guint8 frames[TAP_HOLD_FRAMES][TAP_HOLD_FRAME_MAX];
} TapHold;

typedef void (*TapHoldWrite)(gpointer user_data, const guint8 *frame, gsize len);

/* @thin: the frames are Ethernet (TAP mode), so superseded ACKs may be left out.
 * The thinned count goes on (a TAP's statistics span its device sessions). */
static inline void
tap_hold_init(TapHold *h, gboolean thin)
{
	h->n = 0;
	h->thin = thin;
}

/* Whether @len is small enough to hold at all. */
static inline gboolean
tap_hold_fits(gsize len)
{
	return len <= TAP_HOLD_FRAME_MAX;
}

/* Whether to hold the Ethernet frame @frame: a TCP segment without payload that fits. */
gboolean tap_hold_wants(const guint8 *frame, gsize len);

/* Writes the held frames, oldest first (less the superseded ACKs), and empties the hold. */
void tap_hold_flush(TapHold *h, TapHoldWrite write, gpointer user_data);

/*
 * Keeps a copy of @frame (tap_hold_fits(@len)); a full hold is written
 * first. Thread: the one that flushes.
 */
void tap_hold_take(TapHold *h, const guint8 *frame, gsize len, TapHoldWrite write,
		   gpointer user_data);

G_END_DECLS
