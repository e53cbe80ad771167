/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-tx.c: packing datagrams into NTBs on the producer's thread, pacing, flushing. */
#include <string.h>

#include "ncm-usb-device.h"


#define NCM_DEFAULT_TX_TRANSFERS 8
#define NCM_DEFAULT_FLUSH_US 2000

static void LIBUSB_CALL tx_complete(struct libusb_transfer *xfer);

gboolean
ncm_device_tx_setup(NcmDevice *self, GError **error)
{
	NcmNtbInfo *n = &self->ntb;
	NcmNtbPackConfig pc = {
		.format = n->ntb32 ? NCM_NTB_FORMAT_32 : NCM_NTB_FORMAT_16,
		.max_size = n->tx_ntb_size,
		.divisor = n->out_divisor,
		.remainder = n->out_remainder,
		.alignment = n->out_alignment,
		.max_datagrams = n->out_max_datagrams,
		.max_packet = self->info->bulk_out_max_packet,
		/* usbfs sends a ZLP on request; elsewhere the spec's pad byte is safer. */
#ifdef __linux__
		.short_mode = NCM_NTB_SHORT_ZLP,
#else
		.short_mode = NCM_NTB_SHORT_PAD,
#endif
		.ndp_first = self->options.ndp_first,
	};

	n->tx_transfers = self->options.tx_transfers ? self->options.tx_transfers
						      : NCM_DEFAULT_TX_TRANSFERS;
	n->tx_transfers = MIN(n->tx_transfers, NCM_MAX_TX_TRANSFERS);
	if (!self->options.flush_timeout_us)
		self->options.flush_timeout_us = NCM_DEFAULT_FLUSH_US;
	self->n_tx = n->tx_transfers;
	self->tx = g_new0(NcmSlot, self->n_tx);
	self->tx_free = g_new(guint, self->n_tx);
	self->paced = g_new(guint, self->n_tx);
	for (guint i = 0; i < self->n_tx; i++) {
		NcmSlot *slot = &self->tx[i];

		slot->device = self;
		slot->index = i;
		slot->buf = ncm_device_buf_alloc(self, n->tx_ntb_size);
		slot->xfer = libusb_alloc_transfer(0);
		libusb_fill_bulk_transfer(slot->xfer, self->handle, self->info->bulk_out_ep, slot->buf,
					  0, tx_complete, slot, 0);
		self->tx_free[i] = i;
	}
	self->n_free = self->n_tx;
	ncm_ntb_packer_init(&self->packer, &pc, self->tx[0].buf, n->tx_ntb_size, 0);
	/* RX is set up first: this counts both directions. */
	n->mapped_buffers = ncm_device_buf_mapped(self);
	g_debug("%u of %u transfer buffers are usbfs-mapped", n->mapped_buffers,
		2 * self->n_rx + self->n_tx);
	self->pace = self->options.pace_bytes_per_sec;
	self->tokens_at = g_get_monotonic_time();
	return TRUE;
}

/* ---- Pacing (token bucket, in bytes) ---------------------------------- */

static void
refill_locked(NcmDevice *self, gint64 now)
{
	/* Burst: two NTBs or 5 ms of the rate, so the bucket never starves the link. */
	gint64 burst = MAX(2 * (gint64)self->ntb.tx_ntb_size, (gint64)(self->pace / 200));

	if (!self->pace)
		return;
	self->tokens += (now - self->tokens_at) * (gint64)self->pace / G_USEC_PER_SEC;
	self->tokens = MIN(self->tokens, burst);
	self->tokens_at = now;
}

static gint64
tokens_deadline_locked(NcmDevice *self, gint64 now)
{
	if (self->tokens > 0)
		return now;
	return now + (-self->tokens + 1) * G_USEC_PER_SEC / (gint64)self->pace + 1;
}

/* ---- Submission ---------------------------------------------------------- */

static void
free_slot_locked(NcmDevice *self, NcmSlot *slot)
{
	self->tx_free[self->n_free++] = slot->index;
}

static void
submit_locked(NcmDevice *self, NcmSlot *slot)
{
	int r;

	self->tokens -= slot->xfer->length;
	r = ncm_device_submit(self, slot->xfer, FALSE);
	if (r == 0)
		return;
	free_slot_locked(self, slot);
	if (r == LIBUSB_ERROR_NO_DEVICE)
		ncm_device_mark_gone(self);
	else if (r != LIBUSB_ERROR_INTERRUPTED)
		NCM_STAT_ADD(self, tx_errors, 1);
}

