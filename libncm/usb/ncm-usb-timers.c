/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-timers.c: the device's one timeout on the libusb event thread: TX's last-resort flush and pacing, the tail nudge, failed IN transfers' retry rounds. */
#include <string.h>

#include "ncm-usb-device.h"

/*
 * RX reports what it sees here (NTBs, the addresses in ARP and neighbour
 * discovery packets), TX leaves what the host's own ones say in its nudge_tx
 * mailbox, and this file decides when the tail nudge (ncm-nudge.h) goes out,
 * through TX like any frame. So RX and TX never call each other.
 */

/* Well under TCP's shortest retransmission timeout (200 ms on Linux), so a
 * held tail costs less than one RTO. */
#define NCM_DEFAULT_NUDGE_MS 100

static gchar *
nudge_key(NcmDevice *self)
{
	return g_strdup_printf("nudge:%s:%s:%u", self->info->port_path ? self->info->port_path : "",
			       self->info->serial ? self->info->serial : "", self->info->comm_iface);
}

/* Sends the tail nudge when a stream has gone quiet. */
static gint64
nudge_tick(NcmDevice *self, gint64 now)
{
	guint8 frame[NCM_NUDGE_FRAME_MAX];
	NcmNudgeTx own;
	gsize len;
	gint64 due;

	if (self->options.nudge_ms == NCM_NUDGE_OFF)
		return G_MAXINT64;
	due = ncm_nudge_due(&self->nudge, (gint64)self->options.nudge_ms * 1000);
	if (due > now)
		return due;
	g_debug("tail nudge at %" G_GINT64_FORMAT " ms: last data %" G_GINT64_FORMAT
		" ms, stream %" G_GINT64_FORMAT " ms, ask %" G_GINT64_FORMAT " ms", now / 1000,
		self->nudge.last_data / 1000, self->nudge.stream_at / 1000,
		self->nudge.asked_at / 1000);
	len = ncm_nudge_frame(&self->nudge, frame);
	if (len) {
		/* One NTB, which the device answers with as many replies. */
		for (guint i = 0; i < NCM_NUDGE_FRAMES; i++)
			if (ncm_device_send(self, frame, len) != NCM_SEND_OK)
				break;
		ncm_device_flush(self);
		NCM_STAT_ADD(self, rx_nudges, 1);
		/* Its own requests are not the host's asking. */
		ncm_device_tx_take_nudge(self, &own);
	}
	ncm_nudge_sent(&self->nudge, now);
	return G_MAXINT64;
}

/*
 * Runs between libusb's event batches, each of which may have reaped
 * several bulk-IN transfers (dummy_hcd, like a real controller's
 * interrupt moderation, completes them in bursts): the end of the batch
 * is the sink's end of input.
 */
static void
rx_batch_end(NcmDevice *self)
{
	if (!self->rx_done_pending)
		return;
	self->rx_done_pending = FALSE;
	NCM_STAT_ADD(self, rx_batches, 1);
	if (self->sink.receive_done)
		self->sink.receive_done(self->sink_data);
}

/*
 * A device that stops completing bulk-IN transfers looks like a quiet
 * peer: the host's IN transfers are always pending. What tells the two
 * apart is the host's own requests (ARP, or IPv6 neighbour solicitations)
 * for the address the device has
 * answered before (the nudge learned its MAC from that answer): when
 * NCM_RX_QUIET_ASKS of them, over NCM_RX_QUIET_US, bring no NTB at all
 * while the device took as many OUT NTBs (else the requests never reached
 * it, and TX's own "sending stopped" says so), the owner hears it once
 * per such spell.
 */
#define NCM_RX_QUIET_US (10 * G_USEC_PER_SEC)
#define NCM_RX_QUIET_ASKS 3

