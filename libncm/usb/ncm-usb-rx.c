/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-rx.c: bulk-IN transfers, parsed and resubmitted on the libusb event thread. */
#include <string.h>

#include "ncm-ntb-rx.h"
#include "ncm-usb-device.h"


/* -D overrides the high-speed depth for a before/after comparison. */
#ifndef NCM_RX_TRANSFERS_HS
#define NCM_RX_TRANSFERS_HS 16
#endif

/* In-flight depth by speed: usbfs keeps up only with several reads queued,
 * and a gadget must never find all of them busy while the event thread is
 * in the sink (see rx_completed()): more than f_ncm's 10 IN requests at
 * high speed. */
static guint
default_rx_transfers(guint speed_mbps)
{
	if (speed_mbps >= 5000)
		return 32;
	if (speed_mbps >= 480)
		return NCM_RX_TRANSFERS_HS;
	return 4;
}

/*
 * usbfs caps the memory of all its transfers together (usbfs_memory_mb, 16
 * MiB by default, shared by every device), and each slot holds two buffers.
 * A device that sends NTBs of 1 MiB (it ignored SET_NTB_INPUT_SIZE) would
 * need 32 MiB at 16 in flight, and the submits past the cap fail with
 * "Insufficient memory": by default the depth keeps within a quarter of it.
 */
#define NCM_RX_BUFFER_BUDGET (4u << 20)

static guint
rx_depth(NcmDevice *self)
{
	const NcmNtbInfo *n = &self->ntb;
	guint want, fit;

	if (self->options.rx_transfers)
		return MIN(self->options.rx_transfers, NCM_MAX_RX_TRANSFERS);
	want = MIN(default_rx_transfers(self->info->speed_mbps), NCM_MAX_RX_TRANSFERS);
	fit = MAX(2u, NCM_RX_BUFFER_BUDGET / (2u * n->rx_ntb_size));
	if (want <= fit)
		return want;
	g_message("%04x:%04x: %u receive transfers of %u bytes in flight, not %u: usbfs's "
		  "memory for transfers (usbfs_memory_mb) is shared by every device",
		  self->info->vid, self->info->pid, fit, n->rx_ntb_size, want);
	return fit;
}

/*
 * Hands the datagrams collected so far to the sink, less the pure ACKs a
 * later one of their flow in the same NTB supersedes (ncm-ack.h).
 */
static void
deliver_collected(NcmDevice *self)
{
	guint n = self->rx_n;
	bool *skip = self->rx_skip;

	self->rx_n = 0;
	if (self->options.no_ack_merge || n < 2)
		memset(skip, 0, n * sizeof(*skip));
	else
		NCM_STAT_ADD(self, rx_acks_thinned, ncm_ack_thin(self->rx_frames, self->rx_lens, n, skip));
	for (guint i = 0; i < n; i++) {
		ncm_device_nudge_learn(self, self->rx_frames[i], self->rx_lens[i]);
		if (skip[i])
			continue;
		self->rx_batch_bytes += self->rx_lens[i];
		NCM_TOUCH(self, "sink.receive");
		if (self->sink.receive)
			self->sink.receive(self->sink_data, self->rx_frames[i], self->rx_lens[i]);
	}
}

static bool
collect(void *user_data, const uint8_t *datagram, size_t len)
{
	NcmDevice *self = user_data;

	self->rx_frames[self->rx_n] = datagram;
	self->rx_lens[self->rx_n++] = len;
	if (self->rx_n == NCM_RX_COLLECT)
		deliver_collected(self);
	return true;
}

static void
parse_one(NcmDevice *self, const guint8 *buf, gsize len)
{
	NcmNtbParseResult res;

	/* A zero-length packet is USB framing, not a short NTB: some devices
	 * send one after every NTB, even after one that ended short. */
	if (len == 0)
		return;

	self->rx_batch_bytes = 0;
	ncm_device_nudge_ntb_begin(self, g_get_monotonic_time());
	ncm_ntb_parse(&self->parse_config, buf, len, collect, self, &res);
	deliver_collected(self);
	ncm_device_nudge_ntb_end(self);
	NCM_STAT_ADD(self, rx_ntbs, res.ntbs);
	if (res.ntbs > 1)
		NCM_STAT_ADD(self, rx_joined_ntbs, res.ntbs - 1);
	NCM_STAT_ADD(self, rx_datagrams, res.datagrams);
	NCM_STAT_ADD(self, rx_bytes, self->rx_batch_bytes);
	if (res.rejects) {
		NCM_STAT_ADD(self, rx_bad_ntbs, res.bad_ntbs);
		for (guint i = 1; i < NCM_NTB_N_ERRORS; i++)
			if (res.reasons[i])
				NCM_STAT_ADD(self, rx_rejects[i], res.reasons[i]);
		g_debug("bad NTB (seq %u): %u rejects", res.sequence, res.rejects);
	}
}