/* Sends held-back NTBs, oldest first, while the pacer allows. */
static void
drain_paced_locked(NcmDevice *self, gint64 now)
{
	refill_locked(self, now);
	while (self->paced_count && (!self->pace || self->tokens > 0)) {
		NcmSlot *slot = &self->tx[self->paced[self->paced_head]];

		self->paced_head = (self->paced_head + 1) % self->n_tx;
		self->paced_count--;
		submit_locked(self, slot);
	}
	if (self->paced_count)
		ncm_context_wake(self->context, tokens_deadline_locked(self, now));
}

static void
close_ntb_locked(NcmDevice *self, NcmFlushReason reason)
{
	NcmSlot *slot = self->tx_open;
	bool zlp = false;
	size_t len;

	self->tx_open = NULL;
	slot->datagrams = ncm_ntb_packer_count(&self->packer);
	len = ncm_ntb_packer_finish(&self->packer, &zlp);
	slot->xfer->length = (int)len;
	if (zlp)
		slot->xfer->flags |= LIBUSB_TRANSFER_ADD_ZERO_PACKET;
	else
		slot->xfer->flags &= ~LIBUSB_TRANSFER_ADD_ZERO_PACKET;
	switch (reason) {
	case NCM_FLUSH_FULL: NCM_STAT_ADD(self, tx_flush_full, 1); break;
	case NCM_FLUSH_LIMIT: NCM_STAT_ADD(self, tx_flush_limit, 1); break;
	case NCM_FLUSH_EXPLICIT: NCM_STAT_ADD(self, tx_flush_explicit, 1); break;
	case NCM_FLUSH_TIMER: NCM_STAT_ADD(self, tx_flush_timer, 1); break;
	}
	if (self->pace) {
		gint64 now = g_get_monotonic_time();

		refill_locked(self, now);
		if (self->paced_count || self->tokens <= 0) {
			guint tail = (self->paced_head + self->paced_count) % self->n_tx;

			self->paced[tail] = slot->index;
			self->paced_count++;
			NCM_STAT_ADD(self, tx_paced_waits, 1);
			drain_paced_locked(self, now);
			return;
		}
	}
	submit_locked(self, slot);
}

static gboolean
open_ntb_locked(NcmDevice *self)
{
	NcmSlot *slot;

	if (self->n_free == 0)
		return FALSE;
	slot = &self->tx[self->tx_free[--self->n_free]];
	slot->bytes = 0;
	ncm_ntb_packer_reset(&self->packer, slot->buf, self->tx_sequence++);
	self->tx_open = slot;
	self->tx_open_since = g_get_monotonic_time();
	ncm_context_wake(self->context, self->tx_open_since + self->options.flush_timeout_us);
	return TRUE;
}

static guint8 *
reserve_locked(NcmDevice *self, gsize len, NcmSendResult *ret)
{
	NcmNtbPackStatus st;
	guint8 *p;

	if (!self->tx_open && !open_ntb_locked(self))
		goto would_block;
	p = ncm_ntb_packer_reserve(&self->packer, len, &st);
	if (!p && st == NCM_NTB_PACK_FULL) {
		close_ntb_locked(self, NCM_FLUSH_FULL);
		if (!open_ntb_locked(self))
			goto would_block;
		p = ncm_ntb_packer_reserve(&self->packer, len, &st);
	}
	if (!p) {
		NCM_STAT_ADD(self, tx_invalid, 1);
		*ret = NCM_SEND_INVALID;
	}
	return p;
would_block:
	self->want_writable = TRUE;
	NCM_STAT_ADD(self, tx_would_block, 1);
	*ret = NCM_SEND_WOULD_BLOCK;
	return NULL;
}

NcmSendResult
ncm_device_sendv(NcmDevice *self, const GOutputVector *vectors, guint n_vectors)
{
	NcmSendResult ret = NCM_SEND_OK;
	gsize len = 0;
	guint8 *p;

	for (guint i = 0; i < n_vectors; i++)
		len += vectors[i].size;
	if (len < NCM_ETH_MIN_FRAME || len > self->ntb.max_frame) {
		NCM_STAT_ADD(self, tx_invalid, 1);
		return NCM_SEND_INVALID;
	}
	ncm_mutex_lock(&self->tx_lock);
	if (!g_atomic_int_get(&self->running) || g_atomic_int_get(&self->gone)) {
		ncm_mutex_unlock(&self->tx_lock);
		return NCM_SEND_CLOSED;
	}
	p = reserve_locked(self, len, &ret);
	if (p) {
		guint8 *frame = p;

		for (guint i = 0; i < n_vectors; i++) {
			memcpy(p, vectors[i].buffer, vectors[i].size);
			p += vectors[i].size;
		}
		if (ncm_nudge_learn_tx(&self->nudge_tx, frame, len))
			self->nudge_tx.asked_at = g_get_monotonic_time();
		self->tx_open->bytes += (guint32)len;
		if (ncm_ntb_packer_count(&self->packer) >= self->packer.limit)
			close_ntb_locked(self, NCM_FLUSH_LIMIT);
	}
	ncm_mutex_unlock(&self->tx_lock);
	return ret;
}