/* The address the quiet spell's requests asked for, for the message. */
static gchar *
rx_quiet_address(NcmDevice *self)
{
	const NcmNudgeAddrs *a = self->rx_quiet_v6 ? &self->nudge.v6 : &self->nudge.v4;
	g_autoptr(GInetAddress) inet = g_inet_address_new_from_bytes(
		a->peer_ip, self->rx_quiet_v6 ? G_SOCKET_FAMILY_IPV6 : G_SOCKET_FAMILY_IPV4);

	return g_inet_address_to_string(inet);
}

static gint64
rx_quiet_tick(NcmDevice *self, const NcmNudgeTx *tx, gint64 now)
{
	const NcmNudge *n = &self->nudge;
	const NcmNudgeAddrs *asked = tx->asked_v6 ? &n->v6 : &n->v4;
	const NcmNudgeSaid *said = tx->asked_v6 ? &tx->v6 : &tx->v4;
	g_autofree gchar *address = NULL;
	gint64 due;

	/* A device whose link is down (NETWORK_CONNECTION 0: a dongle's cable
	 * out, its peer off) has nothing to send: its silence is no fault. */
	if (!g_atomic_int_get(&self->link_up) && !self->rx_quiet_told) {
		self->rx_quiet_since = 0;
		self->rx_quiet_asks = 0;
		return G_MAXINT64;
	}
	if (self->rx_quiet_since && n->last_rx >= self->rx_quiet_since) {
		if (self->rx_quiet_told)
			g_message("%04x:%04x sends again", self->info->vid, self->info->pid);
		self->rx_quiet_since = 0;
		self->rx_quiet_asks = 0;
		self->rx_quiet_told = FALSE;
	}
	if (tx->asked_at > n->last_rx && asked->have_peer_mac && asked->have &&
	    memcmp(said->peer_ip, asked->peer_ip, sizeof(said->peer_ip)) == 0) {
		if (!self->rx_quiet_since) {
			self->rx_quiet_since = tx->asked_at;
			self->rx_quiet_tx_ntbs = __atomic_load_n(&self->stats.tx_ntbs, __ATOMIC_RELAXED);
			self->rx_quiet_v6 = tx->asked_v6;
		}
		self->rx_quiet_asks++;
	}
	if (!self->rx_quiet_since || self->rx_quiet_told || self->rx_quiet_asks < NCM_RX_QUIET_ASKS ||
	    __atomic_load_n(&self->stats.tx_ntbs, __ATOMIC_RELAXED) <
		    self->rx_quiet_tx_ntbs + NCM_RX_QUIET_ASKS)
		return G_MAXINT64;
	due = self->rx_quiet_since + NCM_RX_QUIET_US;
	if (now < due)
		return due;
	self->rx_quiet_told = TRUE;
	address = rx_quiet_address(self);
	ncm_device_post_error(self, g_error_new(NCM_ERROR, NCM_ERROR_PROTOCOL,
				"receiving stopped: %04x:%04x has sent nothing for %d s while the "
				"host asked for %s %u times (%s), an address it answered "
				"before; it no longer completes bulk-IN transfers: replug or reopen it",
				self->info->vid, self->info->pid, (int)(NCM_RX_QUIET_US / G_USEC_PER_SEC),
				address, self->rx_quiet_asks,
				self->rx_quiet_v6 ? "neighbour solicitation" : "ARP"));
	return G_MAXINT64;
}

/*
 * NCM has a function send NETWORK_CONNECTION whenever the host selects
 * its data interface, and f_ncm does. TinyUSB sends it once after a bus
 * reset: a host that opens the function after another driver had it
 * (cdc_ncm binds first on Linux), or opens it again, hears nothing, and
 * would keep its link down for good. A device that said nothing this
 * long after the start is taken as up, as one without an interrupt
 * endpoint is; whatever it says later still counts.
 */
#define NCM_LINK_ASSUME_US (2 * G_USEC_PER_SEC)

