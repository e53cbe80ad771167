/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-retry.c: failed IN transfers (bulk and interrupt) wait out their round (ncm-ntb-retry.h), then the event thread resubmits them. */
#include "ncm-usb-device.h"

/*
 * A parked transfer is out of the flight count, like a stalled one: close()
 * does not wait for a round to come due, and once the state has left
 * RUNNING the resubmission below is refused, so nothing outlives close.
 */

static NcmRetry *
retry_of(NcmDevice *self, struct libusb_transfer *xfer)
{
	return xfer == self->intr ? &self->intr_retry : &self->rx_retry;
}

/* flight_lock held. */
static void
park_locked(NcmDevice *self, struct libusb_transfer *xfer)
{
	g_assert(self->n_parked < G_N_ELEMENTS(self->parked));
	self->parked[self->n_parked] = xfer;
	__atomic_store_n(&self->n_parked, self->n_parked + 1, __ATOMIC_RELAXED);
}

void
ncm_device_retry_park(NcmDevice *self, struct libusb_transfer *xfer)
{
	NCM_TOUCH(self, "ncm_device_retry_park");
	/* Before the count drops: from then on close() may free the device.
	 * It matters only when a thread doing synchronous libusb I/O ran this
	 * callback while the event thread sleeps towards its next deadline. */
	ncm_context_wake(self->context, ncm_retry_deadline(retry_of(self, xfer)));
	ncm_mutex_lock(&self->flight_lock);
	park_locked(self, xfer);
	ncm_device_landed_locked(self);
	ncm_mutex_unlock(&self->flight_lock);
}

void
ncm_device_retry_return(NcmDevice *self, struct libusb_transfer *xfer)
{
	gboolean parked = FALSE;

	ncm_mutex_lock(&self->flight_lock);
	if (self->state == NCM_STATE_RUNNING) {
		park_locked(self, xfer);
		parked = TRUE;
	}
	ncm_mutex_unlock(&self->flight_lock);
	if (parked)
		ncm_context_wake(self->context, g_get_monotonic_time());
}

static void
resubmit(NcmDevice *self, struct libusb_transfer *xfer)
{
	int r = ncm_device_submit(self, xfer, FALSE);

	if (r == 0 || r == LIBUSB_ERROR_INTERRUPTED)
		return;
	if (r == LIBUSB_ERROR_NO_DEVICE)
		ncm_device_mark_gone(self);
	else if (xfer == self->intr)
		g_warning("%04x:%04x: resubmitting the interrupt transfer failed (%s): no more "
			  "link notifications from it", self->info->vid, self->info->pid,
			  libusb_strerror(r));
	else
		ncm_device_post_error(self, g_error_new(NCM_ERROR, NCM_ERROR_FAILED,
					"receiving stopped: resubmitting a bulk-IN transfer "
					"failed (%s); reopen the device", libusb_strerror(r)));
}

/* flight_lock held: moves the parked transfers whose round is due to @go. */
static guint
take_due_locked(NcmDevice *self, gint64 now, struct libusb_transfer **go, gint64 *next)
{
	gboolean has[2] = { FALSE, FALSE }, due[2];
	NcmRetry *pipes[2] = { &self->rx_retry, &self->intr_retry };
	guint n_go = 0, kept = 0;

	for (guint i = 0; i < self->n_parked; i++)
		has[retry_of(self, self->parked[i]) == pipes[1]] = TRUE;
	for (guint p = 0; p < 2; p++) {
		/* A round whose transfers are still being cleared waits for them. */
		due[p] = has[p] && ncm_retry_take(pipes[p], now);
		if (has[p] && !due[p])
			*next = MIN(*next, ncm_retry_deadline(pipes[p]));
	}
	for (guint i = 0; i < self->n_parked; i++) {
		struct libusb_transfer *xfer = self->parked[i];

		if (due[retry_of(self, xfer) == pipes[1]])
			go[n_go++] = xfer;
		else
			self->parked[kept++] = xfer;
	}
	__atomic_store_n(&self->n_parked, kept, __ATOMIC_RELAXED);
	return n_go;
}

gint64
ncm_device_retry_tick(NcmDevice *self, gint64 now)
{
	struct libusb_transfer *go[G_N_ELEMENTS(self->parked)];
	gint64 next = G_MAXINT64;
	guint n_go;

	if (!__atomic_load_n(&self->n_parked, __ATOMIC_RELAXED))
		return G_MAXINT64;
	ncm_mutex_lock(&self->flight_lock);
	n_go = take_due_locked(self, now, go, &next);
	ncm_mutex_unlock(&self->flight_lock);
	for (guint i = 0; i < n_go; i++)
		resubmit(self, go[i]);
	return next;
}