NcmSendResult
ncm_device_send(NcmDevice *self, const guint8 *frame, gsize len)
{
	GOutputVector v = { frame, len };

	return ncm_device_sendv(self, &v, 1);
}

void
ncm_device_flush(NcmDevice *self)
{
	ncm_mutex_lock(&self->tx_lock);
	if (self->tx_open && ncm_ntb_packer_count(&self->packer) > 0 &&
	    g_atomic_int_get(&self->running))
		close_ntb_locked(self, NCM_FLUSH_EXPLICIT);
	ncm_mutex_unlock(&self->tx_lock);
}

void
ncm_device_set_pacing(NcmDevice *self, guint64 bytes_per_sec)
{
	ncm_mutex_lock(&self->tx_lock);
	self->pace = bytes_per_sec;
	self->tokens = 0;
	self->tokens_at = g_get_monotonic_time();
	if (!bytes_per_sec)
		drain_paced_locked(self, self->tokens_at);
	ncm_mutex_unlock(&self->tx_lock);
}

gint64
ncm_device_tick(NcmDevice *self, gint64 now)
{
	gint64 next = G_MAXINT64;

	ncm_mutex_lock(&self->tx_lock);
	ncm_nudge_merge_tx(&self->nudge, &self->nudge_tx);
	if (self->tx_open) {
		gint64 due = self->tx_open_since + self->options.flush_timeout_us;

		if (now >= due && ncm_ntb_packer_count(&self->packer) > 0)
			close_ntb_locked(self, NCM_FLUSH_TIMER);
		else
			next = due;
	}
	if (self->paced_count) {
		drain_paced_locked(self, now);
		if (self->paced_count)
			next = MIN(next, tokens_deadline_locked(self, now));
	}
	ncm_mutex_unlock(&self->tx_lock);
	return MIN(next, ncm_device_rx_tick(self, now));
}

/* ---- Completion (libusb event thread) ------------------------------------ */

static void LIBUSB_CALL
tx_complete(struct libusb_transfer *xfer)
{
	NcmSlot *slot = xfer->user_data;
	NcmDevice *self = slot->device;
	gboolean wake;

	switch (xfer->status) {
	case LIBUSB_TRANSFER_COMPLETED:
		/* Counted only now: bytes the device accepted, not bytes we queued. */
		NCM_STAT_ADD(self, tx_ntbs, 1);
		NCM_STAT_ADD(self, tx_datagrams, slot->datagrams);
		NCM_STAT_ADD(self, tx_bytes, slot->bytes);
		break;
	case LIBUSB_TRANSFER_CANCELLED:
		break;
	case LIBUSB_TRANSFER_NO_DEVICE:
		ncm_device_mark_gone(self);
		break;
	default:
		NCM_STAT_ADD(self, tx_errors, 1);
		break;
	}
	ncm_mutex_lock(&self->tx_lock);
	free_slot_locked(self, slot);
	if (self->paced_count)
		drain_paced_locked(self, g_get_monotonic_time());
	wake = self->want_writable;
	self->want_writable = FALSE;
	ncm_mutex_unlock(&self->tx_lock);
	ncm_device_landed(self);
	if (wake && self->sink.writable)
		self->sink.writable(self->sink_data);
}

void
ncm_device_tx_cancel(NcmDevice *self)
{
	ncm_mutex_lock(&self->tx_lock);
	/* Held-back NTBs were never submitted: they just go back to the pool. */
	while (self->paced_count) {
		free_slot_locked(self, &self->tx[self->paced[self->paced_head]]);
		self->paced_head = (self->paced_head + 1) % self->n_tx;
		self->paced_count--;
	}
	if (self->tx_open) {
		free_slot_locked(self, self->tx_open);
		self->tx_open = NULL;
	}
	ncm_mutex_unlock(&self->tx_lock);
	for (guint i = 0; self->tx && i < self->n_tx; i++)
		libusb_cancel_transfer(self->tx[i].xfer);
}

void
ncm_device_tx_free(NcmDevice *self)
{
	ncm_mutex_lock(&self->tx_lock);
	for (guint i = 0; self->tx && i < self->n_tx; i++) {
		libusb_free_transfer(self->tx[i].xfer);
		ncm_device_buf_free(self, self->tx[i].buf, self->ntb.tx_ntb_size);
	}
	g_clear_pointer(&self->tx, g_free);
	g_clear_pointer(&self->tx_free, g_free);
	g_clear_pointer(&self->paced, g_free);
	ncm_mutex_unlock(&self->tx_lock);
}
