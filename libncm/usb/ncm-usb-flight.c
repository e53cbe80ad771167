/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ncm-usb-flight.c: counting the transfers in flight, so that close() cancels and waits for exactly those. */
#include "ncm-usb-device.h"

int
ncm_device_submit(NcmDevice *self, struct libusb_transfer *xfer, gboolean counted)
{
	int r = LIBUSB_ERROR_INTERRUPTED;

	NCM_TOUCH(self, "ncm_device_submit");
	ncm_mutex_lock(&self->flight_lock);
#ifdef NCM_TEST_HOOKS
	if (self->state == NCM_STATE_RUNNING)
		r = ncm_device_fault_submit(self, xfer);
#else
	if (self->state == NCM_STATE_RUNNING)
		r = libusb_submit_transfer(xfer);
#endif
	if (r == 0 && !counted)
		self->in_flight++;
	ncm_mutex_unlock(&self->flight_lock);
	return r;
}

void
ncm_device_landed_locked(NcmDevice *self)
{
#ifdef NCM_TEST_HOOKS
	ncm_device_landed_mark(self);
#endif
	if (--self->in_flight == 0)
		g_cond_broadcast(&self->flight_cond);
}

void
ncm_device_landed(NcmDevice *self)
{
	ncm_mutex_lock(&self->flight_lock);
	ncm_device_landed_locked(self);
	ncm_mutex_unlock(&self->flight_lock);
}

gboolean
ncm_device_flight_wait(NcmDevice *self, gint64 deadline)
{
	gboolean timed_out = FALSE;

	ncm_mutex_lock(&self->flight_lock);
	while (self->in_flight > 0 && !timed_out)
		timed_out = !ncm_cond_wait_until(&self->flight_cond, &self->flight_lock, deadline);
	ncm_mutex_unlock(&self->flight_lock);
	return !timed_out;
}