static gint64
link_assume_tick(NcmDevice *self, gint64 now)
{
	gint64 at = __atomic_load_n(&self->link_assume_at, __ATOMIC_RELAXED);

	if (!at)
		return G_MAXINT64;
	/* Notifications are handled on this thread too: no race with them. */
	if (g_atomic_int_get(&self->link_known)) {
		__atomic_store_n(&self->link_assume_at, 0, __ATOMIC_RELAXED);
		return G_MAXINT64;
	}
	if (now < at)
		return at;
	__atomic_store_n(&self->link_assume_at, 0, __ATOMIC_RELAXED);
	g_message("%04x:%04x sent no NETWORK_CONNECTION in the %d s since the start: taking its "
		  "link as up (some devices, TinyUSB's among them, send it only after a bus reset)",
		  self->info->vid, self->info->pid, (int)(NCM_LINK_ASSUME_US / G_USEC_PER_SEC));
	ncm_device_post_link(self, TRUE);
	return G_MAXINT64;
}

static gint64
device_tick(gpointer data, gint64 now)
{
	NcmDevice *self = data;
	NcmNudgeTx tx;
	gint64 quiet;

	/* Room first: lwIP refills the freed slots from its queue before the
	 * received ACKs make it write more. */
	ncm_device_tx_batch_end(self);
	rx_batch_end(self);
	ncm_device_tx_take_nudge(self, &tx);
	quiet = rx_quiet_tick(self, &tx, now);
	ncm_nudge_merge_tx(&self->nudge, &tx);
	quiet = MIN(quiet, ncm_device_retry_tick(self, now));
	quiet = MIN(quiet, link_assume_tick(self, now));
	return MIN(MIN(ncm_device_tx_tick(self, now), nudge_tick(self, now)), quiet);
}

/* At open, before the event thread ticks the device. */
void
ncm_device_timers_setup(NcmDevice *self)
{
	g_autofree gchar *key = nudge_key(self);
	NcmNudge last;

	ncm_nudge_init(&self->nudge);
	if (ncm_context_recall(self->context, key, &last, sizeof(last)))
		ncm_nudge_carry(&self->nudge, &last);
	if (!self->options.nudge_ms)
		self->options.nudge_ms = NCM_DEFAULT_NUDGE_MS;
	ncm_context_add_timeout(self->context, device_tick, self);
}

/* The event thread owns the nudge by now: a session's start reaches it as
 * an ask, since whatever the device held through the last session must come. */
void
ncm_device_timers_start(NcmDevice *self)
{
	gint64 now = g_get_monotonic_time();

	ncm_mutex_lock(&self->tx_lock);
	self->nudge_tx.asked_at = now;
	ncm_mutex_unlock(&self->tx_lock);
	if (self->info->intr_ep && !g_atomic_int_get(&self->link_known))
		__atomic_store_n(&self->link_assume_at, now + NCM_LINK_ASSUME_US, __ATOMIC_RELAXED);
	/* Both are the event thread's to act on, which may sleep for its whole
	 * idle ceiling (seconds) unless told. */
	ncm_context_wake(self->context, now);
}

/* At close, once nothing is in flight. */
void
ncm_device_timers_stop(NcmDevice *self)
{
	g_autofree gchar *key = NULL;

	/* Only a session that got as far as its timers has learned anything. */
	if (!self->context || !ncm_context_remove_timeout(self->context, device_tick, self) ||
	    !self->rx)
		return;
	key = nudge_key(self);
	ncm_context_remember(self->context, key, &self->nudge, sizeof(self->nudge));
}

void
ncm_device_nudge_ntb_begin(NcmDevice *self, gint64 now)
{
	ncm_nudge_ntb_begin(&self->nudge, now);
}

void
ncm_device_nudge_learn(NcmDevice *self, const guint8 *frame, gsize len)
{
	ncm_nudge_learn(&self->nudge, frame, len);
}

void
ncm_device_nudge_ntb_end(NcmDevice *self)
{
	if (ncm_nudge_ntb_end(&self->nudge))
		NCM_STAT_ADD(self, rx_nudge_freed, 1);
}