static void
resubmit_failed(NcmDevice *self, int r)
{
	if (r == LIBUSB_ERROR_NO_DEVICE)
		ncm_device_mark_gone(self);
	else if (r < 0 && r != LIBUSB_ERROR_INTERRUPTED)
		ncm_device_post_error(self, g_error_new(NCM_ERROR, NCM_ERROR_FAILED,
					"receiving stopped: resubmitting a bulk-IN transfer "
					"failed (%s); reopen the device%s", libusb_strerror(r),
					r == LIBUSB_ERROR_NO_MEM
						? " (usbfs's transfer memory is used up: raise "
						  "/sys/module/usbcore/parameters/usbfs_memory_mb)"
						: ""));
}

/*
 * A device that fails every bulk-IN transfer is retried in rounds of
 * growing delay (ncm-ntb-retry.h), not at full speed; after
 * NCM_RETRY_BUDGET failures in a row (within NCM_RETRY_WORST_US and the
 * device's own time) each failing transfer is dropped, and the owner
 * hears it once.
 */
static NcmRetryVerdict
rx_failed(NcmDevice *self, const char *what)
{
	gint64 now = g_get_monotonic_time();
	NcmRetryVerdict v = ncm_retry_failed(&self->rx_retry, now);

	if (v == NCM_RETRY_GIVE_UP)
		ncm_device_post_error(self, g_error_new(NCM_ERROR, NCM_ERROR_PROTOCOL,
					"receiving stopped: %u bulk-IN transfers in a row failed "
					"over %.2f s (the last: %s); the device sends nothing "
					"usable: replug or reopen it", NCM_RETRY_BUDGET,
					(double)(now - self->rx_retry.first_at) / G_USEC_PER_SEC,
					what));
	return v;
}

static void
rx_parse(NcmDevice *self, guint8 *buf, gsize len)
{
#ifdef NCM_TEST_HOOKS
	ncm_device_fault_rx(self, buf, len, parse_one);
#else
	parse_one(self, buf, len);
#endif
}

/*
 * The transfer goes back to the device with the slot's spare buffer before
 * the filled one is parsed and handed to the sink, so the device always
 * finds reads queued, however long the sink takes. Linux's f_ncm (6.1, in
 * the VM) needs that: when its 300 us flush timer fires while all its IN
 * requests are busy, the open NTB stays unsent and no timer is re-armed;
 * a TCP sender's last segments and all their retransmissions then wait in
 * it until more traffic fills it (tests/vm/guest-lwip.sh caught stalls of
 * 30 s to forever with the sink behind lwIP). A short NTB is the exception
 * (ncm-ntb-rx.h).
 */
static void
rx_completed(NcmDevice *self, NcmSlot *slot, struct libusb_transfer *xfer)
{
	guint8 *filled = xfer->buffer;
	gsize len = (gsize)xfer->actual_length;
	int r;

	ncm_retry_succeeded(&self->rx_retry);
	if (ncm_ntb_rx_parse_first(self->n_rx, len, self->info->bulk_in_max_packet)) {
		rx_parse(self, filled, len);
		r = ncm_device_submit(self, xfer, FALSE);
	} else {
		xfer->buffer = slot->spare;
		slot->spare = filled;
		/* Counted anew: this callback keeps its own count until the
		 * sink is done with the buffer, so close() cannot free it
		 * under the parser. */
		r = ncm_device_submit(self, xfer, FALSE);
		rx_parse(self, filled, len);
	}
	/* The sink hears receive_done once libusb has handed over every
	 * transfer this wake-up reaped (ncm-usb-timers.c): one TAP write of
	 * coalesced segments, one lwIP batch and one reader wake-up for all
	 * of them, not one per NTB. */
	self->rx_done_pending = TRUE;
	resubmit_failed(self, r);
	ncm_device_landed(self);
}

static void LIBUSB_CALL
rx_complete(struct libusb_transfer *xfer)
{
	NCM_COMPLETION_SCOPE();
	NcmSlot *slot = xfer->user_data;
	NcmDevice *self = slot->device;
	gboolean stall = FALSE;
	const char *why;
	NCM_HANDLING_SCOPE(self->context);

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
		stall = TRUE;
		why = "a STALL";
		break;
	case LIBUSB_TRANSFER_OVERFLOW:
		NCM_STAT_ADD(self, rx_overflows, 1);
		why = "an NTB larger than the receive buffer";
		break;
	default:
		NCM_STAT_ADD(self, rx_errors, 1);
		why = "a transfer error";
		break;
	}
	if (rx_failed(self, why) != NCM_RETRY_AGAIN) {
		if (stall)
			NCM_STAT_ADD(self, rx_stalls, 1);
		ncm_device_landed(self);
		return;
	}
	if (stall)
		ncm_device_halt_stalled(self, slot);
	else
		ncm_device_retry_park(self, xfer);
}

gboolean
ncm_device_rx_setup(NcmDevice *self, GError **error)
{
	NcmNtbInfo *n = &self->ntb;

	n->rx_transfers = rx_depth(self);
	self->parse_config = (NcmNtbParseConfig){
		.formats = n->ntb32 ? NCM_NTB_FORMAT_BIT_32 : NCM_NTB_FORMAT_BIT_16,
		.crc = FALSE,
		.max_block = n->rx_ntb_size,
		.max_datagram = self->rx_max_frame,
		.max_packet = self->info->bulk_in_max_packet,
	};
	self->n_rx = n->rx_transfers;
	self->rx = g_new0(NcmSlot, self->n_rx);
	ncm_retry_init(&self->rx_retry);
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
