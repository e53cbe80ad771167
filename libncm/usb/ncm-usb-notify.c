/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-notify.c: the interrupt endpoint: link state and speed notifications. */
#include "ncm-usb-device.h"


static void
handle_notification(NcmDevice *self, const guint8 *buf, gsize len)
{
	NcmNotifyEvent ev = ncm_notify_parser_feed(&self->notify, buf, len);

	switch (ev.type) {
	case NCM_NOTIFY_EVENT_LINK:
		NCM_STAT_ADD(self, intr_events, 1);
		ncm_device_post_link(self, ev.link_up);
		break;
	case NCM_NOTIFY_EVENT_SPEED:
		NCM_STAT_ADD(self, intr_events, 1);
		ncm_device_post_speed(self, ev.down_bps, ev.up_bps);
		break;
	case NCM_NOTIFY_EVENT_MALFORMED:
		NCM_STAT_ADD(self, intr_malformed, 1);
		break;
	case NCM_NOTIFY_EVENT_RESPONSE:
	case NCM_NOTIFY_EVENT_UNKNOWN:
		NCM_STAT_ADD(self, intr_events, 1);
		break;
	case NCM_NOTIFY_EVENT_NONE:
		break;
	}
}

/*
 * A flaky interrupt pipe must not take the data path down, nor spin: it
 * is retried in rounds of growing delay (ncm-ntb-retry.h), and past
 * NCM_RETRY_BUDGET failures in a row left alone, the link as it is.
 */
static void
intr_failed(NcmDevice *self, struct libusb_transfer *xfer)
{
	gint64 now = g_get_monotonic_time();

	NCM_STAT_ADD(self, intr_malformed, 1);
	switch (ncm_retry_failed(&self->intr_retry, now)) {
	case NCM_RETRY_GIVE_UP:
		g_warning("%04x:%04x: %u interrupt transfers in a row failed over %.2f s: no more "
			  "link notifications from it", self->info->vid, self->info->pid,
			  NCM_RETRY_BUDGET,
			  (double)(now - self->intr_retry.first_at) / G_USEC_PER_SEC);
		ncm_device_landed(self);
		break;
	case NCM_RETRY_DROP:
		ncm_device_landed(self);
		break;
	case NCM_RETRY_AGAIN:
		/* A halted endpoint fails every transfer until the halt is cleared. */
		if (xfer->status == LIBUSB_TRANSFER_STALL)
			ncm_device_halt_intr(self);
		else
			ncm_device_retry_park(self, xfer);
		break;
	}
}

static void LIBUSB_CALL
intr_complete(struct libusb_transfer *xfer)
{
	NCM_COMPLETION_SCOPE();
	NcmDevice *self = xfer->user_data;
	int r;
	NCM_HANDLING_SCOPE(self->context);

	switch (xfer->status) {
	case LIBUSB_TRANSFER_COMPLETED:
		ncm_retry_succeeded(&self->intr_retry);
		handle_notification(self, xfer->buffer, (gsize)xfer->actual_length);
		break;
	case LIBUSB_TRANSFER_CANCELLED:
		ncm_device_landed(self);
		return;
	case LIBUSB_TRANSFER_NO_DEVICE:
		ncm_device_mark_gone(self);
		ncm_device_landed(self);
		return;
	default:
		intr_failed(self, xfer);
		return;
	}
	r = ncm_device_submit(self, xfer, TRUE);
	if (r == LIBUSB_ERROR_NO_DEVICE)
		ncm_device_mark_gone(self);
	if (r != 0)
		ncm_device_landed(self);
}

gboolean
ncm_device_intr_start(NcmDevice *self, GError **error)
{
	const NcmFunctionInfo *info = self->info;
	int r;

	if (!info->intr_ep) {
		/* Apple's functions have no interrupt endpoint: the link is up once open. */
		ncm_device_post_link(self, TRUE);
		return TRUE;
	}
	ncm_retry_init(&self->intr_retry);
	self->intr = libusb_alloc_transfer(0);
	/*
	 * One packet a transfer: a transfer ends only on a short packet or when
	 * full, so one longer than 8-byte packets would hold a NETWORK_CONNECTION
	 * (one full 8-byte packet) until the next notification. A speed change
	 * then comes in two transfers, which the parser joins. Under 8, two
	 * packets make the header.
	 */
	libusb_fill_interrupt_transfer(self->intr, self->handle, info->intr_ep, self->intr_buf,
				       (int)CLAMP(info->intr_max_packet, 8u, sizeof(self->intr_buf)),
				       intr_complete, self, 0);
	r = ncm_device_submit(self, self->intr, FALSE);
	if (r < 0) {
		ncm_set_usb_error(error, r, info, "listening for link notifications");
		return FALSE;
	}
	return TRUE;
}
