/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-rx.c: bulk-IN transfers, parsed and resubmitted on the libusb event thread. */
#include <string.h>

#include "ncm-usb-device.h"


/* In-flight depth by speed: usbfs keeps up only with several reads queued,
 * and a gadget must never find all of them busy while the event thread is
 * in the sink (see rx_completed()): more than f_ncm's 10 IN requests at
 * high speed. */
/* Well under TCP's shortest retransmission timeout (200 ms on Linux), so a
 * held tail costs less than one RTO. */
#define NCM_DEFAULT_NUDGE_MS 100

static guint
default_rx_transfers(guint speed_mbps)
{
	if (speed_mbps >= 5000)
		return 32;
	if (speed_mbps >= 480)
		return 16;
	return 4;
}

static bool
deliver(void *user_data, const uint8_t *datagram, size_t len)
{
	NcmDevice *self = user_data;

	self->rx_batch_bytes += len;
	ncm_nudge_learn(&self->nudge, datagram, len);
	if (self->sink.receive)
		self->sink.receive(self->sink_data, datagram, len);
	return true;
}

static guint32
fault_next(NcmDevice *self)
{
	guint32 x = self->fault_state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return self->fault_state = x;
}

static void
parse_one(NcmDevice *self, const guint8 *buf, gsize len)
{
	NcmNtbParseResult res;

	self->rx_batch_bytes = 0;
	ncm_nudge_ntb_begin(&self->nudge, g_get_monotonic_time());
	ncm_ntb_parse(&self->parse_config, buf, len, deliver, self, &res);
	if (ncm_nudge_ntb_end(&self->nudge, res.datagrams, self->rx_batch_bytes))
		NCM_STAT_ADD(self, rx_nudge_freed, 1);
	NCM_STAT_ADD(self, rx_ntbs, 1);
	NCM_STAT_ADD(self, rx_datagrams, res.datagrams);
	NCM_STAT_ADD(self, rx_bytes, self->rx_batch_bytes);
	if (res.rejects) {
		NCM_STAT_ADD(self, rx_bad_ntbs, 1);
		for (guint i = 1; i < NCM_NTB_N_ERRORS; i++)
			if (res.reasons[i])
				NCM_STAT_ADD(self, rx_rejects[i], res.reasons[i]);
		g_debug("bad NTB (seq %u): %u rejects", res.sequence, res.rejects);
	}
}

/*
 * Test-only: damages one NTB in fault_one_in, the way a bad cable or a
 * buggy device would, so the VM tests can prove that good frames survive.
 */
static void
parse_with_faults(NcmDevice *self, guint8 *buf, gsize len)
{
	guint32 r = fault_next(self);

	if (r % self->options.fault_one_in != 0 || len == 0) {
		parse_one(self, buf, len);
		return;
	}
	switch ((r >> 16) % 3) {
	case 0:
		buf[(r >> 8) % len] ^= (guint8)(1u << (r & 7));
		parse_one(self, buf, len);
		break;
	case 1:
		parse_one(self, buf, (r >> 8) % len);
		break;
	default:
		parse_one(self, buf, len);
		parse_one(self, buf, len);
		break;
	}
}

static void
resubmit_stalled(NcmDevice *self, GPtrArray *slots)
{
	for (guint i = 0; i < slots->len; i++) {
		NcmSlot *slot = g_ptr_array_index(slots, i);
		int r = ncm_device_submit(self, slot->xfer, FALSE);

		if (r < 0 && r != LIBUSB_ERROR_INTERRUPTED)
			ncm_device_post_error(self, g_error_new(NCM_ERROR, NCM_ERROR_FAILED,
						"receiving stopped: resubmitting after a stall "
						"failed (%s); reopen the device", libusb_strerror(r)));
	}
}

/* Clears the halt until no stalled transfer is left, then says it is done. */
static gpointer
clear_halt_thread(gpointer data)
{
	NcmDevice *self = data;

	for (;;) {
		int r = libusb_clear_halt(self->handle, self->info->bulk_in_ep);
		g_autoptr(GPtrArray) slots = NULL;

		if (r < 0)
			g_debug("clearing the bulk-IN halt: %s", libusb_strerror(r));
		ncm_mutex_lock(&self->flight_lock);
		if (self->stalled->len == 0 || self->state != NCM_STATE_RUNNING) {
			self->clear_done = TRUE;
			ncm_mutex_unlock(&self->flight_lock);
			return NULL;
		}
		slots = g_steal_pointer(&self->stalled);
		self->stalled = g_ptr_array_new();
		ncm_mutex_unlock(&self->flight_lock);
		resubmit_stalled(self, slots);
	}
}

/* A STALL needs a synchronous CLEAR_FEATURE, which the event thread must not do. */
static void
handle_stall(NcmDevice *self, NcmSlot *slot)
{
	NCM_STAT_ADD(self, rx_stalls, 1);
	ncm_mutex_lock(&self->flight_lock);
	g_ptr_array_add(self->stalled, slot);
	if (self->clear_thread && self->clear_done) {
		/* It has returned (clear_done is its last act): joining does not block. */
		g_thread_join(g_steal_pointer(&self->clear_thread));
	}
	if (self->state == NCM_STATE_RUNNING && !self->clear_thread) {
		self->clear_done = FALSE;
		self->clear_thread = g_thread_new("ncm-clear-halt", clear_halt_thread, self);
	}
	if (--self->in_flight == 0)
		g_cond_broadcast(&self->flight_cond);
	ncm_mutex_unlock(&self->flight_lock);
}

static void
resubmit_failed(NcmDevice *self, int r)
{
	if (r == LIBUSB_ERROR_NO_DEVICE)
		ncm_device_mark_gone(self);
	else if (r < 0 && r != LIBUSB_ERROR_INTERRUPTED)
		ncm_device_post_error(self, g_error_new(NCM_ERROR, NCM_ERROR_FAILED,
					"receiving stopped: resubmitting a bulk-IN transfer "
					"failed (%s); reopen the device", libusb_strerror(r)));
}

/*
 * The transfer goes back to the device with the slot's spare buffer before
 * the filled one is parsed and handed to the sink, so the device always
 * finds reads queued, however long the sink takes. Linux's f_ncm (6.1, in
 * the VM) needs that: when its 300 us flush timer fires while all its IN
 * requests are busy, the open NTB stays unsent and no timer is re-armed;
 * a TCP sender's last segments and all their retransmissions then wait in
 * it until more traffic fills it (tests/vm/guest-lwip.sh caught stalls of
 * 30 s to forever with the sink behind lwIP).
 */
static void
rx_completed(NcmDevice *self, NcmSlot *slot, struct libusb_transfer *xfer)
{
	guint8 *filled = xfer->buffer;
	gsize len = (gsize)xfer->actual_length;
	int r;

	xfer->buffer = slot->spare;
	slot->spare = filled;
	/* Counted anew: this callback keeps its own count until the sink is
	 * done with the buffer, so close() cannot free it under the parser. */
	r = ncm_device_submit(self, xfer, FALSE);
	if (self->options.fault_one_in)
		parse_with_faults(self, filled, len);
	else
		parse_one(self, filled, len);
	if (self->sink.receive_done)
		self->sink.receive_done(self->sink_data);
	resubmit_failed(self, r);
	ncm_device_landed(self);
}

static void LIBUSB_CALL
rx_complete(struct libusb_transfer *xfer)
{
	NcmSlot *slot = xfer->user_data;
	NcmDevice *self = slot->device;
	int r;

	switch (xfer->status) {
	case LIBUSB_TRANSFER_COMPLETED:
		rx_completed(self, slot, xfer);
		return;
	case LIBUSB_TRANSFER_CANCELLED:
		ncm_device_landed(self);
		return;
	case LIBUSB_TRANSFER_NO_DEVICE:
		ncm_device_mark_gone(self);
		ncm_device_landed(self);
		return;
	case LIBUSB_TRANSFER_STALL:
		handle_stall(self, slot);
		return;
	case LIBUSB_TRANSFER_OVERFLOW:
		NCM_STAT_ADD(self, rx_overflows, 1);
		break;
	default:
		NCM_STAT_ADD(self, rx_errors, 1);
		break;
	}
	r = ncm_device_submit(self, xfer, TRUE);
	resubmit_failed(self, r);
}

static gchar *
nudge_key(NcmDevice *self)
{
	return g_strdup_printf("nudge:%s:%s:%u", self->info->port_path ? self->info->port_path : "",
			       self->info->serial ? self->info->serial : "", self->info->comm_iface);
}

/* At close, once the event thread no longer ticks the device. */
void
ncm_device_rx_remember(NcmDevice *self)
{
	g_autofree gchar *key = NULL;

	if (!self->rx || !self->context)
		return;
	key = nudge_key(self);
	ncm_context_remember(self->context, key, &self->nudge, sizeof(self->nudge));
}

/* Event thread: sends the tail nudge (ncm-nudge.h) when a stream has gone quiet. */
gint64
ncm_device_rx_tick(NcmDevice *self, gint64 now)
{
	guint8 frame[NCM_NUDGE_FRAME_LEN];
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
	if (ncm_nudge_frame(&self->nudge, frame)) {
		/* One NTB, which the device answers with as many replies. */
		for (guint i = 0; i < NCM_NUDGE_FRAMES; i++)
			if (ncm_device_send(self, frame, sizeof(frame)) != NCM_SEND_OK)
				break;
		ncm_device_flush(self);
		NCM_STAT_ADD(self, rx_nudges, 1);
		/* Its own requests are not the host's asking. */
		ncm_mutex_lock(&self->tx_lock);
		self->nudge_tx.fresh = FALSE;
		self->nudge_tx.asked_at = 0;
		ncm_mutex_unlock(&self->tx_lock);
	}
	ncm_nudge_sent(&self->nudge, now);
	return G_MAXINT64;
}

gboolean
ncm_device_rx_setup(NcmDevice *self, GError **error)
{
	NcmNtbInfo *n = &self->ntb;

	ncm_nudge_init(&self->nudge);
	{
		g_autofree gchar *key = nudge_key(self);
		NcmNudge last;

		/* Not yet registered with the event thread: no tick reads it. */
		if (ncm_context_recall(self->context, key, &last, sizeof(last)))
			ncm_nudge_carry(&self->nudge, &last);
	}
	if (!self->options.nudge_ms)
		self->options.nudge_ms = NCM_DEFAULT_NUDGE_MS;

	n->rx_transfers = self->options.rx_transfers ? self->options.rx_transfers
						      : default_rx_transfers(self->info->speed_mbps);
	n->rx_transfers = MIN(n->rx_transfers, NCM_MAX_RX_TRANSFERS);
	self->parse_config = (NcmNtbParseConfig){
		.formats = n->ntb32 ? NCM_NTB_FORMAT_BIT_32 : NCM_NTB_FORMAT_BIT_16,
		.crc = FALSE,
		.max_block = n->rx_ntb_size,
		.max_datagram = n->max_frame,
	};
	self->n_rx = n->rx_transfers;
	self->rx = g_new0(NcmSlot, self->n_rx);
	for (guint i = 0; i < self->n_rx; i++) {
		NcmSlot *slot = &self->rx[i];

		slot->device = self;
		slot->index = i;
		/* Preallocated once: no allocation per transfer on the data path. */
		slot->spare = ncm_device_buf_alloc(self, n->rx_ntb_size);
		slot->xfer = libusb_alloc_transfer(0);
		libusb_fill_bulk_transfer(slot->xfer, self->handle, self->info->bulk_in_ep,
					  ncm_device_buf_alloc(self, n->rx_ntb_size),
					  (int)n->rx_ntb_size, rx_complete, slot, 0);
	}
	return TRUE;
}

gboolean
ncm_device_rx_start(NcmDevice *self, GError **error)
{
	/* The event thread owns the nudge by now: the start reaches it as an ask. */
	ncm_mutex_lock(&self->tx_lock);
	self->nudge_tx.asked_at = g_get_monotonic_time();
	ncm_mutex_unlock(&self->tx_lock);
	for (guint i = 0; i < self->n_rx; i++) {
		int r = ncm_device_submit(self, self->rx[i].xfer, FALSE);

		if (r < 0) {
			ncm_set_usb_error(error, r, self->info, "starting to receive");
			return FALSE;
		}
	}
	return TRUE;
}

void
ncm_device_rx_cancel(NcmDevice *self)
{
	for (guint i = 0; self->rx && i < self->n_rx; i++)
		libusb_cancel_transfer(self->rx[i].xfer);
}

void
ncm_device_rx_free(NcmDevice *self)
{
	for (guint i = 0; self->rx && i < self->n_rx; i++) {
		/* The two buffers trade places on every completion: the
		 * transfer holds one, spare the other. */
		ncm_device_buf_free(self, self->rx[i].xfer->buffer, self->ntb.rx_ntb_size);
		ncm_device_buf_free(self, self->rx[i].spare, self->ntb.rx_ntb_size);
		libusb_free_transfer(self->rx[i].xfer);
	}
	g_clear_pointer(&self->rx, g_free);
	if (self->intr) {
		libusb_free_transfer(self->intr);
		self->intr = NULL;
	}
}
